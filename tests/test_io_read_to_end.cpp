// read_to_end and read_to_string (io/read_to_end.hpp) and the members that call them on
// PipeReader, net::UnixStream / TcpStream and BufReader: everything up to the end of the
// stream, appended; a BufReader's buffered bytes first; the limit; errors.
#include <ringo/io/buffered.hpp>
#include <ringo/io/pipe.hpp>
#include <ringo/io/read_to_end.hpp>
#include <ringo/net/unix.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "helpers.hpp"

using ringo::BufReader;
using ringo::IoError;
using ringo::PipeEnds;
using ringo::PipeReader;
using ringo::Result;
using ringo::Task;

namespace {

template <class T>
T run(Task<T> t) {
    ringo::Runtime rt;
    return rt.block_on(std::move(t));
}

// `n` bytes that differ from one position to the next (a lost or doubled chunk shows).
std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return s;
}

// A pipe already holding `data`, its write end closed.
Task<PipeReader> pipe_holding(std::string data) {
    Result<PipeEnds> p = co_await ringo::pipe();
    EXPECT_TRUE(p.ok());
    Result<void> w = co_await p->writer.write_all(std::string_view(data));
    EXPECT_TRUE(w.ok());
    co_return std::move(p->reader);
}

// Writes `data` into the pipe in pieces, then closes it (by going).
Task<void> write_then_close(ringo::PipeWriter w, std::string data) {
    for (std::size_t at = 0; at < data.size(); at += 10'000) {
        std::string_view piece = std::string_view(data).substr(at, 10'000);
        Result<void> r = co_await w.write_all(piece);
        EXPECT_TRUE(r.ok()) << r.message();
    }
}

TEST(ReadToEnd, APipeFarLargerThanItsCapacityComesWhole) {
    const std::string data = pattern(1'000'000); // 15 times a pipe's 64 KiB
    std::string got = run([](std::string d) -> Task<std::string> {
        Result<PipeEnds> p = co_await ringo::pipe();
        EXPECT_TRUE(p.ok());
        auto writer = ringo::spawn(write_then_close(std::move(p->writer), d));
        std::string out;
        Result<std::size_t> n = co_await p->reader.read_to_string(out);
        EXPECT_TRUE(n.ok()) << n.message();
        EXPECT_EQ(n.ok() ? *n : 0, d.size());
        co_await writer;
        co_return out;
    }(data));
    EXPECT_EQ(got.size(), data.size());
    EXPECT_TRUE(got == data);
}

TEST(ReadToEnd, AppendsToWhatTheBufferHolds) {
    std::string got = run([]() -> Task<std::string> {
        PipeReader r = co_await pipe_holding("def");
        std::string out = "abc";
        Result<std::size_t> n = co_await r.read_to_string(out);
        EXPECT_TRUE(n.ok());
        EXPECT_EQ(n.ok() ? *n : 99, 3u);
        co_return out;
    }());
    EXPECT_EQ(got, "abcdef");
}

TEST(ReadToEnd, AnEmptyStreamAppendsNothing) {
    run([]() -> Task<int> {
        PipeReader r = co_await pipe_holding("");
        std::vector<std::byte> out;
        Result<std::size_t> n = co_await r.read_to_end(out);
        EXPECT_TRUE(n.ok());
        EXPECT_EQ(n.ok() ? *n : 99, 0u);
        EXPECT_TRUE(out.empty());
        co_return 0;
    }());
}

TEST(ReadToEnd, MoreThanTheLimitIsTooLargeWithTheLimitAppended) {
    const std::string data = pattern(10'000);
    run([](std::string d) -> Task<int> {
        PipeReader r = co_await pipe_holding(d);
        std::vector<unsigned char> out;
        Result<std::size_t> n = co_await r.read_to_end(out, 4096);
        EXPECT_FALSE(n.ok());
        EXPECT_EQ(n.error(), make_error_code(IoError::too_large));
        EXPECT_EQ(n.error().default_error_condition(), std::errc::message_size);
        EXPECT_EQ(std::string(out.begin(), out.end()), d.substr(0, 4096));
        co_return 0;
    }(data));
}

TEST(ReadToEnd, ExactlyTheLimitIsNotTooLarge) {
    const std::string data = pattern(4096);
    std::string got = run([](std::string d) -> Task<std::string> {
        PipeReader r = co_await pipe_holding(d);
        std::string out;
        Result<std::size_t> n = co_await ringo::read_to_string(r, out, 4096);
        EXPECT_TRUE(n.ok()) << n.message();
        co_return out;
    }(data));
    EXPECT_EQ(got, data);
}

TEST(ReadToEnd, ABufReaderGivesItsBufferedBytesFirst) {
    std::string got = run([]() -> Task<std::string> {
        PipeReader pr = co_await pipe_holding("head\n" + pattern(20'000));
        BufReader in(pr, {.capacity = 64});
        std::string line;
        Result<bool> l = co_await in.read_line(line);
        EXPECT_TRUE(l.ok() && *l);
        EXPECT_EQ(line, "head");
        std::string rest;
        Result<std::size_t> n = co_await in.read_to_string(rest);
        EXPECT_TRUE(n.ok());
        EXPECT_EQ(n.ok() ? *n : 0, 20'000u);
        co_return rest;
    }());
    EXPECT_EQ(got, pattern(20'000));
}

TEST(ReadToEnd, AStreamSocketUntilThePeerShutsDown) {
    const std::string data = pattern(300'000);
    std::string got = run([](std::string d) -> Task<std::string> {
        auto p = ringo::net::UnixStream::pair();
        EXPECT_TRUE(p.ok());
        auto& [a, b] = *p;
        auto sender = ringo::spawn([](ringo::net::UnixStream& s, std::string_view what) -> Task<void> {
            Result<void> w = co_await s.write_all(what.data(), what.size());
            EXPECT_TRUE(w.ok()) << w.message();
            Result<void> sh = co_await s.shutdown(SHUT_WR);
            EXPECT_TRUE(sh.ok()) << sh.message();
        }(a, d));
        std::string out;
        Result<std::size_t> n = co_await b.read_to_string(out);
        EXPECT_TRUE(n.ok()) << n.message();
        co_await sender;
        co_return out;
    }(data));
    EXPECT_TRUE(got == data);
}

TEST(ReadToEnd, AnErrorOfTheStreamComesBackWithWhatCameBeforeIt) {
    run([]() -> Task<int> {
        auto p = ringo::net::UnixStream::pair();
        EXPECT_TRUE(p.ok());
        auto& [a, b] = *p;
        Result<void> w = co_await a.write_all("first", 5);
        EXPECT_TRUE(w.ok());
        std::string out;
        auto reader = ringo::spawn([](ringo::net::UnixStream& s, std::string& o) -> Task<Result<std::size_t>> {
            co_return co_await s.read_to_string(o);
        }(b, out));
        co_await ringo_test::let_others_run(); // it has read "first" and waits for more
        reader.cancel();
        Result<std::size_t> n = co_await reader;
        EXPECT_FALSE(n.ok());
        EXPECT_EQ(n.error(), std::error_code(ECANCELED, std::system_category()));
        EXPECT_EQ(out, "first");
        co_return 0;
    }());
}

} // namespace
