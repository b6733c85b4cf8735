// ringo/op/timeout.hpp - kernel timeouts.
#pragma once

#include <chrono>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// Converts a duration to the kernel's timespec (negative durations stay negative, and
/// the kernel answers them with -EINVAL).
template <class Rep, class Period>
__kernel_timespec to_timespec(std::chrono::duration<Rep, Period> d) noexcept {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    __kernel_timespec ts;
    ts.tv_sec = ns / 1'000'000'000;
    ts.tv_nsec = ns % 1'000'000'000;
    return ts;
}

/// IORING_OP_TIMEOUT (5.4). Completes with -ETIME when the time passes, 0 when `count`
/// other completions arrived first (count > 0), -ECANCELED when cancelled. `flags` takes
/// IORING_TIMEOUT_ABS, _BOOTTIME, _REALTIME, _ETIME_SUCCESS (see uring::compat).
struct Timeout : Op<Timeout> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::timeout;
    Timeout(__kernel_timespec ts, unsigned count, unsigned flags) noexcept : ts_(ts), count_(count), flags_(flags) {}
    void prepare(io_uring_sqe* s) noexcept { io_uring_prep_timeout(s, &ts_, count_, flags_); }
    __kernel_timespec ts_; unsigned count_; unsigned flags_;
};
inline Timeout timeout(__kernel_timespec ts, unsigned count = 0, unsigned flags = 0) noexcept { return {ts, count, flags}; }
template <class Rep, class Period>
Timeout timeout(std::chrono::duration<Rep, Period> d, unsigned count = 0, unsigned flags = 0) noexcept {
    return {to_timespec(d), count, flags};
}

} // namespace ringo::op
