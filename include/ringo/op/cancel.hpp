// ringo/op/cancel.hpp - user-level cancellation of operations in flight.
#pragma once

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// IORING_OP_ASYNC_CANCEL (5.5). The result counts cancelled operations when `flags` has
/// uring::compat::async_cancel_all or _any; otherwise it is 0 (found and cancelled; futex
/// and waitid waits report 1 instead), -ENOENT (nothing matched) or -EALREADY (it was
/// already running and was signalled).
/// Each cancelled operation still completes on its own, usually with -ECANCELED.
/// A release operation: it also runs in a task that has been cancelled (to cancel what that
/// task started), and cancelling the task does not interrupt it.
///
/// Matching, by constructor: by user_data (see user_data_of), by fd, or any operation.
/// Note: `async_cancel_any(async_cancel_all)` also cancels the runtime's internal wake-up
/// read, so cross-thread posts to this runtime stop working; prefer the narrower forms.
struct [[nodiscard]] AsyncCancel : Op<AsyncCancel> {
    /// The opcode submitted: IORING_OP_ASYNC_CANCEL.
    static constexpr std::uint8_t opcode = uring::compat::opcode::async_cancel;
    /// A release operation: it runs in a cancelled task too, and cancelling the task does not
    /// interrupt it.
    static constexpr bool releases = true;
    /// Keeps the arguments for prepare(); op::async_cancel() makes one.
    AsyncCancel(std::uint64_t target, int fd, unsigned flags) noexcept : target_(target), fd_(fd), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_cancel64(s, target_, 0);
        s->fd = fd_;
        s->cancel_flags = flags_;
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    std::uint64_t target_;
    int fd_;
    unsigned flags_;
    ///@}
};
/// Cancels the operation with user_data `target` (all of them with async_cancel_all).
inline AsyncCancel async_cancel(std::uint64_t target, unsigned flags = 0) noexcept { return {target, -1, flags}; }
/// Cancels an operation on `fd` (every one with async_cancel_all; a Fixed{i} matches the
/// operations that use registered file i) (5.19).
inline AsyncCancel async_cancel_fd(FileRef fd, unsigned flags = 0) noexcept {
    return {0, fd.raw(),
            flags | uring::compat::async_cancel_fd | (fd.fixed() ? uring::compat::async_cancel_fd_fixed : 0u)};
}
/// Cancels any operation (5.19); with async_cancel_all, every one.
inline AsyncCancel async_cancel_any(unsigned flags = 0) noexcept {
    return {0, -1, flags | uring::compat::async_cancel_any};
}

} // namespace ringo::op
