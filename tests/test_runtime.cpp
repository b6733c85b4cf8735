#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <vector>

using ringo::Runtime;
using ringo::RuntimeOptions;
using ringo::Task;

namespace {

TEST(Runtime, CurrentIsSetOnlyWhileRunning) {
    Runtime rt;
    EXPECT_EQ(Runtime::current(), nullptr);
    Runtime* seen = rt.block_on([]() -> Task<Runtime*> { co_return Runtime::current(); }());
    EXPECT_EQ(seen, &rt);
    EXPECT_EQ(Runtime::current(), nullptr);
}

TEST(Runtime, CountersTrackSubmissionsAndCompletions) {
    Runtime rt;
    auto before = rt.stats();
    rt.block_on([]() -> Task<void> {
        for (int i = 0; i < 10; ++i)
            EXPECT_EQ(co_await ringo::op::nop(), 0);
    }());
    auto after = rt.stats();
    EXPECT_EQ(after.sqes_submitted - before.sqes_submitted, 10u);
    EXPECT_GE(after.cqes - before.cqes, 10u);
    // One NOP at a time: one io_uring_enter each (submit + wait in one call).
    EXPECT_EQ(after.enters - before.enters, 10u);
    EXPECT_GE(after.resumptions - before.resumptions, 10u);
    EXPECT_EQ(after.ops_in_flight, 0u);
}

TEST(Runtime, ConcurrentOpsAreBatchedIntoOneEnter) {
    Runtime rt;
    auto before = rt.stats();
    rt.block_on([]() -> Task<void> {
        std::vector<ringo::JoinHandle<int>> hs;
        for (int i = 0; i < 32; ++i)
            hs.push_back(ringo::spawn([]() -> Task<int> { co_return co_await ringo::op::nop(); }()));
        for (auto& h : hs)
            EXPECT_EQ(co_await h, 0);
    }());
    auto after = rt.stats();
    EXPECT_EQ(after.sqes_submitted - before.sqes_submitted, 32u);
    EXPECT_LE(after.enters - before.enters, 2u);
}

TEST(Runtime, MoreOperationsThanSqEntries) {
    // 8 SQ entries, 500 concurrent NOPs: the SQ fills and is flushed from get_sqe.
    Runtime rt{RuntimeOptions{}.sq_entries(8)};
    int ok = rt.block_on([]() -> Task<int> {
        std::vector<ringo::JoinHandle<int>> hs;
        for (int i = 0; i < 500; ++i)
            hs.push_back(ringo::spawn([]() -> Task<int> { co_return co_await ringo::op::nop(); }()));
        int n = 0;
        for (auto& h : hs)
            n += (co_await h == 0);
        co_return n;
    }());
    EXPECT_EQ(ok, 500);
}

TEST(Runtime, CompletionBurstLargerThanCqIsNotLost) {
    // 4 SQ / 8 CQ entries and 200 timeouts that all fire at once: the CQ overflows and
    // the kernel keeps the extra CQEs (NODROP); every one must arrive.
    Runtime rt{RuntimeOptions{}.sq_entries(4).cq_entries(8)};
    int fired = rt.block_on([]() -> Task<int> {
        std::vector<ringo::JoinHandle<int>> hs;
        for (int i = 0; i < 200; ++i)
            hs.push_back(ringo::spawn([]() -> Task<int> {
                co_return co_await ringo::op::timeout(std::chrono::milliseconds(5));
            }()));
        int n = 0;
        for (auto& h : hs)
            n += (co_await h == -ETIME);
        co_return n;
    }());
    EXPECT_EQ(fired, 200);
}

TEST(Runtime, BusyRunQueueDoesNotStarveIo) {
    // One task yields in a loop until a timer fires; the timer's completion must be
    // reaped although the run queue never empties.
    Runtime rt{RuntimeOptions{}.flush_interval(16)};
    long spins = rt.block_on([]() -> Task<long> {
        bool fired = false;
        auto timer = ringo::spawn([](bool& f) -> Task<void> {
            co_await ringo::op::timeout(std::chrono::milliseconds(1));
            f = true;
        }(fired));
        long n = 0;
        while (!fired) {
            co_await ringo::yield();
            ++n;
        }
        co_await timer;
        co_return n;
    }());
    EXPECT_GT(spins, 0);
}

TEST(Runtime, NestedBlockOnThrows) {
    Runtime rt;
    bool threw = rt.block_on([]() -> Task<bool> {
        try {
            ringo::block_on([]() -> Task<void> { co_return; }());
        } catch (const std::logic_error&) {
            co_return true;
        }
        co_return false;
    }());
    EXPECT_TRUE(threw);
}

TEST(Runtime, BlockOnFromAnotherThreadThrows) {
    Runtime rt;
    bool threw = false;
    std::thread([&] {
        try {
            rt.block_on([]() -> Task<void> { co_return; }());
        } catch (const std::logic_error&) {
            threw = true;
        }
    }).join();
    EXPECT_TRUE(threw);
}

TEST(Runtime, SequentialBlockOnsReuseTheRuntime) {
    Runtime rt;
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(rt.block_on([](int v) -> Task<int> { co_return v + co_await ringo::op::nop(); }(i)), i);
}

TEST(Runtime, DestroyWithPendingOperationsCancelsThemSafely) {
    // A detached task blocked in recv on a socket nobody writes to: destroying the runtime
    // cancels the recv, waits for its CQE and frees the frame (ASan checks the rest).
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    {
        Runtime rt;
        rt.block_on([](int fd) -> Task<void> {
            ringo::spawn([](int f) -> Task<void> {
                std::vector<char> buf(4096);
                co_await ringo::op::recv(f, buf.data(), buf.size());
                ADD_FAILURE() << "recv must not complete";
            }(fd)).detach();
            co_await ringo::yield();
        }(sv[0]));
        EXPECT_EQ(rt.stats().ops_in_flight, 1u);
    }
    ::close(sv[0]);
    ::close(sv[1]);
}

TEST(Runtime, HandleOfTaskAbandonedByRuntimeThrowsOnJoin) {
    ringo::JoinHandle<int> h;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    {
        Runtime rt;
        h = rt.block_on([](int fd) -> Task<ringo::JoinHandle<int>> {
            auto hh = ringo::spawn([](int f) -> Task<int> {
                char c;
                co_return co_await ringo::op::recv(f, &c, 1);
            }(fd));
            co_await ringo::yield();
            co_return std::move(hh);
        }(sv[0]));
    }
    EXPECT_THROW((void)h.join(), std::runtime_error);
    ::close(sv[0]);
    ::close(sv[1]);
}

} // namespace
