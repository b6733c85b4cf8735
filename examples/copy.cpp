// A parallel file copy written with the fs::File API: `depth` blocks of `block-size` bytes
// are in flight at once, each worker reading its block into its own registered buffer
// (File::read_at_fixed, through buf::BufferTable) and writing it at the same offset
// (File::write_at_fixed), with both files in the runtime's registered file table
// (File::register_in). Short reads and writes are resumed, the destination gets the source's
// permission bits, a sparse source gives a sparse copy (blocks of zeros are not written), and
// --direct copies around the page cache (O_DIRECT; the tail is written as a whole block and
// the file then cut to size). fs::copy does the same in one call, without registered buffers
// or O_DIRECT; this shows how to write it by hand.
//   copy SRC DST [--depth N] [--block-size B] [--direct] [--verbose]
//   (N is a count, 1 to 1024; B takes K, M or G; defaults: 8 blocks of 128K; --verbose reports
//   bytes and time on stderr)
// Exit status 0 when copied; 1 on an error, the runtime's set-up included (a line on stderr,
// "copy: <reason>"); 2 for bad arguments (examples/args.hpp).
#include "args.hpp"

#include <ringo/ringo.hpp>

#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using ringo::Result;
using ringo::Task;
using ringo::fs::File;

constexpr std::size_t kAlign = 4096; // O_DIRECT: buffers, counts and offsets are multiples of it

struct Options {
    std::string src, dst;
    unsigned depth = 8;
    std::size_t block = 128 * 1024;
    bool direct = false;
    bool verbose = false;
};

// What the workers share. They all run on one thread, so plain fields do.
struct Copy {
    File& src;
    File& dst;
    std::size_t block;
    bool direct;                              // O_DIRECT: whole aligned blocks only
    bool sparse;                              // the source has holes: blocks of zeros become holes too
    bool fixed;                               // registered buffers (else plain read_at / write_at)
    std::uint64_t next = 0;                   // the next block to take
    std::uint64_t eof_at = ~std::uint64_t{0}; // where a read found the end of the source
    std::uint64_t copied = 0;                 // bytes read (and written, or left as holes)
    bool cut = false;                         // the destination must be cut (or grown) to `copied`
    std::error_code error{};                  // the first failure: every worker stops
    bool error_on_write = false;
};

bool all_zero(std::span<const std::byte> b) {
    return std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0}; });
}

// One worker: takes the next block, fills its buffer (reading again after a short read, up
// to the end of the source), writes the buffer at the same offset (again after a short
// write), until a read finds the end or a worker fails.
Task<void> worker(Copy& c, std::span<std::byte> buf, unsigned index) {
    while (!c.error) {
        std::uint64_t off = c.next;
        if (off >= c.eof_at)
            break;
        c.next += c.block;
        std::size_t got = 0;
        while (got < c.block) {
            std::span<std::byte> rest = buf.subspan(got, c.block - got);
            Result<std::size_t> r = std::error_code();
            if (c.fixed) // buffer `index` of the registered table: no page pinning per read
                r = co_await c.src.read_at_fixed(rest, off + got, index);
            else
                r = co_await c.src.read_at(rest, off + got);
            if (!r) {
                c.error = r.error();
                co_return;
            }
            got += *r;
            // 0: the end. Under O_DIRECT a count that is not a whole number of blocks also
            // ends the file (a read from there would be misaligned).
            if (*r == 0 || (c.direct && got % kAlign != 0)) {
                c.eof_at = std::min(c.eof_at, off + got);
                break;
            }
        }
        if (got == 0)
            break;
        std::span<const std::byte> data = buf.first(got);
        if (c.sparse && all_zero(data)) {
            c.cut = true; // left as a hole: the final size comes from the cut
        } else {
            if (c.direct && got % kAlign != 0) { // the tail: a whole block, cut to size later
                std::size_t whole = (got + kAlign - 1) / kAlign * kAlign;
                std::memset(buf.data() + got, 0, whole - got);
                data = buf.first(whole);
                c.cut = true;
            }
            for (std::size_t put = 0; put < data.size();) {
                std::span<const std::byte> rest = data.subspan(put);
                Result<std::size_t> w = std::error_code();
                if (c.fixed)
                    w = co_await c.dst.write_at_fixed(rest, off + put, index);
                else
                    w = co_await c.dst.write_at(rest, off + put);
                if (!w || *w == 0) {
                    c.error = w ? make_error_code(ringo::fs::Error::write_zero) : w.error();
                    c.error_on_write = true;
                    co_return;
                }
                put += *w;
            }
        }
        c.copied += got;
        if (got < c.block)
            break;
    }
}

int fail(const char* what, const std::string& path, const std::error_code& e) {
    std::fprintf(stderr, "copy: %s '%s': %s\n", what, path.c_str(), e.message().c_str());
    return 1;
}

// The copy itself; `buffers` is depth x block bytes, registered as `depth` buffers in
// `registered` (when `fixed`), `files` is a registered file table with two slots or none.
Task<int> run(const Options& o, ringo::fs::AlignedBuffer& buffers, bool fixed, ringo::op::FileTable* files) {
    // The source must be a regular file: a FIFO's open would wait for a writer, a directory
    // or a device has no contents to copy.
    Result<ringo::fs::Metadata> sm = co_await ringo::fs::metadata(o.src);
    if (!sm)
        co_return fail("cannot open", o.src, sm.error());
    if (!sm->is_file()) {
        std::fprintf(stderr, "copy: '%s' is not a regular file (%s)\n", o.src.c_str(),
                     sm->is_dir() ? "a directory" : "a device, FIFO or socket");
        co_return 1;
    }
    Result<ringo::fs::Metadata> dm = co_await ringo::fs::metadata(o.dst);
    if (dm && dm->ino == sm->ino && dm->dev == sm->dev) {
        std::fprintf(stderr, "copy: '%s' and '%s' are the same file\n", o.src.c_str(), o.dst.c_str());
        co_return 1;
    }

    Result<File> src = co_await File::open(o.src, {.direct = o.direct});
    if (!src)
        co_return fail("cannot open", o.src, src.error());
    sm = co_await src->metadata(); // what was opened (the path may have changed since)
    if (!sm)
        co_return fail("cannot stat", o.src, sm.error());
    if (!sm->is_file()) {
        std::fprintf(stderr, "copy: '%s' is not a regular file\n", o.src.c_str());
        co_return 1;
    }
    Result<File> dst = co_await File::open(o.dst, {.write = true, .create = true, .truncate = true, .direct = o.direct},
                                           sm->permissions());
    if (!dst)
        co_return fail("cannot create", o.dst, dst.error());
    dm = co_await dst->metadata();
    bool regular = dm && dm->is_file(); // not /dev/null, say: no mode, no cut, no removal
    // open's mode applies to a new file only, and through the umask: set it exactly.
    if (regular && ::fchmod(dst->get(), sm->permissions()) != 0)
        co_return fail("cannot set the mode of", o.dst, ringo::errno_code(-errno));

    if (files) {
        Result<void> a = src->register_in(*files, 0);
        Result<void> b = a ? dst->register_in(*files, 1) : a;
        if (!b && o.verbose)
            std::fprintf(stderr, "copy: no registered files (%s)\n", b.message().c_str());
    }

    auto start = std::chrono::steady_clock::now();
    Copy c{*src, *dst, o.block, o.direct, sm->blocks * 512 < sm->size, fixed};
    std::vector<Task<void>> workers;
    workers.reserve(o.depth);
    for (unsigned i = 0; i < o.depth; ++i)
        workers.push_back(worker(c, buffers.span(std::size_t{i} * o.block, o.block), i));
    (void)co_await ringo::when_all(std::move(workers));
    (void)co_await src->close(); // empties its registered slot too

    Result<void> done{};
    if (c.error)
        done = c.error;
    else if (c.cut && regular)
        done = co_await dst->truncate(c.copied);
    Result<void> closed = co_await dst->close(); // reports what the destructor cannot
    if (done && !closed)
        done = closed;
    if (!done) {
        fail(c.error && !c.error_on_write ? "reading" : "writing", c.error && !c.error_on_write ? o.src : o.dst,
             done.error());
        if (regular) // no partial copy left behind
            (void)co_await ringo::fs::remove(o.dst);
        co_return 1;
    }
    if (o.verbose) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "copy: %llu bytes in %.3f s (%.1f MiB/s), %u x %zu bytes in flight%s%s%s\n",
                     static_cast<unsigned long long>(c.copied), s,
                     s > 0 ? static_cast<double>(c.copied) / s / (1 << 20) : 0.0, o.depth, o.block,
                     fixed ? ", registered buffers" : "", o.direct ? ", O_DIRECT" : "", c.sparse ? ", sparse" : "");
    }
    co_return 0;
}

// A size in bytes: digits with an optional K, M or G (k, m, g) after them (no sign or spaces),
// from 1 to 1G.
std::optional<std::uint64_t> parse_size(std::string_view s) {
    std::uint64_t unit = 1;
    if (!s.empty()) {
        switch (s.back()) {
        case 'k':
        case 'K': unit = 1ull << 10; break;
        case 'm':
        case 'M': unit = 1ull << 20; break;
        case 'g':
        case 'G': unit = 1ull << 30; break;
        default: break;
        }
    }
    if (unit != 1)
        s.remove_suffix(1);
    std::optional<std::uint64_t> n = args::parse_unsigned(s, 1, (1ull << 30) / unit);
    if (!n)
        return std::nullopt;
    return *n * unit;
}

constexpr const char* usage_text =
    "usage: copy SRC DST [--depth N] [--block-size B] [--direct] [--verbose]\n"
    "  N: blocks in flight, 1 to 1024 (default 8); B: bytes per block, 1 to 1G, K/M/G allowed\n"
    "  (default 128K; a multiple of 4K with --direct); depth x block at most 1G\n";

} // namespace

int main(int argc, char** argv) {
    args::Parser p("copy", usage_text, argc, argv);
    Options o;
    std::vector<std::string_view> paths;
    while (std::optional<std::string_view> a = p.next()) {
        if (*a == "--depth") {
            o.depth = static_cast<unsigned>(p.number(*a, 1, 1024)); // a count: no K, M or G
        } else if (*a == "--block-size") {
            std::string_view v = p.value(*a);
            std::optional<std::uint64_t> b = parse_size(v);
            if (!b)
                p.fail("--block-size takes 1 to 1G bytes (K, M or G allowed), not '" + std::string(v) + "'");
            o.block = static_cast<std::size_t>(*b);
        } else if (*a == "--direct") {
            o.direct = true;
        } else if (*a == "--verbose" || *a == "-v") {
            o.verbose = true;
        } else if (args::is_option(*a)) {
            p.unknown(*a);
        } else {
            paths.push_back(*a);
        }
    }
    if (paths.size() != 2)
        p.fail("give a source and a destination");
    o.src = paths[0];
    o.dst = paths[1];
    if (o.direct && o.block % kAlign != 0)
        p.fail("--direct needs a block size that is a multiple of 4K");
    if (std::uint64_t{o.depth} * o.block > (1ull << 30))
        p.fail("depth x block size is more than 1G");

    // A ring that cannot be made (too few descriptors, io_uring and epoll both refused) or
    // memory that cannot be had throws: "copy: <what>", status 1.
    return args::report_setup_errors("copy", [&] {
        ringo::Runtime rt;
        // One aligned allocation, cut into `depth` buffers that the kernel pins once
        // (IORING_REGISTER_BUFFERS); without the memory lock limit for it, plain reads and writes.
        ringo::fs::AlignedBuffer buffers(std::size_t{o.depth} * o.block, kAlign);
        std::vector<iovec> iovs(o.depth);
        for (unsigned i = 0; i < o.depth; ++i)
            iovs[i] = iovec{buffers.data() + std::size_t{i} * o.block, o.block};
        ringo::buf::BufferTable registered(rt);
        int rb = registered.register_buffers(iovs);
        if (rb < 0 && o.verbose)
            std::fprintf(stderr, "copy: no registered buffers (%s): plain reads and writes\n", std::strerror(-rb));
        ringo::op::FileTable files(rt);
        int rf = files.register_sparse(2);
        return rt.block_on(run(o, buffers, rb == 0, rf == 0 ? &files : nullptr));
    });
}
