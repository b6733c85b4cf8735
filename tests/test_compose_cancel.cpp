// Cancellation (compose/cancel.hpp, JoinHandle::cancel): a cancelled operation is awaited to its final CQE;
// start-then-cancel and cancel-racing-a-completion stress.
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
#include <vector>

#include "compose_helpers.hpp"

namespace {

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
        // Until the recv has completed (two yields in FIFO order).
        for (int i = 0; i < 100'000 && !h.is_finished(); ++i)
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
        bool started = false;
        auto h = ringo::spawn([](bool& started) -> Task<std::pair<bool, bool>> {
            bool before = co_await ringo::cancellation_requested();
            started = true;
            co_await ringo::sleep_for(10s);
            bool after = co_await ringo::cancellation_requested();
            co_return std::pair{before, after};
        }(started));
        // Until the task has started (one yield in FIFO order).
        for (int i = 0; i < 100'000 && !started; ++i)
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
                // A Task<int> yields Timed<int>: its -ECANCELED when the deadline cancelled it.
                auto t =
                    co_await ringo::with_timeout(recv_into(sp.fd[0], &received), std::chrono::microseconds(1 + i % 3));
                r = (t.timed_out() && *t == -ECANCELED) ? -ETIME : *t;
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
                auto t = co_await ringo::with_timeout(read_into(p[0], &received), std::chrono::microseconds(1 + i % 3));
                int r = (t.timed_out() && *t == -ECANCELED) ? -ETIME : *t;
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

// ---------------------------------------------------------------- bad input
// Bad input, each with the result docs/compose.md ("Bad input") documents.

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

// ---------------------------------------------------------------- cleanup in a cancelled task
//
// The rule (op/base.hpp, compose/cancel.hpp): release operations (close, async_cancel) run in
// a task that has been cancelled and are not interrupted; anything else runs there only when
// shielded(). Checked for every way a task is cancelled.

struct Pipe {
    int r = -1, w = -1;
    Pipe() {
        int p[2];
        EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
        r = p[0];
        w = p[1];
    }
    ~Pipe() {
        if (r >= 0 && ::fcntl(r, F_GETFD) >= 0)
            ::close(r);
        if (w >= 0 && ::fcntl(w, F_GETFD) >= 0)
            ::close(w);
    }
};

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

// What a cancelled handler did on its way out.
struct Cleanup {
    int waited = 1; // the read it was cancelled in
    int closed = 1; // co_await op::close(fd)
    int sent = 1;   // co_await shielded(op::write(out, "x", 1))
    int after = 1;  // a plain operation after the cleanup
};

// Reads `in` (nothing ever comes) until cancelled, then closes `in`, writes one byte to `out`
// shielded, and tries one more plain operation.
Task<void> handler(int in, int out, Cleanup* c) {
    char b;
    c->waited = co_await op::read(in, &b, 1, 0);
    c->closed = co_await op::close(in);
    c->sent = co_await ringo::shielded(op::write(out, "x", 1, 0));
    c->after = co_await op::nop();
}

void expect_cleaned_up(const Cleanup& c, const Pipe& in, const Pipe& out) {
    EXPECT_EQ(c.waited, -ECANCELED);
    EXPECT_EQ(c.closed, 0);
    EXPECT_FALSE(is_open(in.r)) << "the cancelled task's close did nothing";
    EXPECT_EQ(c.sent, 1);
    char b = 0;
    EXPECT_EQ(::read(out.r, &b, 1), 1);
    EXPECT_EQ(b, 'x');
    EXPECT_EQ(c.after, -ECANCELED); // the task is still cancelled after its shielded cleanup
}

TEST(CancelledCleanup, AfterJoinHandleCancel) {
    Pipe in, out;
    Cleanup c;
    run([&]() -> Task<void> {
        auto h = ringo::spawn(handler(in.r, out.w, &c));
        co_await ringo::yield();
        h.cancel();
        co_await h;
    });
    expect_cleaned_up(c, in, out);
}

TEST(CancelledCleanup, AfterWithTimeout) {
    Pipe in, out;
    Cleanup c;
    run([&]() -> Task<void> { (void)co_await ringo::with_timeout(handler(in.r, out.w, &c), 10ms); });
    expect_cleaned_up(c, in, out);
}

TEST(CancelledCleanup, AsTheLoserOfWhenAny) {
    Pipe in, out;
    Cleanup c;
    run([&]() -> Task<void> {
        auto nap = []() -> Task<void> { co_await ringo::sleep_for(5ms); };
        (void)co_await ringo::when_any(handler(in.r, out.w, &c), nap());
    });
    expect_cleaned_up(c, in, out);
}

TEST(CancelledCleanup, InACancelledTaskScope) {
    Pipe in, out;
    Cleanup c;
    run([&]() -> Task<void> {
        co_await ringo::scoped([&](ringo::TaskScope& s) -> Task<void> {
            s.spawn(handler(in.r, out.w, &c));
            co_await ringo::sleep_for(5ms);
            s.cancel();
        });
    });
    expect_cleaned_up(c, in, out);
}

TEST(CancelledCleanup, InAChildOfACancelledTask) {
    Pipe in, out;
    Cleanup c;
    run([&]() -> Task<void> {
        auto h =
            ringo::spawn([](int i, int o, Cleanup* cl) -> Task<void> { co_await handler(i, o, cl); }(in.r, out.w, &c));
        co_await ringo::sleep_for(5ms);
        h.cancel();
        co_await h;
    });
    expect_cleaned_up(c, in, out);
}

TEST(CancelledCleanup, AfterAPoolShutdownNow) {
    Pipe in, out;
    Cleanup c;
    {
        ringo::RuntimePool pool(2);
        pool.spawn(handler(in.r, out.w, &c)).detach();
        std::this_thread::sleep_for(20ms); // the read is in flight
        pool.shutdown_now();
    }
    expect_cleaned_up(c, in, out);
}

TEST(CancelledCleanup, AsyncCancelRunsInACancelledTask) {
    SocketPair sp;
    auto r = run([&]() -> Task<std::pair<int, int>> {
        // A detached reader on fd[0]; the cancelled task cancels it by fd on its way out.
        auto reader = ringo::spawn([](int fd) -> Task<int> {
            char b;
            co_return co_await op::recv(fd, &b, 1);
        }(sp.fd[0]));
        auto h = ringo::spawn([](int fd) -> Task<int> {
            co_await ringo::sleep_for(1h);
            co_return co_await op::async_cancel_fd(fd);
        }(sp.fd[0]));
        // Until the reader's recv is in flight (one yield in FIFO order).
        for (int i = 0; i < 100'000 && ringo::Runtime::current()->stats().ops_in_flight == 0; ++i)
            co_await ringo::yield();
        h.cancel();
        int cancelled = co_await h;
        co_return std::pair{cancelled, co_await reader};
    });
    EXPECT_EQ(r.first, 0);
    EXPECT_EQ(r.second, -ECANCELED);
}

TEST(Shielded, AnOperationInFlightIsNotInterrupted) {
    auto r = run([&]() -> Task<std::pair<int, int>> {
        auto h = ringo::spawn([]() -> Task<std::pair<int, int>> {
            int t = co_await ringo::shielded(op::timeout(20ms));
            co_return std::pair{t, co_await op::nop()};
        }());
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r.first, -ETIME);      // ran to its end despite cancel()
    EXPECT_EQ(r.second, -ECANCELED); // then the task is cancelled again
}

TEST(Shielded, ATaskRunsAllItsAwaitsShielded) {
    Pipe out;
    auto r = run([&]() -> Task<std::tuple<int, int, int>> {
        auto h = ringo::spawn([](int w) -> Task<std::tuple<int, int, int>> {
            co_await ringo::sleep_for(1h); // cancelled here
            int n = co_await ringo::shielded([](int fd) -> Task<int> {
                int a = co_await op::write(fd, "a", 1, 0);
                co_await ringo::sleep_for(2ms);
                int b = co_await op::write(fd, "b", 1, 0);
                co_return a + b;
            }(w));
            bool seen = co_await ringo::cancellation_requested();
            co_return std::tuple{n, seen ? 1 : 0, co_await op::nop()};
        }(out.w));
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(r, std::make_tuple(2, 1, -ECANCELED));
    char b[2] = {};
    EXPECT_EQ(::read(out.r, b, 2), 2);
    EXPECT_EQ(std::string(b, 2), "ab");
}

TEST(Shielded, AwaitsLvaluesAndAJoinHandle) {
    auto r = run([&]() -> Task<std::pair<int, int>> {
        auto h = ringo::spawn([]() -> Task<int> {
            co_await ringo::sleep_for(1h); // cancelled here
            auto nop = op::nop();
            int a = co_await ringo::shielded(nop);
            auto inner = ringo::spawn([]() -> Task<int> { co_return 7; }());
            int b = co_await ringo::shielded(inner);
            co_return a * 100 + b;
        }());
        co_await ringo::yield();
        h.cancel();
        co_return std::pair{co_await h, co_await ringo::shielded(op::nop())};
    });
    EXPECT_EQ(r, std::make_pair(7, 0));
}

// A task of a combinator under a shield still hangs in its runtime's tree: cancelling the
// task that awaits it does not reach it, but the runtime's end frees it.
using ringo_test::Alive;
using ringo_test::sleep_holding;

TEST(Shielded, BranchesUnderAShieldAreFreedWhenTheRuntimeGoes) {
    std::atomic<int> alive{0};
    {
        ringo::Runtime rt;
        rt.block_on([](std::atomic<int>* a) -> Task<void> {
            ringo::spawn([](std::atomic<int>* a) -> Task<void> {
                Task<int> x = sleep_holding(Alive(a), 24h);
                Task<int> y = sleep_holding(Alive(a), 24h);
                (void)co_await ringo::shielded(ringo::when_all(std::move(x), std::move(y)));
            }(a))
                .detach();
            co_await ringo::sleep_for(2ms); // both branches wait
        }(&alive));
        EXPECT_EQ(alive.load(), 2);
    }
    EXPECT_EQ(alive.load(), 0);
}

TEST(Shielded, CancellingTheTaskDoesNotReachTheBranchesOfAShieldedWhenAll) {
    auto r = run([&]() -> Task<std::pair<int, int>> {
        auto h = ringo::spawn([]() -> Task<std::pair<int, int>> {
            auto [a, b] = co_await ringo::shielded(ringo::when_all(ringo::sleep_for(10ms), ringo::sleep_for(10ms)));
            co_return std::pair{a, b};
        }());
        co_await ringo::sleep_for(2ms);
        h.cancel();
        co_return co_await h;
    });
    EXPECT_NE(r.first, -ECANCELED);
    EXPECT_NE(r.second, -ECANCELED);
}

TEST(Shielded, APoolShutdownNowStillCancelsTheBranchesOfAShieldedWhenAll) {
    // A task's own cancellation does not reach under its shield, but the pool's shutdown_now
    // cancels every task of the runtime, the shielded ones too.
    std::atomic<int> first{1}, second{1};
    {
        ringo::RuntimePool pool(1);
        pool.spawn([](std::atomic<int>* a, std::atomic<int>* b) -> Task<void> {
                auto [x, y] = co_await ringo::shielded(ringo::when_all(ringo::sleep_for(24h), ringo::sleep_for(24h)));
                a->store(x);
                b->store(y);
            }(&first, &second))
            .detach();
        std::this_thread::sleep_for(20ms);
        pool.shutdown_now();
    }
    EXPECT_EQ(first.load(), -ECANCELED);
    EXPECT_EQ(second.load(), -ECANCELED);
}

TEST(Shielded, OutsideACancelledTaskItIsTransparent) {
    auto r = run([&]() -> Task<int> {
        int a = co_await ringo::shielded(op::nop());
        int b = co_await ringo::shielded([]() -> Task<int> { co_return 5; }());
        co_return a + b;
    });
    EXPECT_EQ(r, 5);
}

} // namespace
