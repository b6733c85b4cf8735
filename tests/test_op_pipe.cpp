// op/pipe.hpp: pipe and pipe_direct.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

bool have_pipe(const Runtime& rt) { return rt.supports(compat::opcode::pipe); }

TEST(PipeOp, CreatesAWorkingPipe) {
    Runtime rt;
    if (!have_pipe(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_PIPE (6.16)";
    rt.block_on([&]() -> Task<void> {
        int fds[2] = {-1, -1};
        EXPECT_EQ(co_await op::pipe(fds, O_CLOEXEC | O_NONBLOCK), 0);
        Fd r(fds[0]), w(fds[1]);
        EXPECT_GE(r.get(), 0);
        EXPECT_GE(w.get(), 0);
        EXPECT_EQ(::fcntl(r, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        EXPECT_TRUE(::fcntl(r, F_GETFL) & O_NONBLOCK);
        EXPECT_EQ(co_await op::write(w, "pipe", 4, op::current_pos), 4);
        char buf[8] = {};
        EXPECT_EQ(co_await op::read(r, buf, sizeof buf, op::current_pos), 4);
        EXPECT_EQ(std::string(buf, 4), "pipe");
        EXPECT_EQ(::read(r, buf, 1), -1); // non-blocking and empty
        int plain[2] = {-1, -1};
        EXPECT_EQ(co_await op::pipe(plain), 0);
        EXPECT_EQ(::fcntl(plain[0], F_GETFD) & FD_CLOEXEC, 0);
        ::close(plain[0]);
        ::close(plain[1]);
    }());
}

TEST(PipeOp, BadInput) {
    Runtime rt;
    if (!have_pipe(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_PIPE (6.16)";
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::pipe(static_cast<int*>(bad_address())), -EFAULT);
        int fds[2];
        EXPECT_EQ(co_await op::pipe(fds, O_APPEND), -EINVAL); // not a pipe2 flag
    }());
}

TEST(PipeOp, DirectIntoAllocatedSlots) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    if (!have_pipe(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_PIPE (6.16)";
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(4), 0);
    rt.block_on([&]() -> Task<void> {
        int slots[2] = {-1, -1};
        EXPECT_EQ(co_await op::pipe_direct(slots), 0);
        EXPECT_GE(slots[0], 0);
        EXPECT_GE(slots[1], 0);
        EXPECT_NE(slots[0], slots[1]);
        Fixed r{static_cast<unsigned>(slots[0])}, w{static_cast<unsigned>(slots[1])};
        EXPECT_EQ(co_await op::write(w, "direct", 6, op::current_pos), 6);
        char buf[8] = {};
        EXPECT_EQ(co_await op::read(r, buf, sizeof buf, op::current_pos), 6);
        EXPECT_EQ(std::string(buf, 6), "direct");
        // A chosen slot: the ends go to slots 2 and 3.
        int chosen[2] = {-1, -1};
        EXPECT_EQ(co_await op::pipe_direct(chosen, 2), 0);
        EXPECT_EQ(co_await op::write(Fixed{3}, "23", 2, op::current_pos), 2);
        EXPECT_EQ(co_await op::read(Fixed{2}, buf, sizeof buf, op::current_pos), 2);
        // O_CLOEXEC means nothing for a slot; the table is full now.
        EXPECT_EQ(co_await op::pipe_direct(chosen, op::alloc_slot, O_CLOEXEC), -EINVAL);
        EXPECT_EQ(co_await op::pipe_direct(chosen), -ENFILE);
    }());
}

TEST(PipeOp, DirectWithoutTable) {
    RINGO_IO_URING_ONLY("direct descriptors (the epoll engine answers -EOPNOTSUPP)");
    Runtime rt;
    if (!have_pipe(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_PIPE (6.16)";
    rt.block_on([&]() -> Task<void> {
        int slots[2];
        EXPECT_EQ(co_await op::pipe_direct(slots), -ENFILE);
        EXPECT_EQ(co_await op::pipe_direct(slots, 0), -ENXIO);
    }());
}

} // namespace
