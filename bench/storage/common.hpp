// Shared pieces of the storage baselines (bench_uring, bench_aio, bench_sync):
// command line, workload generator (sequential / seeded random offsets, 80/20 mix),
// latency histogram, aligned buffers, CPU time, and the one-line JSON result.
//
// Conventions every implementation (C, C++, Rust, ringo) follows, so numbers compare:
//   * op k (k = 0, 1, 2, ... in issue order) uses
//       sequential:  offset = (k mod nblocks) * bs, nblocks = file_size / bs
//       random:      offset = offsets[k mod n] (little-endian u64 file written by the driver)
//   * mixed: op k is a write when k mod 5 == 4 (80 % reads, 20 % writes), else a read.
//   * every completion is checked: a result other than bs (short transfer or -errno) is an error;
//     after the first error no new I/O is issued, in-flight I/O is drained, and ok is false.
//   * the measured interval starts after setup (files opened, buffers allocated and registered)
//     and ends at the last completion; I/O already in flight at the deadline is drained and counted.
#pragma once

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace sb {

// ---------------------------------------------------------------- time

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline double cpu_seconds_now() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto tv = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// ---------------------------------------------------------------- latency histogram
// Log-linear buckets: values below 32 ns are exact; above, each power of two is split into 32
// buckets (relative error below 3.2 %). 2048 counters, O(1) insert, no sorting.

class LatencyHistogram {
public:
    static constexpr int kSubBits = 5;
    static constexpr int kSub = 1 << kSubBits;
    static constexpr int kBuckets = 64 * kSub;

    void add(uint64_t v) {
        counts_[index(v)]++;
        total_++;
    }
    void merge(const LatencyHistogram& o) {
        for (int i = 0; i < kBuckets; i++) counts_[i] += o.counts_[i];
        total_ += o.total_;
    }
    uint64_t total() const { return total_; }

    // Value at quantile q in [0, 1]; the midpoint of the bucket holding the rank. 0 when empty.
    uint64_t quantile(double q) const {
        if (total_ == 0) return 0;
        uint64_t rank = uint64_t(q * double(total_));
        if (rank < 1) rank = 1;
        if (rank > total_) rank = total_;
        uint64_t seen = 0;
        for (int i = 0; i < kBuckets; i++) {
            seen += counts_[i];
            if (seen >= rank) return midpoint(i);
        }
        return midpoint(kBuckets - 1);
    }

private:
    static int index(uint64_t v) {
        if (v < uint64_t(kSub)) return int(v);
        int e = 63 - __builtin_clzll(v);  // e >= kSubBits
        int group = e - kSubBits + 1;
        int sub = int((v >> (e - kSubBits)) - uint64_t(kSub));
        return group * kSub + sub;
    }
    static uint64_t midpoint(int i) {
        if (i < kSub) return uint64_t(i);
        int group = i / kSub, sub = i % kSub;
        int shift = group - 1;
        uint64_t lo = (uint64_t(kSub) + uint64_t(sub)) << shift;
        return lo + ((uint64_t(1) << shift) >> 1);
    }

    uint64_t counts_[kBuckets] = {};
    uint64_t total_ = 0;
};

// ---------------------------------------------------------------- options

enum class Mode { SeqRead, RandRead, SeqWrite, RandWrite, Mixed };

struct Options {
    std::string program;       // argv[0] basename, for usage
    std::string mode_name;     // canonical: seqread randread write randwrite mixed
    Mode mode = Mode::SeqRead;
    bool random = false;       // pattern
    std::string file;
    std::string offsets_file;
    uint64_t bs = 0;
    unsigned qd = 1;
    double seconds = 0;
    std::string variant = "buffered";
    // program-specific options land here as name -> value
    std::vector<std::pair<std::string, std::string>> extra;

    bool reads_only() const { return mode == Mode::SeqRead || mode == Mode::RandRead; }
    bool writes_only() const { return mode == Mode::SeqWrite || mode == Mode::RandWrite; }
    const char* pattern() const { return random ? "rand" : "seq"; }
    const std::string* get(std::string_view name) const {
        for (auto& kv : extra)
            if (kv.first == name) return &kv.second;
        return nullptr;
    }
};

[[noreturn]] inline void usage_exit(const char* usage, const char* fmt, ...) {
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        std::fputs("error: ", stderr);
        std::vfprintf(stderr, fmt, ap);
        std::fputc('\n', stderr);
        va_end(ap);
    }
    std::fputs(usage, stderr);
    std::exit(2);
}

inline bool parse_u64(const char* s, uint64_t& out) {
    if (!s || !*s) return false;
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (errno || !end || *end || s[0] == '-') return false;
    out = v;
    return true;
}

inline bool parse_double(const char* s, double& out) {
    if (!s || !*s) return false;
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (errno || !end || *end) return false;
    out = v;
    return true;
}

// Parses "<mode> --file P --bs N --qd N --seconds S [--variant V] [--offsets F] [--pattern seq|rand]"
// plus the program-specific options named in `extra_names` (each takes one value).
inline Options parse_options(int argc, char** argv, const char* usage,
                             std::initializer_list<const char*> extra_names) {
    Options o;
    o.program = argc > 0 ? argv[0] : "bench";
    if (argc < 2) usage_exit(usage, nullptr);
    std::string_view m = argv[1];
    if (m == "-h" || m == "--help") {
        std::fputs(usage, stdout);
        std::exit(0);
    }
    std::string pattern_opt;
    if (m == "seqread" || m == "read") { o.mode = Mode::SeqRead; o.mode_name = "seqread"; }
    else if (m == "randread") { o.mode = Mode::RandRead; o.mode_name = "randread"; o.random = true; }
    else if (m == "write" || m == "seqwrite") { o.mode = Mode::SeqWrite; o.mode_name = "write"; }
    else if (m == "randwrite") { o.mode = Mode::RandWrite; o.mode_name = "randwrite"; o.random = true; }
    else if (m == "mixed") { o.mode = Mode::Mixed; o.mode_name = "mixed"; }
    else if (m == "seqmixed") { o.mode = Mode::Mixed; o.mode_name = "mixed"; pattern_opt = "seq"; }
    else if (m == "randmixed") { o.mode = Mode::Mixed; o.mode_name = "mixed"; pattern_opt = "rand"; }
    else usage_exit(usage, "unknown mode '%s'", argv[1]);

    bool have_bs = false, have_qd = false, have_seconds = false;
    for (int i = 2; i < argc; i++) {
        std::string_view a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(usage, stdout);
            std::exit(0);
        }
        if (a.size() < 3 || a.substr(0, 2) != "--") usage_exit(usage, "unexpected argument '%s'", argv[i]);
        std::string name(a.substr(2));
        std::string value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
        } else {
            if (i + 1 >= argc) usage_exit(usage, "option --%s needs a value", name.c_str());
            value = argv[++i];
        }
        uint64_t u = 0;
        if (name == "file") o.file = value;
        else if (name == "offsets") o.offsets_file = value;
        else if (name == "variant") o.variant = value;
        else if (name == "pattern") pattern_opt = value;
        else if (name == "bs") {
            if (!parse_u64(value.c_str(), u) || u == 0 || u > (64u << 20) || u % 512 != 0)
                usage_exit(usage, "--bs must be a multiple of 512 between 512 and 64 MiB, got '%s'", value.c_str());
            o.bs = u;
            have_bs = true;
        } else if (name == "qd") {
            if (!parse_u64(value.c_str(), u) || u == 0 || u > 4096)
                usage_exit(usage, "--qd must be 1..4096, got '%s'", value.c_str());
            o.qd = unsigned(u);
            have_qd = true;
        } else if (name == "seconds") {
            double d = 0;
            if (!parse_double(value.c_str(), d) || !(d > 0) || d > 3600)
                usage_exit(usage, "--seconds must be in (0, 3600], got '%s'", value.c_str());
            o.seconds = d;
            have_seconds = true;
        } else {
            bool known = false;
            for (auto* e : extra_names)
                if (name == e) known = true;
            if (!known) usage_exit(usage, "unknown option --%s", name.c_str());
            o.extra.emplace_back(name, value);
        }
    }
    if (o.file.empty()) usage_exit(usage, "--file is required");
    if (!have_bs) usage_exit(usage, "--bs is required");
    if (!have_qd) o.qd = 1;
    if (!have_seconds) usage_exit(usage, "--seconds is required");
    if (o.mode == Mode::Mixed) {
        if (pattern_opt.empty()) pattern_opt = o.offsets_file.empty() ? "seq" : "rand";
        if (pattern_opt == "rand") o.random = true;
        else if (pattern_opt == "seq") o.random = false;
        else usage_exit(usage, "--pattern must be seq or rand");
    } else if (!pattern_opt.empty() && pattern_opt != o.pattern()) {
        usage_exit(usage, "--pattern %s contradicts mode %s", pattern_opt.c_str(), argv[1]);
    }
    if (o.random && o.offsets_file.empty())
        usage_exit(usage, "random pattern needs --offsets FILE (little-endian u64 offsets)");
    return o;
}

// ---------------------------------------------------------------- file helpers

// Size in bytes of a regular file or block device; -errno on failure.
inline int64_t file_size(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -errno;
    if (S_ISBLK(st.st_mode)) {
        uint64_t sz = 0;
        if (ioctl(fd, BLKGETSIZE64, &sz) != 0) return -errno;
        return int64_t(sz);
    }
    return int64_t(st.st_size);
}

// Block-aligned, reused I/O buffers (4096-aligned, so they serve O_DIRECT too).
struct Buffers {
    std::vector<void*> ptrs;
    size_t size = 0;
    Buffers() = default;
    Buffers(const Buffers&) = delete;
    Buffers& operator=(const Buffers&) = delete;
    ~Buffers() {
        for (void* p : ptrs) std::free(p);
    }
    bool allocate(unsigned n, size_t bs) {
        size = (bs + 4095) & ~size_t(4095);
        for (unsigned i = 0; i < n; i++) {
            void* p = nullptr;
            if (posix_memalign(&p, 4096, size) != 0) return false;
            // A fixed non-zero pattern: written data is recognisable, pages are touched up front.
            std::memset(p, 0x5a ^ int(i & 0xff), size);
            ptrs.push_back(p);
        }
        return true;
    }
    void* operator[](unsigned i) const { return ptrs[i]; }
};

// ---------------------------------------------------------------- workload

struct NextOp {
    uint64_t offset;
    bool write;
};

class Workload {
public:
    // Returns an empty string on success, else a message (the caller prints usage and exits 2).
    std::string init(const Options& o, int64_t fsize) {
        mode_ = o.mode;
        bs_ = o.bs;
        random_ = o.random;
        if (fsize < int64_t(o.bs)) return "file '" + o.file + "' is smaller than one block";
        nblocks_ = uint64_t(fsize) / o.bs;
        if (random_) {
            FILE* f = std::fopen(o.offsets_file.c_str(), "rb");
            if (!f) return "cannot open offsets file '" + o.offsets_file + "': " + std::strerror(errno);
            unsigned char buf[8];
            while (std::fread(buf, 1, 8, f) == 8) {
                uint64_t v = 0;
                for (int i = 7; i >= 0; i--) v = (v << 8) | buf[i];
                offsets_.push_back(v);
            }
            bool trailing = std::fgetc(f) != EOF;
            std::fclose(f);
            if (trailing) return "offsets file size is not a multiple of 8";
            if (offsets_.empty()) return "offsets file is empty";
            for (uint64_t off : offsets_) {
                if (off % 512 != 0 || off + o.bs > uint64_t(fsize)) {
                    char msg[160];
                    std::snprintf(msg, sizeof msg,
                                  "offset %" PRIu64 " is not 512-aligned or runs past the file (size %" PRId64
                                  ", bs %" PRIu64 ")",
                                  off, fsize, o.bs);
                    return msg;
                }
            }
        }
        return {};
    }

    NextOp next() {
        uint64_t k = k_++;
        NextOp op;
        op.offset = random_ ? offsets_[k % offsets_.size()] : (k % nblocks_) * bs_;
        switch (mode_) {
        case Mode::SeqRead:
        case Mode::RandRead: op.write = false; break;
        case Mode::SeqWrite:
        case Mode::RandWrite: op.write = true; break;
        case Mode::Mixed: op.write = (k % 5) == 4; break;
        }
        return op;
    }

private:
    Mode mode_ = Mode::SeqRead;
    uint64_t bs_ = 0, nblocks_ = 1, k_ = 0;
    bool random_ = false;
    std::vector<uint64_t> offsets_;
};

// ---------------------------------------------------------------- results

struct Stats {
    uint64_t reads = 0, writes = 0, bytes = 0, errors = 0, syscalls = 0;
    LatencyHistogram read_lat, write_lat;
    std::string first_error;

    void complete(bool write, long long res, uint64_t bs, uint64_t latency_ns) {
        if (res == (long long)bs) {
            (write ? writes : reads)++;
            bytes += bs;
            (write ? write_lat : read_lat).add(latency_ns);
            return;
        }
        errors++;
        if (first_error.empty()) {
            char msg[160];
            if (res < 0)
                std::snprintf(msg, sizeof msg, "%s failed: %s (errno %lld)", write ? "write" : "read",
                              std::strerror(int(-res)), -res);
            else
                std::snprintf(msg, sizeof msg, "short %s: %lld of %" PRIu64 " bytes", write ? "write" : "read",
                              res, bs);
            first_error = msg;
        }
    }
};

inline std::string json_escape(std::string_view s) {
    std::string r;
    for (char c : s) {
        switch (c) {
        case '"': r += "\\\""; break;
        case '\\': r += "\\\\"; break;
        case '\n': r += "\\n"; break;
        case '\t': r += "\\t"; break;
        default:
            if ((unsigned char)c < 0x20) {
                char b[8];
                std::snprintf(b, sizeof b, "\\u%04x", c);
                r += b;
            } else {
                r += c;
            }
        }
    }
    return r;
}

struct Result {
    std::string impl, variant;
    std::vector<std::pair<std::string, std::string>> extra;  // already-JSON values
    double seconds = 0, cpu_seconds = 0;
    bool unsupported = false;
    // False when the program cannot count its system calls (ringo on its epoll engine, whose
    // file reads run on a thread pool): "syscalls" is then null, and the driver counts them in
    // an untimed run under strace.
    bool syscalls_counted = true;
    std::string error;  // set => ok false
};

// Prints the one JSON line. ok = no error text and no I/O errors.
inline void print_result(const Options& o, const Stats& s, const Result& r) {
    std::string err = r.error;
    if (err.empty() && s.errors) err = std::to_string(s.errors) + " I/O errors; first: " + s.first_error;
    bool ok = err.empty();
    LatencyHistogram all = s.read_lat;
    all.merge(s.write_lat);
    std::string line;
    char b[256];
    auto add = [&](const char* k, const std::string& json_value) {
        line += line.empty() ? "{" : ",";
        line += "\"";
        line += k;
        line += "\":";
        line += json_value;
    };
    auto str = [](std::string_view v) { return "\"" + json_escape(v) + "\""; };
    auto u64 = [&](uint64_t v) { std::snprintf(b, sizeof b, "%" PRIu64, v); return std::string(b); };
    auto dbl = [&](double v) { std::snprintf(b, sizeof b, "%.6f", v); return std::string(b); };
    add("bench", str(o.mode_name));
    add("impl", str(r.impl));
    add("variant", str(r.variant));
    add("pattern", str(o.pattern()));
    add("qd", u64(o.qd));
    add("bs", u64(o.bs));
    add("ops", u64(s.reads + s.writes));
    add("reads", u64(s.reads));
    add("writes", u64(s.writes));
    add("bytes", u64(s.bytes));
    add("seconds", dbl(r.seconds));
    add("cpu_seconds", dbl(r.cpu_seconds));
    add("syscalls", r.syscalls_counted ? u64(s.syscalls) : std::string("null"));
    add("errors", u64(s.errors));
    add("ok", ok ? "true" : "false");
    add("p50_ns", u64(all.quantile(0.50)));
    add("p99_ns", u64(all.quantile(0.99)));
    if (o.mode == Mode::Mixed) {
        add("read_p50_ns", u64(s.read_lat.quantile(0.50)));
        add("read_p99_ns", u64(s.read_lat.quantile(0.99)));
        add("write_p50_ns", u64(s.write_lat.quantile(0.50)));
        add("write_p99_ns", u64(s.write_lat.quantile(0.99)));
    }
    for (auto& kv : r.extra) add(kv.first.c_str(), kv.second);
    if (r.unsupported) add("unsupported", "true");
    if (!ok) add("error", str(err));
    line += "}\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
}

// A failure before any I/O ran (open, setup): one JSON line with ok false.
inline int fail_before_io(const Options& o, Result r, std::string msg, bool unsupported) {
    Stats s;
    r.error = unsupported ? "unsupported: " + msg : std::move(msg);
    r.unsupported = unsupported;
    print_result(o, s, r);
    return 1;
}

inline std::string errno_text(const char* what, int err) {
    return std::string(what) + ": " + std::strerror(err);
}

}  // namespace sb
