// Graceful Ctrl-C on one runtime: a TCP echo server that, on SIGINT or SIGTERM, stops
// accepting, gives the open connections a grace period to finish, cancels the rest, and
// returns 0. One thread, so the SignalSet alone blocks the signals where they would land.
//   ctrl_c_server [port] [grace_ms]      (port 0: pick one)
#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

// Accepts until cancelled (or an error); every connection runs in `handlers`.
ringo::Task<int> accept_loop(ringo::net::TcpListener& listener, ringo::TaskScope& handlers) {
    auto in = listener.incoming();
    for (;;) {
        auto c = co_await in.next();
        if (!c)
            co_return -c.error().value(); // -ECANCELED once the signal has come
        handlers.spawn(echo(std::move(*c)));
    }
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
    auto [which, v] = co_await ringo::when_any(accept_loop(*listener, handlers), stop.next());
    if (which == 0 || v < 0) { // the accept loop failed, or reading the signals did
        std::fprintf(stderr, "%s: %s\n", which == 0 ? "accept" : "signals", std::strerror(-v));
        co_return 1;
    }
    std::printf("got %s, stopping\n", v == SIGINT ? "SIGINT" : "SIGTERM");
    (void)co_await listener->close(); // new connections are refused from here on

    // The open connections get `grace` to finish; what still runs then is cancelled (and
    // awaited to its end: every descriptor is closed when this returns).
    std::size_t open = handlers.running();
    bool finished = static_cast<bool>(co_await ringo::with_timeout(handlers.join(), grace));
    if (finished)
        std::printf("%zu connection(s) still open: all finished\n", open);
    else
        std::printf("%zu connection(s) still open after %lld ms: cancelled\n", open,
                    static_cast<long long>(grace.count()));
    co_return 0;
}

int main(int argc, char** argv) {
    auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 7000);
    std::chrono::milliseconds grace(argc > 2 ? std::atoi(argv[2]) : 2000);
    return ringo::block_on(serve(port, grace));
}
