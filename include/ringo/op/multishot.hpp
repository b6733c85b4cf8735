// ringo/op/multishot.hpp - SQE preparation for multishot operations.
//
// A multishot operation posts many CQEs with one user_data (IORING_CQE_F_MORE on every one
// but the last), so it cannot be a plain awaitable that resumes once. These helpers fill an
// SQE; queue it with op::raw::queue(rt, completion, prep), whose ringo::Completion then
// sees every CQE (op::has_more tells the last one apart) and calls op::raw::finished(rt) at the
// last. op::async_cancel(raw::completion_user_data(c)) ends any of them (final CQE
// -ECANCELED); so do poll_remove and timeout_remove for their kinds. An error ends the
// operation at once: its only CQE carries -errno without IORING_CQE_F_MORE. Most of them are
// also streams (one mechanism, op/detail/stream.hpp): ringo::interval (op/interval.hpp),
// op::poll_stream (op/poll_stream.hpp), buf::recv_multishot and buf::recv_bundle
// (buf/recv_stream.hpp), buf::read_multishot (buf/read_stream.hpp), buf::recvmsg_multishot
// (buf/recvmsg_stream.hpp).
//
//   struct Log : ringo::Completion { ... };   // fn = &on_cqe
//   op::raw::queue(rt, log, [&](io_uring_sqe* s) { op::raw::prep_poll_multishot(s, fd, POLLIN); });
#pragma once

#include <sys/socket.h>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/raw.hpp>

namespace ringo::op::raw {

/// IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT (5.19): one CQE per accepted connection
/// (res = the new fd). `direct` accepts into free slots of the registered file table
/// (res = the slot; -ENFILE ends the operation when no slot is free). -EINVAL when `fd` is
/// not listening.
inline void prep_accept_multishot(io_uring_sqe* s, FileRef fd, sockaddr* addr, socklen_t* addrlen, int flags,
                                  bool direct = false) noexcept {
    io_uring_prep_multishot_accept(s, fd.raw(), addr, addrlen, flags);
    if (direct)
        uring::compat::sqe_field::target_slot(s, alloc_slot);
    fd.apply(s);
}

/// IORING_OP_RECV with IORING_RECV_MULTISHOT (6.0): one CQE per received chunk, each in a
/// buffer picked from group `g` (buffer_id(cqe flags)); -ENOBUFS ends it when the group runs
/// dry, res 0 at end of stream.
inline void prep_recv_multishot(io_uring_sqe* s, FileRef fd, BufferGroup g, int flags = 0) noexcept {
    io_uring_prep_recv_multishot(s, fd.raw(), nullptr, 0, flags);
    select_buffer(s, g);
    fd.apply(s);
}

/// IORING_OP_RECVMSG with IORING_RECV_MULTISHOT (6.0): like prep_recv_multishot; each
/// buffer starts with a struct io_uring_recvmsg_out laid out as `msg` describes (only its
/// msg_namelen and msg_controllen are used).
inline void prep_recvmsg_multishot(io_uring_sqe* s, FileRef fd, msghdr* msg, BufferGroup g,
                                   unsigned flags = 0) noexcept {
    io_uring_prep_recvmsg_multishot(s, fd.raw(), msg, flags);
    select_buffer(s, g);
    fd.apply(s);
}

/// IORING_OP_READ_MULTISHOT (6.7): reads a pollable file (pipe, socket, eventfd ...) into
/// buffers of group `g` each time it becomes readable. `nbytes` 0 means the buffer's size.
/// res 0 (end of file) ends it, -ENOBUFS too; -EBADFD for a file that cannot be polled
/// (a regular file).
inline void prep_read_multishot(io_uring_sqe* s, FileRef fd, BufferGroup g, unsigned nbytes = 0,
                                std::uint64_t offset = 0) noexcept {
    prep_raw(s, uring::compat::opcode::read_multishot, fd.raw(), 0, nbytes, offset);
    select_buffer(s, g);
    fd.apply(s);
}

/// IORING_OP_TIMEOUT with IORING_TIMEOUT_MULTISHOT (6.4): -ETIME every `ts`; `count` > 0
/// stops after that many expirations (the last without IORING_CQE_F_MORE), 0 repeats
/// until removed (async_cancel or timeout_remove). `ts` must stay valid until the SQE is
/// submitted. -EINVAL for a negative time or with IORING_TIMEOUT_ABS. A removal can miss it:
/// from an expiry until that expiry's CQE is posted (on a DEFER_TASKRUN ring, the next
/// io_uring_enter that waits, after it submits), the timeout is off the kernel's list, and a
/// cancel then answers -ENOENT (-EALREADY while the timer fires) and the timeout goes on:
/// send it again after the next CQE (ringo::interval does).
inline void prep_timeout_multishot(io_uring_sqe* s, __kernel_timespec* ts, unsigned count = 0,
                                   unsigned flags = 0) noexcept {
    io_uring_prep_timeout(s, ts, count, flags | uring::compat::timeout_multishot);
}

/// IORING_OP_POLL_ADD with IORING_POLL_ADD_MULTI (5.13): one CQE (the ready mask) each time
/// `fd` becomes ready for `events` (edge-triggered: consume the data, or no new CQE comes).
/// poll_remove or async_cancel ends it.
inline void prep_poll_multishot(io_uring_sqe* s, FileRef fd, unsigned events) noexcept {
    io_uring_prep_poll_multishot(s, fd.raw(), events);
    fd.apply(s);
}

} // namespace ringo::op::raw
