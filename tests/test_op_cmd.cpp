// op/cmd.hpp: IORING_OP_URING_CMD. Socket commands (SIOCINQ, SIOCOUTQ, getsockopt,
// setsockopt) on real loopback TCP sockets, checked against the matching system calls; the
// generic uring_cmd form; registered files; and BLOCK_URING_CMD_DISCARD on a loop device
// backed by a file in /dev/shm.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/loop.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

// Socket commands arrived in 6.7; every kernel that has them has IORING_OP_READ_MULTISHOT,
// which (unlike uring_cmd itself, 5.19) the probe can tell apart.
bool has_socket_cmds(const Runtime& rt) {
    return rt.supports(compat::opcode::uring_cmd) && rt.supports(compat::opcode::read_multishot);
}
#define SKIP_WITHOUT_SOCKET_CMDS(rt)                                                                                   \
    if (!has_socket_cmds(rt))                                                                                          \
    GTEST_SKIP() << "kernel lacks uring_cmd socket commands (6.7)"

int ioctl_int(int fd, unsigned long req) {
    int v = -1;
    if (::ioctl(fd, req, &v) != 0)
        return -errno;
    return v;
}

int getsockopt_int(int fd, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    if (::getsockopt(fd, level, name, &v, &len) != 0)
        return -errno;
    return v;
}

// Waits (plain poll(2), bounded) until `fd` has `n` unread bytes.
void wait_unread(int fd, int n) {
    for (int i = 0; i < 1000 && ioctl_int(fd, FIONREAD) < n; ++i)
        ::poll(nullptr, 0, 1);
}

// --- SIOCINQ / SIOCOUTQ -------------------------------------------------------------------

TEST(CmdSock, SiocinqCountsBytesSentAndNotYetRead) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::siocinq(tcp.server), 0);
        EXPECT_EQ(::send(tcp.client, "hello", 5, 0), 5);
        wait_unread(tcp.server, 5);
        EXPECT_EQ(co_await op::siocinq(tcp.server), 5);
        char buf[16];
        EXPECT_EQ(::recv(tcp.server, buf, 2, 0), 2);
        EXPECT_EQ(co_await op::siocinq(tcp.server), 3);
        EXPECT_EQ(::send(tcp.client, "0123456789", 10, 0), 10);
        wait_unread(tcp.server, 13);
        int inq = co_await op::siocinq(tcp.server);
        EXPECT_EQ(inq, 13);
        EXPECT_EQ(inq, ioctl_int(tcp.server, SIOCINQ));
        EXPECT_EQ(::recv(tcp.server, buf, sizeof buf, 0), 13);
        EXPECT_EQ(co_await op::siocinq(tcp.server), 0);
        // The other direction is independent.
        EXPECT_EQ(co_await op::siocinq(tcp.client), 0);
    }());
}

TEST(CmdSock, SiocinqOnUdpIsTheNextDatagramsSize) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    UdpSocket rx, tx;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::siocinq(rx.fd), 0);
        EXPECT_EQ(::sendto(tx.fd, "abc", 3, 0, rx.sa(), sizeof rx.addr), 3);
        EXPECT_EQ(::sendto(tx.fd, "defgh", 5, 0, rx.sa(), sizeof rx.addr), 5);
        wait_unread(rx.fd, 3);
        EXPECT_EQ(co_await op::siocinq(rx.fd), 3); // the first datagram only, as ioctl(2) says
        EXPECT_EQ(ioctl_int(rx.fd, SIOCINQ), 3);
    }());
}

TEST(CmdSock, SiocoutqCountsBytesNotYetAcknowledged) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp(0, 1 << 18); // a bounded receive window (several loopback MSS wide) on the server
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::siocoutq(tcp.client), 0);
        // Fill the path until the client's send buffer (fixed small, so this stays quick) is
        // full: what the server cannot take stays queued, unacknowledged, on the client.
        int sndbuf = 16384;
        EXPECT_EQ(::setsockopt(tcp.client, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
        ::fcntl(tcp.client, F_SETFL, ::fcntl(tcp.client, F_GETFL) | O_NONBLOCK);
        std::vector<char> chunk(4096, 'x');
        long sent = 0;
        for (;;) {
            ssize_t n = ::send(tcp.client, chunk.data(), chunk.size(), 0);
            if (n <= 0)
                break;
            sent += n;
        }
        EXPECT_GT(sent, 0);
        // Both stay still now (the server reads nothing), so the values must agree; allow a
        // few rounds for an in-flight window update to settle.
        int ours = -1, theirs = -2;
        for (int i = 0; i < 50 && ours != theirs; ++i) {
            theirs = ioctl_int(tcp.client, SIOCOUTQ);
            ours = co_await op::siocoutq(tcp.client);
            if (ours != theirs)
                co_await op::timeout(std::chrono::milliseconds(1));
        }
        EXPECT_GT(ours, 0);
        EXPECT_EQ(ours, theirs);
        EXPECT_LE(ours, sent);
        // Drain the server: everything gets acknowledged and the queue empties.
        std::vector<char> sink(1 << 16);
        long got = 0;
        while (got < sent) {
            int n = co_await op::recv(tcp.server, sink.data(), sink.size());
            if (n <= 0)
                break;
            got += n;
        }
        int outq = co_await op::siocoutq(tcp.client);
        for (int i = 0; i < 2000 && outq != 0; ++i) { // a delayed ACK takes up to ~40 ms
            co_await op::timeout(std::chrono::milliseconds(1));
            outq = co_await op::siocoutq(tcp.client);
        }
        EXPECT_EQ(got, sent);
        EXPECT_EQ(outq, 0);
    }());
}

// --- getsockopt / setsockopt ----------------------------------------------------------------

TEST(CmdSock, GetsockoptAgreesWithTheSystemCall) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp;
    rt.block_on([&]() -> Task<void> {
        for (int name : {SO_RCVBUF, SO_SNDBUF, SO_TYPE, SO_KEEPALIVE, SO_ERROR, SO_DOMAIN, SO_PROTOCOL}) {
            int v = -12345;
            // The result is the option's length.
            EXPECT_EQ(co_await op::getsockopt(tcp.client, SOL_SOCKET, name, &v, sizeof v), static_cast<int>(sizeof v))
                << "optname " << name;
            EXPECT_EQ(v, getsockopt_int(tcp.client, SOL_SOCKET, name)) << "optname " << name;
        }
        // A longer buffer: the length reported is the option's own.
        long long wide = 0;
        EXPECT_EQ(co_await op::getsockopt(tcp.client, SOL_SOCKET, SO_TYPE, &wide, sizeof wide), 4);
        EXPECT_EQ(static_cast<int>(wide), SOCK_STREAM);
        // A structured option.
        linger l{-1, -1};
        EXPECT_EQ(co_await op::getsockopt(tcp.server, SOL_SOCKET, SO_LINGER, &l, sizeof l), static_cast<int>(sizeof l));
        linger sys{};
        socklen_t len = sizeof sys;
        EXPECT_EQ(::getsockopt(tcp.server, SOL_SOCKET, SO_LINGER, &sys, &len), 0);
        EXPECT_EQ(l.l_onoff, sys.l_onoff);
        EXPECT_EQ(l.l_linger, sys.l_linger);
    }());
}

TEST(CmdSock, SetsockoptIsSeenByTheSystemCall) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp;
    rt.block_on([&]() -> Task<void> {
        int on = 1, off = 0;
        EXPECT_EQ(getsockopt_int(tcp.client, SOL_SOCKET, SO_KEEPALIVE), 0);
        EXPECT_EQ(co_await op::setsockopt(tcp.client, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on), 0);
        EXPECT_EQ(getsockopt_int(tcp.client, SOL_SOCKET, SO_KEEPALIVE), 1);
        EXPECT_EQ(co_await op::setsockopt(tcp.client, SOL_SOCKET, SO_KEEPALIVE, &off, sizeof off), 0);
        EXPECT_EQ(getsockopt_int(tcp.client, SOL_SOCKET, SO_KEEPALIVE), 0);
        // setsockopt is not limited to SOL_SOCKET (getsockopt is).
        EXPECT_EQ(getsockopt_int(tcp.client, IPPROTO_TCP, TCP_NODELAY), 1); // TcpPair sets it
        EXPECT_EQ(co_await op::setsockopt(tcp.client, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off), 0);
        EXPECT_EQ(getsockopt_int(tcp.client, IPPROTO_TCP, TCP_NODELAY), 0);
        int idle = 77;
        EXPECT_EQ(co_await op::setsockopt(tcp.client, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle), 0);
        EXPECT_EQ(getsockopt_int(tcp.client, IPPROTO_TCP, TCP_KEEPIDLE), 77);
        // A structured option, read back both ways.
        linger l{1, 9};
        EXPECT_EQ(co_await op::setsockopt(tcp.server, SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
        linger sys{};
        socklen_t len = sizeof sys;
        EXPECT_EQ(::getsockopt(tcp.server, SOL_SOCKET, SO_LINGER, &sys, &len), 0);
        EXPECT_EQ(sys.l_onoff, 1);
        EXPECT_EQ(sys.l_linger, 9);
        // SO_RCVBUF: the kernel doubles the value, the same way for both paths.
        int want = 32768;
        EXPECT_EQ(co_await op::setsockopt(tcp.server, SOL_SOCKET, SO_RCVBUF, &want, sizeof want), 0);
        int via_ring = getsockopt_int(tcp.server, SOL_SOCKET, SO_RCVBUF);
        EXPECT_EQ(::setsockopt(tcp.client, SOL_SOCKET, SO_RCVBUF, &want, sizeof want), 0);
        EXPECT_EQ(via_ring, getsockopt_int(tcp.client, SOL_SOCKET, SO_RCVBUF));
    }());
}

// --- the generic form -------------------------------------------------------------------

TEST(UringCmd, GenericFormIssuesSocketCommands) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(::send(tcp.client, "four", 4, 0), 4);
        wait_unread(tcp.server, 4);
        // No command fields: SIOCINQ.
        EXPECT_EQ(co_await op::uring_cmd(tcp.server, compat::socket_cmd::siocinq), 4);
        // A user-supplied fill: getsockopt(SOL_SOCKET, SO_TYPE) written field by field.
        int type = -1;
        bool filled = false;
        auto get_type = op::uring_cmd(tcp.server, compat::socket_cmd::getsockopt, [&](io_uring_sqe* s) {
            EXPECT_EQ(s->opcode, compat::opcode::uring_cmd);
            EXPECT_EQ(s->fd, tcp.server.get());
            EXPECT_EQ(s->cmd_op, compat::socket_cmd::getsockopt);
            compat::sqe_field::sock_level_optname(s, SOL_SOCKET, SO_TYPE);
            compat::sqe_field::sock_optval(s, reinterpret_cast<std::uint64_t>(&type), sizeof type);
            filled = true;
        });
        EXPECT_FALSE(filled); // the fill runs when the SQE is prepared
        EXPECT_EQ(co_await get_type, 4);
        EXPECT_TRUE(filled);
        EXPECT_EQ(type, SOCK_STREAM);
        // setsockopt through the generic form, read back with getsockopt(2).
        int on = 1;
        EXPECT_EQ(co_await op::uring_cmd(tcp.server, compat::socket_cmd::setsockopt,
                                         [&](io_uring_sqe* s) {
                                             compat::sqe_field::sock_level_optname(s, SOL_SOCKET, SO_KEEPALIVE);
                                             compat::sqe_field::sock_optval(s, reinterpret_cast<std::uint64_t>(&on),
                                                                            sizeof on);
                                         }),
                  0);
        EXPECT_EQ(getsockopt_int(tcp.server, SOL_SOCKET, SO_KEEPALIVE), 1);
    }());
}

// --- registered files ---------------------------------------------------------------------

TEST(CmdSock, FixedFiles) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp;
    ringo::op::FileTable files(rt);
    int fds[3] = {tcp.client, tcp.server, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(::send(tcp.client, "fixed!", 6, 0), 6);
        wait_unread(tcp.server, 6);
        EXPECT_EQ(co_await op::siocinq(Fixed{1}), 6);
        EXPECT_EQ(co_await op::siocoutq(Fixed{0}), ioctl_int(tcp.client, SIOCOUTQ));
        EXPECT_EQ(co_await op::uring_cmd(Fixed{1}, compat::socket_cmd::siocinq), 6);
        int v = -1;
        EXPECT_EQ(co_await op::getsockopt(Fixed{0}, SOL_SOCKET, SO_TYPE, &v, sizeof v), 4);
        EXPECT_EQ(v, SOCK_STREAM);
        int on = 1;
        EXPECT_EQ(co_await op::setsockopt(Fixed{0}, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on), 0);
        EXPECT_EQ(getsockopt_int(tcp.client, SOL_SOCKET, SO_KEEPALIVE), 1);
        // An empty slot and a slot past the end of the table.
        EXPECT_EQ(co_await op::siocinq(Fixed{2}), -EBADF);
        EXPECT_EQ(co_await op::siocinq(Fixed{3}), -EBADF);
        EXPECT_EQ(co_await op::getsockopt(Fixed{99}, SOL_SOCKET, SO_TYPE, &v, sizeof v), -EBADF);
    }());
}

TEST(CmdSock, FixedFileWithoutATable) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::siocinq(Fixed{0}), -EBADF);
        EXPECT_EQ(co_await op::uring_cmd(Fixed{0}, compat::socket_cmd::siocoutq), -EBADF);
    }());
}

// --- errors ---------------------------------------------------------------------------------

TEST(CmdSock, Errors) {
    Runtime rt;
    SKIP_WITHOUT_SOCKET_CMDS(rt);
    TcpPair tcp;
    Listener listener;
    TempDir dir;
    Fd file(::open(dir.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    Pipe pipe;
    Fd unix_sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    rt.block_on([&]() -> Task<void> {
        int v = 0;
        // A closed descriptor.
        EXPECT_EQ(co_await op::siocinq(closed_fd()), -EBADF);
        EXPECT_EQ(co_await op::getsockopt(closed_fd(), SOL_SOCKET, SO_TYPE, &v, sizeof v), -EBADF);
        EXPECT_EQ(co_await op::uring_cmd(closed_fd(), 0), -EBADF);
        // Files without a uring_cmd handler: a regular file, a pipe.
        EXPECT_EQ(co_await op::siocinq(file), -EOPNOTSUPP);
        // getsockopt's -EOPNOTSUPP falls back to getsockopt(2), which names the cause.
        EXPECT_EQ(co_await op::getsockopt(file, SOL_SOCKET, SO_TYPE, &v, sizeof v), -ENOTSOCK);
        EXPECT_EQ(co_await op::siocoutq(pipe.r), -EOPNOTSUPP);
        // A socket whose protocol has no ioctl handler (AF_UNIX) refuses SIOCINQ/SIOCOUTQ
        // (ioctl(2) answers through another path), but takes getsockopt.
        EXPECT_EQ(co_await op::siocinq(unix_sock), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::siocoutq(unix_sock), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::getsockopt(unix_sock, SOL_SOCKET, SO_TYPE, &v, sizeof v), 4);
        EXPECT_EQ(v, SOCK_STREAM);
        // An unknown command number on a socket.
        EXPECT_EQ(co_await op::uring_cmd(tcp.client, 99), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::cmd_sock(tcp.client, 0x7fff), -EOPNOTSUPP);
        // SIOCINQ on a listening socket: as ioctl(2).
        EXPECT_EQ(co_await op::siocinq(listener.fd), -EINVAL);
        EXPECT_EQ(ioctl_int(listener.fd, SIOCINQ), -EINVAL);
        // The kernel's getsockopt command supports SOL_SOCKET only: other levels fall back to
        // getsockopt(2) (TcpPair sets TCP_NODELAY).
        v = 0;
        EXPECT_EQ(co_await op::getsockopt(tcp.client, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v), 4);
        EXPECT_EQ(v, 1);
        // Bad pointers and lengths.
        EXPECT_EQ(co_await op::getsockopt(tcp.client, SOL_SOCKET, SO_TYPE, bad_address(), sizeof v), -EFAULT);
        EXPECT_EQ(co_await op::setsockopt(tcp.client, SOL_SOCKET, SO_KEEPALIVE, bad_address(), sizeof v), -EFAULT);
        EXPECT_EQ(co_await op::getsockopt(tcp.client, SOL_SOCKET, SO_TYPE, &v, -1), -EINVAL);
        EXPECT_EQ(co_await op::setsockopt(tcp.client, SOL_SOCKET, SO_KEEPALIVE, &v, 1), -EINVAL);
        // Unknown options.
        EXPECT_EQ(co_await op::getsockopt(tcp.client, SOL_SOCKET, 12345, &v, sizeof v), -ENOPROTOOPT);
        EXPECT_EQ(co_await op::setsockopt(tcp.client, SOL_SOCKET, 12345, &v, sizeof v), -ENOPROTOOPT);
    }());
}

// --- cmd_discard ------------------------------------------------------------------------------

constexpr std::size_t loop_size = 1 << 20;

// A loop block device backed by an (already unlinked) file in /dev/shm, filled with 0xab.
// Set up the way losetup(8) does it (LOOP_CTL_GET_FREE, then LOOP_CONFIGURE), with
// LO_FLAGS_AUTOCLEAR: the kernel detaches the device when its last descriptor closes, so
// the device goes away on every path, a crashed test included. The destructor also detaches
// it explicitly.
class LoopDevice {
public:
    LoopDevice() {
        if (::access("/dev/loop-control", F_OK) != 0) {
            why_ = "no /dev/loop-control (loop driver unavailable)";
            return;
        }
        Fd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
        if (ctl < 0) {
            why_ = std::string("cannot open /dev/loop-control: ") + std::strerror(errno);
            return;
        }
        char tmpl[] = "/dev/shm/ringo-cmd-discard-XXXXXX";
        backing_.reset(::mkostemp(tmpl, O_CLOEXEC));
        if (backing_ < 0) {
            why_ = std::string("cannot create a file in /dev/shm: ") + std::strerror(errno);
            return;
        }
        ::unlink(tmpl);
        std::vector<unsigned char> fill(loop_size, 0xab);
        if (::pwrite(backing_, fill.data(), fill.size(), 0) != static_cast<ssize_t>(fill.size())) {
            why_ = "cannot fill the backing file";
            return;
        }
        // Another process may take the free device between the two calls: retry.
        for (int attempt = 0; attempt < 16; ++attempt) {
            int n = ::ioctl(ctl, LOOP_CTL_GET_FREE);
            if (n < 0) {
                why_ = std::string("LOOP_CTL_GET_FREE: ") + std::strerror(errno);
                return;
            }
            path_ = "/dev/loop" + std::to_string(n);
            Fd dev(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
            if (dev < 0) {
                why_ = "cannot open " + path_ + ": " + std::strerror(errno) + " (no device node?)";
                return;
            }
            loop_config cfg{};
            cfg.fd = static_cast<std::uint32_t>(backing_.get());
            cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
            if (::ioctl(dev, LOOP_CONFIGURE, &cfg) == 0) {
                dev_ = std::move(dev);
                why_.clear();
                return;
            }
            why_ = "LOOP_CONFIGURE on " + path_ + ": " + std::strerror(errno);
            if (errno != EBUSY)
                return;
        }
    }
    ~LoopDevice() {
        if (dev_ >= 0)
            ::ioctl(dev_, LOOP_CLR_FD, 0);
    }
    LoopDevice(const LoopDevice&) = delete;
    LoopDevice& operator=(const LoopDevice&) = delete;

    [[nodiscard]] bool ok() const noexcept { return dev_ >= 0; }
    [[nodiscard]] const std::string& why() const noexcept { return why_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// The device, open read-write.
    [[nodiscard]] int fd() const noexcept { return dev_; }
    /// The backing file (what the loop driver punches holes into).
    [[nodiscard]] int backing() const noexcept { return backing_; }

private:
    Fd backing_;
    Fd dev_;
    std::string path_;
    std::string why_;
};

// True if every byte of [off, off+len) of `fd` (read with pread) equals `v`.
bool all_bytes(int fd, std::uint64_t off, std::size_t len, unsigned char v) {
    std::vector<unsigned char> b(len);
    if (::pread(fd, b.data(), len, static_cast<off_t>(off)) != static_cast<ssize_t>(len))
        return false;
    for (unsigned char c : b)
        if (c != v)
            return false;
    return true;
}

// BLOCK_URING_CMD_DISCARD is 6.12, and the probe cannot tell: before it a block device has
// no uring_cmd handler at all (-EOPNOTSUPP for every command); since, a discard on a
// device opened read-only is -EBADF.
std::string discard_unsupported(Runtime& rt, const LoopDevice& loop) {
    if (!rt.supports(compat::opcode::uring_cmd))
        return "kernel lacks IORING_OP_URING_CMD (5.19)";
    Fd ro(::open(loop.path().c_str(), O_RDONLY | O_CLOEXEC));
    int r = rt.block_on([&]() -> Task<int> { co_return co_await op::cmd_discard(ro, 0, 4096); }());
    if (r == -EOPNOTSUPP)
        return "kernel lacks BLOCK_URING_CMD_DISCARD (6.12)";
    return {};
}

#define SKIP_WITHOUT_DISCARD(rt, loop)                                                                                 \
    if (!(loop).ok())                                                                                                  \
        GTEST_SKIP() << "no loop device: " << (loop).why();                                                            \
    if (std::string why = discard_unsupported(rt, loop); !why.empty())                                                 \
    GTEST_SKIP() << why

TEST(CmdDiscard, DiscardsAnAlignedRangeOfALoopDevice) {
    Runtime rt;
    LoopDevice loop;
    SKIP_WITHOUT_DISCARD(rt, loop);
    ASSERT_TRUE(all_bytes(loop.fd(), 0, loop_size, 0xab));
    rt.block_on([&]() -> Task<void> { EXPECT_EQ(co_await op::cmd_discard(loop.fd(), 8192, 16384), 0); }());
    // Read back through the device (its page cache was invalidated) and in the backing file.
    EXPECT_TRUE(all_bytes(loop.fd(), 8192, 16384, 0));
    EXPECT_TRUE(all_bytes(loop.backing(), 8192, 16384, 0));
    // The bytes around the range are untouched.
    EXPECT_TRUE(all_bytes(loop.fd(), 0, 8192, 0xab));
    EXPECT_TRUE(all_bytes(loop.fd(), 8192 + 16384, loop_size - 8192 - 16384, 0xab));
    // The end of the device, on a registered file.
    ringo::op::FileTable files(rt);
    int fds[1] = {loop.fd()};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::cmd_discard(Fixed{0}, loop_size - 4096, 4096), 0);
        EXPECT_EQ(co_await op::cmd_discard(Fixed{1}, 0, 4096), -EBADF); // past the table
    }());
    EXPECT_TRUE(all_bytes(loop.fd(), loop_size - 4096, 4096, 0));
    EXPECT_TRUE(all_bytes(loop.fd(), loop_size - 8192, 4096, 0xab));
}

TEST(CmdDiscard, Errors) {
    Runtime rt;
    LoopDevice loop;
    SKIP_WITHOUT_DISCARD(rt, loop);
    Fd ro(::open(loop.path().c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_GE(ro.get(), 0);
    TempDir dir;
    Fd file(::open(dir.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    ASSERT_EQ(::ftruncate(file, 65536), 0);
    TcpPair tcp;
    rt.block_on([&]() -> Task<void> {
        // Not aligned to the logical block size (512), in offset or in length.
        EXPECT_EQ(co_await op::cmd_discard(loop.fd(), 100, 4096), -EINVAL);
        EXPECT_EQ(co_await op::cmd_discard(loop.fd(), 0, 1000), -EINVAL);
        // Past the end of the device.
        EXPECT_EQ(co_await op::cmd_discard(loop.fd(), loop_size - 4096, 8192), -EINVAL);
        EXPECT_EQ(co_await op::cmd_discard(loop.fd(), ~std::uint64_t{0} - 511, 4096), -EINVAL);
        // A device opened read-only.
        EXPECT_EQ(co_await op::cmd_discard(ro, 0, 4096), -EBADF);
        // An unknown block command.
        EXPECT_EQ(co_await op::uring_cmd(loop.fd(), 0x12ff), -EINVAL);
        // Not a block device: a regular file and a socket have other (or no) handlers.
        EXPECT_EQ(co_await op::cmd_discard(file, 0, 4096), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::cmd_discard(tcp.client, 0, 4096), -EOPNOTSUPP);
        EXPECT_EQ(co_await op::cmd_discard(closed_fd(), 0, 4096), -EBADF);
    }());
    // Nothing was discarded by the failed commands.
    EXPECT_TRUE(all_bytes(loop.fd(), 0, loop_size, 0xab));
}

} // namespace
