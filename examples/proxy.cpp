// A TCP proxy on every core: a net::ShardedListener on a RuntimePool accepts clients (and
// waits and goes on when descriptors run short); for each one a task connects to the upstream
// (TcpStream::connect with a timeout, trying each address net::resolve gave) and copies both
// directions at once (when_all of two pumps). The end of one direction is passed on
// (shutdown(SHUT_WR) on the other socket) while the other direction keeps going; a failure on
// either side (a reset, say) ends both: its exception makes when_all cancel the other pump,
// and both sockets are closed with a reset (SO_LINGER 0). A session in which no byte has moved
// either way for --idle-timeout seconds (600 by default, as nginx's stream proxy_timeout; 0:
// never) is closed: a Watchdog per session, fed by every read and send that moves bytes,
// cancels both pumps, and both sockets close (an upstream that never answers a half-closed
// client no longer holds two descriptors for good). A refused or timed-out upstream closes the
// client at once. Every socket is a TcpStream, closed on every path. SIGINT or SIGTERM stops
// accepting, gives open connections a grace period, cancels the rest, and prints a summary line.
//   proxy --listen-port P --upstream HOST:PORT [--threads N] [--connect-timeout MS]
//         [--idle-timeout SECONDS] [--grace MS] [--listen-addr IP] [--verbose] [--help]
//   (P 0: any free port; the first line printed is "listening on port <P>"; HOST may be a name,
//    an IPv4 address or a bracketed IPv6 one; N 0: one runtime per CPU, at most 256)
// Exit status 0 after a signal; 1 when the upstream cannot be resolved, the port cannot be
// listened on, or a runtime, the pool or the signalfd cannot be set up ("proxy: <reason>" on
// stderr); 2 for bad arguments (examples/args.hpp).
#include "args.hpp"

#include <ringo/ringo.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using ringo::Result;
using ringo::Task;
using ringo::net::SocketAddr;
using ringo::net::TcpStream;

constexpr std::size_t kBuffer = 64 * 1024; // per direction of a connection

struct Config {
    std::vector<SocketAddr> upstream; // tried in order
    std::chrono::milliseconds connect_timeout{5000};
    std::chrono::seconds idle_timeout{600}; // 0: none
    bool verbose = false;
};

// Shared by every runtime of the pool.
struct Stats {
    std::atomic<std::uint64_t> connections{0}, client_to_upstream{0}, upstream_to_client{0}, upstream_failures{0},
        resets{0}, cancelled{0}, idle_timeouts{0};
};

// One direction: reads from `from` and writes all of it to `to` until `from` ends, then passes
// the end on (shutdown(SHUT_WR): `to`'s peer reads the end of the stream, and the other
// direction goes on). Every read and send that moves bytes feeds `idle`. A failure throws:
// when_all then cancels the other direction.
Task<void> pump(TcpStream& from, TcpStream& to, std::uint64_t& bytes, const char* from_name, const char* to_name,
                ringo::Watchdog& idle) {
    std::unique_ptr<std::byte[]> buf(new std::byte[kBuffer]);
    for (;;) {
        Result<std::size_t> n = co_await from.read(buf.get(), kBuffer);
        if (!n)
            throw std::system_error(n.error(), std::string("reading from the ") + from_name);
        if (*n == 0)
            break;
        idle.feed();
        for (std::size_t done = 0; done < *n;) { // a slow peer that takes bytes is not idle
            Result<std::size_t> w = co_await to.write(buf.get() + done, *n - done);
            if (!w)
                throw std::system_error(w.error(), std::string("writing to the ") + to_name);
            done += *w;
            idle.feed();
        }
        bytes += *n;
    }
    Result<void> s = co_await to.shutdown(SHUT_WR);
    if (!s)
        throw std::system_error(s.error(), std::string("ending the stream to the ") + to_name);
}

// Makes the close of `s` a reset (RST) instead of an orderly end: the peer learns that the
// connection broke rather than that the stream ended.
void abort_on_close(const TcpStream& s) {
    linger l{1, 0};
    (void)::setsockopt(s.fd().get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

// One client, from its accept to the close of both sockets.
Task<void> serve(TcpStream client, SocketAddr peer, const Config& cfg, Stats& stats) {
    stats.connections.fetch_add(1, std::memory_order_relaxed);
    Result<TcpStream> up = std::make_error_code(std::errc::host_unreachable);
    for (const SocketAddr& a : cfg.upstream) {
        up = co_await TcpStream::connect(a, cfg.connect_timeout); // timed_out after the timeout
        if (up || up.error() == std::errc::operation_canceled)
            break;
    }
    if (!up) { // the client closes as the task ends
        if (up.error() == std::errc::operation_canceled) {
            stats.cancelled.fetch_add(1, std::memory_order_relaxed);
        } else {
            stats.upstream_failures.fetch_add(1, std::memory_order_relaxed);
            if (cfg.verbose)
                std::fprintf(stderr, "proxy: %s: upstream: %s\n", peer.to_string().c_str(), up.message().c_str());
        }
        co_return;
    }
    (void)client.set_nodelay(true); // a proxy should not delay what its peers sent
    (void)up->set_nodelay(true);

    std::uint64_t sent = 0, received = 0;
    ringo::Watchdog idle(cfg.idle_timeout.count() > 0 ? std::chrono::nanoseconds(cfg.idle_timeout)
                                                      : std::chrono::nanoseconds::max());
    try {
        auto both = co_await idle.guard(ringo::when_all(pump(client, *up, sent, "client", "upstream", idle),
                                                        pump(*up, client, received, "upstream", "client", idle)));
        (void)both;
    } catch (const std::system_error& e) {
        if (idle.expired()) {
            // Nothing moved either way for the idle timeout: the watchdog cancelled both
            // pumps. Both sockets close as the task ends, each with a FIN.
            stats.idle_timeouts.fetch_add(1, std::memory_order_relaxed);
            if (cfg.verbose)
                std::fprintf(stderr, "proxy: %s: idle for %lld s, closed\n", peer.to_string().c_str(),
                             static_cast<long long>(cfg.idle_timeout.count()));
        } else {
            // One side failed (or the pool cancelled the connection): the other pump has been
            // cancelled and awaited. Both sockets end with a reset.
            abort_on_close(client);
            abort_on_close(*up);
            bool cancelled = e.code() == std::errc::operation_canceled;
            (cancelled ? stats.cancelled : stats.resets).fetch_add(1, std::memory_order_relaxed);
            if (cfg.verbose && !cancelled)
                std::fprintf(stderr, "proxy: %s: %s\n", peer.to_string().c_str(), e.what());
        }
    }
    stats.client_to_upstream.fetch_add(sent, std::memory_order_relaxed);
    stats.upstream_to_client.fetch_add(received, std::memory_order_relaxed);
} // both sockets close here

constexpr const char* usage_text =
    "usage: proxy --listen-port P --upstream HOST:PORT [--threads N] [--connect-timeout MS]\n"
    "             [--idle-timeout SECONDS] [--grace MS] [--listen-addr IP] [--verbose] [--help]\n"
    "  --listen-port P           0 to 65535 (0: any free port)\n"
    "  --upstream HOST:PORT      a name, an IPv4 address or a bracketed IPv6 one; port 1 to 65535\n"
    "  --threads N               runtimes, 0 to 256 (0, the default: one per CPU)\n"
    "  --connect-timeout MS      for each upstream address, 1 to 3600000 (default 5000)\n"
    "  --idle-timeout SECONDS    close a session in which nothing moved for this long,\n"
    "                            0 to 31536000 (0: never; default 600)\n"
    "  --grace MS                for open sessions at SIGINT/SIGTERM, 0 to 3600000 (default 2000)\n"
    "  --listen-addr IP          IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --verbose                 a line on stderr for each failed or idle session\n";

// Serves `listen` until SIGINT or SIGTERM, forwarding to `host`:`port`; returns the exit
// status. Throws what setting up a runtime, the pool or the signalfd throws.
int run(const std::string& host, std::uint16_t port, const SocketAddr& listen, std::size_t threads,
        std::chrono::milliseconds grace, Config& cfg) {
    // The main thread's runtime (for the resolver, then the signal) and its signalfd come
    // first: clients that take every descriptor as soon as the listeners are up must not leave
    // it unable to wait for the signal.
    ringo::Runtime main_rt;
    ringo::Task<int> stop = ringo::wait_signal({SIGINT, SIGTERM}); // the signalfd is opened here

    // The upstream's addresses, once: a numeric host in place, a name through getaddrinfo.
    Result<std::vector<SocketAddr>> addrs = main_rt.block_on(ringo::net::resolve(host, port));
    if (!addrs || addrs->empty()) {
        std::fprintf(stderr, "proxy: cannot resolve '%s': %s\n", host.c_str(),
                     addrs ? "no address" : addrs.message().c_str());
        return 1;
    }
    cfg.upstream = std::move(*addrs);

    Stats stats;
    ringo::RuntimePool pool{threads};
    // One listening socket per runtime (SO_REUSEPORT): each runtime accepts and serves its
    // share. The handler is a plain lambda that makes the connection's task.
    std::optional<ringo::net::ShardedListener> server;
    try {
        server.emplace(pool, listen,
                       [&cfg, &stats](TcpStream s, SocketAddr peer) { return serve(std::move(s), peer, cfg, stats); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "proxy: cannot listen on %s: %s\n", listen.to_string().c_str(), e.what());
        return 1;
    }
    std::printf("listening on port %u\n", server->port());
    std::fflush(stdout);

    int sig = main_rt.block_on(std::move(stop));
    if (sig < 0)
        std::fprintf(stderr, "proxy: waiting for a signal: %s\n", std::strerror(-sig));
    // Stops the accept loops, lets open connections finish for the grace period, then cancels
    // what is left (its sockets close with it).
    bool clean = pool.shutdown_for(grace);
    std::printf("stopped by %s%s\n",
                sig == SIGINT    ? "SIGINT"
                : sig == SIGTERM ? "SIGTERM"
                                 : "an error",
                clean ? "" : " (open connections were cancelled)");
    std::printf("summary: connections=%llu client_to_upstream=%llu upstream_to_client=%llu upstream_failures=%llu "
                "resets=%llu cancelled=%llu idle_timeouts=%llu\n",
                static_cast<unsigned long long>(stats.connections.load()),
                static_cast<unsigned long long>(stats.client_to_upstream.load()),
                static_cast<unsigned long long>(stats.upstream_to_client.load()),
                static_cast<unsigned long long>(stats.upstream_failures.load()),
                static_cast<unsigned long long>(stats.resets.load()),
                static_cast<unsigned long long>(stats.cancelled.load()),
                static_cast<unsigned long long>(stats.idle_timeouts.load()));
    return sig < 0 ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
    args::Parser p("proxy", usage_text, argc, argv);
    std::optional<std::uint64_t> listen_port;
    std::string_view upstream, listen_addr = "0.0.0.0";
    std::uint64_t threads = 0, grace_ms = 2000;
    Config cfg;
    while (std::optional<std::string_view> a = p.next()) {
        if (*a == "--verbose")
            cfg.verbose = true;
        else if (*a == "--listen-port")
            listen_port = p.number(*a, 0, 65535);
        else if (*a == "--upstream")
            upstream = p.value(*a);
        else if (*a == "--listen-addr")
            listen_addr = p.value(*a);
        else if (*a == "--threads")
            threads = p.number(*a, 0, 256);
        else if (*a == "--connect-timeout")
            cfg.connect_timeout = std::chrono::milliseconds(p.number(*a, 1, 3'600'000));
        else if (*a == "--idle-timeout")
            cfg.idle_timeout = std::chrono::seconds(p.number(*a, 0, 31'536'000));
        else if (*a == "--grace")
            grace_ms = p.number(*a, 0, 3'600'000);
        else
            p.unknown(*a);
    }
    if (!listen_port || upstream.empty())
        p.fail("--listen-port and --upstream are needed");
    // HOST:PORT, the host maybe in brackets ([::1]:80).
    std::size_t colon = upstream.rfind(':');
    std::optional<std::uint64_t> up_port;
    if (colon != std::string_view::npos && colon != 0)
        up_port = args::parse_unsigned(upstream.substr(colon + 1), 1, 65535);
    if (!up_port)
        p.fail("--upstream wants HOST:PORT (port 1 to 65535), not '" + std::string(upstream) + "'");
    SocketAddr bind_to = p.address("--listen-addr", listen_addr, static_cast<std::uint16_t>(*listen_port));
    if (threads == 0)
        threads = std::max(1u, std::thread::hardware_concurrency());

    // First, before any thread exists (the resolver's and the pool's inherit the mask): the
    // stop signals are blocked everywhere, and read below through a ring.
    ringo::block_signals({SIGINT, SIGTERM});
    // A runtime, the pool or the signalfd that cannot be set up (too few descriptors, io_uring
    // and epoll both refused) throws: "proxy: <what>", status 1.
    return args::report_setup_errors("proxy", [&] {
        return run(std::string(upstream.substr(0, colon)), static_cast<std::uint16_t>(*up_port), bind_to,
                   static_cast<std::size_t>(threads), std::chrono::milliseconds(grace_ms), cfg);
    });
}
