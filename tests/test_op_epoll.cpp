// op/epoll.hpp: epoll_ctl and epoll_wait on a real epoll instance watching real pipes.
#include <gtest/gtest.h>

#include <sys/epoll.h>
#include <unistd.h>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

TEST(EpollOp, CtlAndWait) {
    Runtime rt;
    if (!rt.supports(compat::opcode::epoll_ctl) || !rt.supports(compat::opcode::epoll_wait))
        GTEST_SKIP() << "kernel lacks IORING_OP_EPOLL_CTL or IORING_OP_EPOLL_WAIT (6.15)";
    Fd ep(::epoll_create1(EPOLL_CLOEXEC));
    Pipe a, b;
    rt.block_on([&]() -> Task<void> {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = 11;
        EXPECT_EQ(co_await op::epoll_ctl(ep, EPOLL_CTL_ADD, a.r, &ev), 0);
        ev.data.u64 = 22;
        EXPECT_EQ(co_await op::epoll_ctl(ep, EPOLL_CTL_ADD, b.r, &ev), 0);
        EXPECT_EQ(co_await op::epoll_ctl(ep, EPOLL_CTL_ADD, b.r, &ev), -EEXIST);
        // Nothing ready: epoll_wait waits until something is.
        epoll_event out[4] = {};
        auto w = ringo::spawn(
            [](int epfd, epoll_event* o) -> Task<int> { co_return co_await op::epoll_wait(epfd, o, 4); }(ep, out));
        co_await op::nop();
        EXPECT_FALSE(w.is_finished());
        EXPECT_EQ(co_await op::write(b.w, "b", 1, op::current_pos), 1);
        EXPECT_EQ(co_await w, 1);
        EXPECT_EQ(static_cast<std::uint64_t>(out[0].data.u64), 22u);
        EXPECT_TRUE(out[0].events & EPOLLIN);
        // Both ready.
        EXPECT_EQ(co_await op::write(a.w, "a", 1, op::current_pos), 1);
        EXPECT_EQ(co_await op::epoll_wait(ep, out, 4), 2);
        EXPECT_EQ(co_await op::epoll_ctl(ep, EPOLL_CTL_DEL, b.r, nullptr), 0);
        EXPECT_EQ(co_await op::epoll_wait(ep, out, 4), 1);
        EXPECT_EQ(static_cast<std::uint64_t>(out[0].data.u64), 11u);
        EXPECT_EQ(co_await op::epoll_ctl(ep, EPOLL_CTL_DEL, b.r, nullptr), -ENOENT);
    }());
}

TEST(EpollOp, FixedEpollFd) {
    RINGO_IO_URING_ONLY("a registered file table");
    Runtime rt;
    if (!rt.supports(compat::opcode::epoll_wait))
        GTEST_SKIP() << "kernel lacks IORING_OP_EPOLL_WAIT (6.15)";
    Fd ep(::epoll_create1(EPOLL_CLOEXEC));
    Pipe p;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 5;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, p.r, &ev), 0);
    ASSERT_EQ(::write(p.w, "x", 1), 1);
    ringo::op::FileTable files(rt);
    int one = ep;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    rt.block_on([&]() -> Task<void> {
        epoll_event out[2] = {};
        EXPECT_EQ(co_await op::epoll_wait(Fixed{0}, out, 2), 1);
        EXPECT_EQ(static_cast<std::uint64_t>(out[0].data.u64), 5u);
        EXPECT_EQ(co_await op::epoll_wait(Fixed{1}, out, 2), -EBADF);
    }());
}

TEST(EpollOp, BadInput) {
    Runtime rt;
    if (!rt.supports(compat::opcode::epoll_ctl) || !rt.supports(compat::opcode::epoll_wait))
        GTEST_SKIP() << "kernel lacks IORING_OP_EPOLL_CTL or IORING_OP_EPOLL_WAIT (6.15)";
    Fd ep(::epoll_create1(EPOLL_CLOEXEC));
    Pipe p;
    ASSERT_EQ(::write(p.w, "x", 1), 1);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, p.r, &ev), 0);
    rt.block_on([&]() -> Task<void> {
        epoll_event e{};
        e.events = EPOLLIN;
        epoll_event out[2];
        EXPECT_EQ(co_await op::epoll_ctl(closed_fd(), EPOLL_CTL_ADD, p.r, &e), -EBADF);
        EXPECT_EQ(co_await op::epoll_ctl(p.r, EPOLL_CTL_ADD, p.w, &e), -EINVAL); // not an epoll fd
        EXPECT_EQ(co_await op::epoll_ctl(ep, EPOLL_CTL_ADD, p.w, static_cast<epoll_event*>(bad_address())), -EFAULT);
        EXPECT_EQ(co_await op::epoll_wait(p.r, out, 2), -EINVAL); // not an epoll fd
        EXPECT_EQ(co_await op::epoll_wait(closed_fd(), out, 2), -EBADF);
        EXPECT_EQ(co_await op::epoll_wait(ep, out, 0), -EINVAL); // maxevents 0
        EXPECT_EQ(co_await op::epoll_wait(ep, static_cast<epoll_event*>(bad_address()), 2), -EFAULT);
    }());
}

} // namespace
