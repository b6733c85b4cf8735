// pipes_ringo: ringo's version of bench/net's bench_pipes --mode uring (same command line with
// --mode ringo, same JSON line; see bench/net/README.md). P pipes, R rounds; in every round
// each pipe gets one write of S bytes and one read of S bytes, in one thread. One run per
// invocation. Every byte read is compared with what was written.
//
// Written the way a ringo user batches operations: every round, the conductor (the root task)
// spawns a reader task that awaits when_all over the P op::reads (one group: the SQEs go to the
// kernel together and the task resumes once, after the last CQE), and itself awaits when_all
// over the P op::writes, then joins the reader:
//   prefill 0: the conductor first awaits an op::nop, so the P reads go to the kernel in one
//              submission on empty pipes before any write exists (the baseline's first
//              io_uring_enter); the writes go in the next submission, which also waits;
//   prefill 1: the writes are gathered first and the reads after them, all in one submission
//              (the data is in the pipe when each read is issued).
// A short read is re-issued for the rest.
#include <exception>
#include <memory>
#include <vector>

#include "ringo_net.hpp"

namespace {

const char* kUsage =
    "usage: pipes_ringo --mode ringo --pipes P --rounds R [--prefill 0|1] [--size BYTES]\n"
    "                   [--cpu C] [--timeout S]\n"
    "  One run of: R rounds, each writing S bytes to and reading S bytes from each of P pipes,\n"
    "  through one ringo Runtime (when_all over op::read / op::write each round).\n"
    "  Prints one JSON line (bench \"pipes\").\n"
    "  --mode ringo     the only mode (the option is kept so the command line matches\n"
    "                   bench_pipes)\n"
    "  --pipes P        number of pipes (1..4096; the benchmark uses 128)\n"
    "  --rounds R       rounds (1..10000000; the benchmark uses 256)\n"
    "  --prefill 0|1    0 (default): reads are issued on empty pipes; 1: data already there\n"
    "  --size BYTES     bytes per write/read (1..4096, default 64)\n"
    "  --cpu C          pin the thread to CPU C (default: not pinned)\n"
    "  --timeout S      give up (ok=false) after S seconds (default 60)\n";

struct State {
    ringo::Runtime* rt = nullptr;
    size_t npipes = 0;
    uint32_t rounds = 0;
    size_t size = 0;
    bool prefill = false;
    std::vector<int> rfd, wfd;
    std::vector<std::unique_ptr<unsigned char[]>> out, in;
    uint32_t round = 0;  // the current round
    uint32_t done_rounds = 0;
    uint64_t errors = 0;
    const std::atomic<bool>* timed_out = nullptr;
    // measured region, taken inside the conductor
    uint64_t t0 = 0, t1 = 0, cpu0 = 0, cpu1 = 0, enters0 = 0, enters1 = 0;
    nb::SysCounters sys0{}, sys1{};

    void error(size_t i, const char* what, long v) {
        if (errors++ < 10 && !timed_out->load(std::memory_order_relaxed))
            std::fprintf(stderr, "pipes_ringo: pipe %zu round %u: %s (%ld)\n", i, round, what, v);
    }
};

// Reads S bytes from every pipe (one group of P reads), then checks each pipe's bytes.
ringo::Task<void> read_all(State& s) {
    std::vector<ringo::op::Read> reads;
    reads.reserve(s.npipes);
    for (size_t i = 0; i < s.npipes; ++i)
        reads.push_back(ringo::op::read(s.rfd[i], s.in[i].get(), s.size, ringo::op::current_pos));
    const std::vector<int> res = co_await ringo::when_all(std::move(reads));
    for (size_t i = 0; i < s.npipes; ++i) {
        unsigned char* buf = s.in[i].get();
        int r = res[i];
        size_t got = r > 0 ? static_cast<size_t>(r) : 0;
        while (r > 0 && got < s.size) {  // a short read: read the rest
            r = co_await ringo::op::read(s.rfd[i], buf + got, s.size - got, ringo::op::current_pos);
            if (r > 0)
                got += static_cast<size_t>(r);
        }
        if (r <= 0)
            s.error(i, r == 0 ? "read: EOF" : "read failed", r);
        else if (std::memcmp(buf, s.out[i].get(), s.size) != 0)
            s.error(i, "data differs", 0);
    }
}

// Writes S bytes to every pipe (one group of P writes).
ringo::Task<void> write_all(State& s) {
    std::vector<ringo::op::Write> writes;
    writes.reserve(s.npipes);
    for (size_t i = 0; i < s.npipes; ++i)
        writes.push_back(ringo::op::write(s.wfd[i], s.out[i].get(), s.size, ringo::op::current_pos));
    const std::vector<int> res = co_await ringo::when_all(std::move(writes));
    for (size_t i = 0; i < s.npipes; ++i)
        if (res[i] != static_cast<int>(s.size))
            s.error(i, "write returned", res[i]);
}

ringo::Task<void> conductor(State& s) {
    s.enters0 = s.rt->stats().enters;
    s.sys0 = nb::g_sys;
    s.cpu0 = nb::process_cpu_ns();
    s.t0 = nb::now_ns();
    for (uint32_t r = 0; r < s.rounds && s.errors == 0 && !s.timed_out->load(std::memory_order_relaxed); ++r) {
        s.round = r;
        for (size_t i = 0; i < s.npipes; ++i) {
            const uint64_t v = (static_cast<uint64_t>(r) << 32) | i;
            std::memcpy(s.out[i].get(), &v, std::min(s.size, sizeof v));
        }
        // The reader starts when the conductor next suspends: after the nop (prefill 0), or
        // after the writes were gathered (prefill 1).
        ringo::JoinHandle<void> reader = ringo::spawn(read_all(s));
        if (!s.prefill)
            (void)co_await ringo::op::nop();  // the reads reach the kernel, on empty pipes
        co_await write_all(s);
        co_await reader;
        s.done_rounds = r + 1;
    }
    s.t1 = nb::now_ns();
    s.cpu1 = nb::process_cpu_ns();
    s.enters1 = s.rt->stats().enters;
    s.sys1 = nb::g_sys;
}

}  // namespace

int main(int argc, char** argv) {
    nb::Args args(argc, argv, kUsage,
                  {{"mode", true}, {"pipes", true}, {"rounds", true}, {"prefill", true}, {"size", true}, {"cpu", true},
                   {"timeout", true}});
    const std::string mode = args.need_choice("mode", {"ringo"});
    const size_t npipes = static_cast<size_t>(args.need_int("pipes", 1, 4096));
    const uint32_t rounds = static_cast<uint32_t>(args.need_int("rounds", 1, 10000000));
    const bool prefill = args.get_int("prefill", 0, 0, 1) == 1;
    const size_t size = static_cast<size_t>(args.get_int("size", 64, 1, 4096));
    const int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
    const double timeout_s = args.get_double("timeout", 60, 0.1, 86400);

    ::signal(SIGPIPE, SIG_IGN);
    nb::raise_nofile();
    std::string ring_setup = "-";
    auto fail_json = [&](const std::string& why) {
        std::fprintf(stderr, "pipes_ringo: %s\n", why.c_str());
        nb::Json j;
        j.add("bench", "pipes").add("mode", mode).add("pipes", npipes).add("rounds", rounds)
            .add("prefill", prefill ? 1 : 0).add("size", size).add("ms", 0.0).add("ring_setup", ring_setup)
            .add("errors", 1).add("ok", false).add("error", why);
        j.print();
        return 1;
    };

    // ---- set-up
    State s;
    s.npipes = npipes;
    s.rounds = rounds;
    s.size = size;
    s.prefill = prefill;
    s.rfd.assign(npipes, -1);
    s.wfd.assign(npipes, -1);
    auto close_all = [&] {
        for (size_t i = 0; i < npipes; ++i) {
            if (s.rfd[i] >= 0)
                ::close(s.rfd[i]);
            if (s.wfd[i] >= 0)
                ::close(s.wfd[i]);
            s.rfd[i] = s.wfd[i] = -1;
        }
    };
    for (size_t i = 0; i < npipes; ++i) {
        int pp[2];
        if (::pipe2(pp, O_CLOEXEC) != 0) {
            std::string why = std::string("pipe2: ") + std::strerror(errno);
            close_all();
            return fail_json(why);
        }
        s.rfd[i] = pp[0];
        s.wfd[i] = pp[1];
    }
    s.out.resize(npipes);
    s.in.resize(npipes);
    for (size_t i = 0; i < npipes; ++i) {
        s.out[i] = std::make_unique<unsigned char[]>(size);
        s.in[i] = std::make_unique<unsigned char[]>(size);
        nb::fill_pattern(s.out[i].get(), size, i + 77);
    }

    unsigned want = 64;
    while (want < 2 * npipes + 2)  // both groups and the nop fit in the SQ at once
        want *= 2;
    std::unique_ptr<ringo::Runtime> rt;
    try {
        rt = std::make_unique<ringo::Runtime>(ringo::RuntimeOptions{}.sq_entries(want).cq_entries(2 * want));
    } catch (const std::exception& e) {
        close_all();
        return fail_json(std::string("runtime setup: ") + e.what());
    }
    ring_setup = rb::ring_setup(*rt);
    s.rt = rt.get();
    if (!nb::pin_cpu(cpu)) {
        rt.reset();
        close_all();
        return fail_json("cannot pin to --cpu");
    }

    // The bound: at the deadline, write filler into every pipe so any pending read completes
    // (with bytes that fail the check) and the conductor stops after that round; if the run is
    // still not over 3 s later, give up hard.
    std::atomic<bool> timed_out{false};
    s.timed_out = &timed_out;
    rb::Watchdog wd;
    wd.start(
        timeout_s,
        [&] {
            timed_out.store(true, std::memory_order_relaxed);
            std::vector<unsigned char> filler(size, 0xff);
            for (size_t i = 0; i < npipes; ++i)
                [[maybe_unused]] ssize_t w = ::write(s.wfd[i], filler.data(), size);
        },
        [&] {
            std::fprintf(stderr, "pipes_ringo: timed out after %.1f s and did not stop\n", timeout_s);
            nb::Json j;
            j.add("bench", "pipes").add("mode", mode).add("pipes", npipes).add("rounds", rounds)
                .add("prefill", prefill ? 1 : 0).add("size", size).add("ms", 0.0).add("ring_setup", ring_setup)
                .add("errors", 1).add("ok", false).add("error", "timed out");
            j.print();
            std::_Exit(1);
        });

    // ---- the run (its measured region is taken inside the conductor)
    try {
        rt->block_on(conductor(s));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pipes_ringo: %s\n", e.what());
        ++s.errors;
    }
    wd.stop();
    if (s.t1 == 0) {  // the run did not get to its end
        s.t1 = nb::now_ns();
        s.cpu1 = nb::process_cpu_ns();
        s.enters1 = rt->stats().enters;
        s.sys1 = nb::g_sys;
    }
    if (timed_out.load()) {
        std::fprintf(stderr, "pipes_ringo: timed out after %.1f s (round %u of %u)\n", timeout_s, s.done_rounds, rounds);
        ++s.errors;
    }
    rt.reset();
    close_all();

    nb::SysCounters sc = s.sys1 - s.sys0;
    sc.loop += s.enters1 - s.enters0;
    const double ms = static_cast<double>(s.t1 - s.t0) / 1e6;
    const double ops = static_cast<double>(rounds) * static_cast<double>(npipes);
    const bool ok = s.errors == 0 && s.done_rounds == rounds;
    nb::Json j;
    j.add("bench", "pipes")
        .add("mode", mode)
        .add("pipes", npipes)
        .add("rounds", rounds)
        .add("prefill", prefill ? 1 : 0)
        .add("size", size)
        .add("ms", ms, 3)
        .add("cpu_ms", static_cast<double>(s.cpu1 - s.cpu0) / 1e6, 3)
        .add("ns_per_op", ms * 1e6 / ops, 1)
        .add("syscalls_total", sc.total())
        .add("syscalls_per_op", static_cast<double>(sc.total()) / ops, 4)
        .add("loop_syscalls_per_round", static_cast<double>(sc.loop) / rounds, 3)
        .add("ring_setup", ring_setup)
        .add("errors", s.errors)
        .add("ok", ok);
    j.print();
    return ok ? 0 : 1;
}
