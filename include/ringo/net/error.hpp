// ringo/net/error.hpp - the errors of ringo::net that are not a kernel's errno.
#pragma once

#include <string>
#include <system_error>
#include <type_traits>

namespace ringo::net {

/// What a loop over receives or sends reports when the kernel itself reported no error: a
/// stream that ended (the peer shut down its side) before the buffer was full (read_exact), a
/// send that moved nothing (write_all). Every other error of ringo::net is the kernel's errno
/// in std::system_category(). (fs::Error holds the same two for files; net and fs are one
/// layer and do not include each other.)
enum class Error {
    unexpected_eof = 1, ///< "unexpected end of stream": the peer closed before the buffer was full
    write_zero = 2,     ///< "send moved no bytes": a send returned 0 for a non-empty buffer
};

namespace detail {
class ErrorCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "ringo::net"; }
    std::string message(int e) const override {
        switch (static_cast<Error>(e)) {
        case Error::unexpected_eof: return "unexpected end of stream";
        case Error::write_zero: return "send moved no bytes";
        }
        return "unknown ringo::net error";
    }
    // Both are input/output errors to code that only knows std::errc.
    std::error_condition default_error_condition(int) const noexcept override {
        return std::make_error_condition(std::errc::io_error);
    }
};
} // namespace detail

/// The category of net::Error (one object in the program: an inline function's static).
[[nodiscard]] inline const std::error_category& error_category() noexcept {
    static const detail::ErrorCategory c;
    return c;
}

[[nodiscard]] inline std::error_code make_error_code(Error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

} // namespace ringo::net

template <>
struct std::is_error_code_enum<ringo::net::Error> : std::true_type {};
