// op::FileTable and buf::BufferTable (register, sparse, update, unregister, allocation
// range) and op/direct.hpp: files_update, fixed_fd_install.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

TEST(FileTable, RegisterUpdateUnregister) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    Pipe a, b;
    ringo::op::FileTable files(rt);
    EXPECT_FALSE(files.registered());
    int fds[3] = {a.r, -1, b.r};
    ASSERT_EQ(files.register_files(fds), 0);
    EXPECT_EQ(files.size(), 3u);
    // A second table on the same ring is refused.
    ringo::op::FileTable second(rt);
    EXPECT_EQ(second.register_sparse(2), -EBUSY);
    // Update: slot 1 gets b's read end, slot 2 is emptied, slot 0 is skipped.
    int upd[3] = {compat::register_files_skip, b.r, -1};
    EXPECT_EQ(files.update(0, upd), 3);
    EXPECT_EQ(files.update(2, {&upd[1], 2}), -EINVAL); // runs past the end
    int bad = closed_fd();
    EXPECT_EQ(files.update(2, {&bad, 1}), -EBADF); // (the kernel empties the slot first)
    ASSERT_EQ(::write(a.w, "A", 1), 1);
    ASSERT_EQ(::write(b.w, "B", 1), 1);
    rt.block_on([&]() -> Task<void> {
        char c = 0;
        EXPECT_EQ(co_await op::read(Fixed{0}, &c, 1, op::current_pos), 1);
        EXPECT_EQ(c, 'A');
        EXPECT_EQ(co_await op::read(Fixed{1}, &c, 1, op::current_pos), 1);
        EXPECT_EQ(c, 'B');
        EXPECT_EQ(co_await op::read(Fixed{2}, &c, 1, op::current_pos), -EBADF);
    }());
    EXPECT_EQ(files.unregister(), 0);
    EXPECT_EQ(files.unregister(), -ENXIO);
    rt.block_on([&]() -> Task<void> {
        char c = 0;
        EXPECT_EQ(co_await op::read(Fixed{0}, &c, 1, op::current_pos), -EBADF);
    }());
    // After unregistering, another table may be registered.
    EXPECT_EQ(second.register_sparse(2), 0);
}

TEST(FileTable, RegisterBadFdAndUpdateWithoutTable) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    ringo::op::FileTable files(rt);
    int bad = closed_fd();
    EXPECT_EQ(files.register_files({&bad, 1}), -EBADF);
    int fd = 0;
    EXPECT_EQ(files.update(0, {&fd, 1}), -ENXIO);
    EXPECT_EQ(files.set_alloc_range(0, 1), -EINVAL);
}

TEST(FileTable, AllocRangeLimitsAllocation) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    TempDir dir;
    write_file(dir.file("f"), "f");
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(8), 0);
    ASSERT_EQ(files.set_alloc_range(5, 2), 0);
    EXPECT_EQ(files.set_alloc_range(7, 4), -EINVAL);
    rt.block_on([&]() -> Task<void> {
        std::string f = dir.file("f");
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, f.c_str(), O_RDONLY, 0, op::alloc_slot), 5);
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, f.c_str(), O_RDONLY, 0, op::alloc_slot), 6);
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, f.c_str(), O_RDONLY, 0, op::alloc_slot), -ENFILE);
    }());
}

TEST(FilesUpdateOp, ReplacesAndAllocatesSlots) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    Pipe a, b, c;
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(4), 0);
    ASSERT_EQ(::write(a.w, "a", 1), 1);
    ASSERT_EQ(::write(c.w, "c", 1), 1);
    rt.block_on([&]() -> Task<void> {
        int fds[2] = {a.r, b.r};
        EXPECT_EQ(co_await op::files_update(fds, 2, 1), 2); // slots 1 and 2
        char ch = 0;
        EXPECT_EQ(co_await op::read(Fixed{1}, &ch, 1, op::current_pos), 1);
        EXPECT_EQ(ch, 'a');
        // Allocation: the kernel writes the chosen slots back.
        int more[1] = {c.r};
        EXPECT_EQ(co_await op::files_update(more, 1, op::alloc_slot), 1);
        EXPECT_TRUE(more[0] == 0 || more[0] == 3) << more[0];
        EXPECT_EQ(co_await op::read(Fixed{static_cast<unsigned>(more[0])}, &ch, 1, op::current_pos), 1);
        EXPECT_EQ(ch, 'c');
        // Empty a slot with -1.
        int clear[1] = {-1};
        EXPECT_EQ(co_await op::files_update(clear, 1, 1), 1);
        EXPECT_EQ(co_await op::read(Fixed{1}, &ch, 1, op::current_pos), -EBADF);
        // Errors: out of range, a bad fd, a bad array.
        EXPECT_EQ(co_await op::files_update(fds, 2, 3), -EINVAL);
        int bad[1] = {closed_fd()};
        EXPECT_EQ(co_await op::files_update(bad, 1, 0), -EBADF);
        EXPECT_EQ(co_await op::files_update(static_cast<int*>(bad_address()), 1, 0), -EFAULT);
    }());
}

TEST(FilesUpdateOp, WithoutTableIsEnxio) {
    RINGO_IO_URING_ONLY("a registered file table");
    Pipe a;
    run([&]() -> Task<void> {
        int fds[1] = {a.r};
        EXPECT_EQ(co_await op::files_update(fds, 1, 0), -ENXIO);
    });
}

TEST(FixedFdInstall, InstallsARegularDescriptor) {
    Runtime rt;
    if (!rt.supports(compat::opcode::fixed_fd_install))
        GTEST_SKIP() << "kernel lacks IORING_OP_FIXED_FD_INSTALL (6.8)";
    TempDir dir;
    write_file(dir.file("f"), "installed");
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(2), 0);
    rt.block_on([&]() -> Task<void> {
        std::string f = dir.file("f");
        EXPECT_EQ(co_await op::openat_direct(AT_FDCWD, f.c_str(), O_RDONLY, 0, 0), 0);
        int fd = co_await op::fixed_fd_install(Fixed{0});
        EXPECT_GE(fd, 0);
        if (fd >= 0) {
            EXPECT_EQ(::fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
            char buf[16] = {};
            EXPECT_EQ(::pread(fd, buf, sizeof buf, 0), 9);
            EXPECT_EQ(std::string(buf, 9), "installed");
            ::close(fd);
        }
        int fd2 = co_await op::fixed_fd_install(Fixed{0}, compat::fixed_fd_no_cloexec);
        EXPECT_GE(fd2, 0);
        if (fd2 >= 0) {
            EXPECT_EQ(::fcntl(fd2, F_GETFD) & FD_CLOEXEC, 0);
            ::close(fd2);
        }
        // An empty slot, a plain fd (must be a registered one), unknown flags.
        EXPECT_EQ(co_await op::fixed_fd_install(Fixed{1}), -EBADF);
        EXPECT_EQ(co_await op::fixed_fd_install(0), -EBADF);
        EXPECT_EQ(co_await op::fixed_fd_install(Fixed{0}, 0x80), -EINVAL);
    }());
}

TEST(BufferTable, SparseUpdateUnregister) {
    RINGO_IO_URING_ONLY("registered buffers");
    Runtime rt;
    alignas(4096) static char mem[2][4096];
    ringo::buf::BufferTable bufs(rt);
    ASSERT_EQ(bufs.register_sparse(4), 0);
    EXPECT_EQ(bufs.size(), 4u);
    ringo::buf::BufferTable second(rt);
    iovec one{mem[0], 4096};
    EXPECT_EQ(second.register_buffers({&one, 1}), -EBUSY);
    TempDir dir;
    Fd fd(::open(dir.file("b").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644));
    ASSERT_EQ(::write(fd, "sparse buffers", 14), 14);
    rt.block_on([&]() -> Task<void> {
        // Slot 2 is empty.
        EXPECT_EQ(co_await op::read_fixed(fd, mem[0], 14, 0, 2), -EFAULT);
    }());
    iovec upd[2] = {{mem[0], 4096}, {mem[1], 4096}};
    EXPECT_EQ(bufs.update(2, upd), 2);
    EXPECT_EQ(bufs.update(3, upd), -EINVAL); // past the end
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::read_fixed(fd, mem[1], 14, 0, 3), 14);
        EXPECT_EQ(std::string(mem[1], 14), "sparse buffers");
    }());
    EXPECT_EQ(bufs.unregister(), 0);
    EXPECT_EQ(bufs.unregister(), -ENXIO);
    rt.block_on([&]() -> Task<void> { EXPECT_EQ(co_await op::read_fixed(fd, mem[1], 14, 0, 3), -EFAULT); }());
}

TEST(BufferTable, RegisterBadMemory) {
    RINGO_IO_URING_ONLY("registered buffers");
    Runtime rt;
    ringo::buf::BufferTable bufs(rt);
    iovec bad{bad_address(), 4096};
    EXPECT_EQ(bufs.register_buffers({&bad, 1}), -EFAULT);
    alignas(64) static char small[64];
    iovec empty{small, 0};
    EXPECT_EQ(bufs.register_buffers({&empty, 1}), -EFAULT);
    EXPECT_FALSE(bufs.registered());
}

} // namespace
