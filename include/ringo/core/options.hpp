// ringo/core/options.hpp - RuntimeOptions: a fluent description of the ring a Runtime sets up.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string_view>

#include <ringo/uring/ring.hpp>

namespace ringo {

class Runtime;

/// What serves a runtime's operations (RuntimeOptions::engine, Runtime::engine):
///   - `io_uring`: the kernel's io_uring, the fast path;
///   - `epoll`: the epoll engine: the same operations by readiness (sockets, pipes) and on a
///     bounded thread pool (files, path calls), for where io_uring is refused (a container's
///     seccomp profile, kernel.io_uring_disabled, a memlock limit), with the kernel's answers
///     (docs/ops.md, "The epoll engine answers what the kernel answers"); provided-buffer
///     rings and multishot receive work there too, and io_uring-only features (registered
///     files and buffers, zero-copy send, msg_ring, uring_cmd) complete with -EOPNOTSUPP or
///     take their usual fallback;
///   - `automatic` (the default): io_uring when a ring can be set up, epoll when the kernel
///     refuses io_uring (EPERM, EACCES, ENOSYS, or ENOMEM at setup); a parameter the kernel
///     rejects (EINVAL after the optional flags were dropped, a bad attach_wq) throws, as
///     with `io_uring`. The environment variable RINGO_ENGINE=epoll or RINGO_ENGINE=io_uring
///     overrides it.
using Engine = uring::EngineKind;

/// How a Runtime sets up its io_uring. Every setter returns *this:
///
///     ringo::Runtime rt{ringo::RuntimeOptions{}.sq_entries(1024).coop_taskrun()};
///
/// Defaults: 256 SQ entries, CQ twice that, SINGLE_ISSUER | DEFER_TASKRUN | SUBMIT_ALL,
/// registered ring fd. When the kernel refuses DEFER_TASKRUN with EINVAL the runtime falls
/// back to COOP_TASKRUN | TASKRUN_FLAG, then to no task-run flags; Runtime::setup_flags()
/// tells what is in force.
class RuntimeOptions {
public:
    /// The submission queue's size (the kernel rounds it up to a power of two; default 256).
    RuntimeOptions& sq_entries(unsigned n) noexcept {
        p_.sq_entries = n;
        return *this;
    }
    /// 0 keeps the kernel default (2 x sq_entries).
    RuntimeOptions& cq_entries(unsigned n) noexcept {
        p_.cq_entries = n;
        return *this;
    }
    /// A kernel thread polls the SQ (IORING_SETUP_SQPOLL); it idles after `idle_ms` and is
    /// pinned to `cpu` when cpu >= 0 (IORING_SETUP_SQ_AFF). SQPOLL excludes DEFER_TASKRUN.
    RuntimeOptions& sqpoll(bool on = true, unsigned idle_ms = 1000, int cpu = -1) noexcept {
        sqpoll_ = on;
        p_.sq_thread_idle_ms = idle_ms;
        p_.sq_thread_cpu = on ? cpu : -1;
        return *this;
    }
    /// Busy-poll for completions (IORING_SETUP_IOPOLL): O_DIRECT files on devices with poll queues only.
    RuntimeOptions& iopoll(bool on = true) noexcept {
        iopoll_ = on;
        return *this;
    }
    /// IORING_SETUP_SINGLE_ISSUER: only the runtime's thread submits (6.0; dropped where
    /// refused).
    RuntimeOptions& single_issuer(bool on = true) noexcept {
        single_issuer_ = on;
        return *this;
    }
    /// DEFER_TASKRUN implies SINGLE_ISSUER.
    RuntimeOptions& defer_taskrun(bool on = true) noexcept {
        defer_taskrun_ = on;
        return *this;
    }
    /// COOP_TASKRUN | TASKRUN_FLAG; takes the place of DEFER_TASKRUN.
    RuntimeOptions& coop_taskrun(bool on = true) noexcept {
        coop_taskrun_ = on;
        if (on)
            defer_taskrun_ = false;
        return *this;
    }
    /// IORING_SETUP_SUBMIT_ALL: a batch goes on past an SQE that fails at submission (5.18).
    RuntimeOptions& submit_all(bool on = true) noexcept {
        submit_all_ = on;
        return *this;
    }
    /// Register the ring fd (IORING_REGISTER_RING_FDS) so io_uring_enter skips the fd lookup.
    RuntimeOptions& register_ring_fd(bool on = true) noexcept {
        p_.register_ring_fd = on;
        return *this;
    }
    /// Share the io-wq worker pool of another runtime's ring (IORING_SETUP_ATTACH_WQ).
    RuntimeOptions& attach_wq(const Runtime& other) noexcept;
    /// attach_wq() by the other ring's descriptor.
    RuntimeOptions& attach_wq_fd(int ring_fd) noexcept {
        p_.attach_wq_fd = ring_fd;
        return *this;
    }
    /// After this many resumptions in a row the runtime submits gathered SQEs and reaps
    /// completions even though tasks are still ready (so a busy run queue cannot starve I/O).
    RuntimeOptions& flush_interval(unsigned n) noexcept {
        flush_interval_ = n ? n : 1;
        return *this;
    }
    /// Called once for each detached task that ends with an exception (the default prints it
    /// to stderr): on the runtime's thread when the task was detached before it ended, on the
    /// detaching thread when it had already ended (see JoinHandle::detach), so a handler
    /// shared by several threads must be thread-safe.
    RuntimeOptions& on_detached_exception(void (*fn)(std::exception_ptr)) noexcept {
        on_exc_ = fn;
        return *this;
    }
    /// Fault injection for tests: setup attempts that include any of these IORING_SETUP_*
    /// flags fail as if the kernel answered EINVAL.
    RuntimeOptions& reject_setup_flags_for_testing(std::uint32_t mask) noexcept {
        p_.reject_flags_for_testing = mask;
        return *this;
    }
    /// The engine (see Engine): automatic by default.
    RuntimeOptions& engine(Engine e) noexcept {
        p_.engine = e;
        return *this;
    }
    /// Fault injection for tests: every io_uring setup attempt fails with `err` (an errno
    /// value, e.g. ENOMEM or EPERM) as if the kernel had refused the ring (with the automatic
    /// engine the runtime then runs on epoll); 0 turns it off.
    RuntimeOptions& fail_setup_for_testing(int err) noexcept {
        p_.setup_errno_for_testing = err;
        return *this;
    }
    /// Fault injection for tests: enter errors, short transfers and -ENOBUFS injected at the
    /// engine seam while the runtime runs (uring::FaultPlan; Runtime::ring().faults_injected()
    /// counts them). Only builds with fault injection honour it (uring::fault_injection_built());
    /// elsewhere a plan that injects anything makes the Runtime's constructor throw
    /// std::invalid_argument.
    RuntimeOptions& faults_for_testing(const uring::FaultPlan& plan) noexcept {
        p_.faults = plan;
        return *this;
    }

    /// The ring parameters these options ask for first (before any degradation).
    [[nodiscard]] uring::RingParams ring_params() const noexcept {
        namespace s = uring::compat::setup;
        uring::RingParams p = p_;
        p.engine = engine_from_environment(p.engine);
        p.flags = 0;
        if (sqpoll_)
            p.flags |= s::sqpoll;
        if (iopoll_)
            p.flags |= s::iopoll;
        if (submit_all_)
            p.flags |= s::submit_all;
        if (single_issuer_)
            p.flags |= s::single_issuer;
        if (defer_taskrun_ && !sqpoll_)
            p.flags |= s::defer_taskrun | s::single_issuer;
        else if (coop_taskrun_ || defer_taskrun_)
            p.flags |= s::coop_taskrun | s::taskrun_flag;
        return p;
    }
    /// The io_uring_params of the first setup attempt.
    [[nodiscard]] io_uring_params to_params() const noexcept { return ring_params().to_params(); }

    /// The flush interval (see the setter).
    [[nodiscard]] unsigned flush_interval() const noexcept { return flush_interval_; }
    /// The handler of exceptions that end detached tasks (null: the default, which prints to
    /// stderr).
    [[nodiscard]] auto detached_exception_handler() const noexcept { return on_exc_; }

    /// The engine a runtime that asks for `asked` gets: automatic, unless the environment
    /// variable RINGO_ENGINE says epoll or io_uring (a deployed program or a test run can so
    /// force either engine); an engine asked for by name is kept.
    [[nodiscard]] static uring::EngineKind engine_from_environment(uring::EngineKind asked) noexcept {
        if (asked != uring::EngineKind::automatic)
            return asked;
        const char* e = std::getenv("RINGO_ENGINE");
        if (!e)
            return asked;
        const std::string_view v(e);
        if (v == "epoll")
            return uring::EngineKind::epoll;
        if (v == "io_uring" || v == "io-uring" || v == "uring")
            return uring::EngineKind::io_uring;
        return asked;
    }

private:
    uring::RingParams p_{};
    bool sqpoll_ = false;
    bool iopoll_ = false;
    bool single_issuer_ = true;
    bool defer_taskrun_ = true;
    bool coop_taskrun_ = false;
    bool submit_all_ = true;
    unsigned flush_interval_ = 128;
    void (*on_exc_)(std::exception_ptr) = nullptr;
};

} // namespace ringo
