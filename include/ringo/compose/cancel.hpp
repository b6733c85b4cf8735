// ringo/compose/cancel.hpp - observing cancellation from inside a task.
#pragma once

#include <coroutine>

#include <ringo/core/task.hpp>

namespace ringo {

/// `co_await ringo::cancellation_requested()` yields true once the calling task (or the
/// combinator branch it runs in) has been asked to stop. Never suspends.
struct CancellationRequested {
    bool value = false;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        detail::CancelCtx* c = detail::ctx_of(h);
        value = c && c->cancelled;
        return false;
    }
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
} // namespace ringo
