// ringo/sync/detail/wait_list.hpp - what every coordination primitive is built from: a short
// spin lock, an intrusive FIFO of waiters, and the rule for waking one (on its own runtime,
// from any thread, or a plain thread parked in a condition variable).
#pragma once

#include <sched.h>

#include <atomic>
#include <coroutine>
#include <stdexcept>

#include <ringo/core/detail/parker.hpp>
#include <ringo/core/detail/std_parts.hpp>
#include <ringo/core/runtime.hpp>

namespace ringo::detail {

/// A test-and-test-and-set lock for critical sections of a few dozen instructions (one
/// atomic exchange to take it, one store to give it back). Spins briefly, then yields the
/// CPU, so a holder that was preempted gets to run.
class SpinLock {
public:
    void lock() noexcept {
        if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]]
            return;
        lock_slow();
    }
    bool try_lock() noexcept {
        return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    void lock_slow() noexcept {
        for (unsigned i = 0;; ++i) {
            if (!locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire))
                return;
            if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#elif defined(__aarch64__)
                asm volatile("yield");
#endif
            } else {
                ::sched_yield();
            }
        }
    }
    std::atomic<bool> locked_{false};
};

/// One waiter of a primitive: a suspended coroutine (with its runtime) or a parked thread.
/// Lives in the waiter's frame (or stack); linked into the primitive's WaitList while it
/// waits. The fields are set when it is linked (an awaiter that completes at once never
/// touches them). The list links are guarded by the primitive's lock; `linked` is written
/// under it too, and may be read without it by the waiter's own thread (a waiter that a
/// waker has taken out is never linked again, so "not linked" is final).
struct SyncWaiter : Waitable {
    static constexpr bool errno_result = true; // an int result is 0 or -errno (-ECANCELED)
    SyncWaiter* next;
    SyncWaiter* prev;
    std::coroutine_handle<> h;
    Runtime* rt;          // the runtime that resumes `h`
    ThreadParker* parker; // set instead for a plain thread
    int res;              // what the wait ends with
    bool linked;          // through set_linked / is_linked only

    SyncWaiter() noexcept {}
    SyncWaiter(const SyncWaiter&) = delete;
    SyncWaiter& operator=(const SyncWaiter&) = delete;
    [[nodiscard]] bool is_linked() const noexcept {
        return std::atomic_ref<bool>(const_cast<bool&>(linked)).load(std::memory_order_acquire);
    }
    void set_linked(bool v) noexcept { std::atomic_ref<bool>(linked).store(v, std::memory_order_release); }
};

/// An intrusive FIFO of waiters (no allocation). Guarded by the owning primitive's lock.
class WaitList {
public:
    [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }
    [[nodiscard]] SyncWaiter* front() const noexcept { return head_; }
    void push_back(SyncWaiter* w) noexcept {
        w->next = nullptr;
        w->prev = tail_;
        if (tail_)
            tail_->next = w;
        else
            head_ = w;
        tail_ = w;
        w->set_linked(true);
    }
    void remove(SyncWaiter* w) noexcept {
        if (w->prev)
            w->prev->next = w->next;
        else
            head_ = w->next;
        if (w->next)
            w->next->prev = w->prev;
        else
            tail_ = w->prev;
        w->next = w->prev = nullptr;
        w->set_linked(false);
    }
    SyncWaiter* pop_front() noexcept {
        SyncWaiter* w = head_;
        if (w)
            remove(w);
        return w;
    }
    /// Takes every waiter out, as a singly linked chain through `next` (for waking them
    /// after the lock is released).
    SyncWaiter* take_all() noexcept {
        SyncWaiter* all = head_;
        for (SyncWaiter* w = head_; w; w = w->next)
            w->set_linked(false);
        head_ = tail_ = nullptr;
        return all;
    }

private:
    SyncWaiter* head_ = nullptr;
    SyncWaiter* tail_ = nullptr;
};

/// Resumes a waiter that has been taken out of its list (call it without the primitive's
/// lock held): schedules it on its runtime (posted, with a wake-up, from another thread) or
/// unparks its thread. The waiter may be gone as soon as this returns.
inline void wake(SyncWaiter* w) noexcept {
    if (ThreadParker* p = w->parker) {
        p->notify();
        return;
    }
    Runtime* rt = w->rt;
    std::coroutine_handle<> h = w->h;
    if (rt == t_current)
        rt->schedule(h);
    else
        rt->post(h);
}

/// Wakes a chain made by WaitList::take_all (after setting each waiter's `res`).
inline void wake_chain(SyncWaiter* w) noexcept {
    while (w) {
        SyncWaiter* n = w->next; // read before waking: the waiter may be gone after
        wake(w);
        w = n;
    }
}

/// For a primitive's destructor: ends every wait still queued with `res` and wakes it.
inline void abandon_all(SpinLock& l, WaitList& list, int res) noexcept {
    l.lock();
    SyncWaiter* all = list.take_all();
    for (SyncWaiter* w = all; w; w = w->next)
        w->res = res;
    l.unlock();
    wake_chain(all);
}

/// Throws when a plain-thread blocking form is called on a runtime's thread (it would stop
/// that runtime, and deadlock if the other side runs there).
inline void check_blocking_allowed(const char* what) {
    if (t_current) [[unlikely]]
        throw std::logic_error(what);
}

/// A waiter node with what an awaiter (or a blocking call) needs around it: the lock and
/// list it waits in, the cancellation context it registers in, and the clean-up when its
/// frame is destroyed mid-wait (its runtime was torn down).
struct WaitNode : SyncWaiter {
    SpinLock* lock;
    WaitList* list; // the list it was linked into
    CancelCtx* ctx; // set by the awaiter before registered()
    bool suspended = false;

    explicit WaitNode(SpinLock& l) noexcept : lock(&l) {}
    /// A node is moved only before it waits (an awaiter handed to with_timeout, when_any).
    WaitNode(WaitNode&& o) noexcept : SyncWaiter(), lock(o.lock) {}
    WaitNode& operator=(WaitNode&&) = delete;
    ~WaitNode() {
        // Destroyed while waiting (its runtime was torn down): take the node out. A node a
        // waker already took out is not touched (the primitive may be gone by now).
        if (suspended && is_linked()) [[unlikely]] {
            std::lock_guard lk(*lock);
            if (is_linked())
                list->remove(this);
        }
    }
    /// Under the lock: queue this node in `l` for coroutine `hh` resumed by `r`; the wait
    /// ends with res 0 unless whoever ends it says otherwise.
    void link(WaitList& l, std::coroutine_handle<> hh, Runtime& r) noexcept {
        h = hh;
        rt = &r;
        parker = nullptr;
        res = 0;
        list = &l;
        l.push_back(this);
    }
    /// Under the lock: queue this node in `l` for a thread parked in `p`.
    void link_thread(WaitList& l, ThreadParker& p) noexcept {
        parker = &p;
        res = 0;
        list = &l;
        l.push_back(this);
    }
    /// In await_suspend, with the lock held, once the awaiter must wait: queues this node in
    /// `l` for `hh` on the current runtime, releases the lock and registers the wait with
    /// `ctx` (set before) for cancellation. Outside a runtime it releases the lock and throws
    /// std::logic_error(`what`): a primitive's wait there needs its *_blocking form.
    void suspend_in(WaitList& l, std::coroutine_handle<> hh, const char* what) {
        Runtime* r = t_current;
        if (!r) [[unlikely]] {
            lock->unlock();
            throw std::logic_error(what);
        }
        link(l, hh, *r);
        lock->unlock();
        registered();
    }
    /// The await_suspend of a wait that may end at once (the shape every primitive's awaiter
    /// shares): a cancelled task ends it with -ECANCELED; otherwise, under the lock,
    /// `ready()` (called with the lock held; it takes what the wait is for) ends it with 0,
    /// or the node is queued in `l` as suspend_in does. Returns what await_suspend returns.
    template <class Ready>
    bool try_or_suspend(CancelCtx* c, WaitList& l, std::coroutine_handle<> hh, const char* what, Ready&& ready) {
        ctx = c;
        if (ctx->cancelled) [[unlikely]] {
            res = -ECANCELED;
            return false;
        }
        lock->lock();
        if (ready()) {
            lock->unlock();
            res = 0;
            return false;
        }
        suspend_in(l, hh, what);
        return true;
    }
    /// After linking and unlocking: the task's cancellation now reaches this wait.
    void registered() noexcept {
        suspended = true;
        ctx->waiting = this;
    }
    /// In await_resume.
    void finished() noexcept {
        suspended = false;
        if (ctx->waiting == this)
            ctx->waiting = nullptr;
    }
    /// await_resume of a wait whose result is `res`.
    int wait_result() noexcept {
        if (suspended) [[unlikely]]
            finished();
        return res;
    }
    /// The common cancel (owner thread): if still queued, unlink, end the wait with
    /// -ECANCELED and resume it. False when a waker had already ended the wait (its
    /// resumption is on the way).
    bool cancel_linked() noexcept {
        if (!is_linked()) // woken already; the primitive may even be destroyed by now
            return false;
        lock->lock();
        if (!is_linked()) {
            lock->unlock();
            return false;
        }
        list->remove(this);
        res = -ECANCELED;
        lock->unlock();
        rt->schedule(h);
        return true;
    }
    /// The cancel_fn of an awaiter whose cancellation is cancel_linked().
    static void cancel_unlinking(Waitable* w) noexcept { static_cast<WaitNode*>(w)->cancel_linked(); }
};

} // namespace ringo::detail
