// ringo/op/poll.hpp - readiness polling of a descriptor.
#pragma once

#include <poll.h>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// IORING_OP_POLL_ADD (5.1), one shot: waits until `fd` is ready for `events` (POLLIN,
/// POLLOUT, ...) and completes with the ready mask (revents), or -ECANCELED when removed or
/// cancelled, or -errno.
struct [[nodiscard]] PollAdd : Op<PollAdd> {
    /// The opcode submitted: IORING_OP_POLL_ADD.
    static constexpr std::uint8_t opcode = uring::compat::opcode::poll_add;
    /// Keeps the arguments for prepare(); op::poll_add() makes one.
    PollAdd(FileRef fd, unsigned events) noexcept : fd_(fd), events_(events) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_poll_add(s, fd_.raw(), events_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    unsigned events_;
    ///@}
};
inline PollAdd poll_add(FileRef fd, unsigned events) noexcept { return {fd, events}; }

/// IORING_OP_POLL_REMOVE (5.1): removes the poll_add whose user_data is `target` (see
/// user_data_of): 0, or -ENOENT when no such poll is armed (-EALREADY when it is completing).
/// The removed poll completes with -ECANCELED.
struct [[nodiscard]] PollRemove : Op<PollRemove> {
    /// The opcode submitted: IORING_OP_POLL_REMOVE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::poll_remove;
    /// Keeps the arguments for prepare(); op::poll_remove() makes one.
    explicit PollRemove(std::uint64_t target) noexcept : target_(target) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_poll_remove(s, target_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    std::uint64_t target_;
    ///@}
};
inline PollRemove poll_remove(std::uint64_t target_user_data) noexcept { return PollRemove{target_user_data}; }

/// IORING_OP_POLL_REMOVE with IORING_POLL_UPDATE_EVENTS (5.13): changes the events an armed
/// poll_add waits for to `events`: 0, or -ENOENT. (The poll keeps its user_data: ringo's
/// user_data is the address of the awaiting operation, so it is not offered for change.)
struct [[nodiscard]] PollUpdate : Op<PollUpdate> {
    /// The opcode submitted: IORING_OP_POLL_REMOVE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::poll_remove;
    /// Keeps the arguments for prepare(); op::poll_update() makes one.
    PollUpdate(std::uint64_t target, unsigned events) noexcept : target_(target), events_(events) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_poll_update(s, target_, 0, events_, uring::compat::poll_flag::update_events);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    std::uint64_t target_;
    unsigned events_;
    ///@}
};
inline PollUpdate poll_update(std::uint64_t target_user_data, unsigned events) noexcept {
    return {target_user_data, events};
}

} // namespace ringo::op
