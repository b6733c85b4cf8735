// The multishot streams built on op/detail/stream.hpp: ringo::interval (op/interval.hpp), and
// the buffer-ring streams of buf/ (read, poll, recvmsg, bundles, incremental rings). Real
// kernel timeouts, pipes, socketpairs and UDP loopback sockets; the old-kernel fallbacks are
// forced with the probe override or the streams' test hooks.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ringo/buf/read_stream.hpp>
#include <ringo/buf/recv_stream.hpp>
#include <ringo/buf/recvmsg_stream.hpp>
#include <ringo/op/interval.hpp>
#include <ringo/op/poll_stream.hpp>

#include "alloc_counter.hpp" // replaces operator new: include it in one file of a program
#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::buf::Buffer;
using ringo::buf::BufferRing;
namespace op = ringo::op;
namespace buf = ringo::buf;
using namespace ringo_test;
using namespace std::chrono_literals;

namespace {

Task<void> settle(int rounds = 4) {
    for (int i = 0; i < rounds; ++i)
        co_await op::nop();
}

std::uint64_t ms_since(std::chrono::steady_clock::time_point t0) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

// --- interval ------------------------------------------------------------------------------

/// Five ticks of a 10 ms interval: each yields 1 (the reader keeps up), and they take about
/// 50 ms in all; returns the sum of the counts.
Task<std::int64_t> five_ticks(bool* multishot) {
    auto iv = ringo::interval(10ms);
    auto t0 = std::chrono::steady_clock::now();
    std::int64_t sum = 0;
    for (int i = 0; i < 5; ++i) {
        std::int64_t n = co_await iv.tick();
        EXPECT_GE(n, 1);
        sum += n;
    }
    auto ms = ms_since(t0);
    EXPECT_GE(ms, 45u);
    EXPECT_LE(static_cast<std::uint64_t>(sum), ms / 10 + 1); // never more than the clock says
    *multishot = iv.multishot();
    co_return sum;
}

TEST(Interval, TicksOncePerPeriod) {
    RINGO_IO_URING_ONLY("multishot timeouts");
    Runtime rt;
    bool multishot = false;
    std::int64_t sum = rt.block_on(five_ticks(&multishot));
    EXPECT_GE(sum, 5);
    EXPECT_TRUE(multishot); // 6.4+: the kernel's multishot timeout
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u); // dropped: cancelled, final CQE reaped
}

TEST(Interval, FallbackTicksOncePerPeriod) {
    Runtime rt;
    op::stream_impl::interval_force_fallback = true;
    bool multishot = true;
    std::int64_t sum = rt.block_on(five_ticks(&multishot));
    op::stream_impl::interval_force_fallback = false;
    EXPECT_GE(sum, 5);
    EXPECT_FALSE(multishot);
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

/// Sleeps through about ten periods without ticking (blocking the thread, so no CQE is even
/// reaped), then ticks: the missed periods come out as one count; the next tick is 1 again.
Task<void> missed_ticks_are_counted() {
    auto iv = ringo::interval(5ms);
    std::int64_t first = co_await iv.tick(); // the timeout is in the kernel from here on
    EXPECT_GE(first, 1);
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(52ms);
    std::int64_t n = co_await iv.tick();
    auto ms = ms_since(t0);
    EXPECT_GE(n, 9); // 52 ms are at least 9 whole periods of the grid, however it lies
    EXPECT_LE(static_cast<std::uint64_t>(n), ms / 5 + 2);
    EXPECT_EQ(iv.pending(), 0u);
    t0 = std::chrono::steady_clock::now();
    std::int64_t m = co_await iv.tick();
    EXPECT_GE(m, 1);
    EXPECT_LE(static_cast<std::uint64_t>(m), ms_since(t0) / 5 + 2);
}

TEST(Interval, MissedPeriodsAreCountedNotQueued) {
    Runtime rt;
    rt.block_on(missed_ticks_are_counted());
    op::stream_impl::interval_force_fallback = true;
    rt.block_on(missed_ticks_are_counted());
    op::stream_impl::interval_force_fallback = false;
}

Task<std::int64_t> tick_once(ringo::Interval& iv) {
    std::int64_t n = co_await iv.tick();
    co_return n;
}

/// A task waiting in tick() is cancelled: it resumes at once with -ECANCELED, the interval
/// keeps running (a later tick counts the periods missed meanwhile).
Task<void> cancelled_tick() {
    auto iv = ringo::interval(1h);
    auto h = ringo::spawn(tick_once(iv));
    co_await settle();
    auto t0 = std::chrono::steady_clock::now();
    h.cancel();
    std::int64_t r = co_await h;
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_LT(ms_since(t0), 100u);
    EXPECT_TRUE(iv.armed());
    EXPECT_FALSE(iv.done());
    // A task cancelled before it waits gets -ECANCELED too.
    auto h2 = ringo::spawn(tick_once(iv));
    h2.cancel();
    EXPECT_EQ(co_await h2, -ECANCELED);
    EXPECT_TRUE(iv.armed());
}

TEST(Interval, CancelledTaskGetsEcanceledPromptlyAndTheIntervalRuns) {
    Runtime rt;
    rt.block_on(cancelled_tick());
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

Task<void> with_timeout_on_tick() {
    auto never = ringo::interval(std::chrono::hours::max()); // saturated, not negative
    auto r0 = co_await ringo::with_timeout(never.tick(), 5ms);
    EXPECT_TRUE(r0.timed_out());
    EXPECT_EQ(*r0, -ECANCELED);
    EXPECT_TRUE(never.armed());
    auto iv = ringo::interval(30ms);
    auto r = co_await ringo::with_timeout(iv.tick(), 5ms);
    EXPECT_TRUE(r.timed_out());
    EXPECT_EQ(*r, -ECANCELED);
    std::int64_t n = co_await iv.tick(); // the first period still ends at 30 ms
    EXPECT_EQ(n, 1);
}

TEST(Interval, WithTimeoutOnTick) {
    Runtime rt;
    rt.block_on(with_timeout_on_tick());
}

/// Dropping an interval while its timeout is armed cancels it: nothing stays in flight, and
/// many rounds reuse the pooled node.
Task<void> drop_armed(Runtime& rt) {
    for (int i = 0; i < 1000; ++i) {
        auto iv = ringo::interval(1ms);
        if (i % 2)
            co_await op::nop();
    }
    co_await settle();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(Interval, DroppedWhileArmedLeavesNothingInFlight) {
    Runtime rt;
    rt.block_on(drop_armed(rt));
}

Task<void> interval_errors() {
    auto bad = ringo::interval(0ms);
    std::int64_t r = co_await bad.tick();
    EXPECT_EQ(r, -EINVAL);
    auto neg = ringo::interval(-5ms);
    r = co_await neg.tick();
    EXPECT_EQ(r, -EINVAL);
    ringo::Interval empty;
    r = co_await empty.tick();
    EXPECT_EQ(r, -EBADF);
    auto iv = ringo::interval(1h);
    auto h = ringo::spawn(tick_once(iv));
    co_await settle();
    r = co_await iv.tick(); // a second reader
    EXPECT_EQ(r, -EBUSY);
    iv.cancel();
    EXPECT_EQ(co_await h, -ECANCELED);
    r = co_await iv.tick();
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_TRUE(iv.done());
}

TEST(Interval, Errors) {
    Runtime rt;
    rt.block_on(interval_errors());
    auto outside = ringo::interval(1ms); // no runtime on this thread
    EXPECT_TRUE(outside.done());
}

Task<void> tick_forever(int* ticks) {
    auto iv = ringo::interval(1ms);
    for (;;) {
        std::int64_t n = co_await iv.tick();
        if (n < 0)
            break;
        *ticks += static_cast<int>(n);
    }
}

Task<void> spawn_ticker(int* ticks) {
    ringo::spawn(tick_forever(ticks)).detach();
    co_await ringo::sleep_for(20ms);
}

TEST(Interval, RuntimeDestroyedWithAnIntervalInADetachedTask) {
    auto rt = std::make_unique<Runtime>();
    int ticks = 0;
    rt->block_on(spawn_ticker(&ticks));
    EXPECT_GE(ticks, 5);
    rt.reset(); // cancels the armed timeout, destroys the frame (the interval with it)
}

// --- shared helpers of the buffer-ring streams -----------------------------------------------

/// The byte at position `i` of a test stream.
unsigned char pattern(std::size_t i) { return static_cast<unsigned char>((i * 131u + (i >> 9) * 7u) & 0xff); }

void fill_pattern(std::vector<unsigned char>& v, std::size_t from) {
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = pattern(from + i);
}

/// A connected AF_UNIX stream socketpair.
struct StreamPair {
    Fd a, b;
    StreamPair() {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            std::abort();
        a.reset(sv[0]);
        b.reset(sv[1]);
    }
};

/// "d<i>" (appended, not operator+: GCC 12 warns wrongly about that one at -O2).
std::string datagram_name(int i) {
    std::string s = "d";
    s.append(std::to_string(i));
    return s;
}

/// Sends datagram `s` from `from` to `to`.
void send_to(const UdpSocket& from, const UdpSocket& to, const std::string& s) {
    EXPECT_EQ(::sendto(from.fd, s.data(), s.size(), 0, to.sa(), sizeof to.addr), static_cast<ssize_t>(s.size()));
}

/// Reads a whole buffer-ring stream, checking the pattern: bytes received, or -1 on a
/// mismatch. Yields now and then so the kernel gets ahead and runs the ring dry.
template <class S>
Task<std::int64_t> drain_pattern(S& s) {
    std::size_t got = 0, chunks = 0;
    bool ok = true;
    for (;;) {
        Buffer b = co_await s.next();
        if (!b)
            break;
        for (std::size_t i = 0; i < b.size(); ++i)
            ok = ok && static_cast<unsigned char>(b.data()[i]) == pattern(got + i);
        got += b.size();
        if (++chunks % 16 == 0)
            co_await ringo::yield();
    }
    co_return ok ? static_cast<std::int64_t>(got) : -1;
}

/// Writes `total` pattern bytes to `fd` (blocking), then closes it.
std::thread write_pattern(int fd, std::size_t total) {
    return std::thread([fd, total] {
        std::vector<unsigned char> chunk(3000);
        for (std::size_t off = 0; off < total;) {
            chunk.resize(std::min<std::size_t>(3000, total - off));
            fill_pattern(chunk, off);
            ssize_t w = ::write(fd, chunk.data(), chunk.size());
            if (w <= 0)
                break;
            off += static_cast<std::size_t>(w);
        }
        ::close(fd);
    });
}

template <class S>
Task<Buffer> next_buffer(S& s) {
    Buffer b = co_await s.next();
    co_return b;
}

// --- read_multishot --------------------------------------------------------------------------

Task<void> read_pipe_in_order(Runtime& rt, bool expect_multishot) {
    Pipe p;
    BufferRing ring(rt, op::BufferGroup{40}, 4, 256); // 1 KiB of ring against 200 KiB
    constexpr std::size_t total = 200 * 1024;
    std::thread writer = write_pattern(p.w.release(), total);
    auto s = buf::read_multishot(p.r, ring);
    EXPECT_EQ(s.multishot(), expect_multishot);
    std::int64_t got = co_await drain_pattern(s);
    writer.join();
    EXPECT_EQ(got, static_cast<std::int64_t>(total));
    EXPECT_EQ(s.result(), 0); // end of file
    EXPECT_TRUE(s.done());
    EXPECT_GT(ring.stats().buffers_lent, 4u);
    if (expect_multishot) {
        EXPECT_GT(ring.stats().enobufs, 0u) << "the ring never ran dry";
    }
    EXPECT_EQ(ring.lent(), 0u);
}

TEST(ReadStream, PipeInOrderThroughADryRing) {
    RINGO_IO_URING_ONLY("IORING_OP_READ_MULTISHOT");
    Runtime rt;
    int fds = open_fds();
    rt.block_on(read_pipe_in_order(rt, true));
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_EQ(open_fds(), fds);
}

TEST(ReadStream, FallbackWithoutReadMultishot) {
    Runtime rt;
    rt.probe().set_supported(ringo::uring::compat::opcode::read_multishot, false);
    rt.block_on(read_pipe_in_order(rt, false));
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

/// The stream `s` reads "abcdefghijkl" (already written to it through `writer`) into a ring
/// of 2 x 4 bytes: holding both buffers parks the stream (-ENOBUFS, or a bundle's last CQE
/// with the ring empty); giving one back while the reader waits resumes it; closing `writer`
/// ends it with 0.
template <class S>
Task<void> park_and_resume(S& s, BufferRing& ring, Fd& writer, bool expect_enobufs) {
    ring.set_rearm_threshold(2);
    Buffer a = co_await s.next();
    Buffer b = co_await s.next();
    co_await settle(8);
    EXPECT_EQ(a.view(), "abcd");
    EXPECT_EQ(b.view(), "efgh");
    EXPECT_TRUE(s.parked());
    EXPECT_FALSE(s.armed());
    EXPECT_EQ(ring.lent(), 2u);
    if (expect_enobufs) {
        EXPECT_GT(ring.stats().enobufs, 0u);
    }
    a.reset(); // one back: below the threshold, but the reader waits in next() below
    Buffer c = co_await s.next();
    EXPECT_EQ(c.view(), "ijkl");
    EXPECT_GE(s.rearms(), 1u);
    writer.reset();
    b.reset();
    c.reset();
    Buffer end = co_await s.next();
    EXPECT_FALSE(end);
    EXPECT_EQ(end.result(), 0);
}

Task<void> read_park_and_resume(Runtime& rt) {
    Pipe p;
    BufferRing ring(rt, op::BufferGroup{41}, 2, 4);
    auto s = buf::read_multishot(p.r, ring);
    EXPECT_EQ(::write(p.w, "abcdefghijkl", 12), 12);
    co_await park_and_resume(s, ring, p.w, s.multishot()); // single reads park before a read
}

TEST(ReadStream, DryRingParksAndResumes) {
    Runtime rt;
    rt.block_on(read_park_and_resume(rt));
    rt.probe().set_supported(ringo::uring::compat::opcode::read_multishot, false);
    rt.block_on(read_park_and_resume(rt));
}

/// A task waiting in next() is cancelled: -ECANCELED, the stream ends, nothing in flight.
Task<void> read_cancelled(Runtime& rt) {
    Pipe p;
    BufferRing ring(rt, op::BufferGroup{42}, 4, 64);
    auto s = buf::read_multishot(p.r, ring);
    auto h = ringo::spawn(next_buffer(s));
    co_await settle();
    h.cancel();
    Buffer b = co_await h;
    EXPECT_EQ(b.result(), -ECANCELED);
    EXPECT_TRUE(s.done());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(ReadStream, CancelledTask) {
    Runtime rt;
    rt.block_on(read_cancelled(rt));
    rt.probe().set_supported(ringo::uring::compat::opcode::read_multishot, false);
    rt.block_on(read_cancelled(rt));
}

/// Streams dropped while armed, with data queued: everything comes back to the ring, the
/// nodes to their pool, the operations out of the kernel.
Task<void> read_drop_armed(Runtime& rt, BufferRing& ring, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        Pipe p;
        auto s = buf::read_multishot(p.r, ring);
        if (i % 2) {
            EXPECT_EQ(::write(p.w, "xy", 2), 2);
            co_await settle(2);
        }
    }
    co_await settle();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_EQ(ring.lent(), 0u);
}

TEST(ReadStream, DroppedWhileArmedLeaksNothing) {
    Runtime rt;
    int fds = open_fds();
    {
        BufferRing ring(rt, op::BufferGroup{43}, 4, 64);
        rt.block_on(read_drop_armed(rt, ring, 200));
        rt.probe().set_supported(ringo::uring::compat::opcode::read_multishot, false);
        rt.block_on(read_drop_armed(rt, ring, 200)); // single reads parked in the kernel
    }
    EXPECT_EQ(open_fds(), fds);
}

Task<void> read_errors(Runtime& rt) {
    BufferRing ring(rt, op::BufferGroup{44}, 4, 64);
    TempDir dir;
    Fd f(::open((dir.path() / "f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    auto s = buf::read_multishot(f, ring); // a regular file cannot be polled
    Buffer b = co_await s.next();
    EXPECT_EQ(b.result(), -EBADFD);
    auto bad = buf::read_multishot(op::FileRef(1 << 20), ring);
    b = co_await bad.next();
    EXPECT_EQ(b.result(), -EBADF);
}

TEST(ReadStream, ErrorsEndTheStream) {
    RINGO_IO_URING_ONLY("multishot read's -EBADFD for a file that cannot be polled");
    Runtime rt;
    rt.block_on(read_errors(rt));
}

// --- poll_stream -----------------------------------------------------------------------------

Task<int> next_mask(op::PollStream& s) {
    int m = co_await s.next();
    co_return m;
}

Task<void> poll_each_readiness(Runtime& rt) {
    Fd efd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    auto ps = op::poll_stream(efd, POLLIN);
    auto h = ringo::spawn(next_mask(ps));
    co_await settle();
    std::uint64_t one = 1, v = 0;
    EXPECT_EQ(::write(efd, &one, 8), 8);
    int m = co_await h;
    EXPECT_EQ(m, POLLIN);
    EXPECT_EQ(::read(efd, &v, 8), 8); // consume: edge-triggered
    // Two readinesses before the reader looks merge into one mask.
    EXPECT_EQ(::write(efd, &one, 8), 8);
    co_await settle();
    EXPECT_EQ(::read(efd, &v, 8), 8);
    EXPECT_EQ(::write(efd, &one, 8), 8);
    co_await settle();
    EXPECT_EQ(ps.events_seen(), 3u);
    m = co_await ps.next();
    EXPECT_EQ(m, POLLIN);
    EXPECT_TRUE(ps.armed());
    // A cancelled reader resumes at once; the poll stays armed and sees the next event.
    auto h2 = ringo::spawn(next_mask(ps));
    co_await settle();
    h2.cancel();
    EXPECT_EQ(co_await h2, -ECANCELED);
    EXPECT_TRUE(ps.armed());
    EXPECT_EQ(::read(efd, &v, 8), 8);
    EXPECT_EQ(::write(efd, &one, 8), 8);
    m = co_await ps.next();
    EXPECT_EQ(m, POLLIN);
    ps.cancel();
    m = co_await ps.next();
    EXPECT_EQ(m, -ECANCELED);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(PollStream, EachReadinessInOrderAndCancel) {
    RINGO_IO_URING_ONLY(
        "readiness posted by the kernel while the task runs (the epoll engine looks when it is entered)");
    Runtime rt;
    rt.block_on(poll_each_readiness(rt));
}

Task<void> poll_drop_armed(Runtime& rt) {
    Pipe p;
    for (int i = 0; i < 500; ++i) {
        auto ps = op::poll_stream(p.r, POLLIN);
        if (i % 2)
            co_await op::nop();
    }
    auto bad = op::poll_stream(op::FileRef(1 << 20), POLLIN);
    int m = co_await bad.next();
    EXPECT_EQ(m, -EBADF);
    co_await settle();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(PollStream, DroppedWhileArmedAndErrors) {
    Runtime rt;
    rt.block_on(poll_drop_armed(rt));
}

// --- recvmsg_multishot -----------------------------------------------------------------------

Task<void> udp_datagrams_in_order(Runtime& rt) {
    UdpSocket server, c1, c2;
    BufferRing ring(rt, op::BufferGroup{50}, 8, 512);
    auto s = buf::recvmsg_multishot(server.fd, ring);
    send_to(c1, server, "one");
    send_to(c2, server, "two");
    send_to(c1, server, "");
    send_to(c2, server, std::string(1000, 'x')); // longer than what a buffer holds
    std::vector<std::string> got;
    std::vector<int> ports;
    for (int i = 0; i < 4; ++i) {
        buf::Message m = co_await s.next();
        EXPECT_TRUE(m);
        if (!m)
            break;
        EXPECT_EQ(m.name_len(), sizeof(sockaddr_in));
        if (!m.name())
            break;
        ports.push_back(ntohs(reinterpret_cast<const sockaddr_in*>(m.name())->sin_port));
        got.emplace_back(m.view());
        EXPECT_EQ(m.truncated(), i == 3);
    }
    EXPECT_EQ(got.size(), 4u);
    if (got.size() != 4u)
        co_return;
    EXPECT_EQ(got[0], "one");
    EXPECT_EQ(got[1], "two");
    EXPECT_EQ(got[2], "");
    EXPECT_EQ(got[3], std::string(512 - sizeof(io_uring_recvmsg_out) - sizeof(sockaddr_storage), 'x'));
    EXPECT_EQ(ports[0], ntohs(c1.addr.sin_port));
    EXPECT_EQ(ports[1], ntohs(c2.addr.sin_port));
    EXPECT_EQ(ports[2], ntohs(c1.addr.sin_port));
    EXPECT_EQ(ring.lent(), 0u);
}

TEST(RecvMsgStream, UdpDatagramsInOrderWithTheirSenders) {
    Runtime rt;
    rt.block_on(udp_datagrams_in_order(rt));
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

/// With room for control data, each Message carries the ancillary messages asked for
/// (IP_PKTINFO: the address the datagram was sent to).
Task<void> udp_control_data(Runtime& rt) {
    UdpSocket server, client;
    int on = 1;
    EXPECT_EQ(::setsockopt(server.fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof on), 0);
    BufferRing ring(rt, op::BufferGroup{54}, 4, 512);
    auto s = buf::recvmsg_multishot(server.fd, ring, CMSG_SPACE(sizeof(in_pktinfo)));
    send_to(client, server, "with control");
    buf::Message m = co_await s.next();
    EXPECT_EQ(m.view(), "with control");
    EXPECT_GE(m.control().size(), CMSG_LEN(sizeof(in_pktinfo)));
    if (m.control().size() >= CMSG_LEN(sizeof(in_pktinfo))) {
        auto* c = reinterpret_cast<const cmsghdr*>(m.control().data());
        EXPECT_EQ(c->cmsg_level, IPPROTO_IP);
        EXPECT_EQ(c->cmsg_type, IP_PKTINFO);
        in_pktinfo info{};
        std::memcpy(&info, CMSG_DATA(c), sizeof info);
        EXPECT_EQ(ntohl(info.ipi_addr.s_addr), INADDR_LOOPBACK);
    }
}

TEST(RecvMsgStream, ControlData) {
    Runtime rt;
    rt.block_on(udp_control_data(rt));
}

/// More datagrams than buffers while the reader holds them: -ENOBUFS parks the stream, the
/// datagrams wait in the socket, and all arrive in order once buffers come back.
Task<void> udp_dry_ring(Runtime& rt) {
    UdpSocket server, client;
    BufferRing ring(rt, op::BufferGroup{51}, 2, 512);
    auto s = buf::recvmsg_multishot(server.fd, ring);
    for (int i = 0; i < 10; ++i)
        send_to(client, server, datagram_name(i));
    buf::Message a = co_await s.next();
    buf::Message b = co_await s.next();
    co_await settle(8);
    EXPECT_TRUE(s.parked());
    EXPECT_GT(ring.stats().enobufs, 0u);
    EXPECT_EQ(a.view(), "d0");
    EXPECT_EQ(b.view(), "d1");
    a.reset();
    b.reset();
    for (int i = 2; i < 10; ++i) {
        buf::Message m = co_await s.next();
        EXPECT_EQ(m.view(), datagram_name(i));
    }
}

TEST(RecvMsgStream, DryRingParksAndResumesInOrder) {
    Runtime rt;
    rt.block_on(udp_dry_ring(rt));
}

Task<buf::Message> next_message(buf::RecvMsgStream& s) {
    buf::Message m = co_await s.next();
    co_return m;
}

Task<void> udp_cancel_drop_errors(Runtime& rt) {
    UdpSocket server, client;
    BufferRing ring(rt, op::BufferGroup{52}, 4, 512);
    {
        auto s = buf::recvmsg_multishot(server.fd, ring);
        auto h = ringo::spawn(next_message(s));
        co_await settle();
        h.cancel();
        buf::Message m = co_await h;
        EXPECT_EQ(m.result(), -ECANCELED);
        EXPECT_TRUE(s.done());
    }
    for (int i = 0; i < 100; ++i) { // dropped while armed, sometimes with datagrams queued
        auto s = buf::recvmsg_multishot(server.fd, ring);
        if (i % 2) {
            send_to(client, server, "q");
            co_await settle(2);
        }
    }
    auto small = buf::recvmsg_multishot(server.fd, ring, 4096); // no room left for a payload
    buf::Message m = co_await small.next();
    EXPECT_EQ(m.result(), -EINVAL);
    {
        BufferRing inc(rt, op::BufferGroup{53}, 4, 512, {.incremental = true});
        EXPECT_TRUE(inc.incremental());
        if (inc.incremental()) {
            auto parts = buf::recvmsg_multishot(server.fd, inc); // datagrams need whole buffers
            m = co_await parts.next();
            EXPECT_EQ(m.result(), -EINVAL);
        }
    }
    Pipe p;
    auto notsock = buf::recvmsg_multishot(p.r, ring);
    m = co_await notsock.next();
    EXPECT_EQ(m.result(), -ENOTSOCK);
    co_await settle();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_EQ(ring.lent(), 0u);
}

TEST(RecvMsgStream, CancelledTaskDropWhileArmedAndErrors) {
    RINGO_IO_URING_ONLY("incremental buffer rings");
    Runtime rt;
    int fds = open_fds();
    rt.block_on(udp_cancel_drop_errors(rt));
    EXPECT_EQ(open_fds(), fds);
}

// --- recv_bundle -----------------------------------------------------------------------------

/// 4 KiB sent before the stream arms, into a ring of 64-byte buffers: with bundles a CQE
/// carries many buffers. Returns the CQEs the runtime reaped meanwhile.
Task<std::uint64_t> bundle_burst(Runtime& rt, std::uint16_t group, bool bundle, bool expect_bundles) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{group}, 128, 64);
    std::vector<unsigned char> data(4096);
    fill_pattern(data, 0);
    EXPECT_EQ(::send(sp.b, data.data(), data.size(), 0), 4096);
    std::uint64_t cqes0 = rt.stats().cqes;
    auto s = bundle ? buf::recv_bundle(sp.a, ring) : buf::recv_multishot(sp.a, ring);
    EXPECT_EQ(s.bundles(), expect_bundles);
    std::size_t got = 0;
    bool ok = true;
    while (got < 4096) {
        Buffer b = co_await s.next();
        if (!b)
            break;
        EXPECT_LE(b.size(), 64u);
        for (std::size_t i = 0; i < b.size(); ++i)
            ok = ok && static_cast<unsigned char>(b.data()[i]) == pattern(got + i);
        got += b.size();
    }
    std::uint64_t cqes = rt.stats().cqes - cqes0;
    EXPECT_EQ(got, 4096u);
    EXPECT_TRUE(ok);
    co_return cqes;
}

TEST(RecvBundle, OneCqeCarriesManyBuffersInOrder) {
    Runtime rt;
    if (!(rt.features() & ringo::uring::compat::feat::recvsend_bundle))
        GTEST_SKIP() << "kernel without IORING_FEAT_RECVSEND_BUNDLE";
    std::uint64_t with = rt.block_on(bundle_burst(rt, 60, true, true));
    std::uint64_t without = rt.block_on(bundle_burst(rt, 63, false, false));
    EXPECT_GE(without, 64u); // one CQE per buffer
    EXPECT_LT(with, 16u) << "no bundles seen";
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(RecvBundle, FallbackWithoutTheFeature) {
    Runtime rt;
    buf::detail::bundle_force_fallback = true;
    std::uint64_t cqes = rt.block_on(bundle_burst(rt, 64, true, false));
    buf::detail::bundle_force_fallback = false;
    EXPECT_GE(cqes, 64u);
}

Task<void> bundle_through_dry_ring(Runtime& rt) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{61}, 4, 64); // 256 bytes of ring against 200 KiB
    constexpr std::size_t total = 200 * 1024;
    std::thread writer = write_pattern(sp.b.release(), total);
    auto s = buf::recv_bundle(sp.a, ring);
    std::int64_t got = co_await drain_pattern(s);
    ::shutdown(sp.a, SHUT_RDWR);
    writer.join();
    EXPECT_EQ(got, static_cast<std::int64_t>(total));
    EXPECT_EQ(s.result(), 0);
    EXPECT_EQ(ring.lent(), 0u);
    EXPECT_EQ(ring.available(), 4u);
}

Task<void> recv_park_and_resume(Runtime& rt, std::uint16_t group, bool incremental, bool expect_bundles) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{group}, 2, 4, {.incremental = incremental});
    EXPECT_EQ(::send(sp.b, "abcdefghijkl", 12, 0), 12);
    auto s = buf::recv_bundle(sp.a, ring);
    EXPECT_EQ(s.bundles(), expect_bundles);
    co_await park_and_resume(s, ring, sp.b, !expect_bundles);
}

TEST(RecvBundle, DryRingParksAndResumes) {
    Runtime rt;
    bool bundles = (rt.features() & ringo::uring::compat::feat::recvsend_bundle) != 0;
    rt.block_on(recv_park_and_resume(rt, 65, false, bundles));
    rt.block_on(settle());
    buf::detail::bundle_force_fallback = true;
    rt.block_on(recv_park_and_resume(rt, 66, false, false));
    buf::detail::bundle_force_fallback = false;
}

TEST(RecvBundle, InOrderThroughADryRing) {
    Runtime rt;
    rt.block_on(bundle_through_dry_ring(rt));
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

Task<void> bundle_drop_armed(Runtime& rt) {
    BufferRing ring(rt, op::BufferGroup{62}, 16, 64);
    for (int i = 0; i < 100; ++i) {
        StreamPair sp;
        auto s = buf::recv_bundle(sp.a, ring);
        if (i % 2) {
            EXPECT_EQ(::send(sp.b, std::string(300, 'z').data(), 300, 0), 300);
            co_await settle(2);
        }
    }
    co_await settle();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_EQ(ring.lent(), 0u);
}

TEST(RecvBundle, DroppedWhileArmedLeaksNothing) {
    Runtime rt;
    int fds = open_fds();
    rt.block_on(bundle_drop_armed(rt));
    EXPECT_EQ(open_fds(), fds);
}

// --- incremental buffer rings ----------------------------------------------------------------

/// Small sends land one after the other in the same buffer: each part names the buffer, its
/// offset and length; the buffer stays the kernel's (not lent) until it is used up.
Task<void> incremental_parts(Runtime& rt) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{70}, 4, 32, {.incremental = true});
    EXPECT_TRUE(ring.incremental());
    auto s = buf::recv_multishot(sp.a, ring);
    EXPECT_EQ(::send(sp.b, "0123456789", 10, 0), 10);
    Buffer a = co_await s.next();
    EXPECT_EQ(a.view(), "0123456789");
    EXPECT_EQ(a.offset(), 0u);
    EXPECT_EQ(ring.lent(), 0u); // the kernel goes on filling it
    EXPECT_EQ(::send(sp.b, "abcdefghij", 10, 0), 10);
    Buffer b = co_await s.next();
    EXPECT_EQ(b.view(), "abcdefghij");
    EXPECT_EQ(b.id(), a.id());
    EXPECT_EQ(b.offset(), 10u);
    EXPECT_EQ(b.data(), a.data() + 10);
    // 20 bytes: the first buffer's last 12, then 8 in the next buffer.
    EXPECT_EQ(::send(sp.b, "ABCDEFGHIJKLMNOPQRST", 20, 0), 20);
    Buffer c = co_await s.next();
    EXPECT_EQ(c.id(), a.id());
    EXPECT_EQ(c.offset(), 20u);
    EXPECT_EQ(c.view(), "ABCDEFGHIJKL");
    Buffer d = co_await s.next();
    EXPECT_NE(d.id(), a.id());
    EXPECT_EQ(d.offset(), 0u);
    EXPECT_EQ(d.view(), "MNOPQRST");
    EXPECT_EQ(ring.lent(), 1u); // the first buffer is used up, and its parts are held
    a.reset();
    c.reset();
    EXPECT_EQ(ring.lent(), 1u); // b still holds a part of it
    b.reset();
    EXPECT_EQ(ring.lent(), 0u); // now it is back in the ring
    EXPECT_EQ(ring.available(), 4u);
    d.reset();
    sp.b.reset();
    Buffer end = co_await s.next();
    EXPECT_EQ(end.result(), 0);
    EXPECT_EQ(ring.lent(), 0u);
}

TEST(IncrementalRing, PartsOfABufferWithTheirOffsets) {
    RINGO_IO_URING_ONLY("incremental buffer rings");
    Runtime rt;
    rt.block_on(incremental_parts(rt));
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

/// Parts queued before the reader looks join into one (they are contiguous in the buffer).
Task<void> incremental_queued_parts_join(Runtime& rt) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{71}, 4, 64, {.incremental = true});
    auto s = buf::recv_multishot(sp.a, ring);
    co_await settle();
    for (const char* part : {"one ", "two ", "three"}) {
        EXPECT_EQ(::send(sp.b, part, std::strlen(part), 0), static_cast<ssize_t>(std::strlen(part)));
        co_await settle(2);
    }
    Buffer b = co_await s.next();
    EXPECT_EQ(b.view(), "one two three");
    EXPECT_EQ(s.queued(), 0u);
}

TEST(IncrementalRing, QueuedPartsOfABufferJoin) {
    Runtime rt;
    rt.block_on(incremental_queued_parts_join(rt));
}

Task<void> incremental_through_dry_ring(Runtime& rt, bool incremental) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{72}, 4, 100, {.incremental = true});
    EXPECT_EQ(ring.incremental(), incremental);
    constexpr std::size_t total = 200 * 1024;
    std::thread writer = write_pattern(sp.b.release(), total);
    auto s = buf::recv_multishot(sp.a, ring);
    std::int64_t got = co_await drain_pattern(s);
    ::shutdown(sp.a, SHUT_RDWR);
    writer.join();
    EXPECT_EQ(got, static_cast<std::int64_t>(total));
    EXPECT_EQ(s.result(), 0);
    EXPECT_EQ(ring.lent(), 0u);
    EXPECT_EQ(ring.available(), 4u);
}

TEST(IncrementalRing, InOrderThroughADryRing) {
    RINGO_IO_URING_ONLY("incremental buffer rings");
    Runtime rt;
    rt.block_on(incremental_through_dry_ring(rt, true));
}

TEST(IncrementalRing, FallbackToAPlainRing) {
    Runtime rt;
    buf::detail::incremental_force_fallback = true;
    rt.block_on(incremental_through_dry_ring(rt, false));
    buf::detail::incremental_force_fallback = false;
}

TEST(IncrementalRing, DryRingParksAndResumes) {
    Runtime rt;
    rt.block_on(recv_park_and_resume(rt, 73, true, false)); // recv_bundle: no bundles there
}

/// A second stream on an incremental ring is refused; streams dropped while armed with
/// parts queued (and a part held past the stream) return everything.
Task<void> incremental_busy_and_drop(Runtime& rt) {
    BufferRing ring(rt, op::BufferGroup{74}, 4, 64, {.incremental = true});
    StreamPair sp;
    Buffer kept;
    {
        auto s = buf::recv_multishot(sp.a, ring);
        auto second = buf::recv_multishot(sp.a, ring);
        Buffer refused = co_await second.next();
        EXPECT_EQ(refused.result(), -EBUSY);
        EXPECT_EQ(::send(sp.b, "part", 4, 0), 4);
        kept = co_await s.next();
        EXPECT_EQ(::send(sp.b, "more", 4, 0), 4);
        co_await settle(2); // queued, not taken: dropped with the stream
    }
    for (int i = 0; i < 100; ++i) {
        StreamPair p;
        auto s = buf::recv_multishot(p.a, ring);
        if (i % 2) {
            EXPECT_EQ(::send(p.b, "xyz", 3, 0), 3);
            co_await settle(2);
        }
    }
    co_await settle();
    EXPECT_EQ(kept.view(), "part");
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    kept.reset();
    EXPECT_EQ(ring.lent(), 0u);
    EXPECT_EQ(ring.available(), 4u);
    auto again = buf::recv_multishot(sp.a, ring); // the ring is free for a new stream
    EXPECT_EQ(::send(sp.b, "next", 4, 0), 4);
    Buffer n = co_await again.next();
    EXPECT_EQ(n.view(), "next");
}

TEST(IncrementalRing, OneStreamAtATimeAndDropWhileArmed) {
    RINGO_IO_URING_ONLY("incremental buffer rings");
    Runtime rt;
    int fds = open_fds();
    rt.block_on(incremental_busy_and_drop(rt));
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_EQ(open_fds(), fds);
}

/// A Buffer part that outlives its ring object and stream keeps the registration alive.
Task<void> incremental_part_outlives_ring(Runtime& rt) {
    StreamPair sp;
    auto ring = std::make_unique<BufferRing>(rt, op::BufferGroup{75}, 4, 64, buf::BufferRingOptions{true});
    Buffer kept;
    {
        auto s = buf::recv_multishot(sp.a, *ring);
        EXPECT_EQ(::send(sp.b, "alive", 5, 0), 5);
        kept = co_await s.next();
    }
    ring.reset();
    co_await settle();
    EXPECT_EQ(kept.view(), "alive");
    kept.reset();                                     // the last reference: unregisters and unmaps
    BufferRing again(rt, op::BufferGroup{75}, 4, 64); // the group id is free again
    EXPECT_EQ(again.available(), 4u);
}

TEST(IncrementalRing, APartOutlivesItsRing) {
    Runtime rt;
    rt.block_on(incremental_part_outlives_ring(rt));
}

// --- allocations -----------------------------------------------------------------------------

struct Counts {
    long heap = -1;
    std::uint64_t frames = 1;
};

/// One round of every stream: made, used once, dropped (armed), and its node back in the pool.
Task<Counts> stream_allocations(Runtime& rt) {
    Pipe p;
    UdpSocket server, client;
    StreamPair sp;
    Fd efd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    BufferRing ring(rt, op::BufferGroup{80}, 8, 256);
    BufferRing inc(rt, op::BufferGroup{81}, 8, 256, {.incremental = true});
    long h0 = 0;
    std::uint64_t f0 = 0;
    std::uint64_t one = 1, v = 0;
    for (int round = 0; round < 52; ++round) {
        if (round == 2) { // warmed up: every kind of node has been made once
            h0 = g_allocs.load();
            f0 = ringo::detail::t_frames_allocated;
        }
        {
            auto iv = ringo::interval(1ms);
            // A dropped interval's cancel can miss its timer between two shots; the node then
            // stays out until the next shot, into the next round: the warm-up rounds leave a
            // spare node in the pool for that.
            std::optional<ringo::Interval> spare;
            if (round < 2)
                spare.emplace(ringo::interval(1ms));
            std::int64_t n = co_await iv.tick();
            EXPECT_GE(n, 1);
        }
        {
            auto ps = op::poll_stream(efd, POLLIN);
            EXPECT_EQ(::write(efd, &one, 8), 8);
            int m = co_await ps.next();
            EXPECT_EQ(m, POLLIN);
            EXPECT_EQ(::read(efd, &v, 8), 8);
        }
        {
            auto rs = buf::read_multishot(p.r, ring);
            EXPECT_EQ(::write(p.w, "abc", 3), 3);
            Buffer b = co_await rs.next();
            EXPECT_EQ(b.size(), 3u);
        }
        {
            auto ms = buf::recvmsg_multishot(server.fd, ring);
            send_to(client, server, "dgram");
            buf::Message m = co_await ms.next();
            EXPECT_EQ(m.size(), 5u);
        }
        {
            auto bs = buf::recv_bundle(sp.a, ring);
            EXPECT_EQ(::send(sp.b, "bundle", 6, 0), 6);
            Buffer b = co_await bs.next();
            EXPECT_EQ(b.size(), 6u);
        }
        {
            auto is = buf::recv_multishot(sp.a, inc);
            EXPECT_EQ(::send(sp.b, "part", 4, 0), 4);
            Buffer b = co_await is.next();
            EXPECT_EQ(b.size(), 4u);
        }
        for (int i = 0; i < 3; ++i)
            co_await op::nop(); // the cancels' final CQEs: the nodes go back to their pools
    }
    Counts c;
    c.heap = g_allocs.load() - h0;
    c.frames = ringo::detail::t_frames_allocated - f0;
    co_return c;
}

// After the first stream of each kind on a thread, making, reading and dropping streams
// allocates nothing: no heap (the node pools), no coroutine frame.
TEST(Streams, NoAllocationAfterTheFirstOfEachKind) {
#ifdef RINGO_TEST_NO_NEW_COUNT
    GTEST_SKIP() << "operator new is not counted under TSan";
#endif
    Runtime rt;
    Counts c = rt.block_on(stream_allocations(rt));
    EXPECT_EQ(c.heap, 0);
    EXPECT_EQ(c.frames, 0u);
    rt.block_on(settle());
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

/// A task waiting on an incremental ring's stream is cancelled while a part is queued and
/// another held: -ECANCELED after the queued part, everything back once released.
Task<void> incremental_cancelled(Runtime& rt) {
    StreamPair sp;
    BufferRing ring(rt, op::BufferGroup{76}, 4, 64, {.incremental = true});
    auto s = buf::recv_multishot(sp.a, ring);
    EXPECT_EQ(::send(sp.b, "held", 4, 0), 4);
    Buffer held = co_await s.next();
    auto h = ringo::spawn(next_buffer(s));
    co_await settle();
    h.cancel();
    Buffer b = co_await h;
    EXPECT_EQ(b.result(), -ECANCELED);
    EXPECT_TRUE(s.done());
    EXPECT_EQ(held.view(), "held");
    held.reset();
    EXPECT_EQ(ring.lent(), 0u);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

TEST(IncrementalRing, CancelledTask) {
    Runtime rt;
    rt.block_on(incremental_cancelled(rt));
}

Task<void> hold_parts(BufferRing& ring, int fd) {
    auto s = buf::recv_multishot(fd, ring);
    Buffer a = co_await s.next();
    co_await ringo::sleep_for(std::chrono::hours(1));
}

Task<void> spawn_holder(BufferRing& ring, StreamPair& sp) {
    ringo::spawn(hold_parts(ring, sp.a)).detach();
    EXPECT_EQ(::send(sp.b, "first", 5, 0), 5);
    co_await settle(4);
    EXPECT_EQ(::send(sp.b, "second", 6, 0), 6); // queued in the stream, not taken
    co_await settle(4);
}

TEST(IncrementalRing, RuntimeDestroyedWithAStreamHoldingParts) {
    auto rt = std::make_unique<Runtime>();
    StreamPair sp;
    auto ring = std::make_unique<BufferRing>(*rt, op::BufferGroup{77}, 4, 64, buf::BufferRingOptions{true});
    rt->block_on(spawn_holder(*ring, sp));
    ring.reset(); // the detached task's stream and part still hold the ring
    rt.reset();   // cancels the multishot, destroys the frame: parts, stream and ring go
}

} // namespace
