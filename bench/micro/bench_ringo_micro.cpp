// ringo's runtime micro benchmarks with the command line and JSON line of the Rust
// baselines (bench/rust/README.md), for the suite's "micro" figure:
//   bench_ringo_micro spawn --count N | yield --count N | nop --count N
//   bench_ringo_micro when-all-nop --count N [--batch B]   when_all(std::vector<op::Nop>)
//   bench_ringo_micro when-all-nop-static --count N        when_all(nop(), ... 32 times)
//   bench_ringo_micro timeouts --count N     pending with_timeout waits: memory, timers, arm+disarm cost
//   bench_ringo_micro pool-spawn --count N [--threads T] [--batch B]   spawn+join across a RuntimePool
//   bench_ringo_micro pool-switch --count N   one task hopping between two pool runtimes (switch_to)
//   bench_ringo_micro channel --messages M --pairs P [--capacity C]   P producer/consumer pairs on one runtime
//   bench_ringo_micro xchannel --messages M [--capacity C]   producer on one pool runtime, consumer on the other
#include <ringo/ringo.hpp>

#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr,
                 "error: %s\nusage: bench_ringo_micro spawn|yield|nop|when-all-nop --count N [--batch B]\n", msg);
    std::printf("{\"bench\":\"micro\",\"impl\":\"ringo\",\"ok\":false,\"error\":\"usage: %s\"}\n", msg);
    std::exit(2);
}

ringo::Task<void> empty() { co_return; }

ringo::Task<long> spawn_loop(long n) {
    for (long i = 0; i < n; ++i)
        co_await ringo::spawn(empty());
    co_return n;
}

ringo::Task<long> yield_loop(long n) {
    for (long i = 0; i < n; ++i)
        co_await ringo::yield();
    co_return n;
}

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

// Many pending with_timeout waits that never fire: bytes of heap per wait, timers armed, and
// the SQEs the kernel saw (recvs only: no kernel timeout per wait).
ringo::Task<long> pending_timeouts(long n, int fd, double& bytes_per_wait, std::size_t& timers, std::uint64_t& sqes) {
    ringo::Runtime* rt = ringo::Runtime::current();
    auto sq0 = rt->stats().sqes_submitted;
    struct mallinfo2 m0 = mallinfo2();
    std::vector<ringo::JoinHandle<int>> hs;
    hs.reserve(static_cast<std::size_t>(n));
    struct mallinfo2 m1 = mallinfo2();
    for (long i = 0; i < n; ++i)
        hs.push_back(ringo::spawn([](int f) -> ringo::Task<int> {
            char c;
            co_return co_await ringo::with_timeout(ringo::op::recv(f, &c, 1), std::chrono::hours(1));
        }(fd)));
    co_await ringo::yield(); // every wait armed
    for (long i = 0; i < 3; ++i)
        co_await ringo::yield();
    struct mallinfo2 m2 = mallinfo2();
    (void)m0;
    bytes_per_wait = double(m2.uordblks - m1.uordblks) / double(n);
    timers = rt->timers_pending();
    sqes = rt->stats().sqes_submitted - sq0;
    long cancelled = 0;
    for (auto& h : hs)
        h.cancel();
    for (auto& h : hs)
        cancelled += (co_await h == -ECANCELED);
    co_return cancelled;
}

// Arm + disarm of one with_timeout around an awaitable that finishes at once, minus the
// same await without a timeout.
ringo::Task<long> arm_disarm(long n, double& ns_with, double& ns_without) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i)
        co_await empty();
    auto t1 = std::chrono::steady_clock::now();
    long ok = 0;
    for (long i = 0; i < n; ++i)
        ok += co_await ringo::with_timeout(empty(), std::chrono::hours(1));
    auto t2 = std::chrono::steady_clock::now();
    ns_without = std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n);
    ns_with = std::chrono::duration<double, std::nano>(t2 - t1).count() / double(n);
    co_return ok;
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
int xchannel_main(long m, long capacity) {
    ringo::RuntimePool pool(2);
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
    std::printf("{\"bench\":\"xchannel\",\"impl\":\"ringo\",\"variant\":\"plain\",\"threads\":2,\"messages\":%ld,"
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
    ringo::RuntimePool pool(static_cast<std::size_t>(threads));
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
    long count = -1, batch = 32, pairs = 1, capacity = 1024;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc)
            usage(("missing value for " + a).c_str());
        char* end = nullptr;
        long v = std::strtol(argv[++i], &end, 10);
        if (!end || *end || v <= 0)
            usage(("bad value for " + a).c_str());
        if (a == "--count" || a == "--messages")
            count = v;
        else if (a == "--batch")
            batch = v;
        else if (a == "--pairs")
            pairs = v;
        else if (a == "--capacity")
            capacity = v;
        else
            usage(("unknown option " + a).c_str());
    }
    if (count <= 0)
        usage("--count N is required");
    if (sub == "xchannel")
        return xchannel_main(count, capacity);
    if (sub == "timeouts") {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
            usage("socketpair failed");
        ringo::Runtime rt{ringo::RuntimeOptions{}.sq_entries(4096)};
        double bytes = 0, ns_with = 0, ns_without = 0;
        std::size_t timers = 0;
        std::uint64_t sqes = 0;
        long cancelled = rt.block_on(pending_timeouts(count, sv[0], bytes, timers, sqes));
        long armed = rt.block_on(arm_disarm(count, ns_with, ns_without));
        bool good = cancelled == count && armed == count && timers == static_cast<std::size_t>(count);
        std::printf("{\"bench\":\"timeouts\",\"impl\":\"ringo\",\"count\":%ld,\"bytes_per_pending_wait\":%.1f,"
                    "\"timers_armed\":%zu,\"kernel_sqes_while_pending\":%llu,\"arm_disarm_ns\":%.2f,"
                    "\"await_without_timeout_ns\":%.2f,\"ok\":%s}\n",
                    count, bytes, timers, static_cast<unsigned long long>(sqes), ns_with - ns_without, ns_without,
                    good ? "true" : "false");
        ::close(sv[0]);
        ::close(sv[1]);
        return good ? 0 : 1;
    }
    ringo::Runtime rt;
    auto st0 = rt.stats();
    double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    long ok;
    long ops = count;
    if (sub == "spawn")
        ok = rt.block_on(spawn_loop(count));
    else if (sub == "yield")
        ok = rt.block_on(yield_loop(count));
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
    } else if (sub == "when-all-nop-static") {
        ops = (count + 31) / 32 * 32;
        ok = rt.block_on(when_all_static_loop(count));
    } else
        usage(("unknown subcommand " + sub).c_str());
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - c0;
    auto st1 = rt.stats();
    bool good = ok == ops;
    std::printf("{\"bench\":\"%s\",\"impl\":\"ringo\",\"variant\":\"plain\",\"count\":%ld,\"ops\":%ld,\"bytes\":0,"
                "\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"ns_per_op\":%.3f,\"syscalls\":%llu,"
                "\"syscalls_per_op\":%.4f,\"errors\":%ld,\"ok\":%s}\n",
                sub.c_str(), count, ops, secs, cpu, secs * 1e9 / double(ops),
                static_cast<unsigned long long>(st1.enters - st0.enters), double(st1.enters - st0.enters) / double(ops),
                ops - ok, good ? "true" : "false");
    return good ? 0 : 1;
}
