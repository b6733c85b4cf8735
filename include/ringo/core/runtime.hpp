// ringo/core/runtime.hpp - the event loop: one io_uring, a run queue, CQE dispatch.
#pragma once

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ringo/core/options.hpp>
#include <ringo/core/task.hpp>
#include <ringo/uring/ring.hpp>

namespace ringo {

namespace detail {

extern constinit thread_local Runtime* t_current;

/// The state every awaited operation keeps in its coroutine frame. Its address (low bits
/// clear) is the SQE's user_data; the CQE's result lands in `res` and resumes `h`. It is
/// also the Waitable its task's cancellation context points at while the operation is in
/// flight (cancel_fn submits ASYNC_CANCEL for it).
struct OpState : Waitable {
    std::coroutine_handle<> h;
    int res;                  // set by the completion (or by await_suspend on early errors)
    std::uint32_t cqe_flags;  // set by the completion
};

/// A completion that is not a plain coroutine resumption (internal wake-ups, multishot
/// streams, zero-copy notifications). Its user_data is its address | tag_completion.
/// `fn` must not resume coroutines inline; it schedules them.
struct Completion {
    void (*fn)(Completion* self, int res, std::uint32_t flags) = nullptr;
};

inline constexpr std::uint64_t tag_completion = 1;
inline constexpr std::uint64_t tag_group_member = 2;
inline constexpr std::uint64_t tag_mask = 7;

/// The result an operation of a group holds until its final CQE (no CQE carries it).
inline constexpr int res_pending = -0x7fffffff - 1;

/// What the runtime needs of a group of operations awaited as one (compose/group.hpp): the
/// awaiting coroutine and how many CQEs are still to come. A member's OpState::h holds the
/// GroupHead's address.
struct GroupHead {
    std::coroutine_handle<> waiter{};
    std::size_t remaining = 0;
};

/// A FIFO of coroutine handles: a power-of-two ring buffer that grows.
class RunQueue {
public:
    RunQueue() { buf_ = static_cast<void**>(std::malloc(sizeof(void*) * 1024)); mask_ = 1023;
                 if (!buf_) throw std::bad_alloc(); }
    ~RunQueue() { std::free(buf_); }
    RunQueue(const RunQueue&) = delete;
    RunQueue& operator=(const RunQueue&) = delete;
    bool empty() const noexcept { return head_ == tail_; }
    std::size_t size() const noexcept { return tail_ - head_; }
    // One slot always stays free (push grows before the ring fills), so rotate() can write
    // before it reads.
    void push(std::coroutine_handle<> h) {
        if (tail_ - head_ >= mask_) [[unlikely]]
            grow();
        buf_[tail_++ & mask_] = h.address();
    }
    std::coroutine_handle<> pop() noexcept {
        return std::coroutine_handle<>::from_address(buf_[head_++ & mask_]);
    }
    /// Pushes `h` at the back and pops the front: the next task, or `h` itself when the
    /// queue was empty. Never grows.
    std::coroutine_handle<> rotate(std::coroutine_handle<> h) noexcept {
        void** b = buf_;
        std::size_t m = mask_, t = tail_, hd = head_;
        b[t & m] = h.address();
        tail_ = t + 1;
        head_ = hd + 1;
        return std::coroutine_handle<>::from_address(b[hd & m]);
    }

private:
    void grow();
    void** buf_;
    std::size_t mask_;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
};

struct JoinWaiter {
    std::coroutine_handle<> h{}; // empty: a ThreadJoinWaiter
    Runtime* rt = nullptr;
};
struct ThreadJoinWaiter : JoinWaiter {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
};

/// A runtime's reference to its ExceptionSink (created with the runtime, released with it).
class ExceptionSinkRef {
public:
    explicit ExceptionSinkRef(void (*handler)(std::exception_ptr)) : p_(new ExceptionSink(handler)) {}
    ~ExceptionSinkRef() { p_->release(); }
    ExceptionSinkRef(const ExceptionSinkRef&) = delete;
    ExceptionSinkRef& operator=(const ExceptionSinkRef&) = delete;
    ExceptionSink& operator*() const noexcept { return *p_; }
    ExceptionSink* operator->() const noexcept { return p_; }

private:
    ExceptionSink* p_;
};

/// Shared by the runtimes of one RuntimePool (core/pool.hpp): the number of tasks alive on
/// them (counted when spawned or posted, uncounted when they end), and the condition the
/// pool waits on until it drops to zero.
struct PoolLink {
    std::atomic<std::int64_t> live{0};
    std::mutex m;
    std::condition_variable idle;
    void task_started() noexcept { live.fetch_add(1, std::memory_order_seq_cst); }
    void task_ended() noexcept {
        if (live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard lk(m);
            idle.notify_all();
        }
    }
};

/// CLOCK_MONOTONIC in nanoseconds.
std::uint64_t now_ns() noexcept;

/// A user-space timer: the runtime keeps them in a heap and lets the kernel see only the
/// nearest deadline (as the timeout of the io_uring_enter that waits), so any number of
/// pending timers costs no kernel object at all.
struct TimerEntry {
    std::uint64_t deadline = 0;                 ///< CLOCK_MONOTONIC ns
    std::size_t index = static_cast<std::size_t>(-1); ///< position in the heap; -1: not armed
    void (*fire)(TimerEntry* self) noexcept = nullptr; ///< runs on the loop; must not resume inline
    [[nodiscard]] bool armed() const noexcept { return index != static_cast<std::size_t>(-1); }
};

/// Binary min-heap of TimerEntry pointers with O(log n) removal.
class TimerHeap {
public:
    bool empty() const noexcept { return v_.empty(); }
    std::size_t size() const noexcept { return v_.size(); }
    TimerEntry* top() const noexcept { return v_.front(); }
    void push(TimerEntry* t);
    void remove(TimerEntry* t) noexcept;

private:
    void sift_up(std::size_t i) noexcept;
    void sift_down(std::size_t i) noexcept;
    void place(std::size_t i, TimerEntry* t) noexcept { v_[i] = t; t->index = i; }
    std::vector<TimerEntry*> v_;
};

} // namespace detail

/// Per-runtime counters; a benchmark divides them by its operation count.
struct RuntimeStats {
    std::uint64_t sqes_submitted = 0; ///< SQEs handed to the kernel
    std::uint64_t enters = 0;         ///< io_uring_enter system calls
    std::uint64_t cqes = 0;           ///< CQEs reaped
    std::uint64_t resumptions = 0;    ///< coroutine resumptions by the loop and by CQEs
    std::uint64_t tasks_spawned = 0;
    std::uint64_t detached_exceptions = 0;
    /// Times the kernel pushed back: completions held in its CQ overflow list (the CQ was
    /// full; each flush of that list counts), -EBUSY/-EAGAIN from io_uring_enter, or a full SQ
    /// it would not take. None of them loses a completion.
    std::uint64_t backpressure_events = 0;
    std::uint32_t ops_in_flight = 0;  ///< awaited operations whose CQE has not arrived
    // Cross-thread traffic, counted by the receiving runtime:
    std::uint64_t remote_items = 0;   ///< spawns, resumptions, migrations, cancel requests posted from other threads
    std::uint64_t wakeups = 0;        ///< wake-up messages sent to this runtime (at most one per batch of items)
    std::uint64_t wakeups_by_sqe = 0; ///< of which IORING_OP_MSG_RING SQEs on the sender's ring (no extra syscall)
    std::uint64_t tasks_migrated_in = 0; ///< tasks that moved here with switch_to
};

/// One io_uring and the tasks that run on it; one thread drives it (the thread that
/// created it). See docs/guide.md for the event loop.
class Runtime {
public:
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
        run(h);
        return h.promise().result();
    }

    /// The runtime driving the calling thread, or nullptr.
    static Runtime* current() noexcept { return detail::t_current; }

    /// Queues a suspended coroutine to be resumed by this runtime. Same thread only.
    void schedule(std::coroutine_handle<> h) { ready_.push(h); }
    /// Queues a suspended coroutine from any thread; wakes the runtime if it sleeps.
    void post(std::coroutine_handle<> h);
    /// Hands a freshly spawned task to this runtime from any thread.
    void post_spawn(detail::PromiseBase& p, std::coroutine_handle<> h);

    /// A free SQE; when the SQ is full it first submits what is gathered. Never null.
    io_uring_sqe* get_sqe() {
        io_uring_sqe* s = ring_.get_sqe();
        if (!s) [[unlikely]]
            s = get_sqe_slow();
        return s;
    }
    /// Makes room for `n` SQEs (n <= SQ size), submitting what is gathered if needed, so a
    /// group of SQEs prepared next goes to the kernel in one submission.
    void reserve_sqes(unsigned n) {
        while (ring_.sq_space() < n) [[unlikely]]
            make_sq_room();
    }
    /// Book-keeping for an awaited operation whose SQE was just prepared.
    void op_started() noexcept { ++in_flight_; }
    void ops_started(std::uint32_t n) noexcept { in_flight_ += n; }
    /// Book-keeping for an operation completed through a detail::Completion.
    void op_finished() noexcept { --in_flight_; }
    /// Submits IORING_OP_ASYNC_CANCEL for the operation whose user_data is `op` (owner
    /// thread). The operation's own CQE still arrives and resumes its awaiter.
    void cancel_op(const void* user_data) noexcept {
        try {
            io_uring_sqe* sqe = get_sqe();
            io_uring_prep_cancel64(sqe, reinterpret_cast<std::uint64_t>(user_data), 0);
            sqe->user_data = 0;
        } catch (...) {
            // The SQ could not take the cancel (the ring failed): the operation completes
            // on its own.
        }
    }

    /// True if the kernel supports `opcode` (the probe read at setup).
    [[nodiscard]] bool supports(std::uint8_t opcode) const noexcept { return ring_.probe().supports(opcode); }
    uring::Probe& probe() noexcept { return ring_.probe(); }
    const uring::Probe& probe() const noexcept { return ring_.probe(); }

    /// IORING_SETUP_* flags in force after any degradation.
    [[nodiscard]] std::uint32_t setup_flags() const noexcept { return ring_.setup_flags(); }
    [[nodiscard]] std::uint32_t features() const noexcept { return ring_.features(); }
    [[nodiscard]] bool ring_fd_registered() const noexcept { return ring_.ring_fd_registered(); }
    [[nodiscard]] int ring_fd() const noexcept { return ring_.fd(); }
    [[nodiscard]] RuntimeStats stats() const noexcept;
    uring::Ring& ring() noexcept { return ring_; }
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
        if (loop_now_ == 0) [[unlikely]]
            loop_now_ = detail::now_ns();
        return loop_now_;
    }

    /// Arms a user-space timer (owner thread). Its `fire` runs from the loop once the
    /// deadline has passed.
    void add_timer(detail::TimerEntry& t) { timers_.push(&t); }
    /// Disarms a timer that has not fired; no effect on one that is not armed.
    void remove_timer(detail::TimerEntry& t) noexcept {
        if (t.armed())
            timers_.remove(&t);
    }
    [[nodiscard]] std::size_t timers_pending() const noexcept { return timers_.size(); }

    /// Asks for the cancellation of a task owned by this runtime, from any thread. The
    /// caller must keep the task alive (hold its JoinHandle) until this returns.
    void request_cancel(detail::PromiseBase& p);

    // Internal: spawned-task registry and counters.
    void register_task(detail::PromiseBase& p) noexcept {
        ++tasks_spawned_;
        if (pool_) [[unlikely]]
            pool_->task_started();
        link_task(p);
    }
    void link_task(detail::PromiseBase& p) noexcept {
        p.prev_ = nullptr;
        p.next_ = tasks_;
        if (tasks_)
            tasks_->prev_ = &p;
        tasks_ = &p;
    }
    /// Takes `p` off the list of live tasks; its link words then hold an empty result
    /// (PromiseBase::exc_ empty, no sink).
    void unregister_task(detail::PromiseBase& p) noexcept {
        if (p.prev_)
            p.prev_->next_ = p.next_;
        else if (tasks_ == &p)
            tasks_ = p.next_;
        if (p.next_)
            p.next_->prev_ = p.prev_;
        std::construct_at(&p.exc_); // prev_'s stale link is even: no sink tag
    }
    /// yield(): queue `h` and hand control straight to the next ready task while the
    /// run loop's budget lasts; otherwise go back to the loop (which then flushes I/O).
    std::coroutine_handle<> yield_to_next(std::coroutine_handle<> h) {
        if (budget_ == 0) [[unlikely]] {
            ready_.push(h);
            return std::noop_coroutine();
        }
        --budget_;
        ++resumptions_;
        return ready_.rotate(h);
    }
    void count_spawn() noexcept { ++tasks_spawned_; }

    // Internal, for RuntimePool and switch_to (core/pool.hpp, src/pool.cpp).
    /// The pool this runtime belongs to (set before it runs), or null.
    void set_pool_link(detail::PoolLink* l) noexcept { pool_ = l; }
    [[nodiscard]] detail::PoolLink* pool_link() const noexcept { return pool_; }
    /// Receives task `p` (already unregistered from its previous runtime, p.owner_ already
    /// this runtime) whose coroutine `h` resumes here. Any thread.
    void post_migration(detail::PromiseBase& p, std::coroutine_handle<> h);
    /// post_spawn for a task the caller has already counted in the pool's live tasks.
    void post_spawn_counted(detail::PromiseBase& p, std::coroutine_handle<> h);
    /// Called when an IOSQE_IO_DRAIN operation is prepared on this ring (compose drain()):
    /// a drained SQE holds back every later one until all earlier operations complete, so
    /// from then on this runtime wakes other runtimes by system call, not by MSG_RING SQE.
    void note_drain_used() noexcept { drain_used_ = true; }
    /// Cancels every task registered here (owner thread).
    void cancel_all_tasks() noexcept;
    /// Asks this runtime, from any thread, to cancel every task registered here.
    void request_cancel_all();
    /// Hands the gathered SQEs to the kernel now (owner thread), e.g. before blocking the
    /// thread: a MSG_RING wake-up queued for another runtime then leaves at once.
    void flush_submissions() noexcept;
    /// Submits the MSG_RING wake-ups this runtime queued for others and waits until those
    /// that post a CQE here have (owner thread, outside the loop); a pool calls it before
    /// any runtime of the pool is destroyed.
    void finish_outgoing_wakes() noexcept;
    /// Where exceptions of this runtime's detached tasks are reported (see ExceptionSink).
    detail::ExceptionSink& exception_sink() noexcept { return *exc_sink_; }

private:
    void run(std::coroutine_handle<> root);
    void run_ready();
    void step_with_work_or_timers();
    void reap() {
        loop_now_ = 0; // a new turn: loop_now_ns() reads the clock again
        cqes_ += ring_.reap([this](std::uint64_t ud, int res, std::uint32_t fl) { dispatch(ud, res, fl); });
        if (ring_.cq_overflowed()) [[unlikely]]
            reap_overflow();
    }
    void reap_overflow();
    void reap_without_resuming();
    void handle_submit_error(int r);
    void dispatch(std::uint64_t ud, int res, std::uint32_t flags) {
        if ((ud & detail::tag_mask) == 0) [[likely]] {
            auto* op = reinterpret_cast<detail::OpState*>(ud);
            if (!op) [[unlikely]]
                return;
            --in_flight_;
            op->res = res;
            op->cqe_flags = flags;
            ++resumptions_;
            op->h.resume();
        } else if ((ud & detail::tag_mask) == detail::tag_group_member) {
            auto* op = reinterpret_cast<detail::OpState*>(ud & ~detail::tag_mask);
            --in_flight_;
            op->res = res;
            op->cqe_flags = flags;
            auto* g = static_cast<detail::GroupHead*>(op->h.address());
            if (--g->remaining == 0)
                ready_.push(g->waiter);
        } else {
            auto* c = reinterpret_cast<detail::Completion*>(ud & ~detail::tag_mask);
            c->fn(c, res, flags);
        }
    }
    io_uring_sqe* get_sqe_slow();
    void make_sq_room();
    void submit_or_throw(unsigned wait_nr, bool get_events) {
        int r = ring_.submit(wait_nr, get_events);
        if (r < 0) [[unlikely]]
            handle_submit_error(r);
    }
    void arm_wake();
    int send_wake_msg(std::uint64_t user_data) noexcept;
    static void on_wake(detail::Completion* c, int res, std::uint32_t flags);
    void drain_remote();
    void shutdown();
    void fire_timers(std::uint64_t now);
    void wait_for_events();

    uring::Ring ring_;
    RuntimeOptions opts_;
    detail::RunQueue ready_;
    std::uint32_t in_flight_ = 0;
    unsigned flush_interval_;
    unsigned budget_ = 0; // resumptions left before the loop flushes I/O
    std::uint64_t loop_now_ = 0; // loop_now_ns() of this turn, 0: not read yet
    bool running_ = false;
    bool discard_ = false;
    bool wants_events_; // completions need an enter with GETEVENTS (DEFER_TASKRUN, IOPOLL)
    std::thread::id owner_thread_;
    std::uint64_t resumptions_ = 0;
    std::uint64_t cqes_ = 0;
    std::uint64_t tasks_spawned_ = 0;
    detail::ExceptionSinkRef exc_sink_;
    std::uint64_t backpressure_ = 0;
    detail::PromiseBase* tasks_ = nullptr; // live spawned tasks
    detail::TimerHeap timers_;

    // Cross-thread wake-ups: an eventfd read is always armed.
    struct WakeCompletion : detail::Completion {
        Runtime* rt;
    } wake_{};
    int wake_fd_ = -1;
    std::uint64_t wake_buf_ = 0;
    bool wake_armed_ = false;
    bool msg_wake_ = false; // wake-ups by ring-less MSG_RING instead of the eventfd
    bool wake_pending_ = false; // guarded by remote_m_
    std::mutex remote_m_;
    struct RemoteItem {
        void* addr;
        detail::PromiseBase* spawn;
    };
    std::vector<RemoteItem> remote_;
    std::vector<RemoteItem> remote_swap_;
    void post_remote(RemoteItem item);

    // Pool membership and runtime-to-runtime wake-ups (additions for RuntimePool).
    detail::PoolLink* pool_ = nullptr;
    std::atomic<bool> cancel_all_{false};
    std::atomic<std::uint64_t> remote_items_{0};
    std::atomic<std::uint64_t> wakeups_{0};
    std::atomic<std::uint64_t> wakeups_by_sqe_{0};
    std::uint64_t migrated_in_ = 0;
    std::uint32_t outgoing_wakes_ = 0; // MSG_RING wake-ups this runtime sent, CQE not yet seen
    bool drain_used_ = false;
    struct RingWake : detail::Completion {
        Runtime* rt;
    };
    RingWake ring_wake_{};    // target side: the CQE a MSG_RING wake-up posts here
    RingWake ring_wake_sent_{}; // sender side: the sender's own CQE of that MSG_RING (failure -> resend)
    static void on_ring_wake(detail::Completion* c, int res, std::uint32_t flags);
    static void on_ring_wake_sent(detail::Completion* c, int res, std::uint32_t flags);
    bool queue_ring_wake(Runtime& target) noexcept; // sender side, owner thread of *this
    void wake_by_syscall() noexcept;
};

// ---------------------------------------------------------------------------------------
// JoinHandle

/// The handle `spawn` returns. `co_await handle` (from any runtime) or `handle.join()`
/// (from a plain thread) yields the task's value or rethrows its exception; `detach()`
/// lets it run on its own. A handle dropped without join or detach detaches. Awaiting or
/// joining a handle a second time throws std::logic_error.
template <class T>
class [[nodiscard]] JoinHandle {
public:
    using handle_type = std::coroutine_handle<detail::Promise<T>>;
    JoinHandle() noexcept = default;
    explicit JoinHandle(handle_type h) noexcept : h_(h) {}
    JoinHandle(JoinHandle&& o) noexcept : h_(std::exchange(o.h_, {})) {}
    JoinHandle& operator=(JoinHandle&& o) noexcept {
        if (this != &o) {
            detach();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    ~JoinHandle() { detach(); }

    [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(h_); }
    /// True once the task has finished (its value is ready).
    [[nodiscard]] bool is_finished() const noexcept {
        return h_ && h_.promise().join_.load(std::memory_order_acquire) == detail::join_completed;
    }

    /// Lets the task run to completion on its own; its frame is freed when it ends, and an
    /// exception it ends with is reported through the handler of the runtime it ran on, once:
    /// when it ends, or here (on this thread) if it has already ended, even when that runtime
    /// has been destroyed since.
    void detach() noexcept {
        if (h_) // inline: most handles are empty when they go (joined, or moved from)
            detach_held();
    }

private:
    [[gnu::noinline]] void detach_held() noexcept {
        auto& p = h_.promise();
        std::uintptr_t old = p.join_.exchange(detail::join_detached, std::memory_order_acq_rel);
        if (old == detail::join_completed || old == detail::join_abandoned) {
            if (old == detail::join_completed && p.ended_with_exception()) {
                // It ended with an exception before this detach: report it through its
                // runtime's handler now (on this thread).
                p.exc_sink()->report(p.exc_);
                p.exc_sink()->release();
            }
            h_.destroy();
        }
        h_ = {};
    }

public:
    /// Requests cancellation of the task: the operation it waits on is cancelled (it still
    /// resumes only after that operation's final CQE, with -ECANCELED unless it completed),
    /// and every operation it starts afterwards completes at once with -ECANCELED. Callable
    /// from any thread; from another thread it sends a message to the owning runtime and
    /// returns without waiting. No effect on a finished task or an empty handle.
    void cancel() {
        if (!h_)
            return;
        auto& p = h_.promise();
        std::uintptr_t s = p.join_.load(std::memory_order_acquire);
        if (s == detail::join_completed || s == detail::join_abandoned)
            return;
        // owner_ changes when the task moves with switch_to: read it atomically.
        Runtime* owner = std::atomic_ref<Runtime*>(p.owner_).load(std::memory_order_acquire);
        if (owner == detail::t_current)
            detail::cancel(p.own_ctx_);
        else
            owner->request_cancel(p);
    }

    struct Awaiter : detail::Waitable {
        JoinHandle* jh;
        detail::JoinWaiter w{};
        detail::CancelCtx* ctx = nullptr;
        explicit Awaiter(JoinHandle* j) noexcept : jh(j) { cancel_fn = &cancel_child; }
        static void cancel_child(detail::Waitable* self) noexcept {
            // The awaiting task is being cancelled: cancel the task it waits for, and keep
            // waiting until that task has finished.
            try {
                static_cast<Awaiter*>(self)->jh->cancel();
            } catch (...) {
            }
        }
        bool await_ready() const noexcept {
            if (!jh->h_)
                return true;
            std::uintptr_t s = jh->h_.promise().join_.load(std::memory_order_acquire);
            return s == detail::join_completed || s == detail::join_abandoned;
        }
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) noexcept {
            w.h = h;
            w.rt = detail::t_current;
            std::uintptr_t expected = detail::join_running;
            if (!jh->h_.promise().join_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(&w),
                                                               std::memory_order_acq_rel, std::memory_order_acquire))
                return false;
            if ((ctx = detail::ctx_of(h))) {
                ctx->waiting = this;
                if (ctx->cancelled)
                    cancel_child(this);
            }
            return true;
        }
        T await_resume() {
            if (ctx)
                ctx->waiting = nullptr;
            return jh->take();
        }
    };
    Awaiter operator co_await() & noexcept { return Awaiter{this}; }
    Awaiter operator co_await() && noexcept { return Awaiter{this}; }

    /// Blocks the calling thread until the task finishes. Throws std::logic_error when
    /// called from a task on the runtime that runs it (that would deadlock: co_await it).
    T join() {
        if (!h_)
            throw std::logic_error("ringo: join of a JoinHandle that was joined or detached");
        auto& p = h_.promise();
        Runtime* owner = std::atomic_ref<Runtime*>(p.owner_).load(std::memory_order_acquire);
        if (owner != nullptr && owner == detail::t_current)
            throw std::logic_error("ringo: join() from the runtime that runs the task would deadlock; co_await it");
        if (Runtime* cur = detail::t_current)
            cur->flush_submissions(); // a wake-up this thread queued must leave before it blocks
        detail::ThreadJoinWaiter w;
        std::uintptr_t expected = detail::join_running;
        if (p.join_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(static_cast<detail::JoinWaiter*>(&w)),
                                            std::memory_order_acq_rel, std::memory_order_acquire)) {
            std::unique_lock lk(w.m);
            w.cv.wait(lk, [&] { return w.done; });
        }
        return take();
    }

private:
    T take() {
        if (!h_)
            throw std::logic_error("ringo: JoinHandle awaited twice, or after detach");
        handle_type h = std::exchange(h_, {});
        struct Free {
            handle_type h;
            ~Free() { h.destroy(); }
        } free{h};
        if (h.promise().join_.load(std::memory_order_acquire) == detail::join_abandoned)
            throw std::runtime_error("ringo: the task's runtime was destroyed before it finished");
        return h.promise().join_result(); // an exception goes to the joiner; nothing is reported
    }
    handle_type h_{};
};

// ---------------------------------------------------------------------------------------
// spawn, yield, block_on

/// Starts `task` on runtime `rt` (any thread may call this) and returns its handle.
template <class T>
JoinHandle<T> spawn(Runtime& rt, Task<T> task) {
    auto h = task.release();
    if (!h)
        throw std::logic_error("ringo: spawn of an empty Task");
    auto& p = h.promise();
    p.owner_ = &rt;
    p.frame_ = h.address();
    p.ctx_ = &p.own_ctx_;
    p.own_ctx_.task_root = true;
    if (detail::t_current == &rt) {
        rt.register_task(p);
        rt.schedule(h);
    } else {
        rt.post_spawn(p, h);
    }
    return JoinHandle<T>{h};
}

/// Starts `task` on the current runtime. Throws std::logic_error outside a runtime.
template <class T>
JoinHandle<T> spawn(Task<T> task) {
    Runtime* rt = detail::t_current;
    if (!rt)
        throw std::logic_error("ringo: spawn() outside a runtime; use spawn(runtime, task)");
    return spawn(*rt, std::move(task));
}

/// Lets the other ready tasks run; resumes after them. Outside a runtime it does nothing.
struct YieldAwaiter {
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) const {
        Runtime* rt = detail::t_current;
        if (!rt) [[unlikely]]
            return h;
        return rt->yield_to_next(h);
    }
    void await_resume() const noexcept {}
};
[[nodiscard]] inline YieldAwaiter yield() noexcept { return {}; }

/// Runs `task` on a fresh default Runtime on this thread and returns its result.
template <class T>
T block_on(Task<T> task) {
    Runtime rt;
    return rt.block_on(std::move(task));
}


} // namespace ringo
