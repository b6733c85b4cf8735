// ringo/buf/recv_stream.hpp - multishot recv as a stream of received buffers.
//
//   buf::BufferRing ring(rt, op::BufferGroup{1}, 64, 4096);
//   auto s = buf::recv_multishot(fd, ring);
//   while (buf::Buffer b = co_await s.next())
//       consume(b.data(), b.size());          // b goes back to the ring at the end of the loop body
//   // s.result(): 0 (the peer closed), or -errno (-ECANCELED, -EBADF, -ECONNRESET ...)
//
// One IORING_OP_RECV with IORING_RECV_MULTISHOT (6.0) stays armed and posts one CQE per
// received chunk, each in a buffer the kernel picked from the ring. The stream queues what
// arrives until next() takes it: the queue is linked through the ring's per-buffer slots,
// so it is bounded by the ring's size and costs no allocation.
//
// The kernel ends the multishot with -ENOBUFS when the ring runs dry (the reader holds or
// has not yet taken every buffer); the unread bytes stay in the socket. The stream does not
// end then: it parks, and re-arms once buffers come back (BufferRing::set_rearm_threshold of
// them, or one as soon as its reader waits in next()). A multishot that stops for another
// reason while data flows (its last CQE carries data: CQ pressure) re-arms as well.
//
// buf::recv_bundle adds IORING_RECVSEND_BUNDLE (6.10): one CQE may fill several buffers,
// which next() still yields one at a time. The machinery (a pooled node that outlives the
// stream object until the final CQE) is op/detail/stream.hpp and buf/detail/buffer_stream.hpp,
// shared with the read, recvmsg, poll and interval streams.
#pragma once

#include <cerrno>
#include <cstdint>
#include <utility>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/buffer_stream.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/multishot.hpp>

namespace ringo::buf {

class RecvStream;
[[nodiscard]] inline RecvStream recv_multishot(op::FileRef fd, BufferRing& ring, int flags = 0);
[[nodiscard]] inline RecvStream recv_bundle(op::FileRef fd, BufferRing& ring, int flags = 0);

namespace detail {

/// Test hook: when true on a thread, recv_bundle streams made there do not use bundles (as
/// on a kernel without IORING_FEAT_RECVSEND_BUNDLE).
inline thread_local bool bundle_force_fallback = false;

/// The state of one recv stream (op/detail/stream.hpp: pooled, outlives the stream object
/// until the operation's final CQE).
struct RecvNode : BufferNode<RecvNode> {
    RecvNode* pool_next = nullptr;
    op::FileRef fd{-1};
    int msg_flags = 0;
    bool bundle = false; // IORING_RECVSEND_BUNDLE: one CQE may fill several buffers

    void prep(io_uring_sqe* s) noexcept {
        op::raw::prep_recv_multishot(s, fd, op::BufferGroup{ring->bgid}, msg_flags);
        if (bundle)
            s->ioprio |= uring::compat::recvsend::bundle;
    }
    /// A CQE of a bundle names its first buffer; the others are the ring entries that follow
    /// it, each filled whole but the last.
    bool take(int res, std::uint32_t flags) noexcept {
        if (!bundle || res <= 0 || !op::has_buffer(flags))
            return BufferNode::take(res, flags);
        std::uint16_t bid = op::buffer_id(flags);
        std::uint32_t left = static_cast<std::uint32_t>(res);
        std::uint16_t pos = ring->slot[bid];
        for (;;) {
            std::uint32_t len = left < ring->buf_size ? left : ring->buf_size;
            ring->take(bid);
            if (orphan)
                ring->give_back(bid);
            else
                push(bid, len);
            left -= len;
            if (left == 0)
                break;
            ++pos;
            bid = ring->bid_at(pos);
        }
        return !orphan;
    }
};

} // namespace detail

/// A multishot recv into a BufferRing, consumed with `co_await next()`. Made by
/// buf::recv_multishot(fd, ring) or buf::recv_bundle(fd, ring); move-only; owner thread of
/// the ring's runtime only.
///
/// next() yields the next received Buffer (data in arrival order), or, once the stream has
/// ended and every queued buffer was taken, an empty Buffer whose result() is the end: 0 when
/// the peer closed, -ECANCELED after cancel() or a cancellation of the awaiting task, -errno
/// for an error (-EBADF: a bad descriptor, -ENOTSOCK, -ECONNRESET ...). Also an empty Buffer
/// with -EBADF for an empty (moved-from) stream, -EBUSY when another coroutine already waits
/// in next(), -ENXIO when awaited outside the ring's runtime.
///
/// Cancelling the awaiting task (JoinHandle::cancel, when_any, with_timeout, a scope) cancels
/// the multishot and resumes the task at its final CQE, after which the stream is ended. Data
/// that arrived before yields first.
///
/// Destroying the stream (or dropping it mid-way) cancels its multishot with ASYNC_CANCEL;
/// the state the kernel refers to stays alive until the operation's final CQE, and the
/// buffers it still fills go straight back to the ring. The ring stays registered until
/// then, even if its BufferRing object is destroyed first.
class RecvStream : public BufferStream<detail::RecvNode> {
public:
    RecvStream() noexcept = default;
    /// True when the stream receives bundles (recv_bundle on a kernel that has them).
    [[nodiscard]] bool bundles() const noexcept { return n_ && n_->bundle; }

private:
    friend RecvStream recv_multishot(op::FileRef, BufferRing&, int);
    friend RecvStream recv_bundle(op::FileRef, BufferRing&, int);
    explicit RecvStream(detail::RecvNode* n) noexcept : BufferStream(n) {}
    static RecvStream start(op::FileRef fd, BufferRing& ring, int flags, bool bundle) {
        detail::RecvNode* n = detail::RecvNode::acquire(ring.runtime(), ring.state());
        n->fd = fd;
        n->msg_flags = flags;
        n->bundle = bundle && !detail::bundle_force_fallback && !n->ring->inc &&
                    (ring.runtime().features() & uring::compat::feat::recvsend_bundle) != 0;
        RecvStream s(n);
        n->start();
        return s;
    }
};

/// A multishot recv (IORING_OP_RECV + IORING_RECV_MULTISHOT, 6.0) on socket `fd` (plain or
/// Fixed) into the buffers of `ring`, as a stream: `co_await s.next()` yields each received
/// chunk as a Buffer (given back to the ring when dropped), then an empty Buffer whose
/// result() is the end (0: peer closed, -errno). The operation is armed here; its SQE goes
/// to the kernel with the runtime's next submission. A ring that runs dry parks the stream
/// until buffers come back (it does not end). Must be called on the ring's runtime, from a
/// task (otherwise the stream is ended at once with -ENXIO). Allocates only for the first
/// stream of a thread (the node pool). The raw operation without a stream is
/// op::raw::prep_recv_multishot (op/multishot.hpp).
inline RecvStream recv_multishot(op::FileRef fd, BufferRing& ring, int flags) {
    return RecvStream::start(fd, ring, flags, false);
}

/// recv_multishot with IORING_RECVSEND_BUNDLE (6.10): each CQE may fill several consecutive
/// buffers of the ring with what the socket holds, so a burst costs one CQE instead of one
/// per buffer. next() still yields one Buffer at a time, in order (each full but the last of
/// a bundle), and each goes back to the ring on its own. On a kernel without bundles
/// (IORING_FEAT_RECVSEND_BUNDLE, detected at run time) this is recv_multishot; bundles()
/// tells which.
inline RecvStream recv_bundle(op::FileRef fd, BufferRing& ring, int flags) {
    return RecvStream::start(fd, ring, flags, true);
}

} // namespace ringo::buf
