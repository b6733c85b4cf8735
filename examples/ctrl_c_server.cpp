// Graceful Ctrl-C on one runtime: a TCP echo server on 127.0.0.1 that, on SIGINT or SIGTERM,
// stops accepting, gives the open connections a grace period to finish, cancels the rest, and
// returns 0. One thread, so the SignalSet alone blocks the signals where they would land.
// Out of descriptors (more clients than RLIMIT_NOFILE allows), it keeps serving: the accept
// loop (net::accept_loop) waits and accepts again once connections close.
//   ctrl_c_server [PORT [GRACE_MS]]   or   ctrl_c_server [--port PORT] [--grace-ms GRACE_MS]
// The first line of output is "listening on port <P>"; exit status 0 after a signal, 1 when
// it could not be set up (a ring or a signalfd), listen or accept ("ctrl_c_server: <reason>"
// on stderr), 2 for bad arguments (examples/args.hpp).
#include "args.hpp"

#include <ringo/io/signal.hpp>
#include <ringo/net/accept_loop.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

namespace {

// One connection: echoes until the peer closes, an error, or cancellation.
ringo::Task<void> echo(ringo::net::TcpStream conn) {
    char buf[4096];
    for (;;) {
        auto n = co_await conn.read(buf, sizeof buf);
        if (!n || *n == 0)
            break;
        auto w = co_await conn.write_all(buf, *n);
        if (!w)
            break;
    }
} // conn closes here, on every path

// Accepts until cancelled, every connection a task of `handlers`; yields 0 when cancelled, or
// -errno when the listening socket itself failed. Out of descriptors or memory it does not
// give up: accept_loop waits (10 ms, doubling up to 1 s) and accepts again.
ringo::Task<int> accept_all(ringo::net::TcpListener& listener, ringo::TaskScope& handlers) {
    auto serve_one = [&handlers](ringo::net::TcpStream s) { handlers.spawn(echo(std::move(s))); };
    std::error_code e = co_await ringo::net::accept_loop(listener, serve_one);
    co_return -e.value();
}

ringo::Task<int> serve(std::uint16_t port, std::chrono::milliseconds grace) {
    ringo::SignalSet stop{SIGINT, SIGTERM}; // blocked from here on, read through the ring

    auto listener = co_await ringo::net::TcpListener::bind(ringo::net::SocketAddr::v4_loopback(port));
    if (!listener) {
        std::fprintf(stderr, "ctrl_c_server: cannot listen on 127.0.0.1:%u: %s\n", port,
                     listener.error().message().c_str());
        co_return 1;
    }
    std::printf("listening on port %u\n", listener->local_addr()->port());
    std::fflush(stdout);

    ringo::TaskScope handlers;
    // Serve until a signal comes: the accept loop loses the race and is cancelled.
    auto [which, v] = co_await ringo::when_any(accept_all(*listener, handlers), stop.next());
    int status = 0;
    if (which == 0 || v < 0) { // the listening socket failed, or reading the signals did
        std::fprintf(stderr, "ctrl_c_server: %s: %s\n", which == 0 ? "accept" : "signals", std::strerror(-v));
        status = 1;
    } else {
        std::printf("got %s, stopping\n", v == SIGINT ? "SIGINT" : "SIGTERM");
    }
    (void)co_await listener->close(); // new connections are refused from here on

    // The open connections get `grace` to finish; what still runs then is cancelled (and
    // awaited to its end: every descriptor is closed when this returns). Also after a
    // failure: the scope never goes with tasks still running in it.
    std::size_t open = handlers.running();
    bool finished = static_cast<bool>(co_await ringo::with_timeout(handlers.join(), grace));
    if (finished)
        std::printf("%zu connection(s) still open: all finished\n", open);
    else
        std::printf("%zu connection(s) still open after %lld ms: cancelled\n", open,
                    static_cast<long long>(grace.count()));
    co_return status;
}

constexpr const char* usage_text = "usage: ctrl_c_server [PORT [GRACE_MS]]\n"
                                   "       ctrl_c_server [--port PORT] [--grace-ms GRACE_MS]\n"
                                   "  PORT      TCP port on 127.0.0.1, 0 to 65535 (0: any free one; default 7000)\n"
                                   "  GRACE_MS  how long open connections may go on after the signal, 0 to 3600000\n"
                                   "            milliseconds (default 2000)\n";

constexpr std::uint64_t max_grace_ms = 3'600'000; // an hour

} // namespace

int main(int argc, char** argv) {
    args::Parser p("ctrl_c_server", usage_text, argc, argv);
    args::Slot slots[] = {{"--port", "PORT", 0, 65535}, {"--grace-ms", "GRACE_MS", 0, max_grace_ms}};
    while (std::optional<std::string_view> a = p.next()) {
        if (!p.take(*a, slots))
            p.unknown(*a);
    }
    auto port = static_cast<std::uint16_t>(slots[0].value.value_or(7000));
    std::chrono::milliseconds grace(slots[1].value.value_or(2000));
    // A ring or a signalfd that cannot be made (too few descriptors, io_uring and epoll both
    // refused) throws: "ctrl_c_server: <what>", status 1.
    return args::report_setup_errors("ctrl_c_server", [&] { return ringo::block_on(serve(port, grace)); });
}
