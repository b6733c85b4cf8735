// ringo/core/time.hpp - sleeping on the runtime's user-space timers.
#pragma once

#include <cstddef>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/runtime.hpp>

namespace ringo {

namespace detail {

/// Awaiter of sleep_for / sleep_until: a TimerEntry in the awaiting frame; no kernel object.
class SleepAwaiter : public Waitable {
public:
    static constexpr bool errno_result = true; // 0, -ECANCELED or -ENXIO
    explicit SleepAwaiter(std::uint64_t deadline_ns) noexcept {
        timer_.deadline = deadline_ns;
        timer_.fire = &on_fire;
        timer_.self = this;
        cancel_fn = &on_cancel;
    }
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        rt_ = t_current;
        ctx_ = ctx_of(h);
        if (!rt_) {
            res_ = -ENXIO;
            return false;
        }
        if (ctx_ && ctx_->cancelled) {
            res_ = -ECANCELED;
            return false;
        }
        if (timer_.deadline <= now_ns())
            return false; // already due: res_ stays 0
        h_ = h;
        timer_.self = this; // the awaiter may have been copied or moved since it was made
        detail::RuntimeAccess::scheduler(*rt_).add_timer(timer_);
        if (ctx_)
            ctx_->waiting = this;
        return true;
    }
    /// 0 when the time has passed, -ECANCELED when the task was cancelled first, -ENXIO
    /// outside a runtime.
    int await_resume() noexcept {
        if (ctx_ && ctx_->waiting == this)
            ctx_->waiting = nullptr;
        return res_;
    }

private:
    struct Timer : TimerEntry {
        SleepAwaiter* self;
    };
    static void on_fire(TimerEntry* t) noexcept {
        SleepAwaiter* s = static_cast<Timer*>(t)->self;
        s->res_ = 0;
        s->rt_->schedule(s->h_);
    }
    static void on_cancel(Waitable* w) noexcept {
        auto* s = static_cast<SleepAwaiter*>(w);
        if (!s->timer_.armed())
            return; // fired already; it is queued to resume
        detail::RuntimeAccess::scheduler(*s->rt_).remove_timer(s->timer_);
        s->res_ = -ECANCELED;
        s->rt_->schedule(s->h_);
    }
    Timer timer_{};
    std::coroutine_handle<> h_{};
    Runtime* rt_ = nullptr;
    CancelCtx* ctx_ = nullptr;
    int res_ = 0;
};

/// `d` in nanoseconds, saturated at the limits of int64 nanoseconds (about 292 years) instead of
/// overflowing: duration_cast<nanoseconds>(hours::max()) would wrap to a negative count, which
/// would make a "never" timeout fire at once.
template <class Rep, class Period>
constexpr std::chrono::nanoseconds saturated_ns(std::chrono::duration<Rep, Period> d) noexcept {
    using ns = std::chrono::nanoseconds;
    const std::chrono::duration<long double, std::nano> f = d;
    constexpr long double limit = 9.2e18L; // a little below 2^63: exact conversion below it
    if (f.count() >= limit)
        return ns::max();
    if (f.count() <= -limit)
        return ns::min();
    return std::chrono::duration_cast<ns>(d);
}

inline std::uint64_t deadline_after(std::chrono::nanoseconds d) noexcept {
    std::uint64_t now = now_ns();
    if (d.count() <= 0)
        return now;
    auto add = static_cast<std::uint64_t>(d.count());
    return add > ~std::uint64_t{0} - now ? ~std::uint64_t{0} : now + add;
}

} // namespace detail

/// Suspends the task for `d` on the runtime's timer heap (no kernel timeout per sleep: the
/// runtime's wait uses the nearest deadline). Yields 0, or -ECANCELED when the task is
/// cancelled first. A zero or negative duration returns 0 at once; a huge one (up to
/// duration::max()) waits until cancelled.
template <class Rep, class Period>
detail::SleepAwaiter sleep_for(std::chrono::duration<Rep, Period> d) noexcept {
    return detail::SleepAwaiter{detail::deadline_after(detail::saturated_ns(d))};
}

/// Suspends the task until `t` (steady_clock, i.e. CLOCK_MONOTONIC on Linux).
template <class Duration>
detail::SleepAwaiter sleep_until(std::chrono::time_point<std::chrono::steady_clock, Duration> t) noexcept {
    auto ns = detail::saturated_ns(t.time_since_epoch()).count();
    return detail::SleepAwaiter{ns <= 0 ? 0 : static_cast<std::uint64_t>(ns)};
}

} // namespace ringo
