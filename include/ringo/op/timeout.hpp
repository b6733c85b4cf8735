// ringo/op/timeout.hpp - kernel timeouts.
#pragma once

#include <ringo/core/detail/chrono.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

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
struct [[nodiscard]] Timeout : Op<Timeout> {
    /// The opcode submitted: IORING_OP_TIMEOUT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::timeout;
    /// Keeps the arguments for prepare(); op::timeout() makes one.
    Timeout(__kernel_timespec ts, unsigned count, unsigned flags) noexcept : ts_(ts), count_(count), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) noexcept { io_uring_prep_timeout(s, &ts_, count_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    __kernel_timespec ts_;
    unsigned count_;
    unsigned flags_;
    ///@}
};
inline Timeout timeout(__kernel_timespec ts, unsigned count = 0, unsigned flags = 0) noexcept {
    return {ts, count, flags};
}
template <class Rep, class Period>
Timeout timeout(std::chrono::duration<Rep, Period> d, unsigned count = 0, unsigned flags = 0) noexcept {
    return {to_timespec(d), count, flags};
}

/// IORING_OP_TIMEOUT_REMOVE (5.5): removes the armed timeout whose user_data is `target`
/// (see user_data_of): 0, -ENOENT when not found, -EALREADY when it is firing. The removed
/// timeout completes with -ECANCELED.
struct [[nodiscard]] TimeoutRemove : Op<TimeoutRemove> {
    /// The opcode submitted: IORING_OP_TIMEOUT_REMOVE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::timeout_remove;
    /// Keeps the arguments for prepare(); op::timeout_remove() makes one.
    TimeoutRemove(std::uint64_t target, unsigned flags) noexcept : target_(target), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_timeout_remove(s, target_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    std::uint64_t target_;
    unsigned flags_;
    ///@}
};
inline TimeoutRemove timeout_remove(std::uint64_t target_user_data, unsigned flags = 0) noexcept {
    return {target_user_data, flags};
}

/// IORING_OP_TIMEOUT_REMOVE with IORING_TIMEOUT_UPDATE (5.11): re-arms the timeout `target`
/// to expire after `ts` (absolute with timeout_abs): 0 or -ENOENT. With
/// uring::compat::link_timeout_update in `flags` it updates a link_timeout instead.
struct [[nodiscard]] TimeoutUpdate : Op<TimeoutUpdate> {
    /// The opcode submitted: IORING_OP_TIMEOUT_REMOVE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::timeout_remove;
    /// Keeps the arguments for prepare(); op::timeout_update() makes one.
    TimeoutUpdate(std::uint64_t target, __kernel_timespec ts, unsigned flags) noexcept
        : target_(target), ts_(ts), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) noexcept { io_uring_prep_timeout_update(s, &ts_, target_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    std::uint64_t target_;
    __kernel_timespec ts_;
    unsigned flags_;
    ///@}
};
inline TimeoutUpdate timeout_update(std::uint64_t target_user_data, __kernel_timespec ts, unsigned flags = 0) noexcept {
    return {target_user_data, ts, flags};
}
template <class Rep, class Period>
TimeoutUpdate timeout_update(std::uint64_t target_user_data, std::chrono::duration<Rep, Period> d,
                             unsigned flags = 0) noexcept {
    return {target_user_data, to_timespec(d), flags};
}

/// IORING_OP_LINK_TIMEOUT (5.5): a timeout for the operation whose SQE comes right before
/// this one and carries IOSQE_IO_LINK (`with_sqe_flags(sqe_flag::io_link)`; the two SQEs must
/// be prepared back to back, as the composition layer's `link` does). If that operation is
/// still running when the time passes it is cancelled (and completes with -ECANCELED) and
/// this completes with -ETIME; if it finishes first this completes with -ECANCELED.
struct [[nodiscard]] LinkTimeout : Op<LinkTimeout> {
    /// The opcode submitted: IORING_OP_LINK_TIMEOUT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::link_timeout;
    /// Keeps the arguments for prepare(); op::link_timeout() makes one.
    LinkTimeout(__kernel_timespec ts, unsigned flags) noexcept : ts_(ts), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) noexcept { io_uring_prep_link_timeout(s, &ts_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    __kernel_timespec ts_;
    unsigned flags_;
    ///@}
};
inline LinkTimeout link_timeout(__kernel_timespec ts, unsigned flags = 0) noexcept { return {ts, flags}; }
template <class Rep, class Period>
LinkTimeout link_timeout(std::chrono::duration<Rep, Period> d, unsigned flags = 0) noexcept {
    return {to_timespec(d), flags};
}

} // namespace ringo::op
