// ringo/op/common.hpp - small types shared by the operation headers.
#pragma once

#include <cstdint>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// Pass as the slot of an operation that creates a direct descriptor (openat_direct,
/// accept_direct, socket_direct, pipe_direct, msg_ring_fd, files_update) to let the kernel
/// pick a free slot of the registered file table; the result is then the slot it chose
/// (IORING_FILE_INDEX_ALLOC).
inline constexpr unsigned alloc_slot = uring::compat::file_index_alloc;

/// A provided-buffer group (legacy `provide_buffers` or a registered buffer ring): pass it
/// instead of a buffer pointer and the kernel picks a buffer of the group
/// (IOSQE_BUFFER_SELECT). The chosen buffer's id is `buffer_id(op.result_flags())`.
struct BufferGroup {
    std::uint16_t id;
};

/// True when a completion consumed a provided buffer (IORING_CQE_F_BUFFER).
[[nodiscard]] constexpr bool has_buffer(std::uint32_t cqe_flags) noexcept {
    return (cqe_flags & uring::compat::cqe_f_buffer) != 0;
}
/// The id of the provided buffer a completion consumed (valid when has_buffer()).
[[nodiscard]] constexpr std::uint16_t buffer_id(std::uint32_t cqe_flags) noexcept {
    return static_cast<std::uint16_t>(cqe_flags >> uring::compat::cqe_buffer_shift);
}

/// The user_data an awaited operation carries while it is in flight: what poll_remove,
/// poll_update, timeout_remove, timeout_update and async_cancel take to name it. Name the
/// awaitable (`auto t = op::timeout(1s); co_await t;`) to be able to take its address.
template <class D>
[[nodiscard]] std::uint64_t user_data_of(const Op<D>& o) noexcept {
    return reinterpret_cast<std::uint64_t>(static_cast<const detail::OpState*>(&o));
}

/// True when more CQEs of the same operation follow this one (IORING_CQE_F_MORE): a
/// multishot operation posts it on every CQE but its last.
[[nodiscard]] constexpr bool has_more(std::uint32_t cqe_flags) noexcept {
    return (cqe_flags & uring::compat::cqe_f_more) != 0;
}

/// Raw SQE preparation helpers: they fill an SQE the caller got from Runtime::get_sqe() (or
/// any ring) and set nothing else (user_data is the caller's).
namespace raw {
/// Marks `s` as picking its buffer from group `g`.
inline void select_buffer(io_uring_sqe* s, BufferGroup g) noexcept {
    s->flags |= uring::compat::sqe_flag::buffer_select;
    s->buf_group = g.id;
}

/// The user_data that routes a CQE to Completion `c` on a ringo runtime (its address with
/// the completion tag). Also what async_cancel takes to cancel an operation queued with
/// raw::queue.
[[nodiscard]] inline std::uint64_t completion_user_data(const ringo::detail::Completion& c) noexcept {
    return reinterpret_cast<std::uint64_t>(&c) | ringo::detail::tag_completion;
}

/// Queues one SQE on runtime `rt` (owner thread) for an operation that is not a plain
/// awaitable (multishot operations, operations with several CQEs): `prep(io_uring_sqe*)`
/// fills it (a raw::prep_* helper; it may add IOSQE_* flags), then every CQE it produces
/// calls `c.fn(&c, res, flags)` from the runtime's loop. Returns 0, or -EOPNOTSUPP without
/// submitting anything when the kernel's probe lacks the prepared opcode.
///
/// The runtime counts the operation as in flight from here on; the caller's Completion
/// must call `rt.op_finished()` at the operation's last CQE (the one without
/// IORING_CQE_F_MORE, see has_more) and must stay alive until then. A runtime being
/// destroyed cancels the operation and still delivers that last CQE. The SQE reaches the
/// kernel with the runtime's next submission (at the latest when the calling task
/// suspends). Unlike an awaited operation it is not tied to the calling task: cancelling
/// the task does not cancel it (use async_cancel(completion_user_data(c))). An exception
/// from `prep` propagates, and nothing is submitted.
template <class Prep>
int queue(Runtime& rt, ringo::detail::Completion& c, Prep&& prep) {
    io_uring_sqe* s = rt.get_sqe();
    // An SQE once taken goes to the kernel with the next submission: when it must not carry
    // the operation, it becomes a NOP (every field cleared, flags that prep may have added
    // too: liburing's own NOP helper leaves them from 2.6 on) whose CQE the loop ignores.
    auto neutralize = [s]() noexcept {
        prep_raw(s, uring::compat::opcode::nop, 0, 0, 0, 0);
        s->user_data = 0;
    };
    try {
        prep(s);
    } catch (...) {
        neutralize();
        throw;
    }
    if (!rt.supports(s->opcode)) [[unlikely]] {
        neutralize();
        return -EOPNOTSUPP;
    }
    s->user_data = completion_user_data(c);
    rt.op_started();
    return 0;
}
} // namespace raw

} // namespace ringo::op
