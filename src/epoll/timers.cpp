// src/epoll/timers.cpp - timeouts: the heap whose nearest deadline bounds the wait, and the timespecs read as the
// kernel reads them.
#include "engine.hpp"

#include <ctime>
#include <utility>

namespace ringo::uring::epoll {

void Engine::heap_swap(std::size_t a, std::size_t b) noexcept {
    std::swap(heap[a], heap[b]);
    heap[a]->heap_index = a;
    heap[b]->heap_index = b;
}

void Engine::heap_up(std::size_t i) noexcept {
    while (i > 0) {
        std::size_t parent = (i - 1) / 2;
        if (heap[parent]->deadline <= heap[i]->deadline)
            break;
        heap_swap(i, parent);
        i = parent;
    }
}

void Engine::heap_down(std::size_t i) noexcept {
    for (;;) {
        std::size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap.size() && heap[l]->deadline < heap[m]->deadline)
            m = l;
        if (r < heap.size() && heap[r]->deadline < heap[m]->deadline)
            m = r;
        if (m == i)
            return;
        heap_swap(i, m);
        i = m;
    }
}

void Engine::heap_push(Pending* p) {
    p->heap_index = heap.size();
    heap.push_back(p);
    heap_up(p->heap_index);
}

void Engine::heap_remove(Pending* p) noexcept {
    std::size_t i = p->heap_index;
    std::size_t last = heap.size() - 1;
    if (i != last) {
        heap_swap(i, last);
        heap.pop_back();
        heap_down(i);
        heap_up(i);
    } else {
        heap.pop_back();
    }
    p->heap_index = static_cast<std::size_t>(-1);
}

// A timeout's timespec, read as the kernel reads it: 0, -EFAULT for a pointer it cannot
// read (null included), -EINVAL for a negative time (a tv_nsec of 10^9 or more is taken,
// as the kernel takes it: it adds up).
int Engine::read_timespec(std::uint64_t addr, __kernel_timespec& ts) noexcept {
    if (!addr || !read_user(&ts, addr, sizeof ts))
        return -EFAULT;
    return ts.tv_sec < 0 || ts.tv_nsec < 0 ? -EINVAL : 0;
}

// The kernel's checks of a timeout's SQE (IORING_OP_TIMEOUT, IORING_OP_LINK_TIMEOUT): its
// fields, its flags (at most one clock; a multishot one relative), then its timespec, read
// into `ts`. 0 or -errno.
int Engine::timeout_checks(const io_uring_sqe& s, __kernel_timespec& ts) noexcept {
    constexpr std::uint32_t clocks = compat::timeout_realtime | compat::timeout_boottime;
    const std::uint32_t fl = s.timeout_flags;
    if (s.len != 1 || s.buf_index || compat::sqe_field::splice_fd_in(s))
        return -EINVAL;
    if ((fl & ~(compat::timeout_abs | clocks | compat::timeout_etime_success | compat::timeout_multishot)) ||
        (fl & clocks) == clocks || ((fl & compat::timeout_multishot) && (fl & compat::timeout_abs)))
        return -EINVAL;
    return read_timespec(s.addr, ts);
}

// The deadline (mono_ns) of a valid timespec; one that the clock cannot reach saturates
// (never: UINT64_MAX) rather than wrapping to a time that has passed.
// A valid timespec in ns, saturated.
std::uint64_t Engine::ns_of(const __kernel_timespec& ts) noexcept {
    constexpr std::uint64_t never = ~std::uint64_t{0};
    const auto sec = static_cast<std::uint64_t>(ts.tv_sec), nsec = static_cast<std::uint64_t>(ts.tv_nsec);
    std::uint64_t ns;
    if (sec > (never - nsec) / 1'000'000'000u || __builtin_add_overflow(sec * 1'000'000'000u, nsec, &ns))
        return never;
    return ns;
}

std::uint64_t Engine::deadline_of(const __kernel_timespec& ts, std::uint32_t flags) noexcept {
    constexpr std::uint64_t never = ~std::uint64_t{0};
    const std::uint64_t ns = ns_of(ts);
    if (ns == never)
        return never;
    std::uint64_t at;
    if (!(flags & compat::timeout_abs))
        return __builtin_add_overflow(mono_ns(), ns, &at) ? never : at;
    if (flags & compat::timeout_realtime) {
        timespec rt;
        ::clock_gettime(CLOCK_REALTIME, &rt);
        auto now_rt = static_cast<std::uint64_t>(rt.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(rt.tv_nsec);
        if (ns <= now_rt)
            return 0;
        return __builtin_add_overflow(mono_ns(), ns - now_rt, &at) ? never : at;
    }
    return ns; // CLOCK_MONOTONIC (a boottime deadline is read as monotonic)
}

void Engine::fire_due_timers() {
    std::uint64_t now = mono_ns();
    while (!heap.empty() && heap.front()->deadline <= now) {
        Pending* p = heap.front();
        heap_remove(p);
        if (p->sqe.opcode == opc::link_timeout) {
            link_timeout_fired(p);
            continue;
        }
        if ((p->sqe.timeout_flags & compat::timeout_multishot) && (p->sqe.off == 0 || ++p->done_io < p->sqe.off)) {
            // A multishot timeout: -ETIME with IORING_CQE_F_MORE at each expiry, one period
            // after the last, until its count (off; 0: for ever) ran out. Back in the heap
            // before its CQE is posted (what the post sets off may remove it), and not
            // due again in this pass (a period is at least 1 ns).
            p->deadline = now + p->period;
            heap_push(p);
            post(p->sqe.user_data, -ETIME, compat::cqe_f_more);
            continue;
        }
        finish(p, -ETIME);
    }
}

} // namespace ringo::uring::epoll
