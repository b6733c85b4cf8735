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

template <class R>
struct TimeoutResult;

} // namespace detail

/// What with_timeout yields for an awaitable that is not an errno-style int: what the
/// awaitable yielded, and whether the deadline passed before it finished.
///
///     auto r = co_await ringo::with_timeout(fetch(), 1s);   // fetch() is a Task<int>
///     if (r.timed_out())
///         ...                          // fetch was cancelled by the deadline
///     int v = *r;                      // its value either way: kept, never discarded
template <class R>
class [[nodiscard]] Timed {
    static_assert(!std::is_reference_v<R>, "ringo::with_timeout: awaitables yielding references are not supported");

public:
    Timed(bool timed_out, R&& v) noexcept(std::is_nothrow_move_constructible_v<R>)
        : value_(std::move(v)), timed_out_(timed_out) {}
    /// True when the deadline passed before the awaitable finished (it was then cancelled,
    /// and finished as a cancelled awaitable does).
    [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }
    /// True when it finished before the deadline.
    explicit operator bool() const noexcept { return !timed_out_; }
    /// What the awaitable yielded, in time or not (a value produced after the deadline, such
    /// as a message a channel recv took as the deadline passed, is not lost).
    R& value() & noexcept { return value_; }
    const R& value() const& noexcept { return value_; }
    R&& value() && noexcept { return std::move(value_); }
    R& operator*() & noexcept { return value_; }
    const R& operator*() const& noexcept { return value_; }
    R&& operator*() && noexcept { return std::move(value_); }
    R* operator->() noexcept { return &value_; }
    const R* operator->() const noexcept { return &value_; }

private:
    R value_;
    bool timed_out_;
};

/// with_timeout of an awaitable yielding void: whether the deadline passed first.
template <>
class [[nodiscard]] Timed<void> {
public:
    explicit Timed(bool timed_out) noexcept : timed_out_(timed_out) {}
    [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }
    explicit operator bool() const noexcept { return !timed_out_; }

private:
    bool timed_out_;
};

namespace detail {
template <class R>
struct TimeoutResult {
    using type = Timed<R>;
};
template <class A>
struct TimeoutResultOf {
    using type = typename TimeoutResult<await_result_t<A>>::type;
};
template <class A>
requires ErrnoAwaitable<A>
struct TimeoutResultOf<A> {
    using type = int;
};
} // namespace detail

/// What with_timeout(a, d) yields: `int` for an errno-style awaitable (every op::, sleeps,
/// sync waits: the result, or -ETIME), Timed<R> for anything else yielding R.
template <class A>
using timeout_result_t = typename detail::TimeoutResultOf<A>::type;

/// Awaits `a`, but cancels it once `d` has passed (through the task's cancellation, so an
/// operation gets ASYNC_CANCEL and is awaited to its final CQE: no buffer is released while
/// the kernel may still write to it). Works on any awaitable: an operation, a Task, a
/// when_all, a JoinHandle (then the task behind it is cancelled), a sleep, a channel recv.
///
/// The rule (docs/compose.md): with_timeout yields what `a` yields and whether the deadline
/// passed before `a` finished. An errno-style awaitable (ErrnoAwaitable: every op::, sleeps,
/// the waits of the sync primitives) says it in its int: its own result if it completed,
/// even after the deadline (no data is lost), and -ETIME when the deadline cancelled it (its
/// own result then being -ECANCELED). Anything else yields Timed<R>: timed_out(), and the
/// value `a` finished with either way (a Task<int> that returns 7 after its cancellation
/// yields 7 with timed_out() true). A zero or negative duration cancels at once: an
/// operation is then not submitted at all. A huge duration (up to duration::max()) never
/// fires. Exceptions propagate. The deadline is one entry in the runtime's timer heap; the
/// kernel sees at most one wait timeout however many with_timeout are pending.
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
    if constexpr (ErrnoAwaitable<A>) {
        int r = *value;
        co_return (expired && r == -ECANCELED) ? -ETIME : r;
    } else if constexpr (std::is_void_v<R>) {
        co_return Timed<void>(expired);
    } else {
        co_return Timed<R>(expired, std::move(*value));
    }
}

} // namespace ringo
