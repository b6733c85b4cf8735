// io/buffered.hpp: BufReader and BufWriter. Lines split across reads, CRLF, a last line
// without "\n", the end of the stream in the middle, the line limit, reads and writes of at
// least the capacity going straight through, the order of flushed bytes, errors of the stream
// underneath, a cancelled read, and no frame for calls the buffer answers. Over pipes and over
// a recording stream that shows each write the buffer makes.
#include <ringo/io/buffered.hpp>
#include <ringo/io/pipe.hpp>
#include <ringo/net/unix.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <coroutine>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "alloc_counter.hpp"
#include "helpers.hpp"

using ringo::BufReader;
using ringo::BufReaderOptions;
using ringo::BufWriter;
using ringo::IoError;
using ringo::PipeEnds;
using ringo::PipeReader;
using ringo::PipeWriter;
using ringo::Result;
using ringo::Task;

namespace {

template <class T>
T run(Task<T> t) {
    ringo::Runtime rt;
    return rt.block_on(std::move(t));
}

// A pipe already holding `data`, its write end closed: the reader sees `data`, then the end.
Task<PipeReader> pipe_holding(std::string data) {
    Result<PipeEnds> p = co_await ringo::pipe();
    EXPECT_TRUE(p.ok());
    Result<void> w = co_await p->writer.write_all(std::string_view(data));
    EXPECT_TRUE(w.ok());
    co_return std::move(p->reader);
}

// Every line read_line gives until the end of the stream; "!<message>" for an error.
Task<std::vector<std::string>> lines_of(std::string data, BufReaderOptions o) {
    PipeReader pr = co_await pipe_holding(std::move(data));
    BufReader r(pr, o);
    std::vector<std::string> got;
    std::string line;
    for (;;) {
        Result<bool> more = co_await r.read_line(line);
        if (!more) {
            got.push_back("!" + more.message());
            break;
        }
        if (!*more) {
            EXPECT_TRUE(line.empty());
            break;
        }
        got.push_back(line);
    }
    co_return got;
}

using Lines = std::vector<std::string>;

TEST(BufReader, LinesSplitAcrossReads) {
    // A 4-byte buffer: every line but the empty one spans several reads of the pipe.
    Lines got = run(lines_of("alpha\nbe\n\ngamma-delta\n", {.capacity = 4}));
    EXPECT_EQ(got, (Lines{"alpha", "be", "", "gamma-delta"}));
    Lines big = run(lines_of("alpha\nbe\n\ngamma-delta\n", {}));
    EXPECT_EQ(big, got);
}

TEST(BufReader, CrLfAndLfBothEndALine) {
    EXPECT_EQ(run(lines_of("one\r\ntwo\nthree\r\n\r\n", {.capacity = 3})), (Lines{"one", "two", "three", ""}));
    // A '\r' that is not before a '\n' stays.
    EXPECT_EQ(run(lines_of("a\rb\r\n", {})), (Lines{"a\rb"}));
}

TEST(BufReader, ALastLineWithoutNewline) {
    EXPECT_EQ(run(lines_of("first\nlast", {.capacity = 4})), (Lines{"first", "last"}));
    EXPECT_EQ(run(lines_of("x\r", {})), (Lines{"x\r"})); // unterminated: nothing to strip
    EXPECT_EQ(run(lines_of("", {})), (Lines{}));
}

TEST(BufReader, ALineOverTheLimitIsAnError) {
    // max_line 8: a line of 8 bytes is fine, 16 is not; the error leaves the rest for the next call.
    Lines got = run(lines_of("12345678\n0123456789abcdef\nok\n", {.capacity = 5, .max_line = 8}));
    EXPECT_EQ(got, (Lines{"12345678", "!line longer than the limit"}));
    got = run(lines_of("0123456789abcdef\nok\n", {.capacity = 64, .max_line = 8}));
    EXPECT_EQ(got, (Lines{"!line longer than the limit"}));
}

Task<void> limit_then_rest() {
    PipeReader pr = co_await pipe_holding("0123456789abcdef\nok\n");
    BufReader r(pr, {.capacity = 6, .max_line = 8});
    std::string line;
    Result<bool> a = co_await r.read_line(line);
    EXPECT_EQ(a.error(), IoError::line_too_long);
    EXPECT_EQ(a.error(), std::errc::message_size);
    EXPECT_EQ(line, "01234567"); // the first max_line bytes
    Result<bool> b = co_await r.read_line(line);
    EXPECT_TRUE(b.value_or(false));
    EXPECT_EQ(line, "89abcdef"); // the rest of that line
    Result<bool> c = co_await r.read_line(line);
    EXPECT_TRUE(c.value_or(false));
    EXPECT_EQ(line, "ok");
}

TEST(BufReader, AfterTheLimitTheRestOfTheLineFollows) { run(limit_then_rest()); }

Task<void> read_until_keeps_the_delimiter() {
    PipeReader pr = co_await pipe_holding("k1=v1;k2=v2;tail");
    BufReader r(pr, {.capacity = 4});
    std::string out;
    Result<std::size_t> a = co_await r.read_until(';', out);
    EXPECT_EQ(a.value_or(0), 6u);
    Result<std::size_t> b = co_await r.read_until(';', out); // appends
    EXPECT_EQ(b.value_or(0), 6u);
    EXPECT_EQ(out, "k1=v1;k2=v2;");
    out.clear();
    Result<std::size_t> c = co_await r.read_until(';', out); // the end of the stream in the middle
    EXPECT_EQ(c.value_or(0), 4u);
    EXPECT_EQ(out, "tail");
    Result<std::size_t> d = co_await r.read_until(';', out);
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d.value_or(9), 0u);
}

TEST(BufReader, ReadUntilAppendsWithTheDelimiter) { run(read_until_keeps_the_delimiter()); }

Task<void> exact_and_eof() {
    PipeReader pr = co_await pipe_holding("header" + std::string(40, 'x') + "tail");
    BufReader r(pr, {.capacity = 8});
    char head[6];
    Result<void> h = co_await r.read_exact(head, sizeof head);
    EXPECT_TRUE(h.ok());
    EXPECT_EQ(std::string(head, 6), "header");
    char body[40];
    Result<void> b = co_await r.read_exact(body, sizeof body); // larger than the buffer: straight through
    EXPECT_TRUE(b.ok()) << b.message();
    EXPECT_EQ(std::string(body, 40), std::string(40, 'x'));
    char rest[10] = {};
    Result<void> t = co_await r.read_exact(rest, sizeof rest); // only 4 bytes are left
    EXPECT_EQ(t.error(), IoError::unexpected_eof);
    EXPECT_EQ(std::string(rest, 4), "tail");
}

TEST(BufReader, ReadExactAndTheEndInTheMiddle) { run(exact_and_eof()); }

Task<void> reads_small_and_large() {
    PipeReader pr = co_await pipe_holding("abcdefghijklmnopqrstuvwxyz");
    BufReader r(pr, {.capacity = 8});
    char c[3];
    Result<std::size_t> a = co_await r.read(c, 3);
    EXPECT_EQ(a.value_or(0), 3u);
    EXPECT_EQ(r.buffered().size(), 5u); // one read of 8 into the buffer
    char big[32];
    Result<std::size_t> b = co_await r.read(big, sizeof big); // the buffer's 5 first
    EXPECT_EQ(b.value_or(0), 5u);
    EXPECT_EQ(std::string(big, 5), "defgh");
    Result<std::size_t> d = co_await r.read(big, sizeof big); // empty buffer, a large read: no copy
    EXPECT_EQ(d.value_or(0), 18u);
    EXPECT_EQ(std::string(big, 18), "ijklmnopqrstuvwxyz");
    EXPECT_TRUE(r.buffered().empty());
    Result<std::size_t> e = co_await r.read(big, sizeof big);
    EXPECT_EQ(e.value_or(9), 0u);
}

TEST(BufReader, SmallReadsComeFromTheBufferLargeOnesGoStraight) { run(reads_small_and_large()); }

Task<void> stream_errors() {
    BufReader r(PipeReader{}); // owns a reader with no descriptor
    std::string line;
    Result<bool> a = co_await r.read_line(line);
    EXPECT_EQ(a.error(), std::errc::bad_file_descriptor);
    char c;
    Result<std::size_t> b = co_await r.read(&c, 1);
    EXPECT_EQ(b.error(), std::errc::bad_file_descriptor);
}

TEST(BufReader, TheStreamsErrorsComeThrough) { run(stream_errors()); }

Task<void> read_line_forever(BufReader<PipeReader&>& r, std::error_code* got) {
    std::string line;
    Result<bool> l = co_await r.read_line(line);
    *got = l.error();
}

Task<void> cancel_a_waiting_line() {
    Result<PipeEnds> p = co_await ringo::pipe();
    BufReader r(p->reader);
    std::error_code got;
    auto h = ringo::spawn(read_line_forever(r, &got));
    co_await ringo::yield();
    co_await ringo::yield();
    h.cancel();
    co_await h;
    EXPECT_EQ(got, std::errc::operation_canceled);
}

TEST(BufReader, ACancelledReadLineLeavesNothingOpen) {
    int before = ringo_test::open_fds();
    run(cancel_a_waiting_line());
    EXPECT_EQ(ringo_test::open_fds(), before);
}

// Lines that are already in the buffer cost no frame: 100 lines, one read of the pipe.
Task<std::uint64_t> frames_for_buffered_lines() {
    std::string data;
    for (int i = 0; i < 100; ++i)
        data += "line " + std::to_string(i) + "\n";
    PipeReader pr = co_await pipe_holding(data);
    BufReader r(pr, {.capacity = 64 * 1024});
    std::string line;
    Result<bool> first = co_await r.read_line(line); // reads the pipe: one frame
    EXPECT_EQ(line, "line 0");
    EXPECT_TRUE(first.ok());
    std::uint64_t f0 = ringo::detail::t_frames_allocated;
    for (int i = 1; i < 100; ++i) {
        Result<bool> l = co_await r.read_line(line);
        EXPECT_TRUE(l.value_or(false));
        EXPECT_EQ(line, "line " + std::to_string(i));
    }
    co_return ringo::detail::t_frames_allocated - f0;
}

TEST(BufReader, LinesInTheBufferCostNoFrame) { EXPECT_EQ(run(frames_for_buffered_lines()), 0u); }

// --- BufWriter ------------------------------------------------------------------------------

// A stream that records every write it is given and takes at most `max_take` bytes of each.
struct Recorder {
    std::vector<std::string> writes;
    std::size_t max_take = SIZE_MAX;
    int fail_after = -1; // this many writes succeed, then EPIPE
    struct Ready {
        Result<std::size_t> r;
        bool await_ready() const noexcept { return true; }
        void await_suspend(std::coroutine_handle<>) const noexcept {}
        Result<std::size_t> await_resume() { return r; }
    };
    Ready write(const void* p, std::size_t len) {
        if (fail_after == 0)
            return {ringo::errno_code(-EPIPE)};
        if (fail_after > 0)
            --fail_after;
        std::size_t n = std::min(len, max_take);
        writes.emplace_back(static_cast<const char*>(p), n);
        return {n};
    }
};

Task<void> coalesces_small_writes(Recorder& rec) {
    BufWriter w(rec, {.capacity = 16});
    for (std::string_view s : {"ab", "cd", "ef"}) {
        Result<void> r = co_await w.write_all(s);
        EXPECT_TRUE(r.ok());
    }
    EXPECT_TRUE(rec.writes.empty()); // all in the buffer
    EXPECT_EQ(w.buffered(), 6u);
    Result<std::size_t> n = co_await w.write(std::string_view("0123456789")); // 16 exactly: still fits
    EXPECT_EQ(n.value_or(0), 10u);
    EXPECT_TRUE(rec.writes.empty());
    Result<void> x = co_await w.write_all(std::string_view("X")); // full: written out, then buffered
    EXPECT_TRUE(x.ok());
    EXPECT_EQ(rec.writes, (Lines{"abcdef0123456789"}));
    Result<void> f = co_await w.flush();
    EXPECT_TRUE(f.ok());
    EXPECT_EQ(rec.writes, (Lines{"abcdef0123456789", "X"}));
    Result<void> again = co_await w.flush(); // nothing buffered: nothing written
    EXPECT_TRUE(again.ok());
    EXPECT_EQ(rec.writes.size(), 2u);
}

TEST(BufWriter, CoalescesSmallWrites) {
    Recorder rec;
    run(coalesces_small_writes(rec));
}

Task<void> large_writes_go_straight(Recorder& rec) {
    BufWriter w(rec, {.capacity = 8});
    Result<void> a = co_await w.write_all(std::string_view("xy"));
    EXPECT_TRUE(a.ok());
    std::string big(20, 'B');
    Result<void> b = co_await w.write_all(std::string_view(big)); // the buffered bytes first, then big itself
    EXPECT_TRUE(b.ok());
    EXPECT_EQ(rec.writes, (Lines{"xy", big}));
    EXPECT_EQ(w.buffered(), 0u);
    Result<void> c = co_await w.write_all(std::string_view("z"));
    EXPECT_TRUE(c.ok());
    rec.max_take = 3;                                                         // short writes from here on
    Result<std::size_t> d = co_await w.write(std::string_view("0123456789")); // one write, short
    EXPECT_EQ(d.value_or(0), 3u);
    EXPECT_EQ(rec.writes, (Lines{"xy", big, "z", "012"}));
    Result<void> e = co_await w.write_all(std::string_view("ABCDEFGHIJ")); // looped until all is taken
    EXPECT_TRUE(e.ok());
    EXPECT_EQ(rec.writes, (Lines{"xy", big, "z", "012", "ABC", "DEF", "GHI", "J"}));
}

TEST(BufWriter, LargeWritesBypassTheBufferInOrder) {
    Recorder rec;
    run(large_writes_go_straight(rec));
}

Task<void> errors_keep_the_rest(Recorder& rec) {
    BufWriter w(rec, {.capacity = 8});
    Result<void> a = co_await w.write_all(std::string_view("abcdef"));
    EXPECT_TRUE(a.ok());
    rec.max_take = 2;
    rec.fail_after = 1; // one write of 2 bytes, then EPIPE
    Result<void> f = co_await w.flush();
    EXPECT_EQ(f.error(), std::errc::broken_pipe);
    EXPECT_EQ(w.buffered(), 4u); // "cdef" is kept, in order
    rec.fail_after = -1;
    rec.max_take = SIZE_MAX;
    Result<void> g = co_await w.flush();
    EXPECT_TRUE(g.ok());
    EXPECT_EQ(rec.writes, (Lines{"ab", "cdef"}));
    rec.max_take = 0; // a stream that takes nothing
    Result<void> h = co_await w.write_all(std::string_view("0123456789"));
    EXPECT_EQ(h.error(), IoError::write_zero);
}

TEST(BufWriter, AFailedFlushKeepsWhatWasNotWritten) {
    Recorder rec;
    run(errors_keep_the_rest(rec));
}

// Over a real pipe: 20000 lines written through a BufWriter and read back with a BufReader, the
// two ends in two tasks (the lines are more than a pipe holds).
Task<bool> write_lines(PipeWriter& pw, int count) {
    BufWriter w(pw, {.capacity = 4096});
    for (int i = 0; i < count; ++i) {
        std::string s = "line " + std::to_string(i) + (i % 2 ? "\r\n" : "\n");
        Result<void> r = co_await w.write_all(std::string_view(s));
        if (!r)
            co_return false;
    }
    Result<void> f = co_await w.flush();
    Result<void> c = co_await pw.close();
    co_return f.ok() && c.ok();
}

Task<int> lines_through_a_pipe() {
    Result<PipeEnds> p = co_await ringo::pipe();
    constexpr int count = 20000;
    auto writer = ringo::spawn(write_lines(p->writer, count));
    BufReader r(std::move(p->reader), {.capacity = 1000});
    std::string line;
    int n = 0;
    for (;;) {
        Result<bool> l = co_await r.read_line(line);
        if (!l || !*l)
            break;
        if (line != "line " + std::to_string(n))
            break;
        ++n;
    }
    bool wrote = co_await writer;
    EXPECT_TRUE(wrote);
    co_return n;
}

TEST(Buffered, TwentyThousandLinesThroughAPipe) { EXPECT_EQ(run(lines_through_a_pipe()), 20000); }

// Over a socketpair (net::UnixStream): the calls the buffers answer allocate nothing and take
// no frame; calls that read or write take one pooled frame each and, once the pool and the
// string are warm, no heap allocation.
struct Counts {
    long quick_heap = -1, loop_heap = -1;
    std::uint64_t quick_frames = 1, loop_frames = 0;
};

Task<Counts> count_allocations() {
    Counts c;
    auto p = ringo::net::UnixStream::pair();
    EXPECT_TRUE(p.ok());
    BufWriter w(p->first, {.capacity = 64 * 1024});
    BufReader r(p->second, {.capacity = 64 * 1024});
    std::string line;
    const std::string_view text = "a line of some text\n";
    Result<void> warm = co_await w.write_all(text);
    warm = co_await w.flush();
    Result<bool> got = co_await r.read_line(line); // the string gets its capacity here
    EXPECT_TRUE(warm.ok() && got.ok());
    long h0 = g_allocs.load();
    std::uint64_t f0 = ringo::detail::t_frames_allocated;
    for (int i = 0; i < 200; ++i) { // 200 lines into the buffer: copies only
        Result<void> x = co_await w.write_all(text);
        EXPECT_TRUE(x.ok());
    }
    c.quick_heap = g_allocs.load() - h0;
    c.quick_frames = ringo::detail::t_frames_allocated - f0;
    Result<void> f = co_await w.flush(); // one write of 200 lines
    got = co_await r.read_line(line);    // one read of them
    EXPECT_TRUE(f.ok() && got.ok());
    h0 = g_allocs.load();
    f0 = ringo::detail::t_frames_allocated;
    for (int i = 1; i < 200; ++i) { // the other 199 lines from the buffer
        Result<bool> l = co_await r.read_line(line);
        EXPECT_TRUE(l.value_or(false));
    }
    c.quick_heap += g_allocs.load() - h0;
    c.quick_frames += ringo::detail::t_frames_allocated - f0;
    EXPECT_EQ(line, "a line of some text");
    h0 = g_allocs.load();
    f0 = ringo::detail::t_frames_allocated;
    for (int i = 0; i < 200; ++i) { // each round a flush and a read_line that must read
        Result<void> x = co_await w.write_all(text);
        Result<void> y = co_await w.flush();
        Result<bool> l = co_await r.read_line(line);
        EXPECT_TRUE(x.ok() && y.ok() && l.value_or(false));
    }
    c.loop_heap = g_allocs.load() - h0;
    c.loop_frames = ringo::detail::t_frames_allocated - f0;
    co_return c;
}

TEST(Buffered, AllocationsPerCall) {
#ifdef RINGO_TEST_NO_NEW_COUNT
    GTEST_SKIP() << "operator new is not counted under TSan";
#endif
    Counts c = run(count_allocations());
    EXPECT_EQ(c.quick_heap, 0);
    EXPECT_EQ(c.quick_frames, 0u);
    EXPECT_EQ(c.loop_frames, 400u); // flush and read_line: one pooled frame each
    if (ringo::detail::frame_pool_enabled)
        EXPECT_LE(c.loop_heap, 1); // Clang may take the pool's first chunk of a size class here
    else
        EXPECT_EQ(c.loop_heap, 400);
}

// --- docs/io.md, "Buffered reading and writing": the example as it stands there ----------
namespace docs_example {
// Echoes lines back in upper case until the peer ends the stream.
ringo::Task<ringo::Result<void>> shout(ringo::PipeReader& in, ringo::PipeWriter& out) {
    ringo::BufReader reader(in, {.max_line = 1024}); // a longer line is an error
    ringo::BufWriter writer(out);
    std::string line; // reused: no allocation per line
    for (;;) {
        ringo::Result<bool> got = co_await reader.read_line(line);
        if (!got)
            co_return got.error(); // the stream's error, or IoError::line_too_long
        if (!*got)
            break; // the end of the stream
        for (char& c : line)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        line += '\n';
        ringo::Result<void> w = co_await writer.write_all(std::string_view(line));
        if (!w)
            co_return w.error();
    }
    co_return co_await writer.flush(); // buffered bytes are not written by the destructor
}
} // namespace docs_example

Task<std::string> run_shout() {
    PipeReader in = co_await pipe_holding("hello\r\nbuffered world\n");
    Result<PipeEnds> out = co_await ringo::pipe();
    Result<void> s = co_await docs_example::shout(in, out->writer);
    EXPECT_TRUE(s.ok()) << s.message();
    Result<void> c = co_await out->writer.close();
    EXPECT_TRUE(c.ok());
    char buf[64];
    Result<std::size_t> n = co_await out->reader.read(buf, sizeof buf);
    co_return std::string(buf, n.value_or(0));
}

TEST(BufferedDocs, ExampleRuns) { EXPECT_EQ(run(run_shout()), "HELLO\nBUFFERED WORLD\n"); }

} // namespace
