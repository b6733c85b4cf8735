// ringo's runtime micro benchmarks with the command line and JSON line of the Rust
// baselines (bench/rust/README.md), for the suite's "micro" figure:
//   bench_ringo_micro spawn --count N | yield --count N | nop --count N
//   bench_ringo_micro when-all-nop --count N [--batch B]
// Channels come with the channels issue; until then `channel` reports ok:false, unsupported.
#include <ringo/ringo.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

} // namespace

int main(int argc, char** argv) {
    if (argc < 2)
        usage("missing subcommand");
    std::string sub = argv[1];
    long count = -1, batch = 32;
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
        else if (a == "--pairs" || a == "--capacity")
            continue;
        else
            usage(("unknown option " + a).c_str());
    }
    if (sub == "channel" || sub == "xchannel") {
        std::printf("{\"bench\":\"%s\",\"impl\":\"ringo\",\"ok\":false,\"unsupported\":true,"
                    "\"error\":\"unsupported: ringo channels are not built yet\"}\n", sub.c_str());
        return 1;
    }
    if (count <= 0)
        usage("--count N is required");
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
    else if (sub == "when-all-nop") {
        ops = (count + batch - 1) / batch * batch;
        ok = rt.block_on(when_all_loop(count, batch));
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
