// ringo/op/epoll.hpp - driving an epoll instance through the ring.
#pragma once

#include <sys/epoll.h>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// IORING_OP_EPOLL_CTL (5.6), like epoll_ctl(2): 0 or -errno. `ev` may be null for
/// EPOLL_CTL_DEL.
struct [[nodiscard]] EpollCtl : Op<EpollCtl> {
    /// The opcode submitted: IORING_OP_EPOLL_CTL.
    static constexpr std::uint8_t opcode = uring::compat::opcode::epoll_ctl;
    /// Keeps the arguments for prepare(); op::epoll_ctl() makes one.
    EpollCtl(int epfd, int op, int fd, epoll_event* ev) noexcept : epfd_(epfd), op_(op), fd_(fd), ev_(ev) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_epoll_ctl(s, epfd_, fd_, op_, ev_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int epfd_, op_, fd_;
    epoll_event* ev_;
    ///@}
};
inline EpollCtl epoll_ctl(int epfd, int op, int fd, epoll_event* ev) noexcept { return {epfd, op, fd, ev}; }

/// IORING_OP_EPOLL_WAIT (6.15), like epoll_wait(2) without a timeout: waits until at least
/// one event is ready and completes with the number of events stored in `events` (at most
/// `maxevents`), or -errno. Combine with a timeout or cancellation to bound the wait.
struct [[nodiscard]] EpollWait : Op<EpollWait> {
    /// The opcode submitted: IORING_OP_EPOLL_WAIT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::epoll_wait;
    /// Keeps the arguments for prepare(); op::epoll_wait() makes one.
    EpollWait(FileRef epfd, epoll_event* events, int maxevents) noexcept
        : epfd_(epfd), events_(events), max_(maxevents) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, epfd_.raw(), reinterpret_cast<std::uint64_t>(events_), static_cast<std::uint32_t>(max_), 0);
        epfd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef epfd_;
    epoll_event* events_;
    int max_;
    ///@}
};
inline EpollWait epoll_wait(FileRef epfd, epoll_event* events, int maxevents) noexcept {
    return {epfd, events, maxevents};
}

} // namespace ringo::op
