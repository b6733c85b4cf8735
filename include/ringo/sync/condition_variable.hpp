// ringo/sync/condition_variable.hpp - ConditionVariable: wait for a condition guarded by a
// ringo::Mutex.
#pragma once

#include <cerrno>
#include <coroutine>
#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/sync/mutex.hpp>

namespace ringo {

namespace detail {
struct CvNode : WaitNode {
    Mutex* m = nullptr;
    bool in_cv = false; // queued on the condition variable (guarded by its lock)
    using WaitNode::WaitNode;
    CvNode(CvNode&& o) noexcept : WaitNode(std::move(o)), m(o.m) {}
};
} // namespace detail

/// Tasks wait until notified, releasing a Mutex meanwhile, like std::condition_variable:
///
///     auto g = co_await m.scoped_lock();
///     while (!ready) co_await cv.wait(m);      // or: co_await cv.wait(m, [&] { return ready; });
///
/// `wait(m)` must be called with `m` locked; it unlocks `m`, waits for notify_one/notify_all,
/// and returns with `m` locked again: 0 when notified, -ECANCELED when the task was cancelled
/// (the lock is re-acquired first in that case too), -EPERM at once when `m` was not locked.
/// A notified waiter goes straight into the mutex's queue (it does not wake only to wait for
/// the lock). Notify from any task or thread; waits are for tasks.
class ConditionVariable {
public:
    ConditionVariable() = default;
    /// Waiters still queued are woken as by notify_all (they get their mutex back first).
    ~ConditionVariable() { notify_all(); }
    ConditionVariable(const ConditionVariable&) = delete;
    ConditionVariable& operator=(const ConditionVariable&) = delete;

    /// What wait() returns: awaited directly, it yields 0, -ECANCELED or -EPERM (see
    /// await_resume).
    class WaitAwaiter : detail::CvNode {
    public:
        /// A wait on `cv` that unlocks `m` while it waits.
        WaitAwaiter(ConditionVariable* cv, Mutex* m) noexcept : CvNode(cv->lock_), cv_(cv) {
            this->m = m;
            cancel_fn = &on_cancel;
        }
        /// Moves an awaiter that has not been awaited yet.
        WaitAwaiter(WaitAwaiter&& o) noexcept : CvNode(std::move(o)), cv_(o.cv_) { cancel_fn = &on_cancel; }
        /// Never ready: the wait starts in await_suspend.
        bool await_ready() const noexcept { return false; }
        template <class P>
        /// Queues the task, then unlocks the mutex; refuses at once when the mutex is not
        /// locked (-EPERM) or the task is cancelled (-ECANCELED, the mutex still locked).
        /// Throws std::logic_error outside a runtime.
        bool await_suspend(std::coroutine_handle<P> h) {
            ctx = detail::ctx_of_or_dummy(h);
            if (!m->is_locked()) [[unlikely]] {
                res = -EPERM;
                return false;
            }
            if (ctx->cancelled) [[unlikely]] {
                res = -ECANCELED; // the caller keeps the lock
                return false;
            }
            Runtime* r = detail::t_current;
            if (!r) [[unlikely]]
                throw std::logic_error("ringo: ConditionVariable::wait outside a runtime");
            cv_->lock_.lock();
            link(cv_->waiters_, h, *r);
            in_cv = true;
            cv_->lock_.unlock();
            m->unlock(); // after queueing here: a notify in between is not lost
            registered();
            return true;
        }
        /// The result is 0 or -errno: with_timeout yields -ETIME for it (compose/traits.hpp).
        static constexpr bool errno_result = true; // with_timeout: -ETIME (compose/traits.hpp)
        /// 0 (notified) or -ECANCELED; the mutex is locked either way. -EPERM: it was not
        /// locked, nothing waited.
        int await_resume() noexcept { return wait_result(); }

    private:
        static void on_cancel(detail::Waitable* w) noexcept {
            auto* self = static_cast<WaitAwaiter*>(w);
            ConditionVariable& cv = *self->cv_;
            cv.lock_.lock();
            if (!self->in_cv) { // notified already: on its way to the mutex
                cv.lock_.unlock();
                return;
            }
            cv.waiters_.remove(self);
            self->in_cv = false;
            self->res = -ECANCELED;
            cv.lock_.unlock();
            self->m->acquire_for(self);
        }
        ConditionVariable* cv_;
    };

    /// `co_await cv.wait(m)`: see the class comment.
    [[nodiscard]] WaitAwaiter wait(Mutex& m) noexcept { return WaitAwaiter(this, &m); }

    /// Waits until `pred()` holds (checked with `m` locked): 0, or the first non-zero result
    /// of a wait (-ECANCELED, -EPERM); `m` is locked when it returns, except after -EPERM.
    template <class Pred>
    Task<int> wait(Mutex& m, Pred pred) {
        while (!pred()) {
            int r = co_await wait(m);
            if (r != 0)
                co_return r;
        }
        co_return 0;
    }

    /// Wakes the longest waiter (it resumes once it holds the mutex). Any thread.
    void notify_one() noexcept {
        lock_.lock();
        auto* w = static_cast<detail::CvNode*>(waiters_.pop_front());
        if (w)
            w->in_cv = false;
        lock_.unlock();
        if (w)
            w->m->acquire_for(w);
    }
    /// Wakes every waiter. Any thread.
    void notify_all() noexcept {
        lock_.lock();
        detail::SyncWaiter* all = waiters_.take_all();
        for (detail::SyncWaiter* w = all; w; w = w->next)
            static_cast<detail::CvNode*>(w)->in_cv = false;
        lock_.unlock();
        while (all) {
            auto* w = static_cast<detail::CvNode*>(all);
            all = all->next; // acquire_for relinks w
            w->m->acquire_for(w);
        }
    }

private:
    detail::SpinLock lock_;
    detail::WaitList waiters_;
};

} // namespace ringo
