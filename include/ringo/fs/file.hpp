// ringo/fs/file.hpp - File: an open file whose operations yield ringo::Result.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/fs/aligned_buffer.hpp>
#include <ringo/fs/detail/awaitables.hpp>
#include <ringo/fs/error.hpp>
#include <ringo/fs/metadata.hpp>
#include <ringo/io/detail/exact.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/file_table.hpp>
#include <ringo/op/path.hpp>

namespace ringo::fs {

/// How File::open opens a file. Every field is off by default; set what you need with
/// designated initializers: `File::open(p, {.write = true, .create = true})`.
///
/// Access: read and write (or append) asked together is O_RDWR, write or append alone
/// O_WRONLY, and neither O_RDONLY (so `{}` opens for reading). O_CLOEXEC is always set.
/// `truncate` without write access is EINVAL (as in Rust's OpenOptions; Linux leaves
/// O_TRUNC|O_RDONLY unspecified).
struct OpenOptions {
    bool read = false;      ///< read access
    bool write = false;     ///< write access
    bool append = false;    ///< O_APPEND (implies write): every write goes to the end, whatever its offset
    bool create = false;    ///< O_CREAT: create the file when missing, with the mode File::open is given
    bool truncate = false;  ///< O_TRUNC: empty the file (needs write or append)
    bool exclusive = false; ///< O_CREAT|O_EXCL: create it, EEXIST when it exists already
    bool direct = false;    ///< O_DIRECT: no page cache; buffers, sizes, offsets aligned (see AlignedBuffer)
    int custom_flags = 0;   ///< more open(2) flags ORed in (O_NOATIME, O_SYNC, O_NOFOLLOW, ...)

    /// The open(2) flags, or EINVAL for a contradictory set.
    [[nodiscard]] Result<int> flags() const noexcept {
        bool w = write || append;
        if (truncate && !w)
            return std::make_error_code(std::errc::invalid_argument);
        int f = (read && w) ? O_RDWR : w ? O_WRONLY : O_RDONLY;
        if (append)
            f |= O_APPEND;
        if (create || exclusive)
            f |= O_CREAT;
        if (exclusive)
            f |= O_EXCL;
        if (truncate)
            f |= O_TRUNC;
        if (direct)
            f |= O_DIRECT;
        return f | custom_flags | O_CLOEXEC;
    }
};

class File;

namespace detail {
/// What File::open returns: one IORING_OP_OPENAT, yielding Result<File>.
class [[nodiscard]] OpenAwait {
public:
    OpenAwait(const char* path, Result<int> flags, mode_t mode) noexcept
        : err_(flags.error()), path_(path), op_(AT_FDCWD, path, flags.value_or(0), mode) {}
    bool await_ready() const noexcept { return static_cast<bool>(err_); } // bad options: no operation
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return op_.await_suspend(h);
    }
    inline Result<File> await_resume() noexcept;

private:
    std::error_code err_;
    const char* path_; // for an error's note ("open /etc/missing")
    op::Openat op_;
};

/// What File::truncate returns: IORING_OP_FTRUNCATE (6.9), or ftruncate(2) on a kernel
/// without it.
class [[nodiscard]] TruncateAwait {
public:
    TruncateAwait(op::FileRef f, int fd, std::uint64_t len) noexcept : fd_(fd), len_(len), op_(f, len) {}
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return op_.await_suspend(h);
    }
    Result<void> await_resume() noexcept {
        int r = op_.await_resume();
        if (r == -EOPNOTSUPP) // the probe lacks the opcode (before 6.9)
            r = ::ftruncate(fd_, static_cast<off_t>(len_)) == 0 ? 0 : -errno;
        return Result<void>::from_res(r, ringo::detail::what::truncate);
    }

private:
    int fd_;
    std::uint64_t len_;
    op::Ftruncate op_;
};
namespace what = ringo::detail::what;
using ReadAt = ResultOp<op::Read, std::size_t, what::read>;
using WriteAt = ResultOp<op::Write, std::size_t, what::write>;
using ReadAtFixed = ResultOp<op::ReadFixed, std::size_t, what::read>;
using WriteAtFixed = ResultOp<op::WriteFixed, std::size_t, what::write>;
using SyncAwait = ResultOp<op::Fsync, void, what::fsync>;
using AllocateAwait = ResultOp<op::Fallocate, void, what::fallocate>;
using MetadataAwait = StatxAwait<YieldMetadata>;
using SizeAwait = StatxAwait<YieldSize>;
} // namespace detail

/// An open file: owns its descriptor (an Fd, closed when the File goes, on every path) and
/// gives the file's operations as awaitables yielding ringo::Result: a value, or the
/// std::error_code of the failure (the kernel's errno in std::system_category(), or an
/// fs::Error for a read that met the end of the file too early or a write that moved
/// nothing). Offsets are explicit (positional I/O, like pread/pwrite): a File has no cursor.
///
/// What each call costs: read_at, write_at, the fixed-buffer forms, sync, datasync, allocate,
/// truncate, metadata, size and open are one io_uring operation awaited directly (no
/// coroutine frame, no allocation); so are read_exact_at and write_all_at, which go to the
/// kernel again after a short transfer before the task resumes. read_to_end and close are
/// Tasks: one frame from ringo's frame pool per call (no heap allocation once the pool is
/// warm), a loop of operations inside; read_to_end also allocates its string.
///
/// Buffers and the File must stay valid until the await ends. In a cancelled task every
/// operation yields ECANCELED without being submitted, except close(), which always closes.
///
///     auto f = co_await fs::File::open("data.bin");
///     if (!f) co_return f.failure();
///     std::array<std::byte, 4096> buf;
///     auto n = co_await f->read_at(buf, 0);
class File {
public:
    File() noexcept = default;
    /// Takes ownership of an open descriptor.
    explicit File(Fd fd) noexcept : fd_(std::move(fd)), ref_(fd_.get()) {}
    /// Takes `o`'s descriptor (and registered slot) over; `o` is left closed.
    File(File&& o) noexcept : fd_(std::move(o.fd_)), ref_(std::exchange(o.ref_, op::FileRef(-1))) {}
    /// Closes this File's descriptor (as Fd's assignment does), then takes `o`'s over.
    File& operator=(File&& o) noexcept {
        if (this != &o) {
            fd_ = std::move(o.fd_);
            ref_ = std::exchange(o.ref_, op::FileRef(-1));
        }
        return *this;
    }

    /// Opens `path` (one IORING_OP_OPENAT): read-only with `{}`; `mode` is used when the
    /// file is created (masked by the umask). Errors: ENOENT, EACCES, EISDIR (a directory
    /// opened for writing), EEXIST (exclusive), EMFILE (the descriptor limit), EINVAL
    /// (truncate without write access; O_DIRECT on a file system without it), ...
    static detail::OpenAwait open(PathRef path, OpenOptions o = {}, mode_t mode = 0644) noexcept {
        return {path.c_str(), o.flags(), mode};
    }
    /// Opens `path` for writing, creating it or emptying it (O_WRONLY|O_CREAT|O_TRUNC).
    static detail::OpenAwait create(PathRef path, mode_t mode = 0644) noexcept {
        return open(path, {.write = true, .create = true, .truncate = true}, mode);
    }

    /// Reads up to `buf.size()` bytes at `offset`: the count read (0 at the end of the file).
    /// One IORING_OP_READ, as op::read.
    detail::ReadAt read_at(std::span<std::byte> buf, std::uint64_t offset) noexcept {
        return read_at(buf.data(), buf.size(), offset);
    }
    /// read_at() into `len` bytes at `buf`.
    detail::ReadAt read_at(void* buf, std::size_t len, std::uint64_t offset) noexcept {
        return detail::ReadAt(ref(), buf, len, offset);
    }
    /// Writes up to `buf.size()` bytes at `offset` (at the end with append): the count
    /// written, which may be short. One IORING_OP_WRITE.
    detail::WriteAt write_at(std::span<const std::byte> buf, std::uint64_t offset) noexcept {
        return write_at(buf.data(), buf.size(), offset);
    }
    /// write_at() of the string's bytes.
    detail::WriteAt write_at(std::string_view s, std::uint64_t offset) noexcept {
        return write_at(s.data(), s.size(), offset);
    }
    /// write_at() of `len` bytes at `buf`.
    detail::WriteAt write_at(const void* buf, std::size_t len, std::uint64_t offset) noexcept {
        return detail::WriteAt(ref(), buf, len, offset);
    }

    /// Fills `buf` from `offset`, reading again after short reads. The end of the file first
    /// is fs::Error::unexpected_eof (the bytes read so far are in `buf`).
    auto read_exact_at(std::span<std::byte> buf, std::uint64_t offset) {
        return ringo::detail::ExactAwait(
            [this, buf, offset](std::size_t done) {
                return op::read(ref(), buf.data() + done, buf.size() - done, advance(offset, done));
            },
            buf.size(), Error::unexpected_eof, ringo::detail::FailNote<detail::what::read>{});
    }
    /// Writes all of `buf` at `offset`, writing again after short writes. A write that moves
    /// nothing is fs::Error::write_zero; a full file system is ENOSPC (what was written
    /// before stays written).
    auto write_all_at(std::span<const std::byte> buf, std::uint64_t offset) {
        return ringo::detail::ExactAwait(
            [this, buf, offset](std::size_t done) {
                return op::write(ref(), buf.data() + done, buf.size() - done, advance(offset, done));
            },
            buf.size(), Error::write_zero, ringo::detail::FailNote<detail::what::write>{});
    }
    /// write_all_at() of the string's bytes.
    auto write_all_at(std::string_view s, std::uint64_t offset) {
        return write_all_at(std::as_bytes(std::span<const char>(s.data(), s.size())), offset);
    }
    /// The file's bytes from `offset` to its end, in a string sized once from the file's
    /// size (a statx) and grown while reads still find data (a file that grows, or /proc's
    /// files that say 0): usually the statx and two reads.
    Task<Result<std::string>> read_to_end(std::uint64_t offset = 0);

    /// Reads into registered buffer `buf_index` of the runtime's buf::BufferTable (`buf`
    /// must lie inside it, else EFAULT): one IORING_OP_READ_FIXED.
    detail::ReadAtFixed read_at_fixed(std::span<std::byte> buf, std::uint64_t offset, unsigned buf_index) noexcept {
        return detail::ReadAtFixed(ref(), buf.data(), buf.size(), offset, buf_index);
    }
    /// Writes from registered buffer `buf_index`: one IORING_OP_WRITE_FIXED.
    detail::WriteAtFixed write_at_fixed(std::span<const std::byte> buf, std::uint64_t offset,
                                        unsigned buf_index) noexcept {
        return detail::WriteAtFixed(ref(), buf.data(), buf.size(), offset, buf_index);
    }

    /// Puts this file in slot `slot` of the runtime's registered file table (a synchronous
    /// io_uring_register(2)); from then on every operation of this File names the slot
    /// (IOSQE_FIXED_FILE) instead of the descriptor. EBADF when the File is closed; ENXIO
    /// when no table is registered; EINVAL for a slot past its end. close() empties the
    /// slot; a File destroyed without close() leaves it holding the file until the slot is
    /// updated or the table unregistered.
    Result<void> register_in(op::FileTable& table, unsigned slot) noexcept {
        if (!fd_)
            return std::make_error_code(std::errc::bad_file_descriptor);
        int fd = fd_.get();
        int r = table.update(slot, std::span<const int>(&fd, 1));
        if (r < 0)
            return errno_code(r);
        ref_ = op::Fixed{slot};
        return {};
    }
    /// The registered slot this File's operations use, or -1.
    [[nodiscard]] int registered_slot() const noexcept { return ref_.fixed() ? ref_.raw() : -1; }

    /// fsync(2): data and metadata reach the device.
    detail::SyncAwait sync() noexcept { return detail::SyncAwait(ref(), 0u); }
    /// fdatasync(2): data (and the metadata needed to read it back) reach the device.
    detail::SyncAwait datasync() noexcept { return detail::SyncAwait(ref(), op::fsync_datasync); }
    /// fallocate(2) mode 0: reserves [offset, offset+len), growing the file when it ends
    /// before (ENOSPC when the file system is full; EOPNOTSUPP where not supported).
    detail::AllocateAwait allocate(std::uint64_t offset, std::uint64_t len) noexcept {
        return detail::AllocateAwait(ref(), 0, offset, len);
    }
    /// Sets the file's length to `len` (IORING_OP_FTRUNCATE, or ftruncate(2) before 6.9).
    /// EINVAL when not open for writing.
    detail::TruncateAwait truncate(std::uint64_t len) noexcept { return detail::TruncateAwait(ref(), fd_.get(), len); }
    /// The file's Metadata (one IORING_OP_STATX on the descriptor).
    detail::MetadataAwait metadata() const noexcept { return detail::MetadataAwait(fd_.get(), "", AT_EMPTY_PATH); }
    /// The file's size in bytes (one IORING_OP_STATX).
    detail::SizeAwait size() const noexcept { return detail::SizeAwait(fd_.get(), "", AT_EMPTY_PATH); }

    /// Closes the file now and reports the close's error (the destructor cannot): empties
    /// its registered slot if it has one, then closes the descriptor. EBADF when there was
    /// none. Runs in a cancelled task too (close is a release operation). Afterwards the
    /// File owns nothing and every operation on it yields EBADF.
    Task<Result<void>> close();

    /// The descriptor (-1 when closed).
    [[nodiscard]] int get() const noexcept { return fd_.get(); }
    /// The owned descriptor (to pass to an op::).
    [[nodiscard]] const Fd& fd() const noexcept { return fd_; }
    /// Takes the descriptor out: the caller owns it, and the File is closed (a registered
    /// slot keeps its own reference to the file until it is emptied).
    [[nodiscard]] Fd take_fd() noexcept {
        ref_ = op::FileRef(-1);
        return std::move(fd_);
    }
    /// True while it owns a descriptor.
    [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
    /// is_open().
    explicit operator bool() const noexcept { return fd_.valid(); }
    /// What this File's operations name: its registered slot, or its descriptor.
    [[nodiscard]] op::FileRef ref() const noexcept { return ref_; }

private:
    // `offset + n`, except that op::current_pos ("the file's position") stays itself.
    static std::uint64_t advance(std::uint64_t offset, std::size_t n) noexcept {
        return offset == op::current_pos ? offset : offset + n;
    }

    Fd fd_;
    op::FileRef ref_{-1}; // what operations name: kept with fd_ (no branch per operation)
};

inline Result<File> detail::OpenAwait::await_resume() noexcept {
    if (err_)
        return Result<File>(err_, ringo::detail::ErrorNote::made(detail::what::open, path_));
    int r = op_.await_resume();
    if (r < 0)
        return Result<File>(errno_code(r), ringo::detail::ErrorNote::made(detail::what::open, path_));
    return File(Fd(r));
}

} // namespace ringo::fs
