// tests/compose_helpers.hpp - what the composition suites (test_compose_*.cpp) share: a
// socket pair, a runtime to run one task on, checks that nothing of ours is left in the
// kernel, and an operation that really stays in the kernel after it is cancelled.
#pragma once

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
#include <string>
#include <thread>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::Runtime;
using ringo::Task;
namespace op = ringo::op;

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

inline std::uint32_t in_flight() { return Runtime::current()->stats().ops_in_flight; }

// A value no operation yields: "this branch has not ended yet".
constexpr int kUnset = 1 << 30;

// Checks, after everything that received into `buf` from `rfd` was reported finished, that no
// recv of ours is still armed on `rfd`: a byte written to the peer now stays in the socket and
// `buf` does not change, even after trips through the kernel that run pending completions.
inline Task<void> expect_no_recv_left(int rfd, int wfd, const char* buf, std::size_t n) {
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

} // namespace
