// ringo/net/tcp.hpp - TcpListener and TcpStream: TCP sockets whose operations yield ringo::Result.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>

#include <ringo/compose/timeout.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/detail/result_op.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/error.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net {

/// How TcpListener::bind sets up its socket: `TcpListener::bind(addr, {.backlog = 128})`.
struct ListenOptions {
    int backlog = 1024;      ///< listen(2)'s backlog (the kernel caps it at net.core.somaxconn)
    bool reuse_addr = true;  ///< SO_REUSEADDR: bind a port whose old connections are still in TIME_WAIT
    bool reuse_port = false; ///< SO_REUSEPORT: several listeners (with it set on each) share the port
};

class TcpStream;
class TcpListener;

namespace detail {

using ringo::detail::ResultOp; // an operation awaited as it is, yielding Result<T>

/// What close() returns: Fd::close (a release operation: it runs in a cancelled task too, and
/// is not interrupted), its result as a Result<void>.
class [[nodiscard]] CloseAwait {
public:
    explicit CloseAwait(int fd) noexcept : close_(fd) {}
    bool await_ready() noexcept { return close_.await_ready(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return close_.await_suspend(h);
    }
    Result<void> await_resume() noexcept { return Result<void>::from_res(close_.await_resume()); }

private:
    FdClose close_;
};

/// What TcpListener::accept returns (defined after TcpStream).
class AcceptAwait;

using RecvAwait = ResultOp<op::Recv, std::size_t>;
using SendAwait = ResultOp<op::Send, std::size_t>;
using ShutdownAwait = ResultOp<op::Shutdown, void>;

/// A new TCP socket of `family` (SOCK_CLOEXEC): IORING_OP_SOCKET, or socket(2) on a kernel
/// before 5.19. The descriptor or -errno.
inline Task<int> open_tcp_socket(int family) {
    int s = co_await op::socket(family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (s == -EOPNOTSUPP) { // the probe lacks IORING_OP_SOCKET
        s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
        if (s < 0)
            s = -errno;
    }
    co_return s;
}

inline bool is_ip(const SocketAddr& a) noexcept { return a.is_v4() || a.is_v6(); }

inline Result<SocketAddr> sock_name(int fd, bool peer) noexcept {
    SocketAddr a;
    int r = peer ? ::getpeername(fd, a.data(), a.out_size()) : ::getsockname(fd, a.data(), a.out_size());
    if (r != 0)
        return errno_code(errno);
    return a;
}

} // namespace detail

/// A connected TCP socket: owns its descriptor (an Fd, closed when the stream goes, on every
/// path) and gives the socket's operations as awaitables yielding ringo::Result.
///
/// What each call costs: read, write and shutdown are one io_uring operation awaited
/// directly (no coroutine frame, no allocation); close is Fd::close, awaited directly.
/// connect, read_exact and write_all are Tasks: one frame from ringo's frame pool per call,
/// a loop of operations inside. set_nodelay, local_addr and peer_addr are plain system calls
/// (setsockopt, getsockname, getpeername: no waiting).
///
/// Sends use MSG_NOSIGNAL: writing to a connection the peer has closed is EPIPE (or
/// ECONNRESET), never SIGPIPE. In a cancelled task every operation yields ECANCELED without
/// being submitted, except close(), which always closes. Buffers and the stream must stay
/// valid until the await ends.
///
///     auto s = co_await ringo::net::TcpStream::connect(*ringo::net::SocketAddr::parse("127.0.0.1:7"));
///     if (!s) co_return s.error();
///     auto w = co_await s->write_all("ping");
///     char buf[4];
///     auto r = co_await s->read_exact(buf, sizeof buf);
class TcpStream {
public:
    TcpStream() noexcept = default;
    /// Takes ownership of a connected stream socket.
    explicit TcpStream(Fd fd) noexcept : fd_(std::move(fd)) {}

    /// Connects to `addr` (IPv4 or IPv6; anything else is EAFNOSUPPORT): a new socket
    /// (SOCK_CLOEXEC) and IORING_OP_CONNECT. ECONNREFUSED when nothing listens there,
    /// ENETUNREACH, ETIMEDOUT after the kernel's own retries (minutes), ...
    static Task<Result<TcpStream>> connect(SocketAddr addr) {
        if (!detail::is_ip(addr))
            co_return std::make_error_code(std::errc::address_family_not_supported);
        int s = co_await detail::open_tcp_socket(addr.family());
        if (s < 0)
            co_return errno_code(s);
        Fd fd(s);
        int r = co_await op::connect(fd, addr.data(), addr.size());
        if (r < 0)
            co_return errno_code(r);
        co_return TcpStream(std::move(fd));
    }
    /// Same, but gives up after `timeout` (the connect is cancelled, the socket closed):
    /// std::errc::timed_out then. A zero or negative timeout times out at once.
    static Task<Result<TcpStream>> connect(SocketAddr addr, std::chrono::nanoseconds timeout) {
        if (!detail::is_ip(addr))
            co_return std::make_error_code(std::errc::address_family_not_supported);
        int s = co_await detail::open_tcp_socket(addr.family());
        if (s < 0)
            co_return errno_code(s);
        Fd fd(s);
        int r = co_await with_timeout(op::connect(fd, addr.data(), addr.size()), timeout);
        if (r == -ETIME)
            co_return std::make_error_code(std::errc::timed_out);
        if (r < 0)
            co_return errno_code(r);
        co_return TcpStream(std::move(fd));
    }

    /// Receives up to `len` bytes: the count, 0 when the peer has shut down its side (end of
    /// stream), or the error (ECONNRESET when the peer reset the connection). One IORING_OP_RECV.
    detail::RecvAwait read(void* buf, std::size_t len) noexcept {
        return detail::RecvAwait(op::FileRef(fd_), buf, len, 0);
    }
    detail::RecvAwait read(std::span<std::byte> buf) noexcept { return read(buf.data(), buf.size()); }

    /// Sends up to `len` bytes: the count sent, which may be short. One IORING_OP_SEND
    /// (MSG_NOSIGNAL).
    detail::SendAwait write(const void* buf, std::size_t len) noexcept {
        return detail::SendAwait(op::FileRef(fd_), buf, len, MSG_NOSIGNAL);
    }
    detail::SendAwait write(std::span<const std::byte> buf) noexcept { return write(buf.data(), buf.size()); }
    detail::SendAwait write(std::string_view s) noexcept { return write(s.data(), s.size()); }

    /// Fills `buf`, receiving again after short receives. The end of the stream first is
    /// net::Error::unexpected_eof (the bytes received so far are in `buf`).
    Task<Result<void>> read_exact(void* buf, std::size_t len) {
        auto* p = static_cast<std::byte*>(buf);
        std::size_t done = 0;
        while (done < len) {
            int r = co_await op::recv(fd_, p + done, len - done, 0);
            if (r < 0)
                co_return errno_code(r);
            if (r == 0)
                co_return make_error_code(Error::unexpected_eof);
            done += static_cast<std::size_t>(r);
        }
        co_return Result<void>{};
    }
    Task<Result<void>> read_exact(std::span<std::byte> buf) { return read_exact(buf.data(), buf.size()); }

    /// Sends all of `buf`, sending again after short sends (MSG_NOSIGNAL). A send that moves
    /// nothing is net::Error::write_zero; a peer that has gone is EPIPE or ECONNRESET.
    Task<Result<void>> write_all(const void* buf, std::size_t len) {
        const auto* p = static_cast<const std::byte*>(buf);
        std::size_t done = 0;
        while (done < len) {
            int r = co_await op::send(fd_, p + done, len - done, MSG_NOSIGNAL);
            if (r < 0)
                co_return errno_code(r);
            if (r == 0)
                co_return make_error_code(Error::write_zero);
            done += static_cast<std::size_t>(r);
        }
        co_return Result<void>{};
    }
    Task<Result<void>> write_all(std::span<const std::byte> buf) { return write_all(buf.data(), buf.size()); }
    /// The string's bytes must stay valid until the await ends: a temporary std::string is
    /// fine in `co_await s.write_all(std::string(...))` (it lives to the end of that
    /// statement), not in a Task kept to be awaited later.
    Task<Result<void>> write_all(std::string_view s) { return write_all(s.data(), s.size()); }

    /// shutdown(2) as IORING_OP_SHUTDOWN: SHUT_WR sends the end of stream (the peer's read
    /// yields 0) and keeps receiving; SHUT_RD, SHUT_RDWR.
    detail::ShutdownAwait shutdown(int how) noexcept { return detail::ShutdownAwait(op::FileRef(fd_), how); }

    /// TCP_NODELAY: on sends small segments at once (no Nagle delay).
    Result<void> set_nodelay(bool on) noexcept {
        int v = on ? 1 : 0;
        if (::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) != 0)
            return errno_code(errno);
        return {};
    }
    /// Whether TCP_NODELAY is on.
    [[nodiscard]] Result<bool> nodelay() const noexcept {
        int v = 0;
        socklen_t len = sizeof v;
        if (::getsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &v, &len) != 0)
            return errno_code(errno);
        return v != 0;
    }

    /// This end's address (getsockname).
    [[nodiscard]] Result<SocketAddr> local_addr() const noexcept { return detail::sock_name(fd_.get(), false); }
    /// The peer's address (getpeername; ENOTCONN once the connection is gone).
    [[nodiscard]] Result<SocketAddr> peer_addr() const noexcept { return detail::sock_name(fd_.get(), true); }

    /// Closes it now and reports the close's error (the destructor cannot); EBADF when it
    /// owned none. Runs in a cancelled task too. Afterwards every operation yields EBADF.
    detail::CloseAwait close() noexcept { return detail::CloseAwait(fd_.release()); }

    /// The owned descriptor (to pass to an op::).
    [[nodiscard]] const Fd& fd() const noexcept { return fd_; }
    /// Takes the descriptor out: the caller owns it, and the stream is closed.
    [[nodiscard]] Fd take_fd() noexcept { return std::move(fd_); }
    [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
    explicit operator bool() const noexcept { return fd_.valid(); }

private:
    Fd fd_;
};

/// What TcpListener::accept yields: the connection and the peer's address.
/// `auto [stream, peer] = std::move(*r);`
struct Accepted {
    TcpStream stream;
    SocketAddr peer;
};

namespace detail {
/// One IORING_OP_ACCEPT (SOCK_CLOEXEC) whose peer address lives in the awaitable (in the
/// awaiting frame: no allocation). Neither copied nor moved: the kernel writes into it.
class [[nodiscard]] AcceptAwait {
public:
    explicit AcceptAwait(op::FileRef fd) noexcept : op_(fd, nullptr, nullptr, SOCK_CLOEXEC) {}
    AcceptAwait(const AcceptAwait&) = delete;
    AcceptAwait& operator=(const AcceptAwait&) = delete;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        op_.addr_ = peer_.data();
        op_.len_ = peer_.out_size();
        return op_.await_suspend(h);
    }
    Result<Accepted> await_resume() noexcept {
        int r = op_.await_resume();
        if (r < 0)
            return errno_code(r);
        return Accepted{TcpStream(Fd(r)), peer_};
    }

private:
    SocketAddr peer_;
    op::Accept op_;
};
} // namespace detail

/// A listening TCP socket: owns its descriptor and accepts connections as TcpStreams.
///
///     auto l = co_await ringo::net::TcpListener::bind(ringo::net::SocketAddr::v4_loopback(0));
///     if (!l) co_return l.error();
///     auto port = l->local_addr()->port();          // the port the kernel picked
///     auto c = co_await l->accept();                // Result<Accepted>
///     if (c) { auto [stream, peer] = std::move(*c); ... }
///
/// accept and close are one operation awaited directly (no frame, no allocation); bind is a
/// Task (socket, options, bind, listen); local_addr is getsockname(2).
class TcpListener {
public:
    TcpListener() noexcept = default;
    /// Takes ownership of a listening socket.
    explicit TcpListener(Fd fd) noexcept : fd_(std::move(fd)) {}

    /// A new socket (SOCK_CLOEXEC) of `addr`'s family (IPv4 or IPv6; anything else is
    /// EAFNOSUPPORT), with SO_REUSEADDR / SO_REUSEPORT as `opts` says, bound to `addr` (port
    /// 0: the kernel picks one, see local_addr) and listening. EADDRINUSE when another
    /// socket has the port (and not both set reuse_port); EACCES for a port below 1024
    /// without the privilege. bind and listen go through the ring from Linux 6.11 and are
    /// plain system calls before.
    static Task<Result<TcpListener>> bind(SocketAddr addr, ListenOptions opts = {}) {
        if (!detail::is_ip(addr))
            co_return std::make_error_code(std::errc::address_family_not_supported);
        int s = co_await detail::open_tcp_socket(addr.family());
        if (s < 0)
            co_return errno_code(s);
        Fd fd(s);
        int one = 1;
        if (opts.reuse_addr && ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
            co_return errno_code(errno);
        if (opts.reuse_port && ::setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
            co_return errno_code(errno);
        int r = co_await op::bind(fd, addr.data(), addr.size());
        if (r == 0)
            r = co_await op::listen(fd, opts.backlog);
        if (r < 0)
            co_return errno_code(r);
        co_return TcpListener(std::move(fd));
    }

    /// Waits for the next connection: the stream (SOCK_CLOEXEC) and the peer's address. One
    /// IORING_OP_ACCEPT. EMFILE/ENFILE when out of descriptors (the connection stays queued).
    detail::AcceptAwait accept() noexcept { return detail::AcceptAwait(op::FileRef(fd_)); }

    /// The address it listens on (getsockname): the port the kernel picked for port 0.
    [[nodiscard]] Result<SocketAddr> local_addr() const noexcept { return detail::sock_name(fd_.get(), false); }

    /// Closes it now and reports the close's error; a release operation (runs in a cancelled
    /// task too). An accept still waiting on it is not woken by this: cancel its task.
    detail::CloseAwait close() noexcept { return detail::CloseAwait(fd_.release()); }

    /// The owned descriptor.
    [[nodiscard]] const Fd& fd() const noexcept { return fd_; }
    /// Takes the descriptor out: the caller owns it, and the listener is closed.
    [[nodiscard]] Fd take_fd() noexcept { return std::move(fd_); }
    [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
    explicit operator bool() const noexcept { return fd_.valid(); }

private:
    Fd fd_;
};

} // namespace ringo::net
