// ringo/sync/mutex.hpp - Mutex: a fair (first come, first served) lock for tasks on any
// runtime and for plain threads.
#pragma once

#include <cerrno>
#include <coroutine>
#include <utility>

#include <ringo/sync/detail/wait_list.hpp>

namespace ringo {

class ConditionVariable;

/// A mutual-exclusion lock that suspends the task instead of blocking the thread. Unlocking
/// hands the lock straight to the longest waiter (no barging, so no waiter starves). The
/// lock belongs to no thread or task: any task (or thread) may unlock it, which lets a task
/// hold it across switch_to. See docs/sync.md.
///
///     if (auto g = co_await m.scoped_lock()) { ... }   // unlocked when g goes out of scope
///     int r = co_await m.lock();  ...; m.unlock();     // r: 0, or -ECANCELED
class Mutex {
public:
    Mutex() = default;
    /// Waiters still queued end with -EPIPE (the lock is not theirs). Destroy a mutex only
    /// when no other thread can still call into it.
    ~Mutex() { detail::abandon_all(lock_, waiters_, -EPIPE); }
    Mutex(const Mutex&) = delete;
    Mutex& operator=(const Mutex&) = delete;

    /// Holds the lock until destroyed (or unlock()); empty when the lock was not obtained
    /// (the task was cancelled while it waited).
    class [[nodiscard]] Guard {
    public:
        Guard() noexcept = default;
        /// A guard holding `m`'s lock (the caller has locked it).
        explicit Guard(Mutex* m) noexcept : m_(m) {}
        /// Takes `o`'s lock over; `o` is left empty.
        Guard(Guard&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
        /// Releases the lock this guard holds, then takes `o`'s over.
        Guard& operator=(Guard&& o) noexcept {
            if (this != &o) {
                unlock();
                m_ = std::exchange(o.m_, nullptr);
            }
            return *this;
        }
        ~Guard() { unlock(); }
        /// owns_lock().
        explicit operator bool() const noexcept { return m_ != nullptr; }
        /// True while the guard holds the lock.
        [[nodiscard]] bool owns_lock() const noexcept { return m_ != nullptr; }
        /// Releases the lock early (no effect on an empty guard).
        void unlock() noexcept {
            if (m_)
                std::exchange(m_, nullptr)->unlock();
        }

    private:
        Mutex* m_ = nullptr;
    };

    /// What lock() returns: awaited directly, it yields 0, -ECANCELED or -EPIPE.
    class LockAwaiter : detail::WaitNode {
    public:
        /// A lock of `m`.
        explicit LockAwaiter(Mutex* m) noexcept : WaitNode(m->lock_), m_(m) { cancel_fn = &cancel_unlinking; }
        /// Moves an awaiter that has not been awaited yet.
        LockAwaiter(LockAwaiter&& o) noexcept : WaitNode(std::move(o)), m_(o.m_) { cancel_fn = &cancel_unlinking; }
        /// Never ready: the lock is tried under the mutex's own lock in await_suspend.
        bool await_ready() const noexcept { return false; }
        template <class P>
        /// Takes the lock at once when it is free (or, -ECANCELED, in a cancelled task); else
        /// waits. Throws std::logic_error outside a runtime.
        bool await_suspend(std::coroutine_handle<P> h) {
            Mutex* m = m_;
            return try_or_suspend(detail::ctx_of_or_dummy(h), m->waiters_, h,
                                  "ringo: Mutex::lock would wait outside a runtime; use lock_blocking",
                                  [m]() noexcept { return !std::exchange(m->locked_, true); });
        }
        /// The result is 0 or -errno: with_timeout yields -ETIME for it (compose/traits.hpp).
        static constexpr bool errno_result = true; // with_timeout: -ETIME (compose/traits.hpp)
        /// 0 (locked), -ECANCELED (not locked), -EPIPE (the mutex was destroyed).
        int await_resume() noexcept { return wait_result(); }

    private:
        Mutex* m_;
    };

    /// What scoped_lock() returns: awaited directly, it yields a Guard (empty when not locked).
    struct ScopedLockAwaiter {
        LockAwaiter inner; ///< the lock itself
        Mutex* m;          ///< the mutex, for the Guard
        /// Never ready (see LockAwaiter).
        bool await_ready() const noexcept { return false; }
        template <class P>
        /// As LockAwaiter::await_suspend.
        bool await_suspend(std::coroutine_handle<P> h) {
            return inner.await_suspend(h);
        }
        /// A Guard holding the lock, or an empty one (cancelled, or the mutex was destroyed).
        Guard await_resume() noexcept { return inner.await_resume() == 0 ? Guard(m) : Guard(); }
    };

    /// `co_await m.lock()`: 0 once the lock is held, -ECANCELED when the task was cancelled
    /// while it waited (the lock is then not held). A waiter that was handed the lock just
    /// before its cancellation holds it (yields 0).
    [[nodiscard]] LockAwaiter lock() noexcept { return LockAwaiter(this); }
    /// `co_await m.scoped_lock()`: a Guard that holds the lock (empty when cancelled).
    [[nodiscard]] ScopedLockAwaiter scoped_lock() noexcept { return ScopedLockAwaiter{LockAwaiter(this), this}; }

    /// Takes the lock if it is free (and nobody waits for it).
    [[nodiscard]] bool try_lock() noexcept {
        std::lock_guard lk(lock_);
        if (locked_)
            return false;
        locked_ = true;
        return true;
    }

    /// Blocks a plain thread until it holds the lock: 0, or -EPIPE when the mutex was
    /// destroyed meanwhile. Throws std::logic_error on a runtime's thread.
    int lock_blocking() {
        detail::check_blocking_allowed("ringo: Mutex::lock_blocking on a runtime's thread; co_await lock()");
        lock_.lock();
        if (!locked_) {
            locked_ = true;
            lock_.unlock();
            return 0;
        }
        detail::WaitNode node(lock_);
        detail::ThreadParker p;
        node.link_thread(waiters_, p);
        lock_.unlock();
        p.wait();
        return node.res;
    }

    /// Releases the lock, handing it to the longest waiter if there is one. Returns 0, or
    /// -EPERM when the mutex was not locked (nothing changes).
    int unlock() noexcept {
        lock_.lock();
        if (!locked_) [[unlikely]] {
            lock_.unlock();
            return -EPERM;
        }
        detail::SyncWaiter* w = waiters_.pop_front();
        if (!w) {
            locked_ = false;
            lock_.unlock();
            return 0;
        }
        lock_.unlock(); // locked_ stays true: the waiter owns it now
        detail::wake(w);
        return 0;
    }

    /// True while some task or thread holds the lock (a snapshot).
    [[nodiscard]] bool is_locked() const noexcept {
        std::lock_guard lk(lock_);
        return locked_;
    }

private:
    friend class ConditionVariable;

    // For ConditionVariable: gives the lock to `w` now if it is free, else queues it (a
    // waiter queued this way cannot be cancelled: it must hold the lock when it resumes).
    void acquire_for(detail::WaitNode* w) noexcept {
        lock_.lock();
        if (!locked_) {
            locked_ = true;
            lock_.unlock();
            detail::wake(w);
            return;
        }
        w->lock = &lock_;
        w->list = &waiters_;
        waiters_.push_back(w);
        lock_.unlock();
    }

    mutable detail::SpinLock lock_;
    bool locked_ = false;
    detail::WaitList waiters_;
};

} // namespace ringo
