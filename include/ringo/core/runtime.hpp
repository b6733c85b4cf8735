// ringo/core/runtime.hpp - the event loop: one io_uring, a run queue, CQE dispatch.
#pragma once

#include <atomic>
#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <ringo/core/detail/completion.hpp>
#include <ringo/core/detail/inbox.hpp>
#include <ringo/core/detail/io_engine.hpp>
#include <ringo/core/detail/scheduler.hpp>
#include <ringo/core/detail/std_parts.hpp>
#include <ringo/core/detail/task_registry.hpp>
#include <ringo/core/options.hpp>
#include <ringo/core/task.hpp>
#include <ringo/uring/ring.hpp>

namespace ringo {

namespace detail {

struct RuntimeAccess;

extern constinit thread_local Runtime* t_current;
/// A coroutine that has ended (done() is true); it lives as long as the process.
std::coroutine_handle<> finished_coroutine();

/// For code that cannot throw, in a catch block around IoEngine::get_sqe (or a call that
/// reaches it): the negative errno to report instead. A std::system_error (io_uring_enter
/// failed while the SQ was full) gives its own code, anything else -ENOMEM.
inline int sqe_failure_result() noexcept {
    try {
        throw;
    } catch (const std::system_error& e) {
        return e.code().value() > 0 ? -e.code().value() : -EIO;
    } catch (...) {
        return -ENOMEM;
    }
}

} // namespace detail

/// Per-runtime counters; a benchmark divides them by its operation count.
struct RuntimeStats {
    std::uint64_t sqes_submitted = 0; ///< SQEs handed to the kernel
    std::uint64_t enters = 0;         ///< io_uring_enter system calls
    std::uint64_t cqes = 0;           ///< CQEs reaped
    std::uint64_t resumptions = 0;    ///< coroutine resumptions by the loop and by CQEs
    /// Operations whose task, being all the work there was, waited for the CQE itself and went
    /// on without suspending (no resumption); their CQEs count in `cqes`.
    std::uint64_t completed_alone = 0;
    std::uint64_t tasks_spawned = 0;       ///< tasks spawned here (posted here included)
    std::uint64_t detached_exceptions = 0; ///< exceptions of detached tasks reported
    /// Times the kernel pushed back: completions held in its CQ overflow list (the CQ was
    /// full; each flush of that list counts), -EBUSY/-EAGAIN from io_uring_enter, or a full SQ
    /// it would not take. None of them loses a completion.
    std::uint64_t backpressure_events = 0;
    std::uint32_t ops_in_flight = 0; ///< awaited operations whose CQE has not arrived
    // Cross-thread traffic, counted by the receiving runtime:
    std::uint64_t remote_items = 0;      ///< spawns, resumptions, migrations, cancel requests posted from other threads
    std::uint64_t wakeups = 0;           ///< wake-up messages sent to this runtime (at most one per batch of items)
    std::uint64_t wakeups_by_sqe = 0;    ///< of which IORING_OP_MSG_RING SQEs on the sender's ring (no extra syscall)
    std::uint64_t tasks_migrated_in = 0; ///< tasks that moved here with switch_to
    /// On the epoll engine, the epoll_ctl calls it made to register or re-arm a descriptor for
    /// readiness: once in the life of a descriptor it made (accept, socket) or that a ringo::Fd
    /// owns; at each wait for a bare descriptor number, which may be closed and reused behind
    /// its back. 0 on io_uring.
    std::uint64_t readiness_registrations = 0;
};

/// One io_uring and the tasks that run on it; one thread drives it (the thread that
/// created it). See docs/guide.md for the event loop.
class Runtime {
public:
    /// Sets up the engine `options` asks for (automatic: io_uring, else epoll) on this
    /// thread. Throws std::system_error when no engine can start (naming each refusal).
    explicit Runtime(const RuntimeOptions& options = RuntimeOptions{});
    /// Cancels the operations still in flight, waits for their final CQEs, then destroys
    /// the frames of detached tasks. Tasks still held by a JoinHandle are marked abandoned:
    /// joining them throws, dropping them frees them.
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    /// Runs `task` (and everything it spawns) on this thread until `task` finishes; returns
    /// its value or rethrows its exception. Throws std::logic_error when called from a task
    /// of a running runtime or from a thread other than the creator.
    template <class T>
    T block_on(Task<T> task) {
        auto h = task.handle();
        if (!h)
            throw std::logic_error("ringo: block_on of an empty Task");
        h.promise().ctx_ = &h.promise().own_ctx_;
        // Its context hangs in this runtime's tree while it runs, so that a cancel sweep or
        // the shutdown finds the combinator branches it starts; it leaves when it ends (its
        // frame does so too, if run() throws).
        h.promise().own_ctx_.link_first(registry_.root());
        run(h);
        h.promise().own_ctx_.unlink();
        return h.promise().result();
    }

    /// The runtime driving the calling thread, or nullptr.
    static Runtime* current() noexcept { return detail::t_current; }

    /// Queues a suspended coroutine to be resumed by this runtime. Same thread only.
    void schedule(std::coroutine_handle<> h) { sched_.ready.push(h); }
    /// Queues a suspended coroutine from any thread; wakes the runtime if it sleeps.
    void post(std::coroutine_handle<> h);

    /// True if the kernel supports `opcode` (the probe read at setup).
    [[nodiscard]] bool supports(std::uint8_t opcode) const noexcept { return engine_.ring.probe().supports(opcode); }
    /// The probe itself: set_supported(opcode, false) hides an operation from every path that
    /// submits (tests of fallbacks, a kernel bug to avoid).
    uring::Probe& probe() noexcept { return engine_.ring.probe(); }
    /// The probe, read only.
    const uring::Probe& probe() const noexcept { return engine_.ring.probe(); }

    /// The engine serving this runtime: Engine::io_uring or Engine::epoll (never automatic).
    [[nodiscard]] Engine engine() const noexcept { return engine_.ring.engine(); }
    /// On the epoll engine, why io_uring is not in use: the errno io_uring_setup failed with
    /// (EPERM under a container's seccomp profile or kernel.io_uring_disabled, ENOMEM under a
    /// small memlock limit, ENOSYS without io_uring; 0 when epoll was asked for) and a sentence
    /// saying so. 0 and an empty sentence on io_uring.
    [[nodiscard]] int io_uring_refusal() const noexcept { return engine_.ring.io_uring_refusal(); }
    /// The sentence of io_uring_refusal() (empty on io_uring).
    [[nodiscard]] const std::string& engine_reason() const noexcept { return engine_.ring.io_uring_refusal_reason(); }

    /// IORING_SETUP_* flags in force after any degradation (0 on the epoll engine).
    [[nodiscard]] std::uint32_t setup_flags() const noexcept { return engine_.ring.setup_flags(); }
    /// IORING_FEAT_* bits the kernel reported at setup (0 on the epoll engine).
    [[nodiscard]] std::uint32_t features() const noexcept { return engine_.ring.features(); }
    /// True when the ring's descriptor is registered (io_uring_enter takes its index).
    [[nodiscard]] bool ring_fd_registered() const noexcept { return engine_.ring.ring_fd_registered(); }
    /// The io_uring descriptor (-1 on the epoll engine).
    [[nodiscard]] int ring_fd() const noexcept { return engine_.ring.fd(); }
    /// The runtime's counters so far (RuntimeStats).
    [[nodiscard]] RuntimeStats stats() const noexcept;
    /// The options the runtime was made with.
    [[nodiscard]] const RuntimeOptions& options() const noexcept { return opts_; }
    /// True on the thread that created this runtime: the only one that may drive it, submit
    /// to its ring or register resources with it (the ring is SINGLE_ISSUER by default).
    [[nodiscard]] bool on_owner_thread() const noexcept { return std::this_thread::get_id() == owner_thread_; }
    /// True while the destructor tears the runtime down (in-flight operations are being
    /// cancelled, then frames destroyed): code that would start an operation on its own
    /// (a stream re-arming itself) must not, since nothing would reap it.
    [[nodiscard]] bool shutting_down() const noexcept { return discard_; }

    /// CLOCK_MONOTONIC in nanoseconds, read at most once per turn of the event loop: the
    /// first call after the loop collected completions reads the clock, later calls in the
    /// same turn return that reading (owner thread). For time-stamping many completions of
    /// one batch (latency accounting) without a clock read each; it lags the real clock by
    /// what the turn has run so far, so deadlines (sleep_for, with_timeout) do not use it.
    [[nodiscard]] std::uint64_t loop_now_ns() noexcept {
        if (sched_.loop_now == 0) [[unlikely]]
            sched_.loop_now = detail::now_ns();
        return sched_.loop_now;
    }

    /// Timers armed in the runtime's timer heap (sleeps and with_timeout deadlines).
    [[nodiscard]] std::size_t timers_pending() const noexcept { return sched_.timers.size(); }

    /// Hands the gathered SQEs to the kernel now (owner thread), e.g. before blocking the
    /// thread: a MSG_RING wake-up queued for another runtime then leaves at once.
    void flush_submissions() noexcept;

private:
    // ringo's own layers (operations, combinators, sync, the pool) reach the parts below and
    // the few entry points that need the whole runtime through detail::RuntimeAccess:
    // nothing here is for users to call.
    friend struct detail::RuntimeAccess;
    friend class detail::IoEngine; // its make_sq_room reaps through route
    friend class detail::Inbox;
    /// Makes `rt` (or no runtime, when null) the one running on this thread: t_current and
    /// its run queue, t_ready.
    static void make_current(Runtime* rt) noexcept;
    /// make_current(rt) for a scope: the thread's previous runtime comes back however it ends.
    struct CurrentFor {
        explicit CurrentFor(Runtime* rt) noexcept : prev(current()) { make_current(rt); }
        ~CurrentFor() { make_current(prev); }
        CurrentFor(const CurrentFor&) = delete;
        CurrentFor& operator=(const CurrentFor&) = delete;
        Runtime* prev;
    };

    // What other threads hand this runtime (through its inbox), from any thread.
    /// A freshly spawned task.
    void post_spawn(detail::PromiseBase& p, std::coroutine_handle<> h);
    /// post_spawn for a task the caller has already counted in the pool's live tasks.
    void post_spawn_counted(detail::PromiseBase& p, std::coroutine_handle<> h);
    /// Task `p` (already unregistered from its previous runtime, p.owner_ already this
    /// runtime) whose coroutine `h` resumes here (switch_to).
    void post_migration(detail::PromiseBase& p, std::coroutine_handle<> h);
    /// Asks for the cancellation of a task owned by this runtime. The caller must keep the
    /// task alive (hold its JoinHandle) until this returns.
    void request_cancel(detail::PromiseBase& p);
    /// Asks this runtime to cancel every task registered here.
    void request_cancel_all();
    /// Submits the MSG_RING wake-ups this runtime queued for others and waits until those
    /// that post a CQE here have (owner thread, outside the loop); a pool calls it before
    /// any runtime of the pool is destroyed.
    void finish_outgoing_wakes() noexcept;
    /// Called when an IOSQE_IO_DRAIN operation is prepared on this ring (compose drain()):
    /// a drained SQE holds back every later one until all earlier operations complete, so
    /// from then on this runtime wakes other runtimes by system call, not by MSG_RING SQE.
    void note_drain_used() noexcept { inbox_.note_drain_used(); }

    /// Cancels every task registered here (owner thread).
    void cancel_all_tasks() noexcept;
    void withdraw_join_waiters() noexcept;

    // The loop.
    void run(std::coroutine_handle<> root);
    void run_ready();
    void step_with_work_or_timers();
    [[gnu::always_inline]] void reap() {
        sched_.loop_now = 0; // a new turn: loop_now_ns() reads the clock again
        engine_.cqes +=
            engine_.ring.reap([this](std::uint64_t ud, int res, std::uint32_t fl) { dispatch(ud, res, fl); });
        if (engine_.ring.cq_overflowed()) [[unlikely]]
            reap_overflow();
    }
    void reap_overflow();
    void reap_without_resuming();
    void handle_submit_error(int r);
    /// Where a CQE goes, decoded in this one place. An awaited operation (tag bits clear)
    /// gets its result and its coroutine goes to `resume` (inline from the loop, to the run
    /// queue elsewhere); a member of a group (tag_group_member) gets its result and the
    /// group's waiter goes to `resume` after the last member; an operation that may go again
    /// (tag_repeat) goes to `resume` once its `again` says it is done; a Completion
    /// (tag_completion) runs its fn.
    template <class Resume>
    void route(std::uint64_t ud, int res, std::uint32_t flags, Resume&& resume) {
        const std::uint64_t tag = ud & detail::tag_mask;
        if (tag == 0) [[likely]] {
            auto* op = reinterpret_cast<detail::OpState*>(ud);
            if (!op) [[unlikely]] // ringo's own requests that need no answer (shutdown's cancel)
                return;
            --engine_.in_flight;
            op->res = res;
            op->cqe_flags = flags;
            resume(op->h);
        } else if (tag == detail::tag_repeat) {
            auto* op = static_cast<detail::RepeatOp*>(reinterpret_cast<detail::OpState*>(ud & ~detail::tag_mask));
            op->res = res;
            op->cqe_flags = flags;
            if (op->again(op, *this)) // its next SQE is prepared: still in flight
                return;
            --engine_.in_flight;
            resume(op->h);
        } else if (tag == detail::tag_group_member) {
            auto* op = reinterpret_cast<detail::OpState*>(ud & ~detail::tag_mask);
            --engine_.in_flight;
            op->res = res;
            op->cqe_flags = flags;
            auto* g = static_cast<detail::GroupHead*>(op->h.address());
            if (--g->remaining == 0)
                resume.queue(g->waiter);
        } else {
            auto* c = reinterpret_cast<ringo::Completion*>(ud & ~detail::tag_mask);
            c->fn(c, res, flags);
        }
    }
    /// From the loop: an operation's coroutine resumes at once; a group's waiter is queued.
    struct ResumeInline {
        Runtime* rt;
        void operator()(std::coroutine_handle<> h) const {
            ++rt->sched_.resumptions;
            h.resume();
        }
        void queue(std::coroutine_handle<> h) const { rt->sched_.ready.push(h); }
    };
    /// Starts the awaited operation `op`, whose SQE its coroutine has just prepared: true
    /// when the coroutine is to suspend until the CQE, false when the operation has already
    /// completed (its result set). The second happens when the coroutine is all the work this
    /// runtime has: nothing is ready, no other operation is in flight (else its CQE would
    /// likely come too, and the task queue behind it anyway: two tasks in ping-pong), no timer
    /// is armed, and the loop's root task has not ended. The loop's next move would be to
    /// submit and wait; the coroutine makes it here instead, and goes on without suspending
    /// if its own operation is the only one that completed: no suspend, resume or loop turn
    /// per operation of a task that runs alone (one connection, one copy). When other CQEs
    /// came too (or none), the coroutine suspends and leaves the CQ as it is to the loop,
    /// which resumes everything in CQE order. A failed submission is left to the loop, which
    /// submits again and reports it.
    /// `ud` is the user_data of the operation's SQE: `op`'s address, with tag_repeat for a
    /// detail::RepeatOp.
    [[gnu::always_inline]] bool start_op(detail::OpState* op, std::uint64_t ud) {
        if (engine_.in_flight != 0 || !sched_.ready.empty() || !sched_.timers.empty() || root_.done()) [[unlikely]]
            return start_op_and_suspend();
        // CQEs no in-flight operation accounts for (a cross-thread wake-up or message, the
        // CQE of an unawaited close) may already wait in the CQ: they end the wait at once
        // and are found below, so they need no check here.
        uring::Ring& ring = engine_.ring;
        const unsigned head = ring.cq_head();
        if (ring.submit(1, true) < 0) [[unlikely]]
            return start_op_and_suspend(); // the loop submits again and reports the error
        sched_.loop_now = 0;               // a new turn: loop_now_ns() reads the clock again
        // Nobody else reaps this CQ meanwhile: `head` is still its head.
        const io_uring_cqe* cqe = ring.cqe_at(head);
        if (ring.cq_tail() - head != 1 || cqe->user_data != ud) [[unlikely]]
            return start_op_and_suspend(); // the loop routes the CQEs, this one among them
        op->res = cqe->res;
        op->cqe_flags = cqe->flags;
        ring.pop_cqe(head);
        ++engine_.completed_alone;
        return false;
    }
    bool start_op_and_suspend() noexcept {
        ++engine_.in_flight;
        return true;
    }
    /// Elsewhere (making room in a full SQ, shutdown): everything is queued, or dropped while
    /// the runtime is being destroyed.
    struct QueueOnly {
        Runtime* rt;
        void operator()(std::coroutine_handle<> h) const {
            if (!rt->discard_)
                rt->sched_.ready.push(h);
        }
        void queue(std::coroutine_handle<> h) const { (*this)(h); }
    };
    [[gnu::always_inline]] void dispatch(std::uint64_t ud, int res, std::uint32_t flags) {
        route(ud, res, flags, ResumeInline{this});
    }
    // An SQE whose completion nobody awaits (user_data 0: its CQE is dropped), for a release
    // that cannot wait, such as a destructor closing a descriptor; null while shutting down
    // (then do it synchronously). The loop submits it with the next batch, and block_on
    // before it returns.
    io_uring_sqe* unawaited_sqe() {
        if (discard_) [[unlikely]]
            return nullptr;
        io_uring_sqe* s = engine_.get_sqe();
        s->user_data = 0;
        engine_.unawaited_queued = true;
        return s;
    }
    void submit_or_throw(unsigned wait_nr, bool get_events) {
        int r = engine_.ring.submit(wait_nr, get_events);
        if (r < 0) [[unlikely]]
            handle_submit_error(r);
    }
    void drain_remote();
    void shutdown();
    void fire_timers(std::uint64_t now);
    void wait_for_events();

    // The three parts: the engine (the ring and the operations in flight on it), the
    // scheduler (run queue, timers, turn length), the task registry (tasks, joiners elsewhere,
    // the exception sink, the pool link). The loop above ties them together.
    detail::IoEngine engine_;
    detail::Scheduler sched_;
    detail::TaskRegistry registry_;
    RuntimeOptions opts_;
    bool running_ = false;
    // The task run() drives; outside run(), a coroutine that has ended (start_op then
    // never waits in the kernel).
    std::coroutine_handle<> root_ = detail::finished_coroutine();
    bool discard_ = false;
    std::thread::id owner_thread_;

    // What other threads post here, and how they wake this runtime.
    detail::Inbox inbox_{*this};

    // False from the start of shutdown on; shared with what may outlive this runtime and must
    // then leave it alone (a FixedFd in a frame destroyed after the runtime, by its handle).
    std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
};

namespace detail {

/// The internal entry points of a Runtime, for ringo's own layers (operations, combinators,
/// sync, the pool): its three parts, and what needs the whole runtime (the inbox of other
/// threads, the loop's shortcut for an operation). Users never need it: what is theirs to
/// call is public on Runtime.
struct RuntimeAccess {
    static IoEngine& engine(Runtime& rt) noexcept { return rt.engine_; }
    static Scheduler& scheduler(Runtime& rt) noexcept { return rt.sched_; }
    static TaskRegistry& registry(Runtime& rt) noexcept { return rt.registry_; }

    [[gnu::always_inline]] static bool start_op(Runtime& rt, OpState* op) {
        return rt.start_op(op, reinterpret_cast<std::uint64_t>(op));
    }
    [[gnu::always_inline]] static bool start_op(Runtime& rt, RepeatOp* op, std::uint64_t ud) {
        return rt.start_op(op, ud);
    }
    static io_uring_sqe* unawaited_sqe(Runtime& rt) { return rt.unawaited_sqe(); }
    static void post_spawn(Runtime& rt, PromiseBase& p, std::coroutine_handle<> h) { rt.post_spawn(p, h); }
    static void post_spawn_counted(Runtime& rt, PromiseBase& p, std::coroutine_handle<> h) {
        rt.post_spawn_counted(p, h);
    }
    static void post_migration(Runtime& rt, PromiseBase& p, std::coroutine_handle<> h) { rt.post_migration(p, h); }
    static void request_cancel(Runtime& rt, PromiseBase& p) { rt.request_cancel(p); }
    static void request_cancel_all(Runtime& rt) { rt.request_cancel_all(); }
    static void finish_outgoing_wakes(Runtime& rt) noexcept { rt.finish_outgoing_wakes(); }
    static void note_drain_used(Runtime& rt) noexcept { rt.note_drain_used(); }
    /// A flag that stays readable after `rt` is gone: true until its shutdown begins.
    static std::shared_ptr<const std::atomic<bool>> liveness(const Runtime& rt) { return rt.alive_; }
};

} // namespace detail

} // namespace ringo
