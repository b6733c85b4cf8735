// Fd (io/fd.hpp): an owned descriptor closes on every path out of the code that holds it:
// through the ring on a runtime, with close(2) elsewhere, in cancelled tasks, on exceptions
// and when a runtime's shutdown destroys the frame that holds it.
#include <ringo/io/fd.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::Fd;
using ringo::Task;
namespace op = ringo::op;

bool is_open(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

using ringo_test::open_fds;

int new_pipe_end(int* other) {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    *other = p[1];
    return p[0];
}

TEST(Fd, ClosesWhenItGoesOutsideARuntime) {
    int w;
    int r = new_pipe_end(&w);
    {
        Fd a(r), b(w);
        EXPECT_TRUE(a.valid());
        EXPECT_EQ(a.get(), r);
    }
    EXPECT_FALSE(is_open(r));
    EXPECT_FALSE(is_open(w));
}

TEST(Fd, MoveTransfersOwnershipAndAssignmentClosesTheOld) {
    int w1, w2;
    int r1 = new_pipe_end(&w1), r2 = new_pipe_end(&w2);
    Fd a(r1);
    Fd b(std::move(a));
    EXPECT_FALSE(a.valid()); // NOLINT(bugprone-use-after-move): moved-from owns nothing
    EXPECT_EQ(b.get(), r1);
    Fd c(r2);
    c = std::move(b); // r2 closes, c owns r1
    EXPECT_FALSE(is_open(r2));
    EXPECT_TRUE(is_open(r1));
    EXPECT_EQ(c.get(), r1);
    int raw = c.release();
    EXPECT_FALSE(c.valid());
    EXPECT_TRUE(is_open(raw)); // released: the caller closes it
    c.reset(raw);
    c.reset(w1); // closes raw (r1)
    EXPECT_FALSE(is_open(r1));
    EXPECT_TRUE(is_open(w1));
    c.reset();
    EXPECT_FALSE(is_open(w1));
    ::close(w2);
}

TEST(Fd, ANegativeResultOwnsNothing) {
    Fd f(-EMFILE);
    EXPECT_FALSE(f.valid());
    EXPECT_FALSE(static_cast<bool>(f));
    EXPECT_EQ(f.get(), -EMFILE);
}

TEST(Fd, OnARuntimeItClosesThroughTheRingWithoutASystemCallOfItsOwn) {
    int w;
    int r = new_pipe_end(&w);
    ringo::Runtime rt;
    auto before = rt.stats().sqes_submitted;
    bool open_inside = false;
    rt.block_on([](int fd, bool* open) -> Task<void> {
        { Fd f(fd); }
        *open = is_open(fd); // queued, not yet submitted: the loop takes it with its next batch
        co_await op::nop();
    }(r, &open_inside));
    EXPECT_TRUE(open_inside);
    EXPECT_FALSE(is_open(r));
    EXPECT_EQ(rt.stats().sqes_submitted - before, 2u); // the close and the nop
    ::close(w);
}

TEST(Fd, BlockOnSubmitsACloseQueuedByItsLastStep) {
    int w;
    int r = new_pipe_end(&w);
    ringo::Runtime rt;
    rt.block_on([](int fd) -> Task<void> {
        Fd f(fd);
        co_return; // f's close is queued as the task ends
    }(r));
    EXPECT_FALSE(is_open(r));
    ::close(w);
}

TEST(Fd, OnAnSqpollRuntimeItClosesAtOnce) {
    // A kernel thread takes SQEs there; a close it had not taken when the ring went would be
    // lost, so the destructor closes with close(2).
    int w;
    int r = new_pipe_end(&w);
    {
        ringo::Runtime rt(ringo::RuntimeOptions{}.sqpoll());
        rt.block_on([](int fd) -> Task<void> {
            Fd f(fd);
            co_return;
        }(r));
    }
    EXPECT_FALSE(is_open(r));
    ::close(w);
}

TEST(Fd, CloseYieldsTheResultAndLeavesItEmpty) {
    int w;
    int r = new_pipe_end(&w);
    ringo::Runtime rt;
    auto res = rt.block_on([](int a, int b) -> Task<std::pair<int, int>> {
        Fd f(a), g(b);
        int x = co_await f.close();
        int y = co_await f.close(); // owns nothing any more
        EXPECT_FALSE(f.valid());
        co_return std::pair{x, y};
    }(r, w));
    EXPECT_EQ(res, std::make_pair(0, -EBADF));
    EXPECT_FALSE(is_open(r));
    EXPECT_FALSE(is_open(w));
}

TEST(Fd, CloseAwaitedOutsideARuntimeUsesCloseOfItsOwn) {
    // A coroutine that is not on a runtime (driven by hand) still closes.
    int w;
    int r = new_pipe_end(&w);
    struct Driver {
        struct promise_type {
            int result = 1;
            Driver get_return_object() { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
            std::suspend_never initial_suspend() noexcept { return {}; }
            std::suspend_always final_suspend() noexcept { return {}; }
            void return_value(int v) { result = v; }
            void unhandled_exception() { std::terminate(); }
        };
        std::coroutine_handle<promise_type> h;
    };
    auto d = [](int fd) -> Driver {
        Fd f(fd);
        co_return co_await f.close();
    }(r);
    ASSERT_TRUE(d.h.done());
    EXPECT_EQ(d.h.promise().result, 0);
    d.h.destroy();
    EXPECT_FALSE(is_open(r));
    ::close(w);
}

TEST(Fd, UsableWhereverAnOperationTakesADescriptor) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ringo::Runtime rt;
    int n = rt.block_on([](Fd a, Fd b) -> Task<int> {
        EXPECT_EQ(co_await op::send(a, "ping", 4), 4);
        char buf[8];
        co_return co_await op::recv(b, buf, sizeof buf);
    }(Fd(sv[0]), Fd(sv[1])));
    EXPECT_EQ(n, 4);
    EXPECT_FALSE(is_open(sv[0]));
    EXPECT_FALSE(is_open(sv[1]));
}

// A handler holding descriptors, cancelled while it waits: nothing stays open.
Task<void> hold_and_wait(int a, int b) {
    Fd x(a), y(b);
    char c;
    co_await op::read(x, &c, 1, 0); // nothing ever comes
}

TEST(Fd, NothingStaysOpenAfterACancelledTask) {
    int fds = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on([]() -> Task<void> {
            for (int i = 0; i < 8; ++i) {
                int w;
                int r = new_pipe_end(&w);
                auto h = ringo::spawn(hold_and_wait(r, w));
                co_await ringo::yield();
                h.cancel();
                co_await h;
            }
        }());
    }
    EXPECT_EQ(open_fds(), fds);
}

TEST(Fd, NothingStaysOpenAfterATimeoutOrAnException) {
    int fds = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on([]() -> Task<void> {
            int w;
            int r = new_pipe_end(&w);
            (void)co_await ringo::with_timeout(hold_and_wait(r, w), 2ms);
            int w2;
            int r2 = new_pipe_end(&w2);
            try {
                co_await [](int a, int b) -> Task<void> {
                    Fd x(a), y(b);
                    co_await op::nop();
                    throw std::runtime_error("boom");
                }(r2, w2);
            } catch (const std::runtime_error&) {
            }
        }());
    }
    EXPECT_EQ(open_fds(), fds);
}

TEST(Fd, NothingStaysOpenWhenARuntimeIsDestroyedWithTasksWaiting) {
    int fds = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on([]() -> Task<void> {
            for (int i = 0; i < 4; ++i) {
                int w;
                int r = new_pipe_end(&w);
                ringo::spawn(hold_and_wait(r, w)).detach(); // still waiting when the runtime goes
            }
            co_await ringo::yield();
        }());
    }
    EXPECT_EQ(open_fds(), fds);
}

TEST(Fd, NothingStaysOpenAfterAPoolShutdownNow) {
    int fds = open_fds();
    {
        ringo::RuntimePool pool(2);
        for (int i = 0; i < 6; ++i) {
            int w;
            int r = new_pipe_end(&w);
            pool.spawn(hold_and_wait(r, w)).detach();
        }
        std::this_thread::sleep_for(10ms);
        pool.shutdown_now();
    }
    EXPECT_EQ(open_fds(), fds);
}

} // namespace
