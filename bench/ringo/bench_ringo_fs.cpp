// ringo::fs::File::read_at against op::read, side by side in one run: 4 KiB random reads of a
// file in the page cache, one task, one read at a time (the cost of the call path, not of the
// device). Rounds alternate which form goes first; each round measures both forms over the
// same offsets. Prints per-form CPU time per read (process CPU clock: user + system), wall
// time per read, and heap allocations per read (a counting global operator new), the median
// and spread over the rounds, then one JSON line.
//
//   bench_ringo_fs [--file PATH] [--size-mib N] [--reads N] [--rounds N] [--seed N] [--form both|op|file]
// Without --file it makes a file of --size-mib MiB (default 64) in /var/tmp and removes it.
// --form op or file runs one form only: for callgrind's user-space instructions per read, as
// the slope between two --reads counts (bench/micro/callgrind.sh's method).
#include <ringo/fs/file.hpp>
#include <ringo/ringo.hpp>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "alloc_count.hpp" // counts heap allocations (g_allocs)

namespace {

constexpr std::size_t kBlock = 4096;

std::uint64_t clock_ns(clockid_t c) {
    timespec ts{};
    clock_gettime(c, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

struct Sample {
    double cpu_ns = 0, wall_ns = 0, allocs = 0;
};

struct Form {
    const char* name;
    std::vector<Sample> rounds;
};

// op::read: the kernel's int.
ringo::Task<Sample> with_op(int fd, const std::vector<std::uint64_t>& offs, std::byte* buf, long* bad) {
    long a0 = g_allocs.load(std::memory_order_relaxed);
    std::uint64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
    for (std::uint64_t off : offs) {
        int r = co_await ringo::op::read(fd, buf, kBlock, off);
        if (r != static_cast<int>(kBlock))
            ++*bad;
    }
    std::uint64_t c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = clock_ns(CLOCK_MONOTONIC);
    double n = static_cast<double>(offs.size());
    co_return Sample{double(c1 - c0) / n, double(w1 - w0) / n, double(g_allocs.load() - a0) / n};
}

// fs::File::read_at: a Result<size_t>.
ringo::Task<Sample> with_file(ringo::fs::File& f, const std::vector<std::uint64_t>& offs, std::byte* buf, long* bad) {
    long a0 = g_allocs.load(std::memory_order_relaxed);
    std::uint64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
    std::span<std::byte> b(buf, kBlock);
    for (std::uint64_t off : offs) {
        ringo::Result<std::size_t> r = co_await f.read_at(b, off);
        if (!r || *r != kBlock)
            ++*bad;
    }
    std::uint64_t c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = clock_ns(CLOCK_MONOTONIC);
    double n = static_cast<double>(offs.size());
    co_return Sample{double(c1 - c0) / n, double(w1 - w0) / n, double(g_allocs.load() - a0) / n};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void usage_exit(const char* msg) {
    std::fprintf(stderr, "bench_ringo_fs: %s\nusage: bench_ringo_fs [--file PATH] [--size-mib N] [--reads N] "
                         "[--rounds N] [--seed N]\n", msg);
    std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
    std::string file;
    std::uint64_t size_mib = 64, reads = 200000, rounds = 9, seed = 1;
    std::string form = "both";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc)
            usage_exit(("missing value after " + a).c_str());
        const char* v = argv[++i];
        if (a == "--file")
            file = v;
        else if (a == "--size-mib")
            size_mib = std::strtoull(v, nullptr, 10);
        else if (a == "--reads")
            reads = std::strtoull(v, nullptr, 10);
        else if (a == "--rounds")
            rounds = std::strtoull(v, nullptr, 10);
        else if (a == "--seed")
            seed = std::strtoull(v, nullptr, 10);
        else if (a == "--form")
            form = v;
        else
            usage_exit(("unknown option " + a).c_str());
    }
    if (size_mib == 0 || reads == 0 || rounds == 0)
        usage_exit("sizes and counts must be positive");
    if (form != "both" && form != "op" && form != "file")
        usage_exit("--form must be both, op or file");
    int only = form == "op" ? 0 : form == "file" ? 1 : -1;

    bool made = false;
    if (file.empty()) {
        char tmpl[] = "/var/tmp/bench-ringo-fs-XXXXXX";
        int fd = ::mkstemp(tmpl);
        if (fd < 0)
            usage_exit("cannot make a file in /var/tmp");
        std::vector<char> chunk(1 << 20, 'r');
        for (std::uint64_t i = 0; i < size_mib; ++i)
            if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size()))
                usage_exit("cannot write the file");
        ::close(fd);
        file = tmpl;
        made = true;
    }
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        usage_exit(("cannot open " + file + ": " + std::strerror(errno)).c_str());
    off_t size = ::lseek(fd, 0, SEEK_END);
    std::uint64_t blocks = static_cast<std::uint64_t>(size) / kBlock;
    if (blocks == 0)
        usage_exit("the file is smaller than 4 KiB");
    { // into the page cache
        std::vector<char> b(1 << 20);
        for (off_t o = 0; o < size; o += static_cast<off_t>(b.size()))
            if (::pread(fd, b.data(), b.size(), o) < 0)
                break;
    }
    std::vector<std::uint64_t> offs(reads);
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& o : offs) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        o = (x % blocks) * kBlock;
    }

    ringo::Runtime rt;
    Form forms[2] = {{"op::read", {}}, {"fs::File::read_at", {}}};
    long bad = 0;
    rt.block_on([](int raw, const std::string& path, std::vector<std::uint64_t>& offs, Form* forms, std::uint64_t rounds,
                   long* bad, int only) -> ringo::Task<void> {
        ringo::Result<ringo::fs::File> f = co_await ringo::fs::File::open(path);
        if (!f) {
            std::fprintf(stderr, "bench_ringo_fs: open: %s\n", f.message().c_str());
            std::exit(1);
        }
        alignas(4096) static std::byte buf[kBlock];
        std::vector<std::uint64_t> warm(offs.begin(), offs.begin() + std::min<std::size_t>(offs.size(), 10000));
        (void)co_await with_op(raw, warm, buf, bad);
        (void)co_await with_file(*f, warm, buf, bad);
        for (std::uint64_t r = 0; r < rounds; ++r) {
            for (int k = 0; k < 2; ++k) {
                int which = (r % 2 == 0) ? k : 1 - k; // alternate which goes first
                if (only >= 0 && which != only)
                    continue;
                Sample s = which == 0 ? co_await with_op(raw, offs, buf, bad) : co_await with_file(*f, offs, buf, bad);
                forms[which].rounds.push_back(s);
            }
        }
    }(fd, file, offs, forms, rounds, &bad, only));
    ::close(fd);
    if (made)
        ::unlink(file.c_str());

    std::printf("4 KiB random reads from the page cache, 1 task, QD 1: %" PRIu64 " reads x %" PRIu64
                " rounds, alternating, file %lld MiB\n",
                reads, rounds, static_cast<long long>(size >> 20));
    std::printf("%-20s %14s %14s %14s %14s %12s\n", "form", "cpu ns/read", "cpu min..max", "wall ns/read",
                "wall min..max", "allocs/read");
    if (only >= 0) {
        const Sample& s = forms[only].rounds.back();
        std::printf("%s: %.1f cpu ns/read, %.4f allocs/read\n", forms[only].name, s.cpu_ns, s.allocs);
        return bad ? 1 : 0;
    }
    double med_cpu[2], med_wall[2], med_alloc[2];
    for (int i = 0; i < 2; ++i) {
        std::vector<double> c, w, a;
        for (const Sample& s : forms[i].rounds)
            c.push_back(s.cpu_ns), w.push_back(s.wall_ns), a.push_back(s.allocs);
        med_cpu[i] = median(c), med_wall[i] = median(w), med_alloc[i] = median(a);
        auto [cmin, cmax] = std::minmax_element(c.begin(), c.end());
        auto [wmin, wmax] = std::minmax_element(w.begin(), w.end());
        char cr[32], wr[32];
        std::snprintf(cr, sizeof cr, "%.0f..%.0f", *cmin, *cmax);
        std::snprintf(wr, sizeof wr, "%.0f..%.0f", *wmin, *wmax);
        std::printf("%-20s %14.1f %14s %14.1f %14s %12.4f\n", forms[i].name, med_cpu[i], cr, med_wall[i], wr,
                    med_alloc[i]);
    }
    std::vector<double> ratio;
    for (std::size_t r = 0; r < forms[0].rounds.size(); ++r)
        ratio.push_back(forms[1].rounds[r].cpu_ns / forms[0].rounds[r].cpu_ns);
    std::printf("File::read_at / op::read CPU per read, median of the per-round ratios: %.3f\n", median(ratio));
    std::printf("{\"bench\":\"fs_read_at\",\"bs\":4096,\"reads\":%" PRIu64 ",\"rounds\":%" PRIu64
                ",\"op_cpu_ns\":%.1f,\"file_cpu_ns\":%.1f,\"op_wall_ns\":%.1f,\"file_wall_ns\":%.1f,"
                "\"op_allocs\":%.4f,\"file_allocs\":%.4f,\"cpu_ratio\":%.4f,\"errors\":%ld}\n",
                reads, rounds, med_cpu[0], med_cpu[1], med_wall[0], med_wall[1], med_alloc[0], med_alloc[1],
                median(ratio), bad);
    return bad ? 1 : 0;
}
