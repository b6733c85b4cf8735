// Proves that awaiting an operation allocates nothing, and that spawn allocates only the
// coroutine frame. Counts every global operator new.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_allocs{0};
}

void* operator new(std::size_t n) {
    ++g_allocs;
    if (void* p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

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
    long per_spawn_x1000 = rt.block_on([]() -> Task<long> {
        auto empty = []() -> Task<void> { co_return; };
        co_await ringo::spawn(empty()); // warm up
        long before = g_allocs.load();
        for (int i = 0; i < 1000; ++i)
            co_await ringo::spawn(empty());
        co_return g_allocs.load() - before;
    }());
    EXPECT_EQ(per_spawn_x1000, 1000);
}

} // namespace
