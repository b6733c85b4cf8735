// op/timeout.hpp: timeout (relative, counting completions, ETIME_SUCCESS), timeout_remove,
// timeout_update, link_timeout.
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

TEST(OpTimeout, FiresWithEtime) {
    auto start = std::chrono::steady_clock::now();
    int r = run([]() -> Task<int> { co_return co_await op::timeout(std::chrono::milliseconds(20)); });
    auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r, -ETIME);
    EXPECT_GE(elapsed, std::chrono::milliseconds(19));
}

TEST(OpTimeout, NegativeDurationIsEinval) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await op::timeout(std::chrono::milliseconds(-5)); }), -EINVAL);
}

TEST(OpTimeout, CountCompletionsEndsTimeoutEarly) {
    // A timeout waiting for 1 other completion ends with 0 once a NOP completes.
    int r = run([]() -> Task<int> {
        auto t = ringo::spawn([]() -> Task<int> { co_return co_await op::timeout(std::chrono::seconds(10), 1); }());
        co_await ringo::yield();
        co_await op::nop();
        co_return co_await t;
    });
    EXPECT_EQ(r, 0);
}

TEST(OpTimeout, EtimeSuccessFlag) {
    int r = run([]() -> Task<int> {
        co_return co_await op::timeout(std::chrono::milliseconds(1), 0, ringo::uring::compat::timeout_etime_success);
    });
    EXPECT_EQ(r, -ETIME); // the CQE still carries -ETIME; only links treat it as success
}

// --- timeouts ----------------------------------------------------------------------------------

TEST(TimeoutOp, RemoveCancelsTheTimeout) {
    run([&]() -> Task<void> {
        auto t = op::timeout(10s);
        auto h = ringo::spawn(await_ref(t));
        co_await op::nop();
        EXPECT_EQ(co_await op::timeout_remove(op::user_data_of(t)), 0);
        EXPECT_EQ(co_await h, -ECANCELED);
        EXPECT_EQ(co_await op::timeout_remove(op::user_data_of(t)), -ENOENT);
    });
}

TEST(TimeoutOp, UpdateShortensTheTimeout) {
    run([&]() -> Task<void> {
        auto start = std::chrono::steady_clock::now();
        auto t = op::timeout(10s);
        auto h = ringo::spawn(await_ref(t));
        co_await op::nop();
        EXPECT_EQ(co_await op::timeout_update(op::user_data_of(t), 1ms), 0);
        EXPECT_EQ(co_await h, -ETIME);
        EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
        EXPECT_EQ(co_await op::timeout_update(op::user_data_of(t), 1ms), -ENOENT);
        // A negative duration is refused by the kernel.
        EXPECT_EQ(co_await op::timeout_update(12345, -1ms), -EINVAL);
    });
}

TEST(TimeoutOp, LinkTimeoutCancelsASlowOperation) {
    RINGO_FIFO_ONLY("the two tasks must prepare their SQEs one right after the other");
    Pipe p;
    run([&]() -> Task<void> {
        char c;
        auto rd = op::read(p.r, &c, 1, op::current_pos).with_sqe_flags(compat::sqe_flag::io_link);
        auto lt = op::link_timeout(5ms);
        auto a = ringo::spawn(await_ref(rd));
        auto b = ringo::spawn(await_ref(lt)); // prepared right after the read: linked to it
        EXPECT_EQ(co_await a, -ECANCELED);
        EXPECT_EQ(co_await b, -ETIME);
    });
}

TEST(TimeoutOp, LinkTimeoutIsCancelledWhenTheOperationFinishesFirst) {
    RINGO_FIFO_ONLY("the two tasks must prepare their SQEs one right after the other");
    Pipe p;
    ASSERT_EQ(::write(p.w, "q", 1), 1);
    run([&]() -> Task<void> {
        char c = 0;
        auto rd = op::read(p.r, &c, 1, op::current_pos).with_sqe_flags(compat::sqe_flag::io_link);
        auto lt = op::link_timeout(10s);
        auto a = ringo::spawn(await_ref(rd));
        auto b = ringo::spawn(await_ref(lt));
        EXPECT_EQ(co_await a, 1);
        EXPECT_EQ(co_await b, -ECANCELED);
        EXPECT_EQ(c, 'q');
    });
}

TEST(TimeoutOp, LinkTimeoutUpdate) {
    RINGO_FIFO_ONLY("the two tasks must prepare their SQEs one right after the other");
    Pipe p;
    run([&]() -> Task<void> {
        char c;
        auto rd = op::read(p.r, &c, 1, op::current_pos).with_sqe_flags(compat::sqe_flag::io_link);
        auto lt = op::link_timeout(10s);
        auto a = ringo::spawn(await_ref(rd));
        auto b = ringo::spawn(await_ref(lt));
        co_await op::nop();
        EXPECT_EQ(co_await op::timeout_update(op::user_data_of(lt), 1ms, compat::link_timeout_update), 0);
        EXPECT_EQ(co_await a, -ECANCELED);
        EXPECT_EQ(co_await b, -ETIME);
    });
}

TEST(TimeoutOp, LinkTimeoutWithoutALinkIsInvalid) {
    run([]() -> Task<void> { EXPECT_EQ(co_await op::link_timeout(1ms), -EINVAL); });
}

} // namespace
