// ringo/op/stream.hpp - the stream object every multishot stream of ringo is: next(), cancel(),
// done(), result(), armed(), rearms(). The state it owns, and how a derived stream's node
// behaves, is op/detail/stream.hpp.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/op/detail/stream.hpp>

namespace ringo::op {

/// The stream object of every multishot stream (net::Incoming, buf::RecvStream,
/// buf::ReadStream, buf::RecvMsgStream, op::PollStream, Interval): owns the operation's state
/// and yields what the kernel posts with `co_await next()`. Move-only; destroying or
/// assigning over an armed stream cancels its operation (ASYNC_CANCEL) and frees the state at
/// the final CQE. Used on the thread of the runtime it was made on, by one reader at a time.
/// `Node` is the stream's state (op/detail/stream.hpp), never named by users.
template <class Node>
class MultishotStream {
public:
    /// What next() yields (see each stream).
    using Item = typename Node::Item;

    /// An empty stream: next() yields EBADF.
    MultishotStream() noexcept = default;
    /// Takes `o`'s operation over; `o` is left empty.
    MultishotStream(MultishotStream&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
    /// Cancels this stream's operation (if armed), then takes `o`'s over.
    MultishotStream& operator=(MultishotStream&& o) noexcept {
        if (this != &o) {
            close();
            n_ = std::exchange(o.n_, nullptr);
        }
        return *this;
    }
    MultishotStream(const MultishotStream&) = delete;
    MultishotStream& operator=(const MultishotStream&) = delete;
    /// Cancels the operation if it is armed; the state goes at its final CQE.
    ~MultishotStream() { close(); }

    /// What next() returns: awaited directly (no frame, no allocation), it yields an Item.
    class NextAwaiter : public ringo::detail::Waitable {
    public:
        /// The next item of the stream whose state is `n` (null: EBADF).
        explicit NextAwaiter(Node* n) noexcept : n_(n) { cancel_fn = &on_cancel; }
        /// Ready when an item is queued, the stream has ended, or it is empty.
        bool await_ready() const noexcept { return !n_ || n_->has_items() || n_->ended; }
        /// Waits for an item (arming the operation when the stream needs it); refuses at once
        /// outside the stream's runtime (ENXIO) or with another reader waiting (EBUSY). In a
        /// cancelled task it yields ECANCELED at once, or, for a stream that a cancelled
        /// reader ends, cancels the operation and waits for its end.
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
        /// The item, or the error item of a refusal (ENXIO, EBUSY, ECANCELED, EBADF).
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
    /// A stream that owns state `n` (a derived stream's factory makes it).
    explicit MultishotStream(Node* n) noexcept : n_(n) {}
    /// Drops the state: cancels the operation if armed; the state goes at its final CQE.
    void close() noexcept {
        if (Node* n = std::exchange(n_, nullptr))
            n->close();
    }
    Node* n_ = nullptr; ///< the stream's state; null when empty
};

} // namespace ringo::op
