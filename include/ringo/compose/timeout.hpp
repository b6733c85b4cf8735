// ringo/compose/timeout.hpp - with_timeout on any awaitable.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <type_traits>

#include <ringo/compose/cancel.hpp>
#include <ringo/compose/traits.hpp>
#include <ringo/core/time.hpp>

namespace ringo {

namespace detail {

// Cancels a branch when its deadline passes.
struct DeadlineTimer : TimerEntry {
    CancelCtx* branch = nullptr;
    bool fired = false;
    static void on_fire(TimerEntry* t) noexcept {
        auto* d = static_cast<DeadlineTimer*>(t);
        d->fired = true;
        cancel(*d->branch);
    }
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class R>
struct TimeoutResult {
    using type = std::optional<R>;
};
template <>
struct TimeoutResult<int> {
    using type = int;
};
template <>
struct TimeoutResult<void> {
    using type = bool;
};

} // namespace detail

/// What with_timeout(a, d) yields for an awaitable yielding R: `int` for int (the kernel's
/// result, or -ETIME), `bool` for void (true: finished in time), `std::optional<R>` otherwise.
template <class A>
using timeout_result_t = typename detail::TimeoutResult<await_result_t<A>>::type;

/// Awaits `a`, but cancels it once `d` has passed (through the task's cancellation, so an
/// operation gets ASYNC_CANCEL and is awaited to its final CQE: no buffer is released while
/// the kernel may still write to it). Works on any awaitable: an operation, a Task, a
/// when_all, a JoinHandle (then the task behind it is cancelled), a sleep.
///
/// Result: for an int-yielding awaitable (every op::), the kernel's result if it completed —
/// even after the deadline, so no data is lost — and -ETIME when it was cancelled by the
/// deadline (its own result then being -ECANCELED). For void: true if it finished before
/// the deadline. For other R: the value, or std::nullopt when the deadline passed first (a
/// task's value produced after its cancellation is discarded, except that a non-empty
/// std::optional R, such as a channel recv's value, is returned: it would be lost otherwise). A zero or negative
/// duration cancels at once: an operation is then not submitted at all. A huge duration (up to duration::max()) never
/// fires. Exceptions propagate. The deadline is one entry in the runtime's timer heap; the kernel sees at most one wait
/// timeout however many with_timeout are pending.
template <class A, class Rep, class Period>
Task<timeout_result_t<A>> with_timeout(A a, std::chrono::duration<Rep, Period> d) {
    using R = await_result_t<A>;
    detail::CancelCtx branch;
    detail::CancelCtx* outer = co_await detail::CurrentCtx{};
    co_await detail::EnterBranch{&branch};
    Runtime* rt = Runtime::current();
    detail::DeadlineTimer timer;
    timer.branch = &branch;
    timer.fire = &detail::DeadlineTimer::on_fire;
    timer.deadline = detail::deadline_after(detail::saturated_ns(d));
    if (rt) {
        if (d.count() <= 0)
            detail::cancel(branch);
        else
            detail::RuntimeAccess::add_timer(*rt, timer);
    }
    std::exception_ptr exc;
    std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
    try {
        if constexpr (std::is_void_v<R>) {
            co_await std::move(a);
            value.emplace('x');
        } else {
            value.emplace(co_await std::move(a));
        }
    } catch (...) {
        exc = std::current_exception();
    }
    bool expired = timer.fired || d.count() <= 0;
    if (rt)
        detail::RuntimeAccess::remove_timer(*rt, timer);
    co_await detail::LeaveBranch{&branch, outer};
    if (exc)
        std::rethrow_exception(exc);
    if constexpr (std::is_same_v<R, int>) {
        int r = *value;
        co_return (expired && r == -ECANCELED) ? -ETIME : r;
    } else if constexpr (std::is_void_v<R>) {
        co_return !expired;
    } else {
        if (expired) {
            // An awaitable yielding std::optional (a channel recv) that produced a value
            // keeps it: that value would otherwise be lost.
            if constexpr (detail::IsOptional<R>::value) {
                if (value->has_value())
                    co_return std::move(value);
            }
            co_return std::nullopt;
        }
        co_return std::move(value);
    }
}

} // namespace ringo
