// op/cancel.hpp: async_cancel by user data, by fd (one and all), by fixed fd, any.
#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;
using namespace std::chrono_literals;

namespace {

// --- cancellation ------------------------------------------------------------------------------

TEST(CancelOp, ByUserData) {
    Pipe p;
    run([&]() -> Task<void> {
        char c;
        auto rd = op::read(p.r, &c, 1, op::current_pos);
        auto h = ringo::spawn(await_ref(rd));
        co_await op::nop();
        EXPECT_EQ(co_await op::async_cancel(op::user_data_of(rd)), 0);
        EXPECT_EQ(co_await h, -ECANCELED);
        EXPECT_EQ(co_await op::async_cancel(op::user_data_of(rd)), -ENOENT);
        EXPECT_EQ(co_await op::async_cancel(0xdead0), -ENOENT);
    });
}

TEST(CancelOp, ByFdOneAndAll) {
    Pipe p;
    run([&]() -> Task<void> {
        auto reader = [](int fd) -> Task<int> {
            char c;
            co_return co_await op::read(fd, &c, 1, op::current_pos);
        };
        auto a = ringo::spawn(reader(p.r));
        auto b = ringo::spawn(reader(p.r));
        auto c = ringo::spawn(reader(p.r));
        co_await op::nop();
        EXPECT_EQ(co_await op::async_cancel_fd(p.r), 0); // one of them
        EXPECT_EQ(co_await op::async_cancel_fd(p.r, compat::async_cancel_all), 2);
        EXPECT_EQ(co_await a, -ECANCELED);
        EXPECT_EQ(co_await b, -ECANCELED);
        EXPECT_EQ(co_await c, -ECANCELED);
        EXPECT_EQ(co_await op::async_cancel_fd(p.r), -ENOENT);
        EXPECT_EQ(co_await op::async_cancel_fd(closed_fd()), -EBADF);
    });
}

TEST(CancelOp, ByFixedFd) {
    RINGO_IO_URING_ONLY("cancel by a registered file");
    Runtime rt;
    Pipe p;
    ringo::op::FileTable files(rt);
    int one = p.r;
    ASSERT_EQ(files.register_files({&one, 1}), 0);
    rt.block_on([&]() -> Task<void> {
        auto h = ringo::spawn([]() -> Task<int> {
            char c;
            co_return co_await op::read(Fixed{0}, &c, 1, op::current_pos);
        }());
        co_await op::nop();
        EXPECT_EQ(co_await op::async_cancel_fd(Fixed{0}), 0);
        EXPECT_EQ(co_await h, -ECANCELED);
        EXPECT_EQ(co_await op::async_cancel_fd(Fixed{5}), -EBADF);
    }());
}

TEST(CancelOp, AnyAll) {
    Pipe p;
    TcpPair tcp;
    run([&]() -> Task<void> {
        auto a = ringo::spawn([](int fd) -> Task<int> {
            char c;
            co_return co_await op::read(fd, &c, 1, op::current_pos);
        }(p.r));
        auto b = ringo::spawn([](int fd) -> Task<int> {
            char c;
            co_return co_await op::recv(fd, &c, 1);
        }(tcp.server));
        co_await op::nop();
        // Every operation in flight: the two reads, and the runtime's own wake-up read.
        EXPECT_GE(co_await op::async_cancel_any(compat::async_cancel_all), 2);
        EXPECT_EQ(co_await a, -ECANCELED);
        EXPECT_EQ(co_await b, -ECANCELED);
    });
}

} // namespace
