// The engines (core/options.hpp, uring/epoll_engine.hpp): which one a runtime picks and why,
// and the epoll engine running ringo's operations with io_uring's results: readiness on
// sockets and pipes, the thread pool for files and paths, timeouts, cancellation of a wait,
// a call on the pool that runs to its end, and what it does not have (-EOPNOTSUPP).
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;
using ringo::Engine;
using ringo::Runtime;
using ringo::RuntimeOptions;
using ringo::Task;
namespace op = ringo::op;

namespace {

RuntimeOptions epoll() { return RuntimeOptions{}.engine(Engine::epoll); }

// RINGO_ENGINE set for one scope.
struct EnvEngine {
    std::string old;
    bool had;
    explicit EnvEngine(const char* v) {
        const char* o = std::getenv("RINGO_ENGINE");
        had = o != nullptr;
        if (had)
            old = o;
        if (v)
            ::setenv("RINGO_ENGINE", v, 1);
        else
            ::unsetenv("RINGO_ENGINE");
    }
    ~EnvEngine() {
        if (had)
            ::setenv("RINGO_ENGINE", old.c_str(), 1);
        else
            ::unsetenv("RINGO_ENGINE");
    }
};

TEST(Engine, AskedForEpoll) {
    Runtime rt(epoll());
    EXPECT_EQ(rt.engine(), Engine::epoll);
    EXPECT_EQ(rt.io_uring_refusal(), 0);
    EXPECT_NE(rt.engine_reason().find("asked"), std::string::npos) << rt.engine_reason();
    EXPECT_EQ(rt.ring_fd(), -1);
    EXPECT_EQ(rt.setup_flags(), 0u);
}

TEST(Engine, AutomaticTakesEpollWhenIoUringIsRefused) {
    EnvEngine env(nullptr);
    for (int err : {EPERM, ENOMEM, ENOSYS}) {
        Runtime rt(RuntimeOptions{}.fail_setup_for_testing(err));
        EXPECT_EQ(rt.engine(), Engine::epoll);
        EXPECT_EQ(rt.io_uring_refusal(), err);
        EXPECT_NE(rt.engine_reason().find(std::strerror(err)), std::string::npos) << rt.engine_reason();
        EXPECT_EQ(rt.block_on([]() -> Task<int> { co_return co_await op::nop(); }()), 0);
    }
}

TEST(Engine, ForcedIoUringThatIsRefusedThrows) {
    EXPECT_THROW(Runtime rt(RuntimeOptions{}.engine(Engine::io_uring).fail_setup_for_testing(EPERM)),
                 std::system_error);
}

TEST(Engine, EnvironmentOverridesAutomatic) {
    {
        EnvEngine env("epoll");
        Runtime rt;
        EXPECT_EQ(rt.engine(), Engine::epoll);
    }
    {
        EnvEngine env("io_uring");
        Runtime rt(RuntimeOptions{}.engine(Engine::automatic));
        EXPECT_EQ(rt.engine(), Engine::io_uring);
    }
    {
        EnvEngine env("epoll");
        Runtime rt(RuntimeOptions{}.engine(Engine::io_uring)); // the program's explicit choice wins
        EXPECT_EQ(rt.engine(), Engine::io_uring);
    }
}

struct Pair {
    int fd[2];
    Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
    ~Pair() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
};

TEST(EpollEngine, SocketReadWaitsForReadiness) {
    Pair p;
    Runtime rt(epoll());
    std::thread writer([&] {
        std::this_thread::sleep_for(20ms);
        EXPECT_EQ(::write(p.fd[1], "hello", 5), 5);
    });
    int n = rt.block_on([](int fd) -> Task<int> {
        char buf[16];
        int r = co_await op::recv(fd, buf, sizeof buf);
        EXPECT_EQ(std::string(buf, r > 0 ? r : 0), "hello");
        co_return r;
    }(p.fd[0]));
    writer.join();
    EXPECT_EQ(n, 5);
}

TEST(EpollEngine, ManyWaitersOnManySockets) {
    constexpr int n = 64;
    std::vector<Pair> pairs(n);
    Runtime rt(epoll());
    int total = rt.block_on([](std::vector<Pair>& ps) -> Task<int> {
        std::vector<ringo::JoinHandle<int>> hs;
        for (auto& p : ps)
            hs.push_back(ringo::spawn([](int fd) -> Task<int> {
                char b[8];
                co_return co_await op::recv(fd, b, sizeof b);
            }(p.fd[0])));
        co_await ringo::sleep_for(5ms);
        for (auto& p : ps)
            (void)co_await op::send(p.fd[1], "ab", 2);
        int sum = 0;
        for (auto& h : hs)
            sum += co_await h;
        co_return sum;
    }(pairs));
    EXPECT_EQ(total, 2 * n);
}

TEST(EpollEngine, FilesGoToThePool) {
    char path[] = "/tmp/ringo-engine-XXXXXX";
    int tmp = ::mkstemp(path);
    ASSERT_GE(tmp, 0);
    ::close(tmp);
    Runtime rt(epoll());
    std::string got = rt.block_on([](const char* p) -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, p, O_RDWR | O_TRUNC | O_CLOEXEC, 0);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(co_await op::write(fd, "ringo on epoll", 14, 0), 14);
        EXPECT_EQ(co_await op::fsync(fd), 0);
        struct statx st {};
        EXPECT_EQ(co_await op::statx(AT_FDCWD, p, 0, STATX_SIZE, &st), 0);
        EXPECT_EQ(st.stx_size, 14u);
        char buf[32] = {};
        int n = co_await op::read(fd, buf, sizeof buf, 6);
        EXPECT_EQ(co_await op::close(fd), 0);
        co_return std::string(buf, n > 0 ? n : 0);
    }(path));
    EXPECT_EQ(got, "on epoll");
    ::unlink(path);
}

// fork() after the engine's thread pool has started: the child's own file calls start new
// threads instead of waiting for the parent's.
TEST(EpollEngine, FilesInAChildForkedAfterThePoolStarted) {
    if (ringo_test::under_tsan)
        GTEST_SKIP() << "ThreadSanitizer does not support starting threads after a multi-threaded fork";
    auto fsync_dev_null = []() -> Task<int> {
        int fd = co_await op::openat(AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC, 0);
        if (fd < 0)
            co_return fd;
        int r = co_await op::fsync(fd); // on the pool
        co_await op::close(fd);
        co_return r == -EINVAL ? 0 : r; // /dev/null may refuse fsync: the call was still made
    };
    {
        Runtime rt(epoll());
        ASSERT_EQ(rt.block_on(fsync_dev_null()), 0); // the pool's thread now idles
    }
    int status = ringo_test::wait_status_of_child([&] {
        Runtime rt(epoll());
        return rt.block_on(fsync_dev_null()) == 0 ? 0 : 1;
    });
    ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(EpollEngine, TimeoutAndItsCancellation) {
    Runtime rt(epoll());
    auto t0 = std::chrono::steady_clock::now();
    int r = rt.block_on([]() -> Task<int> { co_return co_await op::timeout(20ms); }());
    EXPECT_EQ(r, -ETIME);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 19ms);
    Pair p;
    int c = rt.block_on([](int fd) -> Task<int> {
        char b[4];
        co_return co_await ringo::with_timeout(op::recv(fd, b, sizeof b), 10ms);
    }(p.fd[0]));
    EXPECT_EQ(c, -ETIME); // the recv was cancelled: nothing left waiting
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(EpollEngine, ACountedTimeoutThatExpiresEndsOnce) {
    // A timeout with a completion count that no completion reaches ends by its deadline,
    // with one CQE; the engine goes on (the record was once finished twice).
    Runtime rt(epoll());
    auto r = rt.block_on([]() -> Task<std::pair<int, int>> {
        int a = co_await op::timeout(__kernel_timespec{0, 10'000'000}, 1);
        int b = co_await op::timeout(__kernel_timespec{0, 1'000'000}, 5);
        for (int i = 0; i < 3; ++i)
            (void)co_await op::nop();
        co_return std::pair{a, b};
    }());
    EXPECT_EQ(r, std::make_pair(-ETIME, -ETIME));
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(EpollEngine, WhatItDoesNotHaveIsEopnotsupp) {
    Runtime rt(epoll());
    EXPECT_FALSE(rt.supports(ringo::uring::compat::opcode::msg_ring));
    EXPECT_FALSE(rt.supports(ringo::uring::compat::opcode::read_fixed));
    Pair p;
    auto [absent, fixed] = rt.block_on([](int fd) -> Task<std::pair<int, int>> {
        std::uint32_t word = 0;
        int t = co_await op::futex_wake(&word, 1); // absent from the probe: not submitted
        char b[4];
        int f = co_await op::read(op::Fixed{0}, b, sizeof b, 0);
        co_return std::pair{t, f};
    }(p.fd[0]));
    EXPECT_EQ(absent, -EOPNOTSUPP);
    EXPECT_EQ(fixed, -EBADF); // no registered file table: as the kernel answers without one
}

TEST(EpollEngine, TcpEchoThroughTheHighLevelLayer) {
    Runtime rt(epoll());
    std::string reply = rt.block_on([]() -> Task<std::string> {
        namespace net = ringo::net;
        auto l = co_await net::TcpListener::bind(net::SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        auto server = ringo::spawn([](net::TcpListener& lst) -> Task<void> {
            auto c = co_await lst.accept();
            if (!c)
                co_return;
            char buf[64];
            auto n = co_await c->stream.read(buf, sizeof buf);
            if (n && *n)
                (void)co_await c->stream.write_all(buf, *n);
        }(*l));
        auto s = co_await net::TcpStream::connect(*l->local_addr());
        EXPECT_TRUE(s.ok());
        (void)co_await s->write_all(std::string_view("over epoll"));
        char buf[10];
        auto r = co_await s->read_exact(buf, sizeof buf);
        co_await server;
        co_return r ? std::string(buf, sizeof buf) : r.message();
    }());
    EXPECT_EQ(reply, "over epoll");
}

} // namespace
