// ringo/core/detail/task_registry.hpp - a Runtime's spawned tasks, their joiners elsewhere,
// where their exceptions go, and the pool the runtime belongs to.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

#include <ringo/core/detail/parker.hpp>
#include <ringo/core/task.hpp>

namespace ringo::detail {

struct JoinWaiter;

/// Shared by the runtimes of one RuntimePool (core/runtime_pool.hpp): the number of tasks alive on
/// them (counted when spawned or posted, uncounted when they end), and the futex word the
/// pool sleeps on until it drops to zero.
struct PoolLink {
    std::atomic<std::int64_t> live{0};
    std::atomic<std::uint32_t> emptied{0}; // counts the times `live` dropped to zero
    void task_started() noexcept { live.fetch_add(1, std::memory_order_seq_cst); }
    void task_ended() noexcept {
        if (live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            emptied.fetch_add(1, std::memory_order_seq_cst);
            futex_wake(&emptied, INT_MAX);
        }
    }
    /// Waits until no task is alive, for at most `timeout_ns` (negative: no limit); false
    /// when the time ran out first (src/runtime_pool.cpp).
    bool wait_idle(std::int64_t timeout_ns) noexcept;
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

/// The tasks a runtime holds (for its cancel sweeps and its shutdown), its coroutines that
/// wait for tasks of other runtimes, the sink of its detached tasks' exceptions, and its pool
/// link with the pool's count of live tasks. Owner thread only, but for `cancel_all`.
///
/// The live tasks are the runtime's cancellation tree (CancelCtx): its spawned tasks hang
/// under root(), and so do the groups of combinator branches that no task awaits (a TaskScope
/// between joins) and block_on's root while it runs; branch tasks hang under their group. A
/// task leaves the tree when it ends (its own context unlinks), so no second list is kept.
class TaskRegistry {
public:
    explicit TaskRegistry(void (*exception_handler)(std::exception_ptr)) : exc_sink_(exception_handler) {}

    /// A task spawned here: counted (and counted in the pool's live tasks) and hung under
    /// the root.
    void register_task(PromiseBase& p) noexcept {
        count_task();
        p.own_ctx_.link_first(root_);
    }
    /// A combinator's branch task started here: counted (it hangs under its group).
    void count_task() noexcept {
        ++spawned_;
        if (pool_) [[unlikely]]
            pool_->task_started();
    }
    /// A task counted already (posted from another thread, or arriving by switch_to): hung
    /// under the root.
    void link_task(PromiseBase& p) noexcept { p.own_ctx_.link_first(root_); }
    void count_spawn() noexcept { ++spawned_; }
    void count_migration() noexcept { ++migrated_in_; }
    [[nodiscard]] std::uint64_t spawned() const noexcept { return spawned_; }
    [[nodiscard]] std::uint64_t migrated_in() const noexcept { return migrated_in_; }
    /// The root of the runtime's cancellation tree: never cancelled itself (a cancel sweep
    /// cancels what hangs under it).
    CancelCtx& root() noexcept { return root_; }

    /// Where exceptions of this runtime's detached tasks are reported (see ExceptionSink).
    ExceptionSink& exception_sink() noexcept { return *exc_sink_; }
    [[nodiscard]] const ExceptionSink& exception_sink() const noexcept { return *exc_sink_; }

    /// The pool this runtime belongs to (set before it runs), or null.
    void set_pool_link(PoolLink* l) noexcept { pool_ = l; }
    [[nodiscard]] PoolLink* pool_link() const noexcept { return pool_; }

    // Coroutines of this runtime waiting for tasks of other runtimes (JoinWaiter): the
    // runtime's shutdown withdraws them before it goes.
    void link_join_waiter(JoinWaiter& w) noexcept;
    void unlink_join_waiter(JoinWaiter& w) noexcept;
    [[nodiscard]] JoinWaiter* first_join_waiter() const noexcept { return join_waiters_; }

    /// Set from any thread by Runtime::request_cancel_all; the owner takes it in its next
    /// cancel sweep.
    std::atomic<bool> cancel_all{false};

private:
    CancelCtx root_;                     // live spawned tasks hang here (see above)
    JoinWaiter* join_waiters_ = nullptr; // linked JoinWaiters of this runtime's coroutines
    ExceptionSinkRef exc_sink_;
    PoolLink* pool_ = nullptr;
    std::uint64_t spawned_ = 0;
    std::uint64_t migrated_in_ = 0;
};

} // namespace ringo::detail
