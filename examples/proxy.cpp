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
//    an IPv4 address or a bracketed IPv6 one; N 0: one runtime per CPU)
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

// A decimal number from 0 to `max`: digits only (no sign, space or base prefix), no wrap.
std::optional<unsigned long> parse_number(const char* s, unsigned long max) {
    if (*s < '0' || *s > '9')
        return std::nullopt;
    char* end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return std::nullopt;
    return v;
}

constexpr const char* usage_text =
    "usage: proxy --listen-port P --upstream HOST:PORT [--threads N] [--connect-timeout MS]\n"
    "             [--idle-timeout SECONDS] [--grace MS] [--listen-addr IP] [--verbose] [--help]\n"
    "  --listen-port P           0 to 65535 (0: any free port)\n"
    "  --upstream HOST:PORT      a name, an IPv4 address or a bracketed IPv6 one; port 1 to 65535\n"
    "  --threads N               runtimes, 0 to 1024 (0, the default: one per CPU)\n"
    "  --connect-timeout MS      for each upstream address, 1 to 3600000 (default 5000)\n"
    "  --idle-timeout SECONDS    close a session in which nothing moved for this long,\n"
    "                            0 to 31536000 (0: never; default 600)\n"
    "  --grace MS                for open sessions at SIGINT/SIGTERM, 0 to 3600000 (default 2000)\n"
    "  --listen-addr IP          IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --verbose                 a line on stderr for each failed or idle session\n";

// A usage error: what is wrong, the usage, status 2.
int usage(const std::string& why) {
    std::fprintf(stderr, "proxy: %s\n%s", why.c_str(), usage_text);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    std::optional<unsigned long> listen_port;
    std::string upstream, listen_addr = "0.0.0.0";
    unsigned long threads = 0, grace_ms = 2000;
    Config cfg;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        bool has_value = i + 1 < argc;
        if (a == "--verbose") {
            cfg.verbose = true;
            continue;
        }
        if (a == "--help" || a == "-h") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        if (!has_value)
            return usage(a.rfind("--", 0) == 0 ? a + " needs a value" : "unexpected argument " + a);
        const char* v = argv[++i];
        std::optional<unsigned long> n;
        if (a == "--listen-port") {
            if (!(listen_port = parse_number(v, 65535)))
                return usage("bad port " + std::string(v) + " (0 to 65535)");
        } else if (a == "--upstream") {
            upstream = v;
        } else if (a == "--listen-addr") {
            listen_addr = v;
        } else if (a == "--threads") {
            if (!(n = parse_number(v, 1024)))
                return usage("bad thread count " + std::string(v) + " (0 to 1024)");
            threads = *n;
        } else if (a == "--connect-timeout") {
            if (!(n = parse_number(v, 3600000)) || *n == 0)
                return usage("bad connect timeout " + std::string(v) + " (milliseconds, 1 to 3600000)");
            cfg.connect_timeout = std::chrono::milliseconds(*n);
        } else if (a == "--idle-timeout") {
            if (!(n = parse_number(v, 31536000)))
                return usage("bad idle timeout " + std::string(v) + " (seconds, 0 to 31536000)");
            cfg.idle_timeout = std::chrono::seconds(*n);
        } else if (a == "--grace") {
            if (!(n = parse_number(v, 3600000)))
                return usage("bad grace period " + std::string(v) + " (milliseconds, 0 to 3600000)");
            grace_ms = *n;
        } else {
            return usage("unknown option " + a);
        }
    }
    if (!listen_port || upstream.empty())
        return usage("--listen-port and --upstream are needed");
    // HOST:PORT, the host maybe in brackets ([::1]:80).
    std::size_t colon = upstream.rfind(':');
    std::optional<unsigned long> up_port;
    if (colon == std::string::npos || colon == 0 || !(up_port = parse_number(upstream.c_str() + colon + 1, 65535)) ||
        *up_port == 0)
        return usage("--upstream wants HOST:PORT, not " + upstream);
    std::string host = upstream.substr(0, colon);
    std::optional<SocketAddr> bind_to = SocketAddr::parse_ip(listen_addr, static_cast<std::uint16_t>(*listen_port));
    if (!bind_to)
        return usage("bad listen address " + listen_addr);
    if (threads == 0)
        threads = std::max(1u, std::thread::hardware_concurrency());

    // First, before any thread exists (the resolver's and the pool's inherit the mask): the
    // stop signals are blocked everywhere, and read below through a ring.
    ringo::block_signals({SIGINT, SIGTERM});

    // The upstream's addresses, once: a numeric host in place, a name through getaddrinfo.
    Result<std::vector<SocketAddr>> addrs =
        ringo::block_on(ringo::net::resolve(host, static_cast<std::uint16_t>(*up_port)));
    if (!addrs || addrs->empty()) {
        std::fprintf(stderr, "proxy: cannot resolve '%s': %s\n", host.c_str(),
                     addrs ? "no address" : addrs.message().c_str());
        return 1;
    }
    cfg.upstream = std::move(*addrs);

    Stats stats;
    ringo::RuntimePool pool{threads};
    bool clean = true;
    int sig = 0;
    try {
        // One listening socket per runtime (SO_REUSEPORT): each runtime accepts and serves its
        // share. The handler is a plain lambda that makes the connection's task.
        ringo::net::ShardedListener server{pool, *bind_to, [&cfg, &stats](TcpStream s, SocketAddr peer) {
                                               return serve(std::move(s), peer, cfg, stats);
                                           }};
        std::printf("listening on port %u\n", server.port());
        std::fflush(stdout);

        sig = ringo::block_on(ringo::wait_signal({SIGINT, SIGTERM}));
        if (sig < 0)
            std::fprintf(stderr, "proxy: waiting for a signal: %s\n", std::strerror(-sig));
        // Stops the accept loops, lets open connections finish for the grace period, then
        // cancels what is left (its sockets close with it).
        clean = pool.shutdown_for(std::chrono::milliseconds(grace_ms));
    } catch (const std::system_error& e) {
        std::fprintf(stderr, "proxy: cannot listen on %s: %s\n", bind_to->to_string().c_str(), e.what());
        return 1;
    }
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
