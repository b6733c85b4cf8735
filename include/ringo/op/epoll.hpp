// ringo/op/epoll.hpp - driving an epoll instance through the ring.
#pragma once

#include <sys/epoll.h>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// IORING_OP_EPOLL_CTL (5.6), like epoll_ctl(2): 0 or -errno. `ev` may be null for
/// EPOLL_CTL_DEL.
struct [[nodiscard]] EpollCtl : Op<EpollCtl> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::epoll_ctl;
    EpollCtl(int epfd, int op, int fd, epoll_event* ev) noexcept : epfd_(epfd), op_(op), fd_(fd), ev_(ev) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_epoll_ctl(s, epfd_, fd_, op_, ev_); }
    int epfd_, op_, fd_;
    epoll_event* ev_;
};
inline EpollCtl epoll_ctl(int epfd, int op, int fd, epoll_event* ev) noexcept { return {epfd, op, fd, ev}; }

/// IORING_OP_EPOLL_WAIT (6.15), like epoll_wait(2) without a timeout: waits until at least
/// one event is ready and completes with the number of events stored in `events` (at most
/// `maxevents`), or -errno. Combine with a timeout or cancellation to bound the wait.
struct [[nodiscard]] EpollWait : Op<EpollWait> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::epoll_wait;
    EpollWait(FileRef epfd, epoll_event* events, int maxevents) noexcept
        : epfd_(epfd), events_(events), max_(maxevents) {}
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, epfd_.raw(), reinterpret_cast<std::uint64_t>(events_), static_cast<std::uint32_t>(max_), 0);
        epfd_.apply(s);
    }
    FileRef epfd_;
    epoll_event* events_;
    int max_;
};
inline EpollWait epoll_wait(FileRef epfd, epoll_event* events, int maxevents) noexcept {
    return {epfd, events, maxevents};
}

} // namespace ringo::op
