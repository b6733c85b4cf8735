// ringo/net/datagram.hpp - what UDP and Unix-domain datagram sockets share (DatagramSocket):
// connect, send and recv on a connected socket, send_to and recv_from with an address, and
// what recv_from yields (Datagram). The awaitables that keep an address or a msghdr in the
// awaiting frame are in namespace detail here: recv_from's yields a Datagram.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <coroutine>
#include <cstddef>
#include <span>
#include <string_view>
#include <utility>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/recvmsg_stream.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/detail/socket.hpp>
#include <ringo/net/socket.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net {

/// What recv_from yields: the bytes stored in the buffer, the sender's address, and whether
/// the datagram was longer than the buffer (then `size` is the buffer's length and the rest
/// of the datagram is gone).
struct Datagram {
    std::size_t size = 0;   ///< the bytes stored in the buffer (at most its length)
    SocketAddr peer;        ///< the sender's address
    bool truncated = false; ///< the datagram was longer than the buffer; the rest is lost
};

namespace detail {

/// IORING_OP_CONNECT with the address kept in the awaitable (a copy: the caller's may go).
/// Not copied; moved only before it is awaited (as with_timeout, when_all and when_any do):
/// the operation is pointed at the address in await_suspend, not before.
class [[nodiscard]] ConnectAwait {
public:
    ConnectAwait(op::FileRef fd, const SocketAddr& to) noexcept : to_(to), op_(fd, nullptr, 0) {}
    ConnectAwait(ConnectAwait&&) noexcept = default;
    ConnectAwait(const ConnectAwait&) = delete;
    ConnectAwait& operator=(const ConnectAwait&) = delete;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        op_.addr_ = to_.data();
        op_.len_ = to_.size();
        return op_.await_suspend(h);
    }
    Result<void> await_resume() noexcept {
        const int r = op_.await_resume();
        if (r < 0) [[unlikely]]
            return Result<void>(errno_code(r), addr_note("connect to", to_));
        return {};
    }

private:
    SocketAddr to_;
    op::Connect op_;
};

/// One IORING_OP_SENDMSG of one buffer to an address: the msghdr, its iovec and a copy of the
/// address live in the awaitable (in the awaiting frame: no allocation). The kernel reads
/// them, so it is not copied, and moved only before it is awaited (as with_timeout, when_all
/// and when_any do): the operation and the msghdr are pointed at its own members in
/// await_suspend, not before.
class [[nodiscard]] SendToAwait {
public:
    SendToAwait(op::FileRef fd, const void* buf, std::size_t len, const SocketAddr& to) noexcept
        : to_(to), iov_{const_cast<void*>(buf), len}, op_(fd, nullptr, MSG_NOSIGNAL) {}
    SendToAwait(SendToAwait&&) noexcept = default;
    SendToAwait(const SendToAwait&) = delete;
    SendToAwait& operator=(const SendToAwait&) = delete;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        msg_ = msghdr{};
        msg_.msg_name = const_cast<sockaddr*>(to_.data());
        msg_.msg_namelen = to_.size();
        msg_.msg_iov = &iov_;
        msg_.msg_iovlen = 1;
        op_.msg_ = &msg_;
        return op_.await_suspend(h);
    }
    Result<std::size_t> await_resume() noexcept {
        const int r = op_.await_resume();
        if (r < 0) [[unlikely]]
            return Result<std::size_t>(errno_code(r), addr_note("send to", to_));
        return static_cast<std::size_t>(r);
    }

private:
    SocketAddr to_;
    iovec iov_;
    msghdr msg_{};
    op::Sendmsg op_;
};

/// One IORING_OP_RECVMSG into one buffer, with MSG_TRUNC (the result is the datagram's full
/// length, so a longer datagram is seen): the msghdr, its iovec and the sender's address live
/// in the awaitable. The kernel writes into it, so it is not copied, and moved only before it
/// is awaited (as with_timeout, when_all and when_any do): the operation and the msghdr are
/// pointed at its own members in await_suspend, not before.
class [[nodiscard]] RecvFromAwait {
public:
    RecvFromAwait(op::FileRef fd, void* buf, std::size_t len) noexcept : iov_{buf, len}, op_(fd, nullptr, MSG_TRUNC) {}
    RecvFromAwait(RecvFromAwait&&) noexcept = default;
    RecvFromAwait(const RecvFromAwait&) = delete;
    RecvFromAwait& operator=(const RecvFromAwait&) = delete;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        msg_ = msghdr{};
        msg_.msg_name = peer_.data();
        msg_.msg_namelen = *peer_.out_size();
        msg_.msg_iov = &iov_;
        msg_.msg_iovlen = 1;
        op_.msg_ = &msg_;
        return op_.await_suspend(h);
    }
    Result<Datagram> await_resume() noexcept {
        int r = op_.await_resume();
        if (r < 0)
            return Result<Datagram>(errno_code(r), ringo::detail::what::recv);
        *peer_.size_ptr() = msg_.msg_namelen; // what the kernel wrote back
        auto n = static_cast<std::size_t>(r);
        return Datagram{n < iov_.iov_len ? n : iov_.iov_len, peer_, n > iov_.iov_len};
    }

private:
    SocketAddr peer_;
    iovec iov_;
    msghdr msg_{};
    op::Recvmsg op_;
};

} // namespace detail

/// A datagram socket (UdpSocket, UnixDatagram): connect, send and recv on a connected
/// socket, send_to and recv_from with an address, peer_addr, and SocketBase's close,
/// local_addr and descriptor access. Every call is one io_uring operation awaited directly
/// (no frame, no allocation). In a cancelled task every operation yields ECANCELED without
/// being submitted, except close(). Buffers must stay valid until the await ends; the
/// addresses are copied into the awaitable.
template <class Derived>
class DatagramSocket : public SocketBase<Derived> {
public:
    /// The datagrams that arrive, as a stream of buf::Message (buf::recvmsg_multishot: one
    /// multishot IORING_OP_RECVMSG stays armed; each datagram lands in a buffer the kernel
    /// picks from `ring`, with its sender's address; a truncated one says so):
    ///
    ///     auto in = sock.recv_stream(ring);
    ///     while (ringo::buf::Message m = co_await in.next())
    ///         handle(m.payload(), ringo::net::SocketAddr::from(m.name(), m.name_len()));
    ///
    /// The stream must not outlive the socket; dropping it cancels the receive. The ring must
    /// not be incremental (datagram boundaries would be lost: -EINVAL).
    [[nodiscard]] buf::RecvMsgStream recv_stream(buf::BufferRing& ring) {
        return buf::recvmsg_multishot(op::FileRef(this->fd_), ring);
    }

    /// Sets the default peer (IORING_OP_CONNECT): send and recv then go to and come from it
    /// only, and an error the peer reports (ECONNREFUSED: nothing listens there) comes back
    /// from a later send or recv. No packet is sent.
    detail::ConnectAwait connect(const SocketAddr& peer) noexcept {
        return detail::ConnectAwait(op::FileRef(this->fd_), peer);
    }

    /// Sends one datagram to the connected peer: the bytes sent (all of them) or the error
    /// (EMSGSIZE when it is too long for one datagram, EDESTADDRREQ when not connected,
    /// ECONNREFUSED after the peer said nothing listens). One IORING_OP_SEND.
    detail::DatagramSendAwait send(const void* buf, std::size_t len) noexcept {
        return detail::DatagramSendAwait(op::FileRef(this->fd_), buf, len, MSG_NOSIGNAL);
    }
    /// send() of `buf`'s bytes.
    detail::DatagramSendAwait send(std::span<const std::byte> buf) noexcept { return send(buf.data(), buf.size()); }
    /// send() of the string's bytes (no terminating NUL).
    detail::DatagramSendAwait send(std::string_view s) noexcept { return send(s.data(), s.size()); }

    /// Receives one datagram (from the connected peer, if connected): the bytes stored. A
    /// datagram longer than `len` is cut to `len` and the rest is lost, without a sign of it:
    /// use recv_from to see it. One IORING_OP_RECV.
    detail::DatagramRecvAwait recv(void* buf, std::size_t len) noexcept {
        return detail::DatagramRecvAwait(op::FileRef(this->fd_), buf, len, 0);
    }
    /// recv() into `buf`.
    detail::DatagramRecvAwait recv(std::span<std::byte> buf) noexcept { return recv(buf.data(), buf.size()); }

    /// Sends one datagram to `to`. One IORING_OP_SENDMSG (the address, msghdr and iovec in
    /// the awaitable).
    detail::SendToAwait send_to(const void* buf, std::size_t len, const SocketAddr& to) noexcept {
        return detail::SendToAwait(op::FileRef(this->fd_), buf, len, to);
    }
    /// send_to() of `buf`'s bytes.
    detail::SendToAwait send_to(std::span<const std::byte> buf, const SocketAddr& to) noexcept {
        return send_to(buf.data(), buf.size(), to);
    }
    /// send_to() of the string's bytes (no terminating NUL).
    detail::SendToAwait send_to(std::string_view s, const SocketAddr& to) noexcept {
        return send_to(s.data(), s.size(), to);
    }

    /// Receives one datagram: Datagram{size, peer, truncated}. A datagram longer than `len`
    /// fills the buffer and has `truncated` set. One IORING_OP_RECVMSG with MSG_TRUNC.
    detail::RecvFromAwait recv_from(void* buf, std::size_t len) noexcept {
        return detail::RecvFromAwait(op::FileRef(this->fd_), buf, len);
    }
    /// recv_from() into `buf`.
    detail::RecvFromAwait recv_from(std::span<std::byte> buf) noexcept { return recv_from(buf.data(), buf.size()); }

    /// The connected peer's address (getpeername; ENOTCONN when not connected).
    [[nodiscard]] Result<SocketAddr> peer_addr() const noexcept { return detail::sock_name(this->fd_.get(), true); }

protected:
    DatagramSocket() noexcept = default;
    /// Owns socket `fd` (UdpSocket's and UnixDatagram's constructors pass it on).
    explicit DatagramSocket(Fd fd) noexcept : SocketBase<Derived>(std::move(fd)) {}
};

} // namespace ringo::net
