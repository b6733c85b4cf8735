// ringo/core/detail/timer_heap.hpp - a Runtime's user-space timers: a min-heap of deadlines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringo::detail {

/// CLOCK_MONOTONIC in nanoseconds.
std::uint64_t now_ns() noexcept;

/// A user-space timer: the runtime keeps them in a heap and lets the kernel see only the
/// nearest deadline (as the timeout of the io_uring_enter that waits), so any number of
/// pending timers costs no kernel object at all.
struct TimerEntry {
    std::uint64_t deadline = 0;                        ///< CLOCK_MONOTONIC ns
    std::size_t index = static_cast<std::size_t>(-1);  ///< position in the heap; -1: not armed
    void (*fire)(TimerEntry* self) noexcept = nullptr; ///< runs on the loop; must not resume inline
    [[nodiscard]] bool armed() const noexcept { return index != static_cast<std::size_t>(-1); }
};

/// Binary min-heap of TimerEntry pointers with O(log n) removal.
class TimerHeap {
public:
    bool empty() const noexcept { return v_.empty(); }
    std::size_t size() const noexcept { return v_.size(); }
    TimerEntry* top() const noexcept { return v_.front(); }
    void push(TimerEntry* t);
    void remove(TimerEntry* t) noexcept;

private:
    void sift_up(std::size_t i) noexcept;
    void sift_down(std::size_t i) noexcept;
    void place(std::size_t i, TimerEntry* t) noexcept {
        v_[i] = t;
        t->index = i;
    }
    std::vector<TimerEntry*> v_;
};

} // namespace ringo::detail
