// Graceful Ctrl-C on one runtime: a TCP echo server on 127.0.0.1 that, on SIGINT or SIGTERM,
// stops accepting, gives the open connections a grace period to finish, cancels the rest, and
// returns 0. One thread, so the SignalSet alone blocks the signals where they would land.
// Out of descriptors (more clients than RLIMIT_NOFILE allows), it keeps serving: the accept
// loop (net::accept_loop) waits and accepts again once connections close.
//   ctrl_c_server [PORT [GRACE_MS]]   or   ctrl_c_server [--port PORT] [--grace-ms GRACE_MS]
// The first line of output is "listening on port <P>"; exit status 0 after a signal, 1 when
// the server could not listen or accept, 2 for bad arguments.
#include <ringo/io/signal.hpp>
#include <ringo/net/accept_loop.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
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
        std::fprintf(stderr, "listen: %s\n", listener.error().message().c_str());
        co_return 1;
    }
    std::printf("listening on port %u\n", listener->local_addr()->port());
    std::fflush(stdout);

    ringo::TaskScope handlers;
    // Serve until a signal comes: the accept loop loses the race and is cancelled.
    auto [which, v] = co_await ringo::when_any(accept_all(*listener, handlers), stop.next());
    int status = 0;
    if (which == 0 || v < 0) { // the listening socket failed, or reading the signals did
        std::fprintf(stderr, "%s: %s\n", which == 0 ? "accept" : "signals", std::strerror(-v));
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

constexpr unsigned long max_grace_ms = 3'600'000; // an hour

// A usage error: what is wrong, the usage, status 2.
int usage_error(const std::string& why) {
    std::fprintf(stderr, "ctrl_c_server: %s\n%s", why.c_str(), usage_text);
    return 2;
}

// A decimal number from 0 to `max`: digits only (no sign, space or base prefix), no wrap.
std::optional<unsigned long> parse_number(std::string_view s, unsigned long max) {
    unsigned long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v > max)
        return std::nullopt;
    return v;
}

} // namespace

int main(int argc, char** argv) {
    std::optional<unsigned long> port, grace;
    int positional = 0;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        std::string_view v = a;
        bool is_port = false;
        if (a == "--port" || a == "--grace-ms") {
            if (i + 1 >= argc)
                return usage_error(std::string(a) + " needs a value");
            v = argv[++i];
            is_port = a == "--port";
        } else if (a.size() > 1 && a[0] == '-' && (a[1] < '0' || a[1] > '9')) {
            return usage_error("unknown option " + std::string(a));
        } else if (++positional > 2) {
            return usage_error("unexpected argument '" + std::string(a) + "'");
        } else {
            is_port = positional == 1;
        }
        std::optional<unsigned long>& slot = is_port ? port : grace;
        if (slot)
            return usage_error(is_port ? "the port is given twice" : "the grace period is given twice");
        slot = parse_number(v, is_port ? 65535 : max_grace_ms);
        if (!slot)
            return usage_error(is_port ? "the port must be a number from 0 to 65535, not '" + std::string(v) + "'"
                                       : "the grace period must be a number of milliseconds from 0 to 3600000, "
                                         "not '" +
                                             std::string(v) + "'");
    }
    return ringo::block_on(
        serve(static_cast<std::uint16_t>(port.value_or(7000)), std::chrono::milliseconds(grace.value_or(2000))));
}
