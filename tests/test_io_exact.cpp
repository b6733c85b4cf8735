// io/detail/exact.hpp: read_exact / write_all awaited directly (detail::ExactAwait). After a
// short step the next one goes to the kernel from the completion, with or without the task
// waiting alone; cancelling the task, a timeout or the runtime's shutdown after a short step
// interrupt the step in flight and start no other (the bytes that come later stay unread);
// the awaitable may be moved before it is awaited.
#include <ringo/io/pipe.hpp>
#include <ringo/net/unix.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;
using ringo::PipeReader;
using ringo::Result;
using ringo::Task;

namespace {

using ringo_test::open_fds;

// A pipe whose read end a PipeReader owns; the write end stays a plain descriptor the test
// writes with write(2). A rescue thread writes `rescue` bytes after 3 s unless told not to:
// a read that should have been interrupted then completes, and the test fails instead of
// hanging.
class PipeWithRescue {
public:
    PipeWithRescue() {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0)
            throw std::system_error(errno, std::generic_category(), "pipe2");
        rd_ = p[0];
        wr_ = p[1];
        rescue_ = std::thread([this] {
            for (int i = 0; i < 300 && !stop_.load(); ++i)
                std::this_thread::sleep_for(10ms);
            if (!stop_.load())
                (void)!::write(wr_, "zzzzzzzzzzzzzzzz", 16);
        });
    }
    ~PipeWithRescue() {
        stop_.store(true);
        rescue_.join();
        ::close(wr_);
        if (rd_ >= 0)
            ::close(rd_);
    }
    PipeReader reader() { return PipeReader(ringo::Fd(std::exchange(rd_, -1))); }
    void write(const char* s) { ASSERT_EQ(::write(wr_, s, std::strlen(s)), static_cast<ssize_t>(std::strlen(s))); }
    void stop_rescue() { stop_.store(true); }
    int write_fd() const { return wr_; }

private:
    int rd_ = -1, wr_ = -1;
    std::atomic<bool> stop_{false};
    std::thread rescue_;
};

// What is left in the pipe (non-blocking).
std::string left_in(int rd) {
    std::string out;
    char buf[64];
    int fl = ::fcntl(rd, F_GETFL);
    ::fcntl(rd, F_SETFL, fl | O_NONBLOCK);
    for (ssize_t n; (n = ::read(rd, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    ::fcntl(rd, F_SETFL, fl);
    return out;
}

// After a read_exact interrupted in its second read: what the first read brought is in
// `buf`, nothing is in flight, and what is written next stays in the pipe (no other read
// started).
void expect_interrupted_after(PipeWithRescue& p, ringo::Runtime& rt, int rd, const char* buf, std::string_view first) {
    EXPECT_EQ(std::string_view(buf, first.size()), first);
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    p.write("later");
    EXPECT_EQ(left_in(rd), "later");
}

// The task is cancelled while its second read waits (the first brought 3 of 10 bytes): the
// await yields ECANCELED, the 3 bytes are in the buffer, no third read starts, and what is
// written afterwards stays in the pipe.
// (Named coroutines rather than coroutine lambdas: Clang 14 mishandles some of those.)
Task<std::error_code> read_ten(PipeReader& r, char* buf) { co_return (co_await r.read_exact(buf, 10)).error(); }

Task<std::error_code> cancel_after_abc(PipeReader& r, char* buf, PipeWithRescue& p) {
    auto h = ringo::spawn(read_ten(r, buf));
    co_await ringo::yield(); // the reader has prepared its first read
    p.write("abc");
    co_await ringo::sleep_for(20ms); // the first read completed, the second is in flight
    h.cancel();
    co_return co_await h;
}

TEST(ExactAwait, CancelAfterAShortStepStartsNoOtherStep) {
    PipeWithRescue p;
    PipeReader r = p.reader();
    int rd = r.fd().get();
    char buf[10] = {};
    ringo::Runtime rt;
    std::error_code e = rt.block_on(cancel_after_abc(r, buf, p));
    p.stop_rescue();
    EXPECT_EQ(e, std::errc::operation_canceled) << e.message();
    expect_interrupted_after(p, rt, rd, buf, "abc");
}

// The task is cancelled by a task resumed from the same batch of completions, just before its
// own second read's CQE (2 more bytes, still short) is routed: the second completed normally,
// and no third read starts or stays (again_after sees the cancellation; were it not to, the
// ASYNC_CANCEL queued after the third read's SQE would still end it).
Task<void> cancel_when_readable(PipeReader& r, ringo::JoinHandle<std::error_code>* victim) {
    char c;
    Result<std::size_t> n = co_await r.read(&c, 1);
    EXPECT_EQ(n.value_or(0), 1u);
    victim->cancel();
}

Task<std::error_code> cancelled_in_the_same_batch(PipeReader& r, PipeReader& other, int other_wr, char* buf,
                                                  PipeWithRescue& p) {
    auto h = ringo::spawn(read_ten(r, buf));
    auto canceller = ringo::spawn(cancel_when_readable(other, &h));
    co_await ringo::yield();
    p.write("abc");
    co_await ringo::sleep_for(20ms); // the second read is in flight; so is the canceller's
    // Both become readable before the loop next looks: the canceller's CQE first.
    EXPECT_EQ(::write(other_wr, "x", 1), 1);
    p.write("de");
    std::error_code e = co_await h;
    co_await canceller;
    co_return e;
}

TEST(ExactAwait, CancelledJustBeforeItsShortStepIsRoutedStartsNoOtherStep) {
    PipeWithRescue p, q;
    PipeReader r = p.reader(), other = q.reader();
    int rd = r.fd().get();
    char buf[10] = {};
    ringo::Runtime rt;
    std::error_code e = rt.block_on(cancelled_in_the_same_batch(r, other, q.write_fd(), buf, p));
    p.stop_rescue();
    q.stop_rescue();
    EXPECT_EQ(e, std::errc::operation_canceled) << e.message();
    expect_interrupted_after(p, rt, rd, buf, "abcde");
}

Task<ringo::Timed<Result<void>>> read_ten_within(PipeReader& r, char* buf, std::chrono::milliseconds d) {
    co_return co_await ringo::with_timeout(r.read_exact(buf, 10), d);
}

// with_timeout on read_exact (the awaitable moved into its frame): the deadline passes
// while the second read waits; it says so, the result is ECANCELED, and nothing more is read.
TEST(ExactAwait, TimeoutAfterAShortStep) {
    PipeWithRescue p;
    PipeReader r = p.reader();
    int rd = r.fd().get();
    char buf[10] = {};
    p.write("abcd"); // the first read takes these at once
    ringo::Runtime rt;
    auto t = rt.block_on(read_ten_within(r, buf, 30ms));
    p.stop_rescue();
    EXPECT_TRUE(t.timed_out());
    EXPECT_EQ(t->error(), std::errc::operation_canceled) << t->message();
    expect_interrupted_after(p, rt, rd, buf, "abcd");
}

Task<void> read_ten_owning(PipeReader r) {
    char buf[10];
    Result<void> x = co_await r.read_exact(buf, sizeof buf);
    ADD_FAILURE() << "resumed during shutdown: " << x.message();
}

Task<void> leave_a_reader_after_abc(PipeReader r, PipeWithRescue& p) {
    ringo::spawn(read_ten_owning(std::move(r))).detach();
    co_await ringo::yield();
    p.write("abc");
    co_await ringo::sleep_for(20ms); // the second read is in flight
}

// A runtime destroyed while a detached task's second read waits: the read is cancelled, no
// other starts, the task's frame (and its reader) goes, and nothing hangs.
TEST(ExactAwait, ShutdownAfterAShortStep) {
    PipeWithRescue p;
    int fds = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(leave_a_reader_after_abc(p.reader(), p));
    }
    p.stop_rescue();
    EXPECT_EQ(open_fds(), fds - 1); // the read end went with the task's frame
}

Task<std::string> read_five_moved(PipeReader& r) {
    char buf[5];
    auto a = r.read_exact(buf, sizeof buf);
    auto b = std::move(a);
    Result<void> x = co_await b;
    EXPECT_TRUE(x) << x.message();
    Result<void> none = co_await r.read_exact(buf, 0);
    EXPECT_TRUE(none);
    co_return std::string(buf, sizeof buf);
}

// The awaitable can be moved before it is awaited; an empty one completes at once.
TEST(ExactAwait, MovedBeforeTheAwaitAndEmpty) {
    PipeWithRescue p;
    PipeReader r = p.reader();
    p.write("hello");
    ringo::Runtime rt;
    std::string got = rt.block_on(read_five_moved(r));
    p.stop_rescue();
    EXPECT_EQ(got, "hello");
}

// 8 MiB through a Unix stream socket whose send buffer is small, read by a plain thread:
// write_all sends many times (short sends), alone (each step waited for in await_suspend)
// and beside another task (each next step sent from the completion in the loop). Every byte
// arrives, in order.
Task<void> tick_until(const bool& done) {
    while (!done)
        co_await ringo::sleep_for(1ms);
}

Task<Result<void>> send_all_of(int fd, const std::vector<unsigned char>& data, bool alone) {
    auto s = ringo::net::UnixStream(ringo::Fd(fd));
    bool done = false;
    std::optional<ringo::JoinHandle<void>> other;
    if (!alone)
        other.emplace(ringo::spawn(tick_until(done)));
    Result<void> r = co_await s.write_all(data.data(), data.size());
    done = true;
    if (other)
        co_await *other;
    co_return r;
}

class ExactAwaitSend : public ::testing::TestWithParam<bool> {};

TEST_P(ExactAwaitSend, AllOfALargeBufferAfterShortSends) {
    const bool alone = GetParam();
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    int small = 16384;
    ASSERT_EQ(::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    std::vector<unsigned char> data(8u << 20);
    for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
    std::vector<unsigned char> got;
    std::thread reader([&] {
        unsigned char buf[65536];
        for (ssize_t n; (n = ::read(sv[1], buf, sizeof buf)) > 0;)
            got.insert(got.end(), buf, buf + n);
    });
    ringo::Runtime rt;
    Result<void> w = rt.block_on(send_all_of(sv[0], data, alone));
    reader.join();
    ::close(sv[1]);
    EXPECT_TRUE(w) << w.message();
    EXPECT_TRUE(got == data) << "received " << got.size() << " of " << data.size() << " bytes";
    ringo::RuntimeStats st = rt.stats();
    EXPECT_EQ(st.ops_in_flight, 0u);
    if (alone)
        EXPECT_GE(st.completed_alone, 2u); // several sends, each waited for in await_suspend
    else
        EXPECT_EQ(st.completed_alone, 0u); // the first send found the other task ready: every
                                           // later one went from the completion in the loop
}

INSTANTIATE_TEST_SUITE_P(AloneAndNot, ExactAwaitSend, ::testing::Bool(),
                         [](const auto& i) { return i.param ? std::string("Alone") : std::string("BesideATask"); });

} // namespace
