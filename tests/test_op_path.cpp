// op/path.hpp and op/xattr.hpp: openat2, the direct (registered-file) opens, unlinkat,
// renameat, mkdirat, symlinkat, linkat, close of a fixed file, extended attributes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
using namespace ringo_test;

namespace {

struct PathOp : ::testing::Test {
    TempDir dir;
    std::string p(const char* name) const { return dir.file(name); }
    static bool exists(const std::string& path) {
        struct stat st;
        return ::lstat(path.c_str(), &st) == 0;
    }
};

TEST_F(PathOp, Openat2) {
    write_file(p("f"), "x");
    ::symlink(p("f").c_str(), p("link").c_str());
    run([&]() -> Task<void> {
        open_how how{};
        how.flags = O_RDONLY | O_CLOEXEC;
        int fd = co_await op::openat2(AT_FDCWD, p("f").c_str(), &how);
        EXPECT_GE(fd, 0);
        ::close(fd);
        // RESOLVE_NO_SYMLINKS refuses the symlink.
        how.resolve = RESOLVE_NO_SYMLINKS;
        EXPECT_EQ(co_await op::openat2(AT_FDCWD, p("link").c_str(), &how), -ELOOP);
        // Unknown resolve bits, a missing file, a bad `how`.
        how.resolve = 1ull << 40;
        EXPECT_EQ(co_await op::openat2(AT_FDCWD, p("f").c_str(), &how), -EINVAL);
        how.resolve = 0;
        EXPECT_EQ(co_await op::openat2(AT_FDCWD, p("missing").c_str(), &how), -ENOENT);
        EXPECT_EQ(co_await op::openat2(AT_FDCWD, p("f").c_str(), static_cast<open_how*>(bad_address())), -EFAULT);
    });
}

TEST_F(PathOp, OpenatDirectIntoChosenAndAllocatedSlots) {
    RINGO_IO_URING_ONLY("openat_direct into a registered file table");
    Runtime rt;
    write_file(p("d"), "direct open");
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(4), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, 2), 0);
        char buf[16] = {};
        EXPECT_EQ(co_await op::read(Fixed{2}, buf, sizeof buf, 0), 11);
        EXPECT_EQ(std::string(buf, 11), "direct open");
        int slot = co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, op::alloc_slot);
        EXPECT_GE(slot, 0);
        EXPECT_LT(slot, 4);
        EXPECT_NE(slot, 2);
        EXPECT_EQ(co_await op::read(Fixed{static_cast<unsigned>(slot)}, buf, 6, 0), 6);
        // Errors: O_CLOEXEC is meaningless for a slot, a missing file, a slot past the table.
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY | O_CLOEXEC, 0, 1), -EINVAL);
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("nope").c_str(), O_RDONLY, 0, 1), -ENOENT);
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, 99), -EINVAL);
        // Fill the table, then allocation fails with -ENFILE.
        int a = co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, op::alloc_slot);
        int b = co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, op::alloc_slot);
        EXPECT_GE(a, 0);
        EXPECT_GE(b, 0);
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, op::alloc_slot), -ENFILE);
        // close() of a fixed file empties its slot.
        EXPECT_EQ(co_await op::close(Fixed{2}), 0);
        EXPECT_EQ(co_await op::read(Fixed{2}, buf, 1, 0), -EBADF);
        EXPECT_EQ(co_await op::close(Fixed{2}), -EBADF);
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, op::alloc_slot), 2);
    }());
}

TEST_F(PathOp, OpenatDirectWithoutTable) {
    RINGO_IO_URING_ONLY("openat_direct (registered files)");
    write_file(p("d"), "x");
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, 0), -ENXIO);
        // Allocation finds no free slot in the (absent) table.
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, p("d").c_str(), O_RDONLY, 0, op::alloc_slot), -ENFILE);
    });
}

TEST_F(PathOp, Openat2Direct) {
    RINGO_IO_URING_ONLY("openat2_direct into a registered file table");
    Runtime rt;
    write_file(p("d2"), "openat2 direct");
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(2), 0);
    rt.block_on([&]() -> Task<void> {
        open_how how{};
        how.flags = O_RDONLY;
        int slot = co_await op::openat2_direct(AT_FDCWD, p("d2").c_str(), &how, op::alloc_slot);
        EXPECT_GE(slot, 0);
        char buf[32] = {};
        EXPECT_EQ(co_await op::read(Fixed{static_cast<unsigned>(slot)}, buf, sizeof buf, 0), 14);
        EXPECT_EQ(co_await op::openat2_direct(AT_FDCWD, p("d2").c_str(), &how, 1), 0);
        how.flags = O_RDONLY | O_CLOEXEC;
        EXPECT_EQ(co_await op::openat2_direct(AT_FDCWD, p("d2").c_str(), &how, 0), -EINVAL);
    }());
}

TEST_F(PathOp, MkdiratUnlinkat) {
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::mkdirat(AT_FDCWD, p("sub").c_str(), 0750), 0);
        struct stat st {};
        EXPECT_EQ(::stat(p("sub").c_str(), &st), 0);
        EXPECT_TRUE(S_ISDIR(st.st_mode));
        mode_t mask = ::umask(0);
        ::umask(mask);
        EXPECT_EQ(st.st_mode & 0777, 0750u & ~mask);
        EXPECT_EQ(co_await op::mkdirat(AT_FDCWD, p("sub").c_str(), 0755), -EEXIST);
        EXPECT_EQ(co_await op::mkdirat(AT_FDCWD, p("no/such/parent").c_str(), 0755), -ENOENT);
        // A relative path against a directory fd.
        Fd d(::open(p("sub").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        EXPECT_EQ(co_await op::mkdirat(d, "inner", 0755), 0);
        EXPECT_TRUE(exists(p("sub") + "/inner"));
        EXPECT_EQ(co_await op::unlinkat(d, "inner", AT_REMOVEDIR), 0);
        EXPECT_EQ(co_await op::unlinkat(AT_FDCWD, p("sub").c_str(), 0), -EISDIR); // a directory without AT_REMOVEDIR
        EXPECT_EQ(co_await op::unlinkat(AT_FDCWD, p("sub").c_str(), AT_REMOVEDIR), 0);
        EXPECT_FALSE(exists(p("sub")));
        write_file(p("file"), "x");
        EXPECT_EQ(co_await op::unlinkat(AT_FDCWD, p("file").c_str()), 0);
        EXPECT_EQ(co_await op::unlinkat(AT_FDCWD, p("file").c_str()), -ENOENT);
        EXPECT_EQ(co_await op::unlinkat(closed_fd(), "rel"), -EBADF);
        EXPECT_EQ(co_await op::unlinkat(AT_FDCWD, static_cast<const char*>(bad_address())), -EFAULT);
    });
}

TEST_F(PathOp, Renameat) {
    write_file(p("a"), "A");
    write_file(p("b"), "B");
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, p("a").c_str(), AT_FDCWD, p("c").c_str()), 0);
        EXPECT_FALSE(exists(p("a")));
        EXPECT_EQ(read_file(p("c")), "A");
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, p("c").c_str(), AT_FDCWD, p("b").c_str(), RENAME_NOREPLACE), -EEXIST);
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, p("c").c_str(), AT_FDCWD, p("b").c_str(), RENAME_EXCHANGE), 0);
        EXPECT_EQ(read_file(p("c")), "B");
        EXPECT_EQ(read_file(p("b")), "A");
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, p("missing").c_str(), AT_FDCWD, p("x").c_str()), -ENOENT);
    });
}

TEST_F(PathOp, SymlinkatAndLinkat) {
    write_file(p("target"), "T");
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::symlinkat(p("target").c_str(), AT_FDCWD, p("sym").c_str()), 0);
        char buf[PATH_MAX] = {};
        ssize_t n = ::readlink(p("sym").c_str(), buf, sizeof buf);
        EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), p("target"));
        EXPECT_EQ(co_await op::symlinkat(p("target").c_str(), AT_FDCWD, p("sym").c_str()), -EEXIST);
        EXPECT_EQ(co_await op::linkat(AT_FDCWD, p("target").c_str(), AT_FDCWD, p("hard").c_str()), 0);
        struct stat st {};
        ::stat(p("target").c_str(), &st);
        EXPECT_EQ(st.st_nlink, 2u);
        // A hard link to the symlink itself vs. to what it points at (AT_SYMLINK_FOLLOW).
        EXPECT_EQ(co_await op::linkat(AT_FDCWD, p("sym").c_str(), AT_FDCWD, p("hard2").c_str(), AT_SYMLINK_FOLLOW), 0);
        ::stat(p("target").c_str(), &st);
        EXPECT_EQ(st.st_nlink, 3u);
        EXPECT_EQ(co_await op::linkat(AT_FDCWD, p("missing").c_str(), AT_FDCWD, p("h3").c_str()), -ENOENT);
        EXPECT_EQ(co_await op::linkat(AT_FDCWD, p("target").c_str(), AT_FDCWD, p("hard").c_str()), -EEXIST);
        EXPECT_EQ(co_await op::symlinkat(static_cast<const char*>(bad_address()), AT_FDCWD, p("s2").c_str()), -EFAULT);
    });
}

TEST_F(PathOp, ClosedDirfdAndBadPointers) {
    RINGO_IO_URING_ONLY("openat_direct and openat2_direct (registered files)");
    // A relative path resolved against a closed directory descriptor: -EBADF. (dfd is always
    // a plain descriptor: the kernel does not take a registered file for it.)
    write_file(p("f"), "x");
    run([&]() -> Task<void> {
        const int bad = closed_fd();
        const char* nowhere = static_cast<const char*>(bad_address());
        struct statx st {};
        EXPECT_EQ(co_await op::statx(bad, "f", 0, STATX_SIZE, &st), -EBADF);
        EXPECT_EQ(
            co_await op::statx(AT_FDCWD, p("f").c_str(), 0, STATX_SIZE, static_cast<struct statx*>(bad_address())),
            -EFAULT);
        EXPECT_EQ(co_await op::mkdirat(bad, "d", 0755), -EBADF);
        EXPECT_EQ(co_await op::mkdirat(AT_FDCWD, nowhere, 0755), -EFAULT);
        EXPECT_EQ(co_await op::renameat(bad, "f", AT_FDCWD, p("g").c_str()), -EBADF);
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, p("f").c_str(), bad, "g"), -EBADF);
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, nowhere, AT_FDCWD, p("g").c_str()), -EFAULT);
        EXPECT_EQ(co_await op::renameat(AT_FDCWD, p("f").c_str(), AT_FDCWD, nowhere), -EFAULT);
        EXPECT_EQ(co_await op::linkat(bad, "f", AT_FDCWD, p("h").c_str()), -EBADF);
        EXPECT_EQ(co_await op::linkat(AT_FDCWD, nowhere, AT_FDCWD, p("h").c_str()), -EFAULT);
        EXPECT_EQ(co_await op::symlinkat(p("f").c_str(), bad, "s"), -EBADF);
        EXPECT_EQ(co_await op::symlinkat(p("f").c_str(), AT_FDCWD, nowhere), -EFAULT);
        open_how how{};
        how.flags = O_RDONLY;
        EXPECT_EQ(co_await op::openat2(bad, "f", &how), -EBADF);
        EXPECT_EQ(co_await op::openat_direct(bad, "f", O_RDONLY, 0, op::alloc_slot), -EBADF);
        EXPECT_EQ(co_await op::openat2_direct(AT_FDCWD, p("f").c_str(), &how, 0), -ENXIO); // no table
    });
    EXPECT_TRUE(exists(p("f")));
    EXPECT_FALSE(exists(p("g")));
    EXPECT_FALSE(exists(p("h")));
}

// --- extended attributes ---------------------------------------------------------------------

TEST_F(PathOp, SetxattrGetxattr) {
    write_file(p("x"), "");
    if (::setxattr(p("x").c_str(), "user.probe", "1", 1, 0) != 0)
        GTEST_SKIP() << "the temporary directory's file system has no user xattrs: " << std::strerror(errno);
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::setxattr(p("x").c_str(), "user.ringo", "value", 5), 0);
        char buf[16] = {};
        EXPECT_EQ(co_await op::getxattr(p("x").c_str(), "user.ringo", buf, sizeof buf), 5);
        EXPECT_EQ(std::string(buf, 5), "value");
        EXPECT_EQ(co_await op::getxattr(p("x").c_str(), "user.ringo", nullptr, 0), 5); // size query
        EXPECT_EQ(co_await op::getxattr(p("x").c_str(), "user.ringo", buf, 2), -ERANGE);
        EXPECT_EQ(co_await op::getxattr(p("x").c_str(), "user.absent", buf, sizeof buf), -ENODATA);
        EXPECT_EQ(co_await op::setxattr(p("x").c_str(), "user.ringo", "v2", 2, XATTR_CREATE), -EEXIST);
        EXPECT_EQ(co_await op::setxattr(p("x").c_str(), "user.other", "v2", 2, XATTR_REPLACE), -ENODATA);
        EXPECT_EQ(co_await op::getxattr(p("missing").c_str(), "user.ringo", buf, sizeof buf), -ENOENT);
        EXPECT_EQ(co_await op::getxattr(p("x").c_str(), "user.ringo", bad_address(), sizeof buf), -EFAULT);
        EXPECT_EQ(co_await op::getxattr(static_cast<const char*>(bad_address()), "user.ringo", buf, sizeof buf),
                  -EFAULT);
        EXPECT_EQ(co_await op::getxattr(p("x").c_str(), static_cast<const char*>(bad_address()), buf, sizeof buf),
                  -EFAULT);
        EXPECT_EQ(co_await op::setxattr(static_cast<const char*>(bad_address()), "user.ringo", "v", 1), -EFAULT);
        EXPECT_EQ(co_await op::setxattr(p("x").c_str(), "user.ringo", bad_address(), 4), -EFAULT);
    });
    char v[8] = {};
    EXPECT_EQ(::getxattr(p("x").c_str(), "user.ringo", v, sizeof v), 5);
}

TEST_F(PathOp, FsetxattrFgetxattrPlainAndFixed) {
    RINGO_IO_URING_ONLY("xattr ops and a registered file");
    write_file(p("fx"), "");
    if (::setxattr(p("fx").c_str(), "user.probe", "1", 1, 0) != 0)
        GTEST_SKIP() << "the temporary directory's file system has no user xattrs: " << std::strerror(errno);
    Runtime rt;
    Fd fd(::open(p("fx").c_str(), O_RDWR | O_CLOEXEC));
    ringo::op::FileTable files(rt);
    int one = fd;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::fsetxattr(fd, "user.a", "aa", 2), 0);
        EXPECT_EQ(co_await op::fsetxattr(Fixed{0}, "user.b", "bbb", 3), 0);
        char buf[8] = {};
        EXPECT_EQ(co_await op::fgetxattr(Fixed{0}, "user.a", buf, sizeof buf), 2);
        EXPECT_EQ(std::string(buf, 2), "aa");
        EXPECT_EQ(co_await op::fgetxattr(fd, "user.b", buf, sizeof buf), 3);
        EXPECT_EQ(std::string(buf, 3), "bbb");
        EXPECT_EQ(co_await op::fgetxattr(fd, "user.none", buf, sizeof buf), -ENODATA);
        EXPECT_EQ(co_await op::fgetxattr(closed_fd(), "user.a", buf, sizeof buf), -EBADF);
        EXPECT_EQ(co_await op::fgetxattr(Fixed{5}, "user.a", buf, sizeof buf), -EBADF);
        EXPECT_EQ(co_await op::fsetxattr(fd, static_cast<const char*>(bad_address()), "x", 1), -EFAULT);
        EXPECT_EQ(co_await op::fsetxattr(Fixed{0}, "user.c", bad_address(), 4), -EFAULT);
        EXPECT_EQ(co_await op::fsetxattr(Fixed{5}, "user.c", "c", 1), -EBADF);
        EXPECT_EQ(co_await op::fsetxattr(closed_fd(), "user.c", "c", 1), -EBADF);
        EXPECT_EQ(co_await op::fgetxattr(Fixed{0}, "user.a", bad_address(), sizeof buf), -EFAULT);
    }());
}

} // namespace
