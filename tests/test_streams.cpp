// The multishot streams built on op/detail/stream.hpp: ringo::interval (op/interval.hpp), and
// the buffer-ring streams of buf/ (read, poll, recvmsg, bundles, incremental rings). Real
// kernel timeouts, pipes, socketpairs and UDP loopback sockets; the old-kernel fallbacks are
// forced with the probe override or the streams' test hooks.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include <ringo/op/interval.hpp>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
namespace op = ringo::op;
using namespace ringo_test;
using namespace std::chrono_literals;

namespace {

Task<void> settle(int rounds = 4) {
    for (int i = 0; i < rounds; ++i)
        co_await op::nop();
}

std::uint64_t ms_since(std::chrono::steady_clock::time_point t0) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

// --- interval ------------------------------------------------------------------------------

/// Five ticks of a 10 ms interval: each yields 1 (the reader keeps up), and they take about
/// 50 ms in all; returns the sum of the counts.
Task<std::int64_t> five_ticks(bool* multishot) {
    auto iv = ringo::interval(10ms);
    auto t0 = std::chrono::steady_clock::now();
    std::int64_t sum = 0;
    for (int i = 0; i < 5; ++i) {
        std::int64_t n = co_await iv.tick();
        EXPECT_GE(n, 1);
        sum += n;
    }
    auto ms = ms_since(t0);
    EXPECT_GE(ms, 45u);
    EXPECT_LT(ms, 1000u);
    *multishot = iv.multishot();
    co_return sum;
}

TEST(Interval, TicksOncePerPeriod) {
    Runtime rt;
    bool multishot = false;
    std::int64_t sum = rt.block_on(five_ticks(&multishot));
    EXPECT_GE(sum, 5);
    EXPECT_LE(sum, 7);      // a tick or two may be counted late on a loaded machine
    EXPECT_TRUE(multishot); // 6.4+: the kernel's multishot timeout
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u); // dropped: cancelled, final CQE reaped
}

TEST(Interval, FallbackTicksOncePerPeriod) {
    Runtime rt;
    op::stream_impl::interval_force_fallback = true;
    bool multishot = true;
    std::int64_t sum = rt.block_on(five_ticks(&multishot));
    op::stream_impl::interval_force_fallback = false;
    EXPECT_GE(sum, 5);
    EXPECT_LE(sum, 7);
    EXPECT_FALSE(multishot);
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

/// Sleeps through about ten periods without ticking (blocking the thread, so no CQE is even
/// reaped), then ticks: the missed periods come out as one count; the next tick is 1 again.
Task<void> missed_ticks_are_counted() {
    auto iv = ringo::interval(5ms);
    std::int64_t first = co_await iv.tick(); // the timeout is in the kernel from here on
    EXPECT_EQ(first, 1);
    std::this_thread::sleep_for(52ms);
    std::int64_t n = co_await iv.tick();
    EXPECT_GE(n, 9);
    EXPECT_LE(n, 12);
    EXPECT_EQ(iv.pending(), 0u);
    std::int64_t m = co_await iv.tick();
    EXPECT_GE(m, 1);
    EXPECT_LE(m, 2);
}

TEST(Interval, MissedPeriodsAreCountedNotQueued) {
    Runtime rt;
    rt.block_on(missed_ticks_are_counted());
    op::stream_impl::interval_force_fallback = true;
    rt.block_on(missed_ticks_are_counted());
    op::stream_impl::interval_force_fallback = false;
}

Task<std::int64_t> tick_once(ringo::Interval& iv) {
    std::int64_t n = co_await iv.tick();
    co_return n;
}

/// A task waiting in tick() is cancelled: it resumes at once with -ECANCELED, the interval
/// keeps running (a later tick counts the periods missed meanwhile).
Task<void> cancelled_tick() {
    auto iv = ringo::interval(1h);
    auto h = ringo::spawn(tick_once(iv));
    co_await settle();
    auto t0 = std::chrono::steady_clock::now();
    h.cancel();
    std::int64_t r = co_await h;
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_LT(ms_since(t0), 100u);
    EXPECT_TRUE(iv.armed());
    EXPECT_FALSE(iv.done());
    // A task cancelled before it waits gets -ECANCELED too.
    auto h2 = ringo::spawn(tick_once(iv));
    h2.cancel();
    EXPECT_EQ(co_await h2, -ECANCELED);
    EXPECT_TRUE(iv.armed());
}

TEST(Interval, CancelledTaskGetsEcanceledPromptlyAndTheIntervalRuns) {
    Runtime rt;
    rt.block_on(cancelled_tick());
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

Task<void> with_timeout_on_tick() {
    auto iv = ringo::interval(30ms);
    auto r = co_await ringo::with_timeout(iv.tick(), 5ms);
    EXPECT_TRUE(r.timed_out());
    EXPECT_EQ(*r, -ECANCELED);
    std::int64_t n = co_await iv.tick(); // the first period still ends at 30 ms
    EXPECT_EQ(n, 1);
}

TEST(Interval, WithTimeoutOnTick) {
    Runtime rt;
    rt.block_on(with_timeout_on_tick());
}

/// Dropping an interval while its timeout is armed cancels it: nothing stays in flight, and
/// many rounds reuse the pooled node.
Task<void> drop_armed(Runtime& rt) {
    for (int i = 0; i < 1000; ++i) {
        auto iv = ringo::interval(1ms);
        if (i % 2)
            co_await op::nop();
    }
    co_await settle();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(Interval, DroppedWhileArmedLeavesNothingInFlight) {
    Runtime rt;
    rt.block_on(drop_armed(rt));
}

Task<void> interval_errors() {
    auto bad = ringo::interval(0ms);
    std::int64_t r = co_await bad.tick();
    EXPECT_EQ(r, -EINVAL);
    auto neg = ringo::interval(-5ms);
    r = co_await neg.tick();
    EXPECT_EQ(r, -EINVAL);
    ringo::Interval empty;
    r = co_await empty.tick();
    EXPECT_EQ(r, -EBADF);
    auto iv = ringo::interval(1h);
    auto h = ringo::spawn(tick_once(iv));
    co_await settle();
    r = co_await iv.tick(); // a second reader
    EXPECT_EQ(r, -EBUSY);
    iv.cancel();
    EXPECT_EQ(co_await h, -ECANCELED);
    r = co_await iv.tick();
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_TRUE(iv.done());
}

TEST(Interval, Errors) {
    Runtime rt;
    rt.block_on(interval_errors());
    auto outside = ringo::interval(1ms); // no runtime on this thread
    EXPECT_TRUE(outside.done());
}

Task<void> tick_forever(int* ticks) {
    auto iv = ringo::interval(1ms);
    for (;;) {
        std::int64_t n = co_await iv.tick();
        if (n < 0)
            break;
        *ticks += static_cast<int>(n);
    }
}

Task<void> spawn_ticker(int* ticks) {
    ringo::spawn(tick_forever(ticks)).detach();
    co_await ringo::sleep_for(20ms);
}

TEST(Interval, RuntimeDestroyedWithAnIntervalInADetachedTask) {
    auto rt = std::make_unique<Runtime>();
    int ticks = 0;
    rt->block_on(spawn_ticker(&ticks));
    EXPECT_GE(ticks, 5);
    rt.reset(); // cancels the armed timeout, destroys the frame (the interval with it)
}

} // namespace
