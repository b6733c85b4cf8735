// op/send_zc.hpp: send_zc, send_zc_fixed, sendto_zc, sendmsg_zc and ZcTracker. The
// coroutine resumes on the send's CQE; the buffer is released only on the notification CQE.
#include <gtest/gtest.h>

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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
using namespace std::chrono_literals;

namespace {

// Waits (bounded) until `t` releases everything; true if it did.
Task<bool> released_within(op::ZcTracker& t, std::chrono::milliseconds limit) {
    for (auto waited = 0ms; t.busy() && waited < limit; waited += 1ms) {
        co_await op::timeout(1ms);
    }
    if (!t.busy()) {
        co_await t.released(); // ready at once; exercises the awaiter
    }
    co_return !t.busy();
}

// Receives exactly `n` bytes (bounded by the peer sending them).
Task<std::string> recv_all(int fd, std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        int r = co_await op::recv(fd, out.data() + got, n - got);
        if (r <= 0)
            break;
        got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    co_return out;
}

struct Counter {
    int calls = 0;
    int last_res = -1;
    static void on_release(void* self, int res) {
        auto* c = static_cast<Counter*>(self);
        ++c->calls;
        c->last_res = res;
    }
};

TEST(SendZc, SendsAndReleasesOnNotification) {
    Runtime rt;
    TcpPair tcp;
    Counter c;
    op::ZcTracker t(&Counter::on_release, &c);
    std::string data(8192, 'z');
    rt.block_on([&]() -> Task<void> {
        auto s = op::send_zc(tcp.client, data.data(), data.size(), t, 0, compat::recvsend::send_zc_report_usage);
        EXPECT_EQ(co_await s, 8192);
        EXPECT_TRUE(s.result_flags() & compat::cqe_f_more); // a notification follows
        EXPECT_EQ(co_await recv_all(tcp.server, 8192), data);
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
    EXPECT_EQ(c.calls, 1);
    EXPECT_EQ(t.released_count(), 1u);
    EXPECT_EQ(t.pending(), 0u);
    // Loopback delivery copies the pages, and the notification says so when asked.
    EXPECT_TRUE(t.copied());
    EXPECT_TRUE(static_cast<std::uint32_t>(c.last_res) & compat::notif_usage_zc_copied);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

// The proof the issue asks for: with the receiver's window closed, the send completes (its
// bytes are queued) but the kernel keeps the pages until the receiver reads and the data is
// acknowledged. The tracker stays busy, and the callback does not run, all that time.
TEST(SendZc, BufferIsNotReleasedBeforeTheNotification) {
    RINGO_IO_URING_ONLY("a buffer lent until its bytes are acknowledged (the epoll engine copies them)");
    Runtime rt;
    TcpPair tcp(0, 65536); // a fixed (not auto-tuned) receive buffer on the server side
    int big = 8 << 20;
    if (::setsockopt(tcp.client, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) != 0)
        ::setsockopt(tcp.client, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    // Fill the receiver until data stays unsent in the sender's queue (window closed).
    std::vector<char> fill(64 * 1024, 'f');
    std::size_t prefilled = 0;
    int unsent = 0;
    for (int i = 0; i < 64 && unsent == 0; ++i) {
        ssize_t n = ::send(tcp.client, fill.data(), fill.size(), MSG_DONTWAIT);
        ASSERT_GT(n, 0) << "the sender's buffer filled up before the receiver's window closed";
        prefilled += static_cast<std::size_t>(n);
        ::usleep(1000);
        ::ioctl(tcp.client, SIOCOUTQNSD, &unsent);
    }
    ASSERT_GT(unsent, 0) << "could not close the receiver's window";

    struct Log {
        std::vector<std::string> events;
        static void on_release(void* self, int) { static_cast<Log*>(self)->events.push_back("released"); }
    } log;
    op::ZcTracker t(&Log::on_release, &log);
    std::string zbuf(4096, 'Z');
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::send_zc(tcp.client, zbuf.data(), zbuf.size(), t), 4096);
        log.events.push_back("sent");
        EXPECT_TRUE(t.busy());
        EXPECT_EQ(t.pending(), 1u);
        // Time passes, other completions come and go: the buffer stays lent.
        for (int i = 0; i < 5; ++i) {
            EXPECT_EQ(co_await op::timeout(5ms), -ETIME);
            EXPECT_TRUE(t.busy());
        }
        EXPECT_EQ(log.events.size(), 1u);
        EXPECT_EQ(t.released_count(), 0u);
        EXPECT_EQ(rt.stats().ops_in_flight, 1u); // the pending notification
        // The receiver drains everything; the data is acknowledged; the pages come back.
        std::string got = co_await recv_all(tcp.server, prefilled + zbuf.size());
        EXPECT_EQ(got.size(), prefilled + zbuf.size());
        EXPECT_EQ(got.substr(prefilled), zbuf);
        EXPECT_TRUE(co_await released_within(t, 5000ms));
    }());
    ASSERT_EQ(log.events.size(), 2u);
    EXPECT_EQ(log.events[0], "sent");
    EXPECT_EQ(log.events[1], "released");
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(SendZc, ManySendsOneTracker) {
    Runtime rt;
    TcpPair tcp;
    Counter c;
    op::ZcTracker t(&Counter::on_release, &c);
    std::string data = "0123456789abcdef";
    rt.block_on([&]() -> Task<void> {
        for (int i = 0; i < 4; ++i)
            EXPECT_EQ(co_await op::send_zc(tcp.client, data.data() + 4 * i, 4, t), 4);
        EXPECT_EQ(co_await recv_all(tcp.server, 16), data);
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
    EXPECT_EQ(c.calls, 4);
    EXPECT_EQ(t.released_count(), 4u);
}

TEST(SendZc, SendtoZcUdp) {
    Runtime rt;
    UdpSocket rx, tx;
    op::ZcTracker t;
    rt.block_on([&]() -> Task<void> {
        const char msg[] = "zero-copy datagram";
        EXPECT_EQ(co_await op::sendto_zc(tx.fd, msg, 18, 0, rx.sa(), sizeof rx.addr, t), 18);
        char buf[32] = {};
        EXPECT_EQ(co_await op::recv(rx.fd, buf, sizeof buf), 18);
        EXPECT_EQ(std::string(buf, 18), "zero-copy datagram");
        EXPECT_TRUE(co_await released_within(t, 2000ms));
        EXPECT_EQ(co_await op::sendto_zc(tx.fd, msg, 18, 0, rx.sa(), 3, t), -EINVAL); // short address
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
}

TEST(SendZc, SendmsgZc) {
    Runtime rt;
    UdpSocket rx, tx;
    op::ZcTracker t;
    rt.block_on([&]() -> Task<void> {
        char a[] = "vectored ", b[] = "zero-copy";
        iovec iov[2] = {{a, 9}, {b, 9}};
        msghdr m{};
        m.msg_name = const_cast<sockaddr*>(rx.sa());
        m.msg_namelen = sizeof rx.addr;
        m.msg_iov = iov;
        m.msg_iovlen = 2;
        EXPECT_EQ(co_await op::sendmsg_zc(tx.fd, &m, t), 18);
        char buf[32] = {};
        EXPECT_EQ(co_await op::recv(rx.fd, buf, sizeof buf), 18);
        EXPECT_EQ(std::string(buf, 18), "vectored zero-copy");
        EXPECT_TRUE(co_await released_within(t, 2000ms));
        EXPECT_EQ(co_await op::sendmsg_zc(tx.fd, static_cast<const msghdr*>(bad_address()), t), -EFAULT);
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
}

TEST(SendZc, SendtoZcAndSendmsgZcOnFixedFiles) {
    RINGO_IO_URING_ONLY("registered files");
    Runtime rt;
    UdpSocket rx, tx;
    ringo::op::FileTable files(rt);
    int fds[2] = {tx.fd, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    op::ZcTracker t;
    rt.block_on([&]() -> Task<void> {
        const char msg[] = "fixed-zc";
        EXPECT_EQ(co_await op::sendto_zc(Fixed{0}, msg, 8, 0, rx.sa(), sizeof rx.addr, t), 8);
        char buf[16] = {};
        EXPECT_EQ(co_await op::recv(rx.fd, buf, sizeof buf), 8);
        EXPECT_EQ(std::string(buf, 8), "fixed-zc");
        char part[] = "msg-zc";
        iovec iov{part, 6};
        msghdr m{};
        m.msg_name = const_cast<sockaddr*>(rx.sa());
        m.msg_namelen = sizeof rx.addr;
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        EXPECT_EQ(co_await op::sendmsg_zc(Fixed{0}, &m, t), 6);
        EXPECT_EQ(co_await op::recv(rx.fd, buf, sizeof buf), 6);
        EXPECT_EQ(std::string(buf, 6), "msg-zc");
        // Empty slot, closed descriptor, bad address pointer.
        EXPECT_EQ(co_await op::sendto_zc(Fixed{1}, msg, 8, 0, rx.sa(), sizeof rx.addr, t), -EBADF);
        EXPECT_EQ(co_await op::sendmsg_zc(Fixed{1}, &m, t), -EBADF);
        EXPECT_EQ(co_await op::sendto_zc(closed_fd(), msg, 8, 0, rx.sa(), sizeof rx.addr, t), -EBADF);
        EXPECT_EQ(co_await op::sendmsg_zc(closed_fd(), &m, t), -EBADF);
        EXPECT_EQ(
            co_await op::sendto_zc(Fixed{0}, msg, 8, 0, static_cast<const sockaddr*>(bad_address()), sizeof rx.addr, t),
            -EFAULT);
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(SendZc, FixedBufferAndFixedFile) {
    RINGO_IO_URING_ONLY("registered files and buffers");
    Runtime rt;
    TcpPair tcp;
    alignas(4096) static char mem[4096];
    std::memcpy(mem, "registered zc", 13);
    ringo::buf::BufferTable bufs(rt);
    iovec reg{mem, sizeof mem};
    ASSERT_EQ(bufs.register_buffers({&reg, 1}), 0);
    ringo::op::FileTable files(rt);
    int one = tcp.client;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    op::ZcTracker t;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::send_zc_fixed(tcp.client, mem, 13, 0, t), 13);
        EXPECT_EQ(co_await op::send_zc_fixed(Fixed{0}, mem, 13, 0, t), 13);
        EXPECT_EQ(co_await op::send_zc(Fixed{0}, mem, 13, t), 13);
        EXPECT_EQ(co_await recv_all(tcp.server, 39), "registered zcregistered zcregistered zc");
        EXPECT_TRUE(co_await released_within(t, 2000ms));
        // An unregistered buffer index, a range outside the buffer.
        EXPECT_EQ(co_await op::send_zc_fixed(tcp.client, mem, 13, 5, t), -EFAULT);
        char other[16] = {};
        EXPECT_EQ(co_await op::send_zc_fixed(tcp.client, other, sizeof other, 0, t), -EFAULT);
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(SendZc, BadInput) {
    Runtime rt;
    TempDir dir;
    Fd file(::open(dir.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    Counter c;
    op::ZcTracker t(&Counter::on_release, &c);
    rt.block_on([&]() -> Task<void> {
        char buf[8] = {};
        EXPECT_EQ(co_await op::send_zc(closed_fd(), buf, sizeof buf, t), -EBADF);
        EXPECT_EQ(co_await op::send_zc(Fixed{3}, buf, sizeof buf, t), -EBADF);
        EXPECT_EQ(co_await op::send_zc(file, buf, sizeof buf, t), -ENOTSOCK);
        TcpPair tcp;
        EXPECT_EQ(co_await op::send_zc(tcp.client, bad_address(), 64, t), -EFAULT);
        EXPECT_TRUE(co_await released_within(t, 2000ms));
    }());
    EXPECT_EQ(c.calls, 4); // every send releases exactly once, failed or not
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(SendZc, TrackerDestroyedWhileBusyStillReleases) {
    Runtime rt;
    TcpPair tcp;
    Counter c;
    std::string data(1024, 'd');
    rt.block_on([&]() -> Task<void> {
        {
            op::ZcTracker t(&Counter::on_release, &c);
            EXPECT_EQ(co_await op::send_zc(tcp.client, data.data(), data.size(), t), 1024);
        } // gone, busy or not
        EXPECT_EQ(co_await recv_all(tcp.server, 1024), data);
        for (int i = 0; i < 2000 && c.calls == 0; ++i) {
            co_await op::timeout(1ms);
        }
    }());
    EXPECT_EQ(c.calls, 1);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(SendZc, RuntimeDestructorWaitsForTheNotification) {
    Counter c;
    std::string data(2048, 'w');
    TcpPair tcp;
    op::ZcTracker t(&Counter::on_release, &c);
    {
        Runtime rt;
        rt.block_on(
            [&]() -> Task<void> { EXPECT_EQ(co_await op::send_zc(tcp.client, data.data(), data.size(), t), 2048); }());
    } // the notification (if still pending) is reaped here
    EXPECT_EQ(c.calls, 1);
    EXPECT_FALSE(t.busy());
}

TEST(SendZc, WithoutRuntimeYieldsEnxio) {
    op::ZcTracker t;
    auto body = [&]() -> Task<int> { co_return co_await op::send_zc(0, "x", 1, t); };
    auto task = body(); // the closure must outlive the coroutine that uses its captures
    auto h = task.handle();
    h.resume();
    ASSERT_TRUE(h.done());
    EXPECT_EQ(h.promise().result(), -ENXIO);
    EXPECT_FALSE(t.busy());
}

} // namespace
