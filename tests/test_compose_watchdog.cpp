// Watchdog (compose/timeout.hpp): "no progress in N": a guard that is fed keeps running past
// N, one that is not is cancelled after N, several guards share one watchdog, and what a
// cancelled guard held is released.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <tuple>

#include "compose_helpers.hpp"

namespace {

// Reads `fd` until the end, feeding the watchdog after every read that got bytes.
Task<int> drain(int fd, ringo::Watchdog& dog) {
    int total = 0;
    for (;;) {
        char buf[64];
        int n = co_await op::recv(fd, buf, sizeof buf);
        if (n <= 0)
            co_return n < 0 ? n : total;
        total += n;
        dog.feed();
    }
}

// A writer that sends one byte every `gap`, `count` times, then shuts down its end (or,
// with `then_silence`, leaves it open and says nothing more).
Task<void> trickle(int fd, int count, std::chrono::milliseconds gap, bool then_silence = false) {
    for (int i = 0; i < count; ++i) {
        co_await ringo::sleep_for(gap);
        (void)co_await op::send(fd, "x", 1);
    }
    if (!then_silence)
        ::shutdown(fd, SHUT_WR);
}

TEST(Watchdog, FedGuardOutlivesItsIdleTime) {
    SocketPair sp;
    auto t0 = std::chrono::steady_clock::now();
    auto [r, expired] = run([&]() -> Task<std::tuple<int, bool>> {
        ringo::Watchdog dog(60ms);
        auto w = ringo::spawn(trickle(sp.fd[1], 8, 20ms)); // 160 ms in all, never 60 ms silent
        auto got = co_await dog.guard(drain(sp.fd[0], dog));
        co_await w;
        co_return std::tuple{got.timed_out() ? -1 : *got, dog.expired()};
    });
    EXPECT_EQ(r, 8);
    EXPECT_FALSE(expired);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
}

TEST(Watchdog, SilentGuardIsCancelledAfterItsIdleTime) {
    SocketPair sp;
    auto t0 = std::chrono::steady_clock::now();
    auto [timed_out, expired, in_flight_after] = run([&]() -> Task<std::tuple<bool, bool, std::uint32_t>> {
        ringo::Watchdog dog(50ms);
        auto w = ringo::spawn(trickle(sp.fd[1], 2, 10ms, true)); // two bytes, then silence
        auto got = co_await dog.guard(drain(sp.fd[0], dog));
        co_await w;
        co_return std::tuple{got.timed_out(), dog.expired(), in_flight()};
    });
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_TRUE(timed_out);
    EXPECT_TRUE(expired);
    EXPECT_EQ(in_flight_after, 0u); // the recv was cancelled and awaited to its end
    EXPECT_GE(took, 65ms);          // 20 ms of bytes, then 50 ms of silence
    EXPECT_LT(took, 2s);
}

TEST(Watchdog, ErrnoAwaitableYieldsEtime) {
    SocketPair sp;
    int r = run([&]() -> Task<int> {
        ringo::Watchdog dog(20ms);
        char buf[4];
        co_return co_await dog.guard(op::recv(sp.fd[0], buf, sizeof buf));
    });
    EXPECT_EQ(r, -ETIME);
}

TEST(Watchdog, TwoGuardsShareTheFeeds) {
    // Two readers under one watchdog: bytes on either keep both alive; once both are
    // silent, both are cancelled.
    SocketPair a, b;
    auto r = run([&]() -> Task<std::tuple<bool, bool, bool>> {
        ringo::Watchdog dog(60ms);
        auto wa = ringo::spawn(trickle(a.fd[1], 6, 25ms)); // bytes on `a` only, 150 ms
        auto both = co_await ringo::when_all(dog.guard(drain(a.fd[0], dog)), dog.guard(drain(b.fd[0], dog)));
        co_await wa;
        auto& [ga, gb] = both;
        // `a` ended by its writer's close, `b` (never a byte) by the watchdog, after `a`'s
        // feeds stopped: the watchdog expired.
        co_return std::tuple{ga.timed_out(), gb.timed_out(), dog.expired()};
    });
    EXPECT_EQ(r, std::make_tuple(false, true, true));
}

TEST(Watchdog, ZeroIdleCancelsAtOnce) {
    SocketPair sp;
    Runtime rt;
    auto before = rt.stats().sqes_submitted;
    int r = rt.block_on([](int fd) -> Task<int> {
        ringo::Watchdog dog(0ms);
        char buf[4];
        co_return co_await dog.guard(op::recv(fd, buf, sizeof buf));
    }(sp.fd[0]));
    EXPECT_EQ(r, -ETIME);
    EXPECT_EQ(rt.stats().sqes_submitted, before);
}

TEST(Watchdog, NoTimerLeftAfterTheGuard) {
    Runtime rt;
    int r = rt.block_on([]() -> Task<int> {
        ringo::Watchdog dog(10s);
        co_return co_await dog.guard(op::nop());
    }());
    EXPECT_EQ(r, 0);
    EXPECT_EQ(rt.timers_pending(), 0u);
}

} // namespace
