// ringo/buf/detail/buffer_stream.hpp - the buffer-ring part shared by every stream that reads
// into a BufferRing (recv, bundles, read, recvmsg), on top of op/detail/stream.hpp.
//
// Received buffers are queued through the ring's per-buffer links (a buffer is in at most one
// queue), so queueing never allocates and a queue holds at most the ring's buffers. A
// multishot the kernel ends with -ENOBUFS (the ring ran dry) or stops with data in its last
// CQE (CQ pressure) does not end the stream: it re-arms at once when the ring has buffers to
// spare, otherwise it parks on the ring until they come back (RingState::park).
#pragma once

#include <cerrno>
#include <cstdint>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/op/detail/stream.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::buf {
namespace detail {

template <class D>
struct BufferNode : op::stream_impl::StreamNode<D>, BufferWaiter {
    using Base = op::stream_impl::StreamNode<D>;
    using Item = Buffer;
    static constexpr bool cancel_ends = true; // a cancelled reader ends the stream

    RingState* ring = nullptr;
    std::int32_t head = -1; // first queued buffer id, -1: none
    std::int32_t tail = -1;
    std::uint32_t queued = 0;
    bool inc_stream = false; // counted in the incremental ring's streams

    /// Takes a node of the pool reading into `ring` (a reference on the ring's state).
    static D* acquire(Runtime& rt, RingState* ring) {
        D* n = Base::acquire(rt);
        n->ring = ring;
        ring->ref();
        n->on_buffers = &on_buffers_back;
        if (ring->inc) {
            if (ring->inc_streams > 0) {
                n->end(-EBUSY); // an incremental ring feeds one stream at a time
            } else {
                n->inc_stream = true;
                ++ring->inc_streams;
            }
        }
        return n;
    }
    /// Arms the new stream: on the ring's runtime, from a task (otherwise -ENXIO).
    void start() noexcept {
        if (this->ended)
            return; // refused already
        if (ringo::detail::t_current != this->rt) [[unlikely]]
            this->end(-ENXIO);
        else
            this->arm();
    }
    void release() noexcept {
        RingState* r = ring;
        if (inc_stream)
            --r->inc_streams;
        Base::release();
        if (r)
            r->unref();
    }

    // --- the queue
    void push(std::uint16_t bid, std::uint32_t len) noexcept {
        ring->len[bid] = len;
        if (tail >= 0)
            ring->next[tail] = bid;
        else
            head = bid;
        tail = bid;
        ++queued;
    }
    Buffer pop_buffer() noexcept {
        if (head < 0) // ended; -EAGAIN only when a second reader took what woke this one
            return Buffer(this->ended ? this->final_res : -EAGAIN);
        auto bid = static_cast<std::uint16_t>(head);
        head = --queued ? ring->next[bid] : -1;
        if (head < 0)
            tail = -1;
        return Buffer(ring, bid, ring->len[bid], ring->inc ? ring->qoff[bid] : 0);
    }
    Buffer pop() noexcept { return pop_buffer(); }
    static Buffer error_item(int e) noexcept { return Buffer(e); }
    [[nodiscard]] bool has_items() const noexcept { return queued > 0; }
    void drop_items() noexcept {
        while (head >= 0) {
            auto bid = static_cast<std::uint16_t>(head);
            head = --queued ? ring->next[bid] : -1;
            ring->release(bid);
        }
        tail = -1;
    }

    /// One CQE that consumed at most one buffer: queue it, or give it back (no data, or the
    /// stream object is gone).
    bool take(int res, std::uint32_t flags) noexcept {
        if (!op::has_buffer(flags))
            return false;
        std::uint16_t bid = op::buffer_id(flags);
        if (ring->inc)
            return take_part(bid, res, (flags & uring::compat::cqe_f_buf_more) != 0);
        ring->take(bid);
        if (res > 0 && !this->orphan) {
            push(bid, static_cast<std::uint32_t>(res));
            return true;
        }
        ring->give_back(bid);
        return false;
    }

    /// Incremental ring: the CQE filled a part of `bid`, after the parts before it. A part that
    /// follows the last queued one of the same buffer joins it (one queue entry per buffer).
    bool take_part(std::uint16_t bid, int res, bool more) noexcept {
        std::uint32_t start = ring->consume(bid, res, more);
        if (res <= 0)
            return false;
        if (this->orphan) {
            if (!more && ring->users[bid] == 0)
                ring->finish(bid);
            return false;
        }
        auto len = static_cast<std::uint32_t>(res);
        if (tail == bid && ring->qoff[bid] + ring->len[bid] == start) {
            ring->len[bid] += len;
        } else {
            ring->hold(bid);
            ring->qoff[bid] = start;
            push(bid, len);
        }
        return true;
    }

    // --- arming
    void on_stop(int res) noexcept {
        if (res == -ENOBUFS)
            ++ring->stat_enobufs;
        if (res > 0 || res == -ENOBUFS)
            rearm_or_park(); // still wanted: only the kernel's multishot stopped
        else
            this->end(res); // 0: end of stream; -errno: an error
    }
    static int cancelled_end(int res) noexcept { return res == 0 || (res < 0 && res != -ENOBUFS) ? res : -ECANCELED; }
    bool counted_rearm() noexcept {
        ++ring->stat_rearms;
        return this->rearm();
    }
    /// Re-arms now if the ring has buffers to spare (or one, when the reader waits),
    /// otherwise waits for buffers to come back.
    void rearm_or_park() noexcept {
        unsigned free = ring->free_buffers();
        if (free >= ring->rearm_threshold || (this->reader && free > 0))
            counted_rearm();
        else
            ring->park(*this);
    }
    static void on_buffers_back(BufferWaiter* w, unsigned free) noexcept {
        auto* n = static_cast<D*>(w);
        if (free >= n->ring->rearm_threshold || n->reader) {
            n->ring->unpark(*n);
            n->counted_rearm();
        }
    }
    void unpark() noexcept {
        if (this->parked)
            ring->unpark(*this);
    }
    /// The reader is about to wait: a parked stream re-arms at the first free buffer.
    bool before_wait() noexcept {
        if (this->parked && ring->free_buffers() > 0) {
            ring->unpark(*this);
            return counted_rearm();
        }
        return true;
    }
};

} // namespace detail
} // namespace ringo::buf
