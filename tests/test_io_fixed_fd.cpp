// FixedFd (io/fixed_fd.hpp): an owned slot of the registered file table is emptied on every
// path out of the code that holds it. A slot that is emptied drops the table's reference to
// its file, so with the write end of a pipe in the slot (and no other descriptor of that
// end), the pipe's reader sees the end of the stream exactly when the slot was emptied.
#include <ringo/io/fixed_fd.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::Fd;
using ringo::FixedFd;
using ringo::Task;
namespace op = ringo::op;

struct PipeEnds {
    int r = -1;
    int w = -1;
    PipeEnds() {
        int p[2];
        EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
        r = p[0];
        w = p[1]; // owned by the test's FixedFd from install() on
    }
    ~PipeEnds() {
        if (r >= 0)
            ::close(r);
    }
};

// True when the pipe's reader sees the end of the stream (every write end is gone) within 2 s.
bool reader_sees_eof(int r) {
    pollfd p{r, POLLIN, 0};
    if (::poll(&p, 1, 2000) != 1)
        return false;
    char c;
    return ::read(r, &c, 1) == 0;
}

Task<ringo::Result<FixedFd>> install(int fd) { co_return co_await FixedFd::install(Fd(fd)); }

// Installs the pipe's write end, writes a byte through the slot; the FixedFd then goes.
Task<int> install_and_write(int w, int* slot_out) {
    auto f = co_await FixedFd::install(Fd(w));
    if (!f)
        co_return -f.error().value();
    *slot_out = f->slot();
    int n = co_await op::write(*f, "x", 1, 0);
    co_return n;
}

Task<int> write_to_slot(unsigned slot) { co_return co_await op::write(op::Fixed{slot}, "y", 1, 0); }

TEST(FixedFd, InstallMovesTheFileIntoASlotAndTheSlotEmptiesWhenItGoes) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    op::FileTable table(rt);
    ASSERT_EQ(table.register_sparse(8), 0);
    PipeEnds p;
    int before = ringo_test::open_fds();
    int slot = -1;
    EXPECT_EQ(rt.block_on(install_and_write(p.w, &slot)), 1);
    ASSERT_GE(slot, 0);
    ASSERT_LT(slot, 8);
    EXPECT_EQ(ringo_test::open_fds(), before - 1); // the plain write end is closed
    char c = 0;
    EXPECT_EQ(::read(p.r, &c, 1), 1);
    EXPECT_EQ(c, 'x');
    EXPECT_TRUE(reader_sees_eof(p.r)); // the slot was emptied when the FixedFd went
    EXPECT_EQ(rt.block_on(write_to_slot(static_cast<unsigned>(slot))), -EBADF);
}

Task<int> close_twice(int w) {
    auto f = co_await FixedFd::install(Fd(w));
    if (!f)
        co_return -1000;
    FixedFd fd = std::move(*f);
    int a = co_await fd.close();
    int b = co_await fd.close();
    co_return a == 0 && b == -EBADF && !fd ? 0 : -1;
}

TEST(FixedFd, CloseEmptiesTheSlotAndASecondCloseIsEbadf) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    op::FileTable table(rt);
    ASSERT_EQ(table.register_sparse(4), 0);
    PipeEnds p;
    EXPECT_EQ(rt.block_on(close_twice(p.w)), 0);
    EXPECT_TRUE(reader_sees_eof(p.r));
}

// Holds the slot and waits for a byte that never comes.
Task<void> hold_and_wait(FixedFd f, int r) {
    char c;
    (void)co_await op::read(r, &c, 1, 0);
    (void)f;
}

Task<bool> cancel_holder(int w, int r) {
    auto f = co_await FixedFd::install(Fd(w));
    if (!f)
        co_return false;
    auto h = ringo::spawn(hold_and_wait(std::move(*f), r));
    co_await ringo::sleep_for(10ms);
    h.cancel();
    try {
        co_await h;
    } catch (...) {
    }
    co_await ringo::yield(); // the unawaited close leaves with the next submission
    co_return true;
}

TEST(FixedFd, ACancelledTaskEmptiesItsSlot) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    op::FileTable table(rt);
    ASSERT_EQ(table.register_sparse(4), 0);
    PipeEnds p;
    int other[2];
    ASSERT_EQ(::pipe2(other, O_CLOEXEC), 0); // what the holder waits on
    EXPECT_TRUE(rt.block_on(cancel_holder(p.w, other[0])));
    EXPECT_TRUE(reader_sees_eof(p.r));
    ::close(other[0]);
    ::close(other[1]);
}

// Hands the FixedFd to another thread, which drops it while this task waits for the pipe's
// end of stream (read through the ring): the slot is emptied by a task spawned onto this
// runtime.
Task<int> drop_on_other_thread(int w, int r) {
    auto f = co_await FixedFd::install(Fd(w));
    if (!f)
        co_return -1000;
    std::thread t([g = std::move(*f)]() mutable { g.reset(); });
    char c;
    int n = co_await ringo::with_timeout(op::read(r, &c, 1, 0), 2s);
    t.join();
    co_return n;
}

TEST(FixedFd, DroppedOnAnotherThreadEmptiesItsSlotThroughItsRuntime) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    op::FileTable table(rt);
    ASSERT_EQ(table.register_sparse(4), 0);
    PipeEnds p;
    EXPECT_EQ(rt.block_on(drop_on_other_thread(p.w, p.r)), 0); // EOF, not -ETIME
}

TEST(FixedFd, InstallWithoutATableIsEnxioAndClosesTheDescriptor) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    PipeEnds p;
    int before = ringo_test::open_fds();
    auto r = rt.block_on(install(p.w));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().value(), ENXIO) << r.error().message();
    EXPECT_EQ(ringo_test::open_fds(), before - 1);
    EXPECT_TRUE(reader_sees_eof(p.r));
}

Task<int> fill_table(int w1, int w2) {
    auto a = co_await FixedFd::install(Fd(w1));
    if (!a)
        co_return -1000;
    auto b = co_await FixedFd::install(Fd(w2));
    co_return b ? 0 : b.error().value();
}

TEST(FixedFd, InstallIntoAFullTableIsEnfile) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    op::FileTable table(rt);
    ASSERT_EQ(table.register_sparse(1), 0);
    PipeEnds p1, p2;
    EXPECT_EQ(rt.block_on(fill_table(p1.w, p2.w)), ENFILE);
    EXPECT_TRUE(reader_sees_eof(p1.r));
    EXPECT_TRUE(reader_sees_eof(p2.r));
}

TEST(FixedFd, InstallOfAnEmptyFdIsEbadf) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    ringo::Runtime rt;
    op::FileTable table(rt);
    ASSERT_EQ(table.register_sparse(1), 0);
    auto r = rt.block_on(install(-1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().value(), EBADF);
    // A FixedFd that owns nothing names descriptor -1 and empties nothing.
    FixedFd none;
    EXPECT_FALSE(none);
    EXPECT_EQ(none.slot(), -1);
    EXPECT_EQ(none.runtime(), nullptr);
}

Task<void> pause(std::chrono::milliseconds d) { co_await ringo::sleep_for(d); }

// Holds a slot and waits for a byte that never comes.
Task<void> hold_slot_forever(int w, int r) {
    auto f = co_await FixedFd::install(Fd(w));
    char c;
    (void)co_await op::read(r, &c, 1, 0);
    (void)f;
}

TEST(FixedFd, AFrameDestroyedAfterItsRuntimeLeavesTheRuntimeAlone) {
    RINGO_IO_URING_ONLY("registered files (fixed_fd_install)");
    // The runtime goes while a task holding a FixedFd waits; the task's handle, kept here,
    // destroys the frame afterwards: the FixedFd must not touch the destroyed runtime (the
    // table went with the ring, so there is nothing to empty). ASan checks the first part.
    PipeEnds p;
    int other[2];
    ASSERT_EQ(::pipe2(other, O_CLOEXEC), 0);
    ringo::JoinHandle<void> h;
    {
        auto rt = std::make_unique<ringo::Runtime>(); // on the heap: ASan sees a use after free
        auto table = std::make_unique<op::FileTable>(*rt);
        ASSERT_EQ(table->register_sparse(2), 0);
        h = ringo::spawn(*rt, hold_slot_forever(p.w, other[0]));
        rt->block_on(pause(5ms));
        table.reset();
        rt.reset();
    }
    EXPECT_THROW(h.join(), std::runtime_error); // abandoned; the frame goes here
    EXPECT_TRUE(reader_sees_eof(p.r));          // the table took the file with it
    ::close(other[0]);
    ::close(other[1]);
}

} // namespace
