// ringo/io/error.hpp - the errors of ringo's I/O layer that are not a kernel's errno.
#pragma once

#include <system_error>
#include <type_traits>

namespace ringo {

/// What a loop over reads or writes reports when the kernel itself reported no error: a read
/// that met the end of the file or stream before the buffer was full (fs::File::read_exact_at,
/// net::TcpStream::read_exact), a write that moved nothing (write_all_at, write_all), a line
/// longer than a BufReader's limit, a stream read to its end that has more than its limit. Every other error of the I/O
/// layer is the kernel's errno in std::system_category(). fs::Error and net::Error name this same type.
enum class IoError {
    unexpected_eof = 1, ///< "unexpected end of data": it ended before the buffer was full
    write_zero = 2,     ///< "write moved no bytes": a write returned 0 for a non-empty buffer
    line_too_long = 3,  ///< "line longer than the limit": BufReader::read_until / read_line (io/buffered.hpp)
    too_large = 4,      ///< "more data than the limit": read_to_end / read_to_string (io/read_to_end.hpp)
};

/// The category of IoError (one object in the program, src/errors.cpp), named "ringo".
[[nodiscard]] const std::error_category& io_error_category() noexcept;

[[nodiscard]] inline std::error_code make_error_code(IoError e) noexcept {
    return {static_cast<int>(e), io_error_category()};
}

} // namespace ringo

template <>
struct std::is_error_code_enum<ringo::IoError> : std::true_type {};
