// ringo/op/interval.hpp - a periodic timer as a stream of ticks.
//
//   auto iv = ringo::interval(10ms);
//   for (;;) {
//       std::int64_t n = co_await iv.tick();   // periods elapsed since the last tick (>= 1), or -errno
//       if (n < 0) break;
//       ...
//   }
//
// One IORING_OP_TIMEOUT with IORING_TIMEOUT_MULTISHOT (6.4) stays armed and posts a CQE every
// period; the ticks the reader has not taken are counted, not queued (tick() yields the count
// and resets it). Where the kernel refuses multishot timeouts (before 6.4: its first CQE is
// -EINVAL), the interval falls back to one absolute single-shot timeout per period on the
// kernel's monotonic clock, re-armed at each expiry; the periods missed meanwhile are
// counted from the clock, so both modes yield the same counts. Dropping the interval cancels
// its timeout.
#pragma once

#include <cstdint>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/detail/timer_heap.hpp>
#include <ringo/core/time.hpp>
#include <ringo/op/detail/stream.hpp>
#include <ringo/op/multishot.hpp>
#include <ringo/op/stream.hpp>
#include <ringo/op/timeout.hpp>

namespace ringo {

class Interval;

namespace op::stream_impl {

/// Test hook: when true on a thread, intervals made there arm their first multishot timeout
/// with a flag the kernel refuses with it (IORING_TIMEOUT_ABS), so that it answers -EINVAL
/// as a kernel older than 6.4 does, and the interval falls back as it would there.
inline thread_local bool interval_force_fallback = false;

struct IntervalNode : StreamNode<IntervalNode> {
    using Item = std::int64_t;
    static constexpr bool cancel_ends = false; // a cancelled tick() leaves the interval running

    IntervalNode* pool_next = nullptr;
    std::int64_t period_ns = 0;
    std::uint64_t start_ns = 0;    // CLOCK_MONOTONIC when the interval started
    std::uint64_t periods = 0;     // periods counted since the start
    std::uint64_t pending = 0;     // periods not yet taken by tick()
    bool fallback = false;         // single-shot absolute timeouts
    bool multishot_seen = false;   // a multishot CQE arrived: the kernel has the feature
    bool simulate_refusal = false; // interval_force_fallback
    __kernel_timespec ts{};

    void prep(io_uring_sqe* s) noexcept {
        if (fallback) {
            std::uint64_t due = start_ns + (periods + 1) * static_cast<std::uint64_t>(period_ns);
            ts.tv_sec = static_cast<std::int64_t>(due / 1'000'000'000);
            ts.tv_nsec = static_cast<std::int64_t>(due % 1'000'000'000);
            io_uring_prep_timeout(s, &ts, 0, uring::compat::timeout_abs);
        } else {
            ts = op::to_timespec(std::chrono::nanoseconds(period_ns));
            op::raw::prep_timeout_multishot(s, &ts, 0, simulate_refusal ? uring::compat::timeout_abs : 0);
        }
    }
    /// Counts the periods that have passed by the clock: true when at least one did. The
    /// kernel re-arms a multishot timeout only when its CQE is posted (task work), so while
    /// the thread does not enter the kernel it fires once for several periods; and a late
    /// single-shot re-arm would lose periods. The clock counts them all in both modes.
    bool count_by_clock() noexcept {
        std::uint64_t now = ringo::detail::now_ns();
        std::uint64_t total = now > start_ns ? (now - start_ns) / static_cast<std::uint64_t>(period_ns) : 0;
        if (total <= periods)
            return false;
        pending += total - periods;
        periods = total;
        return true;
    }
    bool take(int res, std::uint32_t flags) noexcept {
        if (res != -ETIME || orphan)
            return false;
        if (op::has_more(flags))
            multishot_seen = true;
        return count_by_clock();
    }
    void on_stop(int res) noexcept {
        if (res == -ETIME) {
            rearm(); // a single-shot expiry, or a multishot the kernel stopped (CQ pressure)
        } else if (res == -EINVAL && !fallback && !multishot_seen) {
            fallback = true; // the kernel does not know IORING_TIMEOUT_MULTISHOT
            rearm();
        } else {
            end(res < 0 ? res : -ECANCELED);
        }
    }
    int cancelled_end(int res) noexcept { return res == -ETIME || res == 0 ? -ECANCELED : res; }
    bool has_items() const noexcept { return pending > 0; }
    Item pop() noexcept {
        if (pending)
            return static_cast<Item>(std::exchange(pending, 0));
        return ended ? final_res : -EAGAIN;
    }
    static Item error_item(int e) noexcept { return e; }
    void drop_items() noexcept { pending = 0; }
    bool before_wait() noexcept { return true; }
};

} // namespace op::stream_impl

/// A periodic timer (see ringo::interval), consumed with `co_await tick()`. Move-only; owner
/// thread of its runtime only. Destroying it cancels its timeout.
class Interval : public op::MultishotStream<op::stream_impl::IntervalNode> {
public:
    Interval() noexcept = default;

    /// Awaitable yielding std::int64_t: the periods elapsed since the previous tick() (since
    /// the start for the first), at least 1; it waits for the next period when none has
    /// elapsed. Negative: -ECANCELED when the awaiting task is cancelled (at once; the
    /// interval keeps running and a later tick() counts the periods missed meanwhile) or
    /// after cancel(), -EINVAL for a period that is not positive, -ENXIO outside the
    /// interval's runtime, -EBUSY when another coroutine already waits, -EBADF for a
    /// moved-from interval or one made outside a runtime.
    [[nodiscard]] NextAwaiter tick() noexcept { return next(); }
    /// True when the kernel's multishot timeout drives it, false on the single-shot fallback
    /// (or before the kernel answered its first arming with an error).
    [[nodiscard]] bool multishot() const noexcept { return n_ && !n_->fallback; }
    /// Periods counted and not yet taken by tick().
    [[nodiscard]] std::uint64_t pending() const noexcept { return n_ ? n_->pending : 0; }

private:
    template <class Rep, class Period>
    friend Interval interval(std::chrono::duration<Rep, Period>);
    explicit Interval(op::stream_impl::IntervalNode* n) noexcept : MultishotStream(n) {}
};

/// A periodic timer of `period` on the calling task's runtime (IORING_OP_TIMEOUT with
/// IORING_TIMEOUT_MULTISHOT, 6.4; one absolute single-shot timeout per period before that,
/// detected at run time). Armed here: the first tick is due `period` from now. Costs one SQE
/// now, one CQE per period (plus one SQE per period on the fallback), no system call of its
/// own, and no allocation after the first interval of a thread (the node pool). A period
/// that is not positive yields -EINVAL at the first tick().
template <class Rep, class Period>
[[nodiscard]] Interval interval(std::chrono::duration<Rep, Period> period) {
    Runtime* rt = ringo::detail::t_current;
    if (!rt) {
        Interval empty;
        return empty; // tick(): -EBADF
    }
    auto* n = op::stream_impl::IntervalNode::acquire(*rt);
    Interval iv(n);
    n->period_ns = ringo::detail::saturated_ns(period).count(); // hours::max(): "never", not negative
    n->start_ns = ringo::detail::now_ns();
    n->simulate_refusal = op::stream_impl::interval_force_fallback;
    if (n->period_ns <= 0)
        n->end(-EINVAL);
    else
        n->arm();
    return iv;
}

} // namespace ringo
