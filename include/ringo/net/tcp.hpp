// ringo/net/tcp.hpp - TcpListener and TcpStream: TCP sockets whose operations yield ringo::Result.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/detail/socket.hpp>
#include <ringo/net/error.hpp>
#include <ringo/net/stream.hpp>

namespace ringo::net {

/// A connected TCP socket: owns its descriptor (an Fd, closed when the stream goes, on every
/// path) and gives the socket's operations as awaitables yielding ringo::Result: read, write,
/// read_exact, write_all, shutdown, close, local_addr, peer_addr (net::StreamSocket, shared
/// with UnixStream).
///
/// What each call costs: read, write and shutdown are one io_uring operation awaited
/// directly (no coroutine frame, no allocation); close is Fd::close, awaited directly.
/// read_exact and write_all are awaited directly too: one operation, and another after each
/// short transfer before the task resumes. connect is a Task: one frame from ringo's frame
/// pool per call. set_nodelay, local_addr and peer_addr are plain system calls
/// (setsockopt, getsockname, getpeername: no waiting).
///
/// Sends use MSG_NOSIGNAL: writing to a connection the peer has closed is EPIPE (or
/// ECONNRESET), never SIGPIPE. In a cancelled task every operation yields ECANCELED without
/// being submitted, except close(), which always closes. Buffers and the stream must stay
/// valid until the await ends.
///
///     auto s = co_await ringo::net::TcpStream::connect(*ringo::net::SocketAddr::parse("127.0.0.1:7"));
///     if (!s) co_return s.failure();
///     auto w = co_await s->write_all("ping");
///     char buf[4];
///     auto r = co_await s->read_exact(buf, sizeof buf);
class TcpStream : public StreamSocket<TcpStream> {
public:
    TcpStream() noexcept = default;
    /// Takes ownership of a connected stream socket.
    explicit TcpStream(Fd fd) noexcept : StreamSocket(std::move(fd)) {}

    /// Connects to `addr` (IPv4 or IPv6; anything else is EAFNOSUPPORT): a new socket
    /// (SOCK_CLOEXEC) and IORING_OP_CONNECT. ECONNREFUSED when nothing listens there,
    /// ENETUNREACH, ETIMEDOUT after the kernel's own retries (minutes), ...
    static Task<Result<TcpStream>> connect(SocketAddr addr);
    /// Same, but gives up after `timeout` (the connect is cancelled, the socket closed):
    /// std::errc::timed_out then. A zero or negative timeout times out at once.
    static Task<Result<TcpStream>> connect(SocketAddr addr, std::chrono::nanoseconds timeout);

    /// Tries each of `addrs` in turn until one accepts: the first connection made, or, when
    /// none is, the error of the last one tried (EINVAL for an empty list). A cancelled task
    /// stops at once with ECANCELED.
    static Task<Result<TcpStream>> connect(std::vector<SocketAddr> addrs);
    /// Connects to `host` at `port`: resolves it (net::resolve: a numeric address such as
    /// "127.0.0.1" or "::1" as it is, a name such as "localhost" through getaddrinfo on the
    /// blocking pool) and tries each of its addresses in turn, in the resolver's order, until
    /// one accepts. Yields the first connection made; when none is, the error of the last
    /// address tried (ECONNREFUSED, ENETUNREACH ...), or the resolver's
    /// (ResolveError::not_found ...). A cancelled task stops at once with ECANCELED.
    ///
    ///     auto s = co_await ringo::net::TcpStream::connect("localhost", 8080);
    static Task<Result<TcpStream>> connect(std::string host, std::uint16_t port);
    /// Same, with one deadline for the whole attempt, the lookup and every address tried:
    /// std::errc::timed_out once it has passed (what runs then is cancelled, each socket
    /// closed). A zero or negative timeout times out at once.
    static Task<Result<TcpStream>> connect(std::string host, std::uint16_t port, std::chrono::nanoseconds timeout);
    /// connect(host, port) of a "host:port" text: "example.com:80", "127.0.0.1:8080",
    /// "[::1]:443" (an IPv6 address in brackets). EINVAL, with nothing looked up, for a text
    /// without a port, a port that is not a decimal number up to 65535, an empty host, or an
    /// IPv6 address without brackets.
    static Task<Result<TcpStream>> connect(std::string_view host_port);
    /// Same, with one deadline for the whole attempt (see above).
    static Task<Result<TcpStream>> connect(std::string_view host_port, std::chrono::nanoseconds timeout);

    /// TCP_NODELAY: on sends small segments at once (no Nagle delay).
    Result<void> set_nodelay(bool on) noexcept { return detail::set_flag(fd_.get(), IPPROTO_TCP, TCP_NODELAY, on); }
    /// Whether TCP_NODELAY is on.
    [[nodiscard]] Result<bool> nodelay() const noexcept {
        return detail::get_flag(fd_.get(), IPPROTO_TCP, TCP_NODELAY);
    }
};

/// What TcpListener::accept yields: the connection and the peer's address.
/// `auto [stream, peer] = std::move(*r);`
using Accepted = BasicAccepted<TcpStream>;

/// A listening TCP socket: owns its descriptor and accepts connections as TcpStreams.
///
///     auto l = co_await ringo::net::TcpListener::bind(ringo::net::SocketAddr::v4_loopback(0));
///     if (!l) co_return l.failure();
///     auto port = l->local_addr()->port();          // the port the kernel picked
///     auto c = co_await l->accept();                // Result<Accepted>
///     if (c) { auto [stream, peer] = std::move(*c); ... }
///
/// accept and close are one operation awaited directly (no frame, no allocation); bind is a
/// Task (socket, options, bind, listen); local_addr is getsockname(2). close does not wake
/// an accept still waiting on the listener: cancel its task.
class TcpListener : public ListenerSocket<TcpListener, TcpStream> {
public:
    TcpListener() noexcept = default;
    /// Takes ownership of a listening socket.
    explicit TcpListener(Fd fd) noexcept : ListenerSocket(std::move(fd)) {}

    /// A new socket (SOCK_CLOEXEC) of `addr`'s family (IPv4 or IPv6; anything else is
    /// EAFNOSUPPORT), with SO_REUSEADDR / SO_REUSEPORT as `opts` says, bound to `addr` (port
    /// 0: the kernel picks one, see local_addr) and listening. EADDRINUSE when another
    /// socket has the port (and not both set reuse_port); EACCES for a port below 1024
    /// without the privilege. bind and listen go through the ring from Linux 6.11 and are
    /// plain system calls before.
    static Task<Result<TcpListener>> bind(SocketAddr addr, ListenOptions opts = {});
    /// The same set-up with plain system calls (socket, setsockopt, bind, listen), callable
    /// where no runtime runs: a constructor, or main before its runtime starts. The listener
    /// may then be used on any runtime.
    static Result<TcpListener> bind_sync(const SocketAddr& addr, ListenOptions opts = {}) noexcept;
};

} // namespace ringo::net
