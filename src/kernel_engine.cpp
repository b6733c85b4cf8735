// src/kernel_engine.cpp - the kernel's io_uring behind the engine seam (kernel_engine.hpp).
#include "kernel_engine.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <ringo/uring/compat.hpp>

namespace ringo::uring {

QueueEngine::~QueueEngine() = default;
void QueueEngine::own_fd(int, bool) noexcept {}
void QueueEngine::private_user_data(std::uint64_t) noexcept {}
std::uint64_t QueueEngine::readiness_registrations() const noexcept { return 0; }

KernelEngine::~KernelEngine() { io_uring_queue_exit(&ring_); }

EnterResult KernelEngine::enter(unsigned to_submit, unsigned wait_nr, bool get_events,
                                const std::uint64_t* timeout_ns) noexcept {
    if (timeout_ns)
        return enter_with_timeout(to_submit, wait_nr, *timeout_ns);
    if (sqpoll_)
        return enter_sqpoll(to_submit, wait_nr, get_events);
    // (The Ring makes this one inline: Ring::submit_direct. Here for a caller of the seam.)
    if (!to_submit && !wait_nr && !get_events)
        return {};
    const unsigned flags = enter_flags_ | ((wait_nr || get_events) ? compat::enter::getevents : 0u);
    long r = ::syscall(__NR_io_uring_enter, enter_fd_, to_submit, wait_nr, flags, nullptr, 0);
    if (r < 0)
        return {-errno, 0, true};
    return {static_cast<int>(r), static_cast<unsigned>(r), true};
}

EnterResult KernelEngine::enter_sqpoll(unsigned to_submit, unsigned wait_nr, bool get_events) noexcept {
    // The kernel thread takes the SQEs; enter only to wake it or to wait.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const unsigned kf = __atomic_load_n(ring_.sq.kflags, __ATOMIC_RELAXED);
    unsigned flags = enter_flags_;
    if (kf & compat::sq_need_wakeup)
        flags |= compat::enter::sq_wakeup;
    if (kf & compat::sq_cq_overflow)
        get_events = true;
    if (wait_nr == 0 && !get_events && !(flags & compat::enter::sq_wakeup))
        return {static_cast<int>(to_submit), to_submit, false};
    if (wait_nr || get_events)
        flags |= compat::enter::getevents;
    long r = ::syscall(__NR_io_uring_enter, enter_fd_, 0, wait_nr, flags, nullptr, 0);
    return {r < 0 ? -errno : static_cast<int>(to_submit), to_submit, true};
}

EnterResult KernelEngine::enter_with_timeout(unsigned to_submit, unsigned wait_nr, std::uint64_t timeout_ns) noexcept {
    unsigned flags = enter_flags_ | compat::enter::getevents | compat::enter::ext_arg;
    const unsigned asked = to_submit;
    if (sqpoll_) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (__atomic_load_n(ring_.sq.kflags, __ATOMIC_RELAXED) & compat::sq_need_wakeup)
            flags |= compat::enter::sq_wakeup;
        to_submit = 0; // (the kernel thread takes them)
    }
    __kernel_timespec ts;
    ts.tv_sec = static_cast<long long>(timeout_ns / 1'000'000'000u);
    ts.tv_nsec = static_cast<long long>(timeout_ns % 1'000'000'000u);
    io_uring_getevents_arg arg;
    std::memset(&arg, 0, sizeof arg);
    arg.sigmask_sz = _NSIG / 8;
    arg.ts = reinterpret_cast<std::uint64_t>(&ts);
    long r = ::syscall(__NR_io_uring_enter, enter_fd_, to_submit, wait_nr, flags, &arg, sizeof arg);
    if (r < 0)
        r = -errno;
    if (sqpoll_)
        return {r < 0 ? static_cast<int>(r) : 0, asked, true};
    if (r == -ETIME) // the submissions went through; only the wait timed out
        return {static_cast<int>(r), to_submit, true};
    if (r < 0)
        return {static_cast<int>(r), 0, true}; // nothing consumed: the SQEs stay published
    return {static_cast<int>(r), static_cast<unsigned>(r), true};
}

int KernelEngine::register_buf_ring(io_uring_buf_reg& reg) noexcept {
    return io_uring_register_buf_ring(&ring_, &reg, 0);
}

int KernelEngine::unregister_buf_ring(std::uint16_t bgid) noexcept {
    return io_uring_unregister_buf_ring(&ring_, bgid);
}

} // namespace ringo::uring
