// ringo/op/detail/stream.hpp - the one mechanism behind every multishot stream (recv, read,
// recvmsg, bundles, poll, interval).
//
// A multishot operation posts many CQEs with one user_data, so its state cannot live in a
// coroutine frame or in the stream object the user holds: the kernel refers to it until the
// operation's final CQE, which may come after the stream object is gone. StreamNode<D> is that
// state, taken from a per-thread pool (no allocation after the first stream of a kind on a
// thread). It queues what the CQEs bring (the derived node decides how: buffers linked through
// their ring, a counter, an event mask), re-arms the operation when the kernel stops it while
// the stream is still wanted, cancels it (ASYNC_CANCEL) when the stream object is dropped
// while armed, and frees itself at the final CQE then.
//
// A derived node D provides:
//   D* pool_next;                          the pool's link
//   using Item = ...;                      what next() yields
//   static constexpr bool cancel_ends;     a cancelled reader cancels the operation (true) or
//                                          only stops waiting, with the stream left armed (false)
//   void prep(io_uring_sqe*);              fills the SQE of one arming
//   bool take(int res, unsigned flags);    one CQE's payload: queue it (true: something new to
//                                          read) or drop it (always when orphan)
//   void on_stop(int res);                 the final CQE of an uncancelled arming: re-arm, park
//                                          or end(res)
//   int cancelled_end(int res);            the end to report when a cancel stopped it
//   bool has_items(); Item pop(); static Item error_item(int); void drop_items();
//   bool before_wait();                    the reader is about to wait (false: do not, it ended)
//   void unpark() and release() may be redefined (buffer streams leave their ring's list).
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <utility>

#include <ringo/core/detail/node_pool.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/raw.hpp>

namespace ringo::op::stream_impl {

template <class D>
struct StreamNode : ringo::detail::Completion {
    Runtime* rt = nullptr;
    std::coroutine_handle<> reader{}; // the coroutine waiting in next()
    int final_res = 0;
    bool armed = false;       // the operation is in the kernel (counted in ops_in_flight)
    bool cancel_sent = false; // ASYNC_CANCEL submitted for it
    bool ended = false;       // nothing more will be queued; final_res is the end
    bool orphan = false;      // the stream object is gone: free the node at the final CQE
    std::uint64_t rearms = 0;

    D& self() noexcept { return static_cast<D&>(*this); }

    static D* acquire(Runtime& rt) {
        D* n = ringo::detail::ThreadNodePool<D, &D::pool_next>::acquire();
        n->fn = &on_cqe;
        n->rt = &rt;
        return n;
    }
    void release() noexcept { ringo::detail::ThreadNodePool<D, &D::pool_next>::recycle(&self()); }
    void unpark() noexcept {}

    void wake_reader() noexcept {
        if (reader)
            rt->schedule(std::exchange(reader, {}));
    }
    void end(int res) noexcept {
        ended = true;
        final_res = res;
        wake_reader();
    }

    /// Queues one arming of the operation: true when armed, false when the stream ended
    /// (-EOPNOTSUPP: the probe lacks the opcode; -ECANCELED: the runtime is shutting down).
    bool arm() noexcept {
        if (rt->shutting_down()) {
            end(-ECANCELED);
            return false;
        }
        int r;
        try {
            r = op::raw::queue(*rt, *this, [this](io_uring_sqe* s) { self().prep(s); });
        } catch (...) {
            r = ringo::detail::sqe_failure_result(); // the ring could not take an SQE (it failed)
        }
        if (r < 0) {
            end(r);
            return false;
        }
        armed = true;
        return true;
    }
    /// Arms again after the kernel stopped the operation with the stream still wanted.
    bool rearm() noexcept {
        ++rearms;
        return arm();
    }

    /// Ends the stream: ASYNC_CANCEL for an armed operation (its final CQE ends the stream),
    /// at once otherwise. What was queued stays readable.
    void cancel() noexcept {
        if (ended)
            return;
        if (armed) {
            if (!cancel_sent) {
                cancel_sent = true;
                ringo::detail::RuntimeAccess::engine(*rt).cancel_op(op::raw::completion_user_data(*this));
            }
            return;
        }
        self().unpark();
        end(-ECANCELED);
    }

    /// The stream object goes: drop what is queued; the node goes now, or at the final CQE.
    void close() noexcept {
        orphan = true;
        reader = {}; // a coroutine still suspended in next() is being destroyed with the stream
        self().unpark();
        self().drop_items();
        if (armed) {
            cancel();
            return;
        }
        self().release();
    }

    static void on_cqe(ringo::detail::Completion* c, int res, std::uint32_t flags) {
        D* n = static_cast<D*>(c);
        bool got = n->take(res, flags);
        if (op::has_more(flags)) {
            // A cancel can miss an operation that is between two shots (a multishot timeout
            // is off the kernel's list until its CQE is posted): cancel again.
            if (n->cancel_sent)
                ringo::detail::RuntimeAccess::engine(*n->rt).cancel_op(op::raw::completion_user_data(*n));
            if (got)
                n->wake_reader();
            return;
        }
        n->armed = false;
        ringo::detail::RuntimeAccess::engine(*n->rt).op_finished();
        if (n->orphan) {
            n->release();
            return;
        }
        if (n->cancel_sent)
            n->end(n->cancelled_end(res));
        else
            n->on_stop(res);
        if (got)
            n->wake_reader();
    }
};

/// The stream object: owns a node, yields its items with `co_await next()`.
template <class Node>
class Stream {
public:
    using Item = typename Node::Item;

    Stream() noexcept = default;
    Stream(Stream&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
    Stream& operator=(Stream&& o) noexcept {
        if (this != &o) {
            close();
            n_ = std::exchange(o.n_, nullptr);
        }
        return *this;
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() { close(); }

    class NextAwaiter : public ringo::detail::Waitable {
    public:
        explicit NextAwaiter(Node* n) noexcept : n_(n) { cancel_fn = &on_cancel; }
        bool await_ready() const noexcept { return !n_ || n_->has_items() || n_->ended; }
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
                if constexpr (Node::cancel_ends) {
                    n_->cancel();
                    if (n_->ended)
                        return false;
                } else {
                    refused_ = -ECANCELED;
                    return false;
                }
            } else if (!n_->before_wait()) {
                return false;
            }
            n_->reader = h;
            ctx_ = ctx;
            ctx->waiting = this;
            return true;
        }
        Item await_resume() noexcept {
            if (ctx_)
                ctx_->waiting = nullptr;
            if (refused_) [[unlikely]]
                return Node::error_item(refused_);
            if (!n_)
                return Node::error_item(-EBADF);
            return n_->pop();
        }

    private:
        static void on_cancel(ringo::detail::Waitable* w) noexcept {
            auto* a = static_cast<NextAwaiter*>(w);
            if constexpr (Node::cancel_ends) {
                a->n_->cancel();
            } else if (a->n_->reader) {
                // Only the wait ends; the operation stays armed and keeps counting/queueing.
                a->refused_ = -ECANCELED;
                a->n_->wake_reader();
            }
        }
        Node* n_;
        ringo::detail::CancelCtx* ctx_ = nullptr;
        int refused_ = 0;
    };

    /// Awaitable: the next item, or once the stream has ended and everything queued was taken,
    /// the end (see each stream). -EBADF for an empty (moved-from) stream, -EBUSY when another
    /// coroutine already waits, -ENXIO when awaited outside the stream's runtime.
    [[nodiscard]] NextAwaiter next() noexcept { return NextAwaiter{n_}; }

    /// Stops the stream: the operation is cancelled (ASYNC_CANCEL); what was queued stays
    /// readable, then next() yields -ECANCELED. No effect on an ended stream.
    void cancel() noexcept {
        if (n_)
            n_->cancel();
    }
    /// True once the stream has ended and nothing is left to take.
    [[nodiscard]] bool done() const noexcept { return !n_ || (n_->ended && !n_->has_items()); }
    /// The end of the stream once it has ended (0 or -errno), 0 before; -EBADF when empty.
    [[nodiscard]] int result() const noexcept { return n_ ? n_->final_res : -EBADF; }
    /// True while the operation is in the kernel.
    [[nodiscard]] bool armed() const noexcept { return n_ && n_->armed; }
    /// Times the operation was armed again after the kernel stopped it.
    [[nodiscard]] std::uint64_t rearms() const noexcept { return n_ ? n_->rearms : 0; }

protected:
    explicit Stream(Node* n) noexcept : n_(n) {}
    void close() noexcept {
        if (Node* n = std::exchange(n_, nullptr))
            n->close();
    }
    Node* n_ = nullptr;
};

} // namespace ringo::op::stream_impl
