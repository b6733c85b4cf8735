// op/poll.hpp, op/timeout.hpp, op/cancel.hpp: poll_add, poll_remove, poll_update,
// timeout_remove, timeout_update, link_timeout, async_cancel (by user data, by fd, any, all).
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

// Awaits an operation that lives in the caller's frame (so the caller can name it).
template <class O>
Task<int> await_ref(O& o) {
    co_return co_await o;
}

// --- poll --------------------------------------------------------------------------------------

TEST(PollOp, ReadyAndWaiting) {
    Pipe p;
    run([&]() -> Task<void> {
        EXPECT_EQ(co_await op::poll_add(p.w, POLLOUT), POLLOUT); // a pipe with room is writable
        auto waiting = ringo::spawn([](int fd) -> Task<int> { co_return co_await op::poll_add(fd, POLLIN); }(p.r));
        co_await op::nop(); // the poll is armed by now
        EXPECT_FALSE(waiting.is_finished());
        EXPECT_EQ(co_await op::write(p.w, "x", 1, op::current_pos), 1);
        EXPECT_EQ(co_await waiting, POLLIN);
        EXPECT_EQ(co_await op::poll_add(closed_fd(), POLLIN), -EBADF);
    });
}

TEST(PollOp, FixedFile) {
    Runtime rt;
    Pipe p;
    ringo::buf::FileTable files(rt);
    int fds[2] = {p.r, p.w};
    ASSERT_EQ(files.register_files(fds), 0);
    ASSERT_EQ(::write(p.w, "y", 1), 1);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::poll_add(Fixed{0}, POLLIN), POLLIN);
        EXPECT_EQ(co_await op::poll_add(Fixed{1}, POLLOUT), POLLOUT);
        EXPECT_EQ(co_await op::poll_add(Fixed{4}, POLLIN), -EBADF);
    }());
}

TEST(PollOp, RemoveCancelsThePoll) {
    Pipe p;
    run([&]() -> Task<void> {
        auto poll = op::poll_add(p.r, POLLIN);
        auto h = ringo::spawn(await_ref(poll));
        co_await op::nop();
        EXPECT_EQ(co_await op::poll_remove(op::user_data_of(poll)), 0);
        EXPECT_EQ(co_await h, -ECANCELED);
        EXPECT_EQ(co_await op::poll_remove(op::user_data_of(poll)), -ENOENT); // gone
    });
}

TEST(PollOp, UpdateChangesTheEvents) {
    TcpPair tcp;
    run([&]() -> Task<void> {
        auto poll = op::poll_add(tcp.client, POLLPRI); // no urgent data will come
        auto h = ringo::spawn(await_ref(poll));
        co_await op::nop();
        EXPECT_FALSE(h.is_finished());
        EXPECT_EQ(co_await op::poll_update(op::user_data_of(poll), POLLOUT), 0);
        EXPECT_EQ(co_await h, POLLOUT); // re-armed for POLLOUT: ready at once
        EXPECT_EQ(co_await op::poll_update(op::user_data_of(poll), POLLIN), -ENOENT);
    });
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
    Runtime rt;
    Pipe p;
    ringo::buf::FileTable files(rt);
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
