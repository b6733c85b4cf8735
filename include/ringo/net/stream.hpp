// ringo/net/stream.hpp - what TCP and Unix-domain stream sockets share: a connected stream's
// operations (StreamSocket: read, write, read_exact, write_all, shutdown), a listener's accept
// and incoming (ListenerSocket), and what accept yields (BasicAccepted).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <span>
#include <string_view>
#include <utility>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/recv_stream.hpp>
#include <ringo/io/detail/exact.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/read_to_end.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/detail/socket.hpp>
#include <ringo/net/detail/stream.hpp>
#include <ringo/net/error.hpp>
#include <ringo/net/incoming.hpp>
#include <ringo/net/socket.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net {

/// What a listener's accept yields: the connection and the peer's address
/// (`auto [stream, peer] = std::move(*r);`). net::Accepted for TCP, net::UnixAccepted for
/// Unix-domain streams.
template <class Stream>
struct BasicAccepted {
    Stream stream;   ///< the accepted connection (SOCK_CLOEXEC)
    SocketAddr peer; ///< the peer's address, as accept(2) gave it
};

/// A connected stream socket (TcpStream, UnixStream): read, write, read_exact, write_all,
/// shutdown, peer_addr, and SocketBase's close, local_addr and descriptor access.
///
/// read, write and shutdown are one io_uring operation awaited directly (no coroutine frame,
/// no allocation); close is Fd::close, awaited directly. read_exact and write_all are awaited
/// directly too (no frame, no allocation): one operation, and another
/// after each short transfer. Sends use
/// MSG_NOSIGNAL: a peer that has gone is EPIPE (or ECONNRESET), never SIGPIPE. In a cancelled
/// task every operation yields ECANCELED without being submitted, except close(), which
/// always closes. Buffers and the socket must stay valid until the await ends.
template <class Derived>
class StreamSocket : public SocketBase<Derived>, public ReadsToEnd<Derived> {
public:
    /// Receives up to `len` bytes: the count, 0 when the peer has shut down its side (end of
    /// stream), or the error (ECONNRESET when the peer reset the connection). One
    /// IORING_OP_RECV.
    detail::RecvAwait read(void* buf, std::size_t len) noexcept {
        return detail::RecvAwait(op::FileRef(this->fd_), buf, len, 0);
    }
    /// read() into `buf`.
    detail::RecvAwait read(std::span<std::byte> buf) noexcept { return read(buf.data(), buf.size()); }

    /// Sends up to `len` bytes: the count sent, which may be short. One IORING_OP_SEND
    /// (MSG_NOSIGNAL). `flags` adds send(2) flags, such as MSG_MORE: more follows at once, so
    /// the kernel holds back a partial segment until the next send without it (or for about
    /// 200 ms at most): the head of an HTTP answer then leaves with the first bytes of its
    /// body, not in a packet of its own. The flags go to the kernel as they are: with
    /// MSG_DONTWAIT a full socket yields EAGAIN instead of waiting for room.
    detail::SendAwait write(const void* buf, std::size_t len, int flags = 0) noexcept {
        return detail::SendAwait(op::FileRef(this->fd_), buf, len, MSG_NOSIGNAL | flags);
    }
    /// write() of `buf`'s bytes.
    detail::SendAwait write(std::span<const std::byte> buf) noexcept { return write(buf.data(), buf.size()); }
    /// write() of the string's bytes (no terminating NUL).
    detail::SendAwait write(std::string_view s) noexcept { return write(s.data(), s.size()); }

    /// What arrives, as a stream of buffers from `ring` (buf::recv_multishot: one
    /// IORING_OP_RECV with IORING_RECV_MULTISHOT stays armed, and the kernel puts each chunk
    /// in a buffer it picks from the ring; no buffer per connection):
    ///
    ///     auto in = conn.recv_stream(ring);
    ///     while (ringo::buf::Buffer b = co_await in.next())
    ///         consume(b.data(), b.size());   // b goes back to the ring after the loop body
    ///     // in.result(): 0 at the end of the stream, or -errno
    ///
    /// With `bundle`, one completion may fill several buffers (buf::recv_bundle, 6.10; a plain
    /// multishot recv without it). The stream must not outlive the socket; dropping it cancels
    /// the receive. One pooled node per stream, no allocation per buffer.
    [[nodiscard]] buf::RecvStream recv_stream(buf::BufferRing& ring, bool bundle = false) {
        return bundle ? buf::recv_bundle(op::FileRef(this->fd_), ring)
                      : buf::recv_multishot(op::FileRef(this->fd_), ring);
    }

    /// Fills `buf`, receiving again after short receives. The end of the stream first is
    /// net::Error::unexpected_eof (the bytes received so far are in `buf`).
    auto read_exact(void* buf, std::size_t len) {
        auto* p = static_cast<std::byte*>(buf);
        return ringo::detail::ExactAwait(
            [this, p, len](std::size_t done) { return op::recv(this->fd_, p + done, len - done, 0); }, len,
            Error::unexpected_eof, ringo::detail::FailNote<detail::what::read, detail::what::read_from>{});
    }
    /// read_exact() into `buf`.
    auto read_exact(std::span<std::byte> buf) { return read_exact(buf.data(), buf.size()); }

    /// Sends all of `buf`, sending again after short sends (MSG_NOSIGNAL). A send that moves
    /// nothing is net::Error::write_zero; a peer that has gone is EPIPE or ECONNRESET.
    /// `flags` adds send(2) flags to every send, as in write() (MSG_MORE: more follows).
    auto write_all(const void* buf, std::size_t len, int flags = 0) {
        const auto* p = static_cast<const std::byte*>(buf);
        return ringo::detail::ExactAwait(
            [this, p, len, flags](std::size_t done) {
                return op::send(this->fd_, p + done, len - done, MSG_NOSIGNAL | flags);
            },
            len, Error::write_zero, ringo::detail::FailNote<detail::what::write, detail::what::write_to>{});
    }
    /// write_all() of `buf`'s bytes.
    auto write_all(std::span<const std::byte> buf) { return write_all(buf.data(), buf.size()); }
    /// write_all() of the string's bytes (no terminating NUL). The bytes must stay valid until
    /// the await ends: a temporary std::string is fine in `co_await
    /// s.write_all(std::string(...))` (it lives to the end of that statement), not in an
    /// awaitable kept to be awaited later.
    auto write_all(std::string_view s) { return write_all(s.data(), s.size()); }

    /// shutdown(2) as IORING_OP_SHUTDOWN: SHUT_WR sends the end of stream (the peer's read
    /// yields 0) and keeps receiving; SHUT_RD, SHUT_RDWR.
    detail::ShutdownAwait shutdown(int how) noexcept { return detail::ShutdownAwait(op::FileRef(this->fd_), how); }

    /// The peer's address (getpeername; ENOTCONN once the connection is gone).
    [[nodiscard]] Result<SocketAddr> peer_addr() const noexcept { return detail::sock_name(this->fd_.get(), true); }

protected:
    StreamSocket() noexcept = default;
    /// Owns connected socket `fd` (TcpStream's and UnixStream's constructors pass it on).
    explicit StreamSocket(Fd fd) noexcept : SocketBase<Derived>(std::move(fd)) {}
};

/// A listening socket whose connections are Streams (TcpListener, UnixListener): accept,
/// incoming, and SocketBase's close, local_addr and descriptor access.
template <class Derived, class Stream>
class ListenerSocket : public SocketBase<Derived> {
public:
    /// Waits for the next connection: the stream (SOCK_CLOEXEC) and the peer's address. One
    /// IORING_OP_ACCEPT, awaited directly (no frame, no allocation). EMFILE/ENFILE when out of
    /// descriptors (the connection stays queued).
    detail::AcceptAwait<Stream> accept() noexcept { return detail::AcceptAwait<Stream>(op::FileRef(this->fd_)); }

    /// The connections as a stream, from one multishot accept that stays armed (single
    /// accepts on a kernel without it): `auto c = co_await in.next();` yields each connection
    /// as a Result<Stream> (its peer's address: the stream's peer_addr()) or an error. One
    /// allocation here, none per connection; see net::Incoming. The listener must outlive
    /// the stream.
    Incoming<Stream> incoming() { return Incoming<Stream>(op::FileRef(this->fd_)); }

protected:
    ListenerSocket() noexcept = default;
    /// Owns listening socket `fd` (TcpListener's and UnixListener's constructors pass it on).
    explicit ListenerSocket(Fd fd) noexcept : SocketBase<Derived>(std::move(fd)) {}
};

} // namespace ringo::net
