// The timer heap (include/ringo/core/detail/timer_heap.hpp) and the monotonic clock.
#include <ringo/core/detail/timer_heap.hpp>

#include <time.h>

namespace ringo::detail {

std::uint64_t now_ns() noexcept {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void TimerHeap::push(TimerEntry* t) {
    v_.push_back(t);
    t->index = v_.size() - 1;
    sift_up(t->index);
}

void TimerHeap::remove(TimerEntry* t) noexcept {
    std::size_t i = t->index;
    t->index = static_cast<std::size_t>(-1);
    TimerEntry* last = v_.back();
    v_.pop_back();
    if (last == t)
        return;
    place(i, last);
    sift_up(i);
    sift_down(last->index);
}

void TimerHeap::sift_up(std::size_t i) noexcept {
    TimerEntry* t = v_[i];
    while (i > 0) {
        std::size_t parent = (i - 1) / 2;
        if (v_[parent]->deadline <= t->deadline)
            break;
        place(i, v_[parent]);
        i = parent;
    }
    place(i, t);
}

void TimerHeap::sift_down(std::size_t i) noexcept {
    TimerEntry* t = v_[i];
    std::size_t n = v_.size();
    for (;;) {
        std::size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && v_[c + 1]->deadline < v_[c]->deadline)
            ++c;
        if (t->deadline <= v_[c]->deadline)
            break;
        place(i, v_[c]);
        i = c;
    }
    place(i, t);
}

} // namespace ringo::detail
