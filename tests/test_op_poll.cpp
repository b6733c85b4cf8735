// op/poll.hpp: poll_add, poll_remove, poll_update.
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
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    Pipe p;
    ringo::op::FileTable files(rt);
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
    RINGO_IO_URING_ONLY("poll update");
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

} // namespace
