// ringo/op/futex.hpp - futex waits and wakes through the ring (interoperate with threads
// that use the futex(2) system call on the same word).
#pragma once

#include <linux/futex.h>

#include <cstdint>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// futex2 flags for a private (process-local) 32-bit futex word: the default. A plain thread
/// that shares the word uses FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE.
inline constexpr std::uint32_t futex_private_u32 = uring::compat::futex2::size_u32 | uring::compat::futex2::private_;
/// futex2 flags for a 32-bit word that other processes may share (FUTEX_WAIT / FUTEX_WAKE).
inline constexpr std::uint32_t futex_shared_u32 = uring::compat::futex2::size_u32;

namespace raw {
inline void prep_futex(io_uring_sqe* s, std::uint8_t opcode, const void* addr, std::uint64_t val, std::uint64_t mask,
                       std::uint32_t futex2_flags) noexcept {
    prep_raw(s, opcode, static_cast<int>(futex2_flags), reinterpret_cast<std::uint64_t>(addr), 0, val); // addr2 = val
    s->addr3 = mask;
}
} // namespace raw

/// FUTEX_WAIT and FUTEX_WAKE share one shape: a word's address, a value (the expected value
/// of a wait, the most waiters a wake wakes), a bitset mask and futex2 flags.
template <std::uint8_t Opcode>
struct [[nodiscard]] FutexOp : Op<FutexOp<Opcode>> {
    /// The opcode submitted: `Opcode`.
    static constexpr std::uint8_t opcode = Opcode;
    /// Keeps the arguments for prepare().
    FutexOp(const void* addr, std::uint64_t val, std::uint64_t mask, std::uint32_t flags) noexcept
        : addr_(addr), val_(val), mask_(mask), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { raw::prep_futex(s, Opcode, addr_, val_, mask_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    const void* addr_;
    std::uint64_t val_, mask_;
    std::uint32_t flags_;
    ///@}
};

/// IORING_OP_FUTEX_WAIT (6.7), like futex_wait(2) / FUTEX_WAIT_BITSET: waits while `*addr`
/// equals `val`, until a wake whose mask intersects `mask`: 0 when woken, -EAGAIN when the
/// word did not hold `val`, -ECANCELED when cancelled, -EINVAL for bad flags or mask 0,
/// -EFAULT for a bad address.
using FutexWait = FutexOp<uring::compat::opcode::futex_wait>;
inline FutexWait futex_wait(const std::uint32_t* addr, std::uint32_t val,
                            std::uint64_t mask = uring::compat::futex2::bitset_match_any,
                            std::uint32_t futex2_flags = futex_private_u32) noexcept {
    return {addr, val, mask, futex2_flags};
}

/// IORING_OP_FUTEX_WAKE (6.7): wakes up to `nr` waiters on `addr` whose mask intersects
/// `mask`: the number woken (0 when nobody waited) or -errno (-EFAULT for a bad address of
/// a shared word; a private wake does not touch the word).
using FutexWake = FutexOp<uring::compat::opcode::futex_wake>;
inline FutexWake futex_wake(const std::uint32_t* addr, std::uint64_t nr,
                            std::uint64_t mask = uring::compat::futex2::bitset_match_any,
                            std::uint32_t futex2_flags = futex_private_u32) noexcept {
    return {addr, nr, mask, futex2_flags};
}

/// IORING_OP_FUTEX_WAITV (6.7), like futex_waitv(2): waits on up to 128 words at once (each
/// entry: val, uaddr, flags = futex2 flags). The result is the index of the entry that was
/// woken, -EAGAIN when one word did not hold its value, or -errno. `v` must stay valid
/// until the await ends.
struct [[nodiscard]] FutexWaitv : Op<FutexWaitv> {
    /// The opcode submitted: IORING_OP_FUTEX_WAITV.
    static constexpr std::uint8_t opcode = uring::compat::opcode::futex_waitv;
    /// Keeps the arguments for prepare(); op::futex_waitv() makes one.
    FutexWaitv(const ::futex_waitv* v, unsigned nr) noexcept : v_(v), nr_(nr) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, 0, reinterpret_cast<std::uint64_t>(v_), nr_, 0);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    const ::futex_waitv* v_;
    unsigned nr_;
    ///@}
};
inline FutexWaitv futex_waitv(const ::futex_waitv* waiters, unsigned nr) noexcept { return {waiters, nr}; }

} // namespace ringo::op
