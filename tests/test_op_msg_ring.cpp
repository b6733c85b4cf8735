// op/msg_ring.hpp: msg_ring (data) and msg_ring_fd (a registered file) between rings, the
// Mailbox that receives them, and CQEs with user_data 0 that the target ignores.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;
using namespace std::chrono_literals;

namespace {

// Takes up to `n` messages from `box`, waiting at most ~`limit_ms` in 1 ms steps. (Written
// with a break: GCC 12 at -O2 miscompiled an equivalent loop whose condition re-read the
// vector after the co_await, keeping a stale end pointer in a register across resumption.)
Task<std::vector<op::Mailbox::Message>> take(op::Mailbox& box, std::size_t n, int limit_ms) {
    std::vector<op::Mailbox::Message> got;
    for (int waited = 0; waited < limit_ms; ++waited) {
        op::Mailbox::Message m{};
        while (got.size() < n && box.try_receive(m))
            got.push_back(m);
        if (got.size() >= n)
            break;
        co_await op::timeout(1ms);
    }
    co_return got;
}

// The sender's CQE may come before the target's (the target's is posted as task work):
// lets the loop run until `box` has seen `n` messages (bounded).
Task<void> settle(op::Mailbox& box, std::size_t n) {
    for (int i = 0; i < 5000 && box.pending() + box.dropped() < n; ++i) {
        co_await op::timeout(1ms);
    }
}

TEST(MsgRing, ToOwnMailbox) {
    RINGO_IO_URING_ONLY("msg_ring");
    Runtime rt;
    op::Mailbox box(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::msg_ring(box, 42), 0);
        op::Mailbox::Message m = co_await box.receive();
        EXPECT_EQ(m.value, 42);
        // A receiver that waits, then a message arrives.
        auto r = ringo::spawn([](op::Mailbox& b) -> Task<int> { co_return (co_await b.receive()).value; }(box));
        co_await op::nop();
        EXPECT_FALSE(r.is_finished());
        EXPECT_EQ(co_await op::msg_ring(box, 7), 0);
        EXPECT_EQ(co_await r, 7);
        // Passed CQE flags (IORING_MSG_RING_FLAGS_PASS).
        EXPECT_EQ(co_await op::msg_ring(box, 1, 0xabc0000), 0);
        m = co_await box.receive();
        EXPECT_EQ(m.value, 1);
        EXPECT_EQ(m.flags, 0xabc0000u);
    }());
    EXPECT_EQ(box.pending(), 0u);
}

TEST(MsgRing, MailboxOverflowAndSecondReceiver) {
    RINGO_IO_URING_ONLY("msg_ring");
    Runtime rt;
    op::Mailbox box(rt, 2);
    rt.block_on([&]() -> Task<void> {
        for (std::uint32_t i = 0; i < 3; ++i)
            EXPECT_EQ(co_await op::msg_ring(box, i), 0);
        co_await settle(box, 3);
        EXPECT_EQ(box.pending(), 2u);
        EXPECT_EQ(box.dropped(), 1u);
        EXPECT_EQ((co_await box.receive()).value, 0);
        EXPECT_EQ((co_await box.receive()).value, 1);
        auto first = ringo::spawn([](op::Mailbox& b) -> Task<int> { co_return (co_await b.receive()).value; }(box));
        co_await op::nop();
        EXPECT_EQ((co_await box.receive()).value, -EBUSY); // one receiver at a time
        EXPECT_EQ(co_await op::msg_ring(box, 5), 0);
        EXPECT_EQ(co_await first, 5);
    }());
}

TEST(MsgRing, CancelledReceiver) {
    RINGO_IO_URING_ONLY("msg_ring");
    Runtime rt;
    op::Mailbox box(rt);
    rt.block_on([&]() -> Task<void> {
        auto r = ringo::spawn([](op::Mailbox& b) -> Task<int> { co_return (co_await b.receive()).value; }(box));
        co_await op::nop();
        r.cancel();
        EXPECT_EQ(co_await r, -ECANCELED);
        EXPECT_EQ(co_await op::msg_ring(box, 9), 0); // the mailbox still works
        EXPECT_EQ((co_await box.receive()).value, 9);
    }());
}

TEST(MsgRing, UserDataZeroIsIgnoredByTheTarget) {
    RINGO_IO_URING_ONLY("msg_ring");
    Runtime rt;
    rt.block_on([&]() -> Task<void> {
        auto before = rt.stats().cqes;
        EXPECT_EQ(co_await op::msg_ring(rt.ring_fd(), 99, 0), 0);
        // The loop goes on; the target's CQE (ours too, here) arrives and is skipped.
        for (int i = 0; i < 1000 && rt.stats().cqes - before < 3; ++i)
            EXPECT_EQ(co_await op::nop(), 0);
        EXPECT_GE(rt.stats().cqes - before, 3u); // the send's, the target's, a nop's
    }());
}

TEST(MsgRing, DataToAnotherThreadsRuntime) {
    RINGO_IO_URING_ONLY("msg_ring");
    std::promise<const op::Mailbox*> ready;
    std::vector<op::Mailbox::Message> got;
    std::thread target([&] {
        Runtime rt;
        op::Mailbox box(rt);
        ready.set_value(&box);
        got = rt.block_on(take(box, 3, 5000));
    });
    const op::Mailbox* box = ready.get_future().get();
    Runtime rt;
    rt.block_on([&]() -> Task<void> {
        for (std::uint32_t v : {10u, 20u, 30u})
            EXPECT_EQ(co_await op::msg_ring(*box, v), 0);
    }());
    target.join();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].value, 10);
    EXPECT_EQ(got[1].value, 20);
    EXPECT_EQ(got[2].value, 30);
}

TEST(MsgRing, PassARegisteredFileToAnotherRing) {
    RINGO_IO_URING_ONLY("msg_ring");
    Pipe p;
    ASSERT_EQ(::write(p.w, "passed fd", 9), 9);
    std::promise<const op::Mailbox*> ready;
    std::string read_back;
    int slot_seen = -100;
    std::thread target([&] {
        Runtime rt;
        ringo::op::FileTable files(rt);
        if (files.register_sparse(4) != 0)
            std::abort();
        op::Mailbox box(rt);
        ready.set_value(&box);
        rt.block_on([&]() -> Task<void> {
            auto got = co_await take(box, 1, 5000);
            if (got.empty())
                co_return;
            slot_seen = got[0].value;
            if (slot_seen < 0)
                co_return;
            char buf[16] = {};
            int n = co_await op::read(Fixed{static_cast<unsigned>(slot_seen)}, buf, sizeof buf, op::current_pos);
            if (n > 0)
                read_back.assign(buf, static_cast<std::size_t>(n));
        }());
    });
    const op::Mailbox* box = ready.get_future().get();
    Runtime rt;
    ringo::op::FileTable files(rt);
    int fds[2] = {p.r, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    int sent = rt.block_on([&]() -> Task<int> { co_return co_await op::msg_ring_fd(*box, 0); }());
    target.join();
    EXPECT_GE(sent, 0);
    EXPECT_EQ(slot_seen, sent); // both sides learn the slot the kernel picked
    EXPECT_EQ(read_back, "passed fd");
}

TEST(MsgRing, Errors) {
    RINGO_IO_URING_ONLY("msg_ring");
    Runtime rt;
    Runtime other; // no file table
    Pipe p;
    ringo::op::FileTable files(rt);
    int fds[2] = {p.r, -1};
    ASSERT_EQ(files.register_files(fds), 0);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::msg_ring(closed_fd(), 1, 0), -EBADF);
        EXPECT_EQ(co_await op::msg_ring(p.w, 1, 0), -EBADFD); // not a ring
        EXPECT_EQ(co_await op::msg_ring(Fixed{3}, 1, 0), -EBADF);
        EXPECT_EQ(co_await op::msg_ring_fd(rt.ring_fd(), 0, op::alloc_slot), -EINVAL);    // to itself
        EXPECT_EQ(co_await op::msg_ring_fd(other.ring_fd(), 1, op::alloc_slot), -EBADF);  // empty source slot
        EXPECT_EQ(co_await op::msg_ring_fd(other.ring_fd(), 0, op::alloc_slot), -ENFILE); // target has no table
        EXPECT_EQ(co_await op::msg_ring_fd(other.ring_fd(), 0, 3), -ENXIO); // a chosen slot, no target table
        EXPECT_EQ(co_await op::msg_ring_fd(other.ring_fd(), 7, op::alloc_slot), -EBADF); // source slot past the end
        EXPECT_EQ(co_await op::msg_ring_fd(p.w, 0, op::alloc_slot), -EBADFD);
    }());
}

} // namespace
