// ringo/net/detail/incoming.hpp - a listener's connections as a stream: one multishot accept
// (IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT, 5.19) that stays armed, consumed with
// `co_await in.next()`; single accepts on kernels without it. Built on the one mechanism of
// every multishot stream (op/detail/stream.hpp).
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

/// A listener's connections as a stream (TcpListener::incoming, UnixListener::incoming):
///
///     auto in = listener.incoming();
///     for (;;) {
///         ringo::Result<ringo::net::TcpStream> c = co_await in.next();
///         if (!c)
///             break;  // or: sleep and go on after EMFILE, see below
///         ringo::spawn(serve(std::move(*c))).detach();
///     }
///
/// One IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT (Linux 5.19) stays armed and posts one
/// CQE per connection; the stream queues them (in the order the kernel accepted them) until
/// next() takes them. The multishot is armed at the first next(). Costs: the stream's state
/// comes from a per-thread pool (the first stream of a thread allocates it); next() is
/// awaited directly (no frame) and allocates nothing, unless more than 16 connections wait
/// at once (the queue doubles, once per stream). With 64 queued the
/// multishot pauses (ASYNC_CANCEL: later connections wait in the kernel's backlog) and goes on
/// once the reader has taken all but 16. Multishot accept gives no peer address: take it with
/// the stream's peer_addr() (getpeername).
///
/// Errors: an error the kernel ends the multishot with comes out of next() once, in order
/// (EMFILE/ENFILE: out of descriptors, ENOMEM, ECONNABORTED ...); the next next() arms the
/// multishot again, so a server can wait a little and go on. EBADF, EINVAL (the socket is
/// not listening), ENOTSOCK end the stream: every next() yields that error from then on.
///
/// Cancelling the task that waits in next() makes next() yield ECANCELED and leaves the
/// multishot armed (the stream can be awaited again). Destroying the stream while armed
/// cancels the multishot (ASYNC_CANCEL) and closes every connection accepted and not yet
/// taken, also those the kernel still posts before the cancellation ends it; nothing leaks.
/// cancel() stops it for good: what was queued still comes out, then ECANCELED.
///
/// On a kernel without multishot accept (the runtime's probe lacks IORING_OP_SOCKET, from
/// the same release) each next() that waits arms one IORING_OP_ACCEPT: the same results
/// (a connection accepted for a cancelled reader waits for the next next()). multishot()
/// tells which.
///
/// Owner thread of the runtime it was made on (incoming() called elsewhere: next() yields
/// ENXIO); one reader at a time (EBUSY for a second). The listener must outlive the stream; close the listener only
/// after the stream is gone or cancel()led (the multishot holds a reference to the socket until it ends).
template <class Stream>
class Incoming : public op::stream_impl::Stream<detail::AcceptNode<Stream>> {
    using Node = detail::AcceptNode<Stream>;
    using Base = op::stream_impl::Stream<Node>;

public:
    Incoming() noexcept = default;
    /// The connections of listening socket `listener` (armed at the first next()), for the
    /// runtime of the calling thread.
    explicit Incoming(op::FileRef listener) : Base(Node::make(Runtime::current(), listener)) {}

    // next(): Result<Stream>, the next connection (SOCK_CLOEXEC) or an error (see the class).
    // EBADF for an empty (moved-from) stream, EBUSY when another coroutine already waits in
    // next(), ENXIO outside the stream's runtime, ECANCELED in a cancelled task.
    // cancel(): stops accepting; what was queued still comes out, then ECANCELED.
    // armed(), done(): while the accept is in the kernel; ended and nothing left to take.

    /// False on a kernel without multishot accept (single accepts instead).
    [[nodiscard]] bool multishot() const noexcept { return this->n_ && !this->n_->single; }
    /// Times the multishot was armed (1 + re-arms after an error, a pause or a CQ overflow).
    [[nodiscard]] std::uint64_t arms() const noexcept { return this->n_ ? this->n_->arms : 0; }
    /// Connections (and errors) accepted and not yet taken by next().
    [[nodiscard]] unsigned queued() const noexcept { return this->n_ ? this->n_->count : 0; }
};

} // namespace ringo::net
