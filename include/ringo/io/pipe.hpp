// ringo/io/pipe.hpp - pipes: ringo::pipe(), PipeReader and PipeWriter, and the standard streams.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/io/detail/exact.hpp>
#include <ringo/io/detail/result_op.hpp>
#include <ringo/io/error.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/owns_fd.hpp>
#include <ringo/io/read_to_end.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/pipe.hpp>

namespace ringo {

namespace detail {

/// pwritev2's RWF_NOSIGNAL (a recent flag, which 6.18 has; older headers lack it): a write to a pipe or socket
/// whose reader has gone fails with EPIPE without raising SIGPIPE.
inline constexpr int rwf_nosignal = 0x00000100;

/// The RWF_* flags of a pipe write: RWF_NOSIGNAL when the kernel takes it. Found out once per
/// process (a pwritev2 into a pipe whose read end is closed: EPIPE with the flag known,
/// EOPNOTSUPP without); a kernel without it has SIGPIPE set to ignored at that moment when
/// it was at its default (killing the process), as the Rust runtime does at start.
inline int pipe_write_flags() noexcept {
    static std::atomic<int> known{-1};
    int f = known.load(std::memory_order_relaxed);
    if (f >= 0) [[likely]]
        return f;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
        return rwf_nosignal; // cannot tell now (out of descriptors): ask again next time
    ::close(p[0]);
    char c = 0;
    iovec v{&c, 1};
    ssize_t r = ::pwritev2(p[1], &v, 1, -1, rwf_nosignal);
    int e = errno;
    ::close(p[1]);
    if (r < 0 && e == EOPNOTSUPP) { // a kernel without the flag
        struct sigaction old {};
        if (::sigaction(SIGPIPE, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
            ::signal(SIGPIPE, SIG_IGN);
        f = 0;
    } else {
        f = rwf_nosignal;
    }
    known.store(f, std::memory_order_relaxed);
    return f;
}

/// IORING_OP_WRITE at the file's position with RWF_* flags (op::write has none): what
/// PipeWriter::write submits, with RWF_NOSIGNAL.
struct [[nodiscard]] WriteFlags : op::Op<WriteFlags> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::write;
    WriteFlags(op::FileRef fd, const void* buf, std::size_t len, int rwf) noexcept
        : fd_(fd), buf_(buf), len_(op::clamp_len(len)), rwf_(rwf) {}
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_rw(opcode, s, fd_.raw(), buf_, len_, op::current_pos);
        s->rw_flags = rwf_;
        fd_.apply(s);
    }
    op::FileRef fd_;
    const void* buf_;
    unsigned len_;
    int rwf_;
};

using PipeRead = ResultOp<op::Read, std::size_t, what::read>;
using PipeWrite = ResultOp<WriteFlags, std::size_t, what::write>;

class PipeAwait;

} // namespace detail

/// The read end of a pipe, or any descriptor read as a stream (a terminal, a socket, a file
/// read from its position). Owns its descriptor (an Fd: closed when the reader goes, on
/// every path).
///
/// Costs: read and close are one operation awaited directly (no frame, no allocation);
/// read_exact too (no frame: one read, and another after each short read).
/// In a cancelled task every operation yields ECANCELED without being submitted, except
/// close(), which always closes; a read waiting for data is interrupted by the cancellation.
class PipeReader : public OwnsFd<PipeReader>, public ReadsToEnd<PipeReader> {
public:
    PipeReader() noexcept = default;
    /// Takes ownership of `fd` (of a pipe's read end, or anything readable).
    explicit PipeReader(Fd fd) noexcept : OwnsFd(std::move(fd)) {}

    /// Reads up to `len` bytes: the count, 0 once every writer has closed its end and the
    /// pipe is empty (end of stream). One IORING_OP_READ at the file's position.
    detail::PipeRead read(void* buf, std::size_t len) noexcept {
        return detail::PipeRead(op::FileRef(fd_), buf, len, op::current_pos);
    }
    /// read() into `buf`.
    detail::PipeRead read(std::span<std::byte> buf) noexcept { return read(buf.data(), buf.size()); }

    /// Fills `buf`, reading again after short reads. The end of the stream first is
    /// IoError::unexpected_eof (the bytes read so far are in `buf`).
    auto read_exact(void* buf, std::size_t len) {
        auto* p = static_cast<std::byte*>(buf);
        return detail::ExactAwait(
            [this, p, len](std::size_t done) { return op::read(fd_, p + done, len - done, op::current_pos); }, len,
            IoError::unexpected_eof, detail::FailNote<detail::what::read>{});
    }
    /// read_exact() into `buf`.
    auto read_exact(std::span<std::byte> buf) { return read_exact(buf.data(), buf.size()); }
};

/// The write end of a pipe, or any descriptor written as a stream (a terminal, a socket, a
/// file written at its position). Owns its descriptor.
///
/// Writes never raise SIGPIPE: a write after every reader has closed yields EPIPE
/// (std::errc::broken_pipe). Each write carries RWF_NOSIGNAL (a recent kernel flag, which
/// 6.18 has); on a kernel without it, the first PipeWriter write sets SIGPIPE to ignored
/// when it was at its default.
///
/// Costs: write and close are one operation awaited directly (no frame, no allocation);
/// write_all too (no frame: one write, and another after each short write). A write of
/// up to PIPE_BUF (4096) bytes to a pipe is atomic: it is not interleaved with other writers.
class PipeWriter : public OwnsFd<PipeWriter> {
public:
    PipeWriter() noexcept = default;
    /// Takes ownership of `fd` (of a pipe's write end, or anything writable).
    explicit PipeWriter(Fd fd) noexcept : OwnsFd(std::move(fd)) {}

    /// Writes up to `len` bytes: the count written, which may be short. One IORING_OP_WRITE
    /// at the file's position (RWF_NOSIGNAL). EPIPE when the pipe has no reader left.
    detail::PipeWrite write(const void* buf, std::size_t len) noexcept {
        return detail::PipeWrite(op::FileRef(fd_), buf, len, detail::pipe_write_flags());
    }
    /// write() of `buf`'s bytes.
    detail::PipeWrite write(std::span<const std::byte> buf) noexcept { return write(buf.data(), buf.size()); }
    /// write() of the string's bytes (no terminating NUL).
    detail::PipeWrite write(std::string_view s) noexcept { return write(s.data(), s.size()); }

    /// Writes all of `buf`, writing again after short writes. A write that moves nothing is
    /// IoError::write_zero; a pipe without a reader is EPIPE (what was written before is in
    /// the pipe).
    auto write_all(const void* buf, std::size_t len) {
        const auto* p = static_cast<const std::byte*>(buf);
        int rwf = detail::pipe_write_flags();
        return detail::ExactAwait(
            [this, p, len, rwf](std::size_t done) { return detail::WriteFlags(fd_, p + done, len - done, rwf); }, len,
            IoError::write_zero, detail::FailNote<detail::what::write>{});
    }
    /// write_all() of `buf`'s bytes.
    auto write_all(std::span<const std::byte> buf) { return write_all(buf.data(), buf.size()); }
    /// The string's bytes must stay valid until the await ends (a temporary inside the
    /// co_await statement does; one kept in an awaitable for later does not).
    auto write_all(std::string_view s) { return write_all(s.data(), s.size()); }
};

/// Both ends of a new pipe: `auto [reader, writer] = std::move(*p);`
struct PipeEnds {
    PipeReader reader; ///< the read end
    PipeWriter writer; ///< the write end
};

namespace detail {
/// What ringo::pipe() returns: IORING_OP_PIPE (6.16) into descriptors held by the awaitable
/// (in the awaiting frame), or pipe2(2) where the probe lacks the opcode or no runtime runs.
/// The kernel writes into it, so it is not copied, and moved only before it is awaited (as
/// with_timeout, when_all and when_any do): the operation is pointed at the descriptors in
/// await_suspend, not before. (A move hands over any descriptor it holds all the same.)
class [[nodiscard]] PipeAwait {
public:
    PipeAwait() noexcept : op_(nullptr, O_CLOEXEC, 0, false) {}
    PipeAwait(PipeAwait&& o) noexcept
        : fds_{std::exchange(o.fds_[0], -1), std::exchange(o.fds_[1], -1)}, op_(std::move(o.op_)) {}
    PipeAwait(const PipeAwait&) = delete;
    PipeAwait& operator=(const PipeAwait&) = delete;
    // A pipe the kernel made but nobody took: its frame was destroyed after the CQE came
    // and before the task resumed (a runtime destroyed with the operation in flight).
    ~PipeAwait() {
        close_soon(fds_[0]);
        close_soon(fds_[1]);
    }
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        op_.fds_ = fds_;
        return op_.await_suspend(h);
    }
    Result<PipeEnds> await_resume() noexcept {
        int r = op_.await_resume();
        if (r == -EOPNOTSUPP || r == -ENXIO) // before 6.16, or outside a runtime
            r = ::pipe2(fds_, O_CLOEXEC) == 0 ? 0 : -errno;
        if (r < 0)
            return Result<PipeEnds>(errno_code(r), "pipe");
        return PipeEnds{PipeReader(Fd(std::exchange(fds_[0], -1))), PipeWriter(Fd(std::exchange(fds_[1], -1)))};
    }

private:
    int fds_[2] = {-1, -1};
    op::Pipe op_;
};
} // namespace detail

/// A new pipe (O_CLOEXEC, blocking: fit to hand to a child process): its read and write
/// ends, or EMFILE/ENFILE when out of descriptors. One IORING_OP_PIPE (Linux 6.16), or
/// pipe2(2) on an older kernel or outside a runtime; no frame, no allocation.
///
///     auto p = co_await ringo::pipe();
///     if (!p) co_return p.failure();
///     auto [reader, writer] = std::move(*p);
inline detail::PipeAwait pipe() noexcept { return {}; }

/// The standard input as a PipeReader over a copy of descriptor 0 (closing it leaves the
/// process's stdin open). Reads go to the same open file, so they share its position and
/// data with anything else reading descriptor 0 (stdio's buffer included: do not mix).
inline Result<PipeReader> stdin_reader() noexcept { return PipeReader::dup_of(STDIN_FILENO); }
/// The standard output as a PipeWriter over a copy of descriptor 1 (stdio's own buffer is
/// separate: fflush(stdout) before mixing the two).
inline Result<PipeWriter> stdout_writer() noexcept { return PipeWriter::dup_of(STDOUT_FILENO); }
/// The standard error as a PipeWriter over a copy of descriptor 2.
inline Result<PipeWriter> stderr_writer() noexcept { return PipeWriter::dup_of(STDERR_FILENO); }

} // namespace ringo
