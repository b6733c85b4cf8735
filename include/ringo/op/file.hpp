// ringo/op/file.hpp - reading, writing and syncing files (and anything with an fd).
#pragma once

#include <sys/uio.h>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// Offset meaning "the file's current position" (needs IORING_FEAT_RW_CUR_POS, 5.6).
inline constexpr std::uint64_t current_pos = ~std::uint64_t{0};

/// IORING_OP_NOP: completes with 0. Measures the cost of the machinery itself.
struct Nop : Op<Nop> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::nop;
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_nop(s); }
};
inline Nop nop() noexcept { return {}; }

/// IORING_OP_READ (5.6), like pread(2): bytes read (0 at end of file) or -errno.
struct Read : Op<Read> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::read;
    Read(FileRef fd, void* buf, std::size_t len, std::uint64_t off) noexcept : fd_(fd), buf_(buf), len_(clamp_len(len)), off_(off) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_read(s, fd_.raw(), buf_, len_, off_); fd_.apply(s); }
    FileRef fd_; void* buf_; unsigned len_; std::uint64_t off_;
};
inline Read read(FileRef fd, void* buf, std::size_t len, std::uint64_t offset) noexcept { return {fd, buf, len, offset}; }

/// IORING_OP_WRITE (5.6), like pwrite(2): bytes written or -errno.
struct Write : Op<Write> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::write;
    Write(FileRef fd, const void* buf, std::size_t len, std::uint64_t off) noexcept : fd_(fd), buf_(buf), len_(clamp_len(len)), off_(off) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_write(s, fd_.raw(), buf_, len_, off_); fd_.apply(s); }
    FileRef fd_; const void* buf_; unsigned len_; std::uint64_t off_;
};
inline Write write(FileRef fd, const void* buf, std::size_t len, std::uint64_t offset) noexcept { return {fd, buf, len, offset}; }

/// IORING_OP_READV (5.1), like preadv2(2). `iov` must stay valid until the await ends.
struct Readv : Op<Readv> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::readv;
    Readv(FileRef fd, const iovec* iov, unsigned n, std::uint64_t off, int flags) noexcept : fd_(fd), iov_(iov), n_(n), off_(off), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_readv2(s, fd_.raw(), iov_, n_, off_, flags_); fd_.apply(s); }
    FileRef fd_; const iovec* iov_; unsigned n_; std::uint64_t off_; int flags_;
};
inline Readv readv(FileRef fd, const iovec* iov, unsigned iovcnt, std::uint64_t offset, int rwf_flags = 0) noexcept {
    return {fd, iov, iovcnt, offset, rwf_flags};
}

/// IORING_OP_WRITEV (5.1), like pwritev2(2).
struct Writev : Op<Writev> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::writev;
    Writev(FileRef fd, const iovec* iov, unsigned n, std::uint64_t off, int flags) noexcept : fd_(fd), iov_(iov), n_(n), off_(off), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_writev2(s, fd_.raw(), iov_, n_, off_, flags_); fd_.apply(s); }
    FileRef fd_; const iovec* iov_; unsigned n_; std::uint64_t off_; int flags_;
};
inline Writev writev(FileRef fd, const iovec* iov, unsigned iovcnt, std::uint64_t offset, int rwf_flags = 0) noexcept {
    return {fd, iov, iovcnt, offset, rwf_flags};
}

/// Flag for fsync(): sync data only, like fdatasync(2) (IORING_FSYNC_DATASYNC).
inline constexpr unsigned fsync_datasync = 1u << 0;

/// IORING_OP_FSYNC (5.1): 0 or -errno.
struct Fsync : Op<Fsync> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::fsync;
    Fsync(FileRef fd, unsigned flags) noexcept : fd_(fd), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_fsync(s, fd_.raw(), flags_); fd_.apply(s); }
    FileRef fd_; unsigned flags_;
};
inline Fsync fsync(FileRef fd, unsigned flags = 0) noexcept { return {fd, flags}; }

} // namespace ringo::op
