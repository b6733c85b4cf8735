// ringo/io/detail/owns_fd.hpp - what every stream type that owns one descriptor has.
#pragma once

#include <fcntl.h>

#include <cerrno>
#include <utility>

#include <ringo/io/detail/close.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>

namespace ringo::detail {

/// The base of a stream type `Derived` that owns one descriptor (PipeReader, PipeWriter):
/// the Fd, closing it now, taking it out, and wrapping a copy of a descriptor. `Derived`
/// has a public `explicit Derived(Fd)`.
template <class Derived>
class OwnsFd {
public:
    /// A `Derived` over a copy of `fd` (fcntl F_DUPFD_CLOEXEC, one system call): closing it
    /// leaves `fd` open. EBADF for a descriptor that is not open, EMFILE when out of them.
    static Result<Derived> dup_of(int fd) noexcept {
        int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0)
            return errno_code(errno);
        return Derived(Fd(d));
    }

    /// Closes it now and reports the close's error (EBADF when it owned none): Fd::close, a
    /// release operation (it runs in a cancelled task too). Afterwards every operation
    /// yields EBADF.
    CloseResult close() noexcept { return CloseResult(fd_.release()); }

    /// The owned descriptor (to pass to an op::).
    [[nodiscard]] const Fd& fd() const noexcept { return fd_; }
    /// Takes the descriptor out: the caller owns it, and this one is closed.
    [[nodiscard]] Fd take_fd() noexcept { return std::move(fd_); }
    [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
    explicit operator bool() const noexcept { return fd_.valid(); }

protected:
    OwnsFd() noexcept = default;
    explicit OwnsFd(Fd fd) noexcept : fd_(std::move(fd)) {}

    Fd fd_;
};

} // namespace ringo::detail
