// op/base.hpp: the synchronous fallback of setup calls. bind and listen when the probe lacks
// IORING_OP_BIND / IORING_OP_LISTEN, getsockopt and setsockopt when it lacks
// IORING_OP_URING_CMD or when the kernel answers -EOPNOTSUPP: the await makes the plain
// system call and yields its result (0 or a value, or -errno); when the probe lacks the
// opcode, nothing is submitted.
// The opcodes are hidden with the runtime's probe override; real loopback sockets.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <tuple>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

// The fallback is detected per type: only these four carry it.
static_assert(ringo::detail::OperationWithFallback<op::Bind> && !ringo::detail::FallbackOnResult<op::Bind>);
static_assert(ringo::detail::OperationWithFallback<op::Listen>);
static_assert(ringo::detail::FallbackOnResult<op::CmdSock>);
static_assert(!ringo::detail::OperationWithFallback<op::Connect>);
static_assert(!ringo::detail::OperationWithFallback<decltype(op::nop())>);
static_assert(!ringo::detail::OperationWithFallback<decltype(op::uring_cmd(0, 0))>);

sockaddr_in loopback(std::uint16_t port = 0) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
}
const sockaddr* sa(const sockaddr_in& a) { return reinterpret_cast<const sockaddr*>(&a); }

sockaddr_in local_name(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        a.sin_family = AF_UNSPEC;
    return a;
}

int sockopt_int(int fd, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, level, name, &v, &len) == 0 ? v : -errno;
}

void hide_setup_opcodes(Runtime& rt) {
    rt.probe().set_supported(compat::opcode::bind, false);
    rt.probe().set_supported(compat::opcode::listen, false);
    rt.probe().set_supported(compat::opcode::uring_cmd, false);
}

// --- bind / listen --------------------------------------------------------------------------

// bind + listen + connect + accept on loopback with the opcodes hidden, and bind(2)'s and
// listen(2)'s errors: SocketOp.*ThroughTheFallback (tests/test_op_socket.cpp) run the same
// checks with and without the opcodes.
TEST(OpFallback, ListeningSocketWithoutTheOpcodes) {
    Runtime rt;
    hide_setup_opcodes(rt);
    Fd srv(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    rt.block_on([&]() -> Task<void> {
        sockaddr_in a = loopback();
        EXPECT_EQ(co_await op::bind(srv, sa(a), sizeof a), 0);
        EXPECT_EQ(co_await op::listen(srv, 8), 0);
        EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    }());
    EXPECT_EQ(local_name(srv).sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    EXPECT_NE(local_name(srv).sin_port, 0);
    EXPECT_EQ(sockopt_int(srv, SOL_SOCKET, SO_ACCEPTCONN), 1);
}

// A registered file has no plain descriptor to make the system call with.
TEST(OpFallback, RegisteredFilesStayRefused) {
    Runtime rt;
    hide_setup_opcodes(rt);
    rt.block_on([&]() -> Task<void> {
        sockaddr_in a = loopback();
        int v = 0;
        EXPECT_EQ(co_await op::bind(Fixed{0}, sa(a), sizeof a), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::listen(Fixed{0}, 4), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::getsockopt(Fixed{0}, SOL_SOCKET, SO_TYPE, &v, sizeof v), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::setsockopt(Fixed{0}, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v), -EOPNOTSUPP);
    }());
}

// With the opcodes there, bind and listen go to the kernel as before, and its -EOPNOTSUPP
// (listen on a datagram socket) is its answer.
TEST(OpFallback, NoFallbackWhenTheProbeHasTheOpcode) {
    Runtime rt;
    if (!rt.supports(compat::opcode::bind) || !rt.supports(compat::opcode::listen))
        GTEST_SKIP() << "kernel lacks IORING_OP_BIND/LISTEN (6.11)";
    rt.block_on([&]() -> Task<void> {
        UdpSocket u;
        Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in a = loopback();
        std::uint64_t before = rt.stats().sqes_submitted;
        EXPECT_EQ(co_await op::bind(s, sa(a), sizeof a), 0);
        EXPECT_EQ(co_await op::listen(u.fd, 4), -EOPNOTSUPP);
        EXPECT_GE(rt.stats().sqes_submitted, before + 2);
    }());
}

// --- getsockopt / setsockopt ------------------------------------------------------------------

TEST(OpFallback, SockoptsWithoutUringCmd) {
    Runtime rt;
    hide_setup_opcodes(rt);
    rt.block_on([&]() -> Task<void> {
        Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(sockopt_int(s, SOL_SOCKET, SO_REUSEADDR), 0);
        std::uint64_t before = rt.stats().sqes_submitted;
        int one = 1;
        EXPECT_EQ(co_await op::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
        EXPECT_EQ(sockopt_int(s, SOL_SOCKET, SO_REUSEADDR), 1);
        int v = -1;
        EXPECT_EQ(co_await op::getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v), static_cast<int>(sizeof v));
        EXPECT_EQ(v, 1);
        // Any level, and the length of a wider buffer is the option's own.
        EXPECT_EQ(co_await op::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
        long wide = -1;
        EXPECT_EQ(co_await op::getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &wide, sizeof wide), 4);
        EXPECT_EQ(sockopt_int(s, IPPROTO_TCP, TCP_NODELAY), 1);
        EXPECT_EQ(rt.stats().sqes_submitted, before);
        // The commands that do not fall back stay refused.
        EXPECT_EQ(co_await op::siocinq(s), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::uring_cmd(s, compat::socket_cmd::getsockopt), -EOPNOTSUPP);
    }());
}

TEST(OpFallback, SockoptErrorsAreErrno) {
    Runtime rt;
    hide_setup_opcodes(rt);
    TempDir dir;
    Fd file(::open(dir.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    rt.block_on([&]() -> Task<void> {
        Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        int v = 0;
        EXPECT_EQ(co_await op::getsockopt(closed_fd(), SOL_SOCKET, SO_TYPE, &v, sizeof v), -EBADF);
        EXPECT_EQ(co_await op::setsockopt(closed_fd(), SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v), -EBADF);
        EXPECT_EQ(co_await op::getsockopt(file, SOL_SOCKET, SO_TYPE, &v, sizeof v), -ENOTSOCK);
        EXPECT_EQ(co_await op::setsockopt(file, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v), -ENOTSOCK);
        EXPECT_EQ(co_await op::getsockopt(s, SOL_SOCKET, 12345, &v, sizeof v), -ENOPROTOOPT);
        EXPECT_EQ(co_await op::setsockopt(s, SOL_SOCKET, 12345, &v, sizeof v), -ENOPROTOOPT);
        EXPECT_EQ(co_await op::getsockopt(s, SOL_SOCKET, SO_TYPE, &v, -1), -EINVAL);
        EXPECT_EQ(co_await op::setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, 1), -EINVAL);
        EXPECT_EQ(co_await op::getsockopt(s, SOL_SOCKET, SO_TYPE, bad_address(), sizeof v), -EFAULT);
        EXPECT_EQ(co_await op::setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, bad_address(), sizeof v), -EFAULT);
    }());
}

// With IORING_OP_URING_CMD there, the kernel's own -EOPNOTSUPP (its getsockopt command knows
// SOL_SOCKET only; kernels before 6.7 know no socket command) falls back after the CQE.
TEST(OpFallback, SockoptsFallBackAfterTheKernelsEopnotsupp) {
    Runtime rt;
    if (!rt.supports(compat::opcode::uring_cmd))
        GTEST_SKIP() << "kernel lacks IORING_OP_URING_CMD (5.19)";
    TcpPair tcp; // sets TCP_NODELAY on both ends
    TempDir dir;
    Fd file(::open(dir.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    rt.block_on([&]() -> Task<void> {
        std::uint64_t before = rt.stats().sqes_submitted;
        int v = -1;
        EXPECT_EQ(co_await op::getsockopt(tcp.client, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v), 4);
        EXPECT_EQ(v, 1);
        EXPECT_GT(rt.stats().sqes_submitted, before); // it went to the kernel first
        int idle = 91;
        EXPECT_EQ(co_await op::setsockopt(tcp.client, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle), 0);
        v = -1;
        EXPECT_EQ(co_await op::getsockopt(tcp.client, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof v), 4);
        EXPECT_EQ(v, 91);
        // A file without a uring_cmd handler: the system call names the cause.
        EXPECT_EQ(co_await op::getsockopt(file, SOL_SOCKET, SO_TYPE, &v, sizeof v), -ENOTSOCK);
        EXPECT_EQ(co_await op::setsockopt(file, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v), -ENOTSOCK);
        // Other socket commands keep the kernel's answer.
        EXPECT_EQ(co_await op::siocinq(file), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::cmd_sock(tcp.client, 0x7fff), -EOPNOTSUPP);
    }());
}

// --- cancellation and groups ----------------------------------------------------------------

TEST(OpFallback, CancelledTaskGetsEcanceledNotTheFallback) {
    Runtime rt;
    hide_setup_opcodes(rt);
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    auto r = rt.block_on([&]() -> Task<std::tuple<int, int, int, int>> {
        auto h = ringo::spawn([](int fd) -> Task<std::tuple<int, int, int, int>> {
            sockaddr_in a = loopback();
            int one = 1;
            int v = -1;
            int b = co_await op::bind(fd, sa(a), sizeof a);
            int l = co_await op::listen(fd, 4);
            int so = co_await op::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            int go = co_await op::getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, sizeof v);
            co_return std::tuple{b, l, so, go};
        }(s));
        h.cancel(); // before the task starts
        co_return co_await h;
    }());
    EXPECT_EQ(r, std::make_tuple(-ECANCELED, -ECANCELED, -ECANCELED, -ECANCELED));
    // None of the calls was made.
    EXPECT_EQ(local_name(s).sin_port, 0);
    EXPECT_EQ(sockopt_int(s, SOL_SOCKET, SO_ACCEPTCONN), 0);
    EXPECT_EQ(sockopt_int(s, SOL_SOCKET, SO_REUSEADDR), 0);
}

// Operations awaited as a group do not fall back: the group is refused as a whole.
TEST(OpFallback, GroupsAreRefusedAsAWhole) {
    Runtime rt;
    hide_setup_opcodes(rt);
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    auto r = rt.block_on([&]() -> Task<std::tuple<int, int>> {
        sockaddr_in a = loopback();
        co_return co_await ringo::link(op::bind(s, sa(a), sizeof a), op::listen(s, 4));
    }());
    EXPECT_EQ(r, std::make_tuple(-EOPNOTSUPP, -EOPNOTSUPP));
    EXPECT_EQ(local_name(s).sin_port, 0);
}

} // namespace
