// ringo/io/fd.hpp - Fd: an owned file descriptor that closes itself.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <coroutine>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/op/path.hpp>

namespace ringo {

/// Closes `fd` without waiting: through the ring of the runtime driving this thread (an
/// IORING_OP_CLOSE that goes with the loop's next submission, no system call of its own), or
/// with close(2) when there is none, it is shutting down, its kernel lacks the opcode, or its
/// ring is polled by a kernel thread (SQPOLL: a close that thread has not taken yet when the
/// ring goes would be lost).
/// Never fails visibly (a close error has no one to report to, as in a destructor).
inline void close_soon(int fd) noexcept {
    if (fd < 0)
        return;
    if (Runtime* rt = Runtime::current();
        rt && rt->supports(uring::compat::opcode::close) && !(rt->setup_flags() & uring::compat::setup::sqpoll)) {
        try {
            if (io_uring_sqe* s = detail::RuntimeAccess::unawaited_sqe(*rt)) {
                io_uring_prep_close(s, fd);
                s->user_data = 0; // nobody awaits it: its CQE is dropped
                return;
            }
        } catch (...) { // the kernel refused to take the full SQ: close it here instead
        }
    }
    (void)::close(fd);
}

namespace detail {
/// Tells the epoll engine of the runtime driving this thread (if any) that an Fd took `fd`
/// (`owned`) or gave it up: a descriptor an Fd owns closes through the engine, which can
/// therefore register it once for its life instead of at each wait.
inline void note_fd_owner(int fd, bool owned) noexcept {
    if (fd < 0)
        return;
    if (Runtime* rt = Runtime::current(); rt && rt->engine() == Engine::epoll) [[unlikely]]
        RuntimeAccess::engine(*rt).ring.own_fd(fd, owned);
}
} // namespace detail

/// What Fd::close() returns: awaits the close (0 or -errno). Through the ring on a runtime,
/// where it is a release operation (it also runs in a cancelled task, uninterrupted);
/// close(2) where there is no runtime or the kernel lacks IORING_OP_CLOSE.
class [[nodiscard]] FdClose {
public:
    /// The result is 0 or -errno, as for every operation (with_timeout and the groups read it
    /// so).
    static constexpr bool errno_result = true; // 0 or -errno
    /// A close of `fd` (Fd::close makes it; a negative `fd` yields -EBADF).
    explicit FdClose(int fd) noexcept : fd_(fd), op_(fd) {}
    /// Ready (closed synchronously) when there is nothing to close or no runtime on this
    /// thread.
    bool await_ready() noexcept {
        sync_ = fd_ < 0 || Runtime::current() == nullptr;
        return sync_;
    }
    template <class P>
    /// Submits IORING_OP_CLOSE.
    bool await_suspend(std::coroutine_handle<P> h) {
        return op_.await_suspend(h);
    }
    /// 0 or -errno (EBADF for nothing to close; EIO, EINTR as close(2) reports them).
    int await_resume() noexcept {
        if (sync_)
            return close_now();
        int r = op_.await_resume();
        return r == -EOPNOTSUPP ? close_now() : r; // a kernel before 5.6
    }

private:
    int close_now() const noexcept {
        if (fd_ < 0)
            return -EBADF;
        return ::close(fd_) == 0 ? 0 : -errno;
    }
    int fd_;
    bool sync_ = false;
    op::Close op_;
};

/// An owned file descriptor: move-only, and closed when it goes (destroyed or assigned
/// over), on every path: a normal return, an exception, a cancelled task, a runtime's
/// shutdown destroying the frame that holds it. On a thread that drives a runtime the
/// destructor closes through the ring without waiting (close_soon: the close goes with the
/// loop's next submission, and block_on submits it before returning); elsewhere with
/// close(2). `co_await fd.close()` closes now and yields the result.
///
/// It converts to op::FileRef, so it goes wherever an operation takes a descriptor:
///
///     ringo::Fd fd(co_await op::socket(AF_INET, SOCK_STREAM, 0)); // a negative result stays -errno in fd.get()
///     co_await op::send(fd, "hi", 2);
///     // closed when fd goes out of scope, or: int r = co_await fd.close();
class Fd {
public:
    Fd() noexcept = default;
    /// Takes ownership of `fd`. A negative value (a -errno result, or -1) owns nothing. On
    /// the epoll engine, the runtime of this thread then registers the descriptor with epoll
    /// once for its life, as it does the ones it makes (accept, socket), not at each wait: a
    /// descriptor an Fd owns closes through it.
    explicit Fd(int fd) noexcept : fd_(fd) { detail::note_fd_owner(fd, true); }
    /// Takes `o`'s descriptor over; `o` owns none.
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    /// Closes the descriptor it owns (as the destructor does), then takes `o`'s over.
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            int old = std::exchange(fd_, std::exchange(o.fd_, -1));
            if (old != fd_)
                close_soon(old);
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { close_soon(fd_); }

    /// The descriptor, or a negative value when it owns none.
    [[nodiscard]] int get() const noexcept { return fd_; }
    /// True when it owns a descriptor.
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    /// valid().
    explicit operator bool() const noexcept { return fd_ >= 0; }
    /// The descriptor, to pass to any operation (`co_await op::read(fd, ...)`).
    operator op::FileRef() const noexcept { return op::FileRef(fd_); } // NOLINT: pass it to any operation

    /// Gives up ownership: returns the descriptor, which the caller now closes.
    [[nodiscard]] int release() noexcept {
        detail::note_fd_owner(fd_, false);
        return std::exchange(fd_, -1);
    }
    /// Closes what it owns (as the destructor does) and takes `fd` instead.
    void reset(int fd = -1) noexcept {
        int old = std::exchange(fd_, fd);
        if (old != fd) {
            close_soon(old);
            detail::note_fd_owner(fd, true);
        }
    }
    /// Closes it now: `co_await fd.close()` yields 0 or -errno (-EBADF when it owns none).
    /// The Fd owns nothing from here on, whatever the result.
    FdClose close() noexcept { return FdClose(std::exchange(fd_, -1)); }

private:
    int fd_ = -1;
};

} // namespace ringo
