// ringo/uring/compat.hpp against the installed liburing (this file) and against a stand-in for a
// newer liburing (compat_newer_liburing.cpp). The checks are static_asserts in compat_check.hpp:
// a wrong number fails the build; the tests below report what was compared.
#include <liburing.h>

#include <ringo/uring/compat.hpp>

#include "compat_check.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>

namespace ringo_compat_newer {
int opcodes_checked();
int macros_checked();
const char* sqe_recipe_mismatch();
} // namespace ringo_compat_newer

#if RINGO_HAVE_REAL_NEWER_LIBURING
namespace ringo_compat_real {
int version_major();
int version_minor();
int opcode_last();
int opcodes_checked();
int macros_checked();
const char* sqe_recipe_mismatch();
} // namespace ringo_compat_real
#endif

namespace {

namespace c = ringo::uring::compat;

// The SQE bytes compat::sqe_field writes through liburing 2.3's names are the ones the newer
// names in compat_newer_liburing.cpp sit at.
static_assert(offsetof(io_uring_sqe, addr) == 16);
static_assert(offsetof(io_uring_sqe, rw_flags) == 28);
static_assert(offsetof(io_uring_sqe, file_index) == 44);
static_assert(offsetof(io_uring_sqe, addr3) == 48);

TEST(Compat, AgreesWithTheInstalledLiburing) {
    // Every opcode the installed liburing names (up to the last one ringo knows) was compared.
    EXPECT_EQ(ringo_compat_check::opcodes_checked, ringo_compat_check::opcodes_expected);
    EXPECT_GE(ringo_compat_check::opcodes_checked, static_cast<int>(c::opcode::sendmsg_zc) + 1); // liburing 2.3
    // liburing 2.3 defines 69 of the 88 flag macros compat_check.hpp knows; a newer one more.
    EXPECT_GE(ringo_compat_check::macros_checked, 69);
    std::printf("installed liburing: %d opcodes and %d flag macros agree with compat.hpp\n",
                ringo_compat_check::opcodes_checked, ringo_compat_check::macros_checked);
}

TEST(Compat, AgreesWithANewerLiburing) {
    EXPECT_EQ(ringo_compat_newer::opcodes_checked(), static_cast<int>(c::opcode::known_last));
    EXPECT_EQ(ringo_compat_newer::macros_checked(), 88);
    const char* bad = ringo_compat_newer::sqe_recipe_mismatch();
    EXPECT_EQ(bad, nullptr) << "compat::sqe_field::" << bad << " misses the newer liburing's field";
}

// The numbers were compared at compile time (compat_real_liburing.cpp); this reports what.
TEST(Compat, AgreesWithTheRealNewerLiburing) {
#if RINGO_HAVE_REAL_NEWER_LIBURING
    int last = ringo_compat_real::opcode_last();
    EXPECT_EQ(ringo_compat_real::opcodes_checked(), last < c::opcode::known_last ? last : int(c::opcode::known_last));
    EXPECT_GE(ringo_compat_real::version_major() * 100 + ringo_compat_real::version_minor(), 206)
        << "RINGO_NEWER_LIBURING_INCLUDE should name a liburing of 2.6 or later";
    EXPECT_GT(ringo_compat_real::macros_checked(), 69); // more than 2.3 defines
    const char* bad = ringo_compat_real::sqe_recipe_mismatch();
    EXPECT_EQ(bad, nullptr) << "compat::sqe_field::" << bad << " misses the newer liburing's field";
    std::printf("liburing %d.%d's io_uring.h: %d opcodes and %d flag macros agree with compat.hpp\n",
                ringo_compat_real::version_major(), ringo_compat_real::version_minor(),
                ringo_compat_real::opcodes_checked(), ringo_compat_real::macros_checked());
#else
    GTEST_SKIP() << "no newer liburing named at configure time (RINGO_NEWER_LIBURING_INCLUDE; scripts/test sets it)";
#endif
}

TEST(Compat, SqeRecipesOnTheInstalledLiburing) {
    io_uring_sqe s{};
    c::sqe_field::op_flags(&s, 0x8000'0005u);
    EXPECT_EQ(static_cast<unsigned>(s.rw_flags), 0x8000'0005u);
    c::sqe_field::target_slot(&s, 2u);
    EXPECT_EQ(s.file_index, 3u);
    c::sqe_field::target_slot(&s, c::file_index_alloc);
    EXPECT_EQ(s.file_index, IORING_FILE_INDEX_ALLOC);
    c::sqe_field::sock_optval(&s, 0x55u, 4u);
    EXPECT_EQ(s.addr3, 0x55u);
    EXPECT_EQ(s.file_index, 4u);
}

} // namespace
