// ringo/uring/ring.hpp - one io_uring instance: setup with degradation, SQE allocation,
// submission and completion reaping. The only layer that includes <liburing.h>.
#pragma once

#include <liburing.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <ringo/uring/compat.hpp>
#include <ringo/uring/faults.hpp>
#include <ringo/uring/probe.hpp>
#include <ringo/uring/queue_engine.hpp>

namespace ringo::uring {

#ifndef RINGO_POISON_SQES
#define RINGO_POISON_SQES 0
#endif
/// True in builds that poison SQEs before preparing them (RINGO_POISON_SQES; see Ring).
inline constexpr bool poisons_sqes = RINGO_POISON_SQES != 0;
/// The byte the SQE fields a preparation must set are filled with first when poisons_sqes:
/// as an opcode it is unknown, as IOSQE flags invalid, as a descriptor negative, as an
/// address not canonical, so a field left unset fails loudly.
inline constexpr unsigned char sqe_poison_byte = 0xA5;

/// What to ask io_uring_setup() for. Built by ringo::RuntimeOptions.
struct RingParams {
    /// io_uring, epoll, or automatic: io_uring when a ring can be set up, epoll when the
    /// kernel refuses io_uring (a Runtime's options let RINGO_ENGINE override automatic).
    EngineKind engine = EngineKind::automatic;
    unsigned sq_entries = 256;      ///< SQ entries (the kernel rounds up to a power of two)
    unsigned cq_entries = 0;        ///< 0: the kernel default (2 x sq_entries)
    std::uint32_t flags = 0;        ///< IORING_SETUP_* requested first
    unsigned sq_thread_idle_ms = 0; ///< SQPOLL only
    int sq_thread_cpu = -1;         ///< SQPOLL only; -1: any
    int attach_wq_fd = -1;          ///< IORING_SETUP_ATTACH_WQ target, -1: none
    /// Register the ring's own fd (IORING_REGISTER_RING_FDS) so enters skip the fd lookup.
    bool register_ring_fd = true;
    /// Fault injection for tests: any setup attempt whose flags intersect this mask is
    /// treated as if the kernel had answered EINVAL, so the degradation path can be tested.
    std::uint32_t reject_flags_for_testing = 0;
    /// Fault injection for tests: when non-zero, every setup attempt fails with this errno
    /// (as if io_uring_setup or mapping the rings had returned -errno), so the error paths
    /// the kernel takes only under memory pressure or old limits (ENOMEM) can be tested.
    int setup_errno_for_testing = 0;
    /// Fault injection for tests: faults injected at the seam while the Ring runs (see
    /// FaultPlan); the RINGO_FAULTS environment variable gives one when this injects nothing.
    FaultPlan faults{};

    /// The io_uring_params the first setup attempt passes to the kernel.
    [[nodiscard]] io_uring_params to_params() const noexcept;
};

/// Owns one io_uring. Not thread-safe: one thread submits and reaps.
class Ring {
public:
    /// Sets up the ring. On EINVAL, degrades DEFER_TASKRUN -> COOP_TASKRUN -> no task-run
    /// flags (and drops SUBMIT_ALL, SINGLE_ISSUER on the last step). With EngineKind::epoll,
    /// or automatic when io_uring cannot be set up at all, the queues are the epoll engine's
    /// instead (engine(), io_uring_refusal()). Throws std::system_error naming the problem
    /// when no engine can start (both reasons when automatic), std::invalid_argument on bad
    /// sizes.
    explicit Ring(const RingParams& params);
    ~Ring();
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;

    /// A free SQE, or nullptr when the SQ is full (call submit() and retry). The SQE comes
    /// initialised by init_sqe(): whatever the slot held before and whatever the installed
    /// liburing's prep helpers set, the fields they may leave alone are zero.
    io_uring_sqe* get_sqe() noexcept {
        // Acquire: with SQPOLL the kernel thread moves the head (a plain load on x86).
        unsigned head = __atomic_load_n(ring_.sq.khead, __ATOMIC_ACQUIRE);
        unsigned tail = ring_.sq.sqe_tail;
        if (tail - head >= ring_.sq.ring_entries) [[unlikely]]
            return nullptr;
        ring_.sq.sqe_tail = tail + 1;
        const unsigned shift = sqe_shift_;
        return init_sqe(&ring_.sq.sqes[(tail & ring_.sq.ring_mask) << shift], shift);
    }

    /// An SQE when room was made beforehand (sq_space() >= the number taken): no check.
    /// Initialised like get_sqe().
    io_uring_sqe* get_sqe_reserved() noexcept {
        unsigned tail = ring_.sq.sqe_tail++;
        const unsigned shift = sqe_shift_;
        return init_sqe(&ring_.sq.sqes[(tail & ring_.sq.ring_mask) << shift], shift);
    }

    /// Free SQ slots: how many get_sqe() calls succeed before a submit is needed.
    [[nodiscard]] unsigned sq_space() const noexcept {
        return ring_.sq.ring_entries - (ring_.sq.sqe_tail - __atomic_load_n(ring_.sq.khead, __ATOMIC_ACQUIRE));
    }

    /// SQEs taken with get_sqe() and not yet handed to the kernel.
    [[nodiscard]] unsigned pending() const noexcept { return ring_.sq.sqe_tail - ring_.sq.sqe_head; }

    /// Publishes pending SQEs and enters the kernel when needed: to submit, to wait for
    /// `wait_nr` completions, or to run deferred task work when `get_events`.
    /// Returns the number of SQEs the kernel consumed, or -errno (EBUSY/EAGAIN mean the
    /// CQ is full: reap and retry; EINTR when a wait was interrupted). Always inlined: the
    /// run loop's and a lone task's wait (Runtime::start_op), where a call costs a frame.
    [[gnu::always_inline]] int submit(unsigned wait_nr, bool get_events) noexcept {
        unsigned tail = ring_.sq.sqe_tail;
        unsigned to_submit = tail - ring_.sq.sqe_head;
        if (special_submit_) [[unlikely]] // through the engine seam (SQPOLL, the epoll engine), or faults
            return submit_special(to_submit, wait_nr, get_events);
        return submit_direct(tail, to_submit, wait_nr, get_events);
    }

    /// submit() on io_uring without SQPOLL: `tail` is the SQ's tail, `to_submit` the SQEs
    /// not yet handed to the kernel.
    [[gnu::always_inline]] int submit_direct(unsigned tail, unsigned to_submit, unsigned wait_nr,
                                             bool get_events) noexcept {
        if (to_submit) {
            ring_.sq.sqe_head = tail;
            __atomic_store_n(ring_.sq.ktail, tail, __ATOMIC_RELEASE);
        } else if (!wait_nr && !get_events && !iopoll_ && !needs_enter()) {
            return 0;
        }
        unsigned flags = enter_flags_ | ((wait_nr | unsigned(get_events)) ? compat::enter::getevents : 0u);
        ++enters_;
        long r = sys_enter(to_submit, wait_nr, flags);
        if (static_cast<unsigned long>(r) != to_submit) [[unlikely]]
            return submit_shortfall(r, to_submit);
        sqes_submitted_ += to_submit;
        return static_cast<int>(r);
    }

    /// Like submit(wait_nr, true), but the wait ends after `timeout_ns` at the latest
    /// (IORING_ENTER_EXT_ARG, 5.11); returns -ETIME then.
    int submit_and_wait_timeout(unsigned wait_nr, std::uint64_t timeout_ns) noexcept;

    /// Calls f(user_data, res, flags) for each available CQE, advancing the CQ head before
    /// each call (so f may submit and even reap). Returns the number of CQEs seen.
    /// Always inlined: the run loop's CQE loop, where a call would cost a frame of saved
    /// registers per turn (Clang 14 outlined it otherwise).
    template <class F>
    [[gnu::always_inline]] unsigned reap(F&& f) {
        unsigned* const khead = ring_.cq.khead;
        unsigned head = *khead;
        const unsigned tail = __atomic_load_n(ring_.cq.ktail, __ATOMIC_ACQUIRE);
        const unsigned n = tail - head;
        while (static_cast<int>(tail - head) > 0) {
            const io_uring_cqe* cqe = &ring_.cq.cqes[(head & ring_.cq.ring_mask) << cqe_shift_];
            std::uint64_t ud = cqe->user_data;
            int res = cqe->res;
            std::uint32_t fl = cqe->flags;
            __atomic_store_n(khead, ++head, __ATOMIC_RELEASE);
            f(ud, res, fl);
            head = *khead; // f may have reaped further
        }
        return n;
    }

    /// True when the kernel has CQEs waiting in its overflow list or deferred task work.
    [[nodiscard]] bool needs_enter() const noexcept {
        unsigned fl = __atomic_load_n(ring_.sq.kflags, __ATOMIC_RELAXED);
        return (fl & (compat::sq_cq_overflow | compat::sq_taskrun)) != 0;
    }
    /// True when the kernel holds completions in its CQ overflow list: the CQ was full when
    /// they were posted (IORING_FEAT_NODROP keeps them); an enter with GETEVENTS moves them in.
    [[nodiscard]] bool cq_overflowed() const noexcept {
        return (__atomic_load_n(ring_.sq.kflags, __ATOMIC_RELAXED) & compat::sq_cq_overflow) != 0;
    }
    /// The CQ's head and tail indexes (the CQEs in between wait to be reaped), and the CQE at
    /// an index.
    [[nodiscard]] unsigned cq_head() const noexcept { return *ring_.cq.khead; }
    /// The CQ's tail index (acquire load: CQEs before it are visible).
    [[nodiscard]] unsigned cq_tail() const noexcept { return __atomic_load_n(ring_.cq.ktail, __ATOMIC_ACQUIRE); }
    /// The CQE at `index` (taken modulo the CQ's size).
    [[nodiscard]] const io_uring_cqe* cqe_at(unsigned index) const noexcept {
        return &ring_.cq.cqes[(index & ring_.cq.ring_mask) << cqe_shift_];
    }
    /// Consumes the CQE at the head of the CQ, whose index is `head` (cq_head()).
    void pop_cqe(unsigned head) noexcept { __atomic_store_n(ring_.cq.khead, head + 1, __ATOMIC_RELEASE); }

    /// The ring's descriptor (-1 on the epoll engine, which has none).
    [[nodiscard]] int fd() const noexcept { return ring_.ring_fd; }
    /// The engine that serves the queues: EngineKind::io_uring or EngineKind::epoll.
    [[nodiscard]] EngineKind engine() const noexcept { return engine_->kind(); }
    /// Why io_uring is not in use on the epoll engine: the errno io_uring_setup failed with
    /// (0 when epoll was asked for), and a sentence naming it.
    [[nodiscard]] int io_uring_refusal() const noexcept { return refusal_errno_; }
    /// The sentence of io_uring_refusal(); empty on io_uring.
    [[nodiscard]] const std::string& io_uring_refusal_reason() const noexcept { return refusal_; }
    /// The IORING_SETUP_* flags in force after degradation.
    [[nodiscard]] std::uint32_t setup_flags() const noexcept { return flags_; }
    /// The IORING_FEAT_* bits the kernel reported at setup.
    [[nodiscard]] std::uint32_t features() const noexcept { return probe_.features(); }
    /// True when the ring's fd is registered (enters use the registered index).
    [[nodiscard]] bool ring_fd_registered() const noexcept { return registered_; }
    /// The SQ's size, as set up.
    [[nodiscard]] unsigned sq_entries() const noexcept { return ring_.sq.ring_entries; }
    /// The CQ's size, as set up.
    [[nodiscard]] unsigned cq_entries() const noexcept { return ring_.cq.ring_entries; }
    /// Number of io_uring_enter system calls made so far.
    [[nodiscard]] std::uint64_t enters() const noexcept { return enters_; }
    /// Number of SQEs handed to the kernel so far.
    [[nodiscard]] std::uint64_t sqes_submitted() const noexcept { return sqes_submitted_; }
    /// Setup attempts that were refused before one worked (0: the first worked).
    [[nodiscard]] unsigned degradations() const noexcept { return degradations_; }
    /// The faults injected so far (RingParams::faults, RINGO_FAULTS); zero without a plan.
    [[nodiscard]] FaultCounts faults_injected() const noexcept;

    /// Registers a provided-buffer ring (IORING_REGISTER_PBUF_RING, io_uring_register_buf_ring;
    /// on the epoll engine, the engine's own buffer selection): 0 or -errno.
    int register_buf_ring(io_uring_buf_reg& reg) noexcept;
    /// Unregisters buffer group `bgid`: 0 or -errno.
    int unregister_buf_ring(std::uint16_t bgid) noexcept;
    /// An owner (ringo::Fd) took descriptor `fd` or gave it up (QueueEngine::own_fd: the epoll
    /// engine keeps its registration; nothing on io_uring).
    void own_fd(int fd, bool owned) noexcept { engine_->own_fd(fd, owned); }
    /// The SQEs of user_data `ud` are the runtime's own (its wake-up read, which on io_uring is
    /// no SQE at all): an IOSQE_IO_DRAIN does not wait for them (QueueEngine::private_user_data).
    void private_user_data(std::uint64_t ud) noexcept { engine_->private_user_data(ud); }
    /// The engine's readiness registrations so far (the epoll engine's epoll_ctl calls); 0 on
    /// io_uring.
    [[nodiscard]] std::uint64_t readiness_registrations() const noexcept { return engine_->readiness_registrations(); }

    /// The opcode probe (set_supported hides an operation from every runtime on this ring).
    Probe& probe() noexcept { return probe_; }
    /// The opcode probe.
    const Probe& probe() const noexcept { return probe_; }
    /// liburing's io_uring (the queues); on the epoll engine, the engine's own queues.
    io_uring& raw() noexcept { return ring_; }

private:
    io_uring ring_{};
    Probe probe_;
    // What serves the queues (the seam: uring/queue_engine.hpp): the kernel's io_uring or the
    // epoll engine. Declared after ring_: the kernel's engine ends the ring with its own end.
    std::unique_ptr<QueueEngine> engine_;
    struct FaultState;
    std::unique_ptr<FaultState> faults_; // the faults to inject, when a plan asks for any
    std::string refusal_;
    int refusal_errno_ = 0;
    std::uint32_t flags_ = 0;
    unsigned sqe_shift_ = 0;
    unsigned cqe_shift_ = 0;
    bool special_submit_ = false; // via_engine_ or faults_: submit() goes to submit_special
    bool via_engine_ = false;     // submissions go through engine_ (SQPOLL, a user-space engine)
    bool sqpoll_ = false;
    bool iopoll_ = false;
    bool registered_ = false;
    int enter_fd_ = -1;
    unsigned degradations_ = 0;
    std::uint64_t enters_ = 0;
    std::uint64_t sqes_submitted_ = 0;
    unsigned enter_flags_ = 0; // REGISTERED_RING, and GETEVENTS under IOPOLL

    // The one place where an SQE ringo hands out is initialised. liburing 2.3's prep
    // helpers write all 64 bytes; from 2.6 on, io_uring_prep_rw() sets only opcode, fd, off,
    // addr and len, and io_uring_get_sqe() (which ringo does not use) clears the rest. So
    // this clears exactly that rest: flags, ioprio, the per-opcode flag word, buf_index,
    // personality, file_index, addr3 and the last 8 bytes (the end of the 16-byte command
    // area of a uring_cmd), and the second half of a 128-byte SQE. user_data is always
    // set by ringo after preparation. Every other field is the preparation's to set: with
    // RINGO_POISON_SQES (on in the sanitizer builds) those are first filled with
    // sqe_poison_byte, so a field that no code sets makes the kernel refuse the request
    // (or the CQE go astray) in a test instead of carrying a stale value silently.
    // `shift` is sqe_shift_, read by the caller before any store (the stores go through a
    // char pointer, which may alias this object, and would force a reload after them).
    static io_uring_sqe* init_sqe(io_uring_sqe* s, unsigned shift) noexcept {
        if (s == nullptr)
            __builtin_unreachable(); // lets the caller's null check fold away
        auto* b = reinterpret_cast<unsigned char*>(s);
        static_assert(sizeof(io_uring_sqe) == 64);
        static_assert(offsetof(io_uring_sqe, opcode) == 0 && offsetof(io_uring_sqe, flags) == 1 &&
                      offsetof(io_uring_sqe, ioprio) == 2);
        static_assert(offsetof(io_uring_sqe, rw_flags) == 28);
        static_assert(offsetof(io_uring_sqe, buf_index) == 40 && offsetof(io_uring_sqe, personality) == 42 &&
                      offsetof(io_uring_sqe, file_index) == 44 && offsetof(io_uring_sqe, addr3) == 48);
#if RINGO_POISON_SQES
        __builtin_memset(b, sqe_poison_byte, sizeof(io_uring_sqe) << shift);
#endif
        // The branch comes first: the stores below then run straight into the preparation's,
        // and the compiler drops those the preparation overwrites (all of them with
        // liburing 2.3's helpers).
        if (shift) [[unlikely]]
            __builtin_memset(b + 64, 0, 64); // the rest of a 128-byte SQE's command area
#if RINGO_POISON_SQES
        __builtin_memset(b + 1, 0, 3); // flags, ioprio (the opcode stays poison)
#else
        __builtin_memset(b, 0, 4); // flags, ioprio; and the opcode, which every preparation sets
#endif
        __builtin_memset(b + 28, 0, 4);  // rw_flags and the other per-opcode flag words
        __builtin_memset(b + 40, 0, 24); // buf_index, personality, file_index, addr3, __pad2
        return s;
    }

    long sys_enter(unsigned to_submit, unsigned wait_nr, unsigned flags) noexcept {
#if defined(__x86_64__)
        // Everything is loaded into plain locals first: instrumentation (sanitizers) may
        // insert calls, which must not run between the register variables and the asm.
        long fd = enter_fd_, n = to_submit, w = wait_nr, fl = flags;
        long ret;
        register long r10 __asm__("r10") = fl;
        register long r8 __asm__("r8") = 0;
        register long r9 __asm__("r9") = 0;
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "0"(426L), "D"(fd), "S"(n), "d"(w), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
        return ret;
#else
        return sys_enter_generic(to_submit, wait_nr, flags);
#endif
    }
    long sys_enter_generic(unsigned to_submit, unsigned wait_nr, unsigned flags) noexcept;
    int submit_special(unsigned to_submit, unsigned wait_nr, bool get_events) noexcept;
    [[gnu::always_inline]] inline int submit_engine(unsigned to_submit, unsigned wait_nr, bool get_events,
                                                    const std::uint64_t* timeout_ns) noexcept;
    void setup_kernel(const RingParams& params);
    void setup_faults(const RingParams& params);
    int inject_faults(bool waits) noexcept;
    void setup_epoll(const RingParams& params);
    int submit_shortfall(long r, unsigned to_submit) noexcept;
};

/// Human-readable names of IORING_SETUP_* bits, e.g. "SINGLE_ISSUER|DEFER_TASKRUN".
std::string setup_flags_to_string(std::uint32_t flags);

} // namespace ringo::uring
