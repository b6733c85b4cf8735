// ringo/sync/event.hpp - Event: a flag that tasks and threads wait for.
#pragma once

#include <cerrno>
#include <coroutine>
#include <utility>

#include <ringo/sync/detail/wait_list.hpp>

namespace ringo {

/// A manual-reset event: `set()` wakes every waiter and lets later waits pass at once until
/// `reset()`. See docs/sync.md.
class Event {
public:
    explicit Event(bool initially_set = false) noexcept : set_(initially_set) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    /// Waiters still queued end with -EPIPE.
    ~Event() { detail::abandon_all(lock_, waiters_, -EPIPE); }

    class WaitAwaiter : detail::WaitNode {
    public:
        explicit WaitAwaiter(Event* e) noexcept : WaitNode(e->lock_), e_(e) { cancel_fn = &cancel_unlinking; }
        WaitAwaiter(WaitAwaiter&& o) noexcept : WaitNode(std::move(o)), e_(o.e_) { cancel_fn = &cancel_unlinking; }
        bool await_ready() const noexcept { return false; }
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) {
            Event* e = e_;
            return try_or_suspend(detail::ctx_of_or_dummy(h), e->waiters_, h,
                                  "ringo: Event::wait would wait outside a runtime; use wait_blocking",
                                  [e]() noexcept { return e->set_; });
        }
        /// 0 once the event is set, -ECANCELED when the task was cancelled first, -EPIPE when
        /// the event was destroyed.
        int await_resume() noexcept { return wait_result(); }

    private:
        Event* e_;
    };

    /// `co_await ev.wait()`: 0 once the event is set (at once if it is), -ECANCELED when
    /// the task is cancelled first.
    [[nodiscard]] WaitAwaiter wait() noexcept { return WaitAwaiter(this); }

    /// Blocks a plain thread until the event is set. Throws std::logic_error on a runtime's
    /// thread.
    void wait_blocking() {
        detail::check_blocking_allowed("ringo: Event::wait_blocking on a runtime's thread; co_await wait()");
        lock_.lock();
        if (set_) {
            lock_.unlock();
            return;
        }
        detail::WaitNode node(lock_);
        detail::ThreadParker p;
        node.link_thread(waiters_, p);
        lock_.unlock();
        p.wait();
    }

    /// Sets the event and wakes every waiter. Any thread.
    void set() noexcept {
        lock_.lock();
        set_ = true;
        detail::SyncWaiter* all = waiters_.take_all();
        for (detail::SyncWaiter* w = all; w; w = w->next)
            w->res = 0;
        lock_.unlock();
        detail::wake_chain(all);
    }
    /// Clears the event: later waits wait again.
    void reset() noexcept {
        std::lock_guard lk(lock_);
        set_ = false;
    }
    [[nodiscard]] bool is_set() const noexcept {
        std::lock_guard lk(lock_);
        return set_;
    }

private:
    mutable detail::SpinLock lock_;
    bool set_;
    detail::WaitList waiters_;
};

} // namespace ringo
