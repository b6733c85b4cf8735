// ringo/op/pipe.hpp - creating pipes.
#pragma once

#include <fcntl.h>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// IORING_OP_PIPE (6.16), like pipe2(2): 0 with fds[0] (read end) and fds[1] (write end)
/// filled, or -errno (-EFAULT for a bad `fds`, -EINVAL for bad flags).
///
/// pipe_direct() creates both ends in the registered file table instead: with op::alloc_slot
/// the kernel picks two free slots and writes them to fds; with slot i the ends go to slots
/// i and i+1. O_CLOEXEC is refused (-EINVAL) for direct descriptors.
struct [[nodiscard]] Pipe : Op<Pipe> {
    /// The opcode submitted: IORING_OP_PIPE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::pipe;
    /// Keeps the arguments for prepare(); op::pipe() makes one.
    Pipe(int* fds, int flags, unsigned slot, bool direct) noexcept
        : fds_(fds), flags_(flags), slot_(slot), direct_(direct) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, 0, reinterpret_cast<std::uint64_t>(fds_), 0, 0);
        uring::compat::sqe_field::op_flags(s, static_cast<std::uint32_t>(flags_));
        if (direct_)
            uring::compat::sqe_field::target_slot(s, slot_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    int* fds_;
    int flags_;
    unsigned slot_;
    bool direct_;
    ///@}
};
inline Pipe pipe(int* fds, int flags = 0) noexcept { return {fds, flags, 0, false}; }
inline Pipe pipe_direct(int* fds, unsigned file_index = alloc_slot, int flags = 0) noexcept {
    return {fds, flags, file_index, true};
}

} // namespace ringo::op
