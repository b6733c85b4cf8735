// The engines (core/options.hpp, uring/queue_engine.hpp, src/epoll/): which one a runtime picks and why,
// and the epoll engine running ringo's operations with io_uring's results: readiness on
// sockets and pipes, the thread pool for files and paths, timeouts, cancellation of a wait,
// a call on the pool that runs to its end, and what it does not have (-EOPNOTSUPP).
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
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

// Whether this process has a native AIO context (its completion ring is mapped as "[aio]").
bool has_aio_context() {
    std::FILE* f = std::fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
        found = std::strstr(line, "[aio]") != nullptr;
    std::fclose(f);
    return found;
}

// A file for O_DIRECT in `dir`, or "" when its file system refuses O_DIRECT.
std::string direct_file(const ringo_test::TempDir& dir) {
    std::string path = dir.file("direct");
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0)
        return "";
    ::close(fd);
    return path;
}

// 16 aligned blocks written and read back at once, single and vectored, through O_DIRECT:
// the epoll engine queues them with native AIO (no pool thread), whose context lives as long
// as the engine.
int direct_round_trip(const std::string& path) {
    Runtime rt(epoll());
    constexpr int n = 16;
    constexpr std::size_t bs = 4096;
    ringo::fs::AlignedBuffer out_buf(n * bs), in_buf(n * bs), vin_buf(2 * bs);
    char* out = reinterpret_cast<char*>(out_buf.data());
    char* in = reinterpret_cast<char*>(in_buf.data());
    char* vin = reinterpret_cast<char*>(vin_buf.data());
    for (int i = 0; i < n; ++i)
        std::memset(out + i * bs, 'a' + i, bs);
    int bad = rt.block_on([&]() -> Task<int> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC, 0);
        if (fd < 0)
            co_return 100;
        auto write = [](int fd, char* b, std::size_t len, std::uint64_t off) -> Task<int> {
            co_return co_await op::write(fd, b, static_cast<unsigned>(len), off);
        };
        auto read = [](int fd, char* b, std::size_t len, std::uint64_t off) -> Task<int> {
            co_return co_await op::read(fd, b, static_cast<unsigned>(len), off);
        };
        std::vector<ringo::JoinHandle<int>> hs;
        for (int i = 0; i < n; ++i)
            hs.push_back(ringo::spawn(write(fd, out + i * bs, bs, i * bs)));
        int bad = 0;
        for (auto& h : hs)
            bad += co_await h != static_cast<int>(bs);
        hs.clear();
        for (int i = 0; i < n; ++i)
            hs.push_back(ringo::spawn(read(fd, in + i * bs, bs, (n - 1 - i) * bs)));
        for (auto& h : hs)
            bad += co_await h != static_cast<int>(bs);
        iovec v[2] = {{vin, bs}, {vin + bs, bs}};
        bad += co_await op::readv(fd, v, 2, 3 * bs) != static_cast<int>(2 * bs);
        // An unaligned buffer: the kernel's answer (EINVAL), whichever way the call went.
        bad += co_await op::read(fd, in + 1, bs, 0) != -EINVAL;
        if (!has_aio_context())
            bad += 1000;
        (void)co_await op::close(fd);
        co_return bad;
    }());
    for (int i = 0; i < n; ++i)
        bad += in[i * bs] != 'a' + (n - 1 - i) || in[i * bs + bs - 1] != 'a' + (n - 1 - i);
    bad += vin[0] != 'd' || vin[bs] != 'e';
    return bad;
}

TEST(EpollEngine, DirectReadsAndWritesByNativeAio) {
    ringo_test::TempDir dir;
    std::string path = direct_file(dir);
    if (path.empty())
        GTEST_SKIP() << "the temporary directory's file system refuses O_DIRECT";
    EXPECT_EQ(direct_round_trip(path), 0);
    EXPECT_FALSE(has_aio_context()) << "the engine's end destroys its AIO context";
}

// Where native AIO is refused (a seccomp profile, a kernel without it: ENOSYS from io_setup),
// the same direct calls run on the pool with the same results.
TEST(EpollEngine, DirectCallsWhereNativeAioIsRefused) {
    if (ringo_test::under_tsan)
        GTEST_SKIP() << "ThreadSanitizer does not support starting threads after a multi-threaded fork";
    ringo_test::TempDir dir;
    std::string path = direct_file(dir);
    if (path.empty())
        GTEST_SKIP() << "the temporary directory's file system refuses O_DIRECT";
    int status = ringo_test::wait_status_of_child([&] {
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_setup, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            return 2;
        int bad = direct_round_trip(path);
        return bad == 1000 ? 0 : 1; // all right, and no AIO context
    });
    ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A direct read in flight cannot be withdrawn: cancelled by a deadline it runs to its end
// (its buffer written until then) and the runtime ends with nothing left in flight.
TEST(EpollEngine, ADirectReadCancelledRunsToItsEnd) {
    ringo_test::TempDir dir;
    std::string path = direct_file(dir);
    if (path.empty())
        GTEST_SKIP() << "the temporary directory's file system refuses O_DIRECT";
    {
        int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        std::string block(1 << 20, 'x');
        ASSERT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
        ::fsync(fd);
        ::close(fd);
    }
    Runtime rt(epoll());
    int ended = rt.block_on([&]() -> Task<int> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC, 0);
        if (fd < 0)
            co_return fd;
        ringo::fs::AlignedBuffer buf(1 << 20);
        int ended = 0;
        for (int i = 0; i < 20; ++i) {
            int r = co_await ringo::with_timeout(op::read(fd, buf.data(), 1 << 20, 0), std::chrono::nanoseconds(1));
            ended += r == (1 << 20) || r == -ETIME;
        }
        (void)co_await op::close(fd);
        co_return ended;
    }());
    EXPECT_EQ(ended, 20);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
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
    auto [absent, fixed] = rt.block_on([](int) -> Task<std::pair<int, int>> {
        int t = co_await op::msg_ring(op::FileRef(-1), 1, 2); // absent from the probe: not submitted
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

namespace {
// A UDP socket the engine makes (op::socket), bound to a loopback port; `a` gets its address.
Task<int> made_udp_socket(sockaddr_in& a) {
    int s = co_await op::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(s, 0);
    a = sockaddr_in{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    EXPECT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &al), 0);
    co_return s;
}
} // namespace

// A descriptor the engine made (op::socket) stays registered for its life, so a later wait on
// it makes no epoll_ctl; closed behind the engine's back with a plain close and its number
// reused by a pipe, a read on that number still ends (the registration is checked again after
// a wait finds no event: src/epoll/descriptors.cpp, verify_registrations).
TEST(EpollEngine, AMadeSocketClosedBehindItsBackAndItsNumberReused) {
    int pfd[2];
    ASSERT_EQ(::pipe2(pfd, O_CLOEXEC), 0);
    Runtime rt(epoll());
    std::string got = rt.block_on([](int pipe_r, int pipe_w) -> Task<std::string> {
        sockaddr_in a{};
        int s = co_await made_udp_socket(a);
        for (int round = 0; round < 2; ++round) { // the second wait makes no registration call
            std::thread sender([a] {
                std::this_thread::sleep_for(20ms);
                int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                (void)::sendto(u, "dgram", 5, 0, reinterpret_cast<const sockaddr*>(&a), sizeof a);
                ::close(u);
            });
            char b[16];
            EXPECT_EQ(co_await ringo::with_timeout(op::recv(s, b, sizeof b), 5s), 5);
            sender.join();
        }
        ::close(s); // behind the engine's back
        EXPECT_EQ(::dup3(pipe_r, s, O_CLOEXEC), s);
        std::thread writer([pipe_w] {
            std::this_thread::sleep_for(20ms);
            EXPECT_EQ(::write(pipe_w, "piped", 5), 5);
        });
        char buf[16];
        int n = co_await ringo::with_timeout(op::read(s, buf, sizeof buf, 0), 5s);
        writer.join();
        EXPECT_EQ(co_await op::close(s), 0);
        co_return std::string(buf, n > 0 ? n : 0);
    }(pfd[0], pfd[1]));
    EXPECT_EQ(got, "piped");
    ::close(pfd[0]);
    ::close(pfd[1]);
}

namespace {
// Rounds of a read that waits on `fd` while its peer is written only once the wait is in
// place (a nop's trip through the engine, which takes the read's SQE with it); yields the
// registration calls (epoll_ctl) the rounds made.
Task<std::uint64_t> waits_on(int fd, int peer, int rounds) {
    Runtime* rt = Runtime::current();
    const std::uint64_t before = rt->stats().readiness_registrations;
    for (int i = 0; i < rounds; ++i) {
        auto reader = ringo::spawn([](int fd) -> Task<int> {
            char b[16];
            co_return co_await op::read(fd, b, sizeof b, static_cast<std::uint64_t>(-1));
        }(fd));
        int nop = co_await op::nop();
        EXPECT_EQ(nop, 0);
        EXPECT_EQ(::write(peer, "ping", 4), 4);
        int got = co_await reader;
        EXPECT_EQ(got, 4);
    }
    co_return rt->stats().readiness_registrations - before;
}
} // namespace

// A descriptor that a ringo::Fd owns is registered once for its life, as one the engine made
// (its close comes through the engine); a bare descriptor number is registered again at each
// wait, as it may be closed and reused behind the engine's back, and so is one the Fd gave up
// (release). Moved to another Fd, it stays registered.
TEST(EpollEngine, AnFdOwnedDescriptorIsRegisteredOnce) {
    Pair a, b;
    Runtime rt(epoll());
    rt.block_on([](int bare, int peer_of_bare, int other, int peer_of_other) -> Task<void> {
        std::uint64_t bare_calls = co_await waits_on(bare, peer_of_bare, 4);
        EXPECT_GE(bare_calls, 4u);
        ringo::Fd owned(::fcntl(other, F_DUPFD_CLOEXEC, 0));
        EXPECT_TRUE(owned.valid());
        std::uint64_t owned_calls = co_await waits_on(owned.get(), peer_of_other, 4);
        EXPECT_EQ(owned_calls, 1u);
        ringo::Fd moved;
        moved = std::move(owned); // (still the same owner's: nothing new to register)
        std::uint64_t moved_calls = co_await waits_on(moved.get(), peer_of_other, 2);
        EXPECT_EQ(moved_calls, 0u);
        int raw = moved.release();
        std::uint64_t released_calls = co_await waits_on(raw, peer_of_other, 3);
        EXPECT_GE(released_calls, 3u);
        EXPECT_EQ(::close(raw), 0);
    }(a.fd[0], a.fd[1], b.fd[0], b.fd[1]));
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

// An Fd closed through the engine (its destructor) takes the trust with it: the number,
// reused by a pipe that no Fd owns, is registered at its waits and its reads end.
TEST(EpollEngine, AnFdClosedAndItsNumberReusedByABareDescriptor) {
    Pair p;
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    Runtime rt(epoll());
    rt.block_on([](int sock, int peer, int pipe_r, int pipe_w) -> Task<void> {
        int number;
        {
            ringo::Fd owned(::fcntl(sock, F_DUPFD_CLOEXEC, 0));
            number = owned.get();
            std::uint64_t calls = co_await waits_on(number, peer, 2);
            EXPECT_EQ(calls, 1u);
        }
        // The Fd's close went to the engine's queue; a nop's trip takes it there.
        int nop = co_await op::nop();
        EXPECT_EQ(nop, 0);
        EXPECT_EQ(::dup3(pipe_r, number, O_CLOEXEC), number);
        std::uint64_t calls = co_await waits_on(number, pipe_w, 2);
        EXPECT_GE(calls, 2u);
        EXPECT_EQ(::close(number), 0);
    }(p.fd[0], p.fd[1], pipe_fds[0], pipe_fds[1]));
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
}

// The kernel keeps a registration while its file is open. A made socket closed behind the
// engine's back, its file alive under a dup and its number reused by a pipe: the old socket's
// events still come under that number, and must not be taken for the pipe's (a read of the
// pipe would then wait for an event that never comes).
TEST(EpollEngine, AnOldFilesEventsUnderAReusedNumberAreNotItsNewDescriptors) {
    int pfd[2];
    ASSERT_EQ(::pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0);
    Runtime rt(epoll());
    std::string got = rt.block_on([](int pipe_r, int pipe_w) -> Task<std::string> {
        sockaddr_in a{};
        int s = co_await made_udp_socket(a);
        int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        EXPECT_GE(u, 0);
        auto send_one = [&] {
            EXPECT_EQ(::sendto(u, "dgram", 5, 0, reinterpret_cast<const sockaddr*>(&a), sizeof a), 5);
        };
        { // a wait registers it (for its life: the engine made it)
            auto reader = ringo::spawn([](int s) -> Task<int> {
                char b[16];
                co_return co_await op::recv(s, b, sizeof b);
            }(s));
            int nop = co_await op::nop();
            EXPECT_EQ(nop, 0);
            send_one();
            int n = co_await reader;
            EXPECT_EQ(n, 5);
        }
        int old_file = ::fcntl(s, F_DUPFD_CLOEXEC, 0); // keeps the socket's file open
        EXPECT_GE(old_file, 0);
        EXPECT_EQ(::close(s), 0); // behind the engine's back
        EXPECT_EQ(::dup3(pipe_r, s, O_CLOEXEC), s);
        EXPECT_EQ(::fcntl(s, F_SETFL, O_NONBLOCK), 0);
        auto reader = ringo::spawn([](int fd) -> Task<int> {
            char b[16];
            co_return co_await ringo::with_timeout(op::read(fd, b, sizeof b, static_cast<std::uint64_t>(-1)), 5s);
        }(s));
        int nop = co_await op::nop(); // the read waits
        EXPECT_EQ(nop, 0);
        send_one();                     // an event of the old socket, under the number
        co_await ringo::sleep_for(2ms); // (the engine takes the event meanwhile)
        EXPECT_EQ(::write(pipe_w, "piped", 5), 5);
        int n = co_await reader;
        EXPECT_EQ(n, 5);
        ::close(u);
        ::close(old_file);
        EXPECT_EQ(co_await op::close(s), 0);
        co_return n == 5 ? std::string("piped") : std::to_string(n);
    }(pfd[0], pfd[1]));
    EXPECT_EQ(got, "piped");
    ::close(pfd[0]);
    ::close(pfd[1]);
}

// A descriptor the engine made, taken by an Fd and given up again (release), is one the caller
// may close anywhere: closed with a plain close and its number reused by a regular file, a read
// at an offset reads the file there, not as the socket it was.
TEST(EpollEngine, AMadeSocketReleasedClosedAndItsNumberReusedByAFile) {
    ringo_test::TempDir dir;
    const std::string path = dir.file_with("f", "0123456789");
    ASSERT_FALSE(path.empty());
    Runtime rt(epoll());
    std::string got = rt.block_on([](std::string path) -> Task<std::string> {
        int made = co_await op::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_GE(made, 0);
        ringo::Fd owned(made);
        char probe[4];
        int r = co_await op::recv(owned.get(), probe, sizeof probe, MSG_DONTWAIT); // (known a socket)
        EXPECT_LT(r, 0);
        int raw = owned.release();
        EXPECT_EQ(::close(raw), 0); // not through the engine
        int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        EXPECT_EQ(f, raw); // the lowest free number
        char buf[4] = {};
        int n = co_await op::read(f, buf, sizeof buf, 6);
        ::close(f);
        co_return std::string(buf, n > 0 ? n : 0);
    }(path));
    EXPECT_EQ(got, "6789");
}

// A call only a socket takes, on a bare number last found a socket, is made without looking at
// the descriptor again: closed behind the engine's back and its number reused by a pipe, the
// call answers as the kernel does (-ENOTSOCK), and a read of the pipe then waits for its data.
TEST(EpollEngine, ASocketNumberReusedByAPipeAnswersNotASocket) {
    Pair p;
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    Runtime rt(epoll());
    rt.block_on([](int peer, int pipe_r, int pipe_w) -> Task<void> {
        int number = ::fcntl(peer, F_DUPFD_CLOEXEC, 0);
        EXPECT_GE(number, 0);
        int sent = co_await op::send(number, "hi", 2); // (found a socket)
        EXPECT_EQ(sent, 2);
        EXPECT_EQ(::close(number), 0); // behind the engine's back
        EXPECT_EQ(::dup3(pipe_r, number, O_CLOEXEC), number);
        int r = co_await op::recv(number, nullptr, 0);
        EXPECT_EQ(r, -ENOTSOCK);
        r = co_await op::send(number, "x", 1);
        EXPECT_EQ(r, -ENOTSOCK);
        std::uint64_t calls = co_await waits_on(number, pipe_w, 2);
        EXPECT_GE(calls, 2u);
        EXPECT_EQ(::close(number), 0);
    }(p.fd[1], pipe_fds[0], pipe_fds[1]));
    char b[4];
    EXPECT_EQ(::read(p.fd[0], b, sizeof b), 2);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
}

// What a descriptor is, is cached: a positional read of a regular file makes no fstat or
// fcntl. Closed behind the engine's back and its number reused by a pipe, reads and writes
// at an offset find out from the call's -ESPIPE and run as the pipe's (at once, by readiness
// or from the pool's answer), never as a blocking call on a pool thread.
TEST(EpollEngine, AFileClosedBehindItsBackAndItsNumberReusedByAPipe) {
    ringo_test::TempDir dir;
    const std::string path = dir.file("f");
    int f = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(f, 0);
    ASSERT_EQ(::write(f, "file bytes", 10), 10);
    int pfd[2];
    ASSERT_EQ(::pipe2(pfd, O_CLOEXEC), 0);
    Runtime rt(epoll());
    rt.block_on([](int f, int pipe_r, int pipe_w) -> Task<void> {
        char buf[16] = {};
        EXPECT_EQ(co_await op::read(f, buf, sizeof buf, 5), 5); // at once, from the page cache
        EXPECT_EQ(std::string(buf, 5), "bytes");
        EXPECT_EQ(co_await op::write(f, "F", 1, 0), 1); // on the pool
        // The number now reads from the pipe: a read at an offset waits for the writer.
        EXPECT_EQ(::dup3(pipe_r, f, O_CLOEXEC), f);
        std::thread writer([pipe_w] {
            std::this_thread::sleep_for(20ms);
            EXPECT_EQ(::write(pipe_w, "late", 4), 4);
        });
        int n = co_await ringo::with_timeout(op::read(f, buf, sizeof buf, 5), 5s);
        writer.join();
        EXPECT_EQ(n, 4);
        EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "late");
        // Again a file, then the pipe's writing end: a write at an offset goes to the pool on
        // the cached word, comes back with -ESPIPE and is made as the pipe's.
        int g = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        EXPECT_EQ(::dup3(g, f, O_CLOEXEC), f);
        ::close(g);
        EXPECT_EQ(co_await op::read(f, buf, 4, 0), 4);
        EXPECT_EQ(std::string(buf, 4), "\x7f"
                                       "ELF");
        EXPECT_EQ(::dup3(pipe_w, f, O_CLOEXEC), f);
        EXPECT_EQ(co_await ringo::with_timeout(op::write(f, "hey", 3, 0), 5s), 3);
        EXPECT_EQ(::read(pipe_r, buf, sizeof buf), 3);
        EXPECT_EQ(std::string(buf, 3), "hey");
        EXPECT_EQ(co_await op::close(f), 0);
    }(f, pfd[0], pfd[1]));
    ::close(pfd[0]);
    ::close(pfd[1]);
}

// Opens that cannot wait (O_NONBLOCK, O_PATH, O_DIRECTORY) and statx of a descriptor are made
// at once on a local file system; the answers are the calls' own.
TEST(EpollEngine, OpensAndStatxOfADescriptor) {
    ringo_test::TempDir dir;
    const std::string path = dir.file_with("f", "0123456789");
    ASSERT_FALSE(path.empty());
    Runtime rt(epoll());
    rt.block_on([](std::string dirp, std::string path) -> Task<void> {
        open_how how{};
        how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
        how.resolve = RESOLVE_BENEATH;
        int d = co_await op::openat(AT_FDCWD, dirp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        EXPECT_GE(d, 0);
        int f = co_await op::openat2(d, "f", &how);
        EXPECT_GE(f, 0);
        EXPECT_TRUE(::fcntl(f, F_GETFL) & O_NONBLOCK);
        EXPECT_EQ(co_await op::openat2(d, "../f", &how), -EXDEV);
        EXPECT_EQ(co_await op::openat2(d, "missing", &how), -ENOENT);
        struct statx st {};
        EXPECT_EQ(co_await op::statx(f, "", AT_EMPTY_PATH, STATX_SIZE, &st), 0);
        EXPECT_EQ(st.stx_size, 10u);
        EXPECT_EQ(co_await op::statx(f, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_SIZE, &st), 0);
        EXPECT_EQ(st.stx_size, 10u);
        EXPECT_EQ(co_await op::statx(-1, "", AT_EMPTY_PATH, STATX_SIZE, &st), -EBADF);
        // Without O_NONBLOCK the open goes to the pool and the descriptor is as asked.
        int g = co_await op::openat(AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC, 0);
        EXPECT_GE(g, 0);
        EXPECT_FALSE(::fcntl(g, F_GETFL) & O_NONBLOCK);
        int p = co_await op::openat(d, "f", O_PATH | O_CLOEXEC, 0);
        EXPECT_GE(p, 0);
        for (int x : {f, g, p, d})
            EXPECT_EQ(co_await op::close(x), 0);
    }(dir.path().string(), path));
}
