// ringo/net/detail/incoming.hpp - a listener's connections as a stream: one multishot accept
// (IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT, 5.19) that stays armed, consumed with
// `co_await in.next()`; single accepts on kernels without it.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/multishot.hpp>
#include <ringo/op/raw.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net {
namespace detail {

/// The state of one incoming() stream. It lives on the heap (one allocation per incoming()
/// call; none per connection while at most 16 wait at once) rather than in the stream object: a stream dropped while
/// its multishot is in flight submits ASYNC_CANCEL and goes, and this node stays (user_data of the operation) until the
/// final CQE, closing what still arrives. Owner thread only.
///
/// What the kernel posts is queued in order: descriptors (>= 0) and errors (-errno) that
/// ended the multishot but not the stream (EMFILE, ENFILE, ENOMEM, ECONNABORTED ...): next()
/// yields such an error once and re-arms at the next call. EBADF, EINVAL (not listening),
/// ENOTSOCK, EOPNOTSUPP, ENXIO and a cancellation end the stream.
struct AcceptNode : ringo::detail::Completion {
    static constexpr unsigned pause_at = 64;  // queued connections that pause the multishot
    static constexpr unsigned resume_at = 16; // ... and that re-arm it once the reader got here

    Runtime* rt = nullptr; // set at the first next()
    op::FileRef fd{-1};    // the listener
    int small[16];         // the queue's first places, in the node itself
    int* q = small;        // FIFO ring of queued results: `small`, or a larger array
    unsigned cap = 16, head = 0, count = 0;
    std::coroutine_handle<> reader{}; // the coroutine waiting in next()
    int end_res = 0;                  // what ended the stream
    bool single = false;              // no multishot accept here: one IORING_OP_ACCEPT per next()
    bool armed = false;               // the multishot is in the kernel (counted in flight)
    bool cancel_sent = false;         // ASYNC_CANCEL submitted for it
    bool paused = false;              // cancelled by us: too many connections queued
    bool stopped = false;             // cancel() was called: never re-arm
    bool ended = false;
    bool orphan = false; // the stream object is gone: free the node at the final CQE
    std::uint64_t arms = 0;

    explicit AcceptNode(op::FileRef listener) noexcept : fd(listener) { fn = &on_cqe; }
    AcceptNode(const AcceptNode&) = delete;
    AcceptNode& operator=(const AcceptNode&) = delete;
    ~AcceptNode() {
        close_queued();
        if (q != small)
            delete[] q;
    }

    static bool ends_stream(int res) noexcept {
        return res == -EBADF || res == -EINVAL || res == -ENOTSOCK || res == -EOPNOTSUPP || res == -ENXIO ||
               res == -ECANCELED;
    }

    /// Binds the node to the runtime of its first next(): multishot when the kernel has it.
    /// IORING_ACCEPT_MULTISHOT came with Linux 5.19, as IORING_OP_SOCKET did: the probe's
    /// answer for that opcode stands for it (an older kernel rejects the flag with EINVAL).
    void bind(Runtime& r) noexcept {
        rt = &r;
        single = !r.supports(uring::compat::opcode::socket);
    }

    // --- the queue
    void push(int res) noexcept {
        if (count == cap) {
            int* bigger = new (std::nothrow) int[cap * 2];
            if (!bigger) { // no memory for the queue: the connection is closed (or the error dropped)
                if (res >= 0)
                    close_soon(res);
                return;
            }
            for (unsigned i = 0; i < count; ++i)
                bigger[i] = q[(head + i) % cap];
            if (q != small)
                delete[] q;
            q = bigger;
            cap *= 2;
            head = 0;
        }
        q[(head + count) % cap] = res;
        ++count;
    }
    int pop() noexcept {
        int r = q[head];
        head = (head + 1) % cap;
        --count;
        return r;
    }
    void close_queued() noexcept {
        while (count) {
            int r = pop();
            if (r >= 0)
                close_soon(r);
        }
    }

    void wake_reader() noexcept {
        if (reader)
            rt->schedule(std::exchange(reader, {}));
    }
    void end(int res) noexcept {
        ended = true;
        end_res = res;
        wake_reader();
    }

    /// Queues the multishot accept: true when it is armed, false when the stream ended.
    bool arm() noexcept {
        if (stopped || rt->shutting_down()) {
            end(-ECANCELED);
            return false;
        }
        int r;
        try {
            r = op::raw::queue(*rt, *this, [this](io_uring_sqe* s) {
                op::raw::prep_accept_multishot(s, fd, nullptr, nullptr, SOCK_CLOEXEC);
            });
        } catch (...) {
            r = -EIO; // the ring could not take an SQE (it failed)
        }
        if (r < 0) {
            end(r);
            return false;
        }
        armed = true;
        paused = false;
        ++arms;
        return true;
    }
    /// ASYNC_CANCEL for the armed multishot (its final CQE follows).
    void cancel_multishot() noexcept {
        if (armed && !cancel_sent) {
            cancel_sent = true;
            rt->cancel_op(reinterpret_cast<const void*>(op::raw::completion_user_data(*this)));
        }
    }
    /// After the reader took a connection: a paused multishot goes on once few are queued.
    void maybe_resume() noexcept {
        if (paused && !armed && !ended && count <= resume_at)
            arm();
    }

    static void on_cqe(ringo::detail::Completion* c, int res, std::uint32_t flags) {
        auto* n = static_cast<AcceptNode*>(c);
        bool more = op::has_more(flags);
        bool ours = false;
        if (!more) { // the final CQE: the multishot is over
            n->armed = false;
            n->rt->op_finished();
            ours = std::exchange(n->cancel_sent, false);
        }
        if (n->orphan) {
            if (res >= 0)
                close_soon(res);
            if (!more)
                delete n;
            return;
        }
        if (res >= 0) {
            n->push(res);
            if (more && n->count >= pause_at)
                n->pause();
            else if (!more && !ours && !n->paused)
                n->arm(); // the kernel stopped it with a connection (CQ overflow): go on
            n->wake_reader();
            return;
        }
        if (res == -ECANCELED && ours && n->paused && !n->stopped) {
            n->maybe_resume(); // the reader may have drained the queue meanwhile
            return;
        }
        if (ends_stream(res) || n->stopped) {
            n->end(res == -ECANCELED || n->stopped ? -ECANCELED : res);
            return;
        }
        n->push(res); // EMFILE ...: yielded in order; the next next() re-arms
        n->wake_reader();
    }

    void pause() noexcept {
        paused = true;
        cancel_multishot();
    }

    /// The stream object is gone: what is queued is closed; an armed multishot is cancelled
    /// and the node goes at its final CQE (closing what still arrives), otherwise now.
    void owner_gone() noexcept {
        orphan = true;
        reader = {}; // a coroutine still suspended in next() is being destroyed with the stream
        close_queued();
        if (armed)
            cancel_multishot();
        else
            delete this;
    }
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
/// next() takes them. The multishot is armed at the first next(). Costs: incoming() allocates
/// the stream's state once; next() is awaited directly (no frame) and allocates nothing,
/// unless more than 16 connections wait at once (the queue doubles, once). With 64 queued the
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
/// the same release) each next() is one IORING_OP_ACCEPT, awaited directly: the same
/// results, without the queue. multishot() tells which.
///
/// Owner thread of the runtime of its first next(); one reader at a time (EBUSY for a
/// second). The listener must outlive the stream; close the listener only after the stream
/// is gone or cancel()led (the multishot holds a reference to the socket until it ends).
template <class Stream>
class Incoming {
public:
    Incoming() noexcept = default;
    /// The connections of listening socket `listener` (armed at the first next()).
    explicit Incoming(op::FileRef listener) : n_(new detail::AcceptNode(listener)) {}

    /// Awaitable yielding Result<Stream>: the next connection (SOCK_CLOEXEC), or an error
    /// (see the class). EBADF for an empty (moved-from) stream, EBUSY when another coroutine
    /// already waits in next(), ENXIO outside a runtime or on another runtime's thread,
    /// ECANCELED in a cancelled task.
    class NextAwait : public ringo::detail::Waitable {
    public:
        explicit NextAwait(detail::AcceptNode* n) noexcept
            : n_(n), op_(n ? n->fd : op::FileRef(-1), nullptr, nullptr, SOCK_CLOEXEC) {
            cancel_fn = &on_cancel;
        }
        NextAwait(const NextAwait&) = delete;
        NextAwait& operator=(const NextAwait&) = delete;
        bool await_ready() const noexcept { return !n_ || (n_->rt && !n_->single && (n_->count || n_->ended)); }
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) {
            Runtime* rt = ringo::detail::t_current;
            if (!n_->rt && rt)
                n_->bind(*rt);
            if (!rt || n_->rt != rt) [[unlikely]]
                return refuse(-ENXIO);
            if (n_->single) {
                single_ = true;
                return op_.await_suspend(h);
            }
            if (n_->reader) [[unlikely]]
                return refuse(-EBUSY);
            ringo::detail::CancelCtx* ctx = ringo::detail::ctx_of_or_dummy(h);
            if (ctx->cancelled) [[unlikely]]
                return refuse(-ECANCELED);
            if (n_->count || n_->ended)
                return false;
            if (!n_->armed && !n_->arm()) // the first call, or after an error or a pause
                return false;
            n_->reader = h;
            ctx_ = ctx;
            ctx->waiting = this;
            return true;
        }
        Result<Stream> await_resume() noexcept {
            if (ctx_)
                ctx_->waiting = nullptr;
            if (single_)
                return take(op_.await_resume());
            if (refused_) [[unlikely]]
                return errno_code(refused_);
            if (!n_)
                return std::make_error_code(std::errc::bad_file_descriptor);
            if (cancelled_ && !n_->count)
                return std::make_error_code(std::errc::operation_canceled);
            if (!n_->count)
                return errno_code(n_->ended ? n_->end_res : -EAGAIN);
            int r = n_->pop();
            n_->maybe_resume();
            return take(r);
        }

    private:
        static Result<Stream> take(int r) noexcept {
            if (r < 0)
                return errno_code(r);
            return Stream(Fd(r));
        }
        bool refuse(int e) noexcept {
            refused_ = e;
            return false;
        }
        static void on_cancel(ringo::detail::Waitable* w) noexcept {
            auto* self = static_cast<NextAwait*>(w);
            self->cancelled_ = true;
            self->n_->wake_reader(); // the multishot stays armed for the next next()
        }
        detail::AcceptNode* n_;
        op::Accept op_; // the single accept, on a kernel without multishot accept
        ringo::detail::CancelCtx* ctx_ = nullptr;
        int refused_ = 0;
        bool single_ = false;
        bool cancelled_ = false;
    };
    [[nodiscard]] NextAwait next() noexcept { return NextAwait(n_.get()); }

    /// Stops accepting: the multishot is cancelled; next() still yields the connections
    /// already queued, then ECANCELED. No effect on an ended stream.
    void cancel() noexcept {
        if (!n_ || n_->ended)
            return;
        n_->stopped = true;
        if (n_->armed)
            n_->cancel_multishot();
        else
            n_->end(-ECANCELED);
    }

    /// True while the multishot accept is in the kernel.
    [[nodiscard]] bool armed() const noexcept { return n_ && n_->armed; }
    /// False on a kernel without multishot accept (single accepts instead); true before the
    /// first next() decides.
    [[nodiscard]] bool multishot() const noexcept { return n_ && !n_->single; }
    /// Times the multishot was armed (1 + re-arms after an error, a pause or a CQ overflow).
    [[nodiscard]] std::uint64_t arms() const noexcept { return n_ ? n_->arms : 0; }
    /// Connections (and errors) accepted and not yet taken by next().
    [[nodiscard]] unsigned queued() const noexcept { return n_ ? n_->count : 0; }
    /// True once the stream has ended and nothing is left to take.
    [[nodiscard]] bool done() const noexcept { return !n_ || (n_->ended && !n_->count); }

private:
    // Move-only; destroying (or assigning over) it lets the node go (AcceptNode::owner_gone).
    struct OwnerGone {
        void operator()(detail::AcceptNode* n) const noexcept { n->owner_gone(); }
    };
    std::unique_ptr<detail::AcceptNode, OwnerGone> n_;
};

} // namespace ringo::net
