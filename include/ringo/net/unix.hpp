// ringo/net/unix.hpp - UnixListener, UnixStream and UnixDatagram: Unix-domain sockets whose
// operations yield ringo::Result.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/datagram.hpp>
#include <ringo/net/detail/socket.hpp>
#include <ringo/net/stream.hpp>

namespace ringo::net {

/// A connected Unix-domain stream socket (SOCK_STREAM, AF_UNIX): the same operations as
/// TcpStream, with the same costs (read, write, shutdown and close are one operation awaited
/// directly, and read_exact and write_all as well; connect one pooled frame per call): see
/// net::StreamSocket. Its addresses are Unix-domain SocketAddrs: a path, an abstract name
/// ("@name" when printed), or unnamed (a connecting socket that did not bind, and both ends
/// of pair()).
///
///     auto s = co_await ringo::net::UnixStream::connect(*ringo::net::SocketAddr::unix_path("/run/app.sock"));
///     if (!s) co_return s.failure();                 // ENOENT: no such file, ECONNREFUSED: nobody listens
///     auto w = co_await s->write_all("ping");
class UnixStream : public StreamSocket<UnixStream> {
public:
    UnixStream() noexcept = default;
    /// Takes ownership of a connected Unix-domain stream socket.
    explicit UnixStream(Fd fd) noexcept : StreamSocket(std::move(fd)) {}

    /// Connects to `addr` (a Unix-domain address; anything else is EAFNOSUPPORT): a new socket
    /// (SOCK_CLOEXEC) and IORING_OP_CONNECT. ENOENT when no file has that path, ECONNREFUSED
    /// when the file (or abstract name) has no listener, EACCES without write permission on
    /// the socket file; EAGAIN when the listener's queue is full.
    static Task<Result<UnixStream>> connect(SocketAddr addr);
    /// Same, but gives up after `timeout`: std::errc::timed_out.
    static Task<Result<UnixStream>> connect(SocketAddr addr, std::chrono::nanoseconds timeout);

    /// Two connected, unnamed streams (socketpair(2), SOCK_CLOEXEC): what one writes the
    /// other reads. A plain system call (no waiting); EMFILE/ENFILE when out of descriptors.
    static Result<std::pair<UnixStream, UnixStream>> pair() noexcept;
};

/// What UnixListener::accept yields: the connection and the peer's address (unnamed unless
/// the peer bound its socket before connecting). `auto [stream, peer] = std::move(*r);`
using UnixAccepted = BasicAccepted<UnixStream>;

/// A listening Unix-domain stream socket: owns its descriptor and accepts connections as
/// UnixStreams. accept and close are one operation awaited directly (no frame, no
/// allocation); bind is a Task (socket, bind, listen); local_addr is getsockname(2).
///
/// A path binds a socket file, which stays after the listener closes (as with any Unix
/// socket: remove it with unlink(2) or std::filesystem::remove); binding a path that exists
/// is EADDRINUSE. An abstract name (SocketAddr::unix_abstract) has no file and goes with its
/// socket.
///
///     auto l = co_await ringo::net::UnixListener::bind(*ringo::net::SocketAddr::unix_abstract("app"));
///     auto c = co_await l->accept();                // Result<UnixAccepted>
class UnixListener : public ListenerSocket<UnixListener, UnixStream> {
public:
    UnixListener() noexcept = default;
    /// Takes ownership of a listening socket.
    explicit UnixListener(Fd fd) noexcept : ListenerSocket(std::move(fd)) {}

    /// A new socket (SOCK_CLOEXEC) bound to `addr` (a Unix-domain path or abstract name;
    /// anything else is EAFNOSUPPORT) and listening with `backlog`. EADDRINUSE when the path
    /// exists (whatever the file is) or the abstract name is taken; ENOENT when the path's
    /// directory does not exist; EACCES without write permission on it.
    static Task<Result<UnixListener>> bind(SocketAddr addr, int backlog = 1024);
};

/// A Unix-domain datagram socket (SOCK_DGRAM, AF_UNIX): the same operations as UdpSocket,
/// with the same costs (every call one operation awaited directly: see
/// net::DatagramSocket). Datagrams keep their boundaries and order and are never lost
/// between two sockets: a send waits while the receiver's queue is full.
///
/// A sender that did not bind has no address: the receiver's recv_from gives an empty
/// SocketAddr (AF_UNSPEC, size 0) as its peer, which cannot be answered. Bind both ends (or use pair()) to talk both
/// ways.
class UnixDatagram : public DatagramSocket<UnixDatagram> {
public:
    UnixDatagram() noexcept = default;
    /// Takes ownership of a Unix-domain datagram socket.
    explicit UnixDatagram(Fd fd) noexcept : DatagramSocket(std::move(fd)) {}

    /// A new socket (SOCK_CLOEXEC) bound to `addr` (a path or abstract name; anything else
    /// is EAFNOSUPPORT). EADDRINUSE when the path exists or the name is taken. A Task.
    static Task<Result<UnixDatagram>> bind(SocketAddr addr);
    /// A new socket bound to nothing (socket(2)): it can send_to, or connect and send. A plain
    /// system call.
    static Result<UnixDatagram> unbound() noexcept;
    /// Two connected, unnamed datagram sockets (socketpair(2), SOCK_CLOEXEC). A plain system
    /// call.
    static Result<std::pair<UnixDatagram, UnixDatagram>> pair() noexcept;
};

} // namespace ringo::net
