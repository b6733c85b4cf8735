// ringo/net/detail/incoming.hpp - the state behind net::Incoming (net/incoming.hpp): one
// multishot accept (IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT, 5.19) that stays armed, or
// single accepts on kernels without it, on the one mechanism of every multishot stream
// (op/detail/stream.hpp).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <new>
#include <utility>

#include <ringo/core/detail/node_pool.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/detail/stream.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/multishot.hpp>
#include <ringo/op/raw.hpp>

namespace ringo::net {
namespace detail {

/// The state of one incoming() stream (op::stream_impl::StreamNode: from a per-thread pool,
/// it outlives the stream object until the operation's final CQE, closing what still
/// arrives then).
///
/// What the kernel posts is queued in order: descriptors (>= 0) and the errors (-errno) that
/// ended the multishot but not the stream (EMFILE, ENFILE, ENOMEM, ECONNABORTED ...): next()
/// yields such an error once and the next wait arms the multishot again. EBADF, EINVAL (not
/// listening), ENOTSOCK, EOPNOTSUPP, ENXIO and a cancellation end the stream. With
/// `pause_at` queued the multishot is cancelled (a pause: the stream goes on, and later
/// connections wait in the kernel's backlog) and armed again once the reader got down to
/// `resume_at`. On a kernel without multishot accept (`single`) each wait arms one plain
/// accept.
template <class Stream>
struct AcceptNode : op::stream_impl::StreamNode<AcceptNode<Stream>> {
    using Base = op::stream_impl::StreamNode<AcceptNode<Stream>>;
    using Item = Result<Stream>;
    static constexpr bool cancel_ends = false; // a cancelled next() leaves the accept armed
    static constexpr unsigned pause_at = 64;
    static constexpr unsigned resume_at = 16;

    AcceptNode* pool_next = nullptr;
    op::FileRef fd{-1}; // the listener
    int small[16];      // the queue's first places, in the node itself
    int* big = nullptr; // a larger queue once more than 16 waited at once
    unsigned cap = 16, head = 0, count = 0;
    bool single = false;  // no multishot accept here: one IORING_OP_ACCEPT per wait
    bool pausing = false; // ASYNC_CANCEL submitted for a pause
    bool paused = false;  // stopped by a pause: armed again when the reader catches up
    std::uint64_t arms = 0;

    /// A node for listener `fd` on runtime `rt` (null outside one: next() yields ENXIO).
    /// IORING_ACCEPT_MULTISHOT came with Linux 5.19, as IORING_OP_SOCKET did: the probe's
    /// answer for that opcode stands for it.
    static AcceptNode* make(Runtime* rt, op::FileRef fd) {
        AcceptNode* n = ringo::detail::ThreadNodePool<AcceptNode, &AcceptNode::pool_next>::acquire();
        n->fn = &Base::on_cqe;
        n->rt = rt;
        n->fd = fd;
        n->single = rt && !rt->supports(uring::compat::opcode::socket);
        return n;
    }
    void release() noexcept {
        delete[] std::exchange(big, nullptr);
        Base::release();
    }

    static bool ends_stream(int res) noexcept {
        return res == -EBADF || res == -EINVAL || res == -ENOTSOCK || res == -EOPNOTSUPP || res == -ENXIO ||
               res == -ECANCELED;
    }

    // --- the queue
    int* buf() noexcept { return big ? big : small; }
    void push(int res) noexcept {
        if (count == cap) {
            int* bigger = new (std::nothrow) int[cap * 2];
            if (!bigger) { // no memory for the queue: the connection is closed (or the error dropped)
                if (res >= 0)
                    close_soon(res);
                return;
            }
            for (unsigned i = 0; i < count; ++i)
                bigger[i] = buf()[(head + i) % cap];
            delete[] big;
            big = bigger;
            cap *= 2;
            head = 0;
        }
        buf()[(head + count) % cap] = res;
        ++count;
    }
    int pop_raw() noexcept {
        int r = buf()[head];
        head = (head + 1) % cap;
        --count;
        return r;
    }

    // --- arming
    bool start() noexcept {
        paused = false;
        if (!single)
            ++arms;
        return this->arm();
    }
    void maybe_resume() noexcept {
        if (paused && !this->armed && !this->ended && count <= resume_at)
            start();
    }

    // --- what StreamNode asks of a node
    void prep(io_uring_sqe* s) noexcept {
        if (single) {
            io_uring_prep_accept(s, fd.raw(), nullptr, nullptr, SOCK_CLOEXEC);
            fd.apply(s);
        } else {
            op::raw::prep_accept_multishot(s, fd, nullptr, nullptr, SOCK_CLOEXEC);
        }
    }
    bool take(int res, std::uint32_t flags) noexcept {
        if (this->orphan) {
            if (res >= 0)
                close_soon(res);
            return false;
        }
        if (res < 0)
            return false; // an error ends the arming: on_stop
        push(res);
        if (op::has_more(flags) && count >= pause_at && !pausing && !this->cancel_sent) {
            pausing = true;
            ringo::detail::RuntimeAccess::engine(*this->rt).cancel_op(op::raw::completion_user_data(*this));
        }
        return true;
    }
    void on_stop(int res) noexcept {
        bool was_pausing = std::exchange(pausing, false);
        if (res >= 0 || (was_pausing && res == -ECANCELED)) { // a connection was queued by take()
            if (was_pausing) {
                paused = true;
                maybe_resume(); // the reader may have caught up meanwhile
            } else if (!single) {
                start(); // the kernel stopped it with a connection (CQ overflow): go on
            }
            return;
        }
        if (ends_stream(res)) {
            this->end(res);
            return;
        }
        push(res); // EMFILE ...: yielded in order; the next wait arms it again
        this->wake_reader();
    }
    static int cancelled_end(int) noexcept { return -ECANCELED; }
    [[nodiscard]] bool has_items() const noexcept { return count != 0; }
    Item pop() noexcept {
        if (!count)
            return errno_code(this->ended ? this->final_res : -EAGAIN);
        int r = pop_raw();
        maybe_resume();
        if (r < 0)
            return errno_code(r);
        return Stream(Fd(r));
    }
    static Item error_item(int e) noexcept { return errno_code(e); }
    void drop_items() noexcept {
        while (count) {
            int r = pop_raw();
            if (r >= 0)
                close_soon(r);
        }
    }
    /// The reader is about to wait with nothing queued: arm (the first wait, after an error,
    /// a pause, or each time for single accepts) unless armed.
    bool before_wait() noexcept { return this->armed || start(); }
};

} // namespace detail
} // namespace ringo::net
