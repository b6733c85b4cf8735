// when_all and when_any (compose/when.hpp), and composites nested in one another.
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
#include <utility>
#include <variant>
#include <vector>

#include "compose_helpers.hpp"

namespace {

// ---------------------------------------------------------------- when_all

TEST(WhenAll, OperationsGoInOneSubmission) {
    Runtime rt;
    auto before = rt.stats();
    auto r = rt.block_on([]() -> Task<std::tuple<int, int, int>> {
        co_return co_await ringo::when_all(op::nop(), op::nop(), op::nop());
    }());
    EXPECT_EQ(r, std::make_tuple(0, 0, 0));
    auto after = rt.stats();
    EXPECT_EQ(after.sqes_submitted - before.sqes_submitted, 3u);
    EXPECT_EQ(after.enters - before.enters, 1u);
}

TEST(WhenAll, VectorOfOperations) {
    auto r = run([]() -> Task<std::vector<int>> {
        std::vector<op::Nop> v(100);
        co_return co_await ringo::when_all(std::move(v));
    });
    ASSERT_EQ(r.size(), 100u);
    for (int x : r)
        EXPECT_EQ(x, 0);
    EXPECT_TRUE(
        run([]() -> Task<std::vector<int>> { co_return co_await ringo::when_all(std::vector<op::Nop>{}); }).empty());
}

TEST(WhenAll, MixedSuccessAndFailure) {
    const int bad = kNotAnFd;
    auto r = run([&]() -> Task<std::tuple<int, int>> {
        char c;
        co_return co_await ringo::when_all(op::nop(), op::read(bad, &c, 1, 0));
    });
    EXPECT_EQ(std::get<0>(r), 0);
    EXPECT_EQ(std::get<1>(r), -EBADF);
}

TEST(WhenAll, Tasks) {
    auto r = run([]() -> Task<std::tuple<int, std::string, std::monostate>> {
        co_return co_await ringo::when_all([]() -> Task<int> { co_return 1; }(),
                                           []() -> Task<std::string> {
                                               co_await ringo::sleep_for(1ms);
                                               co_return "two";
                                           }(),
                                           []() -> Task<void> { co_await ringo::yield(); }());
    });
    EXPECT_EQ(std::get<0>(r), 1);
    EXPECT_EQ(std::get<1>(r), "two");
}

TEST(WhenAll, RangeOfTasks) {
    auto r = run([]() -> Task<std::vector<int>> {
        std::vector<Task<int>> ts;
        for (int i = 0; i < 50; ++i)
            ts.push_back([](int k) -> Task<int> {
                co_await ringo::sleep_for(std::chrono::microseconds(50 - k));
                co_return k;
            }(i));
        co_return co_await ringo::when_all(std::move(ts));
    });
    ASSERT_EQ(r.size(), 50u);
    for (int i = 0; i < 50; ++i)
        EXPECT_EQ(r[i], i);
}

TEST(WhenAll, FirstExceptionCancelsTheOthersAndIsRethrown) {
    SocketPair sp;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(run([&]() -> Task<void> {
                     co_await ringo::when_all(
                         [](int fd) -> Task<int> {
                             char c;
                             co_return co_await op::recv(fd, &c, 1); // would wait forever
                         }(sp.fd[0]),
                         []() -> Task<int> {
                             co_await ringo::yield();
                             throw std::runtime_error("branch failed");
                         }());
                 }),
                 std::runtime_error);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(WhenAll, CancelledWhileWaitingCancelsEveryOperation) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::tuple<int, int>> {
        auto h = ringo::spawn([](int fd) -> Task<std::tuple<int, int>> {
            char a, b;
            co_return co_await ringo::when_all(op::recv(fd, &a, 1), op::recv(fd, &b, 1));
        }(sp.fd[0]));
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, std::make_tuple(-ECANCELED, -ECANCELED));
}

// ---------------------------------------------------------------- when_any

TEST(WhenAny, FirstToFinishWinsAndLosersAreCancelled) {
    SocketPair sp;
    Runtime rt;
    auto r = rt.block_on([](int fd) -> Task<std::pair<std::size_t, int>> {
        char c;
        co_return co_await ringo::when_any(op::recv(fd, &c, 1), op::timeout(5ms));
    }(sp.fd[0]));
    EXPECT_EQ(r.first, 1u);
    EXPECT_EQ(r.second, -ETIME);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u); // the losing recv reached its final CQE
}

TEST(WhenAny, TwoCompletingInTheSameBatch) {
    Runtime rt;
    std::uint32_t left = 99;
    auto enters = rt.stats().enters;
    auto r = rt.block_on([](std::uint32_t* l) -> Task<std::pair<std::size_t, int>> {
        auto res = co_await ringo::when_any(op::nop(), op::nop());
        *l = in_flight(); // the loser's CQE was in too
        co_return res;
    }(&left));
    EXPECT_LT(r.first, 2u);
    EXPECT_EQ(r.second, 0);
    EXPECT_EQ(left, 0u);
    EXPECT_EQ(rt.stats().enters - enters, 1u); // both nops (and the loser's futile cancel) in one round trip
}

TEST(WhenAny, LoserThatCompletesAfterTheCancel) {
    // The loser is a recv in the kernel when the winner (a timeout) ends: its ASYNC_CANCEL is
    // submitted, and only its own CQE, which comes after that, lets when_any return.
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    struct Out {
        std::pair<std::size_t, int> res;
        int loser = kUnset;
        std::uint32_t in_flight = 99;
        std::uint64_t sqes = 0;
    };
    Out o = rt.block_on([](Runtime* rtp, int fd, int peer, char* b) -> Task<Out> {
        Out out;
        auto before = rtp->stats().sqes_submitted;
        out.res = co_await ringo::when_any(op::timeout(2ms), [](int f, char* bb, int* l) -> Task<int> {
            *l = co_await op::recv(f, bb, 4);
            co_return *l;
        }(fd, b, &out.loser));
        out.in_flight = in_flight();
        out.sqes = rtp->stats().sqes_submitted - before;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(&rt, sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(o.res.first, 0u);
    EXPECT_EQ(o.res.second, -ETIME);
    EXPECT_EQ(o.loser, -ECANCELED); // the loser's final CQE had come when when_any returned
    EXPECT_EQ(o.in_flight, 0u);
    EXPECT_EQ(o.sqes, 3u); // the timeout, the recv, and the recv's ASYNC_CANCEL
}

TEST(WhenAny, LoserWhoseCqeComesLongAfterItsCancel) {
    RINGO_IO_URING_ONLY("a cancel that interrupts an open(2) blocked in an io-wq worker");
    // The loser is an open(2) blocked in an io-wq worker: the ASYNC_CANCEL only interrupts the
    // worker, and the open's CQE follows later. when_any waits for it.
    BlockingOpen fifo;
    Runtime rt;
    int opened = kUnset;
    struct Out {
        std::pair<std::size_t, int> res;
        int seen = kUnset;
        std::uint32_t in_flight = 99;
    };
    Out o = rt.block_on([](BlockingOpen* f, int* oo) -> Task<Out> {
        Out out;
        out.res = co_await ringo::when_any([]() -> Task<int> { co_return co_await ringo::sleep_for(5ms); }(),
                                           BlockingOpen::open_into(f, oo));
        out.seen = *oo;
        out.in_flight = in_flight();
        co_return out;
    }(&fifo, &opened));
    EXPECT_FALSE(fifo.rescued.load());
    EXPECT_EQ(o.res, std::make_pair(std::size_t{0}, 0));
    EXPECT_NE(o.seen, kUnset); // the loser had ended when when_any returned
    EXPECT_LT(o.seen, 0);
    EXPECT_EQ(o.in_flight, 0u);
}

TEST(WhenAny, SleepAsAnArgument) {
    // A sleep passed by value (moved into its branch) still wakes its branch when it fires.
    SocketPair sp;
    auto r = run([&]() -> Task<std::pair<std::size_t, int>> {
        char c;
        co_return co_await ringo::when_any(op::recv(sp.fd[0], &c, 1), ringo::sleep_for(1ms));
    });
    EXPECT_EQ(r, std::make_pair(std::size_t{1}, 0));
}

TEST(WhenAny, CancelledWhileWaitingAwaitsEveryBranchToItsFinalCqe) {
    RINGO_IO_URING_ONLY("a cancel that interrupts an open(2) blocked in an io-wq worker");
    // Cancelling the task that awaits when_any cancels every branch; it resumes once each
    // branch's operation has delivered its final CQE (the open's comes well after its cancel),
    // and yields whichever branch ended first, with its (cancelled) result.
    SocketPair sp;
    BlockingOpen fifo;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    int opened = kUnset;
    struct Out {
        std::pair<std::size_t, int> res;
        int seen = kUnset;
        std::uint32_t in_flight = 99;
    };
    Out o = rt.block_on([](int fd, int peer, char* b, BlockingOpen* f, int* oo) -> Task<Out> {
        auto h = ringo::spawn([](int ff, char* bb, BlockingOpen* fi, int* ooo) -> Task<Out> {
            Out out;
            out.res = co_await ringo::when_any(
                [](int x, char* y) -> Task<int> { co_return co_await op::recv(x, y, 4); }(ff, bb),
                BlockingOpen::open_into(fi, ooo));
            out.seen = *ooo;
            out.in_flight = in_flight();
            co_return out;
        }(fd, b, f, oo));
        co_await ringo::sleep_for(5ms);
        EXPECT_EQ(in_flight(), 2u);
        h.cancel();
        Out out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf, &fifo, &opened));
    EXPECT_FALSE(fifo.rescued.load());
    EXPECT_NE(o.seen, kUnset);
    EXPECT_LT(o.seen, 0);
    EXPECT_EQ(o.in_flight, 0u);
    ASSERT_LT(o.res.first, 2u);
    EXPECT_EQ(o.res.second, o.res.first == 0 ? -ECANCELED : o.seen);
}

TEST(WhenAny, WinnerExceptionIsRethrown) {
    EXPECT_THROW(run([]() -> Task<void> {
                     co_await ringo::when_any(
                         []() -> Task<int> {
                             throw std::logic_error("x");
                             co_return 0;
                         }(),
                         []() -> Task<int> { co_return co_await ringo::sleep_for(5s); }());
                 }),
                 std::logic_error);
}

TEST(WhenAny, EmptyRangeThrows) {
    EXPECT_THROW(run([]() -> Task<void> { co_await ringo::when_any(std::vector<Task<int>>{}); }),
                 std::invalid_argument);
}

TEST(WhenAny, Range) {
    auto r = run([]() -> Task<std::pair<std::size_t, int>> {
        std::vector<Task<int>> ts;
        for (int i = 0; i < 5; ++i)
            ts.push_back([](int k) -> Task<int> {
                co_await ringo::sleep_for(std::chrono::milliseconds(k == 3 ? 1 : 5000));
                co_return k * 10;
            }(i));
        co_return co_await ringo::when_any(std::move(ts));
    });
    EXPECT_EQ(r.first, 3u);
    EXPECT_EQ(r.second, 30);
}

// Branches of different result types: a std::variant of them (std::monostate for void),
// holding the winner as the alternative of its index; the losers are cancelled.
Task<void> sleeps_then_notes(bool* cancelled) {
    int r = co_await ringo::sleep_for(5s);
    *cancelled = r == -ECANCELED;
}

TEST(WhenAny, MixedTypesYieldAVariant) {
    bool void_loser_cancelled = false;
    auto r = run([c = &void_loser_cancelled]() -> Task<std::variant<std::monostate, int, std::string>> {
        co_return co_await ringo::when_any(
            sleeps_then_notes(c), []() -> Task<int> { co_return 7; }(),
            []() -> Task<std::string> {
                co_await ringo::sleep_for(5s);
                co_return std::string("late");
            }());
    });
    ASSERT_EQ(r.index(), 1u);
    EXPECT_EQ(std::get<1>(r), 7);
    EXPECT_TRUE(void_loser_cancelled);
}

TEST(WhenAny, AVoidWinnerIsMonostate) {
    auto r = run([]() -> Task<std::variant<std::monostate, int>> {
        co_return co_await ringo::when_any([]() -> Task<void> { co_return; }(),
                                           []() -> Task<int> {
                                               co_await ringo::sleep_for(5s);
                                               co_return 1;
                                           }());
    });
    EXPECT_EQ(r.index(), 0u);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(r));
}

// A type that appears twice keeps the winner's index: alternative 2, not 0.
TEST(WhenAny, ARepeatedTypeKeepsTheWinnersIndex) {
    auto r = run([]() -> Task<std::variant<int, std::string, int>> {
        co_return co_await ringo::when_any(
            []() -> Task<int> {
                co_await ringo::sleep_for(5s);
                co_return 1;
            }(),
            []() -> Task<std::string> {
                co_await ringo::sleep_for(5s);
                co_return std::string("no");
            }(),
            []() -> Task<int> { co_return 3; }());
    });
    ASSERT_EQ(r.index(), 2u);
    EXPECT_EQ(std::get<2>(r), 3);
}

// An operation (int) against a Task<void>, and an operation winning: index 0.
TEST(WhenAny, MixedWithAnOperation) {
    auto r = run([]() -> Task<std::variant<int, std::monostate>> {
        co_return co_await ringo::when_any(op::nop(), []() -> Task<void> { co_await ringo::sleep_for(5s); }());
    });
    ASSERT_EQ(r.index(), 0u);
    EXPECT_EQ(std::get<0>(r), 0);
}

TEST(WhenAny, MixedTypesRethrowTheWinnersException) {
    EXPECT_THROW(run([]() -> Task<void> {
                     co_await ringo::when_any(
                         []() -> Task<void> {
                             throw std::logic_error("x");
                             co_return;
                         }(),
                         []() -> Task<int> { co_return co_await ringo::sleep_for(5s); }());
                 }),
                 std::logic_error);
}

// ---------------------------------------------------------------- nested composites

// link / hard_link / drain take operations only: a composite (a link, an operation when_all)
// is no Operation, so nesting one in a link is a compile error. when_all / when_any /
// with_timeout take any awaitable, so a link can be one of their branches.
template <class... A>
concept Linkable = requires(A&&... a) {
    ringo::link(std::forward<A>(a)...);
};
template <class... A>
concept HardLinkable = requires(A&&... a) {
    ringo::hard_link(std::forward<A>(a)...);
};
template <class A>
concept Drainable = requires(A&& a) {
    ringo::drain(std::forward<A>(a));
};

using NopChain = decltype(ringo::link(op::nop(), op::nop()));
using NopGroup = decltype(ringo::when_all(op::nop(), op::nop()));
static_assert(Linkable<op::Nop, op::Nop> && HardLinkable<op::Nop, op::Nop> && Drainable<op::Nop>);
static_assert(Linkable<std::vector<op::Nop>>);
static_assert(!ringo::Operation<NopChain> && !ringo::Operation<NopGroup>);
static_assert(!Linkable<NopChain, op::Nop>);
static_assert(!Linkable<op::Nop, NopGroup>);
static_assert(!HardLinkable<NopChain>);
static_assert(!Linkable<std::vector<NopChain>>);
static_assert(!Linkable<op::Nop, Task<int>>);
static_assert(!Drainable<NopChain>);

TEST(Nested, WhenAllOfALinkAndAnOperation) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    char buf[4] = {};
    auto r = run([&]() -> Task<std::tuple<std::tuple<int, int>, int>> {
        co_return co_await ringo::when_all(
            ringo::link(op::write(p[1], "abc", 3, op::current_pos), op::read(p[0], buf, 3, op::current_pos)),
            op::nop());
    });
    EXPECT_EQ(std::get<0>(r), std::make_tuple(3, 3));
    EXPECT_EQ(std::get<1>(r), 0);
    EXPECT_EQ(std::string(buf, 3), "abc");
    ::close(p[0]);
    ::close(p[1]);
}

TEST(Nested, WhenAnyOfLinksAwaitsTheLosingChain) {
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    auto r = rt.block_on(
        [](int fd, int peer, char* b) -> Task<std::pair<std::pair<std::size_t, std::tuple<int, int>>, std::uint32_t>> {
            auto res = co_await ringo::when_any(ringo::link(op::recv(fd, b, 4), op::nop()),
                                                ringo::hard_link(op::timeout(2ms), op::nop()));
            auto left = in_flight();
            co_await expect_no_recv_left(fd, peer, b, 4);
            co_return std::pair{res, left};
        }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(r.first.first, 1u);
    EXPECT_EQ(r.first.second, std::make_tuple(-ETIME, 0));
    EXPECT_EQ(r.second, 0u); // the losing chain's recv and nop had both delivered their CQEs
}

TEST(Nested, CancellingWhenAllOfTasksContainingLinks) {
    SocketPair sp;
    char a[4] = {'-', '-', '-', '-'}, b[4] = {'-', '-', '-', '-'};
    Runtime rt;
    using Chains = std::tuple<std::tuple<int, int>, std::tuple<int, int>>;
    auto r = rt.block_on([](int fd, int peer, char* x, char* y) -> Task<std::pair<Chains, std::uint32_t>> {
        auto h = ringo::spawn([](int f, char* xx, char* yy) -> Task<std::pair<Chains, std::uint32_t>> {
            auto chain = [](int ff, char* p) -> Task<std::tuple<int, int>> {
                co_return co_await ringo::link(op::recv(ff, p, 4), op::nop());
            };
            auto res = co_await ringo::when_all(chain(f, xx), chain(f, yy));
            co_return std::pair{res, in_flight()};
        }(fd, x, y));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 4u);
        h.cancel();
        auto out = co_await h;
        co_await expect_no_recv_left(fd, peer, x, 4);
        EXPECT_EQ(std::string(y, 4), "----");
        co_return out;
    }(sp.fd[0], sp.fd[1], a, b));
    auto cancelled = std::make_tuple(-ECANCELED, -ECANCELED);
    EXPECT_EQ(r.first, std::make_tuple(cancelled, cancelled));
    EXPECT_EQ(r.second, 0u);
}

TEST(Nested, WithTimeoutOnALink) {
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    auto r = rt.block_on([](int fd, int peer, char* b) -> Task<std::pair<bool, std::uint32_t>> {
        auto res = co_await ringo::with_timeout(ringo::link(op::recv(fd, b, 4), op::nop()), 5ms);
        auto left = in_flight();
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return std::pair{!res.timed_out(), left};
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_FALSE(r.first); // timed out: the deadline cancelled the chain
    EXPECT_EQ(r.second, 0u);
}

// with_timeout(when_any(when_all(recv a, recv b), when_all(timeout t, nop)), deadline): three
// levels of composites, each of which must cancel and await what is below it.
using Pair = std::tuple<int, int>;
using Nest = ringo::Timed<std::pair<std::size_t, Pair>>;
Task<std::pair<Nest, std::uint32_t>> nested_three_levels(int fa, int fb, char* a, char* b, std::chrono::nanoseconds t,
                                                         std::chrono::nanoseconds deadline) {
    auto res = co_await ringo::with_timeout(ringo::when_any(ringo::when_all(op::recv(fa, a, 4), op::recv(fb, b, 4)),
                                                            ringo::when_all(op::timeout(t), op::nop())),
                                            deadline);
    co_return std::pair{res, in_flight()};
}

TEST(Nested, WhenAllInsideWhenAnyInsideWithTimeout) {
    SocketPair x, y;
    char a[4] = {'-', '-', '-', '-'}, b[4] = {'-', '-', '-', '-'};
    Runtime rt;
    // 1. The timeout branch wins after 1 ms: both recvs of the other when_all are cancelled and
    //    awaited to their final CQE before anything returns.
    auto r1 = rt.block_on([](int fa, int fb, int pa, char* ba, char* bb) -> Task<std::pair<Nest, std::uint32_t>> {
        auto r = co_await nested_three_levels(fa, fb, ba, bb, 1ms, 5s);
        co_await expect_no_recv_left(fa, pa, ba, 4);
        co_return r;
    }(x.fd[0], y.fd[0], x.fd[1], a, b));
    ASSERT_FALSE(r1.first.timed_out());
    EXPECT_EQ(r1.first->first, 1u);
    EXPECT_EQ(r1.first->second, Pair(-ETIME, 0));
    EXPECT_EQ(r1.second, 0u);
    EXPECT_EQ(std::string(b, 4), "----");
    // 2. The deadline (2 ms) comes before either branch ends (the timeout branch waits 10 s):
    //    everything below is cancelled; with_timeout yields nullopt, fast, with nothing in flight.
    auto t0 = std::chrono::steady_clock::now();
    auto r2 = rt.block_on(nested_three_levels(x.fd[0], y.fd[0], a, b, 10s, 2ms));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_TRUE(r2.first.timed_out());
    EXPECT_EQ(r2.second, 0u);
    EXPECT_EQ(std::string(a, 4), "----");
    EXPECT_EQ(std::string(b, 4), "----");
    // 3. Data waits on both sockets: the recv branch wins at once with both bytes; the 10 s
    //    timeout of the losing branch is cancelled (the test does not take 10 s).
    ASSERT_EQ(::write(x.fd[1], "A", 1), 1);
    ASSERT_EQ(::write(y.fd[1], "B", 1), 1);
    t0 = std::chrono::steady_clock::now();
    auto r3 = rt.block_on(nested_three_levels(x.fd[0], y.fd[0], a, b, 10s, 5s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    ASSERT_FALSE(r3.first.timed_out());
    EXPECT_EQ(r3.first->first, 0u);
    EXPECT_EQ(r3.first->second, Pair(1, 1));
    EXPECT_EQ(a[0], 'A');
    EXPECT_EQ(b[0], 'B');
    EXPECT_EQ(r3.second, 0u);
}

// ---------------------------------------------------------------- bad input
// Bad input, each with the result docs/compose.md ("Bad input") documents.

TEST(BadInput, WhenAnyOfAnEmptyRangeThrowsInvalidArgument) {
    auto r = run([]() -> Task<std::tuple<int, std::size_t, std::size_t, int>> {
        int threw = 0;
        try {
            co_await ringo::when_any(std::vector<Task<int>>{});
        } catch (const std::invalid_argument&) {
            ++threw;
        }
        // The empty when_all ranges are no error: an empty result at once.
        auto a = co_await ringo::when_all(std::vector<Task<int>>{});
        auto b = co_await ringo::when_all(std::vector<op::Nop>{});
        co_return std::tuple{threw, a.size(), b.size(), co_await op::nop()};
    });
    EXPECT_EQ(r, std::make_tuple(1, std::size_t{0}, std::size_t{0}, 0));
}

} // namespace
