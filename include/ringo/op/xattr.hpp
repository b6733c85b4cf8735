// ringo/op/xattr.hpp - extended attributes by path and by descriptor.
#pragma once

#include <cstddef>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// IORING_OP_GETXATTR (5.19), like getxattr(2): the value's size (copied to `value` when
/// `size` is large enough; size 0 asks for the size only) or -errno (-ENODATA: no such
/// attribute, -ERANGE: `size` too small).
struct [[nodiscard]] Getxattr : Op<Getxattr> {
    /// The opcode submitted: IORING_OP_GETXATTR.
    static constexpr std::uint8_t opcode = uring::compat::opcode::getxattr;
    /// Keeps the arguments for prepare(); op::getxattr() makes one.
    Getxattr(const char* path, const char* name, void* value, std::size_t size) noexcept
        : path_(path), name_(name), value_(value), size_(static_cast<unsigned>(size)) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_getxattr(s, name_, static_cast<char*>(value_), path_, size_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    const char* path_;
    const char* name_;
    void* value_;
    unsigned size_;
    ///@}
};
inline Getxattr getxattr(const char* path, const char* name, void* value, std::size_t size) noexcept {
    return {path, name, value, size};
}

/// IORING_OP_SETXATTR (5.19), like setxattr(2) (flags XATTR_CREATE / XATTR_REPLACE): 0 or -errno.
struct [[nodiscard]] Setxattr : Op<Setxattr> {
    /// The opcode submitted: IORING_OP_SETXATTR.
    static constexpr std::uint8_t opcode = uring::compat::opcode::setxattr;
    /// Keeps the arguments for prepare(); op::setxattr() makes one.
    Setxattr(const char* path, const char* name, const void* value, std::size_t size, int flags) noexcept
        : path_(path), name_(name), value_(value), size_(static_cast<unsigned>(size)), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_setxattr(s, name_, static_cast<const char*>(value_), path_, flags_, size_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    const char* path_;
    const char* name_;
    const void* value_;
    unsigned size_;
    int flags_;
    ///@}
};
inline Setxattr setxattr(const char* path, const char* name, const void* value, std::size_t size,
                         int flags = 0) noexcept {
    return {path, name, value, size, flags};
}

/// IORING_OP_FGETXATTR (5.19), like fgetxattr(2); results as getxattr.
struct [[nodiscard]] Fgetxattr : Op<Fgetxattr> {
    /// The opcode submitted: IORING_OP_FGETXATTR.
    static constexpr std::uint8_t opcode = uring::compat::opcode::fgetxattr;
    /// Keeps the arguments for prepare(); op::fgetxattr() makes one.
    Fgetxattr(FileRef fd, const char* name, void* value, std::size_t size) noexcept
        : fd_(fd), name_(name), value_(value), size_(static_cast<unsigned>(size)) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_fgetxattr(s, fd_.raw(), name_, static_cast<char*>(value_), size_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const char* name_;
    void* value_;
    unsigned size_;
    ///@}
};
inline Fgetxattr fgetxattr(FileRef fd, const char* name, void* value, std::size_t size) noexcept {
    return {fd, name, value, size};
}

/// IORING_OP_FSETXATTR (5.19), like fsetxattr(2): 0 or -errno.
struct [[nodiscard]] Fsetxattr : Op<Fsetxattr> {
    /// The opcode submitted: IORING_OP_FSETXATTR.
    static constexpr std::uint8_t opcode = uring::compat::opcode::fsetxattr;
    /// Keeps the arguments for prepare(); op::fsetxattr() makes one.
    Fsetxattr(FileRef fd, const char* name, const void* value, std::size_t size, int flags) noexcept
        : fd_(fd), name_(name), value_(value), size_(static_cast<unsigned>(size)), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_fsetxattr(s, fd_.raw(), name_, static_cast<const char*>(value_), flags_, size_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const char* name_;
    const void* value_;
    unsigned size_;
    int flags_;
    ///@}
};
inline Fsetxattr fsetxattr(FileRef fd, const char* name, const void* value, std::size_t size, int flags = 0) noexcept {
    return {fd, name, value, size, flags};
}

} // namespace ringo::op
