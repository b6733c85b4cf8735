// ringo/op/direct.hpp - operations on the registered file table itself.
#pragma once

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// IORING_OP_FILES_UPDATE (5.6): like op::FileTable::update, but asynchronous: replaces
/// slots offset .. offset+nr-1 with `fds` (-1 empties a slot). The result is the number
/// of slots updated, or -errno (-ENXIO: no table, -EINVAL: out of range, -EBADF: a bad
/// fd). With `offset` = op::alloc_slot the kernel picks free slots and writes the chosen
/// slot numbers back into `fds`.
struct [[nodiscard]] FilesUpdate : Op<FilesUpdate> {
    /// The opcode submitted: IORING_OP_FILES_UPDATE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::files_update;
    /// Keeps the arguments for prepare(); op::files_update() makes one.
    FilesUpdate(int* fds, unsigned nr, int offset) noexcept : fds_(fds), nr_(nr), offset_(offset) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_files_update(s, fds_, nr_, offset_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int* fds_;
    unsigned nr_;
    int offset_;
    ///@}
};
inline FilesUpdate files_update(int* fds, unsigned nr, unsigned offset) noexcept {
    return {fds, nr, static_cast<int>(offset)};
}

/// IORING_OP_FIXED_FD_INSTALL (6.8): installs registered file `fd` (a Fixed) as a regular
/// descriptor of the process: the new fd or -errno (-EBADF for a plain fd or an empty
/// slot). O_CLOEXEC is set unless `flags` has uring::compat::fixed_fd_no_cloexec.
struct [[nodiscard]] FixedFdInstall : Op<FixedFdInstall, detail::DescriptorResult> {
    /// The opcode submitted: IORING_OP_FIXED_FD_INSTALL.
    static constexpr std::uint8_t opcode = uring::compat::opcode::fixed_fd_install;
    /// Keeps the arguments for prepare(); op::fixed_fd_install() makes one.
    FixedFdInstall(FileRef fd, unsigned flags) noexcept : fd_(fd), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, fd_.raw(), 0, 0, 0);
        uring::compat::sqe_field::op_flags(s, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    unsigned flags_;
    ///@}
};
inline FixedFdInstall fixed_fd_install(FileRef fd, unsigned flags = 0) noexcept { return {fd, flags}; }

} // namespace ringo::op
