// ringo's runtime micro benchmarks with the command line and JSON line of the Rust
// baselines (bench/rust/README.md), for the suite's "micro" figure:
//   bench_ringo_micro spawn --count N [--batch B] [--rounds R] [--frame-pad P] | yield --count N [--in task|root]
//                                            | nop --count N
//                                            (spawn: B tasks alive at once, all N by default; R rounds
//                                            of the whole workload on one runtime, the last one timed;
//                                            P = 16, 48 or 80: task frames that many bytes larger)
//   bench_ringo_micro switch --count N      two tasks yielding in turn: N switches between them
//   bench_ringo_micro when-all-nop --count N [--batch B]   when_all(std::vector<op::Nop>)
//   bench_ringo_micro when-all-nop-static --count N        when_all(nop(), ... 32 times)
//   bench_ringo_micro timeouts --count N [--sq-entries S]   N pending with_timeout waits: bytes and
//                                            frames per wait, kernel timeouts, arm + disarm cost, cancel
//                                            cost (see pending_timeouts); S: the ring's SQ (default 256)
//   bench_ringo_micro pool-spawn --count N [--threads T] [--batch B]   spawn+join across a RuntimePool
//   bench_ringo_micro pool-switch --count N   one task hopping between two pool runtimes (switch_to)
//   bench_ringo_micro channel --messages M --pairs P [--capacity C]   P producer/consumer pairs on one runtime
//   bench_ringo_micro xchannel --messages M [--capacity C]   producer on one pool runtime, consumer on the other
//   bench_ringo_micro layer-read --count N --api op|file   4 KiB reads of a page-cached file,
//                                            one at a time: op::read, or fs::File::read_at (Result)
//   bench_ringo_micro layer-echo --count N --api op|stream   1 KiB messages echoed over loopback TCP:
//                                            the server side written with op::recv/op::send (as
//                                            echo_ringo) or net::TcpStream read/write_all (--stream)
#include <ringo/ringo.hpp>

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "alloc_count.hpp" // counts heap allocations (g_allocs): the layer panels report them

namespace {

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// User-space CPU time only: with callgrind's user-space instructions it gives the time an
// instruction takes in this workload (the layer panels' verdicts).
double user_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
}

// Minor page faults of this process so far (a frame or buffer touched for the first time).
long minor_faults() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr,
                 "error: %s\nusage: bench_ringo_micro spawn|yield|nop|when-all-nop|when-all-nop-static|timeouts --count N "
                 "[--batch B] [--rounds R] [--frame-pad P]\n", msg);
    std::printf("{\"bench\":\"micro\",\"impl\":\"ringo\",\"ok\":false,\"error\":\"usage: %s\"}\n", msg);
    std::exit(2);
}

ringo::Task<void> empty() { co_return; }

// spawn --frame-pad P: an empty task whose frame is P bytes larger (a parameter of P bytes
// is kept in the frame), to measure what each byte of a task's frame costs (frame_slope.sh).
template <std::size_t Pad>
ringo::Task<void> padded(std::array<char, Pad> pad) {
    // Used after the initial suspend, so every compiler keeps the copy in the frame (Clang
    // leaves out of the frame what no code after a suspend point reads).
    asm volatile("" : : "r"(pad.data()) : "memory");
    co_return;
}
struct MakeEmpty {
    ringo::Task<void> operator()() const { return empty(); }
};
template <std::size_t Pad>
struct MakePadded {
    ringo::Task<void> operator()() const { return padded<Pad>({}); }
};

// The Condy benchmark's workload, as the Rust and Asio programs run it: spawn `batch` empty
// tasks (all `n` at once by default), keeping their handles, then await each; --batch 1 is
// one task alive at a time (spawn, join, spawn ...).
template <class Make = MakeEmpty>
ringo::Task<long> spawn_loop(long n, long batch, Make make = {}) {
    std::vector<ringo::JoinHandle<void>> hs;
    hs.reserve(static_cast<std::size_t>(batch));
    long done = 0;
    for (long left = n; left > 0;) {
        long k = left < batch ? left : batch;
        if (k == 1) { // one alive at a time: no vector in the way
            co_await ringo::spawn(make());
            ++done;
        } else {
            for (long i = 0; i < k; ++i)
                hs.push_back(ringo::spawn(make()));
            for (auto& h : hs) {
                co_await h;
                ++done;
            }
            hs.clear();
        }
        left -= k;
    }
    co_return done;
}

// f(maker) with the maker of tasks whose frames are `pad` bytes larger than an empty task's
// (0, 16, 48 or 80): the one place that turns --frame-pad into a type.
template <class F>
auto with_frame_pad(long pad, F f) {
    switch (pad) {
    case 16:
        return f(MakePadded<16>{});
    case 48:
        return f(MakePadded<48>{});
    case 80:
        return f(MakePadded<80>{});
    default:
        return f(MakeEmpty{});
    }
}

ringo::Task<long> spawn_loop_padded(long n, long batch, long pad) {
    return with_frame_pad(pad, [&](auto make) { return spawn_loop(n, batch, make); });
}

// The bytes a task frame of the spawn workload takes in ringo's frame pool: the distance
// between two frames carved one after the other (the pool's free lists are empty at first).
// (The tasks go into a vector: a task that never leaves its caller may get its frame on the
// caller's stack from Clang, and then the distance would be the stack's.)
template <class Make>
long frame_distance(Make make) {
    std::vector<ringo::Task<void>> ts;
    ts.reserve(2);
    ts.push_back(make());
    ts.push_back(make());
    return std::labs(static_cast<char*>(ts[1].handle().address()) - static_cast<char*>(ts[0].handle().address()));
}
long spawn_frame_bytes(long pad) {
    return with_frame_pad(pad, [](auto make) { return frame_distance(make); });
}

ringo::Task<long> yield_loop(long n) {
    for (long i = 0; i < n; ++i)
        co_await ringo::yield();
    co_return n;
}

// Two spawned tasks yielding in turn: each yield hands the thread to the other task, so every
// operation is a switch between two tasks (`n` switches in all).
ringo::Task<long> switch_loop(long n) {
    auto a = ringo::spawn(yield_loop(n / 2));
    auto b = ringo::spawn(yield_loop(n - n / 2));
    co_return co_await a + co_await b;
}

// layer-read / layer-echo: what the high-level layer costs over op:: on the same work (the
// callgrind pass counts user-space instructions per operation of each form).
ringo::Task<long> layer_read_loop(int fd, bool file_api, long n) {
    alignas(64) static char buf[4096];
    std::optional<ringo::fs::File> file;
    if (file_api)
        file.emplace(ringo::Fd(::dup(fd)));
    long ok = 0;
    for (long i = 0; i < n; ++i) {
        std::uint64_t off = static_cast<std::uint64_t>(i & 255) * 4096;
        if (file_api) {
            auto r = co_await file->read_at(buf, sizeof buf, off);
            ok += r && *r == sizeof buf;
        } else {
            int r = co_await ringo::op::read(fd, buf, sizeof buf, off);
            ok += r == static_cast<int>(sizeof buf);
        }
    }
    co_return ok;
}

// The echo server's connection loop, as bench/ringo/echo_ringo.cpp writes it in each form.
ringo::Task<void> layer_echo_op(int fd) {
    char buf[1024];
    for (;;) {
        int r = co_await ringo::op::recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            co_return;
        for (int off = 0; off < r;) {
            int w = co_await ringo::op::send(fd, buf + off, static_cast<std::size_t>(r - off), MSG_NOSIGNAL);
            if (w <= 0)
                co_return;
            off += w;
        }
    }
}
ringo::Task<void> layer_echo_stream(ringo::net::TcpStream c) {
    char buf[1024];
    for (;;) {
        auto r = co_await c.read(buf, sizeof buf);
        if (!r || *r == 0)
            co_return;
        auto w = co_await c.write_all(buf, *r);
        if (!w)
            co_return;
    }
}
// The client: the same in both forms (a message out, its echo back, in turn).
ringo::Task<long> layer_echo_client(int fd, long n) {
    char out[1024], in[1024];
    std::memset(out, 'x', sizeof out);
    long ok = 0;
    for (long i = 0; i < n; ++i) {
        int w = co_await ringo::op::send(fd, out, sizeof out, MSG_NOSIGNAL);
        if (w != static_cast<int>(sizeof out))
            break;
        std::size_t got = 0;
        while (got < sizeof in) {
            int r = co_await ringo::op::recv(fd, in + got, sizeof in - got, 0);
            if (r <= 0)
                co_return ok;
            got += static_cast<std::size_t>(r);
        }
        ++ok;
    }
    ::shutdown(fd, SHUT_WR); // the server's next read sees the end
    co_return ok;
}
ringo::Task<long> layer_echo(int server_fd, int client_fd, bool stream, long n) {
    ringo::JoinHandle<void> server = stream ? ringo::spawn(layer_echo_stream(ringo::net::TcpStream(ringo::Fd(server_fd))))
                                            : ringo::spawn(layer_echo_op(server_fd));
    long ok = co_await layer_echo_client(client_fd, n);
    co_await server;
    co_return ok;
}
// A connected loopback TCP pair (Nagle off on both), made with plain system calls.
bool tcp_pair(int& server_fd, int& client_fd) {
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0 ||
        ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        return false;
    client_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client_fd < 0 || ::connect(client_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        return false;
    server_fd = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    ::close(l);
    int one = 1;
    return server_fd >= 0 && ::setsockopt(server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0 &&
           ::setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
}

// Runs `body` as a spawned task (--in task, the default, as the Rust programs do) instead of
// as the root task of block_on (--in root); ringo schedules both the same way.
ringo::Task<long> in_task(ringo::Task<long> body) { co_return co_await ringo::spawn(std::move(body)); }

ringo::Task<long> nop_loop(long n) {
    long ok = 0;
    for (long i = 0; i < n; ++i)
        ok += (co_await ringo::op::nop() == 0);
    co_return ok;
}

ringo::Task<long> when_all_loop(long n, long batch) {
    long ok = 0;
    for (long done = 0; done < n; done += batch) {
        std::vector<ringo::op::Nop> v(static_cast<std::size_t>(batch));
        for (int r : co_await ringo::when_all(std::move(v)))
            ok += (r == 0);
    }
    co_return ok;
}

// The same with the variadic when_all of 32 NOPs: the group lives in the frame, no
// allocation per batch (the form to use when N is known at compile time).
template <std::size_t... I>
auto when_all_32(std::index_sequence<I...>) {
    return ringo::when_all(((void)I, ringo::op::nop())...);
}
ringo::Task<long> when_all_static_loop(long n) {
    long ok = 0;
    for (long done = 0; done < n; done += 32) {
        auto results = co_await when_all_32(std::make_index_sequence<32>{});
        std::apply([&](auto... r) { ok += ((r == 0) + ...); }, results);
    }
    co_return ok;
}

// timeouts: `n` with_timeout(recv, 1 h) waits that never fire, each in its own task (the
// recvs wait on an empty socket). What is measured, and how:
//  - bytes per wait: glibc's heap in use (mallinfo2: uordblks + hblkhd, the latter for chunks
//    malloc maps on their own, such as the timer heap's vector once it is large) after the n
//    waits are armed minus before, over n. That is every heap byte a pending wait holds: the
//    spawned task's frame (the coroutine awaiting with_timeout), with_timeout's frame (its
//    DeadlineTimer, the recv's OpState and the branch's CancelCtx live in it) and its slot in
//    the runtime's timer heap (a pointer in a vector that grows by doubling), malloc's chunk
//    headers included. The JoinHandle vector is reserved before the first reading; tasks are
//    spawned 256 at a time, so the run queue never holds more than that. Frames come from
//    ringo's per-thread frame cache when it holds one of their size; nothing was freed on this
//    thread before, so the cache is empty and every frame is a fresh allocation.
//    The resident set's growth over n (/proc/self/statm) is reported as well.
//  - frames per wait: ringo's count of frames handed out (detail::t_frames_allocated).
//  - kernel timeouts: the runtime counts the SQEs it submits. From before the first spawn to
//    the end of a 20 ms sleep taken with every wait armed (the loop then submits whatever was
//    gathered and waits in io_uring_enter), the SQEs beyond the n recvs are the kernel timeout
//    SQEs (any other SQE would count too): expected 0. The kernel's only timeout is then the
//    timespec of the loop's timed io_uring_enter (the nearest deadline); one thread is in at most
//    one enter at a time, so the timeouts in flight are those SQEs + 1. idle_enters counts the
//    enters during the sleep (expected 1: one timed wait covers the whole sleep).
//  - arm + disarm: n x `co_await with_timeout(empty(), 30 min)` minus n x `co_await empty()`,
//    both finishing at once (no suspension): with_timeout's frame, its branch bookkeeping and one
//    push and one remove on the timer heap. Taken with the n waits pending (30 min is earlier
//    than their 1 h, so each push sifts to the top of an n-entry heap and each remove sifts down
//    from it: the worst case) and again once they have ended (an empty heap). Best of 5.
//  - cancel with the waits pending: cancel() + join of the first 1000 (or n) waits, per wait;
//    the others then end by end of stream (see below).
struct TimeoutStats {
    double bytes_per_wait = 0, rss_bytes_per_wait = 0, frames_per_wait = 0;
    long timers = 0, in_flight = 0, timeout_sqes = -1, idle_enters = -1;
    double loaded_with_s = 0, loaded_plain_s = 0, empty_with_s = 0, empty_plain_s = 0;
    long cancelled = 0, ended = 0, armed = 0, cancel_k = 0;
    double cancel_s = 0;
};

std::size_t heap_in_use() {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

std::size_t rss_bytes() {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        std::fclose(f);
    }
    return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

ringo::Task<int> pending_wait(int fd) {
    char c;
    co_return co_await ringo::with_timeout(ringo::op::recv(fd, &c, 1), std::chrono::hours(1));
}

// Best of 5: seconds for n awaits of empty(), and of with_timeout(empty(), 30 min).
ringo::Task<long> arm_disarm(long n, double& plain_s, double& with_s) {
    using clock = std::chrono::steady_clock;
    long ok = 0;
    plain_s = with_s = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        auto t0 = clock::now();
        for (long i = 0; i < n; ++i)
            co_await empty();
        auto t1 = clock::now();
        for (long i = 0; i < n; ++i)
            ok += static_cast<bool>(co_await ringo::with_timeout(empty(), std::chrono::minutes(30)));
        auto t2 = clock::now();
        plain_s = std::min(plain_s, std::chrono::duration<double>(t1 - t0).count());
        with_s = std::min(with_s, std::chrono::duration<double>(t2 - t1).count());
    }
    co_return ok / 5;
}

ringo::Task<void> pending_timeouts(long n, int fd, int peer, TimeoutStats& st) {
    ringo::Runtime* rt = ringo::Runtime::current();
    std::vector<ringo::JoinHandle<int>> hs;
    hs.reserve(static_cast<std::size_t>(n));
    auto sq0 = rt->stats().sqes_submitted;
    std::uint64_t f0 = ringo::detail::t_frames_allocated;
    std::size_t m0 = heap_in_use(), r0 = rss_bytes();
    for (long i = 0; i < n; ++i) {
        hs.push_back(ringo::spawn(pending_wait(fd)));
        if (i % 256 == 255)
            co_await ringo::yield(); // the 256 just spawned run up to their recvs
    }
    co_await ringo::yield();
    std::size_t m1 = heap_in_use(), r1 = rss_bytes();
    std::uint64_t f1 = ringo::detail::t_frames_allocated;
    st.bytes_per_wait = double(m1 - m0) / double(n);
    st.rss_bytes_per_wait = (double(r1) - double(r0)) / double(n);
    st.frames_per_wait = double(f1 - f0) / double(n);
    st.timers = static_cast<long>(rt->timers_pending());
    auto idle0 = rt->stats().enters;
    co_await ringo::sleep_for(std::chrono::milliseconds(20));
    auto after = rt->stats();
    st.idle_enters = static_cast<long>(after.enters - idle0);
    st.timeout_sqes = static_cast<long>(after.sqes_submitted - sq0) - n;
    st.in_flight = static_cast<long>(after.ops_in_flight);
    st.armed = co_await arm_disarm(n, st.loaded_plain_s, st.loaded_with_s);
    // Cancelling waits while the others are pending: the ASYNC_CANCEL's lookup in the kernel
    // (io_poll_find) walks one bucket of the ring's cancel hash table, where poll-armed requests
    // are hashed by user_data into 2^clamp(log2(cq_entries) - 5, 1, 8) buckets: 16 for the default
    // 512-entry CQ, 256 from an 8192-entry one (--sq-entries 4096). Its cost grows with the number
// of pending recvs; measured on the first k.
    long k = std::min(n, 1000L);
    auto c0 = std::chrono::steady_clock::now();
    for (long i = 0; i < k; ++i)
        hs[static_cast<std::size_t>(i)].cancel();
    for (long i = 0; i < k; ++i)
        st.cancelled += (co_await hs[static_cast<std::size_t>(i)] == -ECANCELED);
    st.cancel_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    st.cancel_k = k;
    // The rest end by completing, not by cancels (n cancels would cost O(n^2 / buckets) kernel
    // time): the peer shuts its side down and every recv gets 0, end of stream.
    ::shutdown(peer, SHUT_WR);
    for (long i = k; i < n; ++i)
        st.ended += (co_await hs[static_cast<std::size_t>(i)] == 0);
    st.armed = std::min(st.armed, co_await arm_disarm(n, st.empty_plain_s, st.empty_with_s));
}

int timeouts_main(long n, long sq_entries) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        usage("socketpair failed");
    TimeoutStats st;
    double c0 = cpu_seconds();
    {
        ringo::Runtime rt{ringo::RuntimeOptions{}.sq_entries(static_cast<unsigned>(sq_entries))};
        rt.block_on(pending_timeouts(n, sv[0], sv[1], st));
    }
    double cpu = cpu_seconds() - c0;
    ::close(sv[0]);
    ::close(sv[1]);
    // Every wait armed (a timer and a recv in flight each, nothing else in the heap), none fired,
    // each ended by its cancel or by end of stream; no timeout SQE; every with_timeout(empty())
    // finished in time.
    bool good = st.timers == n && st.in_flight == n && st.timeout_sqes == 0 && st.cancelled == st.cancel_k &&
                st.ended == n - st.cancel_k && st.armed == n;
    double nd = double(n);
    std::printf("{\"bench\":\"timeouts\",\"impl\":\"ringo\",\"variant\":\"plain\",\"count\":%ld,\"ops\":%ld,"
                "\"bytes\":0,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"ns_per_op\":%.3f,\"syscalls\":0,"
                "\"bytes_per_wait\":%.1f,\"rss_bytes_per_wait\":%.1f,\"frames_per_wait\":%.2f,"
                "\"timers_armed\":%ld,\"ops_in_flight\":%ld,\"kernel_timeout_sqes\":%ld,"
                "\"kernel_timeouts_in_flight\":%ld,\"idle_enters\":%ld,\"arm_disarm_ns\":%.2f,"
                "\"arm_disarm_ns_loaded\":%.2f,\"await_without_timeout_ns\":%.2f,\"cancel_us_loaded\":%.2f,"
                "\"errors\":%ld,\"ok\":%s}\n",
                n, n, st.loaded_with_s, cpu, st.loaded_with_s * 1e9 / nd, st.bytes_per_wait, st.rss_bytes_per_wait,
                st.frames_per_wait, st.timers, st.in_flight, st.timeout_sqes, st.timeout_sqes + 1, st.idle_enters,
                (st.empty_with_s - st.empty_plain_s) * 1e9 / nd, (st.loaded_with_s - st.loaded_plain_s) * 1e9 / nd,
                st.empty_plain_s * 1e9 / nd, st.cancel_s * 1e6 / double(st.cancel_k), good ? 0L : 1L,
                good ? "true" : "false");
    return good ? 0 : 1;
}

// channel: P pairs, each its own Channel<uint64_t>(capacity); each producer sends 0..M and
// closes, each consumer counts and sums (checked), as the Rust baselines do.
struct PairResult {
    long received = 0;
    long errors = 0;
};
ringo::Task<void> channel_producer(ringo::Channel<std::uint64_t>& ch, long m, long& errors) {
    for (long i = 0; i < m; ++i)
        if (co_await ch.send(static_cast<std::uint64_t>(i)) != 0)
            ++errors;
    ch.close();
}
ringo::Task<void> channel_consumer(ringo::Channel<std::uint64_t>& ch, long m, PairResult& r) {
    std::uint64_t n = 0, sum = 0;
    while (auto v = co_await ch.recv()) {
        ++n;
        sum += *v;
    }
    r.received += static_cast<long>(n);
    if (n != static_cast<std::uint64_t>(m) || sum != static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(m - 1) / 2)
        ++r.errors;
}
ringo::Task<long> channel_pairs(long m, long pairs, long capacity, long& errors) {
    std::vector<std::unique_ptr<ringo::Channel<std::uint64_t>>> chans;
    std::vector<ringo::JoinHandle<void>> hs;
    PairResult r;
    for (long p = 0; p < pairs; ++p) {
        chans.push_back(std::make_unique<ringo::Channel<std::uint64_t>>(static_cast<std::size_t>(capacity)));
        hs.push_back(ringo::spawn(channel_producer(*chans.back(), m, r.errors)));
        hs.push_back(ringo::spawn(channel_consumer(*chans.back(), m, r)));
    }
    for (auto& h : hs)
        co_await h;
    errors = r.errors;
    co_return r.received;
}

// xchannel: one producer task on runtime 0 of a two-runtime pool, one consumer on runtime 1,
// M messages through one Channel<uint64_t>(capacity). Reports messages per second and the
// wake-ups (MSG_RING SQEs or system calls) the runtimes received per message.
// Like the Rust and Asio programs, each side is pinned: runtime i to the i-th CPU this process
// may use (PoolOptions::pin_threads).
int xchannel_main(long m, long capacity) {
    ringo::RuntimePool pool(2, ringo::PoolOptions{}.pin_threads());
    ringo::Channel<std::uint64_t> ch(static_cast<std::size_t>(capacity));
    auto wake_sum = [](const std::vector<ringo::RuntimeStats>& v) {
        ringo::RuntimeStats t;
        for (const auto& s : v) {
            t.enters += s.enters;
            t.wakeups += s.wakeups;
            t.wakeups_by_sqe += s.wakeups_by_sqe;
        }
        return t;
    };
    auto st0 = wake_sum(pool.stats());
    long errors = 0;
    PairResult r;
    double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    auto consumer = pool.spawn_on(1, channel_consumer(ch, m, r));
    auto producer = pool.spawn_on(0, channel_producer(ch, m, errors));
    producer.join();
    consumer.join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - c0;
    auto st1 = wake_sum(pool.stats());
    pool.shutdown();
    errors += r.errors;
    bool good = errors == 0 && r.received == m;
    auto d = [&](std::uint64_t ringo::RuntimeStats::*f) { return static_cast<unsigned long long>(st1.*f - st0.*f); };
    std::printf("{\"bench\":\"xchannel\",\"impl\":\"ringo\",\"variant\":\"plain\",\"threads\":2,\"cpus\":\"pinned, runtime i on allowed CPU i\","
                "\"messages\":%ld,"
                "\"capacity\":%ld,\"count\":%ld,\"ops\":%ld,\"bytes\":0,\"seconds\":%.6f,\"cpu_seconds\":%.6f,"
                "\"ns_per_op\":%.3f,\"messages_per_second\":%.0f,\"wakeups\":%llu,\"wakeups_by_sqe\":%llu,"
                "\"wakeups_per_op\":%.4f,\"syscalls\":%llu,\"syscalls_per_op\":%.4f,\"errors\":%ld,\"ok\":%s}\n",
                m, capacity, m, r.received, secs, cpu, secs * 1e9 / double(m), double(m) / secs,
                d(&ringo::RuntimeStats::wakeups), d(&ringo::RuntimeStats::wakeups_by_sqe),
                double(d(&ringo::RuntimeStats::wakeups)) / double(m), d(&ringo::RuntimeStats::enters),
                double(d(&ringo::RuntimeStats::enters)) / double(m), errors, good ? "true" : "false");
    return good ? 0 : 1;
}

// pool-spawn: a driver task on runtime 0 of a RuntimePool spawns empty tasks round robin
// across the pool (so 1/threads of them start locally, the rest through another runtime's
// queue) and joins them in batches. Reports tasks per second and the wake-ups the runtimes
// received per task (MSG_RING SQEs between pool runtimes, or system calls).
//   bench_ringo_micro pool-spawn --count N [--threads T] [--batch B]
ringo::Task<long> pool_spawn_driver(ringo::RuntimePool& pool, long n, long batch) {
    std::vector<ringo::JoinHandle<void>> hs;
    hs.reserve(static_cast<std::size_t>(batch));
    long done = 0;
    while (done < n) {
        long k = std::min(batch, n - done);
        for (long i = 0; i < k; ++i)
            hs.push_back(pool.spawn(empty()));
        for (auto& h : hs)
            co_await h;
        hs.clear();
        done += k;
    }
    co_return done;
}

int pool_spawn_main(int argc, char** argv) {
    long count = -1, threads = 2, batch = 256;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc)
            usage(("missing value for " + a).c_str());
        char* end = nullptr;
        long v = std::strtol(argv[++i], &end, 10);
        if (!end || *end || v <= 0)
            usage(("bad value for " + a).c_str());
        if (a == "--count")
            count = v;
        else if (a == "--threads")
            threads = v;
        else if (a == "--batch")
            batch = v;
        else
            usage(("unknown option " + a).c_str());
    }
    if (count <= 0)
        usage("--count N is required");
    ringo::RuntimePool pool(static_cast<std::size_t>(threads), ringo::PoolOptions{}.pin_threads());
    auto sum = [](const std::vector<ringo::RuntimeStats>& v) {
        ringo::RuntimeStats t;
        for (const auto& s : v) {
            t.enters += s.enters;
            t.wakeups += s.wakeups;
            t.wakeups_by_sqe += s.wakeups_by_sqe;
            t.remote_items += s.remote_items;
        }
        return t;
    };
    auto st0 = sum(pool.stats());
    double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    long ok = pool.spawn_on(0, pool_spawn_driver(pool, count, batch)).join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - c0;
    pool.shutdown();
    auto st1 = sum(pool.stats());
    auto d = [&](std::uint64_t ringo::RuntimeStats::*f) { return static_cast<unsigned long long>(st1.*f - st0.*f); };
    bool good = ok == count;
    // The stats() gathering itself posts one task per runtime; it is outside the window.
    std::printf("{\"bench\":\"pool-spawn\",\"impl\":\"ringo\",\"variant\":\"round-robin\",\"threads\":%ld,"
                "\"count\":%ld,\"ops\":%ld,\"batch\":%ld,\"bytes\":0,\"seconds\":%.6f,\"cpu_seconds\":%.6f,"
                "\"ns_per_op\":%.3f,\"tasks_per_second\":%.0f,\"remote_items\":%llu,\"wakeups\":%llu,"
                "\"wakeups_by_sqe\":%llu,\"wakeups_per_task\":%.4f,\"syscalls\":%llu,\"syscalls_per_op\":%.4f,"
                "\"errors\":%ld,\"ok\":%s}\n",
                threads, count, count, batch, secs, cpu, secs * 1e9 / double(count), double(count) / secs,
                d(&ringo::RuntimeStats::remote_items), d(&ringo::RuntimeStats::wakeups),
                d(&ringo::RuntimeStats::wakeups_by_sqe), double(d(&ringo::RuntimeStats::wakeups)) / double(count),
                d(&ringo::RuntimeStats::enters), double(d(&ringo::RuntimeStats::enters)) / double(count), count - ok,
                good ? "true" : "false");
    return good ? 0 : 1;
}

// pool-switch: one task hops between runtime 0 and runtime 1 of a pool with switch_to;
// the other runtime sleeps each time, so every hop costs a cross-core wake-up.
//   bench_ringo_micro pool-switch --count N
ringo::Task<long> pool_switch_driver(ringo::RuntimePool& pool, long n) {
    long ok = 0;
    for (long i = 0; i < n; ++i) {
        ringo::Runtime& to = pool.runtime(static_cast<std::size_t>((i + 1) % 2));
        co_await ringo::switch_to(to);
        ok += ringo::Runtime::current() == &to;
    }
    co_return ok;
}

int pool_switch_main(int argc, char** argv) {
    long count = -1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) != "--count")
            usage("pool-switch takes --count N");
        count = std::strtol(argv[i + 1], nullptr, 10);
    }
    if (count <= 0)
        usage("--count N is required");
    ringo::RuntimePool pool(2);
    auto wakeups = [](const std::vector<ringo::RuntimeStats>& v) {
        std::uint64_t w = 0, e = 0;
        for (const auto& s : v) {
            w += s.wakeups;
            e += s.enters;
        }
        return std::pair{w, e};
    };
    auto s0 = wakeups(pool.stats());
    double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    long ok = pool.spawn_on(0, pool_switch_driver(pool, count)).join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - c0;
    auto s1 = wakeups(pool.stats());
    double w = double(s1.first - s0.first), e = double(s1.second - s0.second);
    std::printf("{\"bench\":\"pool-switch\",\"impl\":\"ringo\",\"variant\":\"ping-pong\",\"threads\":2,"
                "\"count\":%ld,\"ops\":%ld,\"bytes\":0,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"ns_per_op\":%.3f,"
                "\"wakeups\":%.0f,\"wakeups_per_op\":%.4f,\"syscalls\":%.0f,\"syscalls_per_op\":%.4f,"
                "\"errors\":%ld,\"ok\":%s}\n",
                count, count, secs, cpu, secs * 1e9 / double(count), w, w / double(count), e, e / double(count),
                count - ok, ok == count ? "true" : "false");
    return ok == count ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2)
        usage("missing subcommand");
    if (std::string(argv[1]) == "pool-spawn")
        return pool_spawn_main(argc, argv);
    if (std::string(argv[1]) == "pool-switch")
        return pool_switch_main(argc, argv);
    std::string sub = argv[1];
    long count = -1, batch = 32, pairs = 1, capacity = 1024, sq = 256, spawn_batch = 0, rounds = 1, frame_pad = 0;
    bool in_root = false; // --in task|root: where the body runs (as the Rust programs' option)
    std::string api = "op"; // layer-read: op | file; layer-echo: op | stream
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc)
            usage(("missing value for " + a).c_str());
        if (a == "--in") {
            std::string w = argv[++i];
            if (w != "task" && w != "root")
                usage("--in takes task or root");
            in_root = w == "root";
            continue;
        }
        if (a == "--api") {
            api = argv[++i];
            if (api != "op" && api != "file" && api != "stream")
                usage("--api takes op, file (layer-read) or stream (layer-echo)");
            continue;
        }
        char* end = nullptr;
        long v = std::strtol(argv[++i], &end, 10);
        if (!end || *end || v < 0 || (v == 0 && a != "--batch" && a != "--frame-pad")) // spawn --batch 0: all at once
            usage(("bad value for " + a).c_str());
        if (a == "--count" || a == "--messages")
            count = v;
        else if (a == "--batch")
            batch = spawn_batch = v;
        else if (a == "--pairs")
            pairs = v;
        else if (a == "--capacity")
            capacity = v;
        else if (a == "--sq-entries")
            sq = v;
        else if (a == "--rounds" && sub == "spawn")
            rounds = v;
        else if (a == "--frame-pad" && sub == "spawn") {
            if (v != 0 && v != 16 && v != 48 && v != 80)
                usage("--frame-pad takes 0, 16, 48 or 80");
            frame_pad = v;
        }
        else
            usage(("unknown option " + a).c_str());
    }
    if (count <= 0)
        usage("--count N is required");
    if (batch <= 0 && sub != "spawn")
        usage("--batch must be at least 1");
    if (sub == "xchannel")
        return xchannel_main(count, capacity);
    if (sub == "timeouts")
        return timeouts_main(count, sq);
    if ((sub == "layer-read" && api == "stream") || (sub == "layer-echo" && api == "file"))
        usage("layer-read takes --api op|file, layer-echo --api op|stream");
    int layer_fd = -1, layer_fd2 = -1; // layer-read: the file; layer-echo: server and client ends
    if (sub == "layer-read") {
        // A file of a disk file system (its page-cache reads complete inline; tmpfs and memfd
        // reads go to io-wq workers), unlinked at once.
        char path[] = "/var/tmp/ringo-layer-read-XXXXXX";
        layer_fd = ::mkstemp(path);
        if (layer_fd < 0)
            usage("mkstemp in /var/tmp failed");
        ::unlink(path);
        std::vector<char> data(1 << 20, 'r');
        if (::pwrite(layer_fd, data.data(), data.size(), 0) != static_cast<ssize_t>(data.size()))
            usage("writing the file failed");
    } else if (sub == "layer-echo" && !tcp_pair(layer_fd, layer_fd2)) {
        usage("a loopback TCP connection could not be made");
    }
    const long frame_bytes = sub == "spawn" ? spawn_frame_bytes(frame_pad) : 0;
    ringo::Runtime rt;
    const long spawn_batch_all = spawn_batch <= 0 || spawn_batch > count ? count : spawn_batch;
    // spawn --rounds R: the rounds before the last run untimed, so the timed one finds the
    // memory its tasks need already touched (frames, run queue) as a long-running program does.
    for (long r = 1; sub == "spawn" && r < rounds; ++r)
        if (rt.block_on(spawn_loop_padded(count, spawn_batch_all, frame_pad)) != count)
            usage("an untimed round of spawn failed");
    auto st0 = rt.stats();
    double c0 = cpu_seconds(), u0 = user_cpu_seconds();
    long f0 = minor_faults(), a0 = g_allocs.load(std::memory_order_relaxed);
    auto t0 = std::chrono::steady_clock::now();
    long ok;
    long ops = count;
    if (sub == "spawn")
        ok = rt.block_on(spawn_loop_padded(count, spawn_batch_all, frame_pad));
    else if (sub == "yield")
        ok = in_root ? rt.block_on(yield_loop(count)) : rt.block_on(in_task(yield_loop(count)));
    else if (sub == "switch")
        ok = rt.block_on(switch_loop(count));
    else if (sub == "nop")
        ok = rt.block_on(nop_loop(count));
    else if (sub == "channel") {
        ops = count * pairs;
        long errors = 0;
        ok = rt.block_on(channel_pairs(count, pairs, capacity, errors));
        if (errors)
            ok = -errors;
    }
    else if (sub == "when-all-nop") {
        ops = (count + batch - 1) / batch * batch;
        ok = rt.block_on(when_all_loop(count, batch));
    } else if (sub == "layer-read") {
        ok = rt.block_on(layer_read_loop(layer_fd, api == "file", count));
    } else if (sub == "layer-echo") {
        ok = rt.block_on(layer_echo(layer_fd, layer_fd2, api == "stream", count));
        if (api == "stream")
            layer_fd = -1; // the stream closed it
    } else if (sub == "when-all-nop-static") {
        ops = (count + 31) / 32 * 32;
        ok = rt.block_on(when_all_static_loop(count));
    } else
        usage(("unknown subcommand " + sub).c_str());
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - c0, user_cpu = user_cpu_seconds() - u0;
    long minflt = minor_faults() - f0, allocs = g_allocs.load(std::memory_order_relaxed) - a0;
    auto st1 = rt.stats();
    bool good = ok == ops;
    if (layer_fd >= 0)
        ::close(layer_fd);
    if (layer_fd2 >= 0)
        ::close(layer_fd2);
    std::string variant = sub.rfind("layer-", 0) == 0 ? api : "plain";
    if (frame_pad)
        variant = "frame-pad-" + std::to_string(frame_pad);
    std::string extra = frame_bytes ? ",\"frame_bytes\":" + std::to_string(frame_bytes) : "";
    std::printf("{\"bench\":\"%s\",\"impl\":\"ringo\",\"variant\":\"%s\"%s,\"count\":%ld,\"rounds\":%ld,\"ops\":%ld,"
                "\"bytes\":0,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"user_cpu_seconds\":%.6f,\"ns_per_op\":%.3f,"
                "\"syscalls\":%llu,\"syscalls_per_op\":%.4f,\"minflt\":%ld,\"allocs\":%ld,\"errors\":%ld,"
                "\"ok\":%s}\n",
                sub.c_str(), variant.c_str(), extra.c_str(), count, rounds, ops, secs, cpu, user_cpu, secs * 1e9 / double(ops),
                static_cast<unsigned long long>(st1.enters - st0.enters), double(st1.enters - st0.enters) / double(ops),
                minflt, allocs, ops - ok, good ? "true" : "false");
    return good ? 0 : 1;
}
