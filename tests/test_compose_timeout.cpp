// with_timeout (compose/timeout.hpp).
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "compose_helpers.hpp"

namespace {

// ---------------------------------------------------------------- with_timeout

TEST(WithTimeout, OperationTimesOutWithEtime) {
    SocketPair sp;
    int r = run([&]() -> Task<int> {
        char buf[8];
        co_return co_await ringo::with_timeout(op::recv(sp.fd[0], buf, sizeof buf), 10ms);
    });
    EXPECT_EQ(r, -ETIME);
}

TEST(WithTimeout, OperationFinishingInTimeKeepsItsResult) {
    SocketPair sp;
    ASSERT_EQ(::write(sp.fd[1], "hello", 5), 5);
    int r = run([&]() -> Task<int> {
        char buf[8];
        co_return co_await ringo::with_timeout(op::recv(sp.fd[0], buf, sizeof buf), 1s);
    });
    EXPECT_EQ(r, 5);
}

TEST(WithTimeout, NonPositiveDurationDoesNotSubmit) {
    SocketPair sp;
    Runtime rt;
    auto before = rt.stats().sqes_submitted;
    int r = rt.block_on([](int fd) -> Task<int> {
        char buf[8];
        co_return co_await ringo::with_timeout(op::recv(fd, buf, sizeof buf), -1ms);
    }(sp.fd[0]));
    EXPECT_EQ(r, -ETIME);
    EXPECT_EQ(rt.stats().sqes_submitted, before);
}

TEST(WithTimeout, OnATask) {
    auto slow = []() -> Task<std::string> {
        co_await ringo::sleep_for(10s);
        co_return "slow";
    };
    auto fast = []() -> Task<std::string> {
        co_await ringo::sleep_for(1ms);
        co_return "fast";
    };
    auto r = run([&]() -> Task<std::tuple<bool, std::string, bool, std::string>> {
        auto a = co_await ringo::with_timeout(slow(), 10ms);
        auto b = co_await ringo::with_timeout(fast(), 5s);
        co_return std::tuple{a.timed_out(), *a, b.timed_out(), *b};
    });
    EXPECT_TRUE(std::get<0>(r));
    EXPECT_EQ(std::get<1>(r), "slow"); // what the cancelled task returned: kept
    EXPECT_FALSE(std::get<2>(r));
    EXPECT_EQ(std::get<3>(r), "fast");
}

// The rule of docs/compose.md: errno-style awaitables say "timed out" in their int (-ETIME);
// everything else, a user's Task<int> included, yields Timed<T>.
static_assert(std::is_same_v<ringo::timeout_result_t<op::Nop>, int>);
static_assert(std::is_same_v<ringo::timeout_result_t<decltype(ringo::sleep_for(1ms))>, int>);
static_assert(std::is_same_v<ringo::timeout_result_t<decltype(std::declval<ringo::Mutex&>().lock())>, int>);
static_assert(std::is_same_v<ringo::timeout_result_t<decltype(std::declval<ringo::Channel<int>&>().send(1))>, int>);
static_assert(std::is_same_v<ringo::timeout_result_t<Task<int>>, ringo::Timed<int>>);
static_assert(std::is_same_v<ringo::timeout_result_t<Task<long>>, ringo::Timed<long>>);
static_assert(std::is_same_v<ringo::timeout_result_t<ringo::JoinHandle<int>>, ringo::Timed<int>>);
static_assert(std::is_same_v<ringo::timeout_result_t<Task<void>>, ringo::Timed<void>>);
static_assert(std::is_same_v<ringo::timeout_result_t<decltype(std::declval<ringo::Channel<int>&>().recv())>,
                             ringo::Timed<std::optional<int>>>);

TEST(WithTimeout, AUserTaskOfIntSaysItTimedOut) {
    // A task that would return 7 after 1 s, given 10 ms: it is cancelled (its sleep ends with
    // -ECANCELED), still returns 7, and with_timeout says that the deadline passed first.
    auto seven = []() -> Task<int> {
        co_await ringo::sleep_for(1s);
        co_return 7;
    };
    auto seven_long = []() -> Task<long> {
        co_await ringo::sleep_for(1s);
        co_return 7;
    };
    auto t0 = std::chrono::steady_clock::now();
    auto r = run([&]() -> Task<std::tuple<bool, int, bool, long, bool, int>> {
        auto a = co_await ringo::with_timeout(seven(), 10ms);
        auto b = co_await ringo::with_timeout(seven_long(), 10ms);
        auto c = co_await ringo::with_timeout([]() -> Task<int> { co_return 3; }(), 1s);
        co_return std::tuple{a.timed_out(), *a, b.timed_out(), *b, static_cast<bool>(c), c.value()};
    });
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 900ms);
    EXPECT_EQ(r, std::make_tuple(true, 7, true, 7L, true, 3));
}

TEST(WithTimeout, OnVoidTaskAndSleep) {
    auto r = run([]() -> Task<std::pair<bool, int>> {
        bool done = static_cast<bool>(
            co_await ringo::with_timeout([]() -> Task<void> { co_await ringo::sleep_for(1ms); }(), 5s));
        int s = co_await ringo::with_timeout(ringo::sleep_for(10s), 5ms);
        co_return std::pair{done, s};
    });
    EXPECT_TRUE(r.first);
    EXPECT_EQ(r.second, -ETIME);
}

TEST(WithTimeout, OnWhenAll) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::tuple<bool, int, int>> {
        char a[4], b[4];
        auto res = co_await ringo::with_timeout(
            ringo::when_all([](int fd, char* p) -> Task<int> { co_return co_await op::recv(fd, p, 4); }(sp.fd[0], a),
                            [](int fd, char* p) -> Task<int> { co_return co_await op::recv(fd, p, 4); }(sp.fd[0], b)),
            10ms);
        co_return std::tuple{res.timed_out(), std::get<0>(*res), std::get<1>(*res)};
    });
    // Timed out; the cancelled recvs returned -ECANCELED in both branches, and that tuple is kept.
    EXPECT_EQ(r, std::make_tuple(true, -ECANCELED, -ECANCELED));
}

TEST(WithTimeout, ExceptionsPropagate) {
    EXPECT_THROW(run([]() -> Task<void> {
                     co_await ringo::with_timeout(
                         []() -> Task<int> {
                             throw std::runtime_error("inner");
                             co_return 1;
                         }(),
                         1s);
                 }),
                 std::runtime_error);
}

TEST(WithTimeout, ManyPendingTimeoutsUseNoKernelTimeouts) {
    // 10 000 waits on recvs that never complete, all with timeouts: the runtime keeps the
    // deadlines itself; the kernel never sees a TIMEOUT SQE (only the recvs and their cancels).
    SocketPair sp;
    Runtime rt;
    int timed_out = rt.block_on([](int fd) -> Task<int> {
        constexpr int n = 10000;
        std::vector<ringo::JoinHandle<int>> hs;
        hs.reserve(n);
        for (int i = 0; i < n; ++i)
            hs.push_back(ringo::spawn([](int f) -> Task<int> {
                char c;
                co_return co_await ringo::with_timeout(op::recv(f, &c, 1), 20ms);
            }(fd)));
        int count = 0;
        for (auto& h : hs)
            count += (co_await h == -ETIME);
        co_return count;
    }(sp.fd[0]));
    EXPECT_EQ(timed_out, 10000);
    EXPECT_EQ(rt.timers_pending(), 0u);
    // 10 000 recvs + at most 10 000 cancels; a kernel timeout per wait would add 10 000 more.
    EXPECT_LE(rt.stats().sqes_submitted, 20001u);
}

TEST(WithTimeout, OnASleepThatEndsFirst) {
    // The sleep awaiter is moved into with_timeout's frame before it is awaited; its timer must
    // still find it when it fires (it used to point back at the moved-from object).
    auto r = run([]() -> Task<std::pair<int, std::uint32_t>> {
        int a = co_await ringo::with_timeout(ringo::sleep_for(1ms), 5s);
        co_return std::pair{a, static_cast<std::uint32_t>(Runtime::current()->timers_pending())};
    });
    EXPECT_EQ(r.first, 0);
    EXPECT_EQ(r.second, 0u);
}

// Cancelling the task that awaits with_timeout (not the deadline): the awaitable is cancelled
// the same way and its own result passes through.
TEST(WithTimeout, CancellingTheAwaitingTaskPassesEcanceledThrough) {
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    struct Out {
        int res = kUnset;
        std::uint32_t in_flight = 99;
        std::size_t timers = 99;
    };
    Out o = rt.block_on([](int fd, int peer, char* b) -> Task<Out> {
        auto h = ringo::spawn([](int f, char* bb) -> Task<Out> {
            Out out;
            out.res = co_await ringo::with_timeout(op::recv(f, bb, 4), 10s);
            out.in_flight = in_flight();
            out.timers = Runtime::current()->timers_pending();
            co_return out;
        }(fd, b));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 1u);
        h.cancel();
        Out out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(o.res, -ECANCELED); // not -ETIME: the deadline did not pass
    EXPECT_EQ(o.in_flight, 0u);
    EXPECT_EQ(o.timers, 0u); // the deadline was disarmed
}

TEST(WithTimeout, CancellingTheAwaitingTaskOnVoidAndValueTasks) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::pair<bool, ringo::Timed<std::string>>> {
        auto recv_task = [](int fd) -> Task<int> {
            char c;
            co_return co_await op::recv(fd, &c, 1);
        };
        auto hv = ringo::spawn([](Task<int> t) -> Task<bool> {
            co_return static_cast<bool>(co_await ringo::with_timeout(
                [](Task<int> tt) -> Task<void> { co_await std::move(tt); }(std::move(t)), 10s));
        }(recv_task(sp.fd[0])));
        auto hs = ringo::spawn([](Task<int> t) -> Task<ringo::Timed<std::string>> {
            co_return co_await ringo::with_timeout(
                [](Task<int> tt) -> Task<std::string> {
                    co_return "recv:" + std::to_string(co_await std::move(tt));
                }(std::move(t)),
                10s);
        }(recv_task(sp.fd[0])));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 2u);
        hv.cancel();
        hs.cancel();
        bool v = co_await hv;
        auto s = co_await hs;
        EXPECT_EQ(in_flight(), 0u);
        co_return std::pair{v, s};
    });
    EXPECT_TRUE(r.first);               // void: it ended before the deadline (cancelled, but not by the deadline)
    EXPECT_FALSE(r.second.timed_out()); // T: not timed out either; the value the task produced after -ECANCELED
    EXPECT_EQ(*r.second, "recv:" + std::to_string(-ECANCELED));
}

TEST(WithTimeout, CancellingTheAwaitingTaskWaitsForTheFinalCqe) {
    RINGO_IO_URING_ONLY("a cancel that interrupts an open(2) blocked in an io-wq worker");
    // The awaited operation is still in the kernel after its ASYNC_CANCEL; with_timeout (and so
    // the cancelled task) resumes only after its own CQE.
    BlockingOpen fifo;
    Runtime rt;
    int opened = kUnset;
    struct Out {
        int res = kUnset;
        int seen = kUnset;
        std::uint32_t in_flight = 99;
    };
    Out o = rt.block_on([](BlockingOpen* f, int* opened_out) -> Task<Out> {
        auto h = ringo::spawn([](BlockingOpen* ff, int* oo) -> Task<Out> {
            Out out;
            auto t = co_await ringo::with_timeout(BlockingOpen::open_into(ff, oo), 10s);
            EXPECT_FALSE(t.timed_out());
            out.res = *t;
            out.seen = *oo;
            out.in_flight = in_flight();
            co_return out;
        }(f, opened_out));
        co_await ringo::sleep_for(5ms); // the worker blocks in open(2)
        EXPECT_EQ(in_flight(), 1u);
        h.cancel();
        co_return co_await h;
    }(&fifo, &opened));
    EXPECT_FALSE(fifo.rescued.load());
    EXPECT_LT(o.seen, 0); // the open had ended (interrupted) when with_timeout returned
    EXPECT_NE(o.seen, kUnset);
    EXPECT_EQ(o.res, o.seen); // the result passes through (the deadline did not pass)
    EXPECT_EQ(o.in_flight, 0u);
}

// ---------------------------------------------------------------- bad input
// Bad input, each with the result docs/compose.md ("Bad input") documents.

TEST(BadInput, NegativeDurationsEndAtOnce) {
    SocketPair sp;
    Runtime rt;
    auto sq0 = rt.stats().sqes_submitted;
    auto t0 = std::chrono::steady_clock::now();
    auto r = rt.block_on([](int fd) -> Task<std::tuple<int, int, int, bool, bool, int>> {
        char b[4];
        int s1 = co_await ringo::sleep_for(-1s);                                     // 0 at once
        int s2 = co_await ringo::sleep_until(std::chrono::steady_clock::now() - 1h); // 0 at once
        int t1 = co_await ringo::with_timeout(op::recv(fd, b, sizeof b), -5ms);      // -ETIME, never submitted
        auto t2 = co_await ringo::with_timeout(
            []() -> Task<std::string> {
                co_await ringo::sleep_for(10s);
                co_return "late";
            }(),
            std::chrono::nanoseconds::min()); // timed out at once
        bool t3 = static_cast<bool>(co_await ringo::with_timeout(
            []() -> Task<void> { co_await ringo::sleep_for(10s); }(), std::chrono::hours::min())); // false at once
        int k = co_await op::timeout(-1ms); // the kernel's: -EINVAL
        co_return std::tuple{s1, s2, t1, !t2.timed_out(), t3, k};
    }(sp.fd[0]));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(r, std::make_tuple(0, 0, -ETIME, false, false, -EINVAL));
    EXPECT_EQ(rt.stats().sqes_submitted - sq0, 1u); // only op::timeout reached the kernel
    EXPECT_EQ(rt.timers_pending(), 0u);
}

TEST(BadInput, HugeDurationsNeverFire) {
    // duration::max() of any unit: converted to nanoseconds it would overflow (hours::max()
    // wrapped to -1 h and timed out at once); it saturates instead, so it never fires.
    auto r = run([]() -> Task<std::tuple<int, int, bool, int, int>> {
        int a = co_await ringo::with_timeout(op::nop(), std::chrono::hours::max());
        int b = co_await ringo::with_timeout(op::nop(), std::chrono::duration<double>(1e300));
        bool c = static_cast<bool>(co_await ringo::with_timeout(
            []() -> Task<void> { co_await ringo::sleep_for(1ms); }(), std::chrono::minutes::max()));
        // A sleep of hours::max() does not end at once: the 2 ms deadline ends it.
        int d = co_await ringo::with_timeout(ringo::sleep_for(std::chrono::hours::max()), 2ms);
        int e = co_await ringo::with_timeout(
            ringo::sleep_until(std::chrono::time_point<std::chrono::steady_clock, std::chrono::hours>::max()), 2ms);
        co_return std::tuple{a, b, c, d, e};
    });
    EXPECT_EQ(r, std::make_tuple(0, 0, true, -ETIME, -ETIME));
}

} // namespace
