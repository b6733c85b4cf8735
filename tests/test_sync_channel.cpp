// Channel<T>: semantics on one runtime, between runtimes on different threads, with plain
// threads, cancellation, timeouts and when_any.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using ringo::Channel;
using ringo::Runtime;
using ringo::Task;

namespace {

template <class F>
auto run(F f) {
    Runtime rt;
    return rt.block_on(f());
}
template <class T>
T run(Task<T> t) {
    Runtime rt;
    return rt.block_on(std::move(t));
}

// ASSERT_* for coroutines returning Task<void>.
#define CO_ASSERT_TRUE(c)                                                                                              \
    do {                                                                                                               \
        if (!(c)) {                                                                                                    \
            ADD_FAILURE() << "expected: " #c;                                                                          \
            co_return;                                                                                                 \
        }                                                                                                              \
    } while (0)

// ---------------------------------------------------------------- one runtime

TEST(Channel, BufferedValuesArriveInOrder) {
    auto got = run([]() -> Task<std::vector<int>> {
        Channel<int> ch(4);
        for (int i = 0; i < 4; ++i)
            EXPECT_EQ(co_await ch.send(i), 0);
        EXPECT_EQ(ch.size(), 4u);
        std::vector<int> v;
        for (int i = 0; i < 4; ++i)
            v.push_back(*co_await ch.recv());
        EXPECT_EQ(ch.size(), 0u);
        co_return v;
    });
    EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Channel, CapacityIsRespected) {
    run([]() -> Task<void> {
        Channel<int> ch(3);
        EXPECT_EQ(ch.capacity(), 3u);
        for (int i = 0; i < 3; ++i)
            EXPECT_EQ(ch.try_send(i), 0);
        EXPECT_EQ(ch.try_send(99), -EAGAIN);
        EXPECT_EQ(ch.size(), 3u);
        // A sender beyond capacity waits until a receiver makes room.
        bool sent = false;
        auto h = ringo::spawn([](Channel<int>& c, bool& s) -> Task<void> {
            EXPECT_EQ(co_await c.send(3), 0);
            s = true;
        }(ch, sent));
        for (int i = 0; i < 5; ++i)
            co_await ringo::yield();
        EXPECT_FALSE(sent);
        EXPECT_EQ(ch.size(), 3u);
        EXPECT_EQ(*co_await ch.recv(), 0);
        co_await h;
        EXPECT_TRUE(sent);
        for (int i = 1; i <= 3; ++i)
            EXPECT_EQ(*ch.try_recv(), i);
        EXPECT_FALSE(ch.try_recv().has_value());
    }());
}

TEST(Channel, ReceiverWaitsForASender) {
    auto v = run([]() -> Task<int> {
        Channel<int> ch(8);
        auto h = ringo::spawn([](Channel<int>& c) -> Task<int> { co_return *co_await c.recv(); }(ch));
        co_await ringo_test::let_others_run(); // the receiver is waiting now
        EXPECT_EQ(co_await ch.send(41), 0);
        EXPECT_EQ(ch.size(), 0u); // handed straight to the waiting receiver
        co_return co_await h;
    });
    EXPECT_EQ(v, 41);
}

TEST(Channel, RendezvousHandsOverOnlyWhenBothMeet) {
    run([]() -> Task<void> {
        Channel<std::string> ch(0);
        EXPECT_EQ(ch.try_send(std::string("x")), -EAGAIN); // nobody receives
        EXPECT_FALSE(ch.try_recv().has_value());
        int stage = 0;
        auto sender = ringo::spawn([](Channel<std::string>& c, int& st) -> Task<void> {
            st = 1;
            EXPECT_EQ(co_await c.send("hello"), 0);
            st = 2;
        }(ch, stage));
        co_await ringo_test::let_others_run();
        EXPECT_EQ(stage, 1); // still waiting: nobody took the value
        EXPECT_EQ(ch.size(), 0u);
        auto v = co_await ch.recv();
        EXPECT_EQ(v, "hello");
        co_await sender;
        EXPECT_EQ(stage, 2);
        // A waiting receiver takes a try_send.
        auto recv = ringo::spawn(
            [](Channel<std::string>& c) -> Task<std::optional<std::string>> { co_return co_await c.recv(); }(ch));
        co_await ringo_test::let_others_run();
        std::string s = "direct";
        EXPECT_EQ(ch.try_send(std::move(s)), 0);
        EXPECT_EQ(*co_await recv, "direct");
    }());
}

TEST(Channel, TrySendLeavesTheValueWhenItFails) {
    Channel<std::unique_ptr<int>> ch(1);
    auto a = std::make_unique<int>(1);
    auto b = std::make_unique<int>(2);
    EXPECT_EQ(ch.try_send(std::move(a)), 0);
    EXPECT_EQ(ch.try_send(std::move(b)), -EAGAIN);
    ASSERT_TRUE(b); // not moved from
    EXPECT_EQ(*b, 2);
    ch.close();
    EXPECT_EQ(ch.try_send(std::move(b)), -EPIPE);
    ASSERT_TRUE(b);
}

TEST(Channel, MoveOnlyAndNonDefaultConstructibleValues) {
    struct NoDefault {
        explicit NoDefault(int x) : v(x) {}
        NoDefault(NoDefault&&) noexcept = default;
        NoDefault& operator=(NoDefault&&) noexcept = default;
        int v;
    };
    run([]() -> Task<void> {
        Channel<std::unique_ptr<int>> a(2);
        EXPECT_EQ(co_await a.send(std::make_unique<int>(7)), 0);
        auto p = co_await a.recv();
        CO_ASSERT_TRUE(p && *p);
        EXPECT_EQ(**p, 7);
        Channel<NoDefault> b(0);
        auto h = ringo::spawn([](Channel<NoDefault>& c) -> Task<int> { co_return (co_await c.recv())->v; }(b));
        co_await ringo::yield();
        EXPECT_EQ(co_await b.send(NoDefault(5)), 0);
        EXPECT_EQ(co_await h, 5);
    }());
}

TEST(Channel, BufferedValuesAreDestroyedWithTheChannel) {
    auto counter = std::make_shared<int>(0);
    {
        Channel<std::shared_ptr<int>> ch(4);
        EXPECT_EQ(ch.try_send(counter), 0);
        EXPECT_EQ(ch.try_send(counter), 0);
        EXPECT_EQ(counter.use_count(), 3);
    }
    EXPECT_EQ(counter.use_count(), 1);
}

TEST(Channel, CloseWakesEveryWaiterAndKeepsBufferedValues) {
    run([]() -> Task<void> {
        Channel<int> empty(2);
        std::vector<ringo::JoinHandle<std::optional<int>>> rs;
        for (int i = 0; i < 3; ++i)
            rs.push_back(
                ringo::spawn([](Channel<int>& c) -> Task<std::optional<int>> { co_return co_await c.recv(); }(empty)));
        co_await ringo::yield();
        EXPECT_TRUE(empty.close());
        EXPECT_FALSE(empty.close()); // second close: nothing to do
        for (auto& h : rs)
            EXPECT_FALSE((co_await h).has_value());

        Channel<int> full(1);
        EXPECT_EQ(co_await full.send(1), 0);
        std::vector<ringo::JoinHandle<int>> ss;
        for (int i = 0; i < 3; ++i)
            ss.push_back(
                ringo::spawn([](Channel<int>& c, int v) -> Task<int> { co_return co_await c.send(v); }(full, 10 + i)));
        co_await ringo::yield();
        full.close();
        for (auto& h : ss)
            EXPECT_EQ(co_await h, -EPIPE);
        EXPECT_TRUE(full.is_closed());
        // What was buffered before the close is still delivered, then the end.
        EXPECT_EQ(*co_await full.recv(), 1);
        EXPECT_FALSE((co_await full.recv()).has_value());
        EXPECT_EQ(co_await full.send(5), -EPIPE);
    }());
}

TEST(Channel, DestroyingTheChannelEndsItsWaiters) {
    run([]() -> Task<void> {
        auto ch = std::make_unique<Channel<int>>(1);
        auto r = ringo::spawn([](Channel<int>& c) -> Task<std::optional<int>> { co_return co_await c.recv(); }(*ch));
        co_await ringo_test::let_others_run();
        ch.reset(); // the receiver is woken as by close; it never touches the channel again
        EXPECT_FALSE((co_await r).has_value());
    }());
}

// ---------------------------------------------------------------- cancellation, timeouts

TEST(Channel, CancelledReceiverLeavesNoTrace) {
    run([]() -> Task<void> {
        Channel<int> ch(4);
        auto r = ringo::spawn([](Channel<int>& c) -> Task<std::optional<int>> { co_return co_await c.recv(); }(ch));
        co_await ringo::yield();
        r.cancel();
        EXPECT_FALSE((co_await r).has_value());
        // The cancelled receiver is gone: the value goes to the buffer, not to a dead waiter.
        EXPECT_EQ(co_await ch.send(3), 0);
        EXPECT_EQ(ch.size(), 1u);
        EXPECT_EQ(*co_await ch.recv(), 3);
    }());
}

TEST(Channel, CancelledSenderDoesNotSend) {
    run([]() -> Task<void> {
        Channel<int> ch(1);
        EXPECT_EQ(co_await ch.send(1), 0);
        auto s = ringo::spawn([](Channel<int>& c) -> Task<int> { co_return co_await c.send(2); }(ch));
        co_await ringo::yield();
        s.cancel();
        EXPECT_EQ(co_await s, -ECANCELED);
        EXPECT_EQ(*co_await ch.recv(), 1);
        EXPECT_FALSE(ch.try_recv().has_value()); // 2 was never sent
    }());
}

TEST(Channel, AlreadyCancelledTaskDoesNotTouchTheChannel) {
    run([]() -> Task<void> {
        Channel<int> ch(2);
        EXPECT_EQ(ch.try_send(1), 0);
        auto t = ringo::spawn([](Channel<int>& c) -> Task<int> {
            co_await ringo::sleep_for(1h); // cancelled here
            int s = co_await c.send(9);
            auto r = co_await c.recv();
            co_return s == -ECANCELED && !r ? 1 : 0;
        }(ch));
        co_await ringo::yield();
        t.cancel();
        EXPECT_EQ(co_await t, 1);
        EXPECT_EQ(ch.size(), 1u); // neither the send nor the recv happened
    }());
}

TEST(Channel, WithTimeoutOnRecv) {
    run([]() -> Task<void> {
        Channel<int> ch(1);
        auto t0 = std::chrono::steady_clock::now();
        auto none = co_await ringo::with_timeout(ch.recv(), 20ms);
        EXPECT_TRUE(none.timed_out());
        EXPECT_FALSE(none->has_value()); // nothing came
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
        EXPECT_EQ(ch.try_send(4), 0);
        auto some = co_await ringo::with_timeout(ch.recv(), 1s);
        CO_ASSERT_TRUE(!some.timed_out());
        CO_ASSERT_TRUE(some->has_value());
        EXPECT_EQ(**some, 4);
        // A full channel: the send times out with -ETIME and the value is not sent.
        EXPECT_EQ(ch.try_send(5), 0);
        EXPECT_EQ(co_await ringo::with_timeout(ch.send(6), 10ms), -ETIME);
        EXPECT_EQ(*ch.try_recv(), 5);
        EXPECT_FALSE(ch.try_recv().has_value());
    }());
}

TEST(Channel, WithTimeoutKeepsAValueHandedOverAtTheDeadline) {
    // A value handed to a receiver whose deadline fires before it runs is still returned
    // (with_timeout keeps what the awaitable yielded, also when the deadline passed first).
    run([]() -> Task<void> {
        Channel<int> ch(0);
        auto r = ringo::spawn([](Channel<int>& c) -> Task<ringo::Timed<std::optional<int>>> {
            co_return co_await ringo::with_timeout(c.recv(), 5ms);
        }(ch));
        co_await ringo_test::let_others_run(); // r waits in recv
        std::this_thread::sleep_for(10ms);     // the deadline passes while this task runs
        EXPECT_EQ(ch.try_send(77), 0);         // handed to the waiting receiver
        auto v = co_await r;
        CO_ASSERT_TRUE(v->has_value());
        EXPECT_EQ(**v, 77);
    }());
}

TEST(Channel, WhenAnyOfTwoChannels) {
    run([]() -> Task<void> {
        Channel<int> a(1), b(1);
        auto h = ringo::spawn([](Channel<int>& b2) -> Task<void> {
            co_await ringo::sleep_for(5ms);
            EXPECT_EQ(co_await b2.send(2), 0);
        }(b));
        auto [idx, v] = co_await ringo::when_any(a.recv(), b.recv());
        EXPECT_EQ(idx, 1u);
        EXPECT_EQ(v, std::optional<int>(2));
        co_await h;
        // The loser's wait was withdrawn: a later value stays in the channel.
        EXPECT_EQ(a.try_send(1), 0);
        EXPECT_EQ(a.size(), 1u);
    }());
}

TEST(Channel, AwaitingOutsideARuntimeWhenItMustWaitThrows) {
    // A coroutine that is not driven by a runtime (nobody could resume it) gets
    // std::logic_error where it would have to wait; where it need not wait it works.
    struct Detached {
        struct promise_type {
            Detached get_return_object() { return {}; }
            std::suspend_never initial_suspend() { return {}; }
            std::suspend_never final_suspend() noexcept { return {}; }
            void return_void() {}
            void unhandled_exception() {}
        };
    };
    Channel<int> ch(1);
    int outcome = 0;
    [](Channel<int>& c, int& out) -> Detached {
        if (co_await c.send(5) != 0)
            co_return;
        auto v = co_await c.recv(); // ready: no wait
        if (!v || *v != 5)
            co_return;
        try {
            (void)co_await c.recv(); // empty: would wait
            out = 1;
        } catch (const std::logic_error&) {
            out = 2;
        }
    }(ch, outcome);
    EXPECT_EQ(outcome, 2);
}

// ---------------------------------------------------------------- threads

TEST(Channel, BlockingFormsThrowOnARuntimeThread) {
    run([]() -> Task<void> {
        Channel<int> ch(1);
        EXPECT_THROW(ch.send_blocking(1), std::logic_error);
        EXPECT_THROW(ch.recv_blocking(), std::logic_error);
        co_return;
    }());
}

TEST(Channel, PlainThreadProducerTaskConsumer) {
    Channel<int> ch(4);
    constexpr int n = 20000;
    std::thread producer([&] {
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(ch.send_blocking(i), 0);
        ch.close();
    });
    long sum = run([&]() -> Task<long> {
        long s = 0;
        int expect = 0;
        while (auto v = co_await ch.recv()) {
            EXPECT_EQ(*v, expect++);
            s += *v;
        }
        co_return s;
    });
    producer.join();
    EXPECT_EQ(sum, long(n) * (n - 1) / 2);
}

TEST(Channel, TaskProducerPlainThreadConsumerRendezvous) {
    Channel<int> ch(0);
    constexpr int n = 5000;
    long sum = 0;
    int count = 0;
    std::thread consumer([&] {
        while (auto v = ch.recv_blocking()) {
            EXPECT_EQ(*v, count);
            ++count;
            sum += *v;
        }
    });
    run([&]() -> Task<void> {
        for (int i = 0; i < n; ++i)
            EXPECT_EQ(co_await ch.send(i), 0);
        ch.close();
    });
    consumer.join();
    EXPECT_EQ(count, n);
    EXPECT_EQ(sum, long(n) * (n - 1) / 2);
}

TEST(Channel, BlockedThreadIsWokenByClose) {
    Channel<int> ch(1);
    std::atomic<int> res{1};
    std::thread t([&] { res = ch.recv_blocking().has_value() ? 2 : 0; });
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(res.load(), 1); // still blocked
    ch.close();
    t.join();
    EXPECT_EQ(res.load(), 0);
}

// Producers and consumers on two runtimes on two threads and on plain threads: every
// message arrives exactly once, and each consumer sees each producer's messages in order.
TEST(Channel, ManyMessagesAcrossRuntimesAndThreadsNothingLostOrDuplicated) {
    const long total = 10'000'000; // in every build, sanitizers included
    constexpr int task_producers = 2, thread_producers = 1, producers = task_producers + thread_producers;
    constexpr int task_consumers = 2, thread_consumers = 1, consumers = task_consumers + thread_consumers;
    const long per_producer = total / producers;
    Channel<std::uint64_t> ch(1024);
    std::vector<std::atomic<std::uint8_t>> seen(static_cast<std::size_t>(per_producer * producers));
    std::atomic<long> received{0}, out_of_order{0}, duplicates{0};
    std::atomic<int> producers_left{producers};

    auto consume_one = [&](std::uint64_t m, std::vector<long>& last) {
        int p = static_cast<int>(m >> 40);
        long seq = static_cast<long>(m & ((1ull << 40) - 1));
        if (seq <= last[static_cast<std::size_t>(p)])
            out_of_order.fetch_add(1, std::memory_order_relaxed);
        last[static_cast<std::size_t>(p)] = seq;
        if (seen[static_cast<std::size_t>(p * per_producer + seq)].fetch_add(1, std::memory_order_relaxed) != 0)
            duplicates.fetch_add(1, std::memory_order_relaxed);
        received.fetch_add(1, std::memory_order_relaxed);
    };
    auto producer_done = [&] {
        if (producers_left.fetch_sub(1) == 1)
            ch.close();
    };
    {
        ringo::RuntimePool pool(2);
        std::vector<ringo::JoinHandle<void>> hs;
        for (int p = 0; p < task_producers; ++p)
            hs.push_back(pool.spawn_on(static_cast<std::size_t>(p % 2),
                                       [](Channel<std::uint64_t>& c, int id, long n, auto done) -> Task<void> {
                                           for (long i = 0; i < n; ++i)
                                               EXPECT_EQ(co_await c.send((std::uint64_t(id) << 40) | std::uint64_t(i)),
                                                         0);
                                           done();
                                       }(ch, p, per_producer, producer_done)));
        for (int c = 0; c < task_consumers; ++c)
            hs.push_back(pool.spawn_on(static_cast<std::size_t>((c + 1) % 2),
                                       [](Channel<std::uint64_t>& ch2, auto consume) -> Task<void> {
                                           std::vector<long> last(producers, -1);
                                           while (auto m = co_await ch2.recv())
                                               consume(*m, last);
                                       }(ch, consume_one)));
        std::vector<std::thread> threads;
        for (int p = 0; p < thread_producers; ++p)
            threads.emplace_back([&, id = task_producers + p] {
                for (long i = 0; i < per_producer; ++i)
                    ASSERT_EQ(ch.send_blocking((std::uint64_t(id) << 40) | std::uint64_t(i)), 0);
                producer_done();
            });
        for (int c = 0; c < thread_consumers; ++c)
            threads.emplace_back([&] {
                std::vector<long> last(producers, -1);
                while (auto m = ch.recv_blocking())
                    consume_one(*m, last);
            });
        for (auto& t : threads)
            t.join();
        for (auto& h : hs)
            h.join();
    }
    EXPECT_EQ(received.load(), per_producer * producers);
    EXPECT_EQ(duplicates.load(), 0);
    EXPECT_EQ(out_of_order.load(), 0);
    long missing = 0;
    for (auto& s : seen)
        missing += s.load() == 0;
    EXPECT_EQ(missing, 0);
    (void)consumers;
}

TEST(Channel, PoolShutdownNowCancelsTasksWaitingOnAChannel) {
    Channel<int> empty(4), full(1);
    ASSERT_EQ(full.try_send(1), 0);
    std::atomic<int> ended{0};
    {
        ringo::RuntimePool pool(2);
        for (int i = 0; i < 6; ++i)
            pool.spawn([](Channel<int>& c, std::atomic<int>& e) -> Task<void> {
                    auto v = co_await c.recv(); // nothing ever comes
                    EXPECT_FALSE(v.has_value());
                    e.fetch_add(1);
                }(empty, ended))
                .detach();
        for (int i = 0; i < 2; ++i)
            pool.spawn([](Channel<int>& c, std::atomic<int>& e) -> Task<void> {
                    EXPECT_EQ(co_await c.send(9), -ECANCELED); // never any room
                    e.fetch_add(1);
                }(full, ended))
                .detach();
        std::this_thread::sleep_for(20ms); // everyone is waiting by now
        EXPECT_EQ(ended.load(), 0);
        pool.shutdown_now();
    }
    EXPECT_EQ(ended.load(), 8);
    EXPECT_FALSE(empty.is_closed());
    EXPECT_EQ(full.size(), 1u); // the cancelled sends sent nothing
}

// 100 000 rounds of start-then-cancel on a channel recv while another thread sends: each
// value is received exactly once, by a recv that completed or by the final drain.
TEST(Channel, CancelRecvRacingSendsLosesNothing) {
    const int rounds = 100'000;
    Channel<int> ch(0); // rendezvous: a value is either in a receiver's hands or not sent
    std::atomic<bool> stop{false};
    std::atomic<long> sent{0};
    std::thread sender([&] {
        int i = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            if (ch.try_send(i) == 0) {
                sent.fetch_add(1, std::memory_order_relaxed);
                ++i;
            }
        }
    });
    long got = run([&]() -> Task<long> {
        long n = 0;
        for (int r = 0; r < rounds; ++r) {
            auto h = ringo::spawn([](Channel<int>& c) -> Task<std::optional<int>> { co_return co_await c.recv(); }(ch));
            if (r % 4 != 0) {
                co_await ringo::yield(); // the receiver waits now (or already has a value)
                // Give the sender thread a window to hand a value over before the cancel
                // comes: 0.5 or 1 us, or (every fourth round) until it has sent one, 20 us at
                // most, so that the hand-over-then-cancel path surely runs.
                long before = sent.load();
                auto until =
                    std::chrono::steady_clock::now() + std::chrono::nanoseconds(r % 4 == 3 ? 20'000 : 500 * (r % 4));
                while (std::chrono::steady_clock::now() < until && !(r % 4 == 3 && sent.load() != before)) {
                }
            } // else: cancelled before it ever waits
            h.cancel();
            if (co_await h)
                ++n;
        }
        co_return n;
    });
    stop = true;
    sender.join();
    EXPECT_EQ(got, sent.load()); // every value sent was received by exactly one recv
    EXPECT_GT(got, 0);           // the race did happen
    std::printf("values handed over in the race: %ld of %d rounds\n", got, rounds);
    EXPECT_FALSE(ch.try_recv().has_value());
}

} // namespace
