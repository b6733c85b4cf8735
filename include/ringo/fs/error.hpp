// ringo/fs/error.hpp - the errors of ringo::fs that are not a kernel's errno.
#pragma once

#include <system_error>

#include <ringo/io/error.hpp>

namespace ringo::fs {

/// unexpected_eof (the end came before the buffer was full) and write_zero (a write moved no
/// bytes): ringo::IoError, shared by the whole I/O layer. Every other error of ringo::fs is
/// the kernel's errno in std::system_category().
using Error = IoError;

/// The category of Error (ringo::io_error_category()).
[[nodiscard]] inline const std::error_category& error_category() noexcept { return io_error_category(); }

} // namespace ringo::fs
