// Part of test_compat when the build names a newer liburing's headers
// (RINGO_NEWER_LIBURING_INCLUDE; scripts/test passes Debian 13's liburing 2.9 fetched by
// scripts/newer-liburing): ringo/uring/compat.hpp next to that real io_uring.h, checked the same
// way as against the installed one and the stand-in (compat_check.hpp), and compat::sqe_field's
// recipes against the field names that header has.
//
// The installed liburing (2.3 on Debian 12) defines the same struct and enum names in the other
// translation units of this program, so this file keeps the newer header's types in namespace
// `real_newer`: the kernel headers it includes are included first, at global scope, so their
// include guards keep them out of the namespace.
#include <linux/fs.h>
#include <linux/time_types.h>
#include <linux/types.h>

#include <cstddef>
#include <cstdint>

namespace real_newer {
#include <liburing/io_uring.h>
#include <liburing/io_uring_version.h>
} // namespace real_newer

#include <ringo/uring/compat.hpp>

namespace real_newer {
#include "compat_check.hpp"

static_assert(sizeof(io_uring_sqe) == 64);
static_assert(offsetof(io_uring_sqe, rw_flags) == 28 && offsetof(io_uring_sqe, file_index) == 44 &&
              offsetof(io_uring_sqe, addr3) == 48);
} // namespace real_newer

namespace ringo_compat_real {

int version_major() { return IO_URING_VERSION_MAJOR; }
int version_minor() { return IO_URING_VERSION_MINOR; }
int opcode_last() { return static_cast<int>(real_newer::IORING_OP_LAST); }
int opcodes_checked() { return real_newer::ringo_compat_check::opcodes_checked; }
int macros_checked() { return real_newer::ringo_compat_check::macros_checked; }

// compat::sqe_field's recipes on the real newer struct.
const char* sqe_recipe_mismatch() {
    return real_newer::ringo_compat_check::sqe_recipe_mismatch_on<real_newer::io_uring_sqe>();
}

} // namespace ringo_compat_real
