// ringo/net/udp.hpp - UdpSocket: a UDP socket whose operations yield ringo::Result.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/datagram.hpp>
#include <ringo/net/detail/socket.hpp>

namespace ringo::net {

/// A UDP socket (IPv4 or IPv6): owns its descriptor (an Fd, closed when the socket goes, on
/// every path) and sends and receives datagrams with awaitables yielding ringo::Result:
/// send_to / recv_from with an address, or connect once and send / recv (net::DatagramSocket,
/// shared with UnixDatagram).
///
/// What each call costs: connect, send, recv, send_to, recv_from and close are one io_uring
/// operation awaited directly (no coroutine frame, no allocation: send_to and recv_from keep
/// their msghdr, iovec and address in the awaitable). bind is a Task (one pooled frame).
/// set_broadcast, local_addr and peer_addr are plain system calls.
///
///     auto s = co_await ringo::net::UdpSocket::bind(ringo::net::SocketAddr::v4_any(0));
///     if (!s) co_return s.failure();
///     char buf[1500];
///     auto d = co_await s->recv_from(buf, sizeof buf);     // Result<Datagram>
///     if (d) co_await s->send_to(buf, d->size, d->peer);   // echo it back
class UdpSocket : public DatagramSocket<UdpSocket> {
public:
    UdpSocket() noexcept = default;
    /// Takes ownership of a UDP socket.
    explicit UdpSocket(Fd fd) noexcept : DatagramSocket(std::move(fd)) {}

    /// A new UDP socket (SOCK_CLOEXEC) of `addr`'s family (IPv4 or IPv6; anything else is
    /// EAFNOSUPPORT) bound to `addr`: port 0 lets the kernel pick one (see local_addr), an
    /// any-address (v4_any, v6_any) receives on every interface. EADDRINUSE when the port is
    /// taken (unless every socket on it set reuse_port), EACCES below 1024 without the
    /// privilege. `opts.reuse_addr` and `opts.reuse_port` set SO_REUSEADDR and SO_REUSEPORT
    /// (both off by default for UDP); the backlog means nothing here.
    static Task<Result<UdpSocket>> bind(SocketAddr addr, ListenOptions opts = {.reuse_addr = false});

    /// SO_BROADCAST: allows sending to a broadcast address (else EACCES).
    Result<void> set_broadcast(bool on) noexcept { return detail::set_flag(fd_.get(), SOL_SOCKET, SO_BROADCAST, on); }
    /// Whether SO_BROADCAST is on.
    [[nodiscard]] Result<bool> broadcast() const noexcept {
        return detail::get_flag(fd_.get(), SOL_SOCKET, SO_BROADCAST);
    }
};

} // namespace ringo::net
