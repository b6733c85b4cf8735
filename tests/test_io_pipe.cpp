// io/pipe.hpp: ringo::pipe(), PipeReader and PipeWriter. A round trip (small and 1 MiB through
// a 64 KiB pipe), the end of stream once the writer closes, EPIPE and no SIGPIPE once the
// reader closes, a cancelled read (no descriptor stays open), pipe2(2) when the probe lacks
// IORING_OP_PIPE, and the standard streams as copies of their descriptors.
#include <ringo/io/pipe.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;
using ringo::PipeEnds;
using ringo::PipeReader;
using ringo::PipeWriter;
using ringo::Result;
using ringo::Task;

namespace {

using ringo_test::open_fds;

template <class T>
T run(Task<T> t) {
    ringo::Runtime rt;
    return rt.block_on(std::move(t));
}

bool is_open(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

Task<std::string> small_round_trip() {
    Result<PipeEnds> p = co_await ringo::pipe();
    if (!p)
        co_return "pipe: " + p.message();
    auto [reader, writer] = std::move(*p);
    EXPECT_EQ(::fcntl(reader.fd().get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    EXPECT_EQ(::fcntl(writer.fd().get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    EXPECT_EQ(::fcntl(reader.fd().get(), F_GETFL) & O_NONBLOCK, 0); // fit for a child process
    Result<std::size_t> w = co_await writer.write(std::string_view("hello"));
    EXPECT_EQ(w.value_or(0), 5u);
    Result<void> wa = co_await writer.write_all(std::string_view(", pipe"));
    EXPECT_TRUE(wa.ok()) << wa.message();
    char buf[11];
    Result<void> r = co_await reader.read_exact(buf, sizeof buf);
    EXPECT_TRUE(r.ok()) << r.message();
    co_return std::string(buf, sizeof buf);
}

TEST(Pipe, RoundTrip) { EXPECT_EQ(run(small_round_trip()), "hello, pipe"); }

Task<bool> write_everything(PipeWriter& w, const std::vector<std::byte>& data) {
    Result<void> r = co_await w.write_all(data);
    Result<void> c = co_await w.close();
    co_return r.ok() && c.ok();
}

Task<bool> one_mib_through_a_pipe() {
    Result<PipeEnds> p = co_await ringo::pipe();
    EXPECT_TRUE(p.ok());
    constexpr std::size_t size = 1 << 20; // 16 times the pipe's 64 KiB: the writer waits for the reader
    std::vector<std::byte> out(size), back(size);
    for (std::size_t i = 0; i < size; ++i)
        out[i] = static_cast<std::byte>((i * 131) ^ (i >> 11));
    auto writer = ringo::spawn(write_everything(p->writer, out));
    Result<void> r = co_await p->reader.read_exact(back);
    EXPECT_TRUE(r.ok()) << r.message();
    char extra;
    Result<std::size_t> eof = co_await p->reader.read(&extra, 1);
    EXPECT_EQ(eof.value_or(99), 0u);
    bool wrote = co_await writer;
    EXPECT_TRUE(wrote);
    co_return out == back;
}

TEST(Pipe, OneMiBRoundTrip) { EXPECT_TRUE(run(one_mib_through_a_pipe())); }

Task<void> eof_after_the_writer_closes() {
    Result<PipeEnds> p = co_await ringo::pipe();
    EXPECT_TRUE(p.ok());
    Result<void> w = co_await p->writer.write_all(std::string("abc")); // a temporary lives through the await
    EXPECT_TRUE(w.ok());
    Result<void> c = co_await p->writer.close();
    EXPECT_TRUE(c.ok());
    EXPECT_FALSE(p->writer.is_open());
    char buf[8] = {};
    Result<void> r = co_await p->reader.read_exact(buf, sizeof buf);
    EXPECT_EQ(r.error(), ringo::IoError::unexpected_eof);
    EXPECT_EQ(std::string(buf, 3), "abc");
    Result<std::size_t> n = co_await p->reader.read(buf, sizeof buf);
    EXPECT_TRUE(n.ok());
    EXPECT_EQ(n.value_or(99), 0u);
    Result<void> again = co_await p->writer.close();
    EXPECT_EQ(again.error(), std::errc::bad_file_descriptor);
}

TEST(Pipe, EndOfStreamAfterTheWriterCloses) { run(eof_after_the_writer_closes()); }

Task<void> epipe_after_the_reader_closes() {
    Result<PipeEnds> p = co_await ringo::pipe();
    EXPECT_TRUE(p.ok());
    Result<void> c = co_await p->reader.close();
    EXPECT_TRUE(c.ok());
    Result<std::size_t> w = co_await p->writer.write(std::string_view("x"));
    EXPECT_EQ(w.error(), std::errc::broken_pipe) << w.message();
    std::vector<std::byte> big(256 * 1024);
    Result<void> wa = co_await p->writer.write_all(big);
    EXPECT_EQ(wa.error(), std::errc::broken_pipe) << wa.message();
}

// SIGPIPE at its default would kill the process: surviving is part of the test.
TEST(Pipe, BrokenPipeIsAnErrorNotASignal) {
    struct sigaction old {};
    ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &old), 0);
    ::signal(SIGPIPE, SIG_DFL);
    run(epipe_after_the_reader_closes());
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, SIGPIPE));
    ::sigaction(SIGPIPE, &old, nullptr);
}

Task<void> read_forever(PipeReader& r, bool* started, std::error_code* got) {
    char c;
    *started = true;
    Result<std::size_t> n = co_await r.read(&c, 1); // nothing ever comes
    *got = n.error();
}

Task<void> cancel_a_blocked_read() {
    Result<PipeEnds> p = co_await ringo::pipe();
    EXPECT_TRUE(p.ok());
    bool started = false;
    std::error_code got;
    auto h = ringo::spawn(read_forever(p->reader, &started, &got));
    for (int spins = 0; !started && spins < 1000; ++spins)
        co_await ringo::yield();
    co_await ringo::yield();
    h.cancel();
    co_await h;
    EXPECT_EQ(got, std::errc::operation_canceled);
    // The pipe still works after the cancelled read.
    Result<void> w = co_await p->writer.write_all(std::string_view("z"));
    EXPECT_TRUE(w.ok());
    char c = 0;
    Result<void> r = co_await p->reader.read_exact(&c, 1);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(c, 'z');
}

Task<void> cancel_blocked_reads() {
    for (int i = 0; i < 4; ++i)
        co_await cancel_a_blocked_read();
}

TEST(Pipe, CancelledReadLeavesNoDescriptorOpen) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(cancel_blocked_reads());
    }
    EXPECT_EQ(open_fds(), before);
}

// A task that is dropped while its read waits: the runtime's shutdown destroys the frame,
// and with it both ends.
Task<void> hold_a_pipe_and_wait() {
    Result<PipeEnds> p = co_await ringo::pipe();
    char c;
    Result<std::size_t> n = co_await p->reader.read(&c, 1);
    (void)n;
}

Task<void> spawn_and_leave() {
    ringo::spawn(hold_a_pipe_and_wait()).detach();
    co_await ringo::yield();
    co_await ringo::yield();
}

TEST(Pipe, RuntimeShutdownClosesAWaitingPipe) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(spawn_and_leave());
    }
    EXPECT_EQ(open_fds(), before);
}

TEST(Pipe, FallsBackToPipe2WithoutTheOpcode) {
    ringo::Runtime rt;
    rt.probe().set_supported(ringo::uring::compat::opcode::pipe, false);
    EXPECT_EQ(rt.block_on(small_round_trip()), "hello, pipe");
}

Task<void> cancelled_before_pipe(bool* refused) {
    co_await ringo::sleep_for(1h); // cancelled here
    Result<PipeEnds> p = co_await ringo::pipe();
    *refused = p.error() == std::errc::operation_canceled;
}

Task<void> cancel_after_a_round(Task<void> t) {
    auto h = ringo::spawn(std::move(t));
    co_await ringo::yield();
    h.cancel();
    co_await h;
}

TEST(Pipe, ACancelledTaskGetsNoPipe) {
    int before = open_fds();
    bool refused = false;
    run(cancel_after_a_round(cancelled_before_pipe(&refused)));
    EXPECT_TRUE(refused);
    EXPECT_EQ(open_fds(), before);
}

Task<std::string> through_copies(int rfd, int wfd) {
    Result<PipeReader> r = PipeReader::dup_of(rfd);
    Result<PipeWriter> w = PipeWriter::dup_of(wfd);
    EXPECT_TRUE(r.ok() && w.ok());
    EXPECT_NE(r->fd().get(), rfd);
    EXPECT_EQ(::fcntl(w->fd().get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    Result<void> wa = co_await w->write_all(std::string_view("dup"));
    EXPECT_TRUE(wa.ok());
    Result<void> c = co_await w->close(); // the original write end stays open
    EXPECT_TRUE(c.ok());
    char buf[3];
    Result<void> re = co_await r->read_exact(buf, sizeof buf);
    EXPECT_TRUE(re.ok());
    co_return std::string(buf, sizeof buf);
}

TEST(Pipe, WrapsACopyOfADescriptor) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    EXPECT_EQ(run(through_copies(p[0], p[1])), "dup");
    EXPECT_TRUE(is_open(p[0]));
    EXPECT_TRUE(is_open(p[1]));
    ::close(p[0]);
    ::close(p[1]);
    Result<PipeReader> bad = PipeReader::dup_of(-1);
    EXPECT_EQ(bad.error(), std::errc::bad_file_descriptor);
}

TEST(Pipe, StandardStreamsAreCopies) {
    Result<PipeWriter> out = ringo::stdout_writer();
    ASSERT_TRUE(out.ok()) << out.message();
    EXPECT_GT(out->fd().get(), 2);
    Result<PipeWriter> err = ringo::stderr_writer();
    EXPECT_TRUE(err.ok());
    Result<PipeReader> in = ringo::stdin_reader();
    if (is_open(STDIN_FILENO))
        EXPECT_TRUE(in.ok());
    else
        EXPECT_EQ(in.error(), std::errc::bad_file_descriptor);
    out = PipeWriter(); // closes the copy only
    EXPECT_TRUE(is_open(STDOUT_FILENO));
}

// --- docs/io.md, "Pipes": the example as it stands there ---------------------------------
namespace docs_example {
ringo::Task<ringo::Result<std::string>> through_a_pipe() {
    ringo::Result<ringo::PipeEnds> p = co_await ringo::pipe();
    if (!p)
        co_return p.error(); // EMFILE, ENFILE
    auto [reader, writer] = std::move(*p);
    ringo::Result<void> w = co_await writer.write_all(std::string_view("ping"));
    if (!w)
        co_return w.error();
    ringo::Result<void> c = co_await writer.close(); // the reader now meets the end of stream
    (void)c;
    std::string got(4, '\0');
    ringo::Result<void> r = co_await reader.read_exact(got.data(), got.size());
    if (!r)
        co_return r.error(); // IoError::unexpected_eof if it came short
    co_return got;
}
} // namespace docs_example

TEST(PipeDocs, ExampleRuns) { EXPECT_EQ(run(docs_example::through_a_pipe()).value_or("(error)"), "ping"); }

} // namespace
