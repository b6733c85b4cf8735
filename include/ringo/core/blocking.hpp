// ringo/core/blocking.hpp - spawn_blocking: a blocking call run on a process-wide thread pool
// and awaited without stalling the runtime.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/detail/completion.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>

namespace ringo {

/// The process-wide pool that runs spawn_blocking calls (docs/blocking.md). Threads start on
/// demand, one per job while none is idle, up to `max_threads`; beyond that jobs wait in FIFO
/// order. A thread idle for `keep_alive` ends.
struct BlockingPoolOptions {
    unsigned max_threads = 64;                   ///< the most threads at once (at least 1)
    std::chrono::milliseconds keep_alive{10000}; ///< how long an idle thread waits for a job before it ends
};

/// Sets the pool's options; callable at any time, from any thread. A higher maximum lets
/// queued jobs start at once; a lower one makes threads above it end after their current job
/// (none is interrupted). A new keep-alive applies from each thread's next idle wait.
/// Throws std::invalid_argument for max_threads == 0 or a negative keep-alive.
void set_blocking_pool_options(const BlockingPoolOptions& options);
/// The pool's options now.
[[nodiscard]] BlockingPoolOptions blocking_pool_options();

/// A snapshot of the pool.
struct BlockingPoolStats {
    unsigned threads = 0;              ///< threads alive (running a job or idle)
    unsigned idle = 0;                 ///< of which waiting for a job
    unsigned running = 0;              ///< jobs running now
    std::size_t queued = 0;            ///< jobs waiting for a thread
    std::uint64_t jobs_done = 0;       ///< jobs finished since the process started
    std::uint64_t threads_started = 0; ///< threads started since the process started
};
[[nodiscard]] BlockingPoolStats blocking_pool_stats();

namespace detail {

/// What a blocking call shares between the pool thread that runs it and the awaiting
/// coroutine: one heap node per call, freed by whichever of the two lets go last.
struct BlockingJob {
    static constexpr std::uint32_t pending = 0;
    static constexpr std::uint32_t done = 1;
    /// pending -> done once the callable has returned (release); also the futex word the
    /// awaiter waits on in the ring (IORING_OP_FUTEX_WAIT).
    std::atomic<std::uint32_t> state{pending};
    std::atomic<std::uint32_t> refs{1}; // 2 from submission: the pool thread and the awaiter
    int event_fd = -1;                  // kernels without FUTEX_WAIT in io_uring: an eventfd the ring polls
    BlockingJob* next = nullptr;        // the pool's FIFO queue
    void (*run)(BlockingJob*) noexcept = nullptr;
    void (*destroy)(BlockingJob*) noexcept = nullptr;

    void release() noexcept;
};

/// The result slot of a call returning R (nothing for void).
template <class R>
struct BlockingResult {
    std::optional<R> value;
    template <class F>
    void call(F& f) {
        value.emplace(std::move(f)());
    }
    R take() { return std::move(*value); }
};
template <>
struct BlockingResult<void> {
    template <class F>
    void call(F& f) {
        std::move(f)();
    }
    void take() noexcept {}
};

template <class F>
struct BlockingJobOf final : BlockingJob {
    using R = std::invoke_result_t<F>;
    std::optional<F> fn; // destroyed on the pool thread right after the call
    BlockingResult<R> result;
    std::exception_ptr exc;

    explicit BlockingJobOf(F&& f) : fn(std::in_place, std::move(f)) {
        run = &run_fn;
        destroy = &destroy_fn;
    }
    static void run_fn(BlockingJob* b) noexcept {
        auto* j = static_cast<BlockingJobOf*>(b);
        try {
            j->result.call(*j->fn);
        } catch (...) {
            j->exc = std::current_exception();
        }
        j->fn.reset();
    }
    static void destroy_fn(BlockingJob* b) noexcept { delete static_cast<BlockingJobOf*>(b); }
    R take() {
        if (exc) // taken out of the node: the exception's last reference goes on this thread
            std::rethrow_exception(std::exchange(exc, nullptr));
        return result.take();
    }
};

/// The awaiting side: an operation in the awaiting runtime's ring that completes when the
/// job is done (a futex wait on BlockingJob::state, or a poll of its eventfd). Being an
/// operation in flight, it holds the runtime's shutdown until it is cancelled and reaped.
struct BlockingWait : Completion {
    Runtime* rt = nullptr;
    std::coroutine_handle<> h{};
    BlockingJob* job = nullptr;

    /// Hands `j` to the pool and arms the wait in `r`'s ring; throws (before anything runs)
    /// when neither can be done.
    void start(Runtime& r, std::coroutine_handle<> awaiting, BlockingJob& j);
    /// Blocks the thread until the job is done (only when the wait ended early and could
    /// not be armed again).
    void wait_done() noexcept;
    void arm();
    void prepare_wait(io_uring_sqe* sqe) noexcept;
    static void on_cqe(Completion* c, int res, std::uint32_t flags);
};

enum class BlockingRefusal : std::uint8_t { none, no_runtime, cancelled, awaited_twice };
[[noreturn, gnu::cold]] void throw_blocking_refusal(BlockingRefusal r);

} // namespace detail

/// The awaitable spawn_blocking returns. `co_await` runs the callable on the blocking pool and
/// yields its result (or rethrows its exception); see spawn_blocking for the rules.
/// Move it only before it is awaited; await it once.
template <class F>
class [[nodiscard]] BlockingCall {
    using Job = detail::BlockingJobOf<F>;

public:
    /// What the call yields: `f`'s result type.
    using value_type = std::invoke_result_t<F>;

    /// Takes `f` into a job (one allocation); spawn_blocking makes it.
    explicit BlockingCall(F&& f) : job_(new Job(std::move(f))) {}
    /// Moves a call that has not been awaited yet.
    BlockingCall(BlockingCall&& o) noexcept : job_(std::exchange(o.job_, nullptr)) {}
    BlockingCall(const BlockingCall&) = delete;
    BlockingCall& operator=(const BlockingCall&) = delete;
    BlockingCall& operator=(BlockingCall&&) = delete;
    ~BlockingCall() {
        if (job_)
            job_->release();
    }

    /// Never ready: the job is handed to the pool in await_suspend.
    bool await_ready() const noexcept { return false; }
    template <class P>
    /// Hands the job to the pool and waits; refuses (await_resume throws) when awaited twice,
    /// outside a runtime, or in a cancelled task.
    bool await_suspend(std::coroutine_handle<P> h) {
        Runtime* rt = detail::t_current;
        if (!job_ || wait_.job) [[unlikely]]
            refused_ = detail::BlockingRefusal::awaited_twice;
        else if (!rt) [[unlikely]]
            refused_ = detail::BlockingRefusal::no_runtime;
        else if (detail::ctx_of_or_dummy(h)->cancelled) [[unlikely]]
            refused_ = detail::BlockingRefusal::cancelled;
        else {
            wait_.start(*rt, h, *job_);
            return true;
        }
        return false;
    }
    /// The job's result, or its exception rethrown; throws for a refused await (see
    /// spawn_blocking).
    value_type await_resume() {
        if (refused_ != detail::BlockingRefusal::none) [[unlikely]]
            detail::throw_blocking_refusal(std::exchange(refused_, detail::BlockingRefusal::none));
        if (job_->state.load(std::memory_order_acquire) != detail::BlockingJob::done) [[unlikely]]
            wait_.wait_done();
        return static_cast<Job*>(job_)->take();
    }

private:
    detail::BlockingJob* job_;
    detail::BlockingWait wait_{};
    detail::BlockingRefusal refused_ = detail::BlockingRefusal::none;
};

/// Runs `f()` (moved in; no arguments) on the process-wide blocking pool and returns an
/// awaitable that yields its result or rethrows its exception, in the awaiting coroutine on
/// its own runtime's thread. The runtime goes on running other tasks meanwhile: the awaiter
/// waits for the job as an operation in its ring (IORING_OP_FUTEX_WAIT on kernels from 6.7,
/// a poll of an eventfd made for the call before). Nothing runs until the awaitable is
/// awaited; one heap allocation per call (the node holding f and its result).
///
/// Rules (docs/blocking.md):
/// - Awaited outside a runtime, or on a runtime set up with IOPOLL (whose ring can wait for
///   neither a futex nor a poll), it throws std::logic_error; f does not run.
/// - In a task already cancelled, the await throws std::system_error(ECANCELED) and f does
///   not run (as an operation is refused with -ECANCELED before submission); wrap it in
///   shielded() (compose/cancel.hpp) to run cleanup that must block.
/// - Once f has started it cannot be interrupted: cancelling the awaiting task does not end
///   the wait; the task resumes when f has returned, with f's result (or exception). So
///   nothing f uses from the awaiting frame is freed while f runs.
/// - A runtime destroyed while f runs cancels the wait like any operation in flight, then
///   frees or abandons the task as usual; the pool thread then finishes f, discards its
///   result and frees the node. It never touches the runtime or the frame.
/// - At process exit, jobs still queued or running are abandoned: pool threads are detached
///   and the pool is never destroyed, so exit neither waits for them nor crashes on them.
template <class F>
[[nodiscard]] BlockingCall<std::decay_t<F>> spawn_blocking(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn>, "ringo: spawn_blocking takes a callable with no arguments");
    static_assert(!std::is_reference_v<std::invoke_result_t<Fn>>,
                  "ringo: spawn_blocking's callable must return a value, not a reference");
    return BlockingCall<Fn>(Fn(std::forward<F>(f)));
}

} // namespace ringo
