// A TCP echo server on io_uring's multishot operations: one multishot accept per listening
// socket (TcpListener::incoming()) and one multishot recv per connection into a
// provided-buffer ring shared by all the connections of a runtime (TcpStream::recv_stream()),
// so an idle connection holds no buffer. One runtime by default; with --threads N, N runtimes
// of a RuntimePool, each with its own SO_REUSEPORT listening socket, buffer ring and accept
// stream (the kernel spreads the connections over the sockets). SIGINT or SIGTERM stops it:
// no new connections, the open ones get 2 s to finish, the rest are cancelled, and the last
// line sums up what was served.
//
//   echo_server [--port P] [--threads N] [--host ADDR]     (port 0: pick one; default 7000)
//   socat - TCP:127.0.0.1:7000          # type lines, get them back
//
// The first line of output is "listening on port <P>". tests/examples/test_echo_server.py
// runs it against socat, nc and 200 concurrent connections.
#include "args.hpp"

#include <ringo/io/signal.hpp>
#include <ringo/net/accept_loop.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;

namespace {

// One ring per runtime: 1024 buffers of 4 KiB (4 MiB), shared by every connection there.
constexpr unsigned ring_entries = 1024;
constexpr unsigned buffer_size = 4096;
// A connection whose peer sends faster than it reads back would fill the ring with data
// waiting to be echoed, and leave the other connections none. So its recv is stopped (the
// unread bytes wait in its socket) as soon as the socket would not take an echo at once, or
// more than this many buffers wait, and armed again once they are written out.
constexpr unsigned max_queued = 8;
constexpr auto grace = 2s;

// What one runtime served. Each runtime has its own, touched by its thread only.
struct ShardStats {
    std::uint64_t connections = 0;
    std::uint64_t bytes = 0;
    std::uint64_t pauses = 0;     // recvs stopped because a peer did not keep up (see max_queued)
    std::size_t open_at_stop = 0; // connections still open when the signal came
    std::size_t cancelled = 0;    // of which still open after the grace period (cancelled)
};

// One connection: echoes what arrives until the peer closes its side, an error, or
// cancellation. The stream (and its descriptor) goes when the task ends, however it ends.
Task<void> echo(TcpStream conn, ringo::buf::BufferRing& ring, ShardStats& st) {
    for (;;) { // one round per recv stream: a new one after a pause
        auto in = conn.recv_stream(ring);
        bool paused = false;
        for (;;) {
            ringo::buf::Buffer b = co_await in.next();
            if (!b)
                break; // in.result(): 0 (end of stream), -ECANCELED, -ECONNRESET ...
            // First without waiting: while the socket takes each echo whole, the recv stays armed.
            int n = co_await ringo::op::send(conn.fd(), b.data(), b.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n < 0 && n != -EAGAIN)
                co_return; // the peer went away (or the task was cancelled)
            std::size_t sent = n > 0 ? static_cast<std::size_t>(n) : 0;
            if (!paused && (sent < b.size() || in.queued() > max_queued)) {
                in.cancel(); // what was received stays queued; then the stream ends
                paused = true;
                ++st.pauses;
            }
            if (sent < b.size()) { // the peer is not reading: wait until it takes the rest
                Result<void> w = co_await conn.write_all(b.data() + sent, b.size() - sent);
                if (!w)
                    co_return;
            }
            st.bytes += b.size();
        }
        if (!paused || in.result() != -ECANCELED)
            co_return;
        bool cancelled = co_await ringo::cancellation_requested();
        if (cancelled)
            co_return; // not our pause: the task itself was cancelled
    }
}

// Accepts until cancelled; every connection becomes a task of `conns`. Yields 0 when
// cancelled, or -errno when the listening socket itself failed. Out of descriptors or memory
// it does not give up: net::accept_loop waits (10 ms, doubling up to 1 s) and accepts again.
Task<int> accept_all(TcpListener& l, ringo::buf::BufferRing& ring, ringo::TaskScope& conns, ShardStats& st) {
    auto serve_one = [&](TcpStream c) {
        ++st.connections;
        conns.spawn(echo(std::move(c), ring, st));
    };
    std::error_code e = co_await ringo::net::accept_loop(l, serve_one);
    if (e)
        std::fprintf(stderr, "accept: %s\n", e.message().c_str());
    co_return -e.value();
}

// One runtime's server: accepts on `l` until `stop` is set, then gives the open connections
// `grace` to end and cancels the rest. Every descriptor is closed when it returns.
Task<ShardStats> serve_shard(TcpListener l, ringo::Event& stop) {
    ShardStats st;
    ringo::buf::BufferRing ring(*ringo::Runtime::current(), ringo::op::BufferGroup{1}, ring_entries, buffer_size);
    ringo::TaskScope conns; // after the ring: the connections end before the ring goes
    auto [which, r] = co_await ringo::when_any(accept_all(l, ring, conns, st), stop.wait());
    if (which == 0 && r < 0)
        std::fprintf(stderr, "this runtime no longer accepts\n");
    Result<void> closed = co_await l.close(); // new connections are refused from here on
    (void)closed;
    st.open_at_stop = conns.running();
    bool finished = static_cast<bool>(co_await ringo::with_timeout(conns.join(), grace));
    if (!finished)
        st.cancelled = st.open_at_stop; // with_timeout cancelled them and waited for their end
    co_return st;
}

Task<Result<TcpListener>> open_listener(SocketAddr addr, bool reuse_port) {
    co_return co_await TcpListener::bind(addr, {.backlog = 1024, .reuse_addr = true, .reuse_port = reuse_port});
}

// One runtime: the signal is read through the same ring.
Task<std::optional<ShardStats>> run_single(SocketAddr addr) {
    ringo::SignalSet signals{SIGINT, SIGTERM};
    Result<TcpListener> l = co_await open_listener(addr, false);
    if (!l) {
        std::fprintf(stderr, "echo_server: cannot listen on %s: %s\n", addr.to_string().c_str(), l.message().c_str());
        co_return std::nullopt;
    }
    std::printf("listening on port %u\n", l->local_addr().value().port());
    std::fflush(stdout);
    ringo::Event stop;
    auto shard = ringo::spawn(serve_shard(std::move(*l), stop));
    int sig = co_await signals.next();
    std::printf("got %s, stopping\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : std::strerror(-sig));
    std::fflush(stdout);
    stop.set();
    co_return co_await shard;
}

// N runtimes: the main thread waits for the signal and tells every runtime to stop.
std::optional<std::vector<ShardStats>> run_pool(SocketAddr addr, std::size_t threads) {
    ringo::RuntimePool pool{threads};
    std::vector<TcpListener> listeners;
    for (std::size_t i = 0; i < threads; ++i) { // the first binds port 0; the others its port
        Result<TcpListener> l = pool.spawn_on(i, open_listener(addr, true)).join();
        if (!l) {
            std::fprintf(stderr, "echo_server: cannot listen on %s: %s\n", addr.to_string().c_str(),
                         l.message().c_str());
            return std::nullopt;
        }
        if (i == 0)
            addr.set_port(l->local_addr().value().port());
        listeners.push_back(std::move(*l));
    }
    std::printf("listening on port %u\n", addr.port());
    std::fflush(stdout);

    ringo::Event stop;
    std::vector<ringo::JoinHandle<ShardStats>> shards;
    for (std::size_t i = 0; i < threads; ++i)
        shards.push_back(pool.spawn_on(i, serve_shard(std::move(listeners[i]), stop)));
    int sig = 0;
    try {
        sig = ringo::block_on(ringo::wait_signal({SIGINT, SIGTERM}));
    } catch (...) { // no ring or no signalfd for this thread: the shards must still end
        stop.set();
        throw;
    }
    std::printf("got %s, stopping\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : std::strerror(-sig));
    std::fflush(stdout);
    stop.set(); // from a plain thread: wakes the waiting task of every runtime
    std::vector<ShardStats> all;
    for (auto& s : shards)
        all.push_back(s.join());
    pool.shutdown();
    return all;
}

constexpr const char* usage_text =
    "usage: echo_server [--port P] [--threads N] [--host ADDR]\n"
    "  --port P       TCP port, 0 to 65535 (0: any free one; default 7000)\n"
    "  --threads N    runtimes (threads), each with its own listening socket, 1 to 256 (default 1)\n"
    "  --host ADDR    IPv4 or IPv6 address to listen on (default 127.0.0.1)\n";

} // namespace

int main(int argc, char** argv) {
    args::Parser p("echo_server", usage_text, argc, argv);
    std::uint64_t port = 7000, threads = 1;
    std::string_view host = "127.0.0.1";
    while (std::optional<std::string_view> a = p.next()) {
        if (*a == "--host")
            host = p.value(*a);
        else if (*a == "--port")
            port = p.number(*a, 0, 65535);
        else if (*a == "--threads")
            threads = p.number(*a, 1, 256);
        else
            p.unknown(*a);
    }
    SocketAddr addr = p.address("--host", host, static_cast<std::uint16_t>(port));

    // Before any thread starts: every thread inherits the mask, so none of them takes SIGINT
    // or SIGTERM the ordinary way (docs/signals.md). The signals are read as data instead.
    ringo::block_signals({SIGINT, SIGTERM});

    std::vector<ShardStats> shards;
    // What setting up a ring, a pool or a signalfd throws (no io_uring, no descriptors ...):
    // "echo_server: <what>", status 1.
    int status = args::report_setup_errors("echo_server", [&] {
        if (threads == 1) {
            std::optional<ShardStats> s = ringo::block_on(run_single(addr));
            if (!s)
                return 1;
            shards.push_back(*s);
        } else {
            auto all = run_pool(addr, static_cast<std::size_t>(threads));
            if (!all)
                return 1;
            shards = std::move(*all);
        }
        return 0;
    });
    if (status != 0)
        return status;

    ShardStats total;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const ShardStats& s = shards[i];
        std::printf("runtime %zu: %llu connections, %llu bytes, %llu pauses\n", i,
                    static_cast<unsigned long long>(s.connections), static_cast<unsigned long long>(s.bytes),
                    static_cast<unsigned long long>(s.pauses));
        total.connections += s.connections;
        total.bytes += s.bytes;
        total.open_at_stop += s.open_at_stop;
        total.cancelled += s.cancelled;
    }
    std::printf("echoed %llu bytes over %llu connections on %zu runtime(s); %zu open at stop, %zu cancelled\n",
                static_cast<unsigned long long>(total.bytes), static_cast<unsigned long long>(total.connections),
                shards.size(), total.open_at_stop, total.cancelled);
    return 0;
}
