// ringo/io/detail/close.hpp - Fd::close awaited as it is, yielding Result<void>.
#pragma once

#include <coroutine>

#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>

namespace ringo::detail {

/// What a stream's close() returns: Fd::close (a release operation: it runs in a cancelled
/// task too, and is not interrupted), its result as a Result<void> (EBADF when `fd` is
/// negative: nothing was open). No frame, no allocation.
class [[nodiscard]] CloseResult {
public:
    explicit CloseResult(int fd) noexcept : close_(fd) {}
    bool await_ready() noexcept { return close_.await_ready(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return close_.await_suspend(h);
    }
    Result<void> await_resume() noexcept { return Result<void>::from_res(close_.await_resume(), "close"); }

private:
    FdClose close_;
};

} // namespace ringo::detail
