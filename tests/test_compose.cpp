#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
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

std::uint32_t in_flight() { return Runtime::current()->stats().ops_in_flight; }

// A value no operation yields: "this branch has not ended yet".
constexpr int kUnset = 1 << 30;

// Checks, after everything that received into `buf` from `rfd` was reported finished, that no
// recv of ours is still armed on `rfd`: a byte written to the peer now stays in the socket and
// `buf` does not change, even after trips through the kernel that run pending completions.
Task<void> expect_no_recv_left(int rfd, int wfd, const char* buf, std::size_t n) {
    std::string before(buf, n);
    EXPECT_EQ(::write(wfd, "Z", 1), 1);
    for (int i = 0; i < 3; ++i)
        co_await op::nop();
    co_await ringo::sleep_for(1ms);
    EXPECT_EQ(std::string(buf, n), before) << "the kernel wrote into the buffer after the await ended";
    char c = 0;
    EXPECT_EQ(::recv(rfd, &c, 1, MSG_DONTWAIT), 1);
    EXPECT_EQ(c, 'Z');
    EXPECT_EQ(in_flight(), 0u);
}

// An openat of a FIFO for reading, forced onto an io-wq worker (IOSQE_ASYNC): it blocks in the
// kernel until a writer opens the FIFO. Cancelling it interrupts the worker, so its final CQE
// comes only some time after the ASYNC_CANCEL (whose own CQE says -EALREADY): an operation
// that really is still in the kernel after the cancel. Should cancellation not reach it, the
// watchdog opens the writing end after 5 s, and `rescued` makes the test fail instead of hang.
struct BlockingOpen {
    ringo_test::TempDir dir;
    std::string path = dir.file("fifo");
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::atomic<bool> rescued{false};
    std::thread watchdog;

    BlockingOpen() {
        EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
        watchdog = std::thread([this] {
            std::unique_lock lk(m);
            if (!cv.wait_for(lk, 5s, [this] { return done; })) {
                rescued = true;
                int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
                if (fd >= 0)
                    ::close(fd);
            }
        });
    }
    ~BlockingOpen() {
        {
            std::lock_guard lk(m);
            done = true;
        }
        cv.notify_all();
        watchdog.join();
    }
    auto op() { return ringo::always_async(op::openat(AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC)); }
    // Awaits the open, stores its result in *out, closes what it opened; yields the result.
    static Task<int> open_into(BlockingOpen* self, int* out) {
        int r = co_await self->op();
        *out = r;
        if (r >= 0)
            ::close(r);
        co_return r;
    }
};

// ---------------------------------------------------------------- sleep

TEST(Sleep, SleepsAtLeastTheDuration) {
    auto t0 = std::chrono::steady_clock::now();
    int r = run([]() -> Task<int> { co_return co_await ringo::sleep_for(15ms); });
    EXPECT_EQ(r, 0);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 15ms);
}

TEST(Sleep, NonPositiveDurationReturnsAtOnce) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await ringo::sleep_for(-5ms) + co_await ringo::sleep_for(0ms); }),
              0);
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
    // The owning runtime's thread is blocked (it is not in its loop) while another thread
    // cancels: cancel() must return all the same - it only posts a message - and the task ends
    // once the loop runs again. Were cancel() to wait for the owner, the owner would give up
    // waiting for it after 5 s and the test would fail.
    SocketPair sp;
    std::atomic<ringo::JoinHandle<int>*> handle{nullptr};
    std::atomic<bool> cancel_returned{false};
    std::thread canceller([&] {
        while (!handle.load())
            std::this_thread::yield();
        handle.load()->cancel();
        cancel_returned = true;
    });
    Runtime rt;
    bool returned_while_blocked = false;
    bool finished_while_blocked = true;
    std::uint32_t in_flight_while_blocked = 0;
    int r = rt.block_on([&]() -> Task<int> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            char buf[4];
            co_return co_await op::recv(fd, buf, sizeof buf);
        }(sp.fd[0]));
        co_await ringo::sleep_for(1ms); // the recv is in the kernel
        handle.store(&h);
        auto give_up = std::chrono::steady_clock::now() + 5s;
        while (!cancel_returned.load() && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(100us); // blocks the runtime's thread
        returned_while_blocked = cancel_returned.load();
        finished_while_blocked = h.is_finished();
        in_flight_while_blocked = in_flight();
        co_return co_await h;
    }());
    canceller.join();
    EXPECT_TRUE(returned_while_blocked);
    EXPECT_FALSE(finished_while_blocked);   // the cancel is applied by the owner's loop only
    EXPECT_EQ(in_flight_while_blocked, 1u); // the recv was still in the kernel meanwhile
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_GE(rt.stats().remote_items, 1u); // it came as a message
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
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
                     co_await ringo::with_timeout(
                         []() -> Task<int> {
                             throw std::runtime_error("inner");
                             co_return 1;
                         }(),
                         1s);
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

TEST(WithTimeout, OnASleepThatEndsFirst) {
    // The sleep awaiter is moved into with_timeout's frame before it is awaited; its timer must
    // still find it when it fires (it used to point back at the moved-from object).
    auto r = run([]() -> Task<std::pair<int, std::uint32_t>> {
        int a = co_await ringo::with_timeout(ringo::sleep_for(1ms), 5s);
        co_return std::pair{a, static_cast<std::uint32_t>(Runtime::current()->timers_pending())};
    });
    EXPECT_EQ(r.first, 0);
    EXPECT_EQ(r.second, 0u);
}

// Cancelling the task that awaits with_timeout (not the deadline): the awaitable is cancelled
// the same way and its own result passes through.
TEST(WithTimeout, CancellingTheAwaitingTaskPassesEcanceledThrough) {
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    struct Out {
        int res = kUnset;
        std::uint32_t in_flight = 99;
        std::size_t timers = 99;
    };
    Out o = rt.block_on([](int fd, int peer, char* b) -> Task<Out> {
        auto h = ringo::spawn([](int f, char* bb) -> Task<Out> {
            Out out;
            out.res = co_await ringo::with_timeout(op::recv(f, bb, 4), 10s);
            out.in_flight = in_flight();
            out.timers = Runtime::current()->timers_pending();
            co_return out;
        }(fd, b));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 1u);
        h.cancel();
        Out out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(o.res, -ECANCELED); // not -ETIME: the deadline did not pass
    EXPECT_EQ(o.in_flight, 0u);
    EXPECT_EQ(o.timers, 0u); // the deadline was disarmed
}

TEST(WithTimeout, CancellingTheAwaitingTaskOnVoidAndValueTasks) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::pair<bool, std::optional<std::string>>> {
        auto recv_task = [](int fd) -> Task<int> {
            char c;
            co_return co_await op::recv(fd, &c, 1);
        };
        auto hv = ringo::spawn([](Task<int> t) -> Task<bool> {
            co_return co_await ringo::with_timeout(
                [](Task<int> tt) -> Task<void> { co_await std::move(tt); }(std::move(t)), 10s);
        }(recv_task(sp.fd[0])));
        auto hs = ringo::spawn([](Task<int> t) -> Task<std::optional<std::string>> {
            co_return co_await ringo::with_timeout(
                [](Task<int> tt) -> Task<std::string> {
                    co_return "recv:" + std::to_string(co_await std::move(tt));
                }(std::move(t)),
                10s);
        }(recv_task(sp.fd[0])));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 2u);
        hv.cancel();
        hs.cancel();
        bool v = co_await hv;
        auto s = co_await hs;
        EXPECT_EQ(in_flight(), 0u);
        co_return std::pair{v, s};
    });
    EXPECT_TRUE(r.first);              // void: it ended before the deadline (cancelled, but not by the deadline)
    ASSERT_TRUE(r.second.has_value()); // T: the value the task produced after seeing -ECANCELED
    EXPECT_EQ(*r.second, "recv:" + std::to_string(-ECANCELED));
}

TEST(WithTimeout, CancellingTheAwaitingTaskWaitsForTheFinalCqe) {
    // The awaited operation is still in the kernel after its ASYNC_CANCEL; with_timeout (and so
    // the cancelled task) resumes only after its own CQE.
    BlockingOpen fifo;
    Runtime rt;
    int opened = kUnset;
    struct Out {
        int res = kUnset;
        int seen = kUnset;
        std::uint32_t in_flight = 99;
    };
    Out o = rt.block_on([](BlockingOpen* f, int* opened_out) -> Task<Out> {
        auto h = ringo::spawn([](BlockingOpen* ff, int* oo) -> Task<Out> {
            Out out;
            out.res = co_await ringo::with_timeout(BlockingOpen::open_into(ff, oo), 10s);
            out.seen = *oo;
            out.in_flight = in_flight();
            co_return out;
        }(f, opened_out));
        co_await ringo::sleep_for(5ms); // the worker blocks in open(2)
        EXPECT_EQ(in_flight(), 1u);
        h.cancel();
        co_return co_await h;
    }(&fifo, &opened));
    EXPECT_FALSE(fifo.rescued.load());
    EXPECT_LT(o.seen, 0); // the open had ended (interrupted) when with_timeout returned
    EXPECT_NE(o.seen, kUnset);
    EXPECT_EQ(o.res, o.seen); // the result passes through (the deadline did not pass)
    EXPECT_EQ(o.in_flight, 0u);
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

// Spawns `gathered` tasks that each start a nop, yields so that they run (their SQEs are then
// gathered in the SQ, not yet submitted), and awaits a chain of 1 + sizeof...(I) whose head (a
// timeout, which fails with -ETIME) is followed by nops. Yields every member's result.
template <std::size_t... I>
Task<std::vector<int>> chain_after_gathered(Runtime& rt, unsigned gathered, unsigned& seen, std::index_sequence<I...>) {
    std::vector<ringo::JoinHandle<int>> hs;
    for (unsigned i = 0; i < gathered; ++i)
        hs.push_back(ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }()));
    co_await ringo::yield();
    seen = rt.ring().pending();
    auto res = co_await ringo::link(op::timeout(1ms), ((void)I, op::nop())...);
    for (auto& h : hs)
        EXPECT_EQ(co_await h, 0);
    co_return std::apply([](auto... r) { return std::vector<int>{r...}; }, res);
}

template <std::size_t Nops>
void expect_chain_kept_whole(unsigned gathered) {
    SCOPED_TRACE(testing::Message() << "chain of " << Nops + 1 << " after " << gathered << " gathered SQEs");
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(4)};
    ASSERT_EQ(rt.ring().sq_entries(), 4u);
    unsigned seen = 0;
    auto r = rt.block_on(chain_after_gathered(rt, gathered, seen, std::make_index_sequence<Nops>{}));
    EXPECT_EQ(seen, gathered); // the situation the test is about
    std::vector<int> want(Nops + 1, -ECANCELED);
    want[0] = -ETIME;
    EXPECT_EQ(r, want);
}

TEST(Link, ChainIsNeverSplitAcrossSubmissions) {
    // SQ of 4 with SQEs already gathered: a chain does not fit in what is left. Were it started
    // there and split by the forced flush, its head (a timeout, which fails with -ETIME) would
    // end that submission as a chain of its own, and the members in the next submission would
    // run unlinked from it and succeed. Kept whole, they are cancelled.
    for (unsigned gathered = 2; gathered <= 3; ++gathered)
        expect_chain_kept_whole<2>(gathered); // a chain of 3 (3 after 3 queued: the case)
    for (unsigned gathered = 1; gathered <= 3; ++gathered)
        expect_chain_kept_whole<3>(gathered); // a chain of 4: the whole SQ
}

TEST(Link, CancelledWhileWaitingEndsAfterEveryMembersCqe) {
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    auto r = rt.block_on([](int fd, int peer, char* b) -> Task<std::pair<std::tuple<int, int, int>, std::uint32_t>> {
        auto h = ringo::spawn([](int f, char* bb) -> Task<std::pair<std::tuple<int, int, int>, std::uint32_t>> {
            auto res = co_await ringo::link(op::recv(f, bb, 4), op::nop(), op::nop());
            co_return std::pair{res, in_flight()};
        }(fd, b));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 3u); // the whole chain is in the kernel
        h.cancel();
        auto out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(r.first, std::make_tuple(-ECANCELED, -ECANCELED, -ECANCELED));
    EXPECT_EQ(r.second, 0u);
}

TEST(Link, HardLinkCancelledWhileWaitingGoesOnAfterTheCancelledMember) {
    // The recv is cancelled; a hard link goes on after a failure, so the nop still runs.
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    auto r = rt.block_on([](int fd, int peer, char* b) -> Task<std::pair<std::tuple<int, int>, std::uint32_t>> {
        auto h = ringo::spawn([](int f, char* bb) -> Task<std::pair<std::tuple<int, int>, std::uint32_t>> {
            auto res = co_await ringo::hard_link(op::recv(f, bb, 4), op::nop());
            co_return std::pair{res, in_flight()};
        }(fd, b));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 2u);
        h.cancel();
        auto out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(r.first, std::make_tuple(-ECANCELED, 0));
    EXPECT_EQ(r.second, 0u);
}

TEST(Link, LongerThanTheSqIsEinval) {
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(2)};
    auto r = rt.block_on(
        []() -> Task<std::tuple<int, int, int>> { co_return co_await ringo::link(op::nop(), op::nop(), op::nop()); }());
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
        co_return std::pair{res.has_value(), left};
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_FALSE(r.first); // std::nullopt: the deadline cancelled the chain
    EXPECT_EQ(r.second, 0u);
}

// with_timeout(when_any(when_all(recv a, recv b), when_all(timeout t, nop)), deadline): three
// levels of composites, each of which must cancel and await what is below it.
using Pair = std::tuple<int, int>;
using Nest = std::optional<std::pair<std::size_t, Pair>>;
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
    ASSERT_TRUE(r1.first.has_value());
    EXPECT_EQ(r1.first->first, 1u);
    EXPECT_EQ(r1.first->second, Pair(-ETIME, 0));
    EXPECT_EQ(r1.second, 0u);
    EXPECT_EQ(std::string(b, 4), "----");
    // 2. The deadline (2 ms) comes before either branch ends (the timeout branch waits 10 s):
    //    everything below is cancelled; with_timeout yields nullopt, fast, with nothing in flight.
    auto t0 = std::chrono::steady_clock::now();
    auto r2 = rt.block_on(nested_three_levels(x.fd[0], y.fd[0], a, b, 10s, 2ms));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_FALSE(r2.first.has_value());
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
    ASSERT_TRUE(r3.first.has_value());
    EXPECT_EQ(r3.first->first, 0u);
    EXPECT_EQ(r3.first->second, Pair(1, 1));
    EXPECT_EQ(a[0], 'A');
    EXPECT_EQ(b[0], 'B');
    EXPECT_EQ(r3.second, 0u);
}

// ---------------------------------------------------------------- bad input
// The bad input, each with the result docs/compose.md ("Bad input") documents.

TEST(BadInput, CancellingAFinishedTaskChangesNothing) {
    auto r = run([]() -> Task<std::tuple<int, int, int>> {
        auto h = ringo::spawn([]() -> Task<int> { co_return 7; }());
        auto g = ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }());
        while (!h.is_finished() || !g.is_finished())
            co_await ringo::yield();
        h.cancel();
        h.cancel();                              // twice
        std::thread([&] { g.cancel(); }).join(); // from another thread: no message for a finished task
        int v = co_await h;
        h.cancel(); // an empty handle (joined): no effect
        int w = co_await g;
        co_return std::tuple{v, w, co_await op::nop()}; // the runtime goes on
    });
    EXPECT_EQ(r, std::make_tuple(7, 0, 0));
}

TEST(BadInput, AwaitingAHandleTwiceThrowsLogicError) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::tuple<int, int, int>> {
        auto h = ringo::spawn([](int fd) -> Task<int> {
            char b[4];
            co_return co_await op::recv(fd, b, sizeof b);
        }(sp.fd[0]));
        co_await ringo::yield();
        h.cancel();
        int first = co_await h;
        int threw = 0;
        try {
            co_await h; // awaited twice
        } catch (const std::logic_error&) {
            ++threw;
        }
        try {
            (void)h.join(); // joined after it was awaited
        } catch (const std::logic_error&) {
            ++threw;
        }
        auto g = ringo::spawn([]() -> Task<int> { co_return 1; }());
        g.detach();
        try {
            co_await g; // awaited after detach
        } catch (const std::logic_error&) {
            ++threw;
        }
        co_return std::tuple{first, threw, co_await op::nop()};
    });
    EXPECT_EQ(r, std::make_tuple(-ECANCELED, 3, 0));
}

TEST(BadInput, NegativeDurationsEndAtOnce) {
    SocketPair sp;
    Runtime rt;
    auto sq0 = rt.stats().sqes_submitted;
    auto t0 = std::chrono::steady_clock::now();
    auto r = rt.block_on([](int fd) -> Task<std::tuple<int, int, int, bool, bool, int>> {
        char b[4];
        int s1 = co_await ringo::sleep_for(-1s);                                     // 0 at once
        int s2 = co_await ringo::sleep_until(std::chrono::steady_clock::now() - 1h); // 0 at once
        int t1 = co_await ringo::with_timeout(op::recv(fd, b, sizeof b), -5ms);      // -ETIME, never submitted
        auto t2 = co_await ringo::with_timeout(
            []() -> Task<std::string> {
                co_await ringo::sleep_for(10s);
                co_return "late";
            }(),
            std::chrono::nanoseconds::min()); // nullopt at once
        bool t3 = co_await ringo::with_timeout([]() -> Task<void> { co_await ringo::sleep_for(10s); }(),
                                               std::chrono::hours::min()); // false at once
        int k = co_await op::timeout(-1ms);                                // the kernel's: -EINVAL
        co_return std::tuple{s1, s2, t1, t2.has_value(), t3, k};
    }(sp.fd[0]));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(r, std::make_tuple(0, 0, -ETIME, false, false, -EINVAL));
    EXPECT_EQ(rt.stats().sqes_submitted - sq0, 1u); // only op::timeout reached the kernel
    EXPECT_EQ(rt.timers_pending(), 0u);
}

TEST(BadInput, HugeDurationsNeverFire) {
    // duration::max() of any unit: converted to nanoseconds it would overflow (hours::max()
    // wrapped to -1 h and timed out at once); it saturates instead, so it never fires.
    auto r = run([]() -> Task<std::tuple<int, int, bool, int, int>> {
        int a = co_await ringo::with_timeout(op::nop(), std::chrono::hours::max());
        int b = co_await ringo::with_timeout(op::nop(), std::chrono::duration<double>(1e300));
        bool c = co_await ringo::with_timeout([]() -> Task<void> { co_await ringo::sleep_for(1ms); }(),
                                              std::chrono::minutes::max());
        // A sleep of hours::max() does not end at once: the 2 ms deadline ends it.
        int d = co_await ringo::with_timeout(ringo::sleep_for(std::chrono::hours::max()), 2ms);
        int e = co_await ringo::with_timeout(
            ringo::sleep_until(std::chrono::time_point<std::chrono::steady_clock, std::chrono::hours>::max()), 2ms);
        co_return std::tuple{a, b, c, d, e};
    });
    EXPECT_EQ(r, std::make_tuple(0, 0, true, -ETIME, -ETIME));
}

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

// ---------------------------------------------------------------- cancel racing a completion

// Rounds of each race below; every build (sanitizers included) runs them.
constexpr int kRace = 20000;

// A recv of at most 16 bytes, appending what it got to *out.
Task<int> recv_into(int fd, std::string* out) {
    char b[16];
    int r = co_await op::recv(fd, b, sizeof b);
    if (r > 0)
        out->append(b, static_cast<std::size_t>(r));
    co_return r;
}

// Appends what is left in the socket to *out.
void drain_socket(int fd, std::string* out) {
    char b[256];
    ssize_t n;
    while ((n = ::recv(fd, b, sizeof b, MSG_DONTWAIT)) > 0)
        out->append(b, static_cast<std::size_t>(n));
}

TEST(CancelRaceStress, RecvWhileItsDataArrives) {
    // Each round writes one byte to the socket at a different point relative to the cancel.
    // Each round must end (no lost completion) with data or -ECANCELED, and the bytes the recvs
    // got plus those left in the socket must be exactly the bytes written, in order: a CQE
    // that carried data but was reported as cancelled, or delivered twice, breaks that.
    SocketPair sp;
    Runtime rt;
    std::string written, received;
    int with_data = 0, cancelled = 0, other = 0;
    rt.block_on([&]() -> Task<void> {
        for (int i = 0; i < kRace; ++i) {
            char c = static_cast<char>('a' + i % 26);
            auto put = [&] {
                EXPECT_EQ(::write(sp.fd[1], &c, 1), 1);
                written += c;
            };
            auto h = ringo::spawn(recv_into(sp.fd[0], &received));
            co_await ringo::yield(); // the recv's SQE is gathered
            switch (i % 5) {
            case 0: // data before the recv reaches the kernel: it completes with all there is
                put();
                h.cancel();
                break;
            case 1: // the socket is empty (case 0 took all): the cancel finds the recv waiting
                co_await op::nop();
                h.cancel();
                break;
            case 2: // the recv waits in the kernel; data comes, then the cancel is gathered
                co_await op::nop();
                put();
                h.cancel();
                break;
            case 3: // the recv waits in the kernel; the cancel is gathered, then data comes
                co_await op::nop();
                h.cancel();
                put();
                break;
            case 4: // recv and cancel submitted together, then data (left for case 0)
                h.cancel();
                co_await op::nop();
                put();
                break;
            }
            int r = co_await h;
            if (r > 0)
                ++with_data;
            else if (r == -ECANCELED)
                ++cancelled;
            else
                ++other;
        }
    }());
    drain_socket(sp.fd[0], &received);
    EXPECT_EQ(other, 0);
    EXPECT_EQ(with_data + cancelled, kRace);
    EXPECT_GE(with_data, kRace / 5); // every case-0 round
    EXPECT_GE(cancelled, kRace / 5); // every case-1 round
    EXPECT_EQ(received.size(), written.size());
    EXPECT_TRUE(received == written) << "bytes lost, duplicated or reordered";
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(CancelRaceStress, RecvAndWithTimeoutAgainstAWriterThread) {
    // Another thread writes bytes at its own pace while the runtime starts recvs and ends
    // them by cancel() (even rounds) or by a 1-3 us with_timeout (odd rounds). Every round
    // ends with data, or -ECANCELED / -ETIME; nothing written is lost or received twice.
    SocketPair sp;
    std::atomic<bool> stop{false};
    std::string written;
    std::thread writer([&] {
        for (unsigned v = 0; !stop.load(std::memory_order_relaxed); ++v) {
            char c = static_cast<char>('a' + v % 26);
            if (::send(sp.fd[1], &c, 1, MSG_DONTWAIT) == 1)
                written += c;
            std::this_thread::sleep_for(std::chrono::microseconds(v % 7 * 5));
        }
    });
    Runtime rt;
    std::string received;
    int with_data = 0, cancelled = 0, timed_out = 0, other = 0;
    rt.block_on([&]() -> Task<void> {
        for (int i = 0; i < kRace; ++i) {
            int r;
            if (i % 2 == 0) {
                auto h = ringo::spawn(recv_into(sp.fd[0], &received));
                co_await ringo::yield();
                if (i % 4 == 0)
                    co_await op::nop(); // the recv is in the kernel
                h.cancel();
                r = co_await h;
            } else {
                // A Task<int> counts as an int awaitable: its -ECANCELED after the deadline is -ETIME.
                r = co_await ringo::with_timeout(recv_into(sp.fd[0], &received), std::chrono::microseconds(1 + i % 3));
            }
            if (r > 0)
                ++with_data;
            else if (r == -ECANCELED)
                ++cancelled;
            else if (r == -ETIME)
                ++timed_out;
            else
                ++other;
        }
        EXPECT_EQ(in_flight(), 0u);
    }());
    stop = true;
    writer.join();
    drain_socket(sp.fd[0], &received);
    EXPECT_EQ(other, 0);
    EXPECT_EQ(with_data + cancelled + timed_out, kRace);
    EXPECT_EQ(received.size(), written.size());
    EXPECT_TRUE(received == written) << "bytes lost, duplicated or reordered";
}

// A read of at most 16 bytes from a pipe, appending what it got to *out.
Task<int> read_into(int fd, std::string* out) {
    char b[16];
    int r = co_await op::read(fd, b, sizeof b, op::current_pos);
    if (r > 0)
        out->append(b, static_cast<std::size_t>(r));
    co_return r;
}

TEST(CancelRaceStress, WhenAnyAndWithTimeoutOnAPipeAgainstAWriterThread) {
    // 100 000 rounds: another thread writes bytes into a pipe at its own pace while the runtime
    // reads it through when_any(read, nop) (the nop usually wins and the read is cancelled,
    // unless data beat it) or with_timeout(read, 1-3 us). Every round must end (no lost
    // completion); a read that got data reports it even when it lost or timed out, so the
    // bytes the reads got plus those still in the pipe are exactly the bytes written, in order.
    constexpr int kRounds = 100000;
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    ASSERT_EQ(::fcntl(p[1], F_SETFL, O_NONBLOCK), 0); // the writer never blocks; reads do wait
    std::atomic<bool> stop{false};
    std::string written;
    std::thread writer([&] {
        for (unsigned v = 0; !stop.load(std::memory_order_relaxed); ++v) {
            char c = static_cast<char>('a' + v % 26);
            if (::write(p[1], &c, 1) == 1)
                written += c;
            std::this_thread::sleep_for(std::chrono::microseconds(v % 5 * 4));
        }
    });
    Runtime rt;
    std::string received;
    int read_won = 0, nop_won = 0, with_data = 0, ended = 0, other = 0;
    rt.block_on([&]() -> Task<void> {
        for (int i = 0; i < kRounds; ++i) {
            if (i % 2 == 0) {
                auto [idx, r] = co_await ringo::when_any(read_into(p[0], &received), op::nop());
                if (idx == 0 && r > 0)
                    ++read_won;
                else if (idx == 1 && r == 0)
                    ++nop_won;
                else
                    ++other;
            } else {
                int r = co_await ringo::with_timeout(read_into(p[0], &received), std::chrono::microseconds(1 + i % 3));
                if (r > 0)
                    ++with_data;
                else if (r != -ETIME)
                    ++other;
            }
            ++ended;
        }
        EXPECT_EQ(in_flight(), 0u);
    }());
    stop = true;
    writer.join();
    ASSERT_EQ(::fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    char b[256];
    ssize_t n;
    while ((n = ::read(p[0], b, sizeof b)) > 0)
        received.append(b, static_cast<std::size_t>(n));
    ::close(p[0]);
    ::close(p[1]);
    std::printf("when_any: read won %d, nop won %d; with_timeout: data %d, -ETIME %d; bytes %zu\n", read_won, nop_won,
                with_data, kRounds / 2 - with_data, written.size());
    EXPECT_EQ(ended, kRounds);
    EXPECT_EQ(other, 0);
    EXPECT_EQ(read_won + nop_won, kRounds / 2);
    EXPECT_GT(nop_won, 0); // the race went both ways
    EXPECT_GT(read_won, 0);
    EXPECT_GT(with_data, 0);
    EXPECT_LT(with_data, kRounds / 2);
    EXPECT_GT(written.size(), 0u);
    EXPECT_EQ(received.size(), written.size());
    EXPECT_TRUE(received == written) << "bytes lost, duplicated or reordered";
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(CancelRaceStress, TimeoutExpiringAsItIsCancelled) {
    // Kernel timeouts of 0-10 us, cancelled before they start, while waiting, or about when they
    // fire: each ends with exactly one of -ETIME and -ECANCELED.
    Runtime rt;
    int expired = 0, cancelled = 0, other = 0;
    rt.block_on([&]() -> Task<void> {
        for (int i = 0; i < kRace; ++i) {
            auto h = ringo::spawn(
                [](int k) -> Task<int> { co_return co_await op::timeout(std::chrono::nanoseconds(k % 5 * 2500)); }(i));
            if (i % 3 != 0)
                co_await ringo::yield();
            if (i % 3 == 2)
                co_await op::nop();
            h.cancel();
            int r = co_await h;
            if (r == -ETIME)
                ++expired;
            else if (r == -ECANCELED)
                ++cancelled;
            else
                ++other;
        }
    }());
    EXPECT_EQ(other, 0);
    EXPECT_EQ(expired + cancelled, kRace);
    EXPECT_GE(cancelled, kRace / 3); // at least the rounds cancelled before they started
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
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
