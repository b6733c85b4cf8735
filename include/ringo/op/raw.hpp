// ringo/op/raw.hpp - operations that are not plain awaitables (multishot, several CQEs):
// queued on a runtime with a Completion that receives every CQE.
#pragma once

#include <cerrno>
#include <cstdint>

#include <ringo/core/completion.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/op/base.hpp>

namespace ringo::op::raw {

/// The user_data that routes a CQE to Completion `c` on a ringo runtime (its address with
/// the completion tag). Also what async_cancel takes to cancel an operation queued with
/// raw::queue.
[[nodiscard]] inline std::uint64_t completion_user_data(const ringo::Completion& c) noexcept {
    return reinterpret_cast<std::uint64_t>(&c) | ringo::detail::tag_completion;
}

/// Tells runtime `rt` (owner thread) that an operation queued with raw::queue has produced
/// its last CQE (the one without IORING_CQE_F_MORE): it no longer counts as in flight.
inline void finished(Runtime& rt) noexcept { ringo::detail::RuntimeAccess::engine(rt).op_finished(); }

/// Queues one SQE on runtime `rt` (owner thread) for an operation that is not a plain
/// awaitable (multishot operations, operations with several CQEs): `prep(io_uring_sqe*)`
/// fills it (a raw::prep_* helper; it may add IOSQE_* flags), then every CQE it produces
/// calls `c.fn(&c, res, flags)` from the runtime's loop. Returns 0, or -EOPNOTSUPP without
/// submitting anything when the kernel's probe lacks the prepared opcode.
///
/// The runtime counts the operation as in flight from here on; the caller's Completion
/// must call `raw::finished(rt)` at the operation's last CQE (the one without
/// IORING_CQE_F_MORE, see has_more) and must stay alive until then. A runtime being
/// destroyed cancels the operation and still delivers that last CQE. The SQE reaches the
/// kernel with the runtime's next submission (at the latest when the calling task
/// suspends). Unlike an awaited operation it is not tied to the calling task: cancelling
/// the task does not cancel it (use async_cancel(completion_user_data(c))). An exception
/// from `prep` propagates, and nothing is submitted.
template <class Prep>
int queue(Runtime& rt, ringo::Completion& c, Prep&& prep) {
    io_uring_sqe* s = ringo::detail::RuntimeAccess::engine(rt).get_sqe();
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
    ringo::detail::RuntimeAccess::engine(rt).op_started();
    return 0;
}
} // namespace ringo::op::raw
