// ringo's storage benchmark: the same workloads, command line and JSON line as
// bench/storage/bench_uring (see bench/storage/common.hpp for the conventions), written the
// way a ringo user would: QD tasks, each awaiting one read or write at a time.
//
// Variants as bench_uring's: tokens joined with '-' or '+'. "fixed" registers the file (one-slot
// op::FileTable, operations name it op::Fixed{0}) and one buffer per task (buf::BufferTable, task i
// uses op::read_fixed / op::write_fixed with buffer index i), exactly what bench_uring's fixed
// variant registers; the registration happens before the measured interval, as there.
//
// --api file does the same I/O through the high-level ringo::fs::File (read_at / write_at
// yielding Result<size_t>; with "fixed", the file in registered slot 0 and read_at_fixed /
// write_at_fixed) instead of op:: calls: the storage figures' "ringo fs::File" rows, to show
// what the high-level layer costs per I/O.
#include <ringo/fs/file.hpp>
#include <ringo/ringo.hpp>

#include <sys/uio.h>

#include <optional>
#include <span>
#include <system_error>

#include "../storage/common.hpp"

namespace {

const char* kUsage =
    "usage: bench_ringo_storage MODE --file PATH --bs BYTES --qd N --seconds S [options]\n"
    "  MODE       seqread | randread | write | randwrite | mixed\n"
    "  --variant  buffered | fixed | direct | direct-fixed | sqpoll | iopoll  (default buffered)\n"
    "             tokens combine with '-' or '+': fixed = registered file + registered buffers,\n"
    "             direct = O_DIRECT, sqpoll = IORING_SETUP_SQPOLL, iopoll = IORING_SETUP_IOPOLL + O_DIRECT\n"
    "  --offsets  FILE of little-endian u64 offsets (random modes)\n"
    "  --api      op | file   op:: calls (default), or ringo::fs::File's read_at / write_at\n"
    "  --setup    none | coop | defer   task-run ring flags, as bench_uring's --setup (default none):\n"
    "             none = no task-run flag, coop = COOP_TASKRUN, defer = DEFER_TASKRUN (ringo's default\n"
    "             for its runtimes; with completions from a block device it wakes the loop once per\n"
    "             completion, so the storage figures compare like with like instead)\n";

struct Variant {
    bool direct = false, fixed = false, sqpoll = false, iopoll = false;
};

// The same grammar as bench_uring's parse_variant.
bool parse_variant(const std::string& v, Variant& out) {
    size_t start = 0;
    bool buffered = false;
    while (start <= v.size()) {
        size_t end = v.find_first_of("-+", start);
        if (end == std::string::npos)
            end = v.size();
        std::string tok = v.substr(start, end - start);
        if (tok == "buffered")
            buffered = true;
        else if (tok == "fixed")
            out.fixed = true;
        else if (tok == "direct")
            out.direct = true;
        else if (tok == "sqpoll")
            out.sqpoll = true;
        else if (tok == "iopoll")
            out.iopoll = true;
        else
            return false;
        start = end + 1;
    }
    if (out.iopoll) {
        if (buffered)
            return false; // IOPOLL only works with O_DIRECT
        out.direct = true;
    }
    return !(buffered && out.direct);
}

struct Shared {
    const sb::Options* o;
    sb::Workload* wl;
    sb::Buffers* bufs;
    sb::Stats st;
    int fd;
    ringo::fs::File* file = nullptr; // --api file
    bool fixed = false; // registered file slot 0 + registered buffer i for task i
    uint64_t deadline;
    uint64_t t_end = 0;
    bool stopping = false;
    bool unsupported = false;
};

// A Result of the high-level layer as the kernel's int (the count, or -errno).
int as_int(const ringo::Result<std::size_t>& n) noexcept { return n ? static_cast<int>(*n) : -n.error().value(); }

// Time-stamps like bench_uring: one clock reading per batch of completions (the runtime's
// loop_now_ns()), used both as the completion time of this I/O and as the submission time of
// the next one in this slot.
ringo::Task<void> worker(Shared& s, unsigned i) {
    ringo::Runtime& rt = *ringo::Runtime::current();
    uint64_t t = rt.loop_now_ns();
    while (!s.stopping) {
        sb::NextOp op = s.wl->next();
        int res;
        if (s.file) { // the high-level layer: Result<std::size_t>, turned back into the kernel's int
            void* b = (*s.bufs)[i];
            if (s.fixed && op.write)
                res = as_int(co_await s.file->write_at_fixed(
                    std::span<const std::byte>(static_cast<const std::byte*>(b), s.o->bs), op.offset, i));
            else if (s.fixed)
                res = as_int(co_await s.file->read_at_fixed(
                    std::span<std::byte>(static_cast<std::byte*>(b), s.o->bs), op.offset, i));
            else if (op.write)
                res = as_int(co_await s.file->write_at(b, s.o->bs, op.offset));
            else
                res = as_int(co_await s.file->read_at(b, s.o->bs, op.offset));
        } else if (s.fixed)
            res = op.write ? co_await ringo::op::write_fixed(ringo::op::Fixed{0}, (*s.bufs)[i], s.o->bs, op.offset, i)
                           : co_await ringo::op::read_fixed(ringo::op::Fixed{0}, (*s.bufs)[i], s.o->bs, op.offset, i);
        else
            res = op.write ? co_await ringo::op::write(s.fd, (*s.bufs)[i], s.o->bs, op.offset)
                           : co_await ringo::op::read(s.fd, (*s.bufs)[i], s.o->bs, op.offset);
        uint64_t now = rt.loop_now_ns();
        uint64_t errs = s.st.errors;
        s.st.complete(op.write, res, s.o->bs, now - t);
        s.t_end = now;
        t = now;
        if (s.st.errors != errs) {
            s.stopping = true;
            if (res == -EOPNOTSUPP)
                s.unsupported = true;
        }
        if (now >= s.deadline)
            s.stopping = true;
    }
}

ringo::Task<void> run_all(Shared& s) {
    std::vector<ringo::JoinHandle<void>> hs;
    hs.reserve(s.o->qd);
    for (unsigned i = 0; i < s.o->qd; ++i)
        hs.push_back(ringo::spawn(worker(s, i)));
    for (auto& h : hs)
        co_await h;
}

} // namespace

int main(int argc, char** argv) {
    sb::Options o = sb::parse_options(argc, argv, kUsage, {"setup", "api"});
    bool file_api = false;
    if (auto* api = o.get("api")) {
        if (*api != "op" && *api != "file")
            sb::usage_exit(kUsage, "--api must be op or file");
        file_api = *api == "file";
    }
    std::string setup = "none";
    if (auto* su = o.get("setup")) {
        setup = *su;
        if (setup != "none" && setup != "coop" && setup != "defer")
            sb::usage_exit(kUsage, "--setup must be none, coop or defer");
    }
    Variant v;
    if (!parse_variant(o.variant, v))
        sb::usage_exit(kUsage, "unknown or contradictory --variant '%s'", o.variant.c_str());
    bool direct = v.direct, sqpoll = v.sqpoll, iopoll = v.iopoll;
    sb::Result r;
    r.impl = file_api ? "ringo-fs" : "ringo";
    r.variant = o.variant;

    int fd = open(o.file.c_str(), (o.reads_only() ? O_RDONLY : O_RDWR) | (direct ? O_DIRECT : 0));
    if (fd < 0) {
        int e = errno;
        if (direct && e == EINVAL)
            return sb::fail_before_io(o, r, "O_DIRECT open of " + o.file + " failed: EINVAL", true);
        if (e == ENOENT || e == EACCES || e == EISDIR)
            sb::usage_exit(kUsage, "cannot open '%s': %s", o.file.c_str(), std::strerror(e));
        return sb::fail_before_io(o, r, sb::errno_text(("open " + o.file).c_str(), e), false);
    }
    int64_t fsize = sb::file_size(fd);
    if (fsize < 0)
        return sb::fail_before_io(o, r, sb::errno_text("fstat", int(-fsize)), false);
    sb::Workload wl;
    if (auto msg = wl.init(o, fsize); !msg.empty())
        sb::usage_exit(kUsage, "%s", msg.c_str());
    sb::Buffers bufs;
    if (!bufs.allocate(o.qd, o.bs))
        return sb::fail_before_io(o, r, "buffer allocation failed", false);

    unsigned entries = 1;
    while (entries < 2 * o.qd)
        entries <<= 1;
    ringo::RuntimeOptions opts;
    opts.sq_entries(entries);
    if (sqpoll)
        opts.sqpoll(true, 1000);
    if (iopoll)
        opts.iopoll();
    if (setup == "coop")
        opts.coop_taskrun();
    else if (setup == "none" || sqpoll) // SQPOLL excludes DEFER_TASKRUN
        opts.defer_taskrun(false);
    std::unique_ptr<ringo::Runtime> rt;
    try {
        rt = std::make_unique<ringo::Runtime>(opts);
    } catch (const std::exception& e) {
        return sb::fail_before_io(o, r, e.what(), true);
    }
    r.extra.emplace_back("setup", "\"" + setup + "\"");
    r.extra.emplace_back("setup_flags", "\"" + ringo::uring::setup_flags_to_string(rt->setup_flags()) + "\"");
    // The engine serving the runtime (RINGO_ENGINE=epoll forces the epoll engine): the driver
    // fails a row whose engine is not the one it asked for. On epoll the runtime's enter count
    // is not the program's system calls (the reads run on a thread pool): not reported.
    const bool on_epoll = rt->engine() == ringo::Engine::epoll;
    r.extra.emplace_back("engine", on_epoll ? "\"epoll\"" : "\"io_uring\"");
    r.syscalls_counted = !on_epoll;

    // Registered file and buffers (fixed variants), set up before the measured interval.
    ringo::op::FileTable files(*rt);
    ringo::buf::BufferTable buffers(*rt);
    if (v.fixed) {
        if (int ret = files.register_files(std::span<const int>(&fd, 1)); ret < 0)
            return sb::fail_before_io(o, r, sb::errno_text("FileTable::register_files", -ret), false);
        std::vector<iovec> iov(o.qd);
        for (unsigned i = 0; i < o.qd; ++i)
            iov[i] = {bufs[i], bufs.size};
        if (int ret = buffers.register_buffers(iov); ret < 0)
            return sb::fail_before_io(o, r, sb::errno_text("BufferTable::register_buffers", -ret), false);
    }

    // --api file: the same descriptor as a ringo::fs::File (released again before close below).
    std::optional<ringo::fs::File> file;
    if (file_api) {
        file.emplace(ringo::Fd(fd));
        if (v.fixed) {
            if (auto reg = file->register_in(files, 0); !reg)
                return sb::fail_before_io(o, r, "fs::File::register_in: " + reg.message(), false);
        }
    }

    Shared s;
    s.o = &o;
    s.file = file ? &*file : nullptr;
    s.wl = &wl;
    s.bufs = &bufs;
    s.fd = fd;
    s.fixed = v.fixed;
    auto enters0 = rt->stats().enters;
    double cpu0 = sb::cpu_seconds_now();
    uint64_t t0 = sb::now_ns();
    s.deadline = t0 + uint64_t(o.seconds * 1e9);
    s.t_end = t0;
    rt->block_on(run_all(s));
    r.seconds = double(s.t_end - t0) * 1e-9;
    r.cpu_seconds = sb::cpu_seconds_now() - cpu0;
    s.st.syscalls = rt->stats().enters - enters0;
    if (s.unsupported) {
        r.unsupported = true;
        r.error = "unsupported: IOPOLL reads fail with EOPNOTSUPP (the device has no poll queues)";
    }
    (void)buffers.unregister();
    (void)files.unregister();
    if (file)
        (void)file->take_fd().release(); // closed below, as in the op:: form
    rt.reset();
    close(fd);
    sb::print_result(o, s.st, r);
    return (r.error.empty() && s.st.errors == 0) ? 0 : 1;
}
