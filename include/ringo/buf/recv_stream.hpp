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
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <utility>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/core/detail/node_pool.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/multishot.hpp>
#include <ringo/op/raw.hpp>

namespace ringo::buf {

class RecvStream;
[[nodiscard]] inline RecvStream recv_multishot(op::FileRef fd, BufferRing& ring, int flags = 0);

namespace detail {

/// The state of one stream. It lives in a per-thread pool rather than in the stream object:
/// a stream dropped while its multishot is in flight submits ASYNC_CANCEL and goes away at
/// once, and this node stays (user_data of the operation) until the final CQE arrives.
/// Nodes are recycled; after the first stream on a thread, creating one allocates nothing.
struct RecvNode : ringo::detail::Completion, BufferWaiter {
    RingState* ring = nullptr;
    Runtime* rt = nullptr;
    op::FileRef fd{-1};
    int msg_flags = 0;
    std::int32_t head = -1; // first queued buffer id, -1: none
    std::int32_t tail = -1;
    std::uint32_t queued = 0;
    std::coroutine_handle<> reader{}; // the coroutine waiting in next()
    int final_res = 0;
    bool armed = false;       // the multishot is in the kernel (counted in ops_in_flight)
    bool cancel_sent = false; // ASYNC_CANCEL submitted for it
    bool ended = false;       // no more data will be queued; final_res is the end
    bool orphan = false;      // the stream object is gone: free the node at the final CQE
    std::uint64_t rearms = 0;
    RecvNode* free_next = nullptr;

    // --- the pool
    static RecvNode* acquire() {
        RecvNode* n = ringo::detail::ThreadNodePool<RecvNode, &RecvNode::free_next>::acquire();
        n->fn = &on_cqe;
        n->on_buffers = &on_buffers_back;
        return n;
    }
    /// Drops the node's hold on the ring and puts it back in the pool.
    void release() noexcept {
        RingState* r = ring;
        ringo::detail::ThreadNodePool<RecvNode, &RecvNode::free_next>::recycle(this);
        if (r)
            r->unref();
    }

    // --- the queue of received buffers
    void push(std::uint16_t bid, std::uint32_t len) noexcept {
        ring->len[bid] = len;
        if (tail >= 0)
            ring->next[tail] = bid;
        else
            head = bid;
        tail = bid;
        ++queued;
    }
    Buffer pop() noexcept {
        if (head < 0) // ended; -EAGAIN only when a second reader took what woke this one
            return Buffer(ended ? final_res : -EAGAIN);
        auto bid = static_cast<std::uint16_t>(head);
        head = --queued ? ring->next[bid] : -1;
        if (head < 0)
            tail = -1;
        return Buffer(ring, bid, ring->len[bid]);
    }
    void drop_queue() noexcept {
        while (head >= 0) {
            auto bid = static_cast<std::uint16_t>(head);
            head = --queued ? ring->next[bid] : -1;
            ring->give_back(bid);
        }
        tail = -1;
    }

    void wake_reader() noexcept {
        if (reader)
            rt->schedule(std::exchange(reader, {}));
    }
    void end(int res) noexcept {
        ended = true;
        final_res = res;
        wake_reader();
    }

    // --- arming
    /// Queues the multishot recv: true when it is armed, false when the stream ended.
    bool arm() noexcept {
        if (rt->shutting_down()) {
            end(-ECANCELED);
            return false;
        }
        int r;
        try {
            r = op::raw::queue(*rt, *this, [this](io_uring_sqe* s) {
                op::raw::prep_recv_multishot(s, fd, op::BufferGroup{ring->bgid}, msg_flags);
            });
        } catch (...) {
            r = -EIO; // the ring could not take an SQE (it failed)
        }
        if (r < 0) {
            end(r);
            return false;
        }
        armed = true;
        return true;
    }
    /// After the multishot stopped with the stream still wanted: re-arm now if the ring has
    /// buffers to spare (or one, when the reader waits), otherwise wait for buffers.
    void rearm_or_park() noexcept {
        unsigned free = ring->free_buffers();
        if (free >= ring->rearm_threshold || (reader && free > 0)) {
            ++rearms;
            ++ring->stat_rearms;
            arm();
        } else {
            ring->park(*this);
        }
    }
    static void on_buffers_back(BufferWaiter* w, unsigned free) noexcept {
        auto* n = static_cast<RecvNode*>(w);
        if (free >= n->ring->rearm_threshold || n->reader) {
            n->ring->unpark(*n);
            ++n->rearms;
            ++n->ring->stat_rearms;
            n->arm();
        }
    }

    /// Ends the stream: ASYNC_CANCEL for an armed multishot (its final CQE ends the stream),
    /// at once for a parked one. Queued buffers stay readable.
    void cancel() noexcept {
        if (ended)
            return;
        if (armed) {
            if (!cancel_sent) {
                cancel_sent = true;
                rt->cancel_op(reinterpret_cast<const void*>(op::raw::completion_user_data(*this)));
            }
            return;
        }
        ring->unpark(*this);
        end(-ECANCELED);
    }

    static void on_cqe(ringo::detail::Completion* c, int res, std::uint32_t flags) {
        auto* n = static_cast<RecvNode*>(c);
        RingState* ring = n->ring;
        bool data = false;
        if (op::has_buffer(flags)) {
            std::uint16_t bid = op::buffer_id(flags);
            ring->take(bid);
            if (res > 0 && !n->orphan) {
                n->push(bid, static_cast<std::uint32_t>(res));
                data = true;
            } else {
                ring->give_back(bid);
            }
        }
        if (op::has_more(flags)) {
            if (data)
                n->wake_reader();
            return;
        }
        // The final CQE: the multishot is over.
        n->armed = false;
        n->rt->op_finished();
        if (n->orphan) {
            n->release();
            return;
        }
        if (res == -ENOBUFS)
            ++ring->stat_enobufs;
        if (n->cancel_sent)
            n->end(res == 0 || (res < 0 && res != -ENOBUFS) ? res : -ECANCELED);
        else if (res > 0 || res == -ENOBUFS)
            n->rearm_or_park(); // still wanted: only the kernel's multishot stopped
        else
            n->end(res); // 0: the peer closed; -errno: an error
        if (data)
            n->wake_reader();
    }
};

} // namespace detail

/// A multishot recv into a BufferRing, consumed with `co_await next()`. Made by
/// buf::recv_multishot(fd, ring); move-only; owner thread of the ring's runtime only.
///
/// Destroying the stream (or dropping it mid-way) cancels its multishot with ASYNC_CANCEL;
/// the state the kernel refers to stays alive until the operation's final CQE, and the
/// buffers it still fills go straight back to the ring. The ring stays registered until
/// then, even if its BufferRing object is destroyed first.
class RecvStream {
public:
    RecvStream() noexcept = default;
    RecvStream(RecvStream&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
    RecvStream& operator=(RecvStream&& o) noexcept {
        if (this != &o) {
            close();
            n_ = std::exchange(o.n_, nullptr);
        }
        return *this;
    }
    RecvStream(const RecvStream&) = delete;
    RecvStream& operator=(const RecvStream&) = delete;
    ~RecvStream() { close(); }

    /// Awaitable: the next received Buffer (data in arrival order), or, once the stream has
    /// ended and every queued buffer was taken, an empty Buffer whose result() is the end:
    /// 0 when the peer closed, -ECANCELED after cancel() or a cancellation of the awaiting
    /// task, -errno for an error (-EBADF: a bad descriptor, -ENOTSOCK, -ECONNRESET ...).
    /// Also an empty Buffer with -EBADF for an empty (moved-from) stream, -EBUSY when
    /// another coroutine already waits in next(), -ENXIO when awaited outside the ring's
    /// runtime.
    ///
    /// Cancelling the awaiting task (JoinHandle::cancel, when_any, with_timeout, a scope)
    /// cancels the multishot and resumes the task at its final CQE, after which the stream
    /// is ended. Data that arrived before yields first.
    class NextAwaiter : public ringo::detail::Waitable {
    public:
        explicit NextAwaiter(detail::RecvNode* n) noexcept : n_(n) { cancel_fn = &on_cancel; }
        bool await_ready() const noexcept { return !n_ || n_->queued || n_->ended; }
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) noexcept {
            if (ringo::detail::t_current != n_->rt) [[unlikely]] {
                refused_ = -ENXIO;
                return false;
            }
            if (n_->reader) [[unlikely]] {
                refused_ = -EBUSY;
                return false;
            }
            ringo::detail::CancelCtx* ctx = ringo::detail::ctx_of_or_dummy(h);
            if (ctx->cancelled) [[unlikely]] {
                n_->cancel();
                if (n_->ended)
                    return false;
            } else if (n_->parked && n_->ring->free_buffers() > 0) {
                // The reader waits and a buffer is free: do not wait for the threshold.
                n_->ring->unpark(*n_);
                ++n_->rearms;
                ++n_->ring->stat_rearms;
                if (!n_->arm())
                    return false;
            }
            n_->reader = h;
            ctx_ = ctx;
            ctx->waiting = this;
            return true;
        }
        Buffer await_resume() noexcept {
            if (ctx_)
                ctx_->waiting = nullptr;
            if (refused_) [[unlikely]]
                return Buffer(refused_);
            if (!n_)
                return Buffer(-EBADF);
            return n_->pop();
        }

    private:
        static void on_cancel(ringo::detail::Waitable* w) noexcept { static_cast<NextAwaiter*>(w)->n_->cancel(); }
        detail::RecvNode* n_;
        ringo::detail::CancelCtx* ctx_ = nullptr;
        int refused_ = 0;
    };
    [[nodiscard]] NextAwaiter next() noexcept { return NextAwaiter{n_}; }

    /// Stops receiving: the multishot is cancelled (ASYNC_CANCEL); next() still yields what
    /// was already received, then ends with -ECANCELED. No effect on an ended stream.
    void cancel() noexcept {
        if (n_)
            n_->cancel();
    }
    /// True once the stream has ended and nothing is left to take.
    [[nodiscard]] bool done() const noexcept { return !n_ || (n_->ended && !n_->queued); }
    /// The end of the stream once it has ended (0 or -errno), 0 before.
    [[nodiscard]] int result() const noexcept { return n_ ? n_->final_res : -EBADF; }
    /// Buffers received and not yet taken by next().
    [[nodiscard]] unsigned queued() const noexcept { return n_ ? n_->queued : 0; }
    /// True while the multishot recv is in the kernel (false while parked for buffers).
    [[nodiscard]] bool armed() const noexcept { return n_ && n_->armed; }
    /// True while the stream waits for buffers to come back to re-arm.
    [[nodiscard]] bool parked() const noexcept { return n_ && n_->parked; }
    /// Times the multishot was re-armed (after -ENOBUFS, or a stop with data).
    [[nodiscard]] std::uint64_t rearms() const noexcept { return n_ ? n_->rearms : 0; }

private:
    friend RecvStream recv_multishot(op::FileRef, BufferRing&, int);
    explicit RecvStream(detail::RecvNode* n) noexcept : n_(n) {}

    void close() noexcept {
        detail::RecvNode* n = std::exchange(n_, nullptr);
        if (!n)
            return;
        n->orphan = true;
        n->reader = {}; // a coroutine still suspended in next() is being destroyed with us
        if (n->parked)
            n->ring->unpark(*n);
        n->drop_queue();
        if (n->armed) {
            n->cancel(); // the node goes at the final CQE
            return;
        }
        n->release();
    }

    detail::RecvNode* n_ = nullptr;
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
    detail::RecvNode* n = detail::RecvNode::acquire();
    n->ring = ring.state();
    n->ring->ref();
    n->rt = &ring.runtime();
    n->fd = fd;
    n->msg_flags = flags;
    RecvStream s(n);
    if (ringo::detail::t_current != n->rt) [[unlikely]]
        n->end(-ENXIO);
    else
        n->arm();
    return s;
}

} // namespace ringo::buf
