// ringo/sync/condition_waiters.hpp - what Event and WaitGroup share: tasks and threads wait
// until a condition of the primitive holds, and are all woken when it starts to.
#pragma once

#include <cerrno>
#include <coroutine>
#include <utility>

#include <ringo/sync/detail/wait_list.hpp>

namespace ringo {

/// The waiting half of a primitive whose waits pass once a condition holds (Event: set;
/// WaitGroup: count zero): wait() (the owner's), wait_blocking(). `Owner` derives from it and
/// provides, as private members with this class a friend:
///   bool ready_locked() const noexcept;            // the condition, under lock_
///   static constexpr const char* wait_outside_runtime; // wait()'s error off a runtime
///   static constexpr const char* wait_blocking_on_runtime; // wait_blocking()'s on one
template <class Owner>
class ConditionWaiters {
public:
    /// No waiters.
    ConditionWaiters() noexcept = default;
    ConditionWaiters(const ConditionWaiters&) = delete;
    ConditionWaiters& operator=(const ConditionWaiters&) = delete;

    /// What the owner's wait() returns: awaited directly, it yields 0, -ECANCELED or -EPIPE.
    class WaitAwaiter : detail::WaitNode {
    public:
        /// A wait on `o`.
        explicit WaitAwaiter(Owner* o) noexcept : WaitNode(o->lock_), o_(o) { cancel_fn = &cancel_unlinking; }
        /// Moves an awaiter that has not been awaited yet.
        WaitAwaiter(WaitAwaiter&& x) noexcept : WaitNode(std::move(x)), o_(x.o_) { cancel_fn = &cancel_unlinking; }
        /// Never ready: the condition is checked under the lock in await_suspend.
        bool await_ready() const noexcept { return false; }
        /// Passes at once when the condition holds (or, -ECANCELED, in a cancelled task); else
        /// waits. Throws std::logic_error outside a runtime.
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) {
            Owner* o = o_;
            return try_or_suspend(detail::ctx_of_or_dummy(h), o->waiters_, h, Owner::wait_outside_runtime,
                                  [o]() noexcept { return o->ready_locked(); });
        }
        /// The result is 0 or -errno: with_timeout yields -ETIME for it (compose/traits.hpp).
        static constexpr bool errno_result = true;
        /// 0 once the condition holds, -ECANCELED when the task was cancelled first, -EPIPE
        /// when the primitive was destroyed.
        int await_resume() noexcept { return wait_result(); }

    private:
        Owner* o_;
    };

    /// Blocks a plain thread until the condition holds. Throws std::logic_error on a
    /// runtime's thread.
    void wait_blocking() {
        detail::check_blocking_allowed(Owner::wait_blocking_on_runtime);
        lock_.lock();
        if (static_cast<const Owner*>(this)->ready_locked()) {
            lock_.unlock();
            return;
        }
        detail::WaitNode node(lock_);
        detail::ThreadParker p;
        node.link_thread(waiters_, p);
        lock_.unlock();
        p.wait();
    }

protected:
    /// Waiters still queued end with -EPIPE.
    ~ConditionWaiters() { detail::abandon_all(lock_, waiters_, -EPIPE); }

    /// Under lock_, once the condition has come to hold: takes every waiter, each ending
    /// with 0. Wake the chain (wake_chain) after unlocking.
    detail::SyncWaiter* take_all_waiters_locked() noexcept {
        detail::SyncWaiter* all = waiters_.take_all();
        for (detail::SyncWaiter* w = all; w; w = w->next)
            w->res = 0;
        return all;
    }

    mutable detail::SpinLock lock_; ///< guards the owner's state and the waiters
    detail::WaitList waiters_;      ///< the tasks and threads waiting
};

} // namespace ringo
