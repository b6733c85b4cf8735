// ringo/buf/recvmsg_stream.hpp - multishot recvmsg (datagrams with their sender) as a stream.
//
//   buf::BufferRing ring(rt, op::BufferGroup{3}, 64, 2048);
//   auto s = buf::recvmsg_multishot(udp_fd, ring);
//   while (buf::Message m = co_await s.next())
//       reply_to(m.name(), m.name_len(), m.view());   // m.truncated(): cut to the buffer
//
// One IORING_OP_RECVMSG with IORING_RECV_MULTISHOT (6.0) stays armed; each datagram lands in
// one ring buffer, laid out as struct io_uring_recvmsg_out, the sender's address (room for a
// sockaddr_storage), the control data asked for, then the payload. next() parses that into a
// buf::Message. Queueing, the ring running dry, cancellation and dropping are as for
// buf::recv_multishot (buf/recv_stream.hpp).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/buffer_stream.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/multishot.hpp>

namespace ringo::buf {

namespace detail {
struct RecvMsgNode;
} // namespace detail

/// One datagram of a RecvMsgStream: the ring buffer it arrived in (given back when the
/// Message goes), its sender's address and its payload. An empty Message carries the end
/// of the stream instead (result(): -errno, -EBADMSG for a buffer too small for the header
/// and the address).
class Message {
public:
    Message() noexcept = default;
    /// An empty Message carrying `result` (0 or -errno).
    explicit Message(int result) noexcept : buf_(result) {}

    /// True when this holds a datagram.
    explicit operator bool() const noexcept { return static_cast<bool>(buf_); }
    /// The payload's size for a datagram; 0 or -errno for an empty Message.
    [[nodiscard]] int result() const noexcept { return buf_ ? static_cast<int>(payload_len_) : buf_.result(); }
    /// The sender's address (nullptr when the socket gave none) and its length (at most
    /// sizeof(sockaddr_storage)).
    [[nodiscard]] const sockaddr* name() const noexcept { return name_len_ ? name_ : nullptr; }
    /// The sender address's length (0 when there is none).
    [[nodiscard]] socklen_t name_len() const noexcept { return name_len_; }
    /// The payload (what fitted in the buffer).
    [[nodiscard]] std::span<std::byte> payload() const noexcept { return {payload_, payload_len_}; }
    /// The payload as a string_view (no terminating NUL).
    [[nodiscard]] std::string_view view() const noexcept {
        return {reinterpret_cast<const char*>(payload_), payload_len_};
    }
    /// The payload's size in bytes.
    [[nodiscard]] std::size_t size() const noexcept { return payload_len_; }
    /// The control data (ancillary messages) when the stream asked for room for it.
    [[nodiscard]] std::span<std::byte> control() const noexcept { return {control_, control_len_}; }
    /// The datagram's MSG_* flags (MSG_TRUNC: it was longer than the buffer; MSG_CTRUNC).
    [[nodiscard]] unsigned flags() const noexcept { return flags_; }
    /// True when the datagram was longer than the buffer (MSG_TRUNC): the payload is cut.
    [[nodiscard]] bool truncated() const noexcept { return (flags_ & MSG_TRUNC) != 0; }
    /// The ring buffer holding it all.
    [[nodiscard]] const Buffer& buffer() const noexcept { return buf_; }
    /// Gives the buffer back now; the Message becomes empty.
    void reset() noexcept { buf_.reset(); }

private:
    friend struct detail::RecvMsgNode;
    Buffer buf_;
    const sockaddr* name_ = nullptr;
    std::byte* payload_ = nullptr;
    std::byte* control_ = nullptr;
    std::uint32_t payload_len_ = 0;
    std::uint32_t control_len_ = 0;
    socklen_t name_len_ = 0;
    unsigned flags_ = 0;
};

class RecvMsgStream;
[[nodiscard]] inline RecvMsgStream recvmsg_multishot(op::FileRef fd, BufferRing& ring, unsigned control_len = 0,
                                                     int flags = 0);

namespace detail {

struct RecvMsgNode : BufferNode<RecvMsgNode> {
    using Item = Message;
    RecvMsgNode* pool_next = nullptr;
    op::FileRef fd{-1};
    int msg_flags = 0;
    msghdr msg{}; // only msg_namelen and msg_controllen count: the layout of each buffer

    void prep(io_uring_sqe* s) noexcept {
        op::raw::prep_recvmsg_multishot(s, fd, &msg, op::BufferGroup{ring->bgid}, static_cast<unsigned>(msg_flags));
    }
    static Message error_item(int e) noexcept { return Message(e); }
    Message pop() noexcept {
        Buffer b = pop_buffer();
        if (!b)
            return Message(b.result());
        auto* out = io_uring_recvmsg_validate(b.data(), static_cast<int>(b.size()), &msg);
        if (!out) [[unlikely]]
            return Message(-EBADMSG);
        Message m;
        m.name_ = static_cast<const sockaddr*>(io_uring_recvmsg_name(out));
        m.name_len_ = out->namelen < msg.msg_namelen ? out->namelen : msg.msg_namelen;
        m.control_ = static_cast<std::byte*>(static_cast<void*>(io_uring_recvmsg_cmsg_firsthdr(out, &msg)));
        m.control_len_ = m.control_
                             ? (out->controllen < msg.msg_controllen ? out->controllen
                                                                     : static_cast<std::uint32_t>(msg.msg_controllen))
                             : 0;
        m.payload_ = static_cast<std::byte*>(io_uring_recvmsg_payload(out, &msg));
        m.payload_len_ = io_uring_recvmsg_payload_length(out, static_cast<int>(b.size()), &msg);
        m.flags_ = out->flags;
        m.buf_ = std::move(b);
        return m;
    }
};

} // namespace detail

/// A multishot recvmsg into a BufferRing (buf::recvmsg_multishot), yielding buf::Message;
/// otherwise the API of buf::RecvStream.
class RecvMsgStream : public BufferStream<detail::RecvMsgNode> {
public:
    RecvMsgStream() noexcept = default;

private:
    friend RecvMsgStream recvmsg_multishot(op::FileRef, BufferRing&, unsigned, int);
    explicit RecvMsgStream(detail::RecvMsgNode* n) noexcept : BufferStream(n) {}
};

/// Receives datagrams on socket `fd` (UDP, Unix datagram; plain or Fixed) into the buffers of
/// `ring`, one datagram per buffer, with the sender's address: IORING_OP_RECVMSG with
/// IORING_RECV_MULTISHOT (6.0). `co_await s.next()` yields each as a buf::Message, then an
/// empty Message whose result() is the end (-errno: -ECANCELED, -EBADF, -ENOTSOCK ...).
/// Each buffer holds the kernel's header (16 bytes), sizeof(sockaddr_storage) for the
/// address, `control_len` bytes of control data, then the payload: a datagram longer than
/// what remains is cut (Message::truncated()). Armed here; must be called on the ring's
/// runtime, from a task (otherwise -ENXIO at once). -EINVAL at once for a ring whose buffers
/// cannot hold the header, the address and the control data, or an incremental ring. Costs
/// one SQE now, one CQE per datagram, no allocation after the first stream of a thread.
inline RecvMsgStream recvmsg_multishot(op::FileRef fd, BufferRing& ring, unsigned control_len, int flags) {
    detail::RecvMsgNode* n = detail::RecvMsgNode::acquire(ring.runtime(), ring.state());
    n->fd = fd;
    n->msg_flags = flags;
    n->msg.msg_namelen = sizeof(sockaddr_storage);
    n->msg.msg_controllen = control_len;
    RecvMsgStream s(n);
    if (sizeof(io_uring_recvmsg_out) + sizeof(sockaddr_storage) + control_len > ring.buffer_size())
        n->end(-EINVAL); // no room for the payload
    else if (ring.incremental())
        n->end(-EINVAL); // a datagram per buffer: the parts of an incremental ring would join
    n->start();
    return s;
}

} // namespace ringo::buf
