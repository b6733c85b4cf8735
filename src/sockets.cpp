// The set-up calls of ringo::net's socket types (bind, connect: Tasks that run once per
// socket), compiled here once rather than in every file that includes a socket header.
#include "socket_setup.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <optional>
#include <utility>

#include <ringo/net/tcp.hpp>
#include <ringo/net/udp.hpp>
#include <ringo/net/unix.hpp>

namespace ringo::net {

namespace detail {

Task<int> open_socket(int family, int type, int protocol) {
    int s = co_await op::socket(family, type | SOCK_CLOEXEC, protocol);
    if (s == -EOPNOTSUPP) { // the probe lacks IORING_OP_SOCKET
        s = ::socket(family, type | SOCK_CLOEXEC, protocol);
        if (s < 0)
            s = -errno;
    }
    co_return s;
}

ringo::detail::ErrorNote addr_note(const char* with, const SocketAddr& a) noexcept {
    try {
        return ringo::detail::ErrorNote::made(with, a.to_string());
    } catch (...) { // no memory for the text
        return ringo::detail::ErrorNote(with);
    }
}

} // namespace detail

namespace {
constexpr detail::BindSpec tcp_listen(ListenOptions opts) {
    return {.type = SOCK_STREAM, .protocol = IPPROTO_TCP, .opts = opts, .listen = true};
}
} // namespace

Task<Result<TcpStream>> TcpStream::connect(SocketAddr addr) {
    return detail::connect_as<TcpStream>(addr, detail::is_ip(addr), SOCK_STREAM, IPPROTO_TCP, std::nullopt);
}

Task<Result<TcpStream>> TcpStream::connect(SocketAddr addr, std::chrono::nanoseconds timeout) {
    return detail::connect_as<TcpStream>(addr, detail::is_ip(addr), SOCK_STREAM, IPPROTO_TCP, timeout);
}

Task<Result<TcpListener>> TcpListener::bind(SocketAddr addr, ListenOptions opts) {
    return detail::bind_as<TcpListener>(addr, detail::is_ip(addr), tcp_listen(opts));
}

Result<TcpListener> TcpListener::bind_sync(const SocketAddr& addr, ListenOptions opts) noexcept {
    return detail::bind_sync_as<TcpListener>(addr, detail::is_ip(addr), tcp_listen(opts));
}

Task<Result<UdpSocket>> UdpSocket::bind(SocketAddr addr, ListenOptions opts) {
    return detail::bind_as<UdpSocket>(addr, detail::is_ip(addr),
                                      {.type = SOCK_DGRAM, .protocol = IPPROTO_UDP, .opts = opts});
}

Task<Result<UnixStream>> UnixStream::connect(SocketAddr addr) {
    return detail::connect_as<UnixStream>(addr, addr.is_unix(), SOCK_STREAM, 0, std::nullopt);
}

Task<Result<UnixStream>> UnixStream::connect(SocketAddr addr, std::chrono::nanoseconds timeout) {
    return detail::connect_as<UnixStream>(addr, addr.is_unix(), SOCK_STREAM, 0, timeout);
}

Task<Result<UnixListener>> UnixListener::bind(SocketAddr addr, int backlog) {
    return detail::bind_as<UnixListener>(
        addr, addr.is_unix(),
        {.type = SOCK_STREAM, .protocol = 0, .opts = {.backlog = backlog, .reuse_addr = false}, .listen = true});
}

Result<std::pair<UnixStream, UnixStream>> UnixStream::pair() noexcept {
    return detail::socket_pair<UnixStream>(SOCK_STREAM);
}

Result<UnixDatagram> UnixDatagram::unbound() noexcept {
    int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return errno_code(errno);
    return UnixDatagram(Fd(s));
}

Result<std::pair<UnixDatagram, UnixDatagram>> UnixDatagram::pair() noexcept {
    return detail::socket_pair<UnixDatagram>(SOCK_DGRAM);
}

Task<Result<UnixDatagram>> UnixDatagram::bind(SocketAddr addr) {
    return detail::bind_as<UnixDatagram>(addr, addr.is_unix(),
                                         {.type = SOCK_DGRAM, .protocol = 0, .opts = {.reuse_addr = false}});
}

} // namespace ringo::net
