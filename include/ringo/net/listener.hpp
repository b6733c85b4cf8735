// ringo/net/listener.hpp - a TCP listener sharded across a RuntimePool with SO_REUSEPORT.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <ringo/compose/cancel.hpp>
#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/detail/std_parts.hpp>
#include <ringo/core/join_handle.hpp>
#include <ringo/core/runtime_pool.hpp>
#include <ringo/core/time.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/net/accept_loop.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/tcp.hpp>

namespace ringo::net {

/// One listening TCP socket (a TcpListener) per runtime of a RuntimePool, all bound to the
/// same address and port with SO_REUSEPORT (the kernel spreads incoming connections over them
/// by a hash of the connection's addresses), and one accept loop per runtime. Every accepted connection
/// becomes a task of the handler on the runtime that accepted it. The handler takes one of:
///   - `(net::TcpStream stream, net::SocketAddr peer)`: the connection and its peer's address;
///   - `(net::TcpStream stream)`;
///   - `(int fd)`: the raw descriptor, which the handler owns and must close.
/// A TcpStream closes its descriptor when it goes, on every path (the handler returning,
/// throwing or being cancelled), so the first two forms cannot leak a connection.
///
///     ringo::RuntimePool pool{2};
///     ringo::net::ShardedListener lst{pool, *ringo::net::SocketAddr::parse("0.0.0.0:8080"),
///         [](ringo::net::TcpStream s, ringo::net::SocketAddr peer) -> ringo::Task<void> {
///             char buf[512];
///             for (;;) {
///                 auto n = co_await s.read(buf, sizeof buf);
///                 if (!n || *n == 0)
///                     break;
///                 auto w = co_await s.write_all(buf, *n);
///                 if (!w)
///                     break;
///             }
///         }};
///
/// The handler is any callable of those forms returning a Task; the listener keeps one copy
/// of it alive for as long as a connection task uses it (so a capturing lambda is fine).
/// Connection tasks are ordinary tasks of the pool: a graceful pool shutdown waits for them.
///
/// Stopping: stop() (or the destructor) cancels the accept loops, waits for them and closes
/// the listening sockets; connection tasks keep running. A pool shutdown stops the accept
/// loops by itself (through a shutdown hook), so it never waits for them.
class ShardedListener {
public:
    /// Binds `addr` (IPv4 or IPv6; port 0 picks a free port, which every shard then shares)
    /// once per runtime and starts accepting: `ShardedListener(pool, addr, h)`, with `addr`
    /// from SocketAddr::parse("[::]:8080"), say. Throws std::system_error when a socket cannot
    /// be created, bound or put in listening state (e.g. EADDRINUSE without SO_REUSEPORT on
    /// the other socket), std::invalid_argument for an address of another family,
    /// std::logic_error when the pool is shutting down.
    template <class Handler>
    ShardedListener(RuntimePool& pool, const SocketAddr& addr, Handler handler, int backlog = 1024)
        : pool_(&pool), state_(std::make_shared<State>(pool.size())) {
        static_assert(valid_handler<Handler>,
                      "ShardedListener: the handler must take (net::TcpStream, net::SocketAddr), (net::TcpStream) or "
                      "(int fd), and return a Task");
        open_sockets(addr, backlog);
        auto h = std::make_shared<Handler>(std::move(handler));
        try {
            for (std::size_t i = 0; i < pool.size(); ++i)
                loops_.push_back(pool.spawn_on(i, accept_loop(state_, i, h)));
        } catch (...) {
            stop();
            throw;
        }
        hook_ = pool.add_shutdown_hook([this] { request_stop(); });
    }
    /// Same, on a sockaddr of `addrlen` bytes (IPv4 or IPv6).
    template <class Handler>
    ShardedListener(RuntimePool& pool, const sockaddr* addr, socklen_t addrlen, Handler handler, int backlog = 1024)
        : ShardedListener(pool, to_socket_addr(addr, addrlen), std::move(handler), backlog) {}
    /// Same, on an IPv4 address in host byte order (INADDR_LOOPBACK, INADDR_ANY) and port.
    template <class Handler>
    ShardedListener(RuntimePool& pool, std::uint32_t ipv4, std::uint16_t port, Handler handler, int backlog = 1024)
        : ShardedListener(pool, SocketAddr::v4(ipv4, port), std::move(handler), backlog) {}

    ShardedListener(const ShardedListener&) = delete;
    ShardedListener& operator=(const ShardedListener&) = delete;
    ~ShardedListener();

    /// The port every shard listens on (host byte order; the port picked when 0 was asked).
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// The number of shards (the pool's size).
    [[nodiscard]] std::size_t shards() const noexcept { return state_->accepted.size(); }
    /// Connections accepted by the accept loop of runtime i (0 <= i < shards()) so far; any
    /// thread. std::out_of_range for another i.
    [[nodiscard]] std::uint64_t accepted(std::size_t i) const {
        return state_->accepted.at(i).value.load(std::memory_order_relaxed);
    }
    /// The first error that ended an accept loop (the listening socket itself failed: EBADF,
    /// EINVAL, ...; in std::system_category()), or an empty error_code. Cancellation and the
    /// errors a loop goes on after (one connection's, a shortage of descriptors) are not
    /// errors here. Any thread.
    [[nodiscard]] std::error_code error() const noexcept {
        const int e = state_->error.load(std::memory_order_relaxed);
        return e ? std::error_code(e, std::system_category()) : std::error_code{};
    }

    /// Asks the accept loops to stop (any thread, any task); returns at once.
    void request_stop();
    /// Stops the accept loops, waits for them, closes the listening sockets. From a plain
    /// thread (not one of the pool's threads). Idempotent.
    void stop();

private:
    struct Counter {
        std::atomic<std::uint64_t> value{0};
    };
    struct State {
        explicit State(std::size_t n) : accepted(n), listeners(n) {}
        std::vector<Counter> accepted;
        std::vector<TcpListener> listeners; // one per runtime; closed by stop() or with the last owner
        std::atomic<int> error{0};          // errno of the first accept loop that failed
    };
    [[noreturn]] static void throw_not_ip();
    static SocketAddr to_socket_addr(const sockaddr* addr, socklen_t addrlen);

    // Binds one listener per runtime (plain system calls: the constructor runs outside the
    // pool); on an error, those already made close with the state.
    void open_sockets(SocketAddr a, int backlog);

    // The connection task: the handler's own task, awaited, with the connection in the form
    // the handler takes. The descriptor is owned from the accept on (a frame that cannot be
    // allocated, or a task never started, closes it).
    template <class H>
    static Task<void> serve(std::shared_ptr<H> h, TcpStream s, SocketAddr peer) {
        if constexpr (std::is_invocable_v<H&, TcpStream, SocketAddr>)
            co_await (*h)(std::move(s), peer);
        else if constexpr (std::is_invocable_v<H&, TcpStream>)
            co_await (*h)(std::move(s));
        else if constexpr (std::is_invocable_v<H&, int>) {
            auto t = (*h)(s.fd().get()); // the handler's frame exists before it owns the descriptor
            (void)s.take_fd().release();
            co_await std::move(t);
        }
        // (no other form: the constructor's static_assert says so)
    }
    template <class H>
    static constexpr bool valid_handler = std::is_invocable_v<H&, TcpStream, SocketAddr> ||
                                          std::is_invocable_v<H&, TcpStream> || std::is_invocable_v<H&, int>;

    // Single accepts (each gives the peer's address, which the handler may take); errors as
    // net::accept_loop treats them (classify_accept_error).
    template <class H>
    static Task<void> accept_loop(std::shared_ptr<State> st, std::size_t i, std::shared_ptr<H> h) {
        TcpListener& listener = st->listeners[i];
        unsigned shortages = 0;
        for (;;) {
            auto c = co_await listener.accept();
            if (c) {
                shortages = 0;
                st->accepted[i].value.fetch_add(1, std::memory_order_relaxed);
                ringo::spawn(serve(h, std::move(c->stream), c->peer)).detach();
                continue;
            }
            const int e = c.error().value();
            const bool cancelled = co_await cancellation_requested(); // (not in an if: GCC 12)
            if (cancelled || e == ECANCELED)
                co_return;
            switch (classify_accept_error(e)) {
            case AcceptFailure::next: break;
            case AcceptFailure::back_off: // out of descriptors or memory: wait, then accept again
                (void)co_await sleep_for(accept_back_off(shortages));
                ++shortages;
                break;
            case AcceptFailure::stop: { // the socket itself is unusable (EBADF, EINVAL, ...)
                int expected = 0;
                st->error.compare_exchange_strong(expected, e, std::memory_order_relaxed);
                co_return;
            }
            }
        }
    }

    RuntimePool* pool_;
    std::shared_ptr<State> state_;
    std::uint16_t port_ = 0;
    std::mutex m_;
    std::vector<JoinHandle<void>> loops_;
    std::uint64_t hook_ = 0;
};

} // namespace ringo::net
