// ringo/compose/cancel.hpp - observing cancellation from inside a task.
#pragma once

#include <coroutine>
#include <optional>
#include <type_traits>
#include <utility>

#include <ringo/compose/traits.hpp>
#include <ringo/core/task.hpp>

namespace ringo {

/// `co_await ringo::cancellation_requested()` yields true once the calling task (or the
/// combinator branch it runs in) has been asked to stop. Never suspends.
struct CancellationRequested {
    bool value = false; ///< the answer, set by await_suspend
    /// Never ready: the answer is read from the awaiting task in await_suspend.
    bool await_ready() const noexcept { return false; }
    template <class P>
    /// Reads whether the awaiting task is cancelled; never suspends (false).
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        detail::CancelCtx* c = detail::ctx_of(h);
        value = c && c->cancelled;
        return false;
    }
    /// True when the task has been asked to stop.
    bool await_resume() const noexcept { return value; }
};
[[nodiscard]] inline CancellationRequested cancellation_requested() noexcept { return {}; }

namespace detail {

/// Runs the awaiting coroutine's next awaits inside `branch` (a child of its current
/// cancellation context) until LeaveBranch. Never suspends.
struct EnterBranch {
    CancelCtx* branch;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        if constexpr (std::is_base_of_v<PromiseBase, P>) {
            auto& p = h.promise();
            if (p.ctx_)
                branch->link_under(*p.ctx_);
            p.ctx_ = branch;
        }
        return false;
    }
    void await_resume() const noexcept {}
};

struct LeaveBranch {
    CancelCtx* branch;
    CancelCtx* restore;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        if constexpr (std::is_base_of_v<PromiseBase, P>)
            h.promise().ctx_ = restore;
        branch->unlink();
        return false;
    }
    void await_resume() const noexcept {}
};

/// Yields the awaiting coroutine's cancellation context (may be null). Never suspends.
struct CurrentCtx {
    CancelCtx* ctx = nullptr;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        ctx = ctx_of(h);
        return false;
    }
    CancelCtx* await_resume() const noexcept { return ctx; }
};

} // namespace detail

/// The awaitable shielded() returns.
template <class A>
class [[nodiscard]] Shielded {
    using Awaiter = decltype(detail::get_awaiter(std::declval<A&>()));

public:
    /// Wraps awaitable `a` (shielded() makes one).
    explicit Shielded(A&& a) noexcept(std::is_nothrow_constructible_v<A, A&&>) : a_(std::forward<A>(a)) {}
    Shielded(const Shielded&) = delete;
    Shielded& operator=(const Shielded&) = delete;

    /// The wrapped awaitable's await_ready.
    bool await_ready() {
        if constexpr (!std::is_reference_v<Awaiter>)
            aw_.emplace([this]() -> Awaiter { return detail::get_awaiter(a_); });
        return aw().await_ready();
    }
    template <class P>
    /// Suspends as the wrapped awaitable does, with the task's cancellation hidden from it.
    auto await_suspend(std::coroutine_handle<P> h) -> decltype(std::declval<Awaiter&>().await_suspend(h)) {
        if constexpr (std::is_base_of_v<detail::PromiseBase, P>) {
            promise_ = &h.promise();
            outer_ = std::exchange(promise_->ctx_, &shield_);
            shield_.shield = true;
            shield_.link_first(*outer_); // not cancelled with it (cancel skips a shield)
        }
        try {
            return aw().await_suspend(h);
        } catch (...) {
            restore();
            throw;
        }
    }
    /// The wrapped awaitable's result; the task's own cancellation state is back.
    decltype(auto) await_resume() {
        restore();
        return aw().await_resume();
    }

private:
    struct Holder {
        Awaiter v;
        template <class F>
        explicit Holder(F f) : v(f()) {}
    };
    Awaiter& aw() {
        if constexpr (std::is_reference_v<Awaiter>)
            return detail::get_awaiter(a_);
        else
            return aw_->v;
    }
    void restore() noexcept {
        if (promise_)
            promise_->ctx_ = std::exchange(outer_, nullptr);
        promise_ = nullptr;
        shield_.unlink();
    }
    A a_;
    std::optional<Holder> aw_;
    detail::CancelCtx shield_; // in the awaiting strand's tree, never cancelled with it
    detail::PromiseBase* promise_ = nullptr;
    detail::CancelCtx* outer_ = nullptr;
};

/// Awaits `a` as if the awaiting task had not been cancelled: an operation is submitted
/// even in a task that has been cancelled, and cancelling the task while it waits does not
/// interrupt it; a Task awaited this way runs all of its awaits shielded the same way. Use
/// it for cleanup that must happen on every path out of a cancelled task (a goodbye
/// message, a flush, unregistering a buffer); close and async_cancel need no shield (they
/// are release operations: see op::Op). Shield only what ends by itself: a shielded recv
/// waits for data however long that takes. The runtime's own shutdown still cancels a
/// shielded operation (it cancels every operation in flight), and a deadline of
/// with_timeout inside the shielded awaitable still fires. Once it is done, the task is as
/// cancelled as before: the next await sees it.
///
///     co_await ringo::shielded(op::send(fd, bye, n));   // sent even after cancel()
template <class A>
[[nodiscard]] Shielded<A> shielded(A&& a) noexcept(std::is_nothrow_constructible_v<A, A&&>) {
    return Shielded<A>(std::forward<A>(a));
}

} // namespace ringo
