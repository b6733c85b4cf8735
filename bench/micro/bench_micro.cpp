// Runtime micro benchmarks of the foundation issue, in one process run: NOP round trip (ringo
// vs a raw liburing loop with the same ring flags), yield/switch, spawn + join of an empty
// task. Every case runs `--reps` times (default 5) after a warm-up, the cases interleaved and
// their order rotated each round; the medians are printed side by side with the targets, then
// one JSON line per case. bench/micro/run.sh builds and runs it; bench/micro/callgrind.sh
// counts its instructions per operation.
//
//   bench_micro [--reps 5] [--iters N] [--only CASE]     CASE: nop-liburing nop-ringo yield spawn
//
// Columns: wall-clock ns per operation (median, min, max over the runs), CPU ns (median),
// io_uring_enter calls, heap allocations (global operator new) and coroutine frames per
// operation. ringo keeps freed frames in a per-thread cache, so a spawn takes one frame
// (frames/op 1) but, once warm, no heap allocation.
#include <ringo/ringo.hpp>

#include <liburing.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

namespace {

std::atomic<long> g_allocs{0};

} // namespace

void* operator new(std::size_t n) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Sample {
    double ns_per_op = 0;
    double cpu_ns_per_op = 0;
    double enters_per_op = 0;
    double allocs_per_op = 0;
    double frames_per_op = 0;
    bool ok = true;
    unsigned ring_flags = 0; // IORING_SETUP_* in force
};

// The ring flags ringo's default runtime asks for, so the comparison is like for like.
constexpr unsigned ring_flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL;

Sample nop_liburing(long iters) {
    io_uring ring;
    io_uring_params p{};
    p.flags = ring_flags;
    Sample s;
    if (io_uring_queue_init_params(256, &ring, &p) < 0 || io_uring_register_ring_fd(&ring) != 1) {
        s.ok = false;
        return s;
    }
    s.ring_flags = ring.flags;
    long a0 = g_allocs.load();
    double c0 = cpu_seconds();
    auto t0 = Clock::now();
    for (long i = 0; i < iters; ++i) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        io_uring_prep_nop(sqe);
        sqe->user_data = static_cast<unsigned long long>(i);
        io_uring_submit_and_wait(&ring, 1);
        io_uring_cqe* cqe;
        if (io_uring_peek_cqe(&ring, &cqe) != 0 || cqe->res != 0) {
            s.ok = false;
            break;
        }
        io_uring_cqe_seen(&ring, cqe);
    }
    auto t1 = Clock::now();
    double c1 = cpu_seconds();
    long a1 = g_allocs.load();
    io_uring_queue_exit(&ring);
    s.ns_per_op = std::chrono::duration<double, std::nano>(t1 - t0).count() / iters;
    s.cpu_ns_per_op = (c1 - c0) * 1e9 / iters;
    s.enters_per_op = 1; // io_uring_submit_and_wait: one io_uring_enter per NOP
    s.allocs_per_op = double(a1 - a0) / iters;
    return s;
}

template <class Body>
Sample with_runtime(long iters, Body body) {
    ringo::Runtime rt;
    Sample s;
    s.ring_flags = rt.setup_flags();
    auto st0 = rt.stats();
    long a0 = g_allocs.load();
    std::uint64_t f0 = ringo::detail::t_frames_allocated;
    double c0 = cpu_seconds();
    auto t0 = Clock::now();
    s.ok = rt.block_on(body(iters));
    auto t1 = Clock::now();
    double c1 = cpu_seconds();
    long a1 = g_allocs.load();
    std::uint64_t f1 = ringo::detail::t_frames_allocated;
    auto st1 = rt.stats();
    s.ns_per_op = std::chrono::duration<double, std::nano>(t1 - t0).count() / iters;
    s.cpu_ns_per_op = (c1 - c0) * 1e9 / iters;
    s.enters_per_op = double(st1.enters - st0.enters) / iters;
    s.allocs_per_op = double(a1 - a0) / iters;
    // The root task's own frame is one of these; spread over `iters` it rounds away.
    s.frames_per_op = double(f1 - f0) / iters;
    return s;
}

ringo::Task<bool> nop_loop(long iters) {
    for (long i = 0; i < iters; ++i)
        if (co_await ringo::op::nop() != 0)
            co_return false;
    co_return true;
}

// Two tasks hand control back and forth: each yield is one switch.
ringo::Task<bool> yield_loop(long iters) {
    auto other = ringo::spawn([](long n) -> ringo::Task<void> {
        for (long i = 0; i < n; ++i)
            co_await ringo::yield();
    }(iters / 2));
    for (long i = 0; i < iters - iters / 2; ++i)
        co_await ringo::yield();
    co_await other;
    co_return true;
}

ringo::Task<void> empty_task() { co_return; }

ringo::Task<bool> spawn_loop(long iters) {
    for (long i = 0; i < iters; ++i)
        co_await ringo::spawn(empty_task());
    co_return true;
}

struct Case {
    const char* name;
    const char* impl;
    const char* group;
    long default_iters;
    std::function<Sample(long)> fn;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    int reps = 5;
    long iters = 0;
    std::string only;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--reps" && i + 1 < argc)
            reps = std::atoi(argv[++i]);
        else if (a == "--iters" && i + 1 < argc)
            iters = std::atol(argv[++i]);
        else if (a == "--only" && i + 1 < argc)
            only = argv[++i];
        else {
            std::fprintf(stderr, "usage: bench_micro [--reps N] [--iters N] [--only nop-liburing|nop-ringo|yield|spawn]\n");
            return 2;
        }
    }
    if (reps < 1 || iters < 0) {
        std::fprintf(stderr, "bench_micro: --reps must be >= 1 and --iters >= 0\n");
        return 2;
    }
    std::vector<Case> cases = {
        {"nop-liburing", "liburing", "nop", 200000, nop_liburing},
        {"nop-ringo", "ringo", "nop", 200000, [](long n) { return with_runtime(n, nop_loop); }},
        {"yield", "ringo", "yield", 20000000, [](long n) { return with_runtime(n, yield_loop); }},
        {"spawn", "ringo", "spawn", 5000000, [](long n) { return with_runtime(n, spawn_loop); }},
    };
    if (!only.empty()) {
        std::erase_if(cases, [&](const Case& c) { return only != c.name; });
        if (cases.empty()) {
            std::fprintf(stderr, "bench_micro: unknown case '%s'\n", only.c_str());
            return 2;
        }
    }
    // Warm-up, then `reps` rounds with the cases interleaved, the order rotated each round.
    for (auto& c : cases)
        c.fn(std::max(1L, (iters ? iters : c.default_iters) / 10));
    std::vector<std::vector<Sample>> samples(cases.size());
    for (int r = 0; r < reps; ++r)
        for (std::size_t k = 0; k < cases.size(); ++k) {
            std::size_t i = (k + static_cast<std::size_t>(r)) % cases.size();
            samples[i].push_back(cases[i].fn(iters ? iters : cases[i].default_iters));
        }

    std::printf("ring flags: liburing loop and ringo runtime both ask for SINGLE_ISSUER|DEFER_TASKRUN|SUBMIT_ALL "
                "with a registered ring fd; %d runs per case, medians\n", reps);
    std::printf("%-14s %10s %10s %10s %10s %10s %10s %10s\n", "case", "median ns", "min ns", "max ns", "cpu ns",
                "enters/op", "allocs/op", "frames/op");
    double med_of[4] = {0, 0, 0, 0}; // nop-liburing nop-ringo yield spawn
    double spawn_allocs = -1, spawn_frames = -1;
    bool all_ok = true;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        std::vector<double> ns, cpu;
        bool ok = true;
        for (auto& s : samples[i]) {
            ns.push_back(s.ns_per_op);
            cpu.push_back(s.cpu_ns_per_op);
            ok = ok && s.ok;
        }
        all_ok = all_ok && ok;
        double med = median(ns);
        double mn = *std::min_element(ns.begin(), ns.end());
        double mx = *std::max_element(ns.begin(), ns.end());
        const Sample& last = samples[i].back();
        std::printf("%-14s %10.1f %10.1f %10.1f %10.1f %10.2f %10.2f %10.2f%s\n", cases[i].name, med, mn, mx,
                    median(cpu), last.enters_per_op, last.allocs_per_op, last.frames_per_op, ok ? "" : "  FAILED");
        std::string name = cases[i].name;
        int slot = name == "nop-liburing" ? 0 : name == "nop-ringo" ? 1 : name == "yield" ? 2 : 3;
        med_of[slot] = med;
        if (name == "spawn") {
            spawn_allocs = last.allocs_per_op;
            spawn_frames = last.frames_per_op;
        }
        if (name.rfind("nop-", 0) == 0 && last.ring_flags != ring_flags && ok)
            std::printf("  note: %s ran with ring flags 0x%x, not 0x%x\n", cases[i].name, last.ring_flags, ring_flags);
        std::printf("JSON {\"bench\":\"micro\",\"case\":\"%s\",\"impl\":\"%s\",\"group\":\"%s\",\"reps\":%d,"
                    "\"ns_per_op\":%.2f,\"min_ns\":%.2f,\"max_ns\":%.2f,\"cpu_ns_per_op\":%.2f,"
                    "\"enters_per_op\":%.3f,\"allocs_per_op\":%.3f,\"frames_per_op\":%.3f,\"ok\":%s}\n",
                    cases[i].name, cases[i].impl, cases[i].group, reps, med, mn, mx, median(cpu),
                    last.enters_per_op, last.allocs_per_op, last.frames_per_op, ok ? "true" : "false");
    }
    // The targets of the foundation issue, measured on the reference machine (2 vCPU).
    std::printf("targets:\n");
    if (med_of[0] > 0 && med_of[1] > 0) {
        double ratio = med_of[1] / med_of[0];
        std::printf("  NOP round trip  ringo / raw liburing = %.3f  (target <= 1.03)  %s\n", ratio,
                    ratio <= 1.03 ? "met" : "MISSED");
    }
    if (med_of[2] > 0)
        std::printf("  yield/switch    %.1f ns  (target < 6 ns)  %s\n", med_of[2], med_of[2] < 6 ? "met" : "MISSED");
    if (med_of[3] > 0)
        std::printf("  spawn + join    %.1f ns  (target < 120 ns)  %s;  per spawn: %.2f coroutine frames, "
                    "%.2f heap allocations\n",
                    med_of[3], med_of[3] < 120 ? "met" : "MISSED", spawn_frames, spawn_allocs);
    return all_ok ? 0 : 1;
}
