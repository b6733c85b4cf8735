// ringo/op/path.hpp - opening, closing and inspecting files by path.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// IORING_OP_OPENAT (5.6), like openat(2): the new fd or -errno. `path` must stay valid
/// until the await ends.
struct [[nodiscard]] Openat : Op<Openat, detail::DescriptorResult> {
    /// The opcode submitted: IORING_OP_OPENAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::openat;
    /// Keeps the arguments for prepare(); op::openat() makes one.
    Openat(int dfd, const char* path, int flags, mode_t mode) noexcept
        : dfd_(dfd), path_(path), flags_(flags), mode_(mode) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_openat(s, dfd_, path_, flags_, mode_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int dfd_;
    const char* path_;
    int flags_;
    mode_t mode_;
    ///@}
};
inline Openat openat(int dfd, const char* path, int flags, mode_t mode = 0) noexcept {
    return {dfd, path, flags, mode};
}

/// IORING_OP_OPENAT into the registered file table (5.15): opens `path` straight into slot
/// `file_index` (or a free slot with op::alloc_slot) without a regular descriptor. The
/// result is 0 for a chosen slot, the slot number with alloc_slot, or -errno (-ENFILE: no
/// free slot, also when no table is registered and alloc_slot was asked; -ENXIO: a chosen
/// slot without a table; -EINVAL: O_CLOEXEC, or a slot past the end of the table).
struct [[nodiscard]] OpenatDirect : Op<OpenatDirect> {
    /// The opcode submitted: IORING_OP_OPENAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::openat;
    /// Keeps the arguments for prepare(); op::openat_direct() makes one.
    OpenatDirect(int dfd, const char* path, int flags, mode_t mode, unsigned slot) noexcept
        : dfd_(dfd), path_(path), flags_(flags), mode_(mode), slot_(slot) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_openat(s, dfd_, path_, flags_, mode_);
        uring::compat::sqe_field::target_slot(s, slot_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    int dfd_;
    const char* path_;
    int flags_;
    mode_t mode_;
    unsigned slot_;
    ///@}
};
inline OpenatDirect openat_direct(int dfd, const char* path, int flags, mode_t mode, unsigned file_index) noexcept {
    return {dfd, path, flags, mode, file_index};
}

/// IORING_OP_OPENAT2 (5.6), like openat2(2): the new fd or -errno. `how` must stay valid
/// until the await ends.
struct [[nodiscard]] Openat2 : Op<Openat2, detail::DescriptorResult> {
    /// The opcode submitted: IORING_OP_OPENAT2.
    static constexpr std::uint8_t opcode = uring::compat::opcode::openat2;
    /// Keeps the arguments for prepare(); op::openat2() makes one.
    Openat2(int dfd, const char* path, open_how* how, unsigned slot, bool direct) noexcept
        : dfd_(dfd), path_(path), how_(how), slot_(slot), direct_(direct) {
        closes_result = !direct; // into a table slot, the result is the slot
    }
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_openat2(s, dfd_, path_, how_);
        if (direct_)
            uring::compat::sqe_field::target_slot(s, slot_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    int dfd_;
    const char* path_;
    open_how* how_;
    unsigned slot_;
    bool direct_;
    ///@}
};
inline Openat2 openat2(int dfd, const char* path, open_how* how) noexcept { return {dfd, path, how, 0, false}; }
/// IORING_OP_OPENAT2 into the registered file table (5.15); results as openat_direct.
inline Openat2 openat2_direct(int dfd, const char* path, open_how* how, unsigned file_index) noexcept {
    return {dfd, path, how, file_index, true};
}

/// IORING_OP_CLOSE (5.6), like close(2): 0 or -errno. With `Fixed{i}` it empties slot i of
/// the registered file table (5.15). A release operation: it also runs in a cancelled task,
/// and cancelling the task does not interrupt it.
struct [[nodiscard]] Close : Op<Close> {
    /// The opcode submitted: IORING_OP_CLOSE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::close;
    /// A release operation: it runs in a cancelled task too, and cancelling the task does not
    /// interrupt it.
    static constexpr bool releases = true;
    /// Keeps the arguments for prepare(); op::close() makes one.
    explicit Close(FileRef fd) noexcept : fd_(fd) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        if (fd_.fixed())
            io_uring_prep_close_direct(s, static_cast<unsigned>(fd_.raw())); // frees the table slot
        else
            io_uring_prep_close(s, fd_.raw());
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    ///@}
};
inline Close close(FileRef fd) noexcept { return Close{fd}; }

/// IORING_OP_STATX (5.6), like statx(2): 0 or -errno; fills `*out`.
struct [[nodiscard]] Statx : Op<Statx> {
    /// The opcode submitted: IORING_OP_STATX.
    static constexpr std::uint8_t opcode = uring::compat::opcode::statx;
    /// Keeps the arguments for prepare(); op::statx() makes one.
    Statx(int dfd, const char* path, int flags, unsigned mask, struct statx* out) noexcept
        : dfd_(dfd), path_(path), flags_(flags), mask_(mask), out_(out) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_statx(s, dfd_, path_, flags_, mask_, out_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int dfd_;
    const char* path_;
    int flags_;
    unsigned mask_;
    struct statx* out_;
    ///@}
};
inline Statx statx(int dfd, const char* path, int flags, unsigned mask, struct statx* out) noexcept {
    return {dfd, path, flags, mask, out};
}

/// IORING_OP_UNLINKAT (5.11), like unlinkat(2) (AT_REMOVEDIR removes a directory): 0 or -errno.
struct [[nodiscard]] Unlinkat : Op<Unlinkat> {
    /// The opcode submitted: IORING_OP_UNLINKAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::unlinkat;
    /// Keeps the arguments for prepare(); op::unlinkat() makes one.
    Unlinkat(int dfd, const char* path, int flags) noexcept : dfd_(dfd), path_(path), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_unlinkat(s, dfd_, path_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int dfd_;
    const char* path_;
    int flags_;
    ///@}
};
inline Unlinkat unlinkat(int dfd, const char* path, int flags = 0) noexcept { return {dfd, path, flags}; }

/// IORING_OP_RENAMEAT (5.11), like renameat2(2): 0 or -errno.
struct [[nodiscard]] Renameat : Op<Renameat> {
    /// The opcode submitted: IORING_OP_RENAMEAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::renameat;
    /// Keeps the arguments for prepare(); op::renameat() makes one.
    Renameat(int odfd, const char* oldpath, int ndfd, const char* newpath, unsigned flags) noexcept
        : odfd_(odfd), ndfd_(ndfd), old_(oldpath), new_(newpath), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_renameat(s, odfd_, old_, ndfd_, new_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int odfd_, ndfd_;
    const char* old_;
    const char* new_;
    unsigned flags_;
    ///@}
};
inline Renameat renameat(int olddfd, const char* oldpath, int newdfd, const char* newpath,
                         unsigned flags = 0) noexcept {
    return {olddfd, oldpath, newdfd, newpath, flags};
}

/// IORING_OP_MKDIRAT (5.15), like mkdirat(2): 0 or -errno.
struct [[nodiscard]] Mkdirat : Op<Mkdirat> {
    /// The opcode submitted: IORING_OP_MKDIRAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::mkdirat;
    /// Keeps the arguments for prepare(); op::mkdirat() makes one.
    Mkdirat(int dfd, const char* path, mode_t mode) noexcept : dfd_(dfd), path_(path), mode_(mode) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_mkdirat(s, dfd_, path_, mode_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int dfd_;
    const char* path_;
    mode_t mode_;
    ///@}
};
inline Mkdirat mkdirat(int dfd, const char* path, mode_t mode) noexcept { return {dfd, path, mode}; }

/// IORING_OP_SYMLINKAT (5.15), like symlinkat(2): creates `linkpath` pointing at `target`.
struct [[nodiscard]] Symlinkat : Op<Symlinkat> {
    /// The opcode submitted: IORING_OP_SYMLINKAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::symlinkat;
    /// Keeps the arguments for prepare(); op::symlinkat() makes one.
    Symlinkat(const char* target, int ndfd, const char* linkpath) noexcept
        : target_(target), ndfd_(ndfd), link_(linkpath) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_symlinkat(s, target_, ndfd_, link_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    const char* target_;
    int ndfd_;
    const char* link_;
    ///@}
};
inline Symlinkat symlinkat(const char* target, int newdirfd, const char* linkpath) noexcept {
    return {target, newdirfd, linkpath};
}

/// IORING_OP_LINKAT (5.15), like linkat(2): 0 or -errno.
struct [[nodiscard]] Linkat : Op<Linkat> {
    /// The opcode submitted: IORING_OP_LINKAT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::linkat;
    /// Keeps the arguments for prepare(); op::linkat() makes one.
    Linkat(int odfd, const char* oldpath, int ndfd, const char* newpath, int flags) noexcept
        : odfd_(odfd), ndfd_(ndfd), old_(oldpath), new_(newpath), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_linkat(s, odfd_, old_, ndfd_, new_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int odfd_, ndfd_;
    const char* old_;
    const char* new_;
    int flags_;
    ///@}
};
inline Linkat linkat(int olddfd, const char* oldpath, int newdfd, const char* newpath, int flags = 0) noexcept {
    return {olddfd, oldpath, newdfd, newpath, flags};
}

} // namespace ringo::op
