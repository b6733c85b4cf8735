// Allocation failure at every point: each scenario below (tasks and a task scope, a channel,
// a pipe read through a BufReader, a TCP listener and connection, a file) runs once to count
// its allocations, then once for every n up to that count with the n-th allocation failing
// (global operator new throws std::bad_alloc; the nothrow form returns null). Each run must
// end either with the scenario's right result or with the failure reported cleanly: a
// std::bad_alloc or an ENOMEM std::system_error out of the runtime, or a Result carrying
// ENOMEM; never an abort, a hang, a wrong result or a descriptor left open, and (in the
// AddressSanitizer builds) nothing leaked. In sanitizer builds task frames come from operator
// new too, so their allocations fail in turn; in release builds they come from the frame
// pool's chunks, which fail only when the system is out of memory.
//
// Not under ThreadSanitizer, whose runtime defines its own operator new.
#include <ringo/compose/scope.hpp>
#include <ringo/fs/file.hpp>
#include <ringo/io/buffered.hpp>
#include <ringo/io/pipe.hpp>
#include <ringo/net/tcp.hpp>
#include <ringo/ringo.hpp>
#include <ringo/sync/channel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "helpers.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define RINGO_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RINGO_TEST_LSAN 1
#endif
#endif
#ifdef RINGO_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace {
std::atomic<long> g_count{0};    // allocations so far
std::atomic<long> g_fail_at{-1}; // the allocation (by count) that fails; -1: none
} // namespace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
[[gnu::noinline]] void* operator new(std::size_t n) {
    long c = g_count.fetch_add(1, std::memory_order_relaxed) + 1;
    if (c == g_fail_at.load(std::memory_order_relaxed))
        throw std::bad_alloc();
    if (void* p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Runtime;
using ringo::Task;
using namespace ringo_test;

namespace {

// What a scenario saw: everything right, or an allocation failure reported as ENOMEM.
enum class Seen { right, enomem, wrong };

// Folds a Result into a Seen: an ENOMEM error is a clean report, any other error is wrong.
template <class T>
bool check(const Result<T>& r, Seen& seen) {
    if (r.ok())
        return true;
    if (r.error() == std::errc::not_enough_memory) {
        if (seen == Seen::right)
            seen = Seen::enomem;
    } else {
        seen = Seen::wrong;
        ADD_FAILURE() << "an error that is not ENOMEM: " << r.message();
    }
    return false;
}

Task<int> value_after_yield(int i) {
    co_await ringo::yield();
    co_return i * 2;
}

Task<Seen> tasks_and_a_scope() {
    std::vector<ringo::JoinHandle<int>> hs;
    for (int i = 0; i < 20; ++i)
        hs.push_back(ringo::spawn(value_after_yield(i)));
    int sum = 0;
    for (auto& h : hs)
        sum += co_await h;
    int in_scope = 0;
    co_await ringo::scoped([&](ringo::TaskScope& scope) -> Task<void> {
        for (int i = 0; i < 5; ++i)
            scope.spawn([](int& n) -> Task<void> {
                co_await ringo::sleep_for(1ms);
                ++n;
            }(in_scope));
        co_return;
    });
    co_return (sum == 380 && in_scope == 5) ? Seen::right : Seen::wrong;
}

Task<Seen> a_channel() {
    ringo::Channel<std::string> ch(4);
    auto producer = ringo::spawn([](ringo::Channel<std::string>& c) -> Task<void> {
        struct CloseAtEnd { // however the producer ends (its own allocation may fail)
            ringo::Channel<std::string>& c;
            ~CloseAtEnd() { c.close(); }
        } closer{c};
        for (int i = 0; i < 50; ++i)
            if (co_await c.send(std::string(40, static_cast<char>('a' + i % 26))) != 0)
                break;
    }(ch));
    int n = 0;
    bool in_order = true;
    while (auto v = co_await ch.recv()) {
        in_order = in_order && *v == std::string(40, static_cast<char>('a' + n % 26));
        ++n;
    }
    co_await producer;
    co_return (n == 50 && in_order) ? Seen::right : Seen::wrong;
}

Task<Seen> a_pipe_through_a_buf_reader() {
    Seen seen = Seen::right;
    Result<ringo::PipeEnds> p = co_await ringo::pipe();
    if (!check(p, seen))
        co_return seen;
    auto writer = ringo::spawn([](ringo::PipeWriter w) -> Task<Result<void>> {
        std::string text;
        for (int i = 0; i < 30; ++i)
            text += "line " + std::to_string(i) + "\n";
        co_return co_await w.write_all(text);
    }(std::move(p->writer)));
    ringo::BufReader<ringo::PipeReader> r(std::move(p->reader));
    std::string line;
    int lines = 0;
    for (;;) {
        Result<bool> got = co_await r.read_line(line);
        if (!check(got, seen) || !*got)
            break;
        if (line != "line " + std::to_string(lines)) {
            ADD_FAILURE() << "line " << lines << " came as " << line;
            seen = Seen::wrong;
        }
        ++lines;
    }
    Result<void> w = co_await writer;
    check(w, seen);
    if (seen == Seen::right && lines != 30)
        seen = Seen::wrong;
    co_return seen;
}

Task<Seen> a_tcp_connection() {
    namespace net = ringo::net;
    Seen seen = Seen::right;
    Result<net::TcpListener> l = co_await net::TcpListener::bind(net::SocketAddr::v4_loopback(0));
    if (!check(l, seen))
        co_return seen;
    auto server = ringo::spawn([](net::TcpListener& lis) -> Task<Result<void>> {
        Result<net::Accepted> a = co_await lis.accept();
        if (!a.ok())
            co_return a.error();
        char b[4096];
        for (;;) {
            Result<std::size_t> n = co_await a->stream.read(b, sizeof b);
            if (!n.ok())
                co_return n.error();
            if (*n == 0)
                co_return Result<void>{};
            Result<void> w = co_await a->stream.write_all(b, *n);
            if (!w.ok())
                co_return w;
        }
    }(*l));
    Result<net::TcpStream> c = co_await net::TcpStream::connect(*l->local_addr());
    if (check(c, seen)) {
        std::string out(10'000, 'x'), back(10'000, '\0');
        Result<void> w = co_await c->write_all(out);
        Result<void> r = check(w, seen) ? co_await c->read_exact(back.data(), back.size()) : Result<void>{};
        if (check(r, seen) && back != out)
            seen = Seen::wrong;
        (void)co_await c->close();
    } else {
        server.cancel();
    }
    Result<void> s = co_await server;
    if (!s.ok() && s.error() != std::errc::operation_canceled)
        check(s, seen);
    co_return seen;
}

Task<Seen> a_file(std::string path) {
    Seen seen = Seen::right;
    auto f = co_await ringo::fs::File::open(path, {.read = true, .write = true, .create = true, .truncate = true});
    if (!check(f, seen))
        co_return seen;
    std::string out(20'000, 'f');
    std::vector<std::byte> back(out.size());
    Result<void> w = co_await f->write_all_at(out, 0);
    if (check(w, seen)) {
        Result<void> r = co_await f->read_exact_at(back, 0);
        if (check(r, seen) && std::memcmp(back.data(), out.data(), out.size()) != 0)
            seen = Seen::wrong;
    }
    auto size = co_await f->size();
    if (check(size, seen) && *size != out.size())
        seen = Seen::wrong;
    (void)co_await f->close();
    co_return seen;
}

struct Tally {
    long runs = 0, right = 0, reported = 0;
};

// Runs `scenario` on a fresh runtime with allocation `fail_at` failing (-1: none). Returns
// false on a wrong outcome (after recording why).
bool run_once(const std::function<Task<Seen>()>& scenario, long fail_at, Tally& t) {
    const int fds = open_fds();
    Seen seen = Seen::wrong;
    bool threw = false;
    g_fail_at.store(-1);
    g_count.store(0);
    g_fail_at.store(fail_at);
    try {
        Runtime rt;
        seen = rt.block_on(scenario());
    } catch (const std::bad_alloc&) {
        threw = true;
    } catch (const std::system_error& e) {
        if (e.code() != std::errc::not_enough_memory) {
            g_fail_at.store(-1);
            ADD_FAILURE() << "allocation " << fail_at << " failing gave: " << e.what();
            return false;
        }
        threw = true;
    }
    g_fail_at.store(-1);
    ++t.runs;
    if (threw || seen == Seen::enomem)
        ++t.reported;
    else if (seen == Seen::right)
        ++t.right;
    else {
        ADD_FAILURE() << "allocation " << fail_at << " failing gave a wrong result";
        return false;
    }
    if (open_fds() != fds) {
        ADD_FAILURE() << "allocation " << fail_at << " failing left " << open_fds() - fds << " descriptors open";
        return false;
    }
    return true;
}

void fail_each_allocation(const std::function<Task<Seen>()>& scenario) {
    Tally t;
    ASSERT_TRUE(run_once(scenario, -1, t)) << "the scenario fails without any fault";
    ASSERT_EQ(t.right, 1);
    const long total = g_count.load();
    ASSERT_GT(total, 0);
    const bool trace = std::getenv("RINGO_ALLOC_FAILURE_TRACE") != nullptr;
    const char* only = std::getenv("RINGO_ALLOC_FAILURE_ONLY"); // replays one n
    for (long n = only ? std::atol(only) : 1; n <= (only ? std::atol(only) : total); ++n) {
        if (trace)
            std::fprintf(stderr, "allocation %ld of %ld fails\n", n, total);
        if (!run_once(scenario, n, t))
            break;
    }
    // Allocations may vary a little run to run (a timer fires a turn later): the last runs
    // may see no failure at all, but most must have failed and reported it.
    EXPECT_GT(t.reported, total / 2) << "of " << total << " runs with an allocation failing, " << t.right
                                     << " ended right without seeing it";
#ifdef RINGO_TEST_LSAN
    EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0) << "LeakSanitizer found leaks (see above)";
#endif
}

TEST(AllocationFailure, TasksAndATaskScope) { fail_each_allocation(tasks_and_a_scope); }
TEST(AllocationFailure, AChannel) { fail_each_allocation(a_channel); }
TEST(AllocationFailure, APipeThroughABufReader) { fail_each_allocation(a_pipe_through_a_buf_reader); }
TEST(AllocationFailure, ATcpConnection) { fail_each_allocation(a_tcp_connection); }
TEST(AllocationFailure, AFile) {
    TempDir dir;
    std::string path = dir.file("f");
    fail_each_allocation([path] { return a_file(path); });
}

} // namespace
