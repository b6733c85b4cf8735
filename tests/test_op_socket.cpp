// op/socket.hpp: socket_direct, bind, listen, accept_direct, sendto, sendmsg, recvmsg,
// provided-buffer recv, and every socket operation on a registered file. Real loopback
// TCP and UDP sockets.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "helpers.hpp"
#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

sockaddr_in loopback(std::uint16_t port = 0) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
}
const sockaddr* sa(const sockaddr_in& a) { return reinterpret_cast<const sockaddr*>(&a); }

// bind, listen, connect, accept and a message on loopback; with the opcodes hidden
// (`fallback`), bind and listen are made with bind(2) / listen(2) and submit nothing.
void bind_listen_accept(Runtime& rt, bool fallback) {
    if (fallback) {
        rt.probe().set_supported(compat::opcode::bind, false);
        rt.probe().set_supported(compat::opcode::listen, false);
    }
    rt.block_on([&]() -> Task<void> {
        int s = co_await op::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC);
        EXPECT_GE(s, 0);
        Fd srv(s);
        sockaddr_in a = loopback();
        std::uint64_t before = rt.stats().sqes_submitted;
        EXPECT_EQ(co_await op::bind(srv, sa(a), sizeof a), 0);
        EXPECT_EQ(co_await op::bind(srv, sa(a), sizeof a), -EINVAL); // already bound
        EXPECT_EQ(co_await op::listen(srv, 8), 0);
        if (fallback) {
            EXPECT_EQ(rt.stats().sqes_submitted, before);
        }
        socklen_t len = sizeof a;
        ::getsockname(srv, reinterpret_cast<sockaddr*>(&a), &len);
        EXPECT_NE(a.sin_port, 0);
        Fd cli(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(co_await op::connect(cli, sa(a), sizeof a), 0);
        sockaddr_in peer{};
        socklen_t plen = sizeof peer;
        Fd conn(co_await op::accept(srv, reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_CLOEXEC));
        EXPECT_GE(conn.get(), 0);
        EXPECT_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
        EXPECT_EQ(co_await op::send(cli, "ping", 4), 4);
        char buf[8] = {};
        EXPECT_EQ(co_await op::recv(conn, buf, sizeof buf), 4);
        EXPECT_EQ(std::string(buf, 4), "ping");
    }());
}

TEST(SocketOp, BindListenAcceptPlain) {
    Runtime rt;
    if (!rt.supports(compat::opcode::bind) || !rt.supports(compat::opcode::listen))
        GTEST_SKIP() << "kernel lacks IORING_OP_BIND/LISTEN (6.11)";
    bind_listen_accept(rt, false);
}

TEST(SocketOp, BindListenAcceptThroughTheFallback) {
    Runtime rt;
    bind_listen_accept(rt, true);
}

// The same errors whether the kernel makes the call or, with the opcodes hidden, the
// await's fallback makes it with bind(2) / listen(2) (see tests/test_op_fallback.cpp).
void bind_listen_errors(Runtime& rt) {
    TempDir dir;
    Fd file(::open(dir.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    Listener taken; // 127.0.0.1:<port> bound and listening
    rt.block_on([&]() -> Task<void> {
        sockaddr_in a = loopback();
        EXPECT_EQ(co_await op::bind(closed_fd(), sa(a), sizeof a), -EBADF);
        EXPECT_EQ(co_await op::bind(file, sa(a), sizeof a), -ENOTSOCK);
        Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(co_await op::bind(s, static_cast<const sockaddr*>(bad_address()), sizeof a), -EFAULT);
        EXPECT_EQ(co_await op::bind(s, sa(a), 3), -EINVAL); // address too short
        EXPECT_EQ(co_await op::bind(s, sa(taken.addr), sizeof taken.addr), -EADDRINUSE);
        EXPECT_EQ(co_await op::bind(s, sa(a), sizeof a), 0);
        EXPECT_EQ(co_await op::bind(s, sa(a), sizeof a), -EINVAL); // already bound
        UdpSocket u;
        EXPECT_EQ(co_await op::listen(u.fd, 4), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::listen(file, 4), -ENOTSOCK);
        EXPECT_EQ(co_await op::listen(closed_fd(), 4), -EBADF);
    }());
}

TEST(SocketOp, BindListenErrors) {
    Runtime rt;
    if (!rt.supports(compat::opcode::bind))
        GTEST_SKIP() << "kernel lacks IORING_OP_BIND/LISTEN (6.11)";
    bind_listen_errors(rt);
}

TEST(SocketOp, BindListenErrorsThroughTheFallback) {
    Runtime rt;
    rt.probe().set_supported(compat::opcode::bind, false);
    rt.probe().set_supported(compat::opcode::listen, false);
    bind_listen_errors(rt);
}

TEST(SocketOp, SocketDirectBindListenAcceptDirect) {
    RINGO_IO_URING_ONLY("socket_direct and accept_direct (registered files)");
    Runtime rt;
    if (!rt.supports(compat::opcode::bind))
        GTEST_SKIP() << "kernel lacks IORING_OP_BIND/LISTEN (6.11)";
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(8), 0);
    rt.block_on([&]() -> Task<void> {
        int ls = co_await op::socket_direct(AF_INET, SOCK_STREAM, 0, op::alloc_slot);
        EXPECT_GE(ls, 0);
        Fixed lfd{static_cast<unsigned>(ls)};
        sockaddr_in a = loopback();
        EXPECT_EQ(co_await op::bind(lfd, sa(a), sizeof a), 0);
        EXPECT_EQ(co_await op::listen(lfd, 8), 0);
        // The port: install the listener as a regular fd just to ask getsockname.
        int tmp = co_await op::fixed_fd_install(lfd);
        EXPECT_GE(tmp, 0);
        socklen_t len = sizeof a;
        ::getsockname(tmp, reinterpret_cast<sockaddr*>(&a), &len);
        ::close(tmp);
        // A client made directly too, connected with a fixed fd.
        EXPECT_EQ(co_await op::socket_direct(AF_INET, SOCK_STREAM, 0, 5), 0);
        EXPECT_EQ(co_await op::connect(Fixed{5}, sa(a), sizeof a), 0);
        int cs = co_await op::accept_direct(lfd, nullptr, nullptr, 0, op::alloc_slot);
        EXPECT_GE(cs, 0);
        Fixed conn{static_cast<unsigned>(cs)};
        EXPECT_EQ(co_await op::send(Fixed{5}, "fixed", 5), 5);
        char buf[8] = {};
        EXPECT_EQ(co_await op::recv(conn, buf, sizeof buf), 5);
        EXPECT_EQ(std::string(buf, 5), "fixed");
        EXPECT_EQ(co_await op::shutdown(Fixed{5}, SHUT_WR), 0);
        EXPECT_EQ(co_await op::recv(conn, buf, sizeof buf), 0); // orderly shutdown seen
        // Accept into a chosen slot.
        Fd c2(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(::connect(c2, sa(a), sizeof a), 0);
        EXPECT_EQ(co_await op::accept_direct(lfd, nullptr, nullptr, 0, 7), 0);
        EXPECT_EQ(co_await op::send(Fixed{7}, "x", 1), 1);
        // Errors: a slot past the table, accept on a slot that holds no socket.
        EXPECT_EQ(co_await op::socket_direct(AF_INET, SOCK_STREAM, 0, 100), -EINVAL);
        EXPECT_EQ(co_await op::accept_direct(Fixed{3}, nullptr, nullptr, 0, op::alloc_slot), -EBADF); // empty
        EXPECT_EQ(co_await op::accept_direct(conn, nullptr, nullptr, 0, op::alloc_slot), -EINVAL);    // not listening
        EXPECT_EQ(co_await op::close(Fixed{5}), 0);
    }());
}

TEST(SocketOp, SocketDirectWithoutTable) {
    RINGO_IO_URING_ONLY("socket_direct (registered files)");
    run([]() -> Task<void> {
        EXPECT_EQ(co_await op::socket_direct(AF_INET, SOCK_STREAM, 0, 0), -ENXIO);
        EXPECT_EQ(co_await op::socket_direct(AF_INET, SOCK_STREAM, 0, op::alloc_slot), -ENFILE);
        EXPECT_EQ(co_await op::socket(12345, SOCK_STREAM), -EAFNOSUPPORT);
    });
}

TEST(SocketOp, AcceptErrors) {
    RINGO_IO_URING_ONLY("accept_direct (registered files)");
    run([]() -> Task<void> {
        Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(co_await op::accept(s), -EINVAL); // not listening
        EXPECT_EQ(co_await op::accept(closed_fd()), -EBADF);
        EXPECT_EQ(co_await op::accept(Fixed{0}), -EBADF); // no table
        EXPECT_EQ(co_await op::accept_direct(closed_fd(), nullptr, nullptr, 0, 0), -EBADF);
    });
}

TEST(SocketOp, SendtoUdp) {
    UdpSocket rx, tx;
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::sendto(tx.fd, "datagram", 8, 0, rx.sa(), sizeof rx.addr), 8);
        char buf[16] = {};
        EXPECT_EQ(co_await op::recv(rx.fd, buf, sizeof buf), 8);
        EXPECT_EQ(std::string(buf, 8), "datagram");
        EXPECT_EQ(co_await op::sendto(tx.fd, "x", 1, 0, rx.sa(), 3), -EINVAL);
        EXPECT_EQ(co_await op::sendto(closed_fd(), "x", 1, 0, rx.sa(), sizeof rx.addr), -EBADF);
        // An unconnected UDP socket needs an address.
        EXPECT_EQ(co_await op::send(tx.fd, "x", 1), -EDESTADDRREQ);
    });
}

TEST(SocketOp, SendtoFixedFile) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    UdpSocket rx, tx;
    ringo::op::FileTable files(rt);
    int fds[2] = {tx.fd, rx.fd};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::sendto(Fixed{0}, "fx", 2, 0, rx.sa(), sizeof rx.addr), 2);
        char buf[4] = {};
        EXPECT_EQ(co_await op::recv(Fixed{1}, buf, sizeof buf), 2);
        EXPECT_EQ(co_await op::sendto(Fixed{3}, "fx", 2, 0, rx.sa(), sizeof rx.addr), -EBADF);
    }());
}

TEST(SocketOp, SendmsgRecvmsg) {
    UdpSocket rx, tx;
    run([&]() -> Task<void> {
        char p1[] = "scatter", p2[] = "-gather";
        iovec out[2] = {{p1, 7}, {p2, 7}};
        msghdr m{};
        m.msg_name = const_cast<sockaddr*>(rx.sa());
        m.msg_namelen = sizeof rx.addr;
        m.msg_iov = out;
        m.msg_iovlen = 2;
        EXPECT_EQ(co_await op::sendmsg(tx.fd, &m), 14);
        char q1[4] = {}, q2[16] = {};
        iovec in[2] = {{q1, 4}, {q2, 16}};
        sockaddr_in from{};
        msghdr r{};
        r.msg_name = &from;
        r.msg_namelen = sizeof from;
        r.msg_iov = in;
        r.msg_iovlen = 2;
        EXPECT_EQ(co_await op::recvmsg(rx.fd, &r), 14);
        EXPECT_EQ(std::string(q1, 4) + std::string(q2, 10), "scatter-gather");
        EXPECT_EQ(from.sin_port, tx.addr.sin_port);
        EXPECT_EQ(co_await op::sendmsg(tx.fd, static_cast<const msghdr*>(bad_address())), -EFAULT);
        EXPECT_EQ(co_await op::recvmsg(closed_fd(), &r), -EBADF);
        // MSG_DONTWAIT on an empty socket.
        r.msg_iov = in;
        r.msg_iovlen = 2;
        EXPECT_EQ(co_await op::recvmsg(rx.fd, &r, MSG_DONTWAIT), -EAGAIN);
    });
}

TEST(SocketOp, SendmsgRecvmsgFixedTcp) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    TcpPair tcp;
    ringo::op::FileTable files(rt);
    int fds[2] = {tcp.client, tcp.server};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        char p[] = "tcp msg";
        iovec out[1] = {{p, 7}};
        msghdr m{};
        m.msg_iov = out;
        m.msg_iovlen = 1;
        EXPECT_EQ(co_await op::sendmsg(Fixed{0}, &m), 7);
        char q[8] = {};
        iovec in[1] = {{q, 8}};
        msghdr r{};
        r.msg_iov = in;
        r.msg_iovlen = 1;
        EXPECT_EQ(co_await op::recvmsg(Fixed{1}, &r), 7);
        EXPECT_EQ(std::string(q, 7), "tcp msg");
    }());
}

TEST(SocketOp, RecvWithProvidedBuffers) {
    RINGO_IO_URING_ONLY("PROVIDE_BUFFERS groups");
    TcpPair tcp;
    static char pool[2][32];
    run([&]() -> Task<void> {
        op::BufferGroup g{3};
        EXPECT_EQ(co_await op::provide_buffers(pool, 32, 2, g, 0), 0);
        EXPECT_EQ(co_await op::send(tcp.client, "first", 5), 5);
        auto r1 = op::recv(tcp.server, g, 32);
        EXPECT_EQ(co_await r1, 5);
        EXPECT_TRUE(op::has_buffer(r1.result_flags()));
        EXPECT_EQ(std::string(pool[op::buffer_id(r1.result_flags())], 5), "first");
        EXPECT_EQ(co_await op::send(tcp.client, "second", 6), 6);
        auto r2 = op::recv(tcp.server, g, 32);
        EXPECT_EQ(co_await r2, 6);
        EXPECT_NE(op::buffer_id(r2.result_flags()), op::buffer_id(r1.result_flags()));
        EXPECT_EQ(co_await op::send(tcp.client, "third", 5), 5);
        EXPECT_EQ(co_await op::recv(tcp.server, g, 32), -ENOBUFS); // group used up
    });
}

TEST(SocketOp, WrongFixedIndexAndBadPointers) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    TcpPair tcp;
    Listener l;
    ringo::op::FileTable files(rt);
    int fds[3] = {tcp.client, tcp.server, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        char buf[8] = {};
        msghdr m{};
        iovec iov{buf, sizeof buf};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        sockaddr_in a = loopback();
        // An empty slot (2) and one past the end of the table (9).
        for (unsigned i : {2u, 9u}) {
            EXPECT_EQ(co_await op::send(Fixed{i}, "x", 1), -EBADF);
            EXPECT_EQ(co_await op::recv(Fixed{i}, buf, sizeof buf), -EBADF);
            EXPECT_EQ(co_await op::sendmsg(Fixed{i}, &m), -EBADF);
            EXPECT_EQ(co_await op::recvmsg(Fixed{i}, &m), -EBADF);
            EXPECT_EQ(co_await op::shutdown(Fixed{i}, SHUT_RDWR), -EBADF);
            EXPECT_EQ(co_await op::accept(Fixed{i}), -EBADF);
            EXPECT_EQ(co_await op::recv(Fixed{i}, op::BufferGroup{1}, 8), -EBADF);
            if (rt.supports(compat::opcode::bind)) {
                EXPECT_EQ(co_await op::bind(Fixed{i}, sa(a), sizeof a), -EBADF);
                EXPECT_EQ(co_await op::listen(Fixed{i}, 4), -EBADF);
            }
        }
        // Bad pointers.
        EXPECT_EQ(co_await op::send(Fixed{0}, bad_address(), 4), -EFAULT);
        EXPECT_EQ(co_await op::recvmsg(Fixed{1}, static_cast<msghdr*>(bad_address())), -EFAULT);
        iovec nowhere{bad_address(), 4};
        msghdr bad_iov{};
        bad_iov.msg_iov = &nowhere;
        bad_iov.msg_iovlen = 1;
        EXPECT_EQ(co_await op::sendmsg(Fixed{0}, &bad_iov), -EFAULT);
        EXPECT_EQ(co_await op::sendmsg(closed_fd(), &m), -EBADF);
        EXPECT_EQ(co_await op::recv(closed_fd(), op::BufferGroup{1}, 8), -EBADF);
        UdpSocket u;
        EXPECT_EQ(co_await op::sendto(u.fd, "x", 1, 0, static_cast<const sockaddr*>(bad_address()), sizeof a), -EFAULT);
        // accept with an address length the kernel cannot read.
        Fd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(::connect(c, reinterpret_cast<const sockaddr*>(&l.addr), sizeof l.addr), 0);
        sockaddr_in peer{};
        EXPECT_EQ(co_await op::accept(l.fd, reinterpret_cast<sockaddr*>(&peer), static_cast<socklen_t*>(bad_address())),
                  -EFAULT);
    }());
}

TEST(SocketOp, ConnectErrors) {
    run([]() -> Task<void> {
        sockaddr_in a = closed_port();
        Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(co_await op::connect(s, sa(a), sizeof a), -ECONNREFUSED);
        EXPECT_EQ(co_await op::connect(Fixed{2}, sa(a), sizeof a), -EBADF);
        Fd s2(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_EQ(co_await op::connect(s2, static_cast<const sockaddr*>(bad_address()), sizeof a), -EFAULT);
    });
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

namespace {

// An accept that completed while its coroutine can no longer be resumed (it waits in a group
// whose other member never ends) when the runtime goes: the new descriptor belongs to nobody,
// and the operation closes it when the frame is destroyed instead of leaking it.
Task<void> accept_in_group(int lfd) {
    auto r = co_await ringo::when_all(op::accept(lfd, nullptr, nullptr, SOCK_CLOEXEC),
                                      op::timeout(std::chrono::seconds(10)));
    (void)r;
}

Task<void> connect_and_leave(int lfd, std::uint16_t port, int* client) {
    ringo::spawn(accept_in_group(lfd)).detach();
    co_await ringo::yield(); // the group is in flight
    *client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback(port);
    EXPECT_EQ(::connect(*client, sa(a), sizeof a), 0);
    co_await ringo::sleep_for(std::chrono::milliseconds(20)); // the accept's CQE arrives
}

TEST(SocketOp, AnAcceptedDescriptorNobodyTookIsClosedWhenTheRuntimeGoes) {
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback();
    ASSERT_EQ(::bind(lfd, sa(a), sizeof a), 0);
    ASSERT_EQ(::listen(lfd, 8), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    int client = -1;
    int before = open_fds();
    {
        Runtime rt;
        rt.block_on(connect_and_leave(lfd, ntohs(a.sin_port), &client));
    } // the group never ended: its frame is destroyed with the accepted socket in it
    ASSERT_GE(client, 0);
    EXPECT_EQ(open_fds(), before + 1); // the client socket only
    char c;
    EXPECT_EQ(::recv(client, &c, 1, 0), 0); // the server side was closed: end of stream
    ::close(client);
    ::close(lfd);
}

} // namespace
