// ringo/io/detail/exact.hpp - the loop behind every read_exact / write_all of the I/O layer.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/io/error.hpp>
#include <ringo/io/result.hpp>

namespace ringo::detail {

/// Moves `len` bytes in steps: awaits `step(done)` (`done`: the bytes moved so far) until
/// they have all moved. A step is an awaitable yielding either a kernel int (a count, or
/// -errno: an op:: operation) or a Result<std::size_t> (a stream's read or write). A step
/// that moves nothing is `on_zero` (IoError::unexpected_eof for reads, write_zero for
/// writes); an error ends the loop. `*moved` (when given) holds the bytes moved so far,
/// also after an error. One frame from the frame pool per call.
///
/// A member function returns this Task itself (it is not a coroutine of its own), so a
/// read_exact costs one frame, not two:
///
///     Task<Result<void>> read_exact(void* buf, std::size_t len) {
///         auto* p = static_cast<std::byte*>(buf);
///         return detail::exact_loop([this, p, len](std::size_t done) {
///             return op::recv(fd_, p + done, len - done, 0);
///         }, len, IoError::unexpected_eof);
///     }
template <class Step>
Task<Result<void>> exact_loop(Step step, std::size_t len, IoError on_zero, std::size_t* moved = nullptr) {
    std::size_t done = 0;
    while (done < len) {
        auto r = co_await step(done);
        std::size_t n = 0;
        if constexpr (std::is_same_v<decltype(r), int>) {
            if (r < 0)
                co_return errno_code(r);
            n = static_cast<std::size_t>(r);
        } else {
            if (!r)
                co_return r.error();
            n = *r;
        }
        if (n == 0)
            co_return make_error_code(on_zero);
        done += n;
        if (moved)
            *moved = done;
    }
    co_return Result<void>{};
}

} // namespace ringo::detail
