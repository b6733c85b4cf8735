// op/futex.hpp: futex_wait, futex_wake, futex_waitv on real futex words shared with plain
// threads that use the futex(2) system call.
#include <gtest/gtest.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;
using namespace std::chrono_literals;

namespace {

long sys_futex(std::uint32_t* addr, int op, std::uint32_t val, const timespec* ts = nullptr) {
    return ::syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

// A plain thread that wakes one waiter on `word` as soon as there is one (it retries
// FUTEX_WAKE until it reports a woken waiter), giving up after ~5 s.
std::thread waker(std::uint32_t* word, int wake_op, std::atomic<long>* woke) {
    return std::thread([=] {
        for (int i = 0; i < 5000; ++i) {
            long n = sys_futex(word, wake_op, 1);
            if (n > 0) {
                woke->store(n);
                return;
            }
            std::this_thread::sleep_for(1ms);
        }
    });
}

bool have_futex(const Runtime& rt) { return rt.supports(compat::opcode::futex_wait); }

TEST(FutexOp, WaitIsWokenByAPlainThread) {
    Runtime rt;
    if (!have_futex(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT (6.7)";
    alignas(4) std::uint32_t word = 0;
    std::atomic<long> woke{0};
    std::thread t = waker(&word, FUTEX_WAKE_PRIVATE, &woke);
    int r = rt.block_on([&]() -> Task<int> { co_return co_await op::futex_wait(&word, 0); }());
    t.join();
    EXPECT_EQ(r, 0);
    EXPECT_EQ(woke.load(), 1);
}

TEST(FutexOp, SharedWaitIsWokenByANonPrivateWake) {
    Runtime rt;
    if (!have_futex(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT (6.7)";
    alignas(4) std::uint32_t word = 0;
    std::atomic<long> woke{0};
    std::thread t = waker(&word, FUTEX_WAKE, &woke);
    int r = rt.block_on([&]() -> Task<int> {
        co_return co_await op::futex_wait(&word, 0, compat::futex2::bitset_match_any, op::futex_shared_u32);
    }());
    t.join();
    EXPECT_EQ(r, 0);
    EXPECT_EQ(woke.load(), 1);
}

TEST(FutexOp, WakeWakesAPlainThread) {
    Runtime rt;
    if (!have_futex(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAKE (6.7)";
    alignas(4) std::uint32_t word = 0;
    std::atomic<long> thread_result{1};
    std::thread t([&] {
        timespec limit{5, 0};
        thread_result.store(sys_futex(&word, FUTEX_WAIT_PRIVATE, 0, &limit) == 0 ? 0 : -errno);
    });
    int woken = rt.block_on([&]() -> Task<int> {
        for (int i = 0; i < 5000; ++i) {
            int n = co_await op::futex_wake(&word, 1);
            if (n != 0)
                co_return n;
            co_await op::timeout(1ms); // the thread is not waiting yet
        }
        co_return 0;
    }());
    t.join();
    EXPECT_EQ(woken, 1);
    EXPECT_EQ(thread_result.load(), 0);
}

TEST(FutexOp, WaitAndWakeBetweenTasks) {
    Runtime rt;
    if (!have_futex(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT (6.7)";
    alignas(4) std::uint32_t word = 0;
    rt.block_on([&]() -> Task<void> {
        auto w = ringo::spawn([](std::uint32_t* wd) -> Task<int> { co_return co_await op::futex_wait(wd, 0); }(&word));
        co_await op::nop();
        EXPECT_EQ(co_await op::futex_wake(&word, 10), 1);
        EXPECT_EQ(co_await w, 0);
        EXPECT_EQ(co_await op::futex_wake(&word, 10), 0); // nobody left
        // Masks: a wake whose mask misses the waiter's does not wake it.
        auto m =
            ringo::spawn([](std::uint32_t* wd) -> Task<int> { co_return co_await op::futex_wait(wd, 0, 0x1); }(&word));
        co_await op::nop();
        EXPECT_EQ(co_await op::futex_wake(&word, 1, 0x2), 0);
        EXPECT_EQ(co_await op::futex_wake(&word, 1, 0x1), 1);
        EXPECT_EQ(co_await m, 0);
    }());
}

TEST(FutexOp, ValueMismatchAndBadInput) {
    Runtime rt;
    if (!have_futex(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT (6.7)";
    alignas(4) std::uint32_t word = 3;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::futex_wait(&word, 4), -EAGAIN); // the word does not hold 4
        auto* bad = static_cast<const std::uint32_t*>(bad_address());
        EXPECT_EQ(co_await op::futex_wait(bad, 0), -EFAULT);
        // A private wake never touches the word (nobody can wait on it); a shared one must.
        EXPECT_EQ(co_await op::futex_wake(bad, 1), 0);
        EXPECT_EQ(co_await op::futex_wake(bad, 1, compat::futex2::bitset_match_any, op::futex_shared_u32), -EFAULT);
        EXPECT_EQ(co_await op::futex_wait(&word, 3, 0), -EINVAL);                                      // empty mask
        EXPECT_EQ(co_await op::futex_wait(&word, 3, compat::futex2::bitset_match_any, 0x40), -EINVAL); // unknown flag
        auto* misaligned = reinterpret_cast<const std::uint32_t*>(reinterpret_cast<const char*>(&word) + 1);
        EXPECT_EQ(co_await op::futex_wait(misaligned, 0), -EINVAL);
    }());
}

TEST(FutexOp, CancelAWait) {
    Runtime rt;
    if (!have_futex(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT (6.7)";
    alignas(4) std::uint32_t word = 0;
    rt.block_on([&]() -> Task<void> {
        auto fw = op::futex_wait(&word, 0);
        auto h = ringo::spawn([](op::FutexWait& f) -> Task<int> { co_return co_await f; }(fw));
        co_await op::nop();
        EXPECT_EQ(co_await op::async_cancel(op::user_data_of(fw)), 1); // futex cancel reports a count
        EXPECT_EQ(co_await h, -ECANCELED);
    }());
}

TEST(FutexOp, WaitvReportsTheWokenIndex) {
    Runtime rt;
    if (!rt.supports(compat::opcode::futex_waitv))
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAITV (6.7)";
    alignas(4) std::uint32_t words[2] = {0, 0};
    futex_waitv v[2] = {};
    for (int i = 0; i < 2; ++i) {
        v[i].val = 0;
        v[i].uaddr = reinterpret_cast<std::uint64_t>(&words[i]);
        v[i].flags = op::futex_private_u32;
    }
    std::atomic<long> woke{0};
    std::thread t = waker(&words[1], FUTEX_WAKE_PRIVATE, &woke);
    int r = rt.block_on([&]() -> Task<int> { co_return co_await op::futex_waitv(v, 2); }());
    t.join();
    EXPECT_EQ(r, 1);
    EXPECT_EQ(woke.load(), 1);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::futex_waitv(v, 0), -EINVAL);
        words[0] = 9;
        EXPECT_EQ(co_await op::futex_waitv(v, 2), -EAGAIN);
        EXPECT_EQ(co_await op::futex_waitv(static_cast<const futex_waitv*>(bad_address()), 1), -EFAULT);
    }());
}

} // namespace
