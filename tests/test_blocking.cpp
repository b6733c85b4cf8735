// spawn_blocking: results and exceptions, the pool's bound and FIFO order, the runtime running
// on while a job blocks, RuntimePool runtimes, cancellation, a runtime destroyed while a job
// runs, the eventfd wait of kernels without FUTEX_WAIT, and process exit with jobs running.
#include <ringo/compose/cancel.hpp>
#include <ringo/core/blocking.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "alloc_counter.hpp" // replaces operator new (not under TSan, whose runtime has its own)
#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::Task;

/// Sets the pool's options for one test and puts the previous ones back.
struct PoolOptionsScope {
    ringo::BlockingPoolOptions saved = ringo::blocking_pool_options();
    explicit PoolOptionsScope(ringo::BlockingPoolOptions o) { ringo::set_blocking_pool_options(o); }
    ~PoolOptionsScope() { ringo::set_blocking_pool_options(saved); }
};

/// Polls `cond` until it holds or 10 s have passed.
template <class Cond>
bool eventually(Cond cond) {
    auto end = std::chrono::steady_clock::now() + 10s;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > end)
            return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

TEST(Blocking, ValueComesBack) {
    ringo::Runtime rt;
    auto caller = std::this_thread::get_id();
    std::thread::id ran_on;
    std::string s = rt.block_on([&]() -> Task<std::string> {
        auto v = co_await ringo::spawn_blocking([&] {
            ran_on = std::this_thread::get_id();
            return std::string(1000, 'x');
        });
        EXPECT_EQ(std::this_thread::get_id(), caller); // resumed on the runtime's thread
        co_return v;
    }());
    EXPECT_EQ(s, std::string(1000, 'x'));
    EXPECT_NE(ran_on, caller);
}

TEST(Blocking, VoidAndMoveOnlyResults) {
    ringo::Runtime rt;
    int n = rt.block_on([]() -> Task<int> {
        int x = 0;
        co_await ringo::spawn_blocking([&x] { x = 5; });
        auto give = [p = std::make_unique<int>(7)]() mutable { return std::move(p); };
        auto q = co_await ringo::spawn_blocking(std::move(give));
        co_return x + *q;
    }());
    EXPECT_EQ(n, 12);
}

TEST(Blocking, ExceptionIsRethrown) {
    ringo::Runtime rt;
    std::string what = rt.block_on([]() -> Task<std::string> {
        try {
            co_await ringo::spawn_blocking([]() -> int { throw std::runtime_error("from the pool"); });
        } catch (const std::runtime_error& e) {
            co_return e.what();
        }
        co_return "nothing thrown";
    }());
    EXPECT_EQ(what, "from the pool");
}

TEST(Blocking, AwaitedOutsideARuntimeThrowsLogicError) {
    // A coroutine not driven by a runtime: the await refuses and f never runs.
    struct Eager {
        struct promise_type {
            Eager get_return_object() { return {}; }
            std::suspend_never initial_suspend() noexcept { return {}; }
            std::suspend_never final_suspend() noexcept { return {}; }
            void return_void() {}
            void unhandled_exception() { std::terminate(); }
        };
    };
    bool ran = false, threw = false;
    [&]() -> Eager {
        try {
            co_await ringo::spawn_blocking([&] { ran = true; });
        } catch (const std::logic_error&) {
            threw = true;
        }
    }();
    EXPECT_TRUE(threw);
    EXPECT_FALSE(ran);
}

TEST(Blocking, AtMostMaxThreadsRunAndAllComplete) {
    PoolOptionsScope scope({.max_threads = 2, .keep_alive = 10s});
    std::atomic<int> running{0}, most{0}, done{0};
    // (A lambda coroutine's captures live in the closure, which must outlive the task: the
    // spawned bodies are named closures that live through block_on.)
    auto one = [&](int i) -> Task<int> {
        co_return co_await ringo::spawn_blocking([&, i] {
            int now = running.fetch_add(1) + 1;
            int m = most.load();
            while (now > m && !most.compare_exchange_weak(m, now)) {
            }
            std::this_thread::sleep_for(1ms);
            running.fetch_sub(1);
            done.fetch_add(1);
            return i;
        });
    };
    ringo::Runtime rt;
    rt.block_on([&]() -> Task<void> {
        std::vector<ringo::JoinHandle<int>> hs;
        for (int i = 0; i < 100; ++i)
            hs.push_back(ringo::spawn(one(i)));
        for (int i = 0; i < 100; ++i)
            EXPECT_EQ(co_await hs[i], i);
    }());
    EXPECT_EQ(done.load(), 100);
    EXPECT_GE(most.load(), 1);
    EXPECT_LE(most.load(), 2);
    EXPECT_LE(ringo::blocking_pool_stats().threads, 2u);
}

TEST(Blocking, JobsStartInFifoOrder) {
    RINGO_FIFO_ONLY("the jobs are handed to the pool in the order their tasks run");
    PoolOptionsScope scope({.max_threads = 1, .keep_alive = 10s});
    std::mutex m;
    std::vector<int> order;
    auto one = [&](int i) -> Task<void> {
        co_await ringo::spawn_blocking([&, i] {
            std::lock_guard lk(m);
            order.push_back(i);
        });
    };
    ringo::Runtime rt;
    rt.block_on([&]() -> Task<void> {
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < 20; ++i)
            hs.push_back(ringo::spawn(one(i)));
        for (auto& h : hs)
            co_await h;
    }());
    ASSERT_EQ(order.size(), 20u);
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(order[i], i);
}

TEST(Blocking, RuntimeRunsOtherTasksWhileAJobBlocks) {
    // The job blocks until a task on the same runtime has made progress (timer ticks and
    // yields): it could not if the runtime were stalled by the job.
    ringo::Runtime rt;
    std::atomic<int> ticks{0};
    auto tick = [&]() -> Task<void> {
        for (int i = 0; i < 10; ++i) {
            co_await ringo::sleep_for(1ms);
            co_await ringo::yield();
            ticks.fetch_add(1);
        }
    };
    bool saw_progress = rt.block_on([&]() -> Task<bool> {
        auto ticker = ringo::spawn(tick());
        bool ok = co_await ringo::spawn_blocking([&] {
            auto end = std::chrono::steady_clock::now() + 10s;
            while (ticks.load() < 10)
                if (std::chrono::steady_clock::now() > end)
                    return false;
                else
                    std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(100ms);
            return true;
        });
        co_await ticker;
        co_return ok;
    }());
    EXPECT_TRUE(saw_progress);
    EXPECT_EQ(ticks.load(), 10);
}

TEST(Blocking, AwaitedFromBothRuntimesOfAPool) {
    ringo::RuntimePool pool(2);
    auto on_runtime = [&](std::size_t i) -> Task<bool> {
        auto before = std::this_thread::get_id();
        auto pool_thread = co_await ringo::spawn_blocking([] { return std::this_thread::get_id(); });
        bool same_thread = std::this_thread::get_id() == before;
        co_return same_thread&& pool_thread != before&& pool.current_index() == i;
    };
    auto a = pool.spawn_on(0, on_runtime(0));
    auto b = pool.spawn_on(1, on_runtime(1));
    EXPECT_TRUE(a.join());
    EXPECT_TRUE(b.join());
}

/// A job that notes when it starts and when it ends, and sleeps in between.
struct Watched {
    std::atomic<bool> started{false}, ended{false};
    auto job(std::chrono::milliseconds d, int v) {
        return [this, d, v] {
            started = true;
            std::this_thread::sleep_for(d);
            ended = true;
            return v;
        };
    }
    Task<void> until_started() {
        while (!started)
            co_await ringo::sleep_for(1ms);
    }
};

TEST(Blocking, CancelledWhileRunningWaitsForTheJob) {
    ringo::Runtime rt;
    Watched w;
    auto body = [&]() -> Task<int> {
        int v = co_await ringo::spawn_blocking(w.job(100ms, 7));
        EXPECT_TRUE(w.ended.load());                      // resumed only after the job
        EXPECT_EQ(co_await ringo::op::nop(), -ECANCELED); // the task is cancelled
        co_return v;
    };
    rt.block_on([&]() -> Task<void> {
        auto h = ringo::spawn(body());
        co_await w.until_started();
        h.cancel();
        EXPECT_FALSE(w.ended.load());
        EXPECT_EQ(co_await h, 7); // the job's result, not an error
    }());
    EXPECT_TRUE(w.ended.load());
}

TEST(Blocking, PoolShutdownNowWaitsForTheJob) {
    // shutdown_now cancels every task of the pool; one awaiting a blocking call still waits
    // for it, and ends with its result before its runtime goes.
    Watched w;
    auto body = [&]() -> Task<int> { co_return co_await ringo::spawn_blocking(w.job(100ms, 9)); };
    ringo::JoinHandle<int> h;
    {
        ringo::RuntimePool pool(1);
        h = pool.spawn_on(0, body());
        ASSERT_TRUE(eventually([&] { return w.started.load(); }));
        pool.shutdown_now();
        EXPECT_TRUE(w.ended.load());
    }
    EXPECT_EQ(h.join(), 9);
}

TEST(Blocking, AlreadyCancelledTaskIsRefused) {
    ringo::Runtime rt;
    std::atomic<bool> ran{false};
    auto body = [&]() -> Task<int> {
        co_await ringo::sleep_for(10s); // cancelled here
        try {
            co_await ringo::spawn_blocking([&] { ran = true; });
        } catch (const std::system_error& e) {
            co_return e.code().value();
        }
        co_return 0;
    };
    int code = rt.block_on([&]() -> Task<int> {
        auto h = ringo::spawn(body());
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    }());
    EXPECT_EQ(code, ECANCELED);
    EXPECT_FALSE(ran.load());
}

TEST(Blocking, ShieldedRunsInACancelledTask) {
    // Cleanup that must block (a synchronous flush): shielded() runs it in a cancelled task.
    ringo::Runtime rt;
    std::atomic<bool> ran{false};
    auto body = [&]() -> Task<int> {
        co_await ringo::sleep_for(10s); // cancelled here
        co_return co_await ringo::shielded(ringo::spawn_blocking([&] {
            ran = true;
            return 4;
        }));
    };
    int v = rt.block_on([&]() -> Task<int> {
        auto h = ringo::spawn(body());
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    }());
    EXPECT_EQ(v, 4);
    EXPECT_TRUE(ran.load());
}

TEST(Blocking, WaitSurvivesAnAsyncCancelOfEverything) {
    // An ASYNC_CANCEL that matches every request of the ring ends the ring's wait for the job
    // early; the awaiter waits again and still resumes after the job with its result.
    ringo::Runtime rt;
    Watched w;
    auto body = [&]() -> Task<bool> {
        int v = co_await ringo::spawn_blocking(w.job(50ms, 3));
        co_return v == 3 && w.ended.load();
    };
    bool ok = rt.block_on([&]() -> Task<bool> {
        auto h = ringo::spawn(body());
        co_await w.until_started();
        co_await ringo::sleep_for(5ms); // the wait is armed by now
        int n = co_await ringo::op::async_cancel_any();
        EXPECT_GE(n, 0); // it found the wait (the only request in flight)
        co_return co_await h;
    }());
    EXPECT_TRUE(ok);
}

/// Counts the results made and destroyed: a discarded result is still destroyed.
struct Tracked {
    static inline std::atomic<int> alive{0};
    std::unique_ptr<std::string> payload = std::make_unique<std::string>(500, 'p');
    Tracked() { ++alive; }
    Tracked(Tracked&& o) noexcept : payload(std::move(o.payload)) { ++alive; }
    ~Tracked() { --alive; }
};

TEST(Blocking, RuntimeDestroyedWhileAJobRuns) {
    // A detached task and a task whose handle outlives the runtime both await a 200 ms job
    // when the runtime goes: its shutdown cancels their waits; the jobs finish later on
    // their own, their results are destroyed and nothing leaks (ASan) or is touched after
    // the runtime (TSan/ASan).
    std::atomic<int> started{0}, ended{0};
    std::atomic<bool> resumed{false};
    auto body = [&]() -> Task<int> {
        Tracked t = co_await ringo::spawn_blocking([&] {
            ++started;
            std::this_thread::sleep_for(200ms);
            ++ended;
            return Tracked{};
        });
        resumed = true;
        co_return static_cast<int>(t.payload->size());
    };
    std::uint64_t done_before = ringo::blocking_pool_stats().jobs_done;
    ringo::JoinHandle<int> held;
    {
        ringo::Runtime rt;
        rt.block_on([&]() -> Task<void> {
            ringo::spawn(body()).detach();
            held = ringo::spawn(body());
            while (started.load() < 2)
                co_await ringo::sleep_for(1ms);
        }());
    }
    EXPECT_EQ(ended.load(), 0);                    // the runtime went while both jobs ran
    EXPECT_THROW(held.join(), std::runtime_error); // abandoned with its runtime
    ASSERT_TRUE(eventually([&] { return ringo::blocking_pool_stats().jobs_done >= done_before + 2; }));
    ASSERT_TRUE(eventually([] { return Tracked::alive.load() == 0; }));
    EXPECT_EQ(ended.load(), 2);
    EXPECT_FALSE(resumed.load());
}

TEST(Blocking, EventfdWaitWhenTheKernelLacksFutexWait) {
    ringo::Runtime rt;
    rt.probe().set_supported(ringo::uring::compat::opcode::futex_wait, false);
    int v = rt.block_on([]() -> Task<int> {
        int sum = 0;
        for (int i = 0; i < 20; ++i)
            sum += co_await ringo::spawn_blocking([i] {
                if (i % 5 == 0)
                    std::this_thread::sleep_for(2ms); // some waits are armed before the job ends
                return i;
            });
        co_return sum;
    }());
    EXPECT_EQ(v, 190);
}

TEST(Blocking, EventfdWaitWhenTheRuntimeIsDestroyed) {
    std::atomic<bool> started{false};
    std::uint64_t done_before = ringo::blocking_pool_stats().jobs_done;
    auto body = [&]() -> Task<void> {
        co_await ringo::spawn_blocking([&] {
            started = true;
            std::this_thread::sleep_for(100ms);
            return Tracked{};
        });
        ADD_FAILURE() << "resumed after its runtime was destroyed";
    };
    {
        ringo::Runtime rt;
        rt.probe().set_supported(ringo::uring::compat::opcode::futex_wait, false);
        rt.block_on([&]() -> Task<void> {
            ringo::spawn(body()).detach();
            while (!started)
                co_await ringo::sleep_for(1ms);
        }());
    }
    ASSERT_TRUE(eventually([&] { return ringo::blocking_pool_stats().jobs_done >= done_before + 1; }));
    ASSERT_TRUE(eventually([] { return Tracked::alive.load() == 0; }));
}

TEST(Blocking, OneCallAfterAnotherReusesTheThread) {
    // The thread that ran a job counts as coming back before its awaiter resumes, so the next
    // call waits for it instead of starting a thread: calls one after another use one thread.
    ringo::Runtime rt;
    std::uint64_t started = rt.block_on([]() -> Task<std::uint64_t> {
        co_await ringo::spawn_blocking([] {}); // at least one thread alive
        std::uint64_t before = ringo::blocking_pool_stats().threads_started;
        for (int i = 0; i < 200; ++i)
            co_await ringo::spawn_blocking([] {});
        co_return ringo::blocking_pool_stats().threads_started - before;
    }());
    EXPECT_EQ(started, 0u);
}

TEST(Blocking, IopollRuntimeRefuses) {
    RINGO_IO_URING_ONLY("an IOPOLL ring");
    // An IOPOLL ring takes neither a futex wait nor a poll: the await throws and f never runs
    // (before, the wait failed at once and was armed again in a loop until the job ended).
    std::unique_ptr<ringo::Runtime> rt;
    try {
        rt = std::make_unique<ringo::Runtime>(ringo::RuntimeOptions{}.iopoll());
    } catch (const std::system_error&) {
        GTEST_SKIP() << "no IOPOLL ring here";
    }
    std::atomic<bool> ran{false};
    bool threw = rt->block_on([&]() -> Task<bool> {
        try {
            co_await ringo::spawn_blocking([&] { ran = true; });
        } catch (const std::logic_error&) {
            co_return true;
        }
        co_return false;
    }());
    EXPECT_TRUE(threw);
    EXPECT_FALSE(ran.load());
}

TEST(Blocking, IdleThreadsEndAfterTheKeepAlive) {
    PoolOptionsScope scope({.max_threads = 4, .keep_alive = 20ms});
    ringo::Runtime rt;
    rt.block_on([]() -> Task<void> { co_await ringo::spawn_blocking([] {}); }());
    EXPECT_TRUE(eventually([] { return ringo::blocking_pool_stats().threads == 0; }));
}

TEST(Blocking, LoweringTheMaximumEndsThreadsAboveIt) {
    PoolOptionsScope scope({.max_threads = 8, .keep_alive = 10s});
    ringo::Runtime rt;
    rt.block_on([]() -> Task<void> {
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < 4; ++i)
            hs.push_back(ringo::spawn(
                []() -> Task<void> { co_await ringo::spawn_blocking([] { std::this_thread::sleep_for(20ms); }); }()));
        for (auto& h : hs)
            co_await h;
    }());
    EXPECT_GE(ringo::blocking_pool_stats().threads, 2u);
    ringo::set_blocking_pool_options({.max_threads = 1, .keep_alive = 10s});
    EXPECT_TRUE(eventually([] { return ringo::blocking_pool_stats().threads <= 1; }));
}

TEST(Blocking, RaisingTheMaximumStartsQueuedJobs) {
    RINGO_FIFO_ONLY("job a must reach the one-thread pool before job b");
    // With one thread, job a waits for job b, which is queued behind it; raising the maximum
    // starts b on a new thread at once (a would give up after 10 s otherwise).
    PoolOptionsScope scope({.max_threads = 1, .keep_alive = 10s});
    std::atomic<bool> b_ran{false};
    auto a = [&]() -> Task<bool> {
        co_return co_await ringo::spawn_blocking([&] { return eventually([&] { return b_ran.load(); }); });
    };
    auto b = [&]() -> Task<void> { co_await ringo::spawn_blocking([&] { b_ran = true; }); };
    ringo::Runtime rt;
    bool a_saw_b = rt.block_on([&]() -> Task<bool> {
        auto ha = ringo::spawn(a());
        auto hb = ringo::spawn(b());
        while (ringo::blocking_pool_stats().queued == 0) // b waits behind a
            co_await ringo::sleep_for(1ms);
        ringo::set_blocking_pool_options({.max_threads = 2, .keep_alive = 10s});
        co_await hb;
        co_return co_await ha;
    }());
    EXPECT_TRUE(a_saw_b);
}

TEST(Blocking, BadOptionsThrow) {
    EXPECT_THROW(ringo::set_blocking_pool_options({.max_threads = 0}), std::invalid_argument);
    EXPECT_THROW(ringo::set_blocking_pool_options({.max_threads = 1, .keep_alive = -1ms}), std::invalid_argument);
}

#ifndef RINGO_TEST_NO_NEW_COUNT
TEST(Blocking, OneAllocationPerCall) {
    ringo::Runtime rt;
    long per_1000 = rt.block_on([]() -> Task<long> {
        for (int i = 0; i < 10; ++i) // warm up: the pool's thread, the run queue
            co_await ringo::spawn_blocking([] { return 1; });
        // (The fewest of three rounds: on a loaded machine a call may come back before the
        // pool's thread is idle again, and the next call then starts a thread, which allocates.)
        long fewest = LONG_MAX;
        for (int round = 0; round < 3; ++round) {
            long before = g_allocs.load();
            for (int i = 0; i < 1000; ++i)
                co_await ringo::spawn_blocking([i] { return i; });
            fewest = std::min(fewest, g_allocs.load() - before);
        }
        co_return fewest;
    }());
    EXPECT_EQ(per_1000, 1000);
}
#endif

// fork() after the pool has started: the child has none of the pool's threads (one idle, one
// running a job in the parent), and its own calls start new ones instead of waiting for them.
TEST(Blocking, WorksInAChildForkedAfterThePoolStarted) {
    if (ringo_test::under_tsan)
        GTEST_SKIP() << "ThreadSanitizer does not support starting threads after a multi-threaded fork";
    std::atomic<bool> started{false}, release{false};
    std::thread busy;
    busy = std::thread([&] {
        ringo::Runtime r2;
        r2.block_on([&]() -> Task<void> {
            co_await ringo::spawn_blocking([&] {
                started = true;
                while (!release)
                    std::this_thread::sleep_for(1ms);
            });
        }());
    });
    struct Join { // however the test ends
        std::atomic<bool>& release;
        std::thread& t;
        ~Join() {
            release = true;
            t.join();
        }
    } join{release, busy};
    ASSERT_TRUE(eventually([&] { return started.load(); }));
    {
        ringo::Runtime rt; // a second thread, idle once this job is done
        rt.block_on([]() -> Task<void> { co_await ringo::spawn_blocking([] {}); }());
    }
    int status = ringo_test::wait_status_of_child([] {
        ringo::Runtime rt;
        int got = rt.block_on([]() -> Task<int> {
            int a = co_await ringo::spawn_blocking([] { return 40; });
            int b = co_await ringo::spawn_blocking([] { return 2; });
            co_return a + b;
        }());
        return got == 42 ? 0 : 1;
    });
    ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Process exit with one pool thread running a job and one idle: the child (this binary run
// again with RINGO_BLOCKING_EXIT_CHILD set) calls exit() from a task while a 30 s job runs;
// it must end at once with its own exit code (ASan's leak check included), not hang or crash.
TEST(Blocking, ProcessExitsWithAJobRunning) {
    if (std::getenv("RINGO_BLOCKING_EXIT_CHILD")) {
        ringo::Runtime rt;
        rt.block_on([]() -> Task<void> {
            co_await ringo::spawn_blocking([] {}); // leaves an idle thread
            static std::atomic<bool> started{false};
            ringo::spawn([]() -> Task<void> {
                co_await ringo::spawn_blocking([] {
                    started = true;
                    std::this_thread::sleep_for(30s);
                });
            }())
                .detach();
            while (!started)
                co_await ringo::sleep_for(1ms);
            std::exit(42);
        }());
        std::exit(1);
    }
    std::string filter = "--gtest_filter=Blocking.ProcessExitsWithAJobRunning";
    std::string exe = "/proc/self/exe";
    char* argv[] = {exe.data(), filter.data(), nullptr};
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e)
        if (std::string(*e).rfind("TEST_PREMATURE_EXIT_FILE=", 0) != 0)
            env_s.emplace_back(*e);
    env_s.emplace_back("RINGO_BLOCKING_EXIT_CHILD=1");
    std::vector<char*> envp;
    for (auto& s : env_s)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_t pid;
    ASSERT_EQ(::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
    int status = 0;
    bool ended = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
    if (!ended) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(ended) << "the child hung at exit";
    ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 42);
}

} // namespace
