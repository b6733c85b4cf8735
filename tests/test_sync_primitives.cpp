// Mutex, ConditionVariable, Semaphore, Event, WaitGroup and Futex: semantics on one runtime,
// contention from two runtimes on two threads, plain threads, cancellation, bad input.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using ringo::Runtime;
using ringo::Task;

namespace {

template <class T>
T run(Task<T> t) {
    Runtime rt;
    return rt.block_on(std::move(t));
}

// ---------------------------------------------------------------- Mutex

TEST(Mutex, LockUnlockTryLock) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        EXPECT_FALSE(m.is_locked());
        EXPECT_EQ(co_await m.lock(), 0);
        EXPECT_TRUE(m.is_locked());
        EXPECT_FALSE(m.try_lock());
        EXPECT_EQ(m.unlock(), 0);
        EXPECT_TRUE(m.try_lock());
        EXPECT_EQ(m.unlock(), 0);
        EXPECT_FALSE(m.is_locked());
    }());
}

TEST(Mutex, UnlockingAMutexNotHeldIsEperm) {
    ringo::Mutex m;
    EXPECT_EQ(m.unlock(), -EPERM);
    EXPECT_FALSE(m.is_locked());
    EXPECT_TRUE(m.try_lock());
    EXPECT_EQ(m.unlock(), 0);
    EXPECT_EQ(m.unlock(), -EPERM);
}

TEST(Mutex, ScopedGuardUnlocks) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        {
            auto g = co_await m.scoped_lock();
            EXPECT_TRUE(g);
            EXPECT_TRUE(m.is_locked());
            auto g2 = std::move(g);
            EXPECT_FALSE(g);
            EXPECT_TRUE(g2.owns_lock());
        }
        EXPECT_FALSE(m.is_locked());
        auto g = co_await m.scoped_lock();
        g.unlock();
        EXPECT_FALSE(m.is_locked());
        g.unlock(); // empty: no effect
        EXPECT_EQ(m.unlock(), -EPERM);
    }());
}

TEST(Mutex, WaitersAcquireInArrivalOrder) {
    RINGO_FIFO_ONLY("the waiters arrive in the order their tasks run");
    auto order = run([]() -> Task<std::string> {
        ringo::Mutex m;
        std::string s;
        EXPECT_EQ(co_await m.lock(), 0);
        std::vector<ringo::JoinHandle<void>> hs;
        for (char c : std::string("abcde")) {
            hs.push_back(ringo::spawn([](ringo::Mutex& mm, std::string& out, char ch) -> Task<void> {
                EXPECT_EQ(co_await mm.lock(), 0);
                out += ch;
                co_await ringo::yield(); // hold it across a suspension
                EXPECT_EQ(mm.unlock(), 0);
            }(m, s, c)));
            co_await ringo::yield(); // each queues before the next is spawned
        }
        // A late try_lock does not barge in ahead of the queue.
        EXPECT_EQ(m.unlock(), 0);
        EXPECT_FALSE(m.try_lock());
        for (auto& h : hs)
            co_await h;
        EXPECT_FALSE(m.is_locked());
        co_return s;
    }());
    EXPECT_EQ(order, "abcde");
}

TEST(Mutex, CancelledWaiterDoesNotGetTheLock) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        EXPECT_EQ(co_await m.lock(), 0);
        auto a = ringo::spawn([](ringo::Mutex& mm) -> Task<int> { co_return co_await mm.lock(); }(m));
        auto b = ringo::spawn([](ringo::Mutex& mm) -> Task<bool> {
            auto g = co_await mm.scoped_lock();
            co_return static_cast<bool>(g);
        }(m));
        co_await ringo::yield();
        a.cancel();
        EXPECT_EQ(co_await a, -ECANCELED);
        EXPECT_TRUE(m.is_locked()); // still ours
        EXPECT_EQ(m.unlock(), 0);   // handed to b, not to the cancelled a
        EXPECT_TRUE(co_await b);
        EXPECT_FALSE(m.is_locked());
        // A cancelled scoped_lock yields an empty guard.
        EXPECT_EQ(co_await m.lock(), 0);
        auto c = ringo::spawn(
            [](ringo::Mutex& mm) -> Task<bool> { co_return static_cast<bool>(co_await mm.scoped_lock()); }(m));
        co_await ringo::yield();
        c.cancel();
        EXPECT_FALSE(co_await c);
        EXPECT_EQ(m.unlock(), 0);
        EXPECT_FALSE(m.is_locked());
    }());
}

TEST(Mutex, WithTimeoutOnLock) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        EXPECT_EQ(co_await m.lock(), 0);
        EXPECT_EQ(co_await ringo::with_timeout(m.lock(), 10ms), -ETIME);
        EXPECT_EQ(m.unlock(), 0);
        EXPECT_FALSE(m.is_locked()); // the timed-out waiter was withdrawn
    }());
}

// Tasks on two runtimes (two threads) and a plain thread increment a plain counter under
// the lock, holding it across suspensions: no increment is lost, every waiter is woken.
TEST(Mutex, ContentionFromTwoRuntimesAndAThread) {
    ringo::Mutex m;
    long counter = 0; // guarded by m
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    constexpr int tasks = 8, iters = 2000, thread_iters = 2000;
    {
        ringo::RuntimePool pool(2);
        std::vector<ringo::JoinHandle<void>> hs;
        for (int t = 0; t < tasks; ++t)
            hs.push_back(pool.spawn(
                [](ringo::Mutex& mm, long& c, std::atomic<int>& in, std::atomic<int>& ov, int n) -> Task<void> {
                    for (int i = 0; i < n; ++i) {
                        auto g = co_await mm.scoped_lock();
                        if (in.fetch_add(1) != 0)
                            ov.fetch_add(1);
                        long v = c;
                        if (i % 7 == 0)
                            co_await ringo::yield();
                        c = v + 1;
                        in.fetch_sub(1);
                    }
                }(m, counter, inside, overlaps, iters)));
        std::thread th([&] {
            for (int i = 0; i < thread_iters; ++i) {
                ASSERT_EQ(m.lock_blocking(), 0);
                if (inside.fetch_add(1) != 0)
                    overlaps.fetch_add(1);
                ++counter;
                inside.fetch_sub(1);
                ASSERT_EQ(m.unlock(), 0);
            }
        });
        th.join();
        for (auto& h : hs)
            h.join();
    }
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(counter, long(tasks) * iters + thread_iters);
    EXPECT_FALSE(m.is_locked());
}

TEST(Mutex, DestroyedWithWaitersEndsThemWithEpipe) {
    run([]() -> Task<void> {
        auto m = std::make_unique<ringo::Mutex>();
        EXPECT_EQ(co_await m->lock(), 0);
        auto w = ringo::spawn([](ringo::Mutex& mm) -> Task<int> { co_return co_await mm.lock(); }(*m));
        co_await ringo_test::let_others_run();
        m.reset();
        EXPECT_EQ(co_await w, -EPIPE);
    }());
}

TEST(Mutex, LockBlockingOnARuntimeThreadThrows) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        EXPECT_THROW(m.lock_blocking(), std::logic_error);
        co_return;
    }());
}

// ---------------------------------------------------------------- ConditionVariable

TEST(ConditionVariable, ProducerConsumerQueue) {
    auto sum = run([]() -> Task<long> {
        ringo::Mutex m;
        ringo::ConditionVariable cv;
        std::vector<int> q;
        bool done = false;
        auto consumer = ringo::spawn(
            [](ringo::Mutex& mm, ringo::ConditionVariable& c, std::vector<int>& qq, bool& d) -> Task<long> {
                long s = 0;
                auto g = co_await mm.scoped_lock();
                for (;;) {
                    EXPECT_EQ(co_await c.wait(mm, [&] { return !qq.empty() || d; }), 0);
                    EXPECT_TRUE(mm.is_locked());
                    if (qq.empty())
                        break;
                    s += qq.back();
                    qq.pop_back();
                }
                co_return s;
            }(m, cv, q, done));
        for (int i = 1; i <= 100; ++i) {
            auto g = co_await m.scoped_lock();
            q.push_back(i);
            cv.notify_one();
            if (i % 10 == 0) {
                g.unlock();
                co_await ringo::yield();
            }
        }
        {
            auto g = co_await m.scoped_lock();
            done = true;
            cv.notify_all();
        }
        co_return co_await consumer;
    }());
    EXPECT_EQ(sum, 5050);
}

TEST(ConditionVariable, NotifyOneWakesExactlyOneNotifyAllWakesTheRest) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        ringo::ConditionVariable cv;
        int woken = 0;
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < 3; ++i)
            hs.push_back(ringo::spawn([](ringo::Mutex& mm, ringo::ConditionVariable& c, int& w) -> Task<void> {
                auto g = co_await mm.scoped_lock();
                EXPECT_EQ(co_await c.wait(mm), 0);
                EXPECT_TRUE(mm.is_locked());
                ++w;
            }(m, cv, woken)));
        for (int i = 0; i < 3; ++i)
            co_await ringo::yield();
        EXPECT_FALSE(m.is_locked()); // every waiter released it
        cv.notify_one();
        for (int i = 0; i < 5; ++i)
            co_await ringo::yield();
        EXPECT_EQ(woken, 1);
        cv.notify_all();
        for (auto& h : hs)
            co_await h;
        EXPECT_EQ(woken, 3);
        EXPECT_FALSE(m.is_locked());
    }());
}

TEST(ConditionVariable, WaitWithoutTheLockIsEperm) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        ringo::ConditionVariable cv;
        EXPECT_EQ(co_await cv.wait(m), -EPERM);
        EXPECT_FALSE(m.is_locked());
    }());
}

TEST(ConditionVariable, CancelledWaitReturnsWithTheLockHeld) {
    run([]() -> Task<void> {
        ringo::Mutex m;
        ringo::ConditionVariable cv;
        auto w = ringo::spawn([](ringo::Mutex& mm, ringo::ConditionVariable& c) -> Task<int> {
            EXPECT_EQ(co_await mm.lock(), 0);
            int r = co_await c.wait(mm);
            EXPECT_TRUE(mm.is_locked());
            EXPECT_EQ(mm.unlock(), 0); // the lock is ours again
            co_return r;
        }(m, cv));
        co_await ringo_test::let_others_run();
        EXPECT_FALSE(m.is_locked());
        // Hold the mutex while cancelling: the waiter must queue for it before it resumes.
        EXPECT_EQ(co_await m.lock(), 0);
        w.cancel();
        co_await ringo_test::let_others_run();
        EXPECT_FALSE(w.is_finished());
        EXPECT_EQ(m.unlock(), 0); // handed to the cancelled waiter
        EXPECT_EQ(co_await w, -ECANCELED);
        EXPECT_FALSE(m.is_locked());
        cv.notify_all(); // nobody waits: no effect
    }());
}

TEST(ConditionVariable, NotifyFromAnotherThread) {
    ringo::Mutex m;
    ringo::ConditionVariable cv;
    std::atomic<bool> flag{false};
    std::thread t;
    int r = run([&]() -> Task<int> {
        EXPECT_EQ(co_await m.lock(), 0);
        t = std::thread([&] {
            std::this_thread::sleep_for(5ms);
            EXPECT_EQ(m.lock_blocking(), 0);
            flag = true;
            cv.notify_one();
            EXPECT_EQ(m.unlock(), 0);
        });
        int res = co_await cv.wait(m, [&] { return flag.load(); });
        EXPECT_EQ(m.unlock(), 0);
        co_return res;
    }());
    t.join();
    EXPECT_EQ(r, 0);
}

// ---------------------------------------------------------------- Semaphore

TEST(Semaphore, CountsPermits) {
    run([]() -> Task<void> {
        ringo::Semaphore s(2);
        EXPECT_EQ(s.available(), 2u);
        int entered = 0;
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < 3; ++i)
            hs.push_back(ringo::spawn([](ringo::Semaphore& sem, int& e) -> Task<void> {
                EXPECT_EQ(co_await sem.acquire(), 0);
                ++e;
            }(s, entered)));
        for (int i = 0; i < 3; ++i)
            co_await ringo::yield();
        EXPECT_EQ(entered, 2);
        EXPECT_EQ(s.available(), 0u);
        EXPECT_FALSE(s.try_acquire());
        EXPECT_EQ(s.release(), 0);
        for (auto& h : hs)
            co_await h;
        EXPECT_EQ(entered, 3);
        EXPECT_EQ(s.available(), 0u);
        EXPECT_EQ(s.release(3), 0);
        EXPECT_EQ(s.available(), 3u);
        EXPECT_EQ(co_await s.acquire(0), 0);
        EXPECT_TRUE(s.try_acquire(3));
    }());
}

TEST(Semaphore, LargeRequestIsNotStarvedAndCancelLetsOthersThrough) {
    run([]() -> Task<void> {
        ringo::Semaphore s(1);
        std::string order;
        auto big = ringo::spawn([](ringo::Semaphore& sem, std::string& o) -> Task<int> {
            int r = co_await sem.acquire(3);
            if (r == 0)
                o += 'B';
            co_return r;
        }(s, order));
        co_await ringo_test::let_others_run();
        auto small = ringo::spawn([](ringo::Semaphore& sem, std::string& o) -> Task<int> {
            int r = co_await sem.acquire(1);
            if (r == 0)
                o += 's';
            co_return r;
        }(s, order));
        co_await ringo_test::let_others_run();
        EXPECT_EQ(order, ""); // 1 permit is free, but the small request queues behind the big one
        EXPECT_FALSE(s.try_acquire(1));
        big.cancel(); // withdrawing the big request lets the small one have the free permit
        EXPECT_EQ(co_await big, -ECANCELED);
        EXPECT_EQ(co_await small, 0);
        EXPECT_EQ(order, "s");
        EXPECT_EQ(s.available(), 0u);
        // And the big request is served first when permits come back.
        auto big2 = ringo::spawn([](ringo::Semaphore& sem, std::string& o) -> Task<int> {
            int r = co_await sem.acquire(2);
            o += 'B';
            co_return r;
        }(s, order));
        co_await ringo_test::let_others_run();
        EXPECT_EQ(s.release(1), 0);
        co_await ringo_test::let_others_run();
        EXPECT_EQ(order, "s");
        EXPECT_EQ(s.release(1), 0);
        EXPECT_EQ(co_await big2, 0);
        EXPECT_EQ(order, "sB");
    }());
}

TEST(Semaphore, BadInput) {
    EXPECT_THROW(ringo::Semaphore(ringo::Semaphore::max_permits + 1), std::invalid_argument);
    ringo::Semaphore s(ringo::Semaphore::max_permits);
    EXPECT_EQ(s.release(1), -EOVERFLOW);
    EXPECT_EQ(s.available(), ringo::Semaphore::max_permits);
    run([](ringo::Semaphore& sem) -> Task<void> {
        EXPECT_EQ(co_await sem.acquire(ringo::Semaphore::max_permits + 1), -EINVAL);
    }(s));
    EXPECT_EQ(s.acquire_blocking(ringo::Semaphore::max_permits + 1), -EINVAL);
}

TEST(Semaphore, PermitsPassBetweenRuntimesAndThreads) {
    ringo::Semaphore s(0);
    std::atomic<int> got{0};
    constexpr int n = 5000;
    {
        ringo::RuntimePool pool(2);
        auto a = pool.spawn_on(0, [](ringo::Semaphore& sem, std::atomic<int>& g) -> Task<void> {
            for (int i = 0; i < n; ++i) {
                EXPECT_EQ(co_await sem.acquire(), 0);
                g.fetch_add(1);
            }
        }(s, got));
        std::thread producer([&] {
            for (int i = 0; i < n; ++i)
                EXPECT_EQ(s.release(), 0);
        });
        producer.join();
        a.join();
    }
    EXPECT_EQ(got.load(), n);
    EXPECT_EQ(s.available(), 0u);
}

// ---------------------------------------------------------------- Event

TEST(Event, SetWakesEveryWaiterResetBlocksAgain) {
    run([]() -> Task<void> {
        ringo::Event e;
        EXPECT_FALSE(e.is_set());
        int woken = 0;
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < 4; ++i)
            hs.push_back(ringo::spawn([](ringo::Event& ev, int& w) -> Task<void> {
                EXPECT_EQ(co_await ev.wait(), 0);
                ++w;
            }(e, woken)));
        for (int i = 0; i < 3; ++i)
            co_await ringo::yield();
        EXPECT_EQ(woken, 0);
        e.set();
        for (auto& h : hs)
            co_await h;
        EXPECT_EQ(woken, 4);
        EXPECT_EQ(co_await e.wait(), 0); // set: passes at once
        e.reset();
        EXPECT_EQ(co_await ringo::with_timeout(e.wait(), 5ms), -ETIME);
    }());
}

TEST(Event, CancelAndPlainThreads) {
    ringo::Event e;
    std::atomic<int> thread_state{0};
    std::thread t([&] {
        e.wait_blocking();
        thread_state = 1;
    });
    run([](ringo::Event& ev) -> Task<void> {
        auto w = ringo::spawn([](ringo::Event& ev2) -> Task<int> { co_return co_await ev2.wait(); }(ev));
        co_await ringo::yield();
        w.cancel();
        EXPECT_EQ(co_await w, -ECANCELED);
        EXPECT_FALSE(ev.is_set());
        EXPECT_THROW(ev.wait_blocking(), std::logic_error);
    }(e));
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(thread_state.load(), 0);
    e.set();
    t.join();
    EXPECT_EQ(thread_state.load(), 1);
}

TEST(Event, SetFromAnotherRuntime) {
    ringo::Event e;
    ringo::RuntimePool pool(2);
    auto waiter = pool.spawn_on(0, [](ringo::Event& ev) -> Task<int> { co_return co_await ev.wait(); }(e));
    auto setter = pool.spawn_on(1, [](ringo::Event& ev) -> Task<void> {
        co_await ringo::sleep_for(2ms);
        ev.set();
    }(e));
    setter.join();
    EXPECT_EQ(waiter.join(), 0);
}

// ---------------------------------------------------------------- WaitGroup

TEST(WaitGroup, WaitsForEveryPiece) {
    run([]() -> Task<void> {
        ringo::WaitGroup wg;
        EXPECT_EQ(co_await wg.wait(), 0); // zero: passes at once
        int done = 0;
        EXPECT_EQ(wg.add(5), 0);
        for (int i = 0; i < 5; ++i)
            ringo::spawn([](ringo::WaitGroup& g, int& d, int k) -> Task<void> {
                for (int j = 0; j < k; ++j)
                    co_await ringo::yield();
                ++d;
                EXPECT_EQ(g.done(), 0);
            }(wg, done, i))
                .detach();
        EXPECT_EQ(wg.count(), 5u);
        EXPECT_EQ(co_await wg.wait(), 0);
        EXPECT_EQ(done, 5);
        EXPECT_EQ(wg.count(), 0u);
    }());
}

TEST(WaitGroup, BadInputAndCancel) {
    ringo::WaitGroup wg;
    EXPECT_EQ(wg.done(), -EINVAL); // below zero
    EXPECT_EQ(wg.count(), 0u);
    EXPECT_EQ(wg.add(2), 0);
    EXPECT_EQ(wg.add(-3), -EINVAL);
    EXPECT_EQ(wg.count(), 2u);
    run([](ringo::WaitGroup& g) -> Task<void> {
        auto w = ringo::spawn([](ringo::WaitGroup& g2) -> Task<int> { co_return co_await g2.wait(); }(g));
        co_await ringo::yield();
        w.cancel();
        EXPECT_EQ(co_await w, -ECANCELED);
    }(wg));
    std::thread t([&] { wg.wait_blocking(); });
    EXPECT_EQ(wg.add(-2), 0);
    t.join();
}

// ---------------------------------------------------------------- Futex

bool futex_ops_supported() {
    Runtime rt;
    return rt.supports(ringo::uring::compat::opcode::futex_wait) &&
           rt.supports(ringo::uring::compat::opcode::futex_wake);
}

TEST(Futex, TaskWaitsThreadWakesWithTheSystemCall) {
    if (!futex_ops_supported())
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT/WAKE (6.7)";
    ringo::Futex f(0);
    std::atomic<bool> about_to_wait{false};
    std::atomic<int> woken_by_thread{-1};
    std::thread t([&] {
        while (!about_to_wait.load())
            std::this_thread::yield();
        std::this_thread::sleep_for(10ms); // the task's FUTEX_WAIT is in the kernel by now
        f.store(1);
        woken_by_thread = f.wake(1);
    });
    int r = run([&]() -> Task<int> {
        about_to_wait = true;
        int res = co_await f.wait(0);
        co_return res;
    }());
    t.join();
    EXPECT_EQ(r, 0);
    EXPECT_EQ(woken_by_thread.load(), 1); // futex(2) found the task's io_uring wait
    EXPECT_EQ(f.load(), 1u);
}

TEST(Futex, ThreadWaitsInTheSystemCallTaskWakesThroughTheRing) {
    if (!futex_ops_supported())
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT/WAKE (6.7)";
    ringo::Futex f(0);
    std::atomic<bool> asleep{false};
    std::atomic<int> thread_res{1};
    std::thread t([&] {
        asleep = true;
        int r = 0;
        while (f.load() == 0)
            r = f.wait_blocking(0);
        thread_res = r;
    });
    int woken = run([&]() -> Task<int> {
        while (!asleep.load())
            co_await ringo::yield();
        co_await ringo::sleep_for(10ms); // let it sleep in futex(2)
        f.store(1);
        co_return co_await f.wake_async(1);
    }());
    t.join();
    EXPECT_EQ(woken, 1); // the ring's wake found the thread asleep in futex(2)
    EXPECT_EQ(thread_res.load(), 0);
}

TEST(Futex, MismatchTimeoutAndCancel) {
    ringo::Futex f(5);
    EXPECT_EQ(f.wait_blocking(4), -EAGAIN);
    EXPECT_EQ(f.wait_blocking_for(5, 2ms), -ETIMEDOUT);
    EXPECT_EQ(f.wake(), 0); // nobody waits
    if (!futex_ops_supported())
        GTEST_SKIP() << "kernel lacks IORING_OP_FUTEX_WAIT/WAKE (6.7)";
    run([](ringo::Futex& fx) -> Task<void> {
        EXPECT_EQ(co_await fx.wait(4), -EAGAIN);
        EXPECT_EQ(co_await ringo::with_timeout(fx.wait(5), 5ms), -ETIME);
        EXPECT_EQ(co_await fx.wake_async(1), 0);
    }(f));
}

} // namespace
