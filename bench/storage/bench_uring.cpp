// bench_uring: storage baseline on raw liburing.
//
// Keeps --qd I/Os in flight: after the first batch, every loop iteration is one submit-and-wait
// for one completion (which always enters the kernel, so it counts as one syscall), then every
// available CQE is reaped, checked, and its slot resubmitted with the next offset.
//
// liburing sets the ring up and prepares the SQEs; the io_uring_enter calls are issued inline in
// the loop (Enter below), as ringo issues its own: ../net/uring_enter.hpp says why not through
// liburing's io_uring_submit_and_wait.
#include "common.hpp"

#include <liburing.h>

#include "../net/uring_enter.hpp"

namespace {

const char* kUsage =
    "usage: bench_uring MODE --file PATH --bs BYTES --qd N --seconds S [options]\n"
    "  MODE       seqread | randread | write | randwrite | mixed (80% reads / 20% writes)\n"
    "  --variant  buffered | fixed | direct | direct-fixed | sqpoll | iopoll  (default buffered)\n"
    "             tokens combine with '-' or '+': fixed = registered file + registered buffers,\n"
    "             direct = O_DIRECT, sqpoll = IORING_SETUP_SQPOLL, iopoll = IORING_SETUP_IOPOLL + O_DIRECT\n"
    "  --offsets  FILE of little-endian u64 byte offsets (random modes)\n"
    "  --pattern  seq | rand (mixed only; default rand when --offsets is given)\n"
    "  --setup    none | coop | defer   extra ring flags: COOP_TASKRUN, or SINGLE_ISSUER|DEFER_TASKRUN\n"
    "             (default none)\n"
    "Prints one JSON line. Exit 0 ok, 1 failed run (JSON has ok:false), 2 bad arguments.\n";

struct Variant {
    bool direct = false, fixed = false, sqpoll = false, iopoll = false;
};

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
    if (buffered && out.direct)
        return false;
    return true;
}

struct Slot {
    uint64_t offset = 0;
    uint64_t t_submit = 0;
    bool write = false;
};

// The program's io_uring_enter calls, inline, by the rules of liburing 2.3's io_uring_submit,
// io_uring_submit_and_wait and io_uring_sqring_wait: the same enters with the same arguments.
// submit_and_wait publishes the SQ tail, then
//   * without SQPOLL enters with the SQEs not yet consumed (and GETEVENTS when it waits); with
//     nothing to submit and nothing to wait for it enters only for what the CQ needs (below);
//   * with SQPOLL the SQ thread takes the SQEs: it enters with IORING_ENTER_SQ_WAKEUP when there
//     are SQEs and the thread sleeps (IORING_SQ_NEED_WAKEUP), and otherwise only to wait;
//   * with IOPOLL the completions are reaped by polling inside the enter, so every enter that waits
//     passes GETEVENTS (and one that does not wait passes it too, as liburing does);
//   * an overflowed CQ or pending task work (IORING_SQ_CQ_OVERFLOW, IORING_SQ_TASKRUN) makes an
//     enter with GETEVENTS, which flushes them.
struct Enter {
    io_uring* ring;
    unsigned fd;        // the ring's descriptor, or its registered index
    unsigned reg_flags; // IORING_ENTER_REGISTERED_RING when fd is the registered index

    [[gnu::always_inline]] int submit_and_wait(unsigned wait_nr) {
        io_uring_sq& sq = ring->sq;
        const bool sqpoll = (ring->flags & IORING_SETUP_SQPOLL) != 0;
        const unsigned tail = sq.sqe_tail;
        if (sq.sqe_head != tail) {
            sq.sqe_head = tail;
            if (sqpoll)
                io_uring_smp_store_release(sq.ktail, tail); // the SQ thread may read it at any time
            else
                IO_URING_WRITE_ONCE(*sq.ktail, tail);
        }
        const unsigned to_submit = tail - (sqpoll ? io_uring_smp_load_acquire(sq.khead) : *sq.khead);
        const bool cq_needs_enter = wait_nr != 0 || (ring->flags & IORING_SETUP_IOPOLL) != 0 ||
                                    (IO_URING_READ_ONCE(*sq.kflags) & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN));
        unsigned flags = cq_needs_enter ? IORING_ENTER_GETEVENTS : 0;
        bool need = cq_needs_enter;
        if (to_submit) {
            if (!sqpoll) {
                need = true;
            } else {
                io_uring_smp_mb(); // the tail store before the read of the SQ thread's flags
                if (IO_URING_READ_ONCE(*sq.kflags) & IORING_SQ_NEED_WAKEUP) {
                    flags |= IORING_ENTER_SQ_WAKEUP;
                    need = true;
                }
            }
        }
        if (!need)
            return int(to_submit);
        return nb::enter_inline(fd, to_submit, wait_nr, flags | reg_flags);
    }

    // Waits for room in the SQ of an SQPOLL ring (io_uring_sqring_wait).
    int sqring_wait() {
        if (!(ring->flags & IORING_SETUP_SQPOLL) || io_uring_sq_space_left(ring))
            return 0;
        return nb::enter_inline(fd, 0, 0, IORING_ENTER_SQ_WAIT | reg_flags);
    }
};

} // namespace

int main(int argc, char** argv) {
    sb::Options o = sb::parse_options(argc, argv, kUsage, {"setup"});
    Variant v;
    if (!parse_variant(o.variant, v))
        sb::usage_exit(kUsage, "unknown or contradictory --variant '%s'", o.variant.c_str());
    unsigned setup_extra = 0;
    std::string setup_name = "none";
    if (auto* s = o.get("setup")) {
        setup_name = *s;
        if (*s == "none")
            setup_extra = 0;
        else if (*s == "coop")
            setup_extra = IORING_SETUP_COOP_TASKRUN;
        else if (*s == "defer")
            setup_extra = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
        else
            sb::usage_exit(kUsage, "--setup must be none, coop or defer");
    }

    sb::Result r;
    r.impl = "liburing";
    r.variant = o.variant;
    r.extra.emplace_back("setup", "\"" + setup_name + "\"");

    int oflags = (o.reads_only() ? O_RDONLY : O_RDWR) | (v.direct ? O_DIRECT : 0);
    int fd = open(o.file.c_str(), oflags);
    if (fd < 0) {
        int e = errno;
        if (v.direct && e == EINVAL)
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

    io_uring ring;
    io_uring_params p{};
    p.flags = setup_extra;
    if (v.sqpoll) {
        p.flags |= IORING_SETUP_SQPOLL;
        p.sq_thread_idle = 1000; // ms before the SQ thread sleeps
    }
    if (v.iopoll)
        p.flags |= IORING_SETUP_IOPOLL;
    // One SQE per slot is enough when the kernel consumes SQEs inside io_uring_enter. With SQPOLL
    // the SQ thread publishes its new SQ head only after a batch, and a buffered read can complete
    // (and post its CQE) before that: a slot may be resubmitted while its previous SQE still counts
    // as unconsumed, so the SQ gets room for two SQEs per slot.
    unsigned entries = 1;
    while (entries < (v.sqpoll ? 2 * o.qd : o.qd))
        entries <<= 1;
    if (int ret = io_uring_queue_init_params(entries, &ring, &p); ret < 0) {
        bool unsup = ret == -EINVAL || ret == -EPERM || ret == -EOPNOTSUPP;
        return sb::fail_before_io(o, r, sb::errno_text("io_uring_queue_init_params", -ret), unsup);
    }

    int target_fd = fd;
    unsigned sqe_flags = 0;
    std::vector<iovec> iov(o.qd);
    if (v.fixed) {
        if (int ret = io_uring_register_files(&ring, &fd, 1); ret < 0)
            return sb::fail_before_io(o, r, sb::errno_text("io_uring_register_files", -ret), false);
        target_fd = 0;
        sqe_flags = IOSQE_FIXED_FILE;
        for (unsigned i = 0; i < o.qd; i++)
            iov[i] = {bufs[i], bufs.size};
        if (int ret = io_uring_register_buffers(&ring, iov.data(), o.qd); ret < 0)
            return sb::fail_before_io(o, r, sb::errno_text("io_uring_register_buffers", -ret), false);
    }

    std::vector<Slot> slots(o.qd);
    sb::Stats st;
    bool stopping = false;
    unsigned inflight = 0;

    // The ring's descriptor registered (io_uring_register_ring_fd), as ringo's runtime does by
    // default: each enter then names it by index and the kernel skips the descriptor lookup.
    Enter enter{&ring, unsigned(ring.ring_fd), 0};
    if (io_uring_register_ring_fd(&ring) == 1)
        enter = Enter{&ring, unsigned(ring.enter_ring_fd), IORING_ENTER_REGISTERED_RING};
    auto queue = [&](unsigned i, uint64_t now) -> bool {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        if (!sqe) {
            // Not expected (see the SQ sizing above); kept as a safe path.
            if (v.sqpoll)
                enter.sqring_wait();
            else
                enter.submit_and_wait(0);
            st.syscalls++;
            sqe = io_uring_get_sqe(&ring);
            if (!sqe)
                return false;
        }
        sb::NextOp op = wl.next();
        Slot& s = slots[i];
        s.offset = op.offset;
        s.write = op.write;
        s.t_submit = now;
        if (v.fixed) {
            if (op.write)
                io_uring_prep_write_fixed(sqe, target_fd, bufs[i], unsigned(o.bs), op.offset, int(i));
            else
                io_uring_prep_read_fixed(sqe, target_fd, bufs[i], unsigned(o.bs), op.offset, int(i));
        } else {
            if (op.write)
                io_uring_prep_write(sqe, target_fd, bufs[i], unsigned(o.bs), op.offset);
            else
                io_uring_prep_read(sqe, target_fd, bufs[i], unsigned(o.bs), op.offset);
        }
        sqe->flags |= sqe_flags;
        io_uring_sqe_set_data64(sqe, i);
        inflight++;
        return true;
    };

    double cpu0 = sb::cpu_seconds_now();
    uint64_t t0 = sb::now_ns();
    uint64_t deadline = t0 + uint64_t(o.seconds * 1e9);
    uint64_t t_end = t0;
    for (unsigned i = 0; i < o.qd; i++)
        if (!queue(i, t0))
            return sb::fail_before_io(o, r, "io_uring_get_sqe returned NULL", false);

    bool unsupported = false;
    std::string fatal;
    while (inflight > 0) {
        int ret = enter.submit_and_wait(1);
        st.syscalls++;
        if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
            fatal = sb::errno_text("io_uring_enter", -ret);
            break;
        }
        uint64_t now = sb::now_ns();
        unsigned head, seen = 0;
        io_uring_cqe* cqe;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            unsigned i = unsigned(io_uring_cqe_get_data64(cqe));
            Slot& s = slots[i];
            inflight--;
            uint64_t errs = st.errors;
            st.complete(s.write, cqe->res, o.bs, now - s.t_submit);
            if (st.errors != errs) {
                stopping = true;
                if (cqe->res == -EOPNOTSUPP && v.iopoll)
                    unsupported = true;
            }
            if (!stopping) {
                if (!queue(i, now)) {
                    fatal = "io_uring_get_sqe returned NULL";
                    stopping = true;
                }
            }
        }
        io_uring_cq_advance(&ring, seen);
        if (seen)
            t_end = now;
        if (now >= deadline)
            stopping = true;
    }
    r.seconds = double(t_end - t0) * 1e-9;
    r.cpu_seconds = sb::cpu_seconds_now() - cpu0;
    if (!fatal.empty())
        r.error = fatal;
    if (unsupported) {
        r.unsupported = true;
        r.error = "unsupported: IOPOLL reads fail with EOPNOTSUPP (the device has no poll queues)";
    }
    io_uring_queue_exit(&ring);
    close(fd);
    sb::print_result(o, st, r);
    return (r.error.empty() && st.errors == 0) ? 0 : 1;
}
