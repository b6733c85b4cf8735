#include <ringo/uring/ring.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "kernel_engine.hpp"

namespace ringo::uring {

namespace {

constexpr unsigned max_sq_entries = 32768;
constexpr unsigned max_cq_entries = 2 * max_sq_entries;

struct FlagName {
    std::uint32_t bit;
    const char* name;
};
constexpr FlagName flag_names[] = {
    {compat::setup::iopoll, "IOPOLL"},
    {compat::setup::sqpoll, "SQPOLL"},
    {compat::setup::sq_aff, "SQ_AFF"},
    {compat::setup::cqsize, "CQSIZE"},
    {compat::setup::clamp, "CLAMP"},
    {compat::setup::attach_wq, "ATTACH_WQ"},
    {compat::setup::r_disabled, "R_DISABLED"},
    {compat::setup::submit_all, "SUBMIT_ALL"},
    {compat::setup::coop_taskrun, "COOP_TASKRUN"},
    {compat::setup::taskrun_flag, "TASKRUN_FLAG"},
    {compat::setup::sqe128, "SQE128"},
    {compat::setup::cqe32, "CQE32"},
    {compat::setup::single_issuer, "SINGLE_ISSUER"},
    {compat::setup::defer_taskrun, "DEFER_TASKRUN"},
    {compat::setup::no_mmap, "NO_MMAP"},
    {compat::setup::registered_fd_only, "REGISTERED_FD_ONLY"},
    {compat::setup::no_sqarray, "NO_SQARRAY"},
    {compat::setup::hybrid_iopoll, "HYBRID_IOPOLL"},
};

// The next, more modest set of flags to try after the kernel refused `flags` with EINVAL.
// Returns false when there is nothing left to drop.
bool degrade(std::uint32_t& flags) {
    using namespace compat::setup;
    if (flags & defer_taskrun) {
        flags = (flags & ~defer_taskrun) | coop_taskrun | taskrun_flag;
        return true;
    }
    if (flags & (coop_taskrun | taskrun_flag)) {
        flags &= ~(coop_taskrun | taskrun_flag);
        return true;
    }
    if (flags & (submit_all | single_issuer)) {
        flags &= ~(submit_all | single_issuer);
        return true;
    }
    return false;
}

std::string describe_setup_error(int err, const RingParams& p, std::uint32_t flags) {
    std::string msg = "ringo: io_uring_setup(sq_entries=" + std::to_string(p.sq_entries);
    if (p.cq_entries)
        msg += ", cq_entries=" + std::to_string(p.cq_entries);
    msg += ", flags=" + setup_flags_to_string(flags) + ") failed";
    switch (err) {
    case ENOMEM:
        // Kernels before 5.12 charge the rings to RLIMIT_MEMLOCK; newer ones to the memory
        // cgroup. Mapping them into this process can also hit RLIMIT_AS.
        msg += ": out of memory for the rings: this ring is too large for RLIMIT_MEMLOCK "
               "(kernels before 5.12), the memory cgroup limit or RLIMIT_AS; ask for fewer entries "
               "or raise the limit";
        break;
    case EPERM:
    case EACCES:
        msg += ": not permitted (a seccomp profile refuses io_uring, as the default ones of Docker and "
               "Kubernetes do, or kernel.io_uring_disabled disables it";
        if (flags & compat::setup::sqpoll)
            msg += ", or SQPOLL needs privileges here";
        msg += ")";
        break;
    case EMFILE:
    case ENFILE: msg += ": too many open files"; break;
    case ENOSYS: msg += ": this kernel has no io_uring"; break;
    case EINVAL: msg += ": the kernel rejected these parameters even after dropping optional flags"; break;
    default: break;
    }
    if (p.attach_wq_fd >= 0 && (err == ENXIO || err == EBADF || err == EINVAL)) {
        // The kernel answers ENXIO for a wq_fd that is not open and EINVAL for one that is not
        // an io_uring: name the option, which the bare errno does not.
        msg += "; RuntimeOptions::attach_wq asked to share the io-wq workers of ring fd " +
               std::to_string(p.attach_wq_fd) +
               (err == EINVAL ? ", which must be an open io_uring descriptor" : ", which is not an open descriptor");
    }
    return msg;
}

// What a runtime that fell back to the epoll engine was asked for and does not have: the
// options only io_uring has.
std::string not_in_force(const RingParams& p) {
    std::string opts;
    auto add = [&opts](const char* what) { opts += opts.empty() ? what : std::string(", ") + what; };
    if (p.flags & compat::setup::sqpoll)
        add("SQPOLL");
    if (p.flags & compat::setup::iopoll)
        add("IOPOLL");
    if (p.attach_wq_fd >= 0)
        add("attach_wq");
    return opts.empty() ? std::string() : "; not in force on the epoll engine: " + opts;
}

// RuntimeOptions::attach_wq names another ring's descriptor: check it before the kernel
// does, so the error names the option instead of a bare ENXIO or EINVAL.
void check_attach_wq_fd(int fd) {
    const std::string opt = "ringo: RuntimeOptions::attach_wq: fd " + std::to_string(fd);
    if (::fcntl(fd, F_GETFD) < 0)
        throw std::system_error(errno, std::generic_category(),
                                opt + " is not an open descriptor (was the runtime whose io-wq workers were to "
                                      "be shared destroyed?)");
    char link[64];
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(proc.c_str(), link, sizeof link - 1);
    if (n < 0)
        return; // no /proc: the kernel checks it
    link[n] = '\0';
    if (std::strcmp(link, "anon_inode:[io_uring]") != 0)
        throw std::invalid_argument(opt + " is not an io_uring (it is " + link +
                                    "); pass another Runtime or its ring_fd()");
}

} // namespace

std::string setup_flags_to_string(std::uint32_t flags) {
    std::string out;
    for (const auto& f : flag_names) {
        if (flags & f.bit) {
            if (!out.empty())
                out += '|';
            out += f.name;
            flags &= ~f.bit;
        }
    }
    if (flags) {
        if (!out.empty())
            out += '|';
        out += "0x" + [&] {
            char buf[16];
            std::snprintf(buf, sizeof buf, "%x", flags);
            return std::string(buf);
        }();
    }
    return out.empty() ? "none" : out;
}

io_uring_params RingParams::to_params() const noexcept {
    io_uring_params p;
    std::memset(&p, 0, sizeof p);
    p.flags = flags;
    if (cq_entries) {
        p.flags |= compat::setup::cqsize;
        p.cq_entries = cq_entries;
    }
    if (flags & compat::setup::sqpoll) {
        p.sq_thread_idle = sq_thread_idle_ms;
        if (sq_thread_cpu >= 0) {
            p.flags |= compat::setup::sq_aff;
            p.sq_thread_cpu = static_cast<unsigned>(sq_thread_cpu);
        }
    }
    if (attach_wq_fd >= 0) {
        p.flags |= compat::setup::attach_wq;
        p.wq_fd = static_cast<unsigned>(attach_wq_fd);
    }
    return p;
}

Ring::Ring(const RingParams& params) {
    if (params.sq_entries == 0 || params.sq_entries > max_sq_entries)
        throw std::invalid_argument("ringo: sq_entries must be between 1 and 32768, got " +
                                    std::to_string(params.sq_entries));
    if (params.cq_entries != 0 && (params.cq_entries < params.sq_entries || params.cq_entries > max_cq_entries))
        throw std::invalid_argument("ringo: cq_entries must be 0 (default) or between sq_entries and 65536, got " +
                                    std::to_string(params.cq_entries));
    if (params.sq_thread_cpu >= 0 && !(params.flags & compat::setup::sqpoll))
        throw std::invalid_argument("ringo: an SQPOLL cpu was given without SQPOLL");

    if (params.attach_wq_fd >= 0)
        check_attach_wq_fd(params.attach_wq_fd);
    setup_faults(params); // first: it may throw, and nothing is set up yet

    const EngineKind want = params.engine;
    if (want == EngineKind::epoll) {
        refusal_ = "the epoll engine was asked for";
        setup_epoll(params);
        return;
    }
    if (want == EngineKind::io_uring) {
        setup_kernel(params);
        return;
    }
    try {
        setup_kernel(params);
    } catch (const std::system_error& e) {
        // io_uring refused (seccomp's EPERM, kernel.io_uring_disabled's EPERM or EACCES,
        // ENOMEM under a memlock limit, ENOSYS): the epoll engine serves the same queues. Any
        // other error is the caller's parameters' (EINVAL after the optional flags were
        // dropped, an SQPOLL CPU that does not exist, a bad attach_wq): it throws, as it
        // would with no epoll engine to fall back on.
        const int err = e.code().value();
        if (e.code().category() != std::generic_category() ||
            (err != EPERM && err != EACCES && err != ENOSYS && err != ENOMEM))
            throw;
        ring_ = io_uring{};
        refusal_errno_ = err;
        refusal_ = std::string("io_uring could not be set up: ") + e.what();
        refusal_ += not_in_force(params);
        // Neither engine: one std::system_error that names both reasons (out of memory for the
        // epoll engine's queues too, as under a small RLIMIT_AS, is ENOMEM).
        try {
            setup_epoll(params);
        } catch (const std::system_error& e2) {
            throw std::system_error(e2.code(),
                                    refusal_ + "; and the epoll engine could not start either: " + e2.what());
        } catch (const std::bad_alloc&) {
            engine_.reset();
            throw std::system_error(ENOMEM, std::generic_category(),
                                    refusal_ + "; and the epoll engine could not start either: out of memory");
        }
    }
}

void Ring::setup_epoll(const RingParams& params) {
    auto pow2 = [](unsigned n) {
        unsigned p = 1;
        while (p < n)
            p <<= 1;
        return p;
    };
    const unsigned sq = pow2(params.sq_entries);
    const unsigned cq = params.cq_entries ? pow2(params.cq_entries) : 2 * sq;
    engine_ = make_epoll_engine(sq, cq, ring_, probe_);
    flags_ = 0;
    special_submit_ = via_engine_ = true;
    enter_fd_ = -1;
}

void Ring::setup_kernel(const RingParams& params) {
    RingParams attempt = params;
    for (;;) {
        io_uring_params p = attempt.to_params();
        int ret;
        if (params.setup_errno_for_testing > 0)
            ret = -params.setup_errno_for_testing;
        else if (attempt.flags & params.reject_flags_for_testing)
            ret = -EINVAL;
        else
            ret = io_uring_queue_init_params(params.sq_entries, &ring_, &p);
        if (ret == 0) {
            flags_ = ring_.flags;
            probe_.reset(0, p.features);
            break;
        }
        if (ret == -EINVAL && degrade(attempt.flags)) {
            ++degradations_;
            continue;
        }
        throw std::system_error(-ret, std::generic_category(), describe_setup_error(-ret, params, attempt.flags));
    }

    sqe_shift_ = (flags_ & compat::setup::sqe128) ? 1 : 0;
    cqe_shift_ = (flags_ & compat::setup::cqe32) ? 1 : 0;
    sqpoll_ = (flags_ & compat::setup::sqpoll) != 0;
    special_submit_ = sqpoll_ || faults_;
    iopoll_ = (flags_ & compat::setup::iopoll) != 0;
    // Identity-map the SQ index array (older liburing releases leave it to each flush).
    if (ring_.sq.array && !(flags_ & compat::setup::no_sqarray)) {
        for (unsigned i = 0; i < ring_.sq.ring_entries; ++i)
            ring_.sq.array[i] = i;
    }
    enter_fd_ = ring_.ring_fd;
    if (params.register_ring_fd) {
        int r = io_uring_register_ring_fd(&ring_);
        if (r == 1) {
            registered_ = true;
            enter_fd_ = ring_.enter_ring_fd;
        }
    }
    enter_flags_ = (registered_ ? compat::enter::registered_ring : 0u) | (iopoll_ ? compat::enter::getevents : 0u);

    // Opcode probe, read once. Without it (Linux < 5.6) ringo cannot tell what the kernel
    // supports, so setup fails with a clear message rather than guessing.
    io_uring_probe* pr = io_uring_get_probe_ring(&ring_);
    if (!pr) {
        io_uring_queue_exit(&ring_);
        throw std::system_error(ENOSYS, std::generic_category(),
                                "ringo: the kernel has no io_uring opcode probe (IORING_REGISTER_PROBE, "
                                "Linux 5.6); ringo needs Linux 5.6 or newer");
    }
    probe_.reset(pr->last_op + 1u, probe_.features());
    for (unsigned i = 0; i < pr->ops_len && i < 256; ++i) {
        if (pr->ops[i].flags & IO_URING_OP_SUPPORTED)
            probe_.set_supported(static_cast<std::uint8_t>(pr->ops[i].op), true);
    }
    io_uring_free_probe(pr);
    try {
        engine_ = std::make_unique<KernelEngine>(ring_, enter_fd_, enter_flags_, sqpoll_);
    } catch (...) {
        io_uring_queue_exit(&ring_);
        throw;
    }
    via_engine_ = sqpoll_;
}

Ring::~Ring() = default;

long Ring::sys_enter_generic(unsigned to_submit, unsigned wait_nr, unsigned flags) noexcept {
    long r = ::syscall(__NR_io_uring_enter, enter_fd_, to_submit, wait_nr, flags, nullptr, 0);
    return r < 0 ? -errno : r;
}

int Ring::register_buf_ring(io_uring_buf_reg& reg) noexcept { return engine_->register_buf_ring(reg); }

int Ring::unregister_buf_ring(std::uint16_t bgid) noexcept { return engine_->unregister_buf_ring(bgid); }

int Ring::submit_shortfall(long r, unsigned to_submit) noexcept {
    if (r < 0) {
        // Nothing was consumed: the SQEs stay published and go with the next call.
        ring_.sq.sqe_head -= to_submit;
        return static_cast<int>(r);
    }
    // The kernel stopped early (back-pressure, or an SQE it could not even read);
    // what it did not consume stays published and counts as pending again.
    unsigned consumed = static_cast<unsigned>(r);
    sqes_submitted_ += consumed;
    ring_.sq.sqe_head -= (to_submit - consumed);
    return static_cast<int>(r);
}

// Through the engine seam: the SQEs published, then the engine's enter; what it did not take
// stays published (the next enter hands it over again).
int Ring::submit_engine(unsigned to_submit, unsigned wait_nr, bool get_events,
                        const std::uint64_t* timeout_ns) noexcept {
    if (to_submit) {
        ring_.sq.sqe_head = ring_.sq.sqe_tail;
        __atomic_store_n(ring_.sq.ktail, ring_.sq.sqe_tail, __ATOMIC_RELEASE);
    }
    const EnterResult e = engine_->enter(to_submit, wait_nr, get_events, timeout_ns);
    enters_ += e.entered;
    sqes_submitted_ += e.taken;
    ring_.sq.sqe_head -= to_submit - e.taken;
    return e.res;
}

int Ring::submit_special(unsigned to_submit, unsigned wait_nr, bool get_events) noexcept {
    if (faults_) [[unlikely]] {
        if (int r = inject_faults(wait_nr != 0))
            return r;
    }
    if (via_engine_)
        return submit_engine(to_submit, wait_nr, get_events, nullptr);
    return submit_direct(ring_.sq.sqe_tail, to_submit, wait_nr, get_events);
}

int Ring::submit_and_wait_timeout(unsigned wait_nr, std::uint64_t timeout_ns) noexcept {
    if (faults_) [[unlikely]] {
        if (int r = inject_faults(true))
            return r;
    }
    return submit_engine(ring_.sq.sqe_tail - ring_.sq.sqe_head, wait_nr, true, &timeout_ns);
}

// --- fault injection at the seam (FaultPlan) ---------------------------------------------

#ifndef RINGO_FAULT_INJECTION
#define RINGO_FAULT_INJECTION 0
#endif

bool fault_injection_built() noexcept { return RINGO_FAULT_INJECTION != 0; }

FaultPlan FaultPlan::parse(const std::string& text) {
    FaultPlan plan;
    std::string_view rest(text);
    while (!rest.empty()) {
        std::size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        bool trailing_comma = comma != std::string_view::npos && rest.empty();
        std::size_t eq = item.find('=');
        std::string_view key = item.substr(0, eq);
        std::string value(eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1));
        char* end = nullptr;
        errno = 0;
        unsigned long long n = value.empty() ? 0 : std::strtoull(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-' || trailing_comma)
            throw std::invalid_argument("ringo: a fault plan is \"enter=N,short=N,nobufs=N,seed=S\", got \"" + text +
                                        "\"");
        if (key == "seed") {
            plan.seed = n;
            continue;
        }
        if (n > 0xFFFFFFFFull)
            throw std::invalid_argument("ringo: a fault's N (1 in N) is at most 4294967295, got " + value);
        if (key == "enter")
            plan.enter_errors = static_cast<unsigned>(n);
        else if (key == "short")
            plan.short_io = static_cast<unsigned>(n);
        else if (key == "nobufs")
            plan.no_buffers = static_cast<unsigned>(n);
        else
            throw std::invalid_argument("ringo: unknown fault \"" + std::string(key) +
                                        "\" (known: enter, short, nobufs, seed)");
    }
    return plan;
}

struct Ring::FaultState {
    FaultPlan plan;
    FaultCounts counts;
    std::uint64_t rng;
    unsigned scanned = 0;     // SQ index up to which SQEs have been looked at
    unsigned enter_error = 0; // which of EAGAIN, EBUSY, EINTR comes next

    bool roll(unsigned one_in) noexcept {
        if (one_in == 0)
            return false;
        return next() % one_in == 0;
    }
    std::uint64_t next() noexcept { // xorshift64*
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * 0x2545F4914F6CDD1Dull;
    }
};

FaultCounts Ring::faults_injected() const noexcept { return faults_ ? faults_->counts : FaultCounts{}; }

namespace {

// Whether a transfer on `fd` may be cut short without losing or breaking anything: a regular
// file (not O_DIRECT, whose lengths must stay aligned), a pipe or FIFO, a stream socket.
bool may_cut_short(int fd) noexcept {
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0)
        return false;
    if (S_ISREG(st.st_mode)) {
        int fl = ::fcntl(fd, F_GETFL);
        return fl >= 0 && !(fl & O_DIRECT);
    }
    if (S_ISFIFO(st.st_mode))
        return true;
    if (S_ISSOCK(st.st_mode)) {
        int type = 0;
        socklen_t len = sizeof type;
        return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
    }
    return false;
}

// Whether this kernel's NOP can inject a result (IORING_NOP_INJECT_RESULT, Linux 6.10): one
// NOP on a ring of its own.
bool kernel_nop_injects() noexcept {
    io_uring r;
    if (io_uring_queue_init(2, &r, 0) != 0)
        return false;
    io_uring_sqe* s = io_uring_get_sqe(&r);
    io_uring_prep_nop(s);
    s->rw_flags = 1; // nop_flags: IORING_NOP_INJECT_RESULT
    s->len = static_cast<unsigned>(-ENOBUFS);
    bool ok = false;
    io_uring_cqe* c = nullptr;
    if (io_uring_submit_and_wait(&r, 1) == 1 && io_uring_peek_cqe(&r, &c) == 0)
        ok = c->res == -ENOBUFS;
    io_uring_queue_exit(&r);
    return ok;
}

} // namespace

void Ring::setup_faults(const RingParams& params) {
    FaultPlan plan = params.faults;
    if (!plan.any()) {
        if (const char* e = std::getenv("RINGO_FAULTS"); e && *e)
            plan = FaultPlan::parse(e);
    }
    if (!plan.any())
        return;
    if (!RINGO_FAULT_INJECTION)
        throw std::invalid_argument("ringo: fault injection is not built into this ringo (it is in the test and "
                                    "sanitizer builds: CMake option RINGO_FAULT_INJECTION)");
    if (plan.no_buffers && params.engine != EngineKind::epoll && !kernel_nop_injects() &&
        params.setup_errno_for_testing == 0) {
        // Without it an injected -ENOBUFS would come back as -EINVAL on io_uring.
        throw std::invalid_argument("ringo: injecting -ENOBUFS needs IORING_NOP_INJECT_RESULT (Linux 6.10), "
                                    "which this kernel lacks");
    }
    faults_ = std::make_unique<FaultState>();
    faults_->plan = plan;
    faults_->rng = plan.seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    if (faults_->rng == 0)
        faults_->rng = 1;
}

int Ring::inject_faults(bool waits) noexcept {
    FaultState& f = *faults_;
    // The SQEs not yet looked at: each once, however many times their submission is retried.
    const unsigned head = ring_.sq.sqe_head, tail = ring_.sq.sqe_tail;
    if (static_cast<int>(f.scanned - head) < 0)
        f.scanned = head;
    for (; f.scanned != tail; ++f.scanned) {
        io_uring_sqe* s = &ring_.sq.sqes[(f.scanned & ring_.sq.ring_mask) << sqe_shift_];
        namespace op = compat::opcode;
        namespace fl = compat::sqe_flag;
        if ((s->flags & fl::buffer_select) && f.roll(f.plan.no_buffers)) {
            // The operation completes with -ENOBUFS without running: a NOP that injects it,
            // keeping user_data and the link flags (a failure breaks a chain as it would).
            std::uint64_t ud = s->user_data;
            std::uint8_t keep = s->flags & (fl::io_link | fl::io_hardlink | fl::io_drain);
            std::memset(s, 0, sizeof *s);
            s->opcode = op::nop;
            s->flags = keep;
            s->rw_flags = 1; // nop_flags: IORING_NOP_INJECT_RESULT
            s->len = static_cast<unsigned>(-ENOBUFS);
            s->fd = -1;
            s->user_data = ud;
            ++f.counts.no_buffers;
            continue;
        }
        if (!f.plan.short_io || (s->flags & (fl::io_link | fl::io_hardlink | fl::fixed_file)) || s->len < 2)
            continue;
        switch (s->opcode) {
        case op::read:
        case op::write:
        case op::read_fixed:
        case op::write_fixed:
        case op::recv:
        case op::send:
        case op::readv:
        case op::writev: break;
        default: continue;
        }
        if (s->opcode == op::recv && (s->ioprio & compat::recvsend::recv_multishot))
            continue;
        if (!f.roll(f.plan.short_io) || !may_cut_short(s->fd))
            continue;
        s->len = 1 + static_cast<unsigned>(f.next() % (s->len - 1)); // bytes, or iovecs
        ++f.counts.short_io;
    }
    if (f.roll(f.plan.enter_errors)) {
        static constexpr int errs[] = {EAGAIN, EBUSY, EINTR};
        int e = errs[f.enter_error++ % (waits ? 3 : 2)];
        ++f.counts.enter_errors;
        return -e; // nothing consumed: the SQEs stay pending for the next call
    }
    return 0;
}

} // namespace ringo::uring
