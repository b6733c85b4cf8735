// TaskScope and scoped (compose/scope.hpp).
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

TEST(Scope, APoolShutdownNowCancelsTheTasksOfAScopeBetweenJoins) {
    // The scope's tasks hang under their runtime's root while no task joins the scope: the
    // pool's shutdown_now reaches them there, while their owner waits shielded (so the
    // cancellation cannot come through its join).
    std::atomic<int> cancelled{0};
    std::atomic<int> seen_before_join{-1};
    {
        ringo::RuntimePool pool(1);
        pool.spawn([](std::atomic<int>* c, std::atomic<int>* seen) -> Task<void> {
                ringo::TaskScope scope;
                for (int i = 0; i < 3; ++i)
                    scope.spawn([](std::atomic<int>* c) -> Task<void> {
                        int r = co_await ringo::sleep_for(24h);
                        if (r == -ECANCELED)
                            ++*c;
                    }(c));
                (void)co_await ringo::shielded(ringo::sleep_for(100ms));
                seen->store(c->load());
                co_await scope.join();
            }(&cancelled, &seen_before_join))
            .detach();
        std::this_thread::sleep_for(20ms);
        pool.shutdown_now();
    }
    EXPECT_EQ(seen_before_join.load(), 3);
    EXPECT_EQ(cancelled.load(), 3);
}

TEST(Scope, TasksStillRunningWhenTheRuntimeGoesLeaveNothingBehind) {
    // A scope's task that is still waiting when the runtime is destroyed (the task that owned
    // the scope returned without joining it, as a server that fails returns) is destroyed by
    // the runtime's shutdown: the scope's shared state goes with the last of them (the ASan
    // build's LeakSanitizer sees it otherwise), and what the task held is released.
    SocketPair sp;
    std::atomic<int> alive{0};
    struct Held {
        std::atomic<int>* a;
        explicit Held(std::atomic<int>* p) : a(p) { ++*a; }
        Held(Held&& o) noexcept : a(o.a) { ++*a; }
        ~Held() { --*a; }
    };
    {
        Runtime rt;
        rt.block_on([](std::atomic<int>* a, int fd) -> Task<void> {
            ringo::TaskScope scope;
            for (int i = 0; i < 3; ++i)
                scope.spawn([](Held) -> Task<void> { co_await ringo::sleep_for(24h); }(Held(a)));
            // One waits in the kernel: its cancellation needs a completion, which the
            // runtime's end does not wait for.
            scope.spawn([](Held, int fd) -> Task<void> {
                char b;
                (void)co_await op::recv(fd, &b, 1);
            }(Held(a), fd));
            co_await ringo::yield();
            // returns with the scope's tasks still running: the scope asks them to stop, and
            // the runtime's end destroys them
            co_return;
        }(&alive, sp.fd[0]));
    }
    EXPECT_EQ(alive.load(), 0);
}

} // namespace
