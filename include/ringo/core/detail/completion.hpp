// ringo/core/detail/completion.hpp - what a CQE's user_data points at.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include <ringo/core/completion.hpp>
#include <ringo/core/task.hpp>

namespace ringo::detail {

/// The state every awaited operation keeps in its coroutine frame. Its address (low bits
/// clear) is the SQE's user_data; the CQE's result lands in `res` and resumes `h`. It is
/// also the Waitable its task's cancellation context points at while the operation is in
/// flight (cancel_fn submits ASYNC_CANCEL for it).
struct OpState : Waitable {
    // An operation's result is the kernel's: >= 0, or -errno, -ECANCELED when cancelled
    // (with_timeout then yields -ETIME instead: see compose/traits.hpp ErrnoAwaitable).
    static constexpr bool errno_result = true;
    std::coroutine_handle<> h;
    int res;                 // set by the completion (or by await_suspend on early errors)
    std::uint32_t cqe_flags; // set by the completion
};

/// An awaited operation that may go to the kernel again before its coroutine resumes (a
/// write_all after a short send: io/detail/exact.hpp). Its user_data is its address |
/// tag_repeat. Each CQE sets `res` and `cqe_flags`, then `again` says what next: true when
/// it prepared its next SQE (still in flight, same user_data), false when its coroutine is to
/// resume, as for a plain operation (inline from the loop). `again` must not prepare an SQE
/// once the runtime is shutting down.
struct RepeatOp : OpState {
    bool (*again)(RepeatOp* self, Runtime& rt) noexcept = nullptr;
};

// The user_data tags. A ringo::Completion (internal wake-ups, multishot streams, zero-copy
// notifications) is routed by its address | tag_completion.
inline constexpr std::uint64_t tag_completion = 1;
inline constexpr std::uint64_t tag_group_member = 2;
inline constexpr std::uint64_t tag_repeat = 3;
inline constexpr std::uint64_t tag_mask = 7;

/// The result an operation of a group holds until its final CQE (no CQE carries it).
inline constexpr int res_pending = -0x7fffffff - 1;

/// What the runtime needs of a group of operations awaited as one (compose/detail/group.hpp): the
/// awaiting coroutine and how many CQEs are still to come. A member's OpState::h holds the
/// GroupHead's address.
struct GroupHead {
    std::coroutine_handle<> waiter{};
    std::size_t remaining = 0;
};

} // namespace ringo::detail
