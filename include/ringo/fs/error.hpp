// ringo/fs/error.hpp - the errors of ringo::fs that are not a kernel's errno.
#pragma once

#include <string>
#include <system_error>
#include <type_traits>

namespace ringo::fs {

/// What a loop over reads or writes reports when the kernel itself reported no error: a read
/// that reached the end of the file before the buffer was full (read_exact_at), a write that
/// moved nothing (write_all_at). Every other error of ringo::fs is the kernel's errno in
/// std::system_category().
enum class Error {
    unexpected_eof = 1, ///< "unexpected end of file": the file ended before the buffer was full
    write_zero = 2,     ///< "write moved no bytes": a write returned 0 for a non-empty buffer
};

namespace detail {
class ErrorCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "ringo::fs"; }
    std::string message(int e) const override {
        switch (static_cast<Error>(e)) {
        case Error::unexpected_eof: return "unexpected end of file";
        case Error::write_zero: return "write moved no bytes";
        }
        return "unknown ringo::fs error";
    }
    // Both are input/output errors to code that only knows std::errc.
    std::error_condition default_error_condition(int) const noexcept override {
        return std::make_error_condition(std::errc::io_error);
    }
};
} // namespace detail

/// The category of fs::Error (one object in the program: an inline function's static).
[[nodiscard]] inline const std::error_category& error_category() noexcept {
    static const detail::ErrorCategory c;
    return c;
}

[[nodiscard]] inline std::error_code make_error_code(Error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

} // namespace ringo::fs

template <>
struct std::is_error_code_enum<ringo::fs::Error> : std::true_type {};
