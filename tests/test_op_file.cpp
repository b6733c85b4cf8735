// op/file.hpp: reads and writes with registered buffers and registered files, vectored
// fixed transfers, fallocate, fadvise, madvise, sync_file_range, ftruncate, splice, tee,
// provided buffers. Real files in a temporary directory, real pipes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
using namespace ringo_test;

namespace {

struct AlignedBuf {
    char* p;
    std::size_t n;
    explicit AlignedBuf(std::size_t size) : p(static_cast<char*>(std::aligned_alloc(4096, size))), n(size) {
        std::memset(p, 0, n);
    }
    ~AlignedBuf() { std::free(p); }
    AlignedBuf(const AlignedBuf&) = delete;
    AlignedBuf& operator=(const AlignedBuf&) = delete;
    iovec iov() const { return {p, n}; }
};

struct FileOp : ::testing::Test {
    TempDir dir;
    std::string path(const char* name) const { return dir.file(name); }
    Fd open_rw(const char* name) const { return Fd(::open(path(name).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)); }
};

// --- registered buffers ------------------------------------------------------------------

TEST_F(FileOp, WriteFixedThenReadFixed) {
    RINGO_IO_URING_ONLY("registered buffers");
    Runtime rt;
    AlignedBuf b0(4096), b1(4096);
    ringo::buf::BufferTable bufs(rt);
    iovec iovs[2] = {b0.iov(), b1.iov()};
    ASSERT_EQ(bufs.register_buffers(iovs), 0);
    Fd fd = open_rw("fixed");
    std::strcpy(b0.p, "registered buffers");
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::write_fixed(fd, b0.p, 18, 0, 0), 18);
        EXPECT_EQ(co_await op::read_fixed(fd, b1.p, 100, 0, 1), 18);
        EXPECT_STREQ(b1.p, "registered buffers");
        // A sub-range of a registered buffer.
        EXPECT_EQ(co_await op::read_fixed(fd, b1.p + 1000, 7, 11, 1), 7);
        EXPECT_EQ(std::string(b1.p + 1000, 7), "buffers");
    }());
}

TEST_F(FileOp, ReadFixedErrors) {
    RINGO_IO_URING_ONLY("registered buffers");
    Runtime rt;
    AlignedBuf b0(4096), other(4096);
    Fd fd = open_rw("errs");
    ASSERT_EQ(::write(fd, "abcdef", 6), 6);
    rt.block_on([&]() -> Task<void> {
        // No table registered at all.
        EXPECT_EQ(co_await op::read_fixed(fd, b0.p, 6, 0, 0), -EFAULT);
    }());
    ringo::buf::BufferTable bufs(rt);
    iovec iov = b0.iov();
    ASSERT_EQ(bufs.register_buffers({&iov, 1}), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::read_fixed(fd, b0.p, 6, 0, 3), -EFAULT);         // unregistered index
        EXPECT_EQ(co_await op::read_fixed(fd, other.p, 6, 0, 0), -EFAULT);      // outside buffer 0
        EXPECT_EQ(co_await op::read_fixed(fd, b0.p + 4090, 64, 0, 0), -EFAULT); // runs past its end
        EXPECT_EQ(co_await op::write_fixed(closed_fd(), b0.p, 6, 0, 0), -EBADF);
        EXPECT_EQ(co_await op::read_fixed(fd, b0.p, 6, 0, 0), 6);
    }());
}

TEST_F(FileOp, ReadvWritevFixed) {
    Runtime rt;
    if (!rt.supports(ringo::uring::compat::opcode::readv_fixed))
        GTEST_SKIP() << "kernel lacks IORING_OP_READV_FIXED (6.15)";
    AlignedBuf b(8192);
    ringo::buf::BufferTable bufs(rt);
    iovec reg = b.iov();
    ASSERT_EQ(bufs.register_buffers({&reg, 1}), 0);
    Fd fd = open_rw("vfixed");
    std::memcpy(b.p, "abc", 3);
    std::memcpy(b.p + 5000, "defg", 4);
    rt.block_on([&]() -> Task<void> {
        iovec out[2] = {{b.p, 3}, {b.p + 5000, 4}};
        EXPECT_EQ(co_await op::writev_fixed(fd, out, 2, 0, 0), 7);
        iovec in[2] = {{b.p + 100, 4}, {b.p + 6000, 3}};
        EXPECT_EQ(co_await op::readv_fixed(fd, in, 2, 0, 0), 7);
        EXPECT_EQ(std::string(b.p + 100, 4) + std::string(b.p + 6000, 3), "abcdefg");
        // An iovec outside the registered buffer, and an unregistered index.
        char stack[8];
        iovec bad[1] = {{stack, sizeof stack}};
        EXPECT_EQ(co_await op::readv_fixed(fd, bad, 1, 0, 0), -EFAULT);
        EXPECT_EQ(co_await op::readv_fixed(fd, in, 2, 0, 9), -EFAULT);
        EXPECT_EQ(co_await op::writev_fixed(closed_fd(), out, 2, 0, 0), -EBADF);
    }());
    EXPECT_EQ(read_file(path("vfixed")), "abcdefg");
}

// --- registered files --------------------------------------------------------------------

TEST_F(FileOp, FixedFileReadWriteVectoredSync) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    Fd fd = open_rw("ff");
    ringo::op::FileTable files(rt);
    int fds[2] = {-1, fd};
    ASSERT_EQ(files.register_files(fds), 0);
    fd.reset(); // the table keeps its own reference
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::write(Fixed{1}, "hello", 5, 0), 5);
        char buf[8] = {};
        EXPECT_EQ(co_await op::read(Fixed{1}, buf, sizeof buf, 0), 5);
        EXPECT_EQ(std::string(buf, 5), "hello");
        char a[] = "xy", b[] = "z";
        iovec out[2] = {{a, 2}, {b, 1}};
        EXPECT_EQ(co_await op::writev(Fixed{1}, out, 2, 5), 3);
        char c[8] = {};
        iovec in[1] = {{c, sizeof c}};
        EXPECT_EQ(co_await op::readv(Fixed{1}, in, 1, 0), 8);
        EXPECT_EQ(std::string(c, 8), "helloxyz");
        EXPECT_EQ(co_await op::fsync(Fixed{1}), 0);
        // Empty slot, slot past the end of the table.
        EXPECT_EQ(co_await op::read(Fixed{0}, buf, 1, 0), -EBADF);
        EXPECT_EQ(co_await op::read(Fixed{7}, buf, 1, 0), -EBADF);
    }());
    EXPECT_EQ(read_file(path("ff")), "helloxyz");
}

TEST_F(FileOp, FixedFileWithoutTableIsEbadf) {
    run([]() -> Task<void> {
        char buf[4];
        EXPECT_EQ(co_await op::read(Fixed{0}, buf, sizeof buf, 0), -EBADF);
        EXPECT_EQ(co_await op::fsync(Fixed{0}), -EBADF);
    });
}

TEST_F(FileOp, FixedFileAndFixedBufferTogether) {
    RINGO_IO_URING_ONLY("a registered file and registered buffers");
    Runtime rt;
    AlignedBuf b(4096);
    ringo::buf::BufferTable bufs(rt);
    iovec reg = b.iov();
    ASSERT_EQ(bufs.register_buffers({&reg, 1}), 0);
    Fd fd = open_rw("both");
    ringo::op::FileTable files(rt);
    int one = fd;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    std::memcpy(b.p, "both registered", 15);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::write_fixed(Fixed{0}, b.p, 15, 0, 0), 15);
        EXPECT_EQ(co_await op::read_fixed(Fixed{0}, b.p + 2048, 15, 0, 0), 15);
        EXPECT_EQ(std::string(b.p + 2048, 15), "both registered");
    }());
}

TEST_F(FileOp, FixedFileAdviceSyncAndDatasync) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    Fd fd = open_rw("fixed-advice");
    ASSERT_EQ(::write(fd, "0123456789", 10), 10);
    ringo::op::FileTable files(rt);
    int fds[2] = {fd, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::fadvise(Fixed{0}, 0, 10, POSIX_FADV_WILLNEED), 0);
        EXPECT_EQ(co_await op::sync_file_range(Fixed{0}, 0, 10, SYNC_FILE_RANGE_WRITE), 0);
        EXPECT_EQ(co_await op::fsync(Fixed{0}, op::fsync_datasync), 0);
        // An empty slot, a slot past the end of the table.
        EXPECT_EQ(co_await op::fadvise(Fixed{1}, 0, 10, POSIX_FADV_WILLNEED), -EBADF);
        EXPECT_EQ(co_await op::sync_file_range(Fixed{1}, 0, 10, SYNC_FILE_RANGE_WRITE), -EBADF);
        EXPECT_EQ(co_await op::fsync(Fixed{9}, op::fsync_datasync), -EBADF);
        EXPECT_EQ(co_await op::fallocate(Fixed{9}, 0, 0, 4096), -EBADF);
        EXPECT_EQ(co_await op::fsync(closed_fd(), op::fsync_datasync), -EBADF);
    }());
}

TEST_F(FileOp, ReadvWritevFixedOnAFixedFile) {
    Runtime rt;
    if (!rt.supports(ringo::uring::compat::opcode::readv_fixed))
        GTEST_SKIP() << "kernel lacks IORING_OP_READV_FIXED (6.15)";
    AlignedBuf b(8192);
    ringo::buf::BufferTable bufs(rt);
    iovec reg = b.iov();
    ASSERT_EQ(bufs.register_buffers({&reg, 1}), 0);
    Fd fd = open_rw("vfixed-ff");
    ringo::op::FileTable files(rt);
    int one = fd;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    std::memcpy(b.p, "fixed", 5);
    std::memcpy(b.p + 4096, "+fixed", 6);
    rt.block_on([&]() -> Task<void> {
        iovec out[2] = {{b.p, 5}, {b.p + 4096, 6}};
        EXPECT_EQ(co_await op::writev_fixed(Fixed{0}, out, 2, 0, 0), 11);
        iovec in[1] = {{b.p + 2000, 11}};
        EXPECT_EQ(co_await op::readv_fixed(Fixed{0}, in, 1, 0, 0), 11);
        EXPECT_EQ(std::string(b.p + 2000, 11), "fixed+fixed");
        EXPECT_EQ(co_await op::readv_fixed(Fixed{1}, in, 1, 0, 0), -EBADF);
        EXPECT_EQ(co_await op::writev_fixed(Fixed{1}, out, 2, 0, 0), -EBADF);
        EXPECT_EQ(co_await op::writev_fixed(Fixed{0}, out, 2, 0, 4), -EFAULT); // unregistered buffer
        EXPECT_EQ(co_await op::readv_fixed(Fixed{0}, static_cast<const iovec*>(bad_address()), 1, 0, 0), -EFAULT);
    }());
}

TEST_F(FileOp, BadPointersAndUnregisteredBuffers) {
    RINGO_IO_URING_ONLY("registered buffers and madvise");
    Runtime rt;
    AlignedBuf b(4096);
    Fd fd = open_rw("badptr");
    ASSERT_EQ(::write(fd, "abcdef", 6), 6);
    ringo::buf::BufferTable bufs(rt);
    iovec reg = b.iov();
    ASSERT_EQ(bufs.register_buffers({&reg, 1}), 0);
    rt.block_on([&]() -> Task<void> {
        // The iovec array itself unreadable, or an iovec pointing nowhere.
        EXPECT_EQ(co_await op::readv(fd, static_cast<const iovec*>(bad_address()), 1, 0), -EFAULT);
        EXPECT_EQ(co_await op::writev(fd, static_cast<const iovec*>(bad_address()), 1, 0), -EFAULT);
        iovec nowhere{bad_address(), 4};
        EXPECT_EQ(co_await op::readv(fd, &nowhere, 1, 0), -EFAULT);
        EXPECT_EQ(co_await op::writev(fd, &nowhere, 1, 0), -EFAULT);
        // Registered-buffer index that is not registered.
        EXPECT_EQ(co_await op::write_fixed(fd, b.p, 6, 0, 1), -EFAULT);
        EXPECT_EQ(co_await op::write_fixed(fd, b.p, 6, 0, 1000), -EFAULT);
        EXPECT_EQ(co_await op::read_fixed(fd, b.p, 6, 0, 0), 6);
    }());
    // madvise of a range with nothing mapped: -ENOMEM, as madvise(2).
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    ::munmap(p, 4096);
    rt.block_on([&]() -> Task<void> { EXPECT_EQ(co_await op::madvise(p, 4096, MADV_WILLNEED), -ENOMEM); }());
}

TEST_F(FileOp, WrongFixedIndexAndClosedFdForEveryFileOp) {
    RINGO_IO_URING_ONLY("a registered file table and PROVIDE_BUFFERS");
    Runtime rt;
    Fd fd = open_rw("wrong-index");
    Pipe a, b;
    ringo::op::FileTable files(rt);
    int fds[3] = {fd, a.r, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    static char pool[2][16];
    rt.block_on([&]() -> Task<void> {
        char buf[8] = {};
        iovec iov{buf, sizeof buf};
        const op::BufferGroup g{21};
        EXPECT_EQ(co_await op::provide_buffers(pool, 16, 2, g, 0), 0);
        for (unsigned i : {2u, 40u}) { // an empty slot, a slot past the end
            EXPECT_EQ(co_await op::write(Fixed{i}, "x", 1, 0), -EBADF);
            EXPECT_EQ(co_await op::readv(Fixed{i}, &iov, 1, 0), -EBADF);
            EXPECT_EQ(co_await op::writev(Fixed{i}, &iov, 1, 0), -EBADF);
            EXPECT_EQ(co_await op::read(Fixed{i}, g, 16, 0), -EBADF);
            EXPECT_EQ(co_await op::ftruncate(Fixed{i}, 0),
                      rt.supports(ringo::uring::compat::opcode::ftruncate) ? -EBADF : -EOPNOTSUPP);
            EXPECT_EQ(co_await op::tee(Fixed{i}, b.w, 8), -EBADF);
            EXPECT_EQ(co_await op::tee(Fixed{1}, Fixed{i}, 8), -EBADF);
            EXPECT_EQ(co_await op::splice(Fixed{1}, op::no_offset, Fixed{i}, 0, 8), -EBADF);
        }
        EXPECT_EQ(co_await op::read(closed_fd(), g, 16, 0), -EBADF);
        EXPECT_EQ(co_await op::read_fixed(closed_fd(), buf, 1, 0, 0), -EBADF);
        // The group still holds both buffers: no failed read took one.
        EXPECT_EQ(co_await op::remove_buffers(8, g), 2);
    }());
}

// --- space, advice, sync, size -------------------------------------------------------------

TEST_F(FileOp, Fallocate) {
    Fd fd = open_rw("falloc");
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::fallocate(fd, 0, 0, 1 << 20), 0);
        struct stat st {};
        ::fstat(fd, &st);
        EXPECT_EQ(st.st_size, 1 << 20);
        EXPECT_EQ(co_await op::fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 4096), 0);
        ::fstat(fd, &st);
        EXPECT_EQ(st.st_size, 1 << 20);
        EXPECT_EQ(co_await op::fallocate(fd, 0, 0, 0), -EINVAL); // zero length
        EXPECT_EQ(co_await op::fallocate(closed_fd(), 0, 0, 4096), -EBADF);
    });
}

TEST_F(FileOp, FallocateFixedFile) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    Fd fd = open_rw("falloc-fixed");
    ringo::op::FileTable files(rt);
    int one = fd;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    rt.block_on([&]() -> Task<void> { EXPECT_EQ(co_await op::fallocate(Fixed{0}, 0, 0, 8192), 0); }());
    struct stat st {};
    ::fstat(fd, &st);
    EXPECT_EQ(st.st_size, 8192);
}

TEST_F(FileOp, Fadvise) {
    Fd fd = open_rw("fadv");
    ASSERT_EQ(::write(fd, "data", 4), 4);
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        EXPECT_EQ(co_await op::fadvise(fd, 0, 4, POSIX_FADV_WILLNEED), 0);
        EXPECT_EQ(co_await op::fadvise(fd, 0, 4, 12345), -EINVAL);
        EXPECT_EQ(co_await op::fadvise(closed_fd(), 0, 4, POSIX_FADV_NORMAL), -EBADF);
    });
}

TEST_F(FileOp, Madvise) {
    const std::size_t len = 4 * 4096;
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    static_cast<char*>(p)[0] = 7;
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::madvise(p, len, MADV_DONTNEED), 0);
        EXPECT_EQ(static_cast<char*>(p)[0], 0); // DONTNEED dropped the private page
        EXPECT_EQ(co_await op::madvise(static_cast<char*>(p) + 1, 4096, MADV_NORMAL), -EINVAL); // unaligned
        EXPECT_EQ(co_await op::madvise(p, len, 12345), -EINVAL);
    });
    ::munmap(p, len);
}

TEST_F(FileOp, SyncFileRange) {
    Fd fd = open_rw("sfr");
    ASSERT_EQ(::write(fd, "0123456789", 10), 10);
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::sync_file_range(
                      fd, 0, 10, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER),
                  0);
        EXPECT_EQ(co_await op::sync_file_range(fd, 0, 10, 0x80), -EINVAL); // unknown flag
        EXPECT_EQ(co_await op::sync_file_range(closed_fd(), 0, 10, SYNC_FILE_RANGE_WRITE), -EBADF);
    });
}

TEST_F(FileOp, Ftruncate) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    if (!rt.supports(ringo::uring::compat::opcode::ftruncate))
        GTEST_SKIP() << "kernel lacks IORING_OP_FTRUNCATE (6.9)";
    write_file(path("trunc"), "0123456789");
    Fd fd(::open(path("trunc").c_str(), O_RDWR | O_CLOEXEC));
    Fd ro(::open(path("trunc").c_str(), O_RDONLY | O_CLOEXEC));
    ringo::op::FileTable files(rt);
    int one = fd;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::ftruncate(fd, 4), 0);
        EXPECT_EQ(read_file(path("trunc")), "0123");
        EXPECT_EQ(co_await op::ftruncate(Fixed{0}, 2), 0);
        EXPECT_EQ(read_file(path("trunc")), "01");
        EXPECT_EQ(co_await op::ftruncate(ro, 1), -EINVAL); // not open for writing
        EXPECT_EQ(co_await op::ftruncate(fd, static_cast<std::uint64_t>(-5)), -EINVAL);
        EXPECT_EQ(co_await op::ftruncate(closed_fd(), 0), -EBADF);
        EXPECT_EQ(co_await op::ftruncate(Fixed{3}, 0), -EBADF);
    }());
}

// --- splice and tee ------------------------------------------------------------------------

TEST_F(FileOp, SpliceFileThroughPipeToFile) {
    write_file(path("src"), "spliced through a pipe");
    Fd src(::open(path("src").c_str(), O_RDONLY | O_CLOEXEC));
    Fd dst = open_rw("dst");
    Pipe p;
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::splice(src, 0, p.w, op::no_offset, 64), 22);
        EXPECT_EQ(co_await op::splice(p.r, op::no_offset, dst, 0, 64), 22);
        EXPECT_EQ(co_await op::splice(src, 22, p.w, op::no_offset, 64), 0); // end of input
        // Neither side a pipe; a pipe with an offset; a closed fd.
        EXPECT_EQ(co_await op::splice(src, 0, dst, 0, 8), -EINVAL);
        EXPECT_EQ(co_await op::splice(src, 0, p.w, 0, 8), -ESPIPE);
        EXPECT_EQ(co_await op::splice(closed_fd(), 0, p.w, op::no_offset, 8), -EBADF);
    });
    EXPECT_EQ(read_file(path("dst")), "spliced through a pipe");
}

TEST_F(FileOp, SpliceFixedFiles) {
    RINGO_IO_URING_ONLY("registered files");
    Runtime rt;
    write_file(path("src"), "fixed splice");
    Fd src(::open(path("src").c_str(), O_RDONLY | O_CLOEXEC));
    Fd dst = open_rw("dst");
    Pipe p;
    ringo::op::FileTable files(rt);
    int fds[4] = {src, p.w, p.r, dst};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        // Fixed input (SPLICE_F_FD_IN_FIXED) and fixed output (IOSQE_FIXED_FILE).
        EXPECT_EQ(co_await op::splice(Fixed{0}, 0, Fixed{1}, op::no_offset, 64), 12);
        EXPECT_EQ(co_await op::splice(Fixed{2}, op::no_offset, dst, 0, 64), 12);
        EXPECT_EQ(co_await op::splice(Fixed{9}, 0, p.w, op::no_offset, 8), -EBADF);
    }());
    EXPECT_EQ(read_file(path("dst")), "fixed splice");
}

TEST_F(FileOp, TeeDuplicatesPipeContent) {
    Pipe a, b;
    ASSERT_EQ(::write(a.w, "teedata", 7), 7);
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::tee(a.r, b.w, 64), 7);
        char x[16] = {}, y[16] = {};
        EXPECT_EQ(co_await op::read(b.r, y, sizeof y, op::current_pos), 7);
        EXPECT_EQ(co_await op::read(a.r, x, sizeof x, op::current_pos), 7); // still in pipe a
        EXPECT_EQ(std::string(x, 7), "teedata");
        EXPECT_EQ(std::string(y, 7), "teedata");
        TempDir d;
        Fd f(::open(d.file("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
        EXPECT_EQ(co_await op::tee(f, b.w, 8), -EINVAL); // input not a pipe
        EXPECT_EQ(co_await op::tee(closed_fd(), b.w, 8), -EBADF);
    });
}

TEST_F(FileOp, TeeFixedFiles) {
    RINGO_IO_URING_ONLY("registered files");
    Runtime rt;
    Pipe a, b;
    ASSERT_EQ(::write(a.w, "fx", 2), 2);
    ringo::op::FileTable files(rt);
    int fds[2] = {a.r, b.w};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> { EXPECT_EQ(co_await op::tee(Fixed{0}, Fixed{1}, 8), 2); }());
    char y[4] = {};
    EXPECT_EQ(::read(b.r, y, sizeof y), 2);
}

// --- provided buffers ----------------------------------------------------------------------

TEST_F(FileOp, ReadWithProvidedBuffers) {
    RINGO_IO_URING_ONLY("PROVIDE_BUFFERS groups");
    write_file(path("pb"), "provided");
    Fd fd(::open(path("pb").c_str(), O_RDONLY | O_CLOEXEC));
    static char pool[4][64];
    run([&]() -> Task<void> {
        const op::BufferGroup g{7};
        EXPECT_EQ(co_await op::provide_buffers(pool, 64, 4, g, 10), 0);
        auto rd = op::read(fd, g, 64, 0);
        int n = co_await rd;
        EXPECT_EQ(n, 8);
        EXPECT_TRUE(op::has_buffer(rd.result_flags()));
        std::uint16_t id = op::buffer_id(rd.result_flags());
        EXPECT_GE(id, 10);
        EXPECT_LT(id, 14);
        EXPECT_EQ(std::string(pool[id - 10], 8), "provided");
        EXPECT_EQ(co_await op::remove_buffers(10, g), 3); // the three left
        EXPECT_EQ(co_await op::read(fd, g, 64, 0), -ENOBUFS);
        EXPECT_EQ(co_await op::remove_buffers(1, op::BufferGroup{4321}), -ENOENT); // no such group
    });
}

// --- IOPOLL ----------------------------------------------------------------------------------

TEST_F(FileOp, ReadFixedOnIopollRing) {
    // IOPOLL needs O_DIRECT on a device with poll queues. Ask the kernel with a bare ring
    // first; a virtio disk answers -EOPNOTSUPP.
    write_file(path("direct"), std::string(4096, 'd'));
    Fd fd(::open(path("direct").c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    if (fd < 0)
        GTEST_SKIP() << "O_DIRECT not supported on the temporary directory's file system";
    AlignedBuf b(4096);
    io_uring ring;
    ASSERT_EQ(io_uring_queue_init(4, &ring, IORING_SETUP_IOPOLL), 0);
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, fd, b.p, 4096, 0);
    io_uring_submit(&ring);
    io_uring_cqe* cqe = nullptr;
    ASSERT_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
    int probe = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    io_uring_queue_exit(&ring);
    if (probe == -EOPNOTSUPP)
        GTEST_SKIP() << "IOPOLL is not supported by the device behind " << dir.path()
                     << " (no poll queues, e.g. virtio): the read answered -EOPNOTSUPP";
    ASSERT_EQ(probe, 4096);
    Runtime rt{ringo::RuntimeOptions{}.iopoll()};
    ringo::buf::BufferTable bufs(rt);
    iovec reg = b.iov();
    ASSERT_EQ(bufs.register_buffers({&reg, 1}), 0);
    rt.block_on([&]() -> Task<void> { EXPECT_EQ(co_await op::read_fixed(fd, b.p, 4096, 0, 0), 4096); }());
}

struct FileOps : ::testing::Test {
    ringo_test::TempDir dir;
};

TEST_F(FileOps, WriteThenReadBack) {
    std::string path = dir.file("a");
    auto r = run([&]() -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
        EXPECT_GE(fd, 0);
        const char msg[] = "hello ringo";
        EXPECT_EQ(co_await op::write(fd, msg, sizeof msg - 1, 0), static_cast<int>(sizeof msg - 1));
        char buf[64] = {};
        int n = co_await op::read(fd, buf, sizeof buf, 0);
        EXPECT_EQ(n, static_cast<int>(sizeof msg - 1));
        EXPECT_EQ(co_await op::read(fd, buf, sizeof buf, 1000), 0); // past EOF
        EXPECT_EQ(co_await op::close(fd), 0);
        co_return std::string(buf, n > 0 ? n : 0);
    });
    EXPECT_EQ(r, "hello ringo");
}

TEST_F(FileOps, ReadAtCurrentPosition) {
    std::string path = dir.file("pos");
    {
        int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
        ASSERT_EQ(::write(fd, "abcdef", 6), 6);
        ::close(fd);
    }
    auto r = run([&]() -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_RDONLY);
        char a[3], b[3];
        EXPECT_EQ(co_await op::read(fd, a, 3, op::current_pos), 3);
        EXPECT_EQ(co_await op::read(fd, b, 3, op::current_pos), 3);
        co_await op::close(fd);
        co_return std::string(a, 3) + "|" + std::string(b, 3);
    });
    EXPECT_EQ(r, "abc|def");
}

TEST_F(FileOps, VectoredWriteAndRead) {
    std::string path = dir.file("v");
    auto r = run([&]() -> Task<std::string> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR, 0644);
        char p1[] = "abc", p2[] = "defg";
        iovec out[2] = {{p1, 3}, {p2, 4}};
        EXPECT_EQ(co_await op::writev(fd, out, 2, 0), 7);
        char q1[4] = {}, q2[3] = {};
        iovec in[2] = {{q1, 4}, {q2, 3}};
        EXPECT_EQ(co_await op::readv(fd, in, 2, 0), 7);
        co_await op::close(fd);
        co_return std::string(q1, 4) + std::string(q2, 3);
    });
    EXPECT_EQ(r, "abcdefg");
}

TEST_F(FileOps, FsyncAndDatasync) {
    std::string path = dir.file("s");
    run([&]() -> Task<void> {
        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR, 0644);
        EXPECT_EQ(co_await op::write(fd, "x", 1, 0), 1);
        EXPECT_EQ(co_await op::fsync(fd), 0);
        EXPECT_EQ(co_await op::fsync(fd, op::fsync_datasync), 0);
        co_await op::close(fd);
        EXPECT_EQ(co_await op::fsync(closed_fd()), -EBADF);
    });
}

TEST_F(FileOps, Statx) {
    std::string path = dir.file("st");
    {
        int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
        ASSERT_EQ(::write(fd, "12345", 5), 5);
        ::close(fd);
    }
    run([&]() -> Task<void> {
        struct statx st {};
        EXPECT_EQ(co_await op::statx(AT_FDCWD, path.c_str(), 0, STATX_SIZE | STATX_MODE, &st), 0);
        EXPECT_EQ(st.stx_size, 5u);
        EXPECT_EQ(st.stx_mode & 0777, 0600u);
        std::string missing = path + ".missing";
        EXPECT_EQ(co_await op::statx(AT_FDCWD, missing.c_str(), 0, STATX_SIZE, &st), -ENOENT);
        EXPECT_EQ(co_await op::statx(AT_FDCWD, static_cast<const char*>(bad_address()), 0, STATX_SIZE, &st), -EFAULT);
    });
}

TEST_F(FileOps, OpenErrors) {
    std::string missing = dir.file("nope");
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::openat(AT_FDCWD, missing.c_str(), O_RDONLY), -ENOENT);
        EXPECT_EQ(co_await op::openat(closed_fd(), "relative", O_RDONLY), -EBADF);
        EXPECT_EQ(co_await op::openat(AT_FDCWD, static_cast<const char*>(bad_address()), O_RDONLY), -EFAULT);
    });
}

TEST_F(FileOps, ErrorsOnBadFdsAndBuffers) {
    std::string path = dir.file("e");
    run([&]() -> Task<void> {
        char buf[16];
        int bad = closed_fd();
        EXPECT_EQ(co_await op::read(bad, buf, sizeof buf, 0), -EBADF);
        EXPECT_EQ(co_await op::write(bad, buf, sizeof buf, 0), -EBADF);
        EXPECT_EQ(co_await op::close(bad), -EBADF);
        EXPECT_EQ(co_await op::close(-1), -EBADF);
        iovec iov{buf, sizeof buf};
        EXPECT_EQ(co_await op::readv(bad, &iov, 1, 0), -EBADF);
        EXPECT_EQ(co_await op::writev(bad, &iov, 1, 0), -EBADF);

        int fd = co_await op::openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR, 0644);
        EXPECT_EQ(co_await op::write(fd, "data", 4, 0), 4);
        // Zero-length transfers are not errors.
        EXPECT_EQ(co_await op::read(fd, buf, 0, 0), 0);
        EXPECT_EQ(co_await op::write(fd, buf, 0, 0), 0);
        // The kernel reports bad user addresses as -EFAULT.
        EXPECT_EQ(co_await op::read(fd, bad_address(), 4, 0), -EFAULT);
        EXPECT_EQ(co_await op::write(fd, bad_address(), 4, 0), -EFAULT);
        // Writing to a read-only descriptor.
        int ro = co_await op::openat(AT_FDCWD, path.c_str(), O_RDONLY);
        EXPECT_EQ(co_await op::write(ro, "x", 1, 0), -EBADF);
        co_await op::close(ro);
        co_await op::close(fd);
        // An fd used after it was closed.
        EXPECT_EQ(co_await op::read(fd, buf, 4, 0), -EBADF);
    });
}

} // namespace
