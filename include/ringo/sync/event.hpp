// ringo/sync/event.hpp - Event: a flag that tasks and threads wait for.
#pragma once

#include <ringo/core/detail/std_parts.hpp>
#include <ringo/sync/condition_waiters.hpp>

namespace ringo {

/// A manual-reset event: `set()` wakes every waiter and lets later waits pass at once until
/// `reset()`. See docs/sync.md.
class Event : public ConditionWaiters<Event> {
public:
    /// An event, set or not.
    explicit Event(bool initially_set = false) noexcept : set_(initially_set) {}

    /// `co_await ev.wait()`: 0 once the event is set (at once if it is), -ECANCELED when
    /// the task is cancelled first, -EPIPE when the event is destroyed first.
    [[nodiscard]] WaitAwaiter wait() noexcept { return WaitAwaiter(this); }
    // wait_blocking(): blocks a plain thread until the event is set (ConditionWaiters).

    /// Sets the event and wakes every waiter. Any thread.
    void set() noexcept {
        lock_.lock();
        set_ = true;
        detail::SyncWaiter* all = take_all_waiters_locked();
        lock_.unlock();
        detail::wake_chain(all);
    }
    /// Clears the event: later waits wait again.
    void reset() noexcept {
        std::lock_guard lk(lock_);
        set_ = false;
    }
    /// True while the event is set (a snapshot).
    [[nodiscard]] bool is_set() const noexcept {
        std::lock_guard lk(lock_);
        return set_;
    }

private:
    friend class ConditionWaiters<Event>;
    static constexpr const char* wait_outside_runtime =
        "ringo: Event::wait would wait outside a runtime; use wait_blocking";
    static constexpr const char* wait_blocking_on_runtime =
        "ringo: Event::wait_blocking on a runtime's thread; co_await wait()";
    bool ready_locked() const noexcept { return set_; }
    bool set_;
};

} // namespace ringo
