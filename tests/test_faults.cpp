// Faults injected at the engine seam (uring/faults.hpp): io_uring_enter (or the epoll engine's
// enter) failing with -EAGAIN, -EBUSY, -EINTR; reads and writes cut short; provided buffers
// running dry; a CQ far smaller than the operations in flight. Under each, whole workloads
// (pipes, TCP, files, timers, channels, multishot streams) must end with every result right:
// nothing lost, doubled or reordered, no task left hanging, nothing leaked. Each test checks
// that its faults were injected, so a plan that injects nothing fails instead of passing. The
// suites run on both engines (CI runs them again with RINGO_ENGINE=epoll).
#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/recv_stream.hpp>
#include <ringo/fs/file.hpp>
#include <ringo/io/pipe.hpp>
#include <ringo/ringo.hpp>
#include <ringo/sync/channel.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Runtime;
using ringo::RuntimeOptions;
using ringo::Task;
using ringo::uring::FaultPlan;
namespace op = ringo::op;
namespace buf = ringo::buf;
using namespace ringo_test;

namespace {

#define SKIP_WITHOUT_FAULT_INJECTION()                                                                                 \
    do {                                                                                                               \
        if (!ringo::uring::fault_injection_built())                                                                    \
            GTEST_SKIP() << "this build has no fault injection (CMake option RINGO_FAULT_INJECTION)";                  \
    } while (0)

FaultPlan plan(unsigned enter, unsigned short_io, unsigned nobufs = 0, std::uint64_t seed = 1) {
    FaultPlan p;
    p.enter_errors = enter;
    p.short_io = short_io;
    p.no_buffers = nobufs;
    p.seed = seed;
    return p;
}

std::vector<std::byte> patterned(std::size_t n, unsigned salt) {
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::byte>((i * 131u + salt * 17u + (i >> 10)) & 0xff);
    return v;
}

// ---------------------------------------------------------------- plans

TEST(FaultPlan, ParsesTheEnvironmentForm) {
    FaultPlan p = FaultPlan::parse("enter=5,short=3,nobufs=7,seed=42");
    EXPECT_EQ(p.enter_errors, 5u);
    EXPECT_EQ(p.short_io, 3u);
    EXPECT_EQ(p.no_buffers, 7u);
    EXPECT_EQ(p.seed, 42u);
    EXPECT_TRUE(p.any());
    EXPECT_FALSE(FaultPlan::parse("").any());
    EXPECT_FALSE(FaultPlan::parse("seed=9").any());
    for (const char* bad : {"enter", "enter=", "enter=x", "enter=-1", "short=3,", "bogus=1", "enter=99999999999"})
        EXPECT_THROW(FaultPlan::parse(bad), std::invalid_argument) << bad;
}

// ---------------------------------------------------------------- enter errors, short I/O

// 4 MiB through a pipe in writes of every size, read back in reads of every size: with
// writes and reads cut short and enters failing, write_all and read_exact still move every
// byte once, in order.
TEST(Faults, PipeTransferSurvivesShortIoAndEnterErrors) {
    SKIP_WITHOUT_FAULT_INJECTION();
    const int fds_before = open_fds();
    constexpr std::size_t total = 4 << 20;
    const std::vector<std::byte> out = patterned(total, 1);
    std::vector<std::byte> back(total);
    ringo::uring::FaultCounts f;
    {
        Runtime rt(RuntimeOptions{}.faults_for_testing(plan(3, 2)));
        rt.block_on([&]() -> Task<void> {
            Result<ringo::PipeEnds> p = co_await ringo::pipe();
            EXPECT_TRUE(p.ok());
            auto writer = ringo::spawn([](ringo::PipeWriter w, const std::vector<std::byte>& data) -> Task<bool> {
                std::size_t off = 0, step = 1;
                bool ok = true;
                while (off < data.size()) {
                    std::size_t n = std::min(step, data.size() - off);
                    Result<void> r = co_await w.write_all(std::span(data).subspan(off, n));
                    ok = ok && r.ok();
                    off += n;
                    step = step * 3 % 100'003 + 1;
                }
                Result<void> c = co_await w.close();
                co_return ok&& c.ok();
            }(std::move(p->writer), out));
            std::size_t off = 0, step = 7;
            while (off < total) {
                std::size_t n = std::min(step, total - off);
                Result<void> r = co_await p->reader.read_exact(std::span(back).subspan(off, n));
                EXPECT_TRUE(r.ok()) << r.message();
                if (!r.ok())
                    break;
                off += n;
                step = step * 5 % 70'001 + 1;
            }
            char extra;
            Result<std::size_t> eof = co_await p->reader.read(&extra, 1);
            EXPECT_EQ(eof.value_or(99), 0u);
            EXPECT_TRUE(co_await writer);
        }());
        f = ringo_test::ring_of(rt).faults_injected();
        EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    }
    EXPECT_TRUE(out == back);
    EXPECT_GT(f.short_io, 10u);
    EXPECT_GT(f.enter_errors, 10u);
    EXPECT_EQ(open_fds(), fds_before); // both ends of the pipe closed, the runtime's too
}

// Eight TCP connections over loopback at once, each echoing 256 KiB in messages of varying
// size, under short sends and receives and failing enters.
TEST(Faults, TcpEchoOfEightConnectionsSurvivesShortIoAndEnterErrors) {
    SKIP_WITHOUT_FAULT_INJECTION();
    Runtime rt(RuntimeOptions{}.faults_for_testing(plan(4, 2, 0, 7)));
    constexpr int conns = 8;
    constexpr std::size_t per_conn = 256 << 10;
    std::atomic<int> good{0};
    rt.block_on([&]() -> Task<void> {
        Result<ringo::net::TcpListener> l =
            co_await ringo::net::TcpListener::bind(ringo::net::SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        if (!l.ok())
            co_return;
        auto server = ringo::spawn([](ringo::net::TcpListener& lis) -> Task<void> {
            std::vector<ringo::JoinHandle<void>> echoes;
            for (int i = 0; i < conns; ++i) {
                Result<ringo::net::Accepted> a = co_await lis.accept();
                EXPECT_TRUE(a.ok()) << a.message();
                if (!a.ok())
                    break;
                echoes.push_back(ringo::spawn([](ringo::net::TcpStream s) -> Task<void> {
                    std::vector<std::byte> b(9000);
                    for (;;) {
                        Result<std::size_t> n = co_await s.read(b.data(), b.size());
                        if (!n.ok() || *n == 0)
                            break;
                        Result<void> w = co_await s.write_all(std::span(b).first(*n));
                        EXPECT_TRUE(w.ok()) << w.message();
                        if (!w.ok())
                            break;
                    }
                }(std::move(a->stream))));
            }
            for (auto& e : echoes)
                co_await e;
        }(*l));
        std::vector<ringo::JoinHandle<void>> clients;
        for (int c = 0; c < conns; ++c) {
            clients.push_back(
                ringo::spawn([](ringo::net::SocketAddr at, unsigned salt, std::atomic<int>& ok) -> Task<void> {
                    Result<ringo::net::TcpStream> s = co_await ringo::net::TcpStream::connect(at);
                    EXPECT_TRUE(s.ok()) << s.message();
                    if (!s.ok())
                        co_return;
                    const std::vector<std::byte> out = patterned(per_conn, salt);
                    std::vector<std::byte> back(per_conn);
                    std::size_t off = 0, step = 100;
                    bool same = true;
                    while (off < per_conn) {
                        std::size_t n = std::min(step, per_conn - off);
                        Result<void> w = co_await s->write_all(std::span(out).subspan(off, n));
                        Result<void> r = co_await s->read_exact(std::span(back).subspan(off, n));
                        if (!w.ok() || !r.ok()) {
                            ADD_FAILURE() << w.message() << " / " << r.message();
                            co_return;
                        }
                        off += n;
                        step = step * 7 % 30'011 + 1;
                    }
                    same = out == back;
                    EXPECT_TRUE(same);
                    if (same)
                        ++ok;
                }(*l->local_addr(), static_cast<unsigned>(c), good)));
        }
        for (auto& c : clients)
            co_await c;
        co_await server;
    }());
    EXPECT_EQ(good.load(), conns);
    auto f = ringo_test::ring_of(rt).faults_injected();
    EXPECT_GT(f.short_io, 10u);
    EXPECT_GT(f.enter_errors, 10u);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
}

// A file written at offsets in pieces and read back, through short writes and reads.
TEST(Faults, FileWriteAndReadBackSurviveShortIoAndEnterErrors) {
    SKIP_WITHOUT_FAULT_INJECTION();
    TempDir dir;
    Runtime rt(RuntimeOptions{}.faults_for_testing(plan(3, 2, 0, 3)));
    constexpr std::size_t total = 2 << 20;
    const std::vector<std::byte> out = patterned(total, 5);
    std::vector<std::byte> back(total);
    rt.block_on([&]() -> Task<void> {
        auto f = co_await ringo::fs::File::open(dir.file("data"), {.read = true, .write = true, .create = true});
        EXPECT_TRUE(f.ok()) << f.message();
        if (!f.ok())
            co_return;
        std::size_t off = 0, step = 4096;
        while (off < total) {
            std::size_t n = std::min(step, total - off);
            Result<void> w = co_await f->write_all_at(std::span(out).subspan(off, n), off);
            EXPECT_TRUE(w.ok()) << w.message();
            off += n;
            step = step * 3 % 200'003 + 1;
        }
        off = 0;
        step = 5000;
        while (off < total) {
            std::size_t n = std::min(step, total - off);
            Result<void> r = co_await f->read_exact_at(std::span(back).subspan(off, n), off);
            EXPECT_TRUE(r.ok()) << r.message();
            off += n;
            step = step * 5 % 150'001 + 1;
        }
        EXPECT_TRUE((co_await f->close()).ok());
    }());
    EXPECT_TRUE(out == back);
    EXPECT_GT(ringo_test::ring_of(rt).faults_injected().short_io, 10u);
    EXPECT_GT(ringo_test::ring_of(rt).faults_injected().enter_errors, 5u);
}

// Timers, a channel between tasks and tasks that yield, under failing enters only: every
// value arrives once and in order, no sleep ends early, every task ends.
TEST(Faults, TimersChannelsAndTasksSurviveEnterErrors) {
    SKIP_WITHOUT_FAULT_INJECTION();
    Runtime rt(RuntimeOptions{}.faults_for_testing(plan(2, 0, 0, 11)));
    constexpr int values = 20'000, sleepers = 200;
    int early = 0, woke = 0;
    std::vector<int> got;
    rt.block_on([&]() -> Task<void> {
        ringo::Channel<int> ch(16);
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < sleepers; ++i)
            hs.push_back(ringo::spawn([](int i, int& early, int& woke) -> Task<void> {
                auto d = std::chrono::microseconds(100 * (i % 20));
                auto t0 = std::chrono::steady_clock::now();
                co_await ringo::sleep_for(d);
                if (std::chrono::steady_clock::now() - t0 < d)
                    ++early;
                ++woke;
            }(i, early, woke)));
        auto producer = ringo::spawn([](ringo::Channel<int>& c) -> Task<void> {
            for (int i = 0; i < values; ++i) {
                EXPECT_EQ(co_await c.send(i), 0);
                if (i % 97 == 0)
                    co_await op::nop();
            }
            c.close();
        }(ch));
        while (auto v = co_await ch.recv())
            got.push_back(*v);
        co_await producer;
        for (auto& h : hs)
            co_await h;
    }());
    EXPECT_EQ(early, 0);
    EXPECT_EQ(woke, sleepers);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(values));
    for (int i = 0; i < values; ++i)
        if (got[static_cast<std::size_t>(i)] != i) {
            ADD_FAILURE() << "value " << i << " came as " << got[static_cast<std::size_t>(i)];
            break;
        }
    EXPECT_GT(ringo_test::ring_of(rt).faults_injected().enter_errors, 10u);
}

// ---------------------------------------------------------------- CQ overflow

// 3 000 NOPs, and 3 000 kernel timeouts that all expire at the same instant, in flight on a
// ring whose CQ holds 8, with enters failing too: the completions that do not fit wait in the
// overflow list (the kernel's, or the epoll engine's), and every one arrives once.
TEST(Faults, ACqOfEightUnderThousandsOfCompletionsLosesNone) {
    SKIP_WITHOUT_FAULT_INJECTION();
    Runtime rt(RuntimeOptions{}.sq_entries(4).cq_entries(8).faults_for_testing(plan(5, 0, 0, 13)));
    constexpr int n = 3000;
    int nops = 0, timeouts = 0;
    timespec now;
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    __kernel_timespec at{};
    at.tv_sec = now.tv_sec + 1; // far enough for every timeout to be armed first
    at.tv_nsec = now.tv_nsec;
    rt.block_on([&]() -> Task<void> {
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i = 0; i < n; ++i) {
            hs.push_back(ringo::spawn([](int& c) -> Task<void> {
                int r = co_await op::nop();
                EXPECT_EQ(r, 0);
                ++c;
            }(nops)));
            hs.push_back(ringo::spawn([](__kernel_timespec ts, int& c) -> Task<void> {
                int r = co_await op::timeout(ts, 0, 1u /* IORING_TIMEOUT_ABS */);
                EXPECT_EQ(r, -ETIME);
                ++c;
            }(at, timeouts)));
        }
        for (auto& h : hs)
            co_await h;
    }());
    EXPECT_EQ(nops, n);
    EXPECT_EQ(timeouts, n);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_GT(rt.stats().backpressure_events, 0u);
    EXPECT_GT(ringo_test::ring_of(rt).faults_injected().enter_errors, 0u);
}

// ---------------------------------------------------------------- provided buffers

struct SocketPair {
    ringo::Fd a, b;
    SocketPair() {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            throw std::runtime_error("socketpair");
        a.reset(sv[0]);
        b.reset(sv[1]);
    }
};

// A multishot receive whose buffer group "runs dry" at random (-ENOBUFS, as when every buffer
// is out) and whose receives are cut short: the stream re-arms each time and delivers every
// byte of 1 MiB in order.
TEST(Faults, RecvStreamReArmsThroughInjectedEnobufs) {
    SKIP_WITHOUT_FAULT_INJECTION();
    Runtime rt(RuntimeOptions{}.faults_for_testing(plan(4, 3, 2, 17)));
    SocketPair sp;
    buf::BufferRing ring(rt, op::BufferGroup{5}, 16, 1024);
    constexpr std::size_t total = 1 << 20;
    const std::vector<std::byte> out = patterned(total, 9);
    std::thread writer([fd = sp.b.release(), &out] {
        for (std::size_t off = 0; off < out.size();) {
            ssize_t w = ::send(fd, out.data() + off, std::min<std::size_t>(7000, out.size() - off), MSG_NOSIGNAL);
            if (w <= 0)
                break;
            off += static_cast<std::size_t>(w);
        }
        ::close(fd);
    });
    std::size_t got = 0, bad = 0;
    rt.block_on([&]() -> Task<void> {
        auto s = buf::recv_multishot(sp.a, ring);
        while (buf::Buffer b = co_await s.next()) {
            for (std::size_t i = 0; i < b.size() && got + i < total; ++i)
                if (b.data()[i] != out[got + i])
                    ++bad;
            got += b.size();
        }
        EXPECT_EQ(s.result(), 0) << "the stream ended with an error, not at the end of the data";
        EXPECT_GT(s.rearms(), 0u);
    }());
    writer.join();
    EXPECT_EQ(got, total);
    EXPECT_EQ(bad, 0u);
    EXPECT_GT(ringo_test::ring_of(rt).faults_injected().no_buffers, 5u);
    EXPECT_EQ(ring.lent(), 0u);
}

} // namespace
