// ringo/op/path.hpp - opening, closing and inspecting files by path.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// IORING_OP_OPENAT (5.6), like openat(2): the new fd or -errno. `path` must stay valid
/// until the await ends.
struct Openat : Op<Openat> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::openat;
    Openat(int dfd, const char* path, int flags, mode_t mode) noexcept : dfd_(dfd), path_(path), flags_(flags), mode_(mode) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_openat(s, dfd_, path_, flags_, mode_); }
    int dfd_; const char* path_; int flags_; mode_t mode_;
};
inline Openat openat(int dfd, const char* path, int flags, mode_t mode = 0) noexcept { return {dfd, path, flags, mode}; }

/// IORING_OP_CLOSE (5.6), like close(2): 0 or -errno. With `Fixed{i}` it empties slot i of
/// the registered file table (5.15).
struct Close : Op<Close> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::close;
    explicit Close(FileRef fd) noexcept : fd_(fd) {}
    void prepare(io_uring_sqe* s) const noexcept {
        if (fd_.fixed())
            io_uring_prep_close_direct(s, static_cast<unsigned>(fd_.raw())); // frees the table slot
        else
            io_uring_prep_close(s, fd_.raw());
    }
    FileRef fd_;
};
inline Close close(FileRef fd) noexcept { return Close{fd}; }

/// IORING_OP_STATX (5.6), like statx(2): 0 or -errno; fills `*out`.
struct Statx : Op<Statx> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::statx;
    Statx(int dfd, const char* path, int flags, unsigned mask, struct statx* out) noexcept
        : dfd_(dfd), path_(path), flags_(flags), mask_(mask), out_(out) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_statx(s, dfd_, path_, flags_, mask_, out_); }
    int dfd_; const char* path_; int flags_; unsigned mask_; struct statx* out_;
};
inline Statx statx(int dfd, const char* path, int flags, unsigned mask, struct statx* out) noexcept {
    return {dfd, path, flags, mask, out};
}

} // namespace ringo::op
