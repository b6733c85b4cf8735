// ringo/compose/timeout.hpp - with_timeout on any awaitable.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>

#include <ringo/compose/cancel.hpp>
#include <ringo/compose/traits.hpp>
#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/time.hpp>

namespace ringo {

class Watchdog;

namespace detail {

// Cancels a branch when its deadline passes; for a Watchdog's guard, only once the watchdog
// has gone `idle` without a feed (until then the timer moves to the new deadline).
struct DeadlineTimer : TimerEntry {
    CancelCtx* branch = nullptr;
    Runtime* rt = nullptr;
    Watchdog* dog = nullptr;
    bool fired = false;
    static void on_fire(TimerEntry* t) noexcept;
    /// Feeds `dog` (a guard begins) and yields its deadline.
    static std::uint64_t start_guard(Watchdog& dog) noexcept;
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
    /// What the awaitable yielded, and whether the deadline passed first (with_timeout makes
    /// it).
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
    /// value() of a const Timed.
    const R& value() const& noexcept { return value_; }
    /// value() moved out of a temporary Timed.
    R&& value() && noexcept { return std::move(value_); }
    /// value().
    R& operator*() & noexcept { return value_; }
    /// value() of a const Timed.
    const R& operator*() const& noexcept { return value_; }
    /// value() moved out of a temporary Timed.
    R&& operator*() && noexcept { return std::move(value_); }
    /// The value's members.
    R* operator->() noexcept { return &value_; }
    /// The value's members, of a const Timed.
    const R* operator->() const noexcept { return &value_; }

private:
    R value_;
    bool timed_out_;
};

/// with_timeout of an awaitable yielding void: whether the deadline passed first.
template <>
class [[nodiscard]] Timed<void> {
public:
    /// Whether the deadline passed first (with_timeout makes it).
    explicit Timed(bool timed_out) noexcept : timed_out_(timed_out) {}
    /// True when the deadline passed before the awaitable finished (it was then cancelled).
    [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }
    /// True when it finished before the deadline.
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

namespace detail {
// with_timeout and Watchdog::guard: awaits `a` in a branch of its own that a timer cancels
// once `d` has passed (at once for d <= 0), or, with a watchdog, once it has gone idle. The
// deadline counts from the start of the await; yields as with_timeout says.
template <class A>
Task<timeout_result_t<A>> await_with_deadline(A a, std::chrono::nanoseconds d, Watchdog* dog) {
    using R = await_result_t<A>;
    const bool now = d.count() <= 0;
    const std::uint64_t deadline = dog ? DeadlineTimer::start_guard(*dog) : deadline_after(d);
    detail::CancelCtx branch;
    detail::CancelCtx* outer = co_await detail::CurrentCtx{};
    co_await detail::EnterBranch{&branch};
    Runtime* rt = Runtime::current();
    detail::DeadlineTimer timer;
    timer.branch = &branch;
    timer.rt = rt;
    timer.dog = dog;
    timer.fire = &detail::DeadlineTimer::on_fire;
    timer.deadline = deadline;
    if (rt) {
        if (now)
            detail::cancel(branch);
        else
            detail::RuntimeAccess::scheduler(*rt).add_timer(timer);
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
    bool expired = timer.fired || now;
    if (rt)
        detail::RuntimeAccess::scheduler(*rt).remove_timer(timer);
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
} // namespace detail

/// Awaits `a`, but cancels it once `d` has passed (through the task's cancellation, so an
/// operation gets ASYNC_CANCEL and is awaited to its final CQE: no buffer is released while
/// the kernel may still write to it). Works on any awaitable: an operation, a Task, a
/// when_all, a JoinHandle (then the task behind it is cancelled), a sleep, a channel recv,
/// and every awaitable of net::, fs:: and the I/O layer (`with_timeout(listener.accept(),
/// 5s)`). `a` is moved in and held until the returned Task is awaited: every awaitable ringo
/// returns can be moved until it is awaited; std::move one kept in a variable.
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
    return detail::await_with_deadline(std::move(a), detail::saturated_ns(d), nullptr);
}

/// A deadline for "no progress in `idle`": the connection that has neither received nor sent
/// a byte for 60 seconds, the transfer that stalled. Awaiting something through guard()
/// cancels it once `idle` has passed since the last feed() (or since the guard began); each
/// feed() moves that deadline, and costs one clock read, no timer operation:
///
///     ringo::Watchdog idle(60s);
///     auto session = [&]() -> ringo::Task<void> {
///         for (;;) {
///             auto n = co_await conn.read(buf, sizeof buf);   // cancelled after 60 s of silence
///             if (!n || *n == 0)
///                 break;
///             idle.feed();                                    // progress
///             ...
///         }
///     };
///     auto r = co_await idle.guard(session());                 // r.timed_out(): it went idle
///
/// guard(a) yields as with_timeout(a, d) does (an int -ETIME for an errno-style awaitable
/// that the watchdog cancelled, Timed<R> otherwise); expired() says afterwards whether the
/// watchdog cancelled it. Everything `a` awaits is cancelled as a task is (operations get
/// ASYNC_CANCEL and end at their final completion), so nothing leaks and no buffer is freed
/// early. The timer is one entry in the runtime's timer heap, moved only when it comes due
/// (then to the last feed plus `idle`). Owner thread of the runtime; the watchdog must outlive
/// every guard() awaited through it (several may run at once: all of them see every feed).
class Watchdog {
public:
    template <class Rep, class Period>
    /// A watchdog whose deadline is `idle` after the last feed() (now, at first).
    explicit Watchdog(std::chrono::duration<Rep, Period> idle) noexcept
        : idle_(detail::saturated_ns(idle)), last_(detail::now_ns()) {}

    /// Progress: the deadline is `idle` from now.
    void feed() noexcept { last_ = detail::now_ns(); }
    /// The idle time allowed.
    [[nodiscard]] std::chrono::nanoseconds idle() const noexcept { return idle_; }
    /// True once a guard() was cancelled because `idle` passed without a feed().
    [[nodiscard]] bool expired() const noexcept { return expired_; }

    /// Awaits `a` (feeding the watchdog as it starts); cancels `a` once `idle` passes without
    /// a feed.
    template <class A>
    Task<timeout_result_t<A>> guard(A a) {
        return detail::await_with_deadline(std::move(a), idle_, this);
    }

private:
    friend struct detail::DeadlineTimer;
    [[nodiscard]] std::uint64_t deadline() const noexcept {
        if (idle_.count() <= 0)
            return last_;
        auto add = static_cast<std::uint64_t>(idle_.count());
        return add > ~std::uint64_t{0} - last_ ? ~std::uint64_t{0} : last_ + add;
    }
    std::chrono::nanoseconds idle_;
    std::uint64_t last_;
    bool expired_ = false;
};

inline std::uint64_t detail::DeadlineTimer::start_guard(Watchdog& dog) noexcept {
    dog.feed();
    return dog.deadline();
}

inline void detail::DeadlineTimer::on_fire(TimerEntry* t) noexcept {
    auto* d = static_cast<DeadlineTimer*>(t);
    if (Watchdog* dog = d->dog) {
        std::uint64_t next = dog->deadline();
        if (next > d->deadline && next > now_ns()) { // fed since: wait for the new deadline
            d->deadline = next;
            RuntimeAccess::scheduler(*d->rt).add_timer(*d); // just removed from the heap: no allocation
            return;
        }
        dog->expired_ = true;
    }
    d->fired = true;
    cancel(*d->branch);
}

} // namespace ringo
