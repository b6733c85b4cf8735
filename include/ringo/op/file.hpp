// ringo/op/file.hpp - reading, writing and syncing files (and anything with an fd).
#pragma once

#include <fcntl.h>
#include <sys/uio.h>

#include <cstddef>
#include <type_traits>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// Offset meaning "the file's current position" (needs IORING_FEAT_RW_CUR_POS, 5.6).
inline constexpr std::uint64_t current_pos = ~std::uint64_t{0};

/// IORING_OP_NOP: completes with 0. Measures the cost of the machinery itself.
struct [[nodiscard]] Nop : Op<Nop> {
    /// The opcode submitted: IORING_OP_NOP.
    static constexpr std::uint8_t opcode = uring::compat::opcode::nop;
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_nop(s); }
};
inline Nop nop() noexcept { return {}; }

/// What the last word of a plain read or write SQE holds: nothing, the registered buffer's
/// index (READ_FIXED, WRITE_FIXED), or preadv2/pwritev2 RWF_* flags (READV, WRITEV).
enum class RwExtra { none, buf_index, rw_flags };

/// The shape every plain read and write shares: IORING_OP_<Opcode> on `fd` at `addr` for
/// `len` (bytes, or iovecs for the vectored ones) from offset `off`, plus the one extra
/// field of its kind. Read, Write, ReadFixed, WriteFixed, Readv and Writev are this.
template <std::uint8_t Opcode, class Addr, RwExtra Extra>
struct [[nodiscard]] RwOp : Op<RwOp<Opcode, Addr, Extra>> {
    /// The opcode submitted: `Opcode`.
    static constexpr std::uint8_t opcode = Opcode;
    /// `len`: bytes (clamped to what one request can move, as read(2) does) or iovecs.
    RwOp(FileRef fd, Addr addr, std::size_t len, std::uint64_t off, unsigned extra = 0) noexcept
        : fd_(fd), addr_(addr), len_(std::is_same_v<Addr, const iovec*> ? static_cast<unsigned>(len) : clamp_len(len)),
          off_(off), extra_(extra) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_rw(Opcode, s, fd_.raw(), addr_, len_, off_);
        if constexpr (Extra == RwExtra::buf_index)
            s->buf_index = static_cast<std::uint16_t>(extra_);
        else if constexpr (Extra == RwExtra::rw_flags)
            s->rw_flags = static_cast<int>(extra_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    Addr addr_;
    unsigned len_;
    std::uint64_t off_;
    unsigned extra_;
    ///@}
};

/// IORING_OP_READ (5.6), like pread(2): bytes read (0 at end of file) or -errno.
using Read = RwOp<uring::compat::opcode::read, void*, RwExtra::none>;
inline Read read(FileRef fd, void* buf, std::size_t len, std::uint64_t offset) noexcept {
    return {fd, buf, len, offset};
}

/// IORING_OP_READ with a provided buffer (5.7): the kernel picks a buffer of group `g` (up to
/// `len` bytes); `buffer_id(op.result_flags())` names it. -ENOBUFS when the group is empty.
struct [[nodiscard]] ReadSelect : Op<ReadSelect> {
    /// The opcode submitted: IORING_OP_READ.
    static constexpr std::uint8_t opcode = uring::compat::opcode::read;
    /// Keeps the arguments for prepare(); op::read() makes one.
    ReadSelect(FileRef fd, BufferGroup g, std::size_t len, std::uint64_t off) noexcept
        : fd_(fd), g_(g), len_(clamp_len(len)), off_(off) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_read(s, fd_.raw(), nullptr, len_, off_);
        raw::select_buffer(s, g_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    BufferGroup g_;
    unsigned len_;
    std::uint64_t off_;
    ///@}
};
inline ReadSelect read(FileRef fd, BufferGroup g, std::size_t len, std::uint64_t offset) noexcept {
    return {fd, g, len, offset};
}

/// IORING_OP_READ_FIXED (5.1): like read(), into registered buffer `buf_index` (see
/// buf::BufferTable); [buf, buf+len) must lie inside that buffer, else -EFAULT.
using ReadFixed = RwOp<uring::compat::opcode::read_fixed, void*, RwExtra::buf_index>;
inline ReadFixed read_fixed(FileRef fd, void* buf, std::size_t len, std::uint64_t offset, unsigned buf_index) noexcept {
    return {fd, buf, len, offset, buf_index};
}

/// IORING_OP_WRITE (5.6), like pwrite(2): bytes written or -errno.
using Write = RwOp<uring::compat::opcode::write, const void*, RwExtra::none>;
inline Write write(FileRef fd, const void* buf, std::size_t len, std::uint64_t offset) noexcept {
    return {fd, buf, len, offset};
}

/// IORING_OP_WRITE_FIXED (5.1): like write(), from registered buffer `buf_index`.
using WriteFixed = RwOp<uring::compat::opcode::write_fixed, const void*, RwExtra::buf_index>;
inline WriteFixed write_fixed(FileRef fd, const void* buf, std::size_t len, std::uint64_t offset,
                              unsigned buf_index) noexcept {
    return {fd, buf, len, offset, buf_index};
}

/// IORING_OP_READV (5.1), like preadv2(2). `iov` must stay valid until the await ends.
using Readv = RwOp<uring::compat::opcode::readv, const iovec*, RwExtra::rw_flags>;
inline Readv readv(FileRef fd, const iovec* iov, unsigned iovcnt, std::uint64_t offset, int rwf_flags = 0) noexcept {
    return {fd, iov, iovcnt, offset, static_cast<unsigned>(rwf_flags)};
}

/// IORING_OP_WRITEV (5.1), like pwritev2(2).
using Writev = RwOp<uring::compat::opcode::writev, const iovec*, RwExtra::rw_flags>;
inline Writev writev(FileRef fd, const iovec* iov, unsigned iovcnt, std::uint64_t offset, int rwf_flags = 0) noexcept {
    return {fd, iov, iovcnt, offset, static_cast<unsigned>(rwf_flags)};
}

namespace raw {
/// IORING_OP_READV_FIXED / WRITEV_FIXED (6.15): a vectored transfer whose iovecs all lie in
/// registered buffer `buf_index`.
inline void prep_rwv_fixed(io_uring_sqe* s, std::uint8_t opcode, FileRef fd, const iovec* iov, unsigned n,
                           std::uint64_t off, int rwf, unsigned buf_index) noexcept {
    prep_raw(s, opcode, fd.raw(), reinterpret_cast<std::uint64_t>(iov), n, off);
    s->rw_flags = rwf;
    s->buf_index = static_cast<std::uint16_t>(buf_index);
    fd.apply(s);
}
} // namespace raw

/// READV_FIXED and WRITEV_FIXED share one shape: iovecs inside one registered buffer.
template <std::uint8_t Opcode>
struct [[nodiscard]] RwvFixedOp : Op<RwvFixedOp<Opcode>> {
    /// The opcode submitted: `Opcode`.
    static constexpr std::uint8_t opcode = Opcode;
    /// Keeps the arguments for prepare().
    RwvFixedOp(FileRef fd, const iovec* iov, unsigned n, std::uint64_t off, unsigned idx, int flags) noexcept
        : fd_(fd), iov_(iov), n_(n), off_(off), idx_(idx), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { raw::prep_rwv_fixed(s, Opcode, fd_, iov_, n_, off_, flags_, idx_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const iovec* iov_;
    unsigned n_;
    std::uint64_t off_;
    unsigned idx_;
    int flags_;
    ///@}
};

/// IORING_OP_READV_FIXED (6.15): readv() into iovecs inside registered buffer `buf_index`.
using ReadvFixed = RwvFixedOp<uring::compat::opcode::readv_fixed>;
inline ReadvFixed readv_fixed(FileRef fd, const iovec* iov, unsigned iovcnt, std::uint64_t offset, unsigned buf_index,
                              int rwf_flags = 0) noexcept {
    return {fd, iov, iovcnt, offset, buf_index, rwf_flags};
}

/// IORING_OP_WRITEV_FIXED (6.15): writev() from iovecs inside registered buffer `buf_index`.
using WritevFixed = RwvFixedOp<uring::compat::opcode::writev_fixed>;
inline WritevFixed writev_fixed(FileRef fd, const iovec* iov, unsigned iovcnt, std::uint64_t offset, unsigned buf_index,
                                int rwf_flags = 0) noexcept {
    return {fd, iov, iovcnt, offset, buf_index, rwf_flags};
}

/// Flag for fsync(): sync data only, like fdatasync(2) (IORING_FSYNC_DATASYNC).
inline constexpr unsigned fsync_datasync = 1u << 0;

/// IORING_OP_FSYNC (5.1): 0 or -errno.
struct [[nodiscard]] Fsync : Op<Fsync> {
    /// The opcode submitted: IORING_OP_FSYNC.
    static constexpr std::uint8_t opcode = uring::compat::opcode::fsync;
    /// Keeps the arguments for prepare(); op::fsync() makes one.
    Fsync(FileRef fd, unsigned flags) noexcept : fd_(fd), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_fsync(s, fd_.raw(), flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    unsigned flags_;
    ///@}
};
inline Fsync fsync(FileRef fd, unsigned flags = 0) noexcept { return {fd, flags}; }

/// IORING_OP_FALLOCATE (5.6), like fallocate(2): 0 or -errno.
struct [[nodiscard]] Fallocate : Op<Fallocate> {
    /// The opcode submitted: IORING_OP_FALLOCATE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::fallocate;
    /// Keeps the arguments for prepare(); op::fallocate() makes one.
    Fallocate(FileRef fd, int mode, std::uint64_t off, std::uint64_t len) noexcept
        : fd_(fd), mode_(mode), off_(off), len_(len) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_fallocate(s, fd_.raw(), mode_, static_cast<off_t>(off_), static_cast<off_t>(len_));
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    int mode_;
    std::uint64_t off_, len_;
    ///@}
};
inline Fallocate fallocate(FileRef fd, int mode, std::uint64_t offset, std::uint64_t len) noexcept {
    return {fd, mode, offset, len};
}

/// IORING_OP_FADVISE (5.6), like posix_fadvise(2): 0 or -errno. `len` is 32 bits wide in
/// this opcode; 0 means "to the end of the file".
struct [[nodiscard]] Fadvise : Op<Fadvise> {
    /// The opcode submitted: IORING_OP_FADVISE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::fadvise;
    /// Keeps the arguments for prepare(); op::fadvise() makes one.
    Fadvise(FileRef fd, std::uint64_t off, std::uint32_t len, int advice) noexcept
        : fd_(fd), off_(off), len_(len), advice_(advice) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_fadvise(s, fd_.raw(), off_, static_cast<off_t>(len_), advice_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    std::uint64_t off_;
    std::uint32_t len_;
    int advice_;
    ///@}
};
inline Fadvise fadvise(FileRef fd, std::uint64_t offset, std::uint32_t len, int advice) noexcept {
    return {fd, offset, len, advice};
}

/// IORING_OP_MADVISE (5.6), like madvise(2) on [addr, addr+len): 0 or -errno.
struct [[nodiscard]] Madvise : Op<Madvise> {
    /// The opcode submitted: IORING_OP_MADVISE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::madvise;
    /// Keeps the arguments for prepare(); op::madvise() makes one.
    Madvise(void* addr, std::uint32_t len, int advice) noexcept : addr_(addr), len_(len), advice_(advice) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_madvise(s, addr_, static_cast<off_t>(len_), advice_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    void* addr_;
    std::uint32_t len_;
    int advice_;
    ///@}
};
inline Madvise madvise(void* addr, std::uint32_t len, int advice) noexcept { return {addr, len, advice}; }

/// IORING_OP_SYNC_FILE_RANGE (5.2), like sync_file_range(2): 0 or -errno.
struct [[nodiscard]] SyncFileRange : Op<SyncFileRange> {
    /// The opcode submitted: IORING_OP_SYNC_FILE_RANGE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::sync_file_range;
    /// Keeps the arguments for prepare(); op::sync_file_range() makes one.
    SyncFileRange(FileRef fd, std::uint64_t off, std::uint32_t len, unsigned flags) noexcept
        : fd_(fd), off_(off), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_sync_file_range(s, fd_.raw(), len_, off_, static_cast<int>(flags_));
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    std::uint64_t off_;
    std::uint32_t len_;
    unsigned flags_;
    ///@}
};
inline SyncFileRange sync_file_range(FileRef fd, std::uint64_t offset, std::uint32_t nbytes, unsigned flags) noexcept {
    return {fd, offset, nbytes, flags};
}

/// IORING_OP_FTRUNCATE (6.9), like ftruncate(2): 0 or -errno.
struct [[nodiscard]] Ftruncate : Op<Ftruncate> {
    /// The opcode submitted: IORING_OP_FTRUNCATE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::ftruncate;
    /// Keeps the arguments for prepare(); op::ftruncate() makes one.
    Ftruncate(FileRef fd, std::uint64_t len) noexcept : fd_(fd), len_(len) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, fd_.raw(), 0, 0, len_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    std::uint64_t len_;
    ///@}
};
inline Ftruncate ftruncate(FileRef fd, std::uint64_t length) noexcept { return {fd, length}; }

/// Offset meaning "no offset" for splice(): the pipe side, or the file's current position.
inline constexpr std::int64_t no_offset = -1;

namespace raw {
// splice/tee: the output fd is the SQE's file (IOSQE_FIXED_FILE when registered); the
// input fd is marked registered through SPLICE_F_FD_IN_FIXED.
inline void finish_splice(io_uring_sqe* s, FileRef in, FileRef out) noexcept {
    if (in.fixed())
        s->splice_flags |= uring::compat::splice_f_fd_in_fixed;
    out.apply(s);
}
} // namespace raw

/// IORING_OP_SPLICE (5.7), like splice(2): bytes moved (0 at end of input) or -errno. One
/// side must be a pipe, whose offset must be op::no_offset.
struct [[nodiscard]] Splice : Op<Splice> {
    /// The opcode submitted: IORING_OP_SPLICE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::splice;
    /// Keeps the arguments for prepare(); op::splice() makes one.
    Splice(FileRef in, std::int64_t off_in, FileRef out, std::int64_t off_out, std::uint32_t len,
           unsigned flags) noexcept
        : in_(in), out_(out), off_in_(off_in), off_out_(off_out), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_splice(s, in_.raw(), off_in_, out_.raw(), off_out_, len_, flags_);
        raw::finish_splice(s, in_, out_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef in_, out_;
    std::int64_t off_in_, off_out_;
    std::uint32_t len_;
    unsigned flags_;
    ///@}
};
inline Splice splice(FileRef fd_in, std::int64_t off_in, FileRef fd_out, std::int64_t off_out, std::uint32_t len,
                     unsigned flags = 0) noexcept {
    return {fd_in, off_in, fd_out, off_out, len, flags};
}

/// IORING_OP_TEE (5.8), like tee(2) between two pipes: bytes duplicated or -errno.
struct [[nodiscard]] Tee : Op<Tee> {
    /// The opcode submitted: IORING_OP_TEE.
    static constexpr std::uint8_t opcode = uring::compat::opcode::tee;
    /// Keeps the arguments for prepare(); op::tee() makes one.
    Tee(FileRef in, FileRef out, std::uint32_t len, unsigned flags) noexcept
        : in_(in), out_(out), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_tee(s, in_.raw(), out_.raw(), len_, flags_);
        raw::finish_splice(s, in_, out_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef in_, out_;
    std::uint32_t len_;
    unsigned flags_;
    ///@}
};
inline Tee tee(FileRef fd_in, FileRef fd_out, std::uint32_t len, unsigned flags = 0) noexcept {
    return {fd_in, fd_out, len, flags};
}

/// IORING_OP_PROVIDE_BUFFERS (5.7): hands `nr` buffers of `len` bytes each, laid out back to
/// back from `addr`, to buffer group `bgid` with ids bid, bid+1, ...: 0 or -errno.
struct [[nodiscard]] ProvideBuffers : Op<ProvideBuffers> {
    /// The opcode submitted: IORING_OP_PROVIDE_BUFFERS.
    static constexpr std::uint8_t opcode = uring::compat::opcode::provide_buffers;
    /// Keeps the arguments for prepare(); op::provide_buffers() makes one.
    ProvideBuffers(void* addr, int len, int nr, int bgid, int bid) noexcept
        : addr_(addr), len_(len), nr_(nr), bgid_(bgid), bid_(bid) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_provide_buffers(s, addr_, len_, nr_, bgid_, bid_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    void* addr_;
    int len_, nr_, bgid_, bid_;
    ///@}
};
inline ProvideBuffers provide_buffers(void* addr, int len, int nr, BufferGroup g, int bid) noexcept {
    return {addr, len, nr, g.id, bid};
}

/// IORING_OP_REMOVE_BUFFERS (5.7): takes up to `nr` buffers of group `bgid` back: the number
/// removed, or -ENOENT when the group has none.
struct [[nodiscard]] RemoveBuffers : Op<RemoveBuffers> {
    /// The opcode submitted: IORING_OP_REMOVE_BUFFERS.
    static constexpr std::uint8_t opcode = uring::compat::opcode::remove_buffers;
    /// Keeps the arguments for prepare(); op::remove_buffers() makes one.
    RemoveBuffers(int nr, int bgid) noexcept : nr_(nr), bgid_(bgid) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_remove_buffers(s, nr_, bgid_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int nr_, bgid_;
    ///@}
};
inline RemoveBuffers remove_buffers(int nr, BufferGroup g) noexcept { return {nr, g.id}; }

} // namespace ringo::op
