#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

using ringo::Runtime;
using ringo::Task;
namespace op = ringo::op;

namespace {

template <class F>
auto run(F f) {
    Runtime rt;
    return rt.block_on(f());
}

// A file descriptor number that is certainly not open.
int closed_fd() {
    int fd = ::open("/dev/null", O_RDONLY);
    ::close(fd);
    return fd;
}

// An address no process can read or write (a PROT_NONE page).
void* bad_address() {
    static void* p = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p;
}

TEST(OpNop, CompletesWithZero) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await op::nop(); }), 0);
}

TEST(OpNop, WithoutRuntimeYieldsEnxio) {
    // A task resumed by hand, outside any runtime.
    auto t = []() -> Task<int> { co_return co_await op::nop(); }();
    auto h = t.handle();
    h.resume();
    ASSERT_TRUE(h.done());
    EXPECT_EQ(h.promise().result(), -ENXIO);
}

struct FileOps : ::testing::Test {
    ringo_test::TempDir dir;
};

TEST_F(FileOps, WriteThenReadBack) {
    std::string path = dir.file("a");
    auto r = run([&]() -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
        EXPECT_GE(fd, 0);
        const char msg[] = "hello ringo";
        EXPECT_EQ(co_await op::write(fd, msg, sizeof msg - 1, 0), static_cast<int>(sizeof msg - 1));
        char buf[64] = {};
        int n = co_await op::read(fd, buf, sizeof buf, 0);
        EXPECT_EQ(n, static_cast<int>(sizeof msg - 1));
        EXPECT_EQ(co_await op::read(fd, buf, sizeof buf, 1000), 0); // past EOF
        EXPECT_EQ(co_await op::close(fd), 0);
        co_return std::string(buf, n > 0 ? n : 0);
    });
    EXPECT_EQ(r, "hello ringo");
}

TEST_F(FileOps, ReadAtCurrentPosition) {
    std::string path = dir.file("pos");
    {
        int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
        ASSERT_EQ(::write(fd, "abcdef", 6), 6);
        ::close(fd);
    }
    auto r = run([&]() -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_RDONLY);
        char a[3], b[3];
        EXPECT_EQ(co_await op::read(fd, a, 3, op::current_pos), 3);
        EXPECT_EQ(co_await op::read(fd, b, 3, op::current_pos), 3);
        co_await op::close(fd);
        co_return std::string(a, 3) + "|" + std::string(b, 3);
    });
    EXPECT_EQ(r, "abc|def");
}

TEST_F(FileOps, VectoredWriteAndRead) {
    std::string path = dir.file("v");
    auto r = run([&]() -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR, 0644);
        char p1[] = "abc", p2[] = "defg";
        iovec out[2] = {{p1, 3}, {p2, 4}};
        EXPECT_EQ(co_await op::writev(fd, out, 2, 0), 7);
        char q1[4] = {}, q2[3] = {};
        iovec in[2] = {{q1, 4}, {q2, 3}};
        EXPECT_EQ(co_await op::readv(fd, in, 2, 0), 7);
        co_await op::close(fd);
        co_return std::string(q1, 4) + std::string(q2, 3);
    });
    EXPECT_EQ(r, "abcdefg");
}

TEST_F(FileOps, FsyncAndDatasync) {
    std::string path = dir.file("s");
    run([&]() -> Task<void> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR, 0644);
        EXPECT_EQ(co_await op::write(fd, "x", 1, 0), 1);
        EXPECT_EQ(co_await op::fsync(fd), 0);
        EXPECT_EQ(co_await op::fsync(fd, op::fsync_datasync), 0);
        co_await op::close(fd);
        EXPECT_EQ(co_await op::fsync(closed_fd()), -EBADF);
    });
}

TEST_F(FileOps, Statx) {
    std::string path = dir.file("st");
    {
        int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
        ASSERT_EQ(::write(fd, "12345", 5), 5);
        ::close(fd);
    }
    run([&]() -> Task<void> {
        struct statx st {};
        EXPECT_EQ(co_await op::statx(AT_FDCWD, path.c_str(), 0, STATX_SIZE | STATX_MODE, &st), 0);
        EXPECT_EQ(st.stx_size, 5u);
        EXPECT_EQ(st.stx_mode & 0777, 0600u);
        std::string missing = path + ".missing";
        EXPECT_EQ(co_await op::statx(AT_FDCWD, missing.c_str(), 0, STATX_SIZE, &st), -ENOENT);
        EXPECT_EQ(co_await op::statx(AT_FDCWD, static_cast<const char*>(bad_address()), 0, STATX_SIZE, &st), -EFAULT);
    });
}

TEST_F(FileOps, OpenErrors) {
    std::string missing = dir.file("nope");
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::openat(AT_FDCWD, missing.c_str(), O_RDONLY), -ENOENT);
        EXPECT_EQ(co_await op::openat(closed_fd(), "relative", O_RDONLY), -EBADF);
        EXPECT_EQ(co_await op::openat(AT_FDCWD, static_cast<const char*>(bad_address()), O_RDONLY), -EFAULT);
    });
}

TEST_F(FileOps, ErrorsOnBadFdsAndBuffers) {
    std::string path = dir.file("e");
    run([&]() -> Task<void> {
        char buf[16];
        int bad = closed_fd();
        EXPECT_EQ(co_await op::read(bad, buf, sizeof buf, 0), -EBADF);
        EXPECT_EQ(co_await op::write(bad, buf, sizeof buf, 0), -EBADF);
        EXPECT_EQ(co_await op::close(bad), -EBADF);
        EXPECT_EQ(co_await op::close(-1), -EBADF);
        iovec iov{buf, sizeof buf};
        EXPECT_EQ(co_await op::readv(bad, &iov, 1, 0), -EBADF);
        EXPECT_EQ(co_await op::writev(bad, &iov, 1, 0), -EBADF);

        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR, 0644);
        EXPECT_EQ(co_await op::write(fd, "data", 4, 0), 4);
        // Zero-length transfers are not errors.
        EXPECT_EQ(co_await op::read(fd, buf, 0, 0), 0);
        EXPECT_EQ(co_await op::write(fd, buf, 0, 0), 0);
        // The kernel reports bad user addresses as -EFAULT.
        EXPECT_EQ(co_await op::read(fd, bad_address(), 4, 0), -EFAULT);
        EXPECT_EQ(co_await op::write(fd, bad_address(), 4, 0), -EFAULT);
        // Writing to a read-only descriptor.
        int ro = co_await op::openat(AT_FDCWD, path.c_str(), O_RDONLY);
        EXPECT_EQ(co_await op::write(ro, "x", 1, 0), -EBADF);
        co_await op::close(ro);
        co_await op::close(fd);
        // An fd used after it was closed.
        EXPECT_EQ(co_await op::read(fd, buf, 4, 0), -EBADF);
    });
}

TEST(OpTimeout, FiresWithEtime) {
    auto start = std::chrono::steady_clock::now();
    int r = run([]() -> Task<int> { co_return co_await op::timeout(std::chrono::milliseconds(20)); });
    auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r, -ETIME);
    EXPECT_GE(elapsed, std::chrono::milliseconds(19));
}

TEST(OpTimeout, NegativeDurationIsEinval) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await op::timeout(std::chrono::milliseconds(-5)); }), -EINVAL);
}

TEST(OpTimeout, CountCompletionsEndsTimeoutEarly) {
    // A timeout waiting for 1 other completion ends with 0 once a NOP completes.
    int r = run([]() -> Task<int> {
        auto t = ringo::spawn([]() -> Task<int> { co_return co_await op::timeout(std::chrono::seconds(10), 1); }());
        co_await ringo::yield();
        co_await op::nop();
        co_return co_await t;
    });
    EXPECT_EQ(r, 0);
}

TEST(OpTimeout, EtimeSuccessFlag) {
    int r = run([]() -> Task<int> {
        co_return co_await op::timeout(std::chrono::milliseconds(1), 0, ringo::uring::compat::timeout_etime_success);
    });
    EXPECT_EQ(r, -ETIME); // the CQE still carries -ETIME; only links treat it as success
}

struct SocketOps : ::testing::Test {};

TEST_F(SocketOps, TcpLoopbackConnectAcceptSendRecv) {
    ringo_test::Listener l;
    auto r = run([&]() -> Task<std::string> {
        auto server = ringo::spawn([](int lfd) -> Task<std::string> {
            sockaddr_in peer{};
            socklen_t plen = sizeof peer;
            int c = co_await op::accept(lfd, reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_CLOEXEC);
            EXPECT_GE(c, 0);
            EXPECT_EQ(plen, sizeof peer);
            char buf[32] = {};
            int n = co_await op::recv(c, buf, sizeof buf);
            EXPECT_EQ(co_await op::send(c, buf, n > 0 ? n : 0), n);
            EXPECT_EQ(co_await op::shutdown(c, SHUT_WR), 0);
            co_await op::close(c);
            co_return std::string(buf, n > 0 ? n : 0);
        }(l.fd));
        int s = co_await op::socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_GE(s, 0);
        EXPECT_EQ(co_await op::connect(s, reinterpret_cast<const sockaddr*>(&l.addr), sizeof l.addr), 0);
        EXPECT_EQ(co_await op::send(s, "ping", 4), 4);
        char back[8] = {};
        int n = co_await op::recv(s, back, sizeof back);
        EXPECT_EQ(n, 4);
        EXPECT_EQ(co_await op::recv(s, back, sizeof back), 0); // peer shut down
        co_await op::close(s);
        std::string got = co_await server;
        co_return got + "/" + std::string(back, 4);
    });
    EXPECT_EQ(r, "ping/ping");
}

TEST_F(SocketOps, Errors) {
    sockaddr_in dead = ringo_test::closed_port();
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::socket(12345, SOCK_STREAM, 0), -EAFNOSUPPORT);
        int s = co_await op::socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_EQ(co_await op::connect(s, reinterpret_cast<const sockaddr*>(&dead), sizeof dead), -ECONNREFUSED);
        co_await op::close(s);
        int u = co_await op::socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_EQ(co_await op::shutdown(u, SHUT_RDWR), -ENOTCONN);
        EXPECT_EQ(co_await op::accept(u), -EINVAL); // not listening
        char c;
        EXPECT_EQ(co_await op::send(u, "x", 1, MSG_NOSIGNAL), -EPIPE);
        co_await op::close(u);
        int bad = closed_fd();
        EXPECT_EQ(co_await op::recv(bad, &c, 1), -EBADF);
        EXPECT_EQ(co_await op::send(bad, &c, 1), -EBADF);
        EXPECT_EQ(co_await op::accept(bad), -EBADF);
        EXPECT_EQ(co_await op::connect(bad, reinterpret_cast<const sockaddr*>(&dead), sizeof dead), -EBADF);
        EXPECT_EQ(co_await op::shutdown(bad, SHUT_RDWR), -EBADF);
        // recv/send on a regular file descriptor.
        int devnull = ::open("/dev/null", O_RDWR);
        EXPECT_EQ(co_await op::recv(devnull, &c, 1), -ENOTSOCK);
        ::close(devnull);
    });
}

TEST_F(SocketOps, SocketpairBadBufferIsEfault) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::send(sv[0], bad_address(), 8), -EFAULT);
        EXPECT_EQ(co_await op::send(sv[0], "abcd", 4), 4);
        EXPECT_EQ(co_await op::recv(sv[1], bad_address(), 4), -EFAULT);
        char buf[4];
        EXPECT_EQ(co_await op::recv(sv[1], buf, 0), 0);
    });
    ::close(sv[0]);
    ::close(sv[1]);
}

} // namespace
