// ringo/net/detail/socket.hpp - the plumbing every socket type of ringo::net shares: the
// awaitables of reads and writes, socket options, error notes. The public part (the owned
// descriptor, close, local address, ListenOptions) is net/socket.hpp; the Tasks that open,
// bind and connect a socket are compiled in the library (src/socket_setup.hpp).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <utility>

#include <ringo/io/detail/result_op.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/socket.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net {

namespace detail {

using ringo::detail::ResultOp;       // an operation awaited as it is, yielding Result<T>
using ringo::detail::SocketResultOp; // the same, an error noted with the peer's address
namespace what = ringo::detail::what;

// A stream's read and write, a datagram socket's recv and send: the bytes moved.
using RecvAwait = SocketResultOp<op::Recv, std::size_t, what::read, what::read_from>;
using SendAwait = SocketResultOp<op::Send, std::size_t, what::write, what::write_to>;
using DatagramRecvAwait = SocketResultOp<op::Recv, std::size_t, what::recv, what::recv_from>;
using DatagramSendAwait = SocketResultOp<op::Send, std::size_t, what::send, what::send_to>;

inline bool is_ip(const SocketAddr& a) noexcept { return a.is_v4() || a.is_v6(); }

/// `with` and the address ("connect to 127.0.0.1:9"): what failed, for Result's messages.
/// Made only on an error path (src/sockets.cpp).
ringo::detail::ErrorNote addr_note(const char* with, const SocketAddr& a) noexcept;

/// A boolean socket option (SO_BROADCAST, TCP_NODELAY ...): set it, or read it.
inline Result<void> set_flag(int fd, int level, int name, bool on) noexcept {
    int v = on ? 1 : 0;
    if (::setsockopt(fd, level, name, &v, sizeof v) != 0)
        return errno_code(errno);
    return {};
}
inline Result<bool> get_flag(int fd, int level, int name) noexcept {
    int v = 0;
    socklen_t len = sizeof v;
    if (::getsockopt(fd, level, name, &v, &len) != 0)
        return errno_code(errno);
    return v != 0;
}

/// Two connected Unix-domain sockets of `type` (socketpair(2), SOCK_CLOEXEC) as S objects.
template <class S>
Result<std::pair<S, S>> socket_pair(int type) noexcept {
    int sv[2];
    if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0)
        return errno_code(errno);
    return std::pair<S, S>(S(Fd(sv[0])), S(Fd(sv[1])));
}

} // namespace detail
} // namespace ringo::net
