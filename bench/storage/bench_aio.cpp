// bench_aio: storage baseline on libaio (Linux native AIO: io_setup / io_submit / io_getevents).
//
// Keeps --qd iocbs in flight. Each loop iteration waits with one io_getevents(min 1, max qd),
// checks every event, and resubmits the finished slots: with --submit batched in one io_submit,
// with --submit per-io one io_submit per iocb. Native AIO is only asynchronous with O_DIRECT;
// buffered io_submit completes the read inside the syscall (still measured, as fio does).
#include "common.hpp"

#include <libaio.h>

namespace {

const char* kUsage =
    "usage: bench_aio MODE --file PATH --bs BYTES --qd N --seconds S [options]\n"
    "  MODE       seqread | randread | write | randwrite | mixed (80% reads / 20% writes)\n"
    "  --variant  direct | buffered   (default buffered)\n"
    "  --submit   batched | per-io    (default batched)\n"
    "  --offsets  FILE of little-endian u64 byte offsets (random modes)\n"
    "  --pattern  seq | rand (mixed only; default rand when --offsets is given)\n"
    "Prints one JSON line. Exit 0 ok, 1 failed run (JSON has ok:false), 2 bad arguments.\n";

struct Slot {
    iocb cb;
    uint64_t t_submit = 0;
    bool write = false;
};

}  // namespace

int main(int argc, char** argv) {
    sb::Options o = sb::parse_options(argc, argv, kUsage, {"submit"});
    bool direct = false;
    if (o.variant == "direct") direct = true;
    else if (o.variant != "buffered")
        sb::usage_exit(kUsage, "--variant must be direct or buffered for libaio, got '%s'", o.variant.c_str());
    bool batched = true;
    if (auto* s = o.get("submit")) {
        if (*s == "batched") batched = true;
        else if (*s == "per-io") batched = false;
        else sb::usage_exit(kUsage, "--submit must be batched or per-io");
    }

    sb::Result r;
    r.impl = "libaio";
    r.variant = o.variant;
    r.extra.emplace_back("submit", batched ? "\"batched\"" : "\"per-io\"");

    int fd = open(o.file.c_str(), (o.reads_only() ? O_RDONLY : O_RDWR) | (direct ? O_DIRECT : 0));
    if (fd < 0) {
        int e = errno;
        if (direct && e == EINVAL) return sb::fail_before_io(o, r, "O_DIRECT open of " + o.file + " failed: EINVAL", true);
        if (e == ENOENT || e == EACCES || e == EISDIR)
            sb::usage_exit(kUsage, "cannot open '%s': %s", o.file.c_str(), std::strerror(e));
        return sb::fail_before_io(o, r, sb::errno_text(("open " + o.file).c_str(), e), false);
    }
    int64_t fsize = sb::file_size(fd);
    if (fsize < 0) return sb::fail_before_io(o, r, sb::errno_text("fstat", int(-fsize)), false);
    sb::Workload wl;
    if (auto msg = wl.init(o, fsize); !msg.empty()) sb::usage_exit(kUsage, "%s", msg.c_str());

    sb::Buffers bufs;
    if (!bufs.allocate(o.qd, o.bs)) return sb::fail_before_io(o, r, "buffer allocation failed", false);

    io_context_t ctx = nullptr;
    if (int ret = io_setup(int(o.qd), &ctx); ret < 0)
        return sb::fail_before_io(o, r, sb::errno_text("io_setup", -ret), ret == -ENOSYS);

    std::vector<Slot> slots(o.qd);
    std::vector<iocb*> pending;  // prepared, not yet submitted
    pending.reserve(o.qd);
    std::vector<io_event> events(o.qd);
    sb::Stats st;
    std::string fatal;
    unsigned inflight = 0;

    auto prepare = [&](unsigned i, uint64_t now) {
        sb::NextOp op = wl.next();
        Slot& s = slots[i];
        if (op.write) io_prep_pwrite(&s.cb, fd, bufs[i], o.bs, (long long)op.offset);
        else io_prep_pread(&s.cb, fd, bufs[i], o.bs, (long long)op.offset);
        s.cb.data = reinterpret_cast<void*>(uintptr_t(i));
        s.write = op.write;
        s.t_submit = now;
        pending.push_back(&s.cb);
    };
    // Submits everything in `pending`; false on a submission error (recorded in `fatal`).
    auto submit = [&]() -> bool {
        size_t done = 0;
        while (done < pending.size()) {
            long n = batched ? long(pending.size() - done) : 1;
            int ret = io_submit(ctx, n, pending.data() + done);
            st.syscalls++;
            if (ret == -EAGAIN || ret == -EINTR) continue;
            if (ret <= 0) {
                fatal = sb::errno_text("io_submit", ret == 0 ? EIO : -ret);
                pending.erase(pending.begin(), pending.begin() + long(done));
                return false;
            }
            done += size_t(ret);
            inflight += unsigned(ret);
        }
        pending.clear();
        return true;
    };

    double cpu0 = sb::cpu_seconds_now();
    uint64_t t0 = sb::now_ns();
    uint64_t deadline = t0 + uint64_t(o.seconds * 1e9);
    uint64_t t_end = t0;
    bool stopping = false;
    for (unsigned i = 0; i < o.qd; i++) prepare(i, t0);
    if (!submit()) stopping = true;

    while (inflight > 0) {
        int n = io_getevents(ctx, 1, long(o.qd), events.data(), nullptr);
        st.syscalls++;
        if (n == -EINTR) continue;
        if (n < 0) {
            fatal = sb::errno_text("io_getevents", -n);
            break;  // cannot drain; io_destroy below cancels/waits
        }
        uint64_t now = sb::now_ns();
        for (int k = 0; k < n; k++) {
            unsigned i = unsigned(reinterpret_cast<uintptr_t>(events[k].data));
            inflight--;
            uint64_t errs = st.errors;
            long long res = (long long)(long)events[k].res;  // negative errno on failure
            if (events[k].res2 != 0 && res >= 0) res = -(long long)(long)events[k].res2;
            st.complete(slots[i].write, res, o.bs, now - slots[i].t_submit);
            if (st.errors != errs) stopping = true;
            if (!stopping) prepare(i, now);
        }
        if (n > 0) t_end = now;
        if (now >= deadline) stopping = true;
        if (stopping) pending.clear();  // prepared before the stop: never submitted
        else if (!submit()) stopping = true;
    }
    r.seconds = double(t_end - t0) * 1e-9;
    r.cpu_seconds = sb::cpu_seconds_now() - cpu0;
    if (!fatal.empty()) r.error = fatal;
    io_destroy(ctx);
    close(fd);
    sb::print_result(o, st, r);
    return (r.error.empty() && st.errors == 0) ? 0 : 1;
}
