#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;
using ringo::Runtime;
using ringo::Task;
namespace op = ringo::op;

namespace {

// A descriptor number far above anything the tests open (a closed fd number could be reused
// by the runtime's own eventfd or ring).
constexpr int kNotAnFd = 1 << 20;

struct SocketPair {
    int fd[2];
    SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
    ~SocketPair() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
};

template <class F>
auto run(F f) {
    Runtime rt;
    return rt.block_on(f());
}

// ---------------------------------------------------------------- sleep

TEST(Sleep, SleepsAtLeastTheDuration) {
    auto t0 = std::chrono::steady_clock::now();
    int r = run([]() -> Task<int> { co_return co_await ringo::sleep_for(15ms); });
    EXPECT_EQ(r, 0);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 15ms);
}

TEST(Sleep, NonPositiveDurationReturnsAtOnce) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await ringo::sleep_for(-5ms) + co_await ringo::sleep_for(0ms); }), 0);
}

TEST(Sleep, ManySleepersWakeInDeadlineOrder) {
    auto order = run([]() -> Task<std::string> {
        std::string s;
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i : {3, 1, 2}) {
            hs.push_back(ringo::spawn([](std::string& out, int k) -> Task<void> {
                co_await ringo::sleep_for(std::chrono::milliseconds(5 * k));
                out += char('0' + k);
            }(s, i)));
        }
        for (auto& h : hs)
            co_await h;
        co_return s;
    });
    EXPECT_EQ(order, "123");
}

TEST(Sleep, SleepUntil) {
    auto deadline = std::chrono::steady_clock::now() + 10ms;
    run([&]() -> Task<void> { EXPECT_EQ(co_await ringo::sleep_until(deadline), 0); });
    EXPECT_GE(std::chrono::steady_clock::now(), deadline);
}

// ---------------------------------------------------------------- cancellation

TEST(Cancel, CancelsPendingRecvAfterItsFinalCqe) {
    SocketPair sp;
    int r = run([&]() -> Task<int> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            char buf[16];
            co_return co_await op::recv(fd, buf, sizeof buf);
        }(sp.fd[0]));
        co_await ringo::yield(); // the recv is now in flight
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, -ECANCELED);
}

TEST(Cancel, OperationsAfterCancelFailFast) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::pair<int, int>> {
        auto h = ringo::spawn([](int fd) -> Task<std::pair<int, int>> {
            char buf[4];
            int a = co_await op::recv(fd, buf, sizeof buf);
            int b = co_await op::nop();
            co_return std::pair{a, b};
        }(sp.fd[0]));
        co_await ringo::yield();
        h.cancel();
        h.cancel(); // idempotent
        co_return co_await h;
    });
    EXPECT_EQ(r.first, -ECANCELED);
    EXPECT_EQ(r.second, -ECANCELED);
}

TEST(Cancel, CancelBeforeTheTaskStarts) {
    int r = run([]() -> Task<int> {
        auto h = ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }());
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, -ECANCELED);
}

TEST(Cancel, CancellingAFinishedTaskDoesNothing) {
    int r = run([]() -> Task<int> {
        auto h = ringo::spawn([]() -> Task<int> { co_return 7; }());
        co_await ringo::yield();
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, 7);
}

TEST(Cancel, CompletedResultWinsOverLateCancel) {
    // Data already waiting: the recv completes inline with it; a cancel after that changes nothing.
    SocketPair sp;
    ASSERT_EQ(::write(sp.fd[1], "ab", 2), 2);
    int r = run([&]() -> Task<int> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            char buf[4];
            co_return co_await op::recv(fd, buf, sizeof buf);
        }(sp.fd[0]));
        co_await ringo::yield();
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, 2);
}

TEST(Cancel, PropagatesThroughNestedTasksAndJoins) {
    SocketPair sp;
    int r = run([&]() -> Task<int> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            auto inner = [](int f) -> Task<int> {
                char buf[4];
                co_return co_await op::recv(f, buf, sizeof buf);
            };
            auto child = ringo::spawn(inner(fd));
            int a = co_await child; // cancelling us cancels what we wait for
            int b = co_await inner(fd);
            co_return a + b;
        }(sp.fd[0]));
        co_await ringo::yield();
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, -2 * ECANCELED);
}

TEST(Cancel, SleepIsCancellable) {
    auto t0 = std::chrono::steady_clock::now();
    int r = run([]() -> Task<int> {
        auto h = ringo::spawn([]() -> Task<int> { co_return co_await ringo::sleep_for(10s); }());
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(Cancel, CancellationRequestedIsObservable) {
    auto r = run([]() -> Task<std::pair<bool, bool>> {
        auto h = ringo::spawn([]() -> Task<std::pair<bool, bool>> {
            bool before = co_await ringo::cancellation_requested();
            co_await ringo::sleep_for(10s);
            bool after = co_await ringo::cancellation_requested();
            co_return std::pair{before, after};
        }());
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_FALSE(r.first);
    EXPECT_TRUE(r.second);
}

TEST(Cancel, FromAnotherThreadNeverBlocks) {
    SocketPair sp;
    std::atomic<ringo::JoinHandle<int>*> handle{nullptr};
    std::thread canceller([&] {
        while (!handle.load())
            std::this_thread::yield();
        handle.load()->cancel();
    });
    int r = run([&]() -> Task<int> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            char buf[4];
            co_return co_await op::recv(fd, buf, sizeof buf);
        }(sp.fd[0]));
        co_await ringo::yield();
        handle.store(&h);
        co_return co_await h;
    });
    canceller.join();
    EXPECT_EQ(r, -ECANCELED);
}

// ---------------------------------------------------------------- with_timeout

TEST(WithTimeout, OperationTimesOutWithEtime) {
    SocketPair sp;
    int r = run([&]() -> Task<int> {
        char buf[8];
        co_return co_await ringo::with_timeout(op::recv(sp.fd[0], buf, sizeof buf), 10ms);
    });
    EXPECT_EQ(r, -ETIME);
}

TEST(WithTimeout, OperationFinishingInTimeKeepsItsResult) {
    SocketPair sp;
    ASSERT_EQ(::write(sp.fd[1], "hello", 5), 5);
    int r = run([&]() -> Task<int> {
        char buf[8];
        co_return co_await ringo::with_timeout(op::recv(sp.fd[0], buf, sizeof buf), 1s);
    });
    EXPECT_EQ(r, 5);
}

TEST(WithTimeout, NonPositiveDurationDoesNotSubmit) {
    SocketPair sp;
    Runtime rt;
    auto before = rt.stats().sqes_submitted;
    int r = rt.block_on([](int fd) -> Task<int> {
        char buf[8];
        co_return co_await ringo::with_timeout(op::recv(fd, buf, sizeof buf), -1ms);
    }(sp.fd[0]));
    EXPECT_EQ(r, -ETIME);
    EXPECT_EQ(rt.stats().sqes_submitted, before);
}

TEST(WithTimeout, OnATask) {
    auto slow = []() -> Task<std::string> {
        co_await ringo::sleep_for(10s);
        co_return "slow";
    };
    auto fast = []() -> Task<std::string> {
        co_await ringo::sleep_for(1ms);
        co_return "fast";
    };
    auto r = run([&]() -> Task<std::pair<std::optional<std::string>, std::optional<std::string>>> {
        auto a = co_await ringo::with_timeout(slow(), 10ms);
        auto b = co_await ringo::with_timeout(fast(), 5s);
        co_return std::pair{a, b};
    });
    EXPECT_FALSE(r.first.has_value());
    ASSERT_TRUE(r.second.has_value());
    EXPECT_EQ(*r.second, "fast");
}

TEST(WithTimeout, OnVoidTaskAndSleep) {
    auto r = run([]() -> Task<std::pair<bool, int>> {
        bool done = co_await ringo::with_timeout([]() -> Task<void> { co_await ringo::sleep_for(1ms); }(), 5s);
        int s = co_await ringo::with_timeout(ringo::sleep_for(10s), 5ms);
        co_return std::pair{done, s};
    });
    EXPECT_TRUE(r.first);
    EXPECT_EQ(r.second, -ETIME);
}

TEST(WithTimeout, OnWhenAll) {
    SocketPair sp;
    auto r = run([&]() -> Task<bool> {
        char a[4], b[4];
        auto res = co_await ringo::with_timeout(
            ringo::when_all([](int fd, char* p) -> Task<int> { co_return co_await op::recv(fd, p, 4); }(sp.fd[0], a),
                            [](int fd, char* p) -> Task<int> { co_return co_await op::recv(fd, p, 4); }(sp.fd[0], b)),
            10ms);
        co_return res.has_value();
    });
    // Cancelled recvs return -ECANCELED in both branches; the tuple is discarded.
    EXPECT_FALSE(r);
}

TEST(WithTimeout, ExceptionsPropagate) {
    EXPECT_THROW(run([]() -> Task<void> {
                     co_await ringo::with_timeout([]() -> Task<int> {
                         throw std::runtime_error("inner");
                         co_return 1;
                     }(), 1s);
                 }),
                 std::runtime_error);
}

TEST(WithTimeout, ManyPendingTimeoutsUseNoKernelTimeouts) {
    // 10 000 waits on recvs that never complete, all with timeouts: the runtime keeps the
    // deadlines itself; the kernel never sees a TIMEOUT SQE (only the recvs and their cancels).
    SocketPair sp;
    Runtime rt;
    int timed_out = rt.block_on([](int fd) -> Task<int> {
        constexpr int n = 10000;
        std::vector<ringo::JoinHandle<int>> hs;
        hs.reserve(n);
        for (int i = 0; i < n; ++i)
            hs.push_back(ringo::spawn([](int f) -> Task<int> {
                char c;
                co_return co_await ringo::with_timeout(op::recv(f, &c, 1), 20ms);
            }(fd)));
        int count = 0;
        for (auto& h : hs)
            count += (co_await h == -ETIME);
        co_return count;
    }(sp.fd[0]));
    EXPECT_EQ(timed_out, 10000);
    EXPECT_EQ(rt.timers_pending(), 0u);
    // 10 000 recvs + at most 10 000 cancels; a kernel timeout per wait would add 10 000 more.
    EXPECT_LE(rt.stats().sqes_submitted, 20001u);
}

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
    EXPECT_TRUE(run([]() -> Task<std::vector<int>> { co_return co_await ringo::when_all(std::vector<op::Nop>{}); }).empty());
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
    auto r = run([]() -> Task<std::pair<std::size_t, int>> { co_return co_await ringo::when_any(op::nop(), op::nop()); });
    EXPECT_LT(r.first, 2u);
    EXPECT_EQ(r.second, 0);
}

TEST(WhenAny, LoserThatCompletesAfterTheCancel) {
    // The loser is a sleep whose cancellation is immediate, and a task that ignores
    // cancellation for a moment: when_any still waits for both.
    auto r = run([]() -> Task<std::pair<std::size_t, int>> {
        co_return co_await ringo::when_any([]() -> Task<int> { co_return 1; }(),
                                           []() -> Task<int> {
                                               for (int i = 0; i < 10; ++i)
                                                   co_await ringo::yield();
                                               co_return 2;
                                           }());
    });
    EXPECT_EQ(r.first, 0u);
    EXPECT_EQ(r.second, 1);
}

TEST(WhenAny, WinnerExceptionIsRethrown) {
    EXPECT_THROW(run([]() -> Task<void> {
                     co_await ringo::when_any([]() -> Task<int> { throw std::logic_error("x"); co_return 0; }(),
                                              []() -> Task<int> { co_return co_await ringo::sleep_for(5s); }());
                 }),
                 std::logic_error);
}

TEST(WhenAny, EmptyRangeThrows) {
    EXPECT_THROW(run([]() -> Task<void> { co_await ringo::when_any(std::vector<Task<int>>{}); }), std::invalid_argument);
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

// ---------------------------------------------------------------- link

TEST(Link, ChainRunsInOrder) {
    ringo_test::TempDir dir;
    std::string path = dir.file("l");
    int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
    auto r = run([&]() -> Task<std::tuple<int, int, int>> {
        char buf[8] = {};
        auto res = co_await ringo::link(op::write(fd, "linked", 6, 0), op::fsync(fd), op::read(fd, buf, 6, 0));
        EXPECT_EQ(std::string(buf, 6), "linked");
        co_return res;
    });
    EXPECT_EQ(r, std::make_tuple(6, 0, 6));
    ::close(fd);
}

TEST(Link, FirstFailureCancelsTheRest) {
    const int bad = kNotAnFd;
    auto r = run([&]() -> Task<std::tuple<int, int, int>> {
        char c;
        co_return co_await ringo::link(op::read(bad, &c, 1, 0), op::nop(), op::nop());
    });
    EXPECT_EQ(r, std::make_tuple(-EBADF, -ECANCELED, -ECANCELED));
}

TEST(Link, HardLinkContinuesAfterFailure) {
    const int bad = kNotAnFd;
    auto r = run([&]() -> Task<std::tuple<int, int>> {
        char c;
        co_return co_await ringo::hard_link(op::read(bad, &c, 1, 0), op::nop());
    });
    EXPECT_EQ(r, std::make_tuple(-EBADF, 0));
}

TEST(Link, ChainIsNeverSplitAcrossSubmissions) {
    // SQ of 4 with 3 SQEs already gathered: a chain of 3 must not start in the leftover slot.
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(4)};
    auto r = rt.block_on([]() -> Task<std::tuple<int, int, int>> {
        auto a = ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }());
        auto b = ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }());
        auto c = ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }());
        auto res = co_await ringo::link(op::nop(), op::timeout(1ms), op::nop());
        co_await a;
        co_await b;
        co_await c;
        co_return res;
    }());
    EXPECT_EQ(std::get<0>(r), 0);
    EXPECT_EQ(std::get<1>(r), -ETIME); // a timeout ending by time counts as failure in a link
    EXPECT_EQ(std::get<2>(r), -ECANCELED);
}

TEST(Link, LongerThanTheSqIsEinval) {
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(2)};
    auto r = rt.block_on([]() -> Task<std::tuple<int, int, int>> { co_return co_await ringo::link(op::nop(), op::nop(), op::nop()); }());
    EXPECT_EQ(r, std::make_tuple(-EINVAL, -EINVAL, -EINVAL));
}

TEST(Decorators, DrainAndAlwaysAsync) {
    auto r = run([]() -> Task<std::pair<int, int>> {
        int a = co_await ringo::drain(op::nop());
        int b = co_await ringo::always_async(op::nop());
        co_return std::pair{a, b};
    });
    EXPECT_EQ(r, std::make_pair(0, 0));
    static_assert(ringo::Operation<op::Nop>);
    static_assert(!ringo::Operation<Task<int>>);
    static_assert(!ringo::Operation<ringo::detail::SleepAwaiter>);
}

// ---------------------------------------------------------------- TaskScope

TEST(Scope, JoinsEveryTask) {
    int sum = run([]() -> Task<int> {
        int total = 0;
        ringo::TaskScope scope;
        for (int i = 1; i <= 10; ++i)
            scope.spawn([](int& t, int k) -> Task<void> {
                co_await ringo::sleep_for(std::chrono::microseconds(100 * k));
                t += k;
            }(total, i));
        co_await scope.join();
        co_return total;
    });
    EXPECT_EQ(sum, 55);
}

TEST(Scope, FirstExceptionCancelsOthersAndIsRethrown) {
    SocketPair sp;
    int cancelled = 0;
    EXPECT_THROW(run([&]() -> Task<void> {
                     ringo::TaskScope scope;
                     for (int i = 0; i < 3; ++i)
                         scope.spawn([](int fd, int& c) -> Task<void> {
                             char b;
                             if (co_await op::recv(fd, &b, 1) == -ECANCELED)
                                 ++c;
                         }(sp.fd[0], cancelled));
                     scope.spawn([]() -> Task<void> {
                         co_await ringo::yield();
                         throw std::runtime_error("one failed");
                     }());
                     co_await scope.join();
                 }),
                 std::runtime_error);
    EXPECT_EQ(cancelled, 3);
}

TEST(Scope, ScopedAlwaysJoinsEvenWhenTheBodyThrows) {
    SocketPair sp;
    int cancelled = 0;
    EXPECT_THROW(run([&]() -> Task<void> {
                     co_await ringo::scoped([&](ringo::TaskScope& s) -> Task<void> {
                         s.spawn([](int fd, int& c) -> Task<void> {
                             char b;
                             if (co_await op::recv(fd, &b, 1) == -ECANCELED)
                                 ++c;
                         }(sp.fd[0], cancelled));
                         co_await ringo::yield();
                         throw std::runtime_error("body");
                     });
                 }),
                 std::runtime_error);
    EXPECT_EQ(cancelled, 1); // joined before the exception left scoped()
}

TEST(Scope, CancellingTheJoinerCancelsTheScope) {
    SocketPair sp;
    int r = run([&]() -> Task<int> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            int c = 0;
            co_await ringo::scoped([&](ringo::TaskScope& s) -> Task<void> {
                for (int i = 0; i < 4; ++i)
                    s.spawn([](int f, int& cc) -> Task<void> {
                        char b;
                        if (co_await op::recv(f, &b, 1) == -ECANCELED)
                            ++cc;
                    }(fd, c));
                co_return;
            });
            co_return c;
        }(sp.fd[0]));
        co_await ringo::sleep_for(1ms);
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, 4);
}

TEST(Scope, DroppedScopeCancelsItsTasks) {
    SocketPair sp;
    Runtime rt;
    rt.block_on([](int fd) -> Task<void> {
        {
            ringo::TaskScope scope;
            scope.spawn([](int f) -> Task<void> {
                char b;
                co_await op::recv(f, &b, 1);
            }(fd));
            co_await ringo::yield();
        } // not joined: cancelled, finishes on its own
        co_await ringo::sleep_for(5ms);
    }(sp.fd[0]));
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

// ---------------------------------------------------------------- stress

template <class Make>
void start_then_cancel(int iterations, Make make) {
    Runtime rt;
    int ok = rt.block_on([](int n, Make& mk) -> Task<int> {
        int good = 0;
        for (int i = 0; i < n; ++i) {
            auto h = ringo::spawn(mk());
            if (i % 2)
                co_await ringo::yield(); // half cancelled in flight, half before starting
            h.cancel();
            int r = co_await h;
            good += (r == -ECANCELED);
        }
        co_return good;
    }(iterations, make));
    EXPECT_EQ(ok, iterations);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

// 100 000 start-then-cancel rounds per operation kind, in every build (sanitizers included).
constexpr int kStress = 100000;

TEST(CancelStress, Recv) {
    SocketPair sp;
    start_then_cancel(kStress, [&]() -> Task<int> {
        char b[8];
        co_return co_await op::recv(sp.fd[0], b, sizeof b);
    });
}

TEST(CancelStress, PipeRead) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    start_then_cancel(kStress, [&]() -> Task<int> {
        char b[8];
        co_return co_await op::read(p[0], b, sizeof b, op::current_pos);
    });
    ::close(p[0]);
    ::close(p[1]);
}

TEST(CancelStress, Timeout) {
    start_then_cancel(kStress, []() -> Task<int> { co_return co_await op::timeout(10s); });
}

TEST(CancelStress, Accept) {
    ringo_test::Listener l;
    start_then_cancel(kStress, [&]() -> Task<int> { co_return co_await op::accept(l.fd); });
}

// One side of the cross-thread stress: spawn waits on the other runtime and cancel them from
// here; then keep this loop serving the other side until both are done.
Task<void> cancel_into(std::atomic<Runtime*>* other, int fd, std::atomic<int>& good, std::atomic<int>& finished) {
    Runtime* o = other->load();
    for (int i = 0; i < 5000; ++i) {
        auto h = ringo::spawn(*o, [](int f) -> Task<int> {
            char b;
            co_return co_await op::recv(f, &b, 1);
        }(fd));
        if (i % 3 == 0)
            co_await ringo::sleep_for(std::chrono::microseconds(10));
        h.cancel(); // a message to the other runtime; never blocks
        if (co_await h == -ECANCELED)
            ++good;
    }
    ++finished;
    while (finished.load() < 2)
        co_await ringo::sleep_for(std::chrono::microseconds(100));
}

TEST(CancelStress, CrossThreadBetweenTwoRuntimes) {
    // Two runtimes on two threads cancel into each other 2 x 5000 times: no deadlock
    // (bounded by the test timeout), nothing lost.
    SocketPair sp;
    std::atomic<Runtime*> rts[2] = {nullptr, nullptr};
    std::atomic<int> started{0}, finished{0};
    std::atomic<int> good[2] = {0, 0};
    auto side = [&](int me) {
        Runtime rt;
        rts[me] = &rt;
        ++started;
        while (started.load() < 2)
            std::this_thread::yield();
        rt.block_on(cancel_into(&rts[1 - me], sp.fd[me], good[me], finished));
    };
    std::thread a(side, 0), b(side, 1);
    a.join();
    b.join();
    EXPECT_EQ(good[0].load(), 5000);
    EXPECT_EQ(good[1].load(), 5000);
}

} // namespace
