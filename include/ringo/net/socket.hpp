// ringo/net/socket.hpp - what every socket type of ringo::net shares (SocketBase: the owned
// descriptor, close, local address) and how a listening socket is set up (ListenOptions).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include <ringo/io/fd.hpp>
#include <ringo/io/owns_fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>

namespace ringo::net {

/// How a listening socket is set up: `TcpListener::bind(addr, {.backlog = 128})`.
struct ListenOptions {
    int backlog = 1024;      ///< listen(2)'s backlog (the kernel caps it at net.core.somaxconn)
    bool reuse_addr = true;  ///< SO_REUSEADDR: bind a port whose old connections are still in TIME_WAIT
    bool reuse_port = false; ///< SO_REUSEPORT: several listeners (with it set on each) share the port
};

namespace detail {

/// The socket's own address (getsockname) or, with `peer`, its peer's (getpeername).
inline Result<SocketAddr> sock_name(int fd, bool peer) noexcept {
    SocketAddr a;
    int r = peer ? ::getpeername(fd, a.data(), a.out_size()) : ::getsockname(fd, a.data(), a.out_size());
    if (r != 0)
        return errno_code(errno);
    return a;
}

} // namespace detail

/// What the socket types of ringo::net have in common: an owned descriptor (an Fd, closed
/// when the object goes, on every path), close, take_fd, dup_of (ringo::OwnsFd, the I/O
/// layer's base of every type owning one descriptor) and local_addr. `Derived` is the socket
/// type itself.
template <class Derived>
class SocketBase : public OwnsFd<Derived> {
public:
    /// This end's address (getsockname): the port the kernel chose after binding port 0, say.
    /// EBADF when closed. A plain system call, not a ring operation.
    [[nodiscard]] Result<SocketAddr> local_addr() const noexcept { return detail::sock_name(this->fd_.get(), false); }

protected:
    SocketBase() noexcept = default;
    /// Owns socket `fd`.
    explicit SocketBase(Fd fd) noexcept : OwnsFd<Derived>(std::move(fd)) {}
};

} // namespace ringo::net
