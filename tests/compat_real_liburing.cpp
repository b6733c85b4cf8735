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

namespace {
template <class S>
bool op_flag_fields_agree(const S& s, std::uint32_t v) {
    bool ok = true;
    if constexpr (requires { s.nop_flags; })
        ok = ok && s.nop_flags == v;
    if constexpr (requires { s.pipe_flags; })
        ok = ok && s.pipe_flags == v;
    if constexpr (requires { s.waitid_flags; })
        ok = ok && s.waitid_flags == v;
    if constexpr (requires { s.futex_flags; })
        ok = ok && s.futex_flags == v;
    if constexpr (requires { s.install_fd_flags; })
        ok = ok && s.install_fd_flags == v;
    return ok;
}
} // namespace

// compat::sqe_field's recipes on the real newer struct: each must land in the field that header
// names for it (where it names one). Returns the first recipe that does not, or nullptr.
const char* sqe_recipe_mismatch() {
    namespace f = ringo::uring::compat::sqe_field;
    real_newer::io_uring_sqe s{};
    f::op_flags(&s, 0x8000'0005u);
    if (!op_flag_fields_agree(s, 0x8000'0005u))
        return "op_flags (nop_flags, pipe_flags, waitid_flags, futex_flags, install_fd_flags)";
    f::sock_level_optname(&s, 6u, 0x1234'5678u);
    if constexpr (requires { s.level; s.optname; }) {
        if (s.level != 6u || s.optname != 0x1234'5678u)
            return "sock_level_optname (level, optname)";
    }
    f::sock_optval(&s, 0x1122'3344'5566'7788u, 24u);
    if constexpr (requires { s.optval; s.optlen; }) {
        if (s.optval != 0x1122'3344'5566'7788u || s.optlen != 24u)
            return "sock_optval (optval, optlen)";
    }
    f::target_slot(&s, 6u);
    if (s.file_index != 7u)
        return "target_slot (file_index = slot + 1)";
    f::target_slot(&s, ringo::uring::compat::file_index_alloc);
    if (s.file_index != IORING_FILE_INDEX_ALLOC)
        return "target_slot (IORING_FILE_INDEX_ALLOC)";
    return nullptr;
}

} // namespace ringo_compat_real
