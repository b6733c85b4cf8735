// Proves that awaiting an operation allocates nothing, and that spawn allocates only the
// coroutine frame. Counts every global operator new.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <thread>
#include <vector>

#include "alloc_counter.hpp" // replaces operator new: counts every allocation of this program

namespace {

using ringo::Task;

TEST(Allocation, AwaitedOperationsAllocateNothing) {
    ringo::Runtime rt;
    long during = rt.block_on([]() -> Task<long> {
        char buf[8];
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        co_await ringo::op::nop(); // warm up
        long before = g_allocs.load();
        for (int i = 0; i < 1000; ++i) {
            EXPECT_EQ(co_await ringo::op::nop(), 0);
            EXPECT_EQ(co_await ringo::op::send(sv[0], "abcd", 4), 4);
            EXPECT_EQ(co_await ringo::op::recv(sv[1], buf, 4), 4);
            co_await ringo::yield();
        }
        long after = g_allocs.load();
        ::close(sv[0]);
        ::close(sv[1]);
        co_return after - before;
    }());
    EXPECT_EQ(during, 0);
}

TEST(Allocation, SpawnAllocatesOnlyTheFrame) {
    ringo::Runtime rt;
    struct Counts {
        long heap;
        std::uint64_t frames;
    };
    Counts c = rt.block_on([]() -> Task<Counts> {
        auto empty = []() -> Task<void> { co_return; };
        co_await ringo::spawn(empty()); // warm up (fills the frame cache)
        long heap0 = g_allocs.load();
        std::uint64_t frames0 = ringo::detail::t_frames_allocated;
        for (int i = 0; i < 1000; ++i)
            co_await ringo::spawn(empty());
        co_return Counts{g_allocs.load() - heap0, ringo::detail::t_frames_allocated - frames0};
    }());
    EXPECT_EQ(c.frames, 1000u); // one frame per spawn, nothing else
    // With the per-thread frame cache the frame itself comes back from the cache.
    EXPECT_EQ(c.heap, ringo::detail::frame_pool_enabled ? 0 : 1000);
}

TEST(Allocation, ChannelMessagesAllocateNothing) {
    // A channel with capacity allocates its buffer once; a message (buffered, handed to a
    // waiting receiver, or taken from a waiting sender) allocates nothing, and neither does
    // a wait on a Mutex, Semaphore or Event.
    ringo::Runtime rt;
    long during = rt.block_on([]() -> Task<long> {
        ringo::Channel<long> ch(8);
        ringo::Mutex m;
        ringo::Semaphore sem(0);
        ringo::Event ev;
        auto consumer = [](ringo::Channel<long>& c, ringo::Semaphore& s) -> Task<void> {
            long sum = 0;
            while (auto v = co_await c.recv()) {
                sum += *v;
                if (*v % 100 == 0)
                    (void)s.release();
            }
            EXPECT_GT(sum, 0);
        };
        auto h = ringo::spawn(consumer(ch, sem)); // its frame is allocated here, before counting
        co_await ringo::yield();
        EXPECT_EQ(co_await ch.send(1), 0); // warm up
        long before = g_allocs.load();
        for (long i = 2; i <= 5000; ++i) {
            EXPECT_EQ(co_await ch.send(i), 0); // some buffered, some handed over, some waiting for room
            if (i % 100 == 0) {
                EXPECT_EQ(co_await sem.acquire(), 0);
                auto g = co_await m.scoped_lock();
                ev.set();
                EXPECT_EQ(co_await ev.wait(), 0);
                ev.reset();
            }
        }
        long after = g_allocs.load();
        ch.close();
        co_await h;
        co_return after - before;
    }());
    EXPECT_EQ(during, 0);
}

// Frame memory is kept for reuse, not returned: the second wave of 5000 live tasks, on this
// thread and then on a thread started after the first one ended, maps no new chunk.
TEST(Allocation, FrameMemoryIsReusedAcrossWavesAndThreads) {
    if (!ringo::detail::frame_pool_enabled)
        GTEST_SKIP() << "frame pool disabled in sanitizer builds";
    auto wave = [] {
        ringo::Runtime rt;
        rt.block_on([]() -> Task<void> {
            auto empty = []() -> Task<void> { co_return; };
            std::vector<ringo::JoinHandle<void>> hs;
            for (int i = 0; i < 5000; ++i)
                hs.push_back(ringo::spawn(empty()));
            for (auto& h : hs)
                co_await h;
        }());
    };
    std::thread(wave).join(); // ends: its frames go to the depot
    std::size_t mapped = ringo::detail::frame_pool_mapped_bytes();
    EXPECT_GT(mapped, 0u);
    std::thread(wave).join(); // takes them from the depot
    EXPECT_EQ(ringo::detail::frame_pool_mapped_bytes(), mapped);
    wave(); // this thread too
    wave();
    EXPECT_EQ(ringo::detail::frame_pool_mapped_bytes(), mapped);
}

Task<void> empty_task() { co_return; }

// Every spawned task carries its promise in its frame: 64 bytes (the list of live tasks is
// the cancellation tree, whose links the promise's own context has anyway) keep the frame of
// an empty task (plus the compiler's resume/destroy pointers and state) in the pool's
// 96-byte class, so a million live tasks take 96 MB, not 112.
TEST(Allocation, AnEmptyTaskFrameTakes96Bytes) {
    EXPECT_LE(sizeof(ringo::detail::Promise<void>), 64u);
    EXPECT_LE(sizeof(ringo::detail::Promise<int>), 72u);
    if (!ringo::detail::frame_pool_enabled)
        GTEST_SKIP() << "frames come from operator new in this build (sanitizers)";
    // Fresh frames are carved one after another off the pool's current chunk: the distance
    // between two is the frame's size class.
    std::vector<Task<void>> tasks;
    for (int i = 0; i < 64; ++i)
        tasks.push_back(empty_task());
    std::map<std::ptrdiff_t, int> gaps;
    for (std::size_t i = 1; i < tasks.size(); ++i)
        ++gaps[static_cast<char*>(tasks[i].handle().address()) - static_cast<char*>(tasks[i - 1].handle().address())];
    auto most = std::max_element(gaps.begin(), gaps.end(), [](auto& a, auto& b) { return a.second < b.second; });
    EXPECT_EQ(most->first, 96);
    EXPECT_GE(most->second, 48);
}

} // namespace
