#include <ringo/core/runtime_pool.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "helpers.hpp"

using ringo::JoinHandle;
using ringo::Runtime;
using ringo::RuntimePool;
using ringo::Task;

namespace {

Task<std::thread::id> thread_id() { co_return std::this_thread::get_id(); }

Task<Runtime*> where() { co_return Runtime::current(); }

// The kernel's id of the calling thread. std::this_thread::get_id() is
// pthread_self(), which glibc declares const: Clang may compute it once and
// reuse it across a co_await that moved the coroutine to another thread.
// A system call cannot be folded that way.
pid_t os_thread() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

struct SocketPair {
    int fd[2] = {-1, -1};
    SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
    ~SocketPair() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
};

TEST(RuntimePool, ZeroThreadsIsAnError) {
    try {
        RuntimePool pool(0);
        FAIL() << "a pool of 0 threads was created";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("at least one thread"), std::string::npos) << e.what();
    }
}

TEST(RuntimePool, SizeAndRuntimesAreDistinct) {
    RuntimePool pool(3);
    ASSERT_EQ(pool.size(), 3u);
    std::set<Runtime*> rts;
    for (std::size_t i = 0; i < pool.size(); ++i) {
        rts.insert(&pool.runtime(i));
        EXPECT_EQ(pool.index_of(&pool.runtime(i)), i);
    }
    EXPECT_EQ(rts.size(), 3u);
    EXPECT_THROW((void)pool.runtime(3), std::out_of_range);
    EXPECT_EQ(pool.current_index(), pool.size()); // the test thread is not a pool thread
}

TEST(RuntimePool, RoundRobinPlacesTasksOnEveryThread) {
    RuntimePool pool(2);
    std::vector<JoinHandle<Runtime*>> hs;
    for (int i = 0; i < 6; ++i)
        hs.push_back(pool.spawn(where()));
    std::vector<Runtime*> got;
    for (auto& h : hs)
        got.push_back(h.join());
    // Consecutive spawns alternate between the two runtimes.
    for (std::size_t i = 0; i + 1 < got.size(); ++i)
        EXPECT_NE(got[i], got[i + 1]) << i;
    EXPECT_EQ(got[0], got[2]);
    EXPECT_EQ(got[1], got[3]);
    // And they run on two different threads, neither of them this one.
    auto a = pool.spawn_on(0, thread_id()).join();
    auto b = pool.spawn_on(1, thread_id()).join();
    EXPECT_NE(a, b);
    EXPECT_NE(a, std::this_thread::get_id());
    EXPECT_NE(b, std::this_thread::get_id());
}

TEST(RuntimePool, SpawnOnAndJoinFromPlainThread) {
    RuntimePool pool(2);
    Runtime& r1 = pool.runtime(1);
    auto h = ringo::spawn_on(r1, []() -> Task<int> {
        co_await ringo::op::nop();
        co_return Runtime::current() == nullptr ? -1 : 42;
    }());
    EXPECT_EQ(h.join(), 42);
    EXPECT_EQ(pool.spawn_on(1, where()).join(), &r1);
    EXPECT_THROW((void)pool.spawn_on(2, where()), std::out_of_range);
}

TEST(RuntimePool, SwitchToLandsOnTheOtherThreadAndBack) {
    RuntimePool pool(2);
    Runtime* r0 = &pool.runtime(0);
    Runtime* r1 = &pool.runtime(1);
    struct Seen {
        pid_t t0, t1, t2;
        Runtime *a, *b, *c;
        int nop_on_b;
    };
    auto h = pool.spawn_on(0, [](Runtime* r0, Runtime* r1) -> Task<Seen> {
        Seen s{};
        s.t0 = os_thread();
        s.a = Runtime::current();
        co_await ringo::switch_to(*r1);
        s.t1 = os_thread();
        s.b = Runtime::current();
        s.nop_on_b = co_await ringo::op::nop(); // I/O on the new runtime's ring
        co_await ringo::switch_to(*r1);         // the current runtime: no-op
        co_await ringo::switch_to(*r0);
        s.t2 = os_thread();
        s.c = Runtime::current();
        co_return s;
    }(r0, r1));
    Seen s = h.join();
    EXPECT_EQ(s.a, r0);
    EXPECT_EQ(s.b, r1);
    EXPECT_EQ(s.c, r0);
    EXPECT_NE(s.t0, s.t1);
    EXPECT_EQ(s.t0, s.t2);
    EXPECT_EQ(s.nop_on_b, 0);
    auto st = pool.stats();
    EXPECT_EQ(st[1].tasks_migrated_in, 1u);
    EXPECT_EQ(st[0].tasks_migrated_in, 1u);
}

TEST(RuntimePool, SwitchToFromNestedTaskMovesTheWholeTask) {
    RuntimePool pool(2);
    Runtime* r1 = &pool.runtime(1);
    auto h = pool.spawn_on(0, [](Runtime* r1) -> Task<bool> {
        auto inner = [](Runtime* r) -> Task<Runtime*> {
            co_await ringo::switch_to(*r);
            co_return Runtime::current();
        };
        Runtime* in = co_await inner(r1);
        co_return in == r1&& Runtime::current() == r1; // the caller continues on r1 too
    }(r1));
    EXPECT_TRUE(h.join());
}

TEST(RuntimePool, JoinerOnTheOldRuntimeIsResumedOnItsOwnThread) {
    RuntimePool pool(2);
    Runtime* r0 = &pool.runtime(0);
    Runtime* r1 = &pool.runtime(1);
    auto h = pool.spawn_on(0, [](Runtime* r0, Runtime* r1) -> Task<bool> {
        auto child = ringo::spawn([](Runtime* r1) -> Task<Runtime*> {
            co_await ringo::switch_to(*r1);
            co_await ringo::op::nop();
            co_return Runtime::current();
        }(r1));
        Runtime* finished_on = co_await child;
        co_return finished_on == r1&& Runtime::current() == r0;
    }(r0, r1));
    EXPECT_TRUE(h.join());
}

TEST(RuntimePool, SwitchToMisuseThrows) {
    RuntimePool pool(2);
    Runtime* r1 = &pool.runtime(1);
    // From a block_on root (not a spawned task).
    Runtime local;
    bool threw = local.block_on([](Runtime* r1) -> Task<bool> {
        try {
            co_await ringo::switch_to(*r1);
        } catch (const std::logic_error&) {
            co_return true;
        }
        co_return false;
    }(r1));
    EXPECT_TRUE(threw);
    // Inside with_timeout (a branch whose timer lives on this runtime).
    auto h = pool.spawn_on(0, [](Runtime* r1) -> Task<bool> {
        bool t = false;
        try {
            co_await ringo::with_timeout([](Runtime* r) -> Task<void> { co_await ringo::switch_to(*r); }(r1),
                                         std::chrono::seconds(5));
        } catch (const std::logic_error&) {
            t = true;
        }
        co_return t&& Runtime::current() != r1;
    }(r1));
    EXPECT_TRUE(h.join());
}

TEST(RuntimePool, ManyTasksAcrossThePoolAllComplete) {
    RINGO_IO_URING_ONLY("msg_ring wake-ups between runtimes");
    RuntimePool pool(2);
    constexpr int n = 100'000;
    std::atomic<long> sum{0};
    auto driver = pool.spawn_on(0, [](RuntimePool& p, std::atomic<long>& sum) -> Task<long> {
        std::vector<JoinHandle<int>> hs;
        hs.reserve(1000);
        long joined = 0;
        for (int i = 0; i < n; ++i) {
            hs.push_back(p.spawn([](int v, std::atomic<long>& s) -> Task<int> {
                s.fetch_add(v, std::memory_order_relaxed);
                co_return v;
            }(i, sum)));
            if (hs.size() == 1000) {
                for (auto& h : hs)
                    joined += co_await h;
                hs.clear();
            }
        }
        for (auto& h : hs)
            joined += co_await h;
        co_return joined;
    }(pool, sum));
    long expect = long(n) * (n - 1) / 2;
    EXPECT_EQ(driver.join(), expect);
    EXPECT_EQ(sum.load(), expect);
    auto st = pool.stats();
    EXPECT_GE(st[0].tasks_spawned + st[1].tasks_spawned, std::uint64_t(n));
    EXPECT_GT(st[1].remote_items, 0u);
    // Runtime 1 was woken by its peer's ring (MSG_RING SQEs), not by system calls.
    EXPECT_GT(st[1].wakeups_by_sqe, 0u);
    EXPECT_LE(st[1].wakeups, st[1].remote_items);
}

TEST(RuntimePool, WakeUpsFromPlainThreadsAreSystemCallsAndCounted) {
    RuntimePool pool(1);
    auto before = pool.stats()[0];
    for (int i = 0; i < 20; ++i) {
        pool.spawn(where()).join(); // the runtime sleeps between two spawns: one wake-up each
    }
    auto after = pool.stats()[0];
    EXPECT_GE(after.wakeups - before.wakeups, 20u);
    EXPECT_EQ(after.wakeups_by_sqe, before.wakeups_by_sqe); // no peer ring sent any
    EXPECT_GE(after.remote_items - before.remote_items, 20u);
    // Every task has ended: the pool's count drops back to 0 (the last decrement may land
    // just after join() returned).
    for (int i = 0; i < 1000 && pool.live_tasks() != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(pool.live_tasks(), 0);
}

// `by_flag`: the NOP is drained through with_sqe_flags(IOSQE_IO_DRAIN) itself, not drain().
void drained_operation_does_not_hold_back_wake_ups(bool by_flag) {
    // Runtime 0 has a recv pending and then a drained NOP, which the kernel defers until the
    // recv completes, and with it every later SQE of that ring. A task then moves to the
    // sleeping runtime 1: its wake-up must not be one of those deferred SQEs.
    RuntimePool pool(2);
    SocketPair sp;
    auto blocker = pool.spawn_on(0, [](int fd) -> Task<int> {
        char c;
        co_return co_await ringo::op::recv(fd, &c, 1);
    }(sp.fd[0]));
    auto mover = pool.spawn_on(0, [](Runtime* r1, bool by_flag) -> Task<int> {
        auto drained = ringo::spawn([](bool flag) -> Task<int> {
            if (flag)
                co_return co_await ringo::op::nop().with_sqe_flags(ringo::uring::compat::sqe_flag::io_drain);
            co_return co_await ringo::drain(ringo::op::nop());
        }(by_flag));
        co_await ringo::yield(); // the drained NOP is prepared
        co_await ringo::switch_to(*r1);
        int on_r1 = Runtime::current() == r1;
        co_await ringo::switch_to(*r1); // no-op; keeps the handle's task alive until joined
        drained.detach();
        co_return on_r1;
    }(&pool.runtime(1), by_flag));
    for (int i = 0; i < 2000 && !mover.is_finished(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(mover.is_finished()) << "the wake-up was held back behind the drained NOP";
    ASSERT_EQ(::send(sp.fd[1], "x", 1, 0), 1); // lets the recv, then the drain, complete
    EXPECT_EQ(blocker.join(), 1);
    EXPECT_EQ(mover.join(), 1);
}

TEST(RuntimePool, DrainedOperationDoesNotHoldBackWakeUps) { drained_operation_does_not_hold_back_wake_ups(false); }

TEST(RuntimePool, OperationDrainedByItsOwnFlagDoesNotHoldBackWakeUps) {
    drained_operation_does_not_hold_back_wake_ups(true);
}

TEST(RuntimePool, CrossThreadCancelOfTaskOnAnotherRuntime) {
    RuntimePool pool(2);
    SocketPair sp;
    auto victim = pool.spawn_on(1, [](int fd) -> Task<int> {
        char c;
        co_return co_await ringo::op::recv(fd, &c, 1); // nobody writes
    }(sp.fd[0]));
    auto canceller = pool.spawn_on(0, [](JoinHandle<int>& v) -> Task<int> {
        co_await ringo::sleep_for(std::chrono::milliseconds(5));
        v.cancel(); // from runtime 0's thread: a message to runtime 1
        co_return co_await v;
    }(victim));
    EXPECT_EQ(canceller.join(), -ECANCELED);
}

TEST(RuntimePool, ManyTasksMoveBackAndForth) {
    // 2 000 tasks on a pool of 3, each hopping 20 times between random runtimes with an
    // operation on each; every one ends on the runtime it last moved to, and the pool's
    // accounting (registries, live count) stays exact.
    RuntimePool pool(3);
    std::vector<JoinHandle<int>> hs;
    for (int i = 0; i < 2000; ++i)
        hs.push_back(pool.spawn([](RuntimePool& p, unsigned seed) -> Task<int> {
            int ok = 0;
            for (int hop = 0; hop < 20; ++hop) {
                seed = seed * 1103515245u + 12345u;
                Runtime& to = p.runtime((seed >> 16) % p.size());
                co_await ringo::switch_to(to);
                ok += Runtime::current() == &to && co_await ringo::op::nop() == 0;
            }
            co_return ok;
        }(pool, static_cast<unsigned>(i))));
    long total = 0;
    for (auto& h : hs)
        total += h.join();
    EXPECT_EQ(total, 2000 * 20);
    auto st = pool.stats();
    std::uint64_t moved = 0;
    for (auto& s : st)
        moved += s.tasks_migrated_in;
    EXPECT_GT(moved, 2000u * 20 / 2); // about 2/3 of the hops change runtime
    EXPECT_LE(moved, 2000u * 20);
    pool.shutdown();
    EXPECT_EQ(pool.live_tasks(), 0);
}

TEST(RuntimePool, CancelWhileInTransitIsNotLost) {
    // The task moves back and forth between the runtimes; a plain thread cancels it at an
    // arbitrary moment (often while it is between rings). It must end, cancelled.
    RuntimePool pool(2);
    for (int round = 0; round < 200; ++round) {
        auto h = pool.spawn_on(0, [](Runtime* a, Runtime* b) -> Task<long> {
            long moves = 0;
            for (;;) {
                co_await ringo::switch_to(moves % 2 ? *a : *b);
                ++moves;
                if (co_await ringo::cancellation_requested())
                    co_return moves;
                if (co_await ringo::op::nop() == -ECANCELED)
                    co_return moves;
            }
        }(&pool.runtime(0), &pool.runtime(1)));
        std::this_thread::sleep_for(std::chrono::microseconds(round % 50));
        h.cancel();
        EXPECT_GE(h.join(), 0);
    }
}

TEST(RuntimePool, GracefulShutdownWaitsForEveryTask) {
    std::atomic<int> done{0};
    {
        RuntimePool pool(2);
        for (int i = 0; i < 20; ++i)
            pool.spawn([](std::atomic<int>& d, int i) -> Task<void> {
                    co_await ringo::sleep_for(std::chrono::milliseconds(10 + i));
                    // A child spawned late on this runtime is waited for too.
                    ringo::spawn([](std::atomic<int>& d) -> Task<void> {
                        co_await ringo::sleep_for(std::chrono::milliseconds(5));
                        d.fetch_add(1);
                    }(d))
                        .detach();
                    d.fetch_add(1);
                }(done, i))
                .detach();
        pool.shutdown();
        EXPECT_EQ(done.load(), 40);
        EXPECT_EQ(pool.live_tasks(), 0);
        EXPECT_FALSE(pool.accepting());
        EXPECT_THROW((void)pool.runtime(0), std::logic_error);
    } // the destructor after shutdown does nothing more
}

TEST(RuntimePool, SpawnAfterShutdownThrows) {
    RuntimePool pool(2);
    pool.shutdown();
    EXPECT_THROW((void)pool.spawn(where()), std::logic_error);
    EXPECT_THROW((void)pool.spawn_on(0, where()), std::logic_error);
    pool.shutdown(); // idempotent
    pool.shutdown_now();
}

TEST(RuntimePool, ShutdownNowCancelsTasksWaitingOnIo) {
    SocketPair a, b;
    std::atomic<int> cancelled{0};
    auto t0 = std::chrono::steady_clock::now();
    JoinHandle<int> joined;
    {
        RuntimePool pool(2);
        for (int i = 0; i < 8; ++i) {
            int fd = (i % 2 ? a : b).fd[0];
            pool.spawn([](int fd, std::atomic<int>& c) -> Task<void> {
                    char buf[16];
                    if (co_await ringo::op::recv(fd, buf, sizeof buf) == -ECANCELED)
                        c.fetch_add(1);
                }(fd, cancelled))
                .detach();
            pool.spawn([](std::atomic<int>& c, int i) -> Task<void> {
                    // A user-space timer, or a kernel timeout, of an hour.
                    int r = i % 4 < 2 ? co_await ringo::sleep_for(std::chrono::hours(1))
                                      : co_await ringo::op::timeout(std::chrono::hours(1));
                    if (r == -ECANCELED)
                        c.fetch_add(1);
                }(cancelled, i))
                .detach();
        }
        // One held by a JoinHandle: joined after the pool is gone, it gives its value.
        joined = pool.spawn([](int fd) -> Task<int> {
            char c;
            co_return co_await ringo::op::recv(fd, &c, 1);
        }(a.fd[0]));
        // And one moving between runtimes while the pool shuts down.
        pool.spawn([](Runtime* x, Runtime* y) -> Task<void> {
                for (long i = 0;; ++i) {
                    co_await ringo::switch_to(i % 2 ? *x : *y);
                    if (co_await ringo::sleep_for(std::chrono::microseconds(50)) == -ECANCELED)
                        co_return;
                }
            }(&pool.runtime(0), &pool.runtime(1)))
            .detach();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        EXPECT_EQ(pool.live_tasks(), 18);
        pool.shutdown_now();
        EXPECT_EQ(pool.live_tasks(), 0);
    }
    EXPECT_EQ(cancelled.load(), 16);
    EXPECT_EQ(joined.join(), -ECANCELED);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(RuntimePool, ShutdownForCancelsAfterTheGracePeriod) {
    SocketPair sp;
    RuntimePool pool(2);
    auto quick = pool.spawn([]() -> Task<int> {
        co_await ringo::sleep_for(std::chrono::milliseconds(1));
        co_return 7;
    }());
    auto stuck = pool.spawn([](int fd) -> Task<int> {
        char c;
        co_return co_await ringo::op::recv(fd, &c, 1);
    }(sp.fd[0]));
    EXPECT_FALSE(pool.shutdown_for(std::chrono::milliseconds(50)));
    EXPECT_EQ(quick.join(), 7);
    EXPECT_EQ(stuck.join(), -ECANCELED);
}

TEST(RuntimePool, ShutdownForReturnsAsTheLastTaskEnds) {
    // The pool sleeps on a futex word until its last task ends: the task's end must wake it,
    // long before the grace period would.
    RuntimePool pool(2);
    for (int i = 0; i < 4; ++i)
        pool.spawn([](int i) -> Task<void> { co_await ringo::sleep_for(std::chrono::milliseconds(20 + 10 * i)); }(i))
            .detach();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(pool.shutdown_for(std::chrono::seconds(60)));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
    EXPECT_EQ(pool.live_tasks(), 0);
}

TEST(RuntimePool, ShutdownFromAPoolThreadThrows) {
    RuntimePool pool(1);
    auto h = pool.spawn([](RuntimePool& p) -> Task<bool> {
        try {
            p.shutdown();
        } catch (const std::logic_error&) {
            co_return true;
        }
        co_return false;
    }(pool));
    EXPECT_TRUE(h.join());
}

TEST(RuntimePool, ShutdownHooksRunFirst) {
    RuntimePool pool(2);
    SocketPair sp;
    auto loop = pool.spawn([](int fd) -> Task<int> {
        char c;
        co_return co_await ringo::op::recv(fd, &c, 1);
    }(sp.fd[0]));
    // The hook stops the task that would otherwise keep a graceful shutdown waiting.
    auto id = pool.add_shutdown_hook([&] { loop.cancel(); });
    auto unused = pool.add_shutdown_hook([] { ADD_FAILURE() << "a removed hook ran"; });
    pool.remove_shutdown_hook(unused);
    pool.shutdown();
    EXPECT_EQ(loop.join(), -ECANCELED);
    pool.remove_shutdown_hook(id);
}

TEST(RuntimePool, PinnedThreadsAndPerRuntimeOptions) {
    std::vector<unsigned> asked;
    RuntimePool pool(2, ringo::PoolOptions{}.pin_threads().runtime_for(
                            [](std::size_t i) { return ringo::RuntimeOptions{}.sq_entries(i == 0 ? 64 : 128); }));
    auto cpu_of = []() -> Task<int> { co_return ::sched_getcpu(); };
    int c0 = pool.spawn_on(0, cpu_of()).join();
    int c1 = pool.spawn_on(1, cpu_of()).join();
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
    if (CPU_COUNT(&set) >= 2) {
        EXPECT_NE(c0, c1);
    }
    EXPECT_EQ(ringo_test::ring_of(pool.runtime(0)).sq_entries(), 64u);
    EXPECT_EQ(ringo_test::ring_of(pool.runtime(1)).sq_entries(), 128u);
}

TEST(RuntimePool, SpawnFromInsideThePoolAndAwaitAcrossRuntimes) {
    RuntimePool pool(2);
    auto h = pool.spawn_on(0, [](RuntimePool& p) -> Task<int> {
        auto other = p.spawn_on(1, []() -> Task<int> {
            co_await ringo::op::nop();
            co_return 5;
        }());
        co_return co_await other + 1;
    }(pool));
    EXPECT_EQ(h.join(), 6);
}

} // namespace
