// ringo/core/runtime_pool.hpp - RuntimePool (one runtime per thread), spawn_on, switch_to.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <vector>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/detail/std_parts.hpp>
#include <ringo/core/join_handle.hpp>
#include <ringo/core/options.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>

namespace ringo {

/// How a RuntimePool sets up its threads. Every setter returns *this:
///
///     ringo::RuntimePool pool{4, ringo::PoolOptions{}.pin_threads().runtime(ringo::RuntimeOptions{}.sq_entries(512))};
class PoolOptions {
public:
    /// The options of every runtime (unless runtime_for is set).
    PoolOptions& runtime(const RuntimeOptions& o) {
        runtime_ = o;
        return *this;
    }
    /// Options per runtime: called with the runtime's index, on the pool's constructing
    /// thread, before the threads start.
    PoolOptions& runtime_for(std::function<RuntimeOptions(std::size_t index)> f);
    /// Pins thread i to the i-th CPU (modulo their number) of the CPUs the process may run on.
    PoolOptions& pin_threads(bool on = true) noexcept {
        pin_ = on;
        return *this;
    }

    /// The options of runtime i: runtime_for's, else runtime's.
    [[nodiscard]] RuntimeOptions options_for(std::size_t i) const;
    /// True when the threads are pinned (pin_threads).
    [[nodiscard]] bool pinned() const noexcept { return pin_; }

private:
    RuntimeOptions runtime_{};
    std::function<RuntimeOptions(std::size_t)> runtime_for_;
    bool pin_ = false;
};

/// N threads, each driving one Runtime of its own, and the rules for moving work between
/// them. See docs/pool.md.
///
/// - `spawn(task)` places tasks round robin; `spawn_on(i, task)` on runtime i. Both are
///   callable from any thread (plain threads and tasks of any runtime) and return the
///   task's JoinHandle.
/// - `co_await switch_to(pool.runtime(i))` moves the calling task to runtime i.
/// - `shutdown()` (also run by the destructor) stops accepting spawns, waits until every
///   task on the pool's runtimes has finished (tasks they spawned, and tasks that moved in,
///   included), then stops and joins the threads. `shutdown_now()` first cancels what still
///   runs (operations in flight complete with -ECANCELED), then does the same.
class RuntimePool {
public:
    /// Starts `threads` threads, each with a Runtime set up from `options`. Throws
    /// std::invalid_argument for 0 threads; the exception of a runtime that cannot be set
    /// up (std::system_error, ...) after stopping the threads already started.
    explicit RuntimePool(std::size_t threads, const PoolOptions& options = {});
    /// `threads` threads whose runtimes are all set up from `options`.
    RuntimePool(std::size_t threads, const RuntimeOptions& options);
    /// shutdown(). Must not run on one of the pool's own threads.
    ~RuntimePool();
    RuntimePool(const RuntimePool&) = delete;
    RuntimePool& operator=(const RuntimePool&) = delete;

    /// The number of threads (and runtimes).
    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
    /// Runtime i; throws std::out_of_range for i >= size(), std::logic_error after shutdown.
    Runtime& runtime(std::size_t i) const;
    /// The index of `rt` in this pool, or size() when it is not one of the pool's runtimes.
    [[nodiscard]] std::size_t index_of(const Runtime* rt) const noexcept;
    /// The index of the runtime driving the calling thread, or size() outside the pool.
    [[nodiscard]] std::size_t current_index() const noexcept { return index_of(Runtime::current()); }

    /// Starts `task` on the next runtime in round-robin order. Throws std::logic_error once
    /// shutdown has begun.
    template <class T>
    JoinHandle<T> spawn(Task<T> task) {
        std::size_t i = next_.fetch_add(1, std::memory_order_relaxed) % slots_.size();
        return spawn_on(i, std::move(task));
    }
    /// Starts `task` on runtime i. Throws std::out_of_range for a bad index, std::logic_error
    /// once shutdown has begun.
    template <class T>
    JoinHandle<T> spawn_on(std::size_t i, Task<T> task) {
        if (i >= slots_.size())
            throw std::out_of_range("ringo: RuntimePool::spawn_on: no runtime with that index");
        // Count the task before looking at the flag, so shutdown either sees it or refuses
        // it; the count is the task's own (dropped when it ends).
        link_.task_started();
        struct Undo {
            detail::PoolLink* l;
            ~Undo() {
                if (l)
                    l->task_ended();
            }
        } undo{&link_};
        if (!accepting_.load(std::memory_order_seq_cst))
            throw std::logic_error("ringo: RuntimePool::spawn after shutdown began");
        Runtime& rt = *slots_[i]->rt;
        auto h = detail::take_for_spawn(rt, task);
        auto& p = h.promise();
        try {
            if (detail::t_current == &rt) {
                rt.schedule(h);
                detail::RuntimeAccess::registry(rt).count_spawn();
                detail::RuntimeAccess::registry(rt).link_task(p);
            } else {
                detail::RuntimeAccess::post_spawn_counted(rt, p, h);
            }
        } catch (...) { // out of memory for the queue: the task never starts
            h.destroy();
            throw;
        }
        undo.l = nullptr;
        return JoinHandle<T>{h};
    }

    /// Graceful shutdown: refuses new spawns through the pool, runs the shutdown hooks
    /// (listeners stop accepting), waits for every task on the pool's runtimes, then stops
    /// and joins the threads (each destroys its runtime). Idempotent; from a plain thread
    /// only (throws std::logic_error on one of the pool's threads).
    void shutdown();
    /// Like shutdown(), but cancels every task still running first, and keeps cancelling
    /// (every 10 ms) tasks that start or move in meanwhile, until none is left.
    void shutdown_now();
    /// Graceful for `grace`, then shutdown_now(). Returns true when every task finished
    /// within the grace period.
    bool shutdown_for(std::chrono::milliseconds grace);
    /// True until shutdown begins.
    [[nodiscard]] bool accepting() const noexcept { return accepting_.load(std::memory_order_acquire); }
    /// Tasks alive on the pool's runtimes (spawned, running or in transit).
    [[nodiscard]] std::int64_t live_tasks() const noexcept { return link_.live.load(std::memory_order_acquire); }

    /// The counters of every runtime: gathered on each runtime's thread while the pool runs
    /// (from a plain thread), or as they were when the threads stopped.
    std::vector<RuntimeStats> stats();

    /// Registers `fn` to run (on the thread calling shutdown) when shutdown begins, before
    /// the pool waits for its tasks: the place to stop accept loops and other tasks that
    /// only end when asked. Returns an id for remove_shutdown_hook.
    std::uint64_t add_shutdown_hook(std::function<void()> fn);
    /// Unregisters the hook `id` (add_shutdown_hook); an unknown id does nothing.
    void remove_shutdown_hook(std::uint64_t id);

private:
    struct Slot {
        Runtime* rt = nullptr;
        std::coroutine_handle<> parked{}; // the runtime's root task, suspended until stop
        std::thread thread;
        RuntimeStats final_stats{};
        std::exception_ptr error;
    };
    struct Start;
    void thread_main(Slot& s, const RuntimeOptions& opts, int cpu);
    void begin_shutdown();
    void cancel_until_idle();
    void stop_threads();
    bool wait_idle_for(std::chrono::milliseconds d);

    std::unique_ptr<Start> start_;
    std::vector<std::unique_ptr<Slot>> slots_;
    detail::PoolLink link_;
    std::atomic<bool> accepting_{true};
    std::atomic<std::size_t> next_{0};
    std::mutex m_;
    bool stopped_ = false;
    std::mutex hooks_m_;
    std::vector<std::pair<std::uint64_t, std::function<void()>>> hooks_;
    std::uint64_t next_hook_ = 1;
};

/// Starts `task` on runtime `rt` from any thread; the same as spawn(rt, task).
template <class T>
JoinHandle<T> spawn_on(Runtime& rt, Task<T> task) {
    return spawn(rt, std::move(task));
}

namespace detail {

/// Moves the spawned task `root`, suspended at `h` on `from` (the calling thread), to `to`.
void migrate(PromiseBase& root, Runtime& from, Runtime& to, std::coroutine_handle<> h);

[[noreturn]] void switch_to_misuse(const char* what);

/// Awaiter of switch_to.
struct SwitchTo {
    Runtime* target;
    bool await_ready() const noexcept { return t_current == target; }
    template <class P>
    void await_suspend(std::coroutine_handle<P> h) {
        Runtime* from = t_current;
        if (!from)
            switch_to_misuse("ringo: switch_to outside a runtime");
        CancelCtx* ctx = ctx_of(h);
        if (!ctx || !ctx->task_root)
            switch_to_misuse("ringo: switch_to needs a spawned task (not a block_on root, not a "
                             "when_all/when_any/TaskScope branch)");
        if (ctx->first_child)
            switch_to_misuse("ringo: switch_to inside with_timeout, when_all, when_any or a TaskScope");
        PromiseBase& root = task_of(*ctx);
        if (root.owner_ != from)
            switch_to_misuse("ringo: switch_to from a task its runtime does not own");
        migrate(root, *from, *target, h); // h resumes on target's thread; touch nothing after this
    }
    void await_resume() const noexcept {}
};

} // namespace detail

/// `co_await switch_to(rt)` moves the calling task to runtime `rt`: it suspends here and
/// resumes on rt's thread, registered there (rt's shutdown, cancel sweeps and stats now see
/// it). The JoinHandle keeps working: cancel() reaches the task wherever it is (also while
/// it is in transit), and a joiner is resumed on the joiner's own runtime. Awaiting
/// switch_to(the current runtime) does nothing and does not suspend.
///
/// Allowed in a spawned task, directly or in Tasks it awaits, when no combinator branch is
/// open: inside with_timeout, when_all, when_any or a TaskScope branch, and in a block_on
/// root, it throws std::logic_error (their timers and branches belong to one runtime).
/// Objects in the frame that belong to the old runtime (a TaskScope with running tasks, a
/// Mailbox, registered files or buffers) stay there: finish with them before moving.
[[nodiscard]] inline detail::SwitchTo switch_to(Runtime& rt) noexcept { return detail::SwitchTo{&rt}; }

} // namespace ringo
