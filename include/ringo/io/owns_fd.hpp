// ringo/io/owns_fd.hpp - what every stream and socket type that owns one descriptor has.
#pragma once

#include <fcntl.h>

#include <cerrno>
#include <utility>

#include <ringo/io/detail/close.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>

namespace ringo {

/// The base of a type `Derived` that owns one descriptor (PipeReader, PipeWriter and every
/// socket type of ringo::net): the Fd, closing it now, taking it out, and wrapping a copy of
/// a descriptor. `Derived` has a public `explicit Derived(Fd)`. The descriptor is closed when
/// the object goes, on every path (Fd's destructor).
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
    detail::CloseResult close() noexcept { return detail::CloseResult(fd_.release()); }

    /// The owned descriptor (to pass to an op::).
    [[nodiscard]] const Fd& fd() const noexcept { return fd_; }
    /// Takes the descriptor out: the caller owns it, and this one is closed.
    [[nodiscard]] Fd take_fd() noexcept { return std::move(fd_); }
    /// True while it owns a descriptor (false once closed, taken out or moved from).
    [[nodiscard]] bool is_open() const noexcept { return fd_.valid(); }
    /// is_open().
    explicit operator bool() const noexcept { return fd_.valid(); }

protected:
    OwnsFd() noexcept = default;
    /// Owns `fd` (the derived type's `explicit Derived(Fd)` passes it on).
    explicit OwnsFd(Fd fd) noexcept : fd_(std::move(fd)) {}

    Fd fd_; ///< the owned descriptor (empty when closed, taken out or moved from)
};

} // namespace ringo
