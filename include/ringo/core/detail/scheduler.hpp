// ringo/core/detail/scheduler.hpp - a Runtime's scheduler: what runs next, and when.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include <ringo/core/detail/run_queue.hpp>
#include <ringo/core/detail/timer_heap.hpp>

namespace ringo::detail {

/// The run queue of coroutines ready to resume, the user-space timers, and the length of a
/// turn of the loop (how many resumptions before the loop flushes I/O). Owner thread only;
/// the Runtime's loop drives it.
struct Scheduler {
    explicit Scheduler(unsigned turn) noexcept : flush_interval(turn) {}

    /// Arms a user-space timer. Its `fire` runs from the loop once the deadline has passed.
    void add_timer(TimerEntry& t) { timers.push(&t); }
    /// Disarms a timer that has not fired; no effect on one that is not armed.
    void remove_timer(TimerEntry& t) noexcept {
        if (t.armed())
            timers.remove(&t);
    }
    /// A coroutine woken on this thread (a joiner whose task ended) takes its turn behind the
    /// tasks already ready, as a wake-up does in Tokio or Monoio, instead of jumping ahead
    /// of them: queued when others are ready (true), left to the caller to resume at once
    /// when none is (false; no queue round trip), or when the queue would have to grow.
    [[nodiscard]] bool queue_behind_ready(std::coroutine_handle<> h) noexcept {
        return !ready.empty() && ready.try_push(h);
    }
    /// Room in the run queue for `n` more coroutines (std::bad_alloc here, not in a push).
    void reserve(std::size_t n) { ready.reserve(n); }

    RunQueue ready;
    TimerHeap timers;
    unsigned flush_interval;       // resumptions per turn before the loop flushes I/O
    std::uint64_t loop_now = 0;    // Runtime::loop_now_ns() of this turn, 0: not read yet
    std::uint64_t resumptions = 0; // by the loop and by CQEs, turns under way excepted
};

} // namespace ringo::detail
