#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using ringo::Runtime;
using ringo::RuntimeOptions;
using ringo::Task;

namespace {

// The run queue keeps FIFO order when it grows, whether its contents had wrapped round the
// end of the ring or not, and rotate() works across the growth.
TEST(RunQueue, KeepsOrderThroughGrowthWrappedOrNot) {
    RINGO_FIFO_ONLY("it tests the queue's order");
    ringo::detail::RunQueue q;
    auto h = [](std::uintptr_t i) { return std::coroutine_handle<>::from_address(reinterpret_cast<void*>(i * 8 + 8)); };
    auto id = [](std::coroutine_handle<> c) { return (reinterpret_cast<std::uintptr_t>(c.address()) - 8) / 8; };
    std::uintptr_t next_in = 0, next_out = 0;
    // Rounds of pushes bigger than the pops: the ring wraps and then grows, several times over.
    for (int round = 0; round < 12; ++round) {
        for (int i = 0; i < 700 + round * 300; ++i)
            q.push(h(next_in++));
        for (int i = 0; i < 500 + round * 200; ++i)
            ASSERT_EQ(id(q.pop()), next_out++);
        ASSERT_EQ(id(q.rotate(h(next_in++))), next_out++);
    }
    ASSERT_EQ(q.size(), next_in - next_out);
    while (!q.empty())
        ASSERT_EQ(id(q.pop()), next_out++);
    EXPECT_EQ(next_out, next_in);
}

// Order is kept through growth to millions of handles (glibc then grows the ring with
// mremap), with the contents wrapped round; try_push fills the ring but never grows it.
TEST(RunQueue, KeepsOrderThroughLargeGrowthAndTryPushNeverGrows) {
    RINGO_FIFO_ONLY("it tests the queue's order");
    ringo::detail::RunQueue q;
    auto h = [](std::uintptr_t i) { return std::coroutine_handle<>::from_address(reinterpret_cast<void*>(i * 8 + 8)); };
    auto id = [](std::coroutine_handle<> c) { return (reinterpret_cast<std::uintptr_t>(c.address()) - 8) / 8; };
    std::uintptr_t next_in = 0, next_out = 0;
    for (int i = 0; i < 100000; ++i) // the front moves on, so later growth finds the ring wrapped
        q.push(h(next_in++));
    for (int i = 0; i < 90000; ++i)
        ASSERT_EQ(id(q.pop()), next_out++);
    for (int i = 0; i < 1200000; ++i) // grows to 2 Mi handles (16 MiB)
        q.push(h(next_in++));
    ASSERT_EQ(q.size(), next_in - next_out);
    std::size_t room = 0;
    while (q.try_push(h(next_in))) { // fills the ring up to its one free slot, then refuses
        ++next_in;
        ++room;
    }
    EXPECT_EQ(q.size() + 1, std::size_t{1} << 21);
    EXPECT_GT(room, 0u);
    while (!q.empty())
        ASSERT_EQ(id(q.pop()), next_out++);
    EXPECT_EQ(next_out, next_in);
}

// A turn allows a set number of pops (pop or rotate), also when the queue grows in the
// middle of it (growth moves the ring's indices); outside a turn it is always over.
TEST(RunQueue, ATurnEndsAfterItsPopsThroughGrowth) {
    ringo::detail::RunQueue q;
    auto h = [](std::uintptr_t i) { return std::coroutine_handle<>::from_address(reinterpret_cast<void*>(i * 8 + 8)); };
    EXPECT_TRUE(q.turn_over());
    for (int round = 0; round < 2; ++round) { // indices past the ring's size: growth moves them
        for (std::uintptr_t i = 0; i < 1000; ++i)
            q.push(h(i));
        for (int i = 0; i < 1000; ++i)
            (void)q.pop();
    }
    for (std::uintptr_t i = 0; i < 800; ++i) // wraps round the end of the ring
        q.push(h(i));
    q.begin_turn(5);
    EXPECT_FALSE(q.turn_over());
    (void)q.pop();
    (void)q.rotate(h(1));
    for (std::uintptr_t i = 0; i < 5000; ++i) // grows twice while the turn is under way
        q.push(h(i));
    EXPECT_EQ(q.popped_in_turn(), 2u);
    EXPECT_FALSE(q.turn_over());
    (void)q.pop();
    (void)q.pop();
    EXPECT_FALSE(q.turn_over());
    (void)q.pop();
    EXPECT_TRUE(q.turn_over());
    EXPECT_EQ(q.end_turn(), 5u);
    EXPECT_TRUE(q.turn_over());
    EXPECT_EQ(q.popped_in_turn(), 0u);
}

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
    // The task is all the work there is: it waits for each NOP itself and never suspends.
    EXPECT_EQ(after.completed_alone - before.completed_alone, 10u);
    EXPECT_EQ(after.ops_in_flight, 0u);
}

// Two tasks awaiting NOPs in turn: neither waits alone (the other is ready, or its NOP is in
// flight), so each NOP's completion resumes its task in CQE order and the two alternate
// strictly, as they did when every completion went through the loop.
TEST(Runtime, TasksAwaitingTogetherResumeInTheOrderOfTheirCompletions) {
    RINGO_FIFO_ONLY("it tests the order in which completed tasks run");
    Runtime rt;
    std::vector<int> order;
    auto before = rt.stats();
    rt.block_on([](std::vector<int>& out) -> Task<void> {
        auto worker = [](std::vector<int>& o, int id) -> Task<void> {
            for (int i = 0; i < 50; ++i) {
                EXPECT_EQ(co_await ringo::op::nop(), 0);
                o.push_back(id);
            }
        };
        auto a = ringo::spawn(worker(out, 0));
        auto b = ringo::spawn(worker(out, 1));
        co_await a;
        co_await b;
    }(order));
    auto after = rt.stats();
    ASSERT_EQ(order.size(), 100u);
    for (std::size_t i = 0; i < order.size(); ++i)
        ASSERT_EQ(order[i], static_cast<int>(i % 2)) << "at " << i;
    EXPECT_EQ(after.completed_alone - before.completed_alone, 0u);
    EXPECT_EQ(after.enters - before.enters, 50u); // both NOPs of a round in one enter
}

// The tests below await reads of an empty pipe. When one checks that a wait does not happen,
// start_rescue(c) has a thread write `c` into the pipe after 3 s unless the test ends first:
// a wait that should not have happened ends (the test then fails on its elapsed time) instead
// of hanging.
class RuntimeWithPipe : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(::pipe2(p_, O_CLOEXEC), 0); }
    void TearDown() override {
        stop_ = true;
        if (rescue_.joinable())
            rescue_.join();
        ::close(p_[0]);
        ::close(p_[1]);
    }
    [[nodiscard]] int rfd() const noexcept { return p_[0]; }
    [[nodiscard]] int wfd() const noexcept { return p_[1]; }
    void start_rescue(char c) {
        rescue_ = std::thread([this, c] {
            for (int i = 0; i < 300 && !stop_; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (!stop_)
                (void)::write(p_[1], &c, 1);
        });
    }

private:
    int p_[2] = {-1, -1};
    std::atomic<bool> stop_{false};
    std::thread rescue_;
};

// A task whose runtime has another operation in flight (here a read of an empty pipe) does
// not wait in the kernel itself: the other CQE could come first and the task would be queued
// behind it anyway. It suspends, and the loop makes the one enter per NOP.
TEST_F(RuntimeWithPipe, ATaskDoesNotWaitAloneWhileAnotherOperationIsInFlight) {
    Runtime rt;
    auto before = rt.stats();
    char got = rt.block_on([](int rfd, int wfd) -> Task<char> {
        auto reader = ringo::spawn([](int f) -> Task<char> {
            char c = 0;
            int r = co_await ringo::op::read(f, &c, 1, ringo::op::current_pos);
            co_return r == 1 ? c : '?';
        }(rfd));
        co_await ringo::yield(); // the reader starts its read
        for (int i = 0; i < 10; ++i)
            EXPECT_EQ(co_await ringo::op::nop(), 0);
        EXPECT_EQ(::write(wfd, "w", 1), 1);
        co_return co_await reader;
    }(rfd(), wfd()));
    auto after = rt.stats();
    EXPECT_EQ(got, 'w');
    EXPECT_EQ(after.completed_alone - before.completed_alone, 0u);
    EXPECT_EQ(after.ops_in_flight, 0u);
}

// block_on returns once its task has ended, even if a task it left behind then awaits an
// operation that would never complete: that task does not wait in the kernel alone.
TEST_F(RuntimeWithPipe, AnOperationAwaitedAfterTheRootEndedDoesNotHoldUpBlockOn) {
    Runtime rt;
    start_rescue('x');
    auto t0 = std::chrono::steady_clock::now();
    rt.block_on([](int fd) -> Task<void> {
        ringo::spawn([](int f) -> Task<void> {
            char c;
            (void)co_await ringo::op::read(f, &c, 1, ringo::op::current_pos);
        }(fd))
            .detach();
        co_return; // the spawned task runs after this, in the same turn
    }(rfd()));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

// A task awaiting I/O while another task's timer is armed goes through the loop, whose wait
// ends at the deadline: the timer fires, and its task's write ends the first task's read.
TEST_F(RuntimeWithPipe, AnArmedTimerStillFiresWhileATaskAwaitsIo) {
    Runtime rt;
    start_rescue('r');
    auto t0 = std::chrono::steady_clock::now();
    char got = rt.block_on([](int rfd, int wfd) -> Task<char> {
        auto writer = ringo::spawn([](int f) -> Task<void> {
            co_await ringo::sleep_for(std::chrono::milliseconds(20));
            (void)co_await ringo::op::write(f, "t", 1, ringo::op::current_pos);
        }(wfd));
        co_await ringo::yield(); // the writer runs and arms its timer
        char c = 0;
        EXPECT_EQ(co_await ringo::op::read(rfd, &c, 1, ringo::op::current_pos), 1);
        co_await writer;
        co_return c;
    }(rfd(), wfd()));
    EXPECT_EQ(got, 't');
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

// A task waiting alone in the kernel is still woken by other threads: a cancellation from
// another thread interrupts its read.
TEST_F(RuntimeWithPipe, ATaskWaitingAloneIsCancelledFromAnotherThread) {
    Runtime rt;
    start_rescue('c'); // a read the cancellation missed yields 1, not -ECANCELED
    std::atomic<bool> waiting{false};
    int r = rt.block_on([](int fd, std::atomic<bool>& w) -> Task<int> {
        auto h = ringo::spawn([](int f, std::atomic<bool>& w2) -> Task<int> {
            char c;
            w2 = true;
            co_return co_await ringo::op::read(f, &c, 1, ringo::op::current_pos);
        }(fd, w));
        std::thread canceller([&h, &w] {
            while (!w)
                std::this_thread::yield();
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            h.cancel();
        });
        int res = co_await h;
        canceller.join();
        co_return res;
    }(rfd(), waiting));
    EXPECT_EQ(r, -ECANCELED);
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
    // 4 SQ / 8 CQ entries and 200 timeouts with one absolute deadline, so they all fire at
    // once: the CQ overflows and the kernel keeps the extra CQEs (NODROP); every one must
    // arrive, and the overflow is counted as back-pressure.
    Runtime rt{RuntimeOptions{}.sq_entries(4).cq_entries(8)};
    timespec now{};
    ASSERT_EQ(::clock_gettime(CLOCK_MONOTONIC, &now), 0);
    std::uint64_t at =
        static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec) + 20'000'000u;
    __kernel_timespec deadline{static_cast<long long>(at / 1'000'000'000u),
                               static_cast<long long>(at % 1'000'000'000u)};
    int fired = rt.block_on([](__kernel_timespec d) -> Task<int> {
        std::vector<ringo::JoinHandle<int>> hs;
        for (int i = 0; i < 200; ++i)
            hs.push_back(ringo::spawn([](__kernel_timespec dd) -> Task<int> {
                co_return co_await ringo::op::timeout(dd, 0, ringo::uring::compat::timeout_abs);
            }(d)));
        int n = 0;
        for (auto& h : hs)
            n += (co_await h == -ETIME);
        co_return n;
    }(deadline));
    EXPECT_EQ(fired, 200);
    EXPECT_GT(rt.stats().backpressure_events, 0u) << "the burst did not overflow the CQ";
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(Runtime, CqOverflowIsBackPressureAndLosesNoCompletion) {
    // 16 SQ / 16 CQ entries and 2 000 NOPs in flight at once: each full SQ goes to the kernel
    // before anything is reaped, so the completions outgrow the CQ and the kernel holds the
    // rest in its overflow list. The runtime must count that as back-pressure, flush the list
    // and deliver every completion exactly once.
    constexpr int n = 2000;
    Runtime rt{RuntimeOptions{}.sq_entries(16).cq_entries(16)};
    ASSERT_EQ(ringo_test::ring_of(rt).cq_entries(), 16u);
    auto before = rt.stats();
    std::vector<int> results(n, 1);
    int joined = rt.block_on([](std::vector<int>& res) -> Task<int> {
        std::vector<ringo::JoinHandle<void>> hs;
        hs.reserve(res.size());
        for (int& r : res)
            hs.push_back(ringo::spawn([](int& out) -> Task<void> { out = co_await ringo::op::nop(); }(r)));
        int k = 0;
        for (auto& h : hs) {
            co_await h;
            ++k;
        }
        co_return k;
    }(results));
    auto after = rt.stats();
    EXPECT_EQ(joined, n);
    EXPECT_EQ(std::count(results.begin(), results.end(), 0), n); // every NOP completed with 0
    EXPECT_GT(after.backpressure_events, before.backpressure_events)
        << "no back-pressure counted: did the CQ overflow?";
    EXPECT_EQ(after.sqes_submitted - before.sqes_submitted, static_cast<std::uint64_t>(n));
    EXPECT_EQ(after.cqes - before.cqes, static_cast<std::uint64_t>(n)); // none lost, none twice
    EXPECT_EQ(after.ops_in_flight, 0u);
    EXPECT_FALSE(ringo_test::ring_of(rt).cq_overflowed());
}

// A turn keeps its count when the queue grows just as it ends, its front at slot 0 (the turn
// was once taken for no turn at all there, and its pops went uncounted).
TEST(RunQueue, ATurnKeepsItsCountWhenTheQueueGrowsAsItEnds) {
    ringo::detail::RunQueue q;
    auto h = [](std::uintptr_t i) { return std::coroutine_handle<>::from_address(reinterpret_cast<void*>(i * 8 + 8)); };
    q.push(h(0));
    q.begin_turn(1024); // the first ring has 1024 slots: the turn ends with the front at slot 0
    for (std::uintptr_t i = 0; i < 1024; ++i)
        (void)q.rotate(h(i + 1));
    ASSERT_TRUE(q.turn_over());
    for (std::uintptr_t i = 0; i < 1100; ++i) // grows
        q.push(h(2000 + i));
    EXPECT_TRUE(q.turn_over());
    EXPECT_EQ(q.popped_in_turn(), 1024u);
    EXPECT_EQ(q.end_turn(), 1024u);
    EXPECT_EQ(q.size(), 1101u);
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

// A coroutine of no runtime's making: starts at once, never suspends at its end.
struct Eager {
    struct promise_type {
        Eager get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

Eager yield_then_mark(bool& done) {
    co_await ringo::yield();
    done = true;
}

TEST(Runtime, YieldWhereNoRuntimeRunsGoesOnAtOnce) {
    bool before = false;
    yield_then_mark(before); // no runtime has run on this thread yet
    EXPECT_TRUE(before);
    Runtime rt;
    EXPECT_EQ(rt.block_on([]() -> Task<int> {
        co_await ringo::yield();
        co_return 7;
    }()),
              7);
    bool after = false;
    yield_then_mark(after); // the runtime is no longer this thread's: its queue is not used
    EXPECT_TRUE(after);
}

Task<void> yield_times(int n) {
    for (int i = 0; i < n; ++i)
        co_await ringo::yield();
}

Task<std::uint64_t> resumptions_of_yields(int tasks, int n) {
    Runtime& rt = *Runtime::current();
    std::vector<ringo::JoinHandle<void>> hs;
    for (int t = 0; t < tasks; ++t)
        hs.push_back(ringo::spawn(yield_times(n)));
    std::uint64_t before = rt.stats().resumptions;
    co_await yield_times(n);
    std::uint64_t after = rt.stats().resumptions;
    for (auto& h : hs)
        co_await h;
    co_return after - before;
}

// Every yield is one resumption, counted towards the turn, whether the task was alone (it
// may go on without suspending) or handed the thread to another; turns of 16 end on the way.
TEST(Runtime, EveryYieldIsOneResumptionAloneOrNot) {
    RINGO_FIFO_ONLY("it counts a round-robin of yields");
    Runtime rt{RuntimeOptions{}.flush_interval(16)};
    EXPECT_EQ(rt.block_on(resumptions_of_yields(0, 1000)), 1000u);
    // With two others, queued in turn behind the root: while the root yields 1000 times,
    // each of the three is resumed 1000 times (the others' starts included).
    EXPECT_EQ(rt.block_on(resumptions_of_yields(2, 1000)), 3000u);
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
            }(fd))
                .detach();
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

TEST(Runtime, LoopNowIsReadOncePerTurnOfTheLoop) {
    Runtime rt;
    struct Seen {
        std::uint64_t a = 0, b = 0, real = 0, after_sleep = 0, after_nop = 0, before_nop = 0;
    } s;
    rt.block_on([](Seen& out) -> Task<void> {
        Runtime& r = *Runtime::current();
        out.a = r.loop_now_ns();
        ::usleep(1000);          // the real clock moves on ...
        out.b = r.loop_now_ns(); // ... the loop's reading of this turn does not
        out.real = ringo::detail::now_ns();
        co_await ringo::sleep_for(std::chrono::milliseconds(2));
        out.after_sleep = r.loop_now_ns(); // a later turn: read again
        out.before_nop = ringo::detail::now_ns();
        co_await ringo::op::nop();
        out.after_nop = r.loop_now_ns();
    }(s));
    EXPECT_EQ(s.a, s.b);
    EXPECT_GE(s.real, s.a + 1'000'000u);
    EXPECT_GE(s.after_sleep, s.a + 2'000'000u);
    EXPECT_GE(s.after_nop, s.before_nop); // the NOP's completion came in a new turn
}
