// bench_sync: synchronous and POSIX-AIO storage baselines (fio's "psync" and "posixaio" engines).
//
//   --engine psync     one pread/pwrite at a time (QD 1), each timed on its own.
//   --engine posixaio  glibc POSIX AIO: --qd aio_read/aio_write requests in flight. Like fio's
//                      posixaio engine the loop checks completions (aio_error) before it sleeps,
//                      reaps and resubmits every finished request, and sleeps in aio_suspend only
//                      on requests still in progress; it sleeps until a quarter of the queue has
//                      finished rather than until one has (see the loop below). glibc serves the
//                      requests of one fd in order with one helper thread doing pread/pwrite.
#include "common.hpp"

#include <aio.h>

namespace {

const char* kUsage =
    "usage: bench_sync MODE --file PATH --bs BYTES --qd N --seconds S [options]\n"
    "  MODE         seqread | randread | write | randwrite | mixed (80% reads / 20% writes)\n"
    "  --engine     psync | posixaio   (default psync; psync needs --qd 1)\n"
    "  --variant    buffered | direct  (default buffered)\n"
    "  --offsets    FILE of little-endian u64 byte offsets (random modes)\n"
    "  --pattern    seq | rand (mixed only; default rand when --offsets is given)\n"
    "  --aio-threads N  posixaio: glibc helper threads via aio_init (default: glibc's default)\n"
    "Prints one JSON line. Exit 0 ok, 1 failed run (JSON has ok:false), 2 bad arguments.\n";

}  // namespace

int main(int argc, char** argv) {
    sb::Options o = sb::parse_options(argc, argv, kUsage, {"engine", "aio-threads"});
    bool direct = false;
    if (o.variant == "direct") direct = true;
    else if (o.variant != "buffered")
        sb::usage_exit(kUsage, "--variant must be direct or buffered, got '%s'", o.variant.c_str());
    std::string engine = "psync";
    if (auto* e = o.get("engine")) engine = *e;
    if (engine != "psync" && engine != "posixaio") sb::usage_exit(kUsage, "--engine must be psync or posixaio");
    if (engine == "psync" && o.qd != 1) sb::usage_exit(kUsage, "--engine psync runs at --qd 1 only");
    uint64_t aio_threads = 0;
    if (auto* t = o.get("aio-threads")) {
        if (engine != "posixaio") sb::usage_exit(kUsage, "--aio-threads applies to --engine posixaio");
        if (!sb::parse_u64(t->c_str(), aio_threads) || aio_threads == 0 || aio_threads > 1024)
            sb::usage_exit(kUsage, "--aio-threads must be 1..1024");
    }

    sb::Result r;
    r.impl = engine;
    r.variant = o.variant;

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

    sb::Stats st;
    std::string fatal;
    double cpu0 = sb::cpu_seconds_now();
    uint64_t t0 = sb::now_ns();
    uint64_t deadline = t0 + uint64_t(o.seconds * 1e9);
    uint64_t t_end = t0;

    if (engine == "psync") {
        void* buf = bufs[0];
        uint64_t now = t0;
        while (now < deadline) {
            sb::NextOp op = wl.next();
            uint64_t t1 = sb::now_ns();
            ssize_t n = op.write ? pwrite(fd, buf, o.bs, off_t(op.offset)) : pread(fd, buf, o.bs, off_t(op.offset));
            int err = errno;
            now = sb::now_ns();
            st.syscalls++;
            if (n < 0 && err == EINTR) continue;
            st.complete(op.write, n < 0 ? -(long long)err : (long long)n, o.bs, now - t1);
            t_end = now;
            if (st.errors) break;
        }
    } else {
        if (aio_threads) {
            aioinit init{};
            init.aio_threads = int(aio_threads);
            init.aio_num = int(o.qd);
            aio_init(&init);
            r.extra.emplace_back("aio_threads", std::to_string(aio_threads));
        }
        struct Slot {
            aiocb cb;
            uint64_t t_submit;
            bool write;
        };
        std::vector<Slot> slots(o.qd);
        // The slots in flight, oldest first: reaped ones leave the front, resubmitted ones join the
        // back. glibc runs the requests of one fd one at a time, in the order they were queued (one
        // helper thread per fd), so the front is what finishes next.
        std::vector<unsigned> flight;
        flight.reserve(o.qd);
        std::vector<unsigned> done;
        done.reserve(o.qd);
        // When nothing has finished, sleep until `batch` requests have: aio_suspend on the one that
        // many places from the front (those before it finish first). Every sleep costs glibc's
        // helper thread, the one doing the I/O, a futex wake, and a context switch when the two
        // threads share a CPU (the driver pins each program to one). Waking once per completion, as
        // fio's engine does, measured no faster there than suspending on the whole list every turn.
        // A quarter of the queue keeps at least 3/4 of the requests in flight.
        const size_t batch = std::max<size_t>(1, o.qd / 4);
        uint64_t requests = 0;
        // Starts slot i on the next op; false (and `fatal` set) if glibc refuses the request.
        auto start = [&](unsigned i, uint64_t now) -> bool {
            sb::NextOp op = wl.next();
            Slot& s = slots[i];
            std::memset(&s.cb, 0, sizeof s.cb);
            s.cb.aio_fildes = fd;
            s.cb.aio_buf = bufs[i];
            s.cb.aio_nbytes = o.bs;
            s.cb.aio_offset = off_t(op.offset);
            s.cb.aio_sigevent.sigev_notify = SIGEV_NONE;
            s.write = op.write;
            s.t_submit = now;
            for (;;) {
                int ret = op.write ? aio_write(&s.cb) : aio_read(&s.cb);
                if (ret == 0) break;
                if (errno == EAGAIN) continue;
                fatal = sb::errno_text(op.write ? "aio_write" : "aio_read", errno);
                return false;
            }
            flight.push_back(i);
            requests++;
            return true;
        };
        bool stopping = false;
        for (unsigned i = 0; i < o.qd && !stopping; i++)
            if (!start(i, t0)) stopping = true;
        uint64_t suspends = 0;
        // Each turn: reap from the front while requests have finished, resubmit them and check
        // again; only a turn that reaps nothing ends in aio_suspend. The first request still in
        // progress ends the scan (none behind it has finished), which keeps aio_error calls, each
        // a lock of the AIO mutex the helper thread needs, near one per request.
        while (!flight.empty()) {
            size_t nd = 0;
            uint64_t now = 0;
            for (; nd < flight.size(); nd++) {
                Slot& s = slots[flight[nd]];
                int e = aio_error(&s.cb);
                if (e == EINPROGRESS) break;
                ssize_t n = aio_return(&s.cb);
                if (now == 0) now = sb::now_ns();  // one clock read per turn that reaps
                st.complete(s.write, e ? -(long long)e : (long long)n, o.bs, now - s.t_submit);
                if (st.errors) stopping = true;
            }
            if (nd > 0) {
                done.assign(flight.begin(), flight.begin() + nd);
                flight.erase(flight.begin(), flight.begin() + nd);
                t_end = now;
                if (now >= deadline) stopping = true;
                for (unsigned i : done)
                    if (stopping || !start(i, now)) {
                        stopping = true;
                        break;
                    }
                continue;
            }
            const aiocb* wait[1] = {&slots[flight[std::min(batch, flight.size()) - 1]].cb};
            int ret = aio_suspend(wait, 1, nullptr);
            suspends++;
            if (ret != 0 && errno != EINTR && errno != EAGAIN) {
                fatal = sb::errno_text("aio_suspend", errno);
                break;
            }
        }
        // Only after an aio_suspend failure: let glibc finish before the buffers go.
        for (unsigned i : flight) {
            const aiocb* one[1] = {&slots[i].cb};
            while (aio_error(&slots[i].cb) == EINPROGRESS) aio_suspend(one, 1, nullptr);
        }
        // The calling thread enters the kernel in aio_suspend (at most one futex wait each); glibc's
        // helper threads make one pread/pwrite per request. Futex wake-ups between them are not counted.
        st.syscalls = suspends + requests;
        r.extra.emplace_back("syscalls_note", "\"aio_suspend calls + one pread/pwrite per request by glibc helper threads\"");
    }
    r.seconds = double(t_end - t0) * 1e-9;
    r.cpu_seconds = sb::cpu_seconds_now() - cpu0;
    if (!fatal.empty()) r.error = fatal;
    close(fd);
    sb::print_result(o, st, r);
    return (r.error.empty() && st.errors == 0) ? 0 : 1;
}
