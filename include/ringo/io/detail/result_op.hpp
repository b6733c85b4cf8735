// ringo/io/detail/result_op.hpp - an operation awaited as it is, yielding a Result.
#pragma once

#include <coroutine>
#include <utility>

#include <ringo/io/result.hpp>

namespace ringo::detail {

/// Operation `O` awaited as it is (same SQE, same await path: nothing is added but the
/// conversion of its result), its int result turned into Result<T> by result_of (the count
/// for T = std::size_t, success for void). It holds the operation rather than deriving from
/// it, so the composition layer treats it as an awaitable yielding a Result (when_all runs it
/// as a branch) rather than as a bare operation yielding an int. Shared by fs:: and net::.
template <class O, class T>
class [[nodiscard]] ResultOp {
public:
    template <class... A>
    explicit ResultOp(A&&... a) noexcept : op_(std::forward<A>(a)...) {}
    bool await_ready() const noexcept { return false; }
    template <class P>
    [[gnu::always_inline]] bool await_suspend(std::coroutine_handle<P> h) {
        return op_.await_suspend(h);
    }
    Result<T> await_resume() noexcept { return result_of<T>(op_.await_resume()); }

private:
    O op_;
};

} // namespace ringo::detail
