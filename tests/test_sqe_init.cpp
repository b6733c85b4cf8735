// Every SQE ringo hands out is initialised by ringo, whatever the slot held before and
// whatever the installed liburing's prep helpers clear (2.3 clears every field, 2.6 and later
// only the ones they use); in poisoning builds the fields a preparation must set start out
// as poison, so a field that no code sets fails here.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;
using ringo::Runtime;
using ringo::Task;
namespace compat = ringo::uring::compat;
namespace op = ringo::op;

namespace {

// Byte ranges of a 64-byte SQE that Ring initialises to zero (see Ring::init_sqe).
// (Byte 0, the opcode, which every preparation sets, is cleared too unless poisoning.)
bool cleared_by_init(unsigned i) {
    return (i == 0 && !ringo::uring::poisons_sqes) || (i >= 1 && i <= 3) || (i >= 28 && i <= 31) || i >= 40;
}

void dirty_every_slot(ringo::uring::Ring& ring, unsigned char byte) {
    io_uring& r = ring.raw();
    std::size_t sqe_bytes = (ring.setup_flags() & compat::setup::sqe128) ? 128 : 64;
    std::memset(r.sq.sqes, byte, sqe_bytes * r.sq.ring_entries);
}

void expect_initialised(const io_uring_sqe* s, unsigned char dirt, std::size_t size) {
    auto* b = reinterpret_cast<const unsigned char*>(s);
    for (unsigned i = 0; i < size; ++i) {
        if (i >= 64 || cleared_by_init(i))
            EXPECT_EQ(b[i], 0) << "byte " << i;
        else if (ringo::uring::poisons_sqes)
            EXPECT_EQ(b[i], ringo::uring::sqe_poison_byte) << "byte " << i;
        else
            EXPECT_EQ(b[i], dirt) << "byte " << i << " (left for the preparation to set)";
    }
}

TEST(SqeInit, GetSqeClearsWhatPrepHelpersMayLeaveWhateverTheSlotHeld) {
    ringo::uring::RingParams params;
    params.sq_entries = 4;
    ringo::uring::Ring ring(params);
    dirty_every_slot(ring, 0xff);
    for (int i = 0; i < 4; ++i) {
        io_uring_sqe* s = i % 2 ? ring.get_sqe() : ring.get_sqe_reserved();
        ASSERT_NE(s, nullptr);
        expect_initialised(s, 0xff, 64);
        // Leave the slot a valid request so the ring can be torn down cleanly.
        std::memset(s, 0, sizeof *s);
    }
    EXPECT_EQ(ring.get_sqe(), nullptr);
}

TEST(SqeInit, A128ByteSqeIsClearedToItsEnd) {
    RINGO_IO_URING_ONLY("an SQE128 ring");
    ringo::uring::RingParams params;
    params.sq_entries = 2;
    params.flags = compat::setup::sqe128;
    ringo::uring::Ring ring(params);
    ASSERT_TRUE(ring.setup_flags() & compat::setup::sqe128);
    dirty_every_slot(ring, 0x5c);
    io_uring_sqe* s = ring.get_sqe();
    expect_initialised(s, 0x5c, 128);
    std::memset(s, 0, 128);
}

// Every SQE slot of a small ring is smeared with 0xff (IOSQE flags with an invalid bit, a
// personality and buffer index nobody registered, non-zero reserved fields) before each
// operation; operations prepared through liburing's helpers and ringo's own must work all the
// same. With liburing 2.6+ and no initialisation in ringo, the first one fails with -EINVAL.
TEST(SqeInit, StaleBytesInTheSlotDoNotReachTheKernel) {
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(4)};
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    char tmpl[] = "/tmp/ringo-sqe-XXXXXX";
    int file = ::mkstemp(tmpl);
    ASSERT_GE(file, 0);
    ::unlink(tmpl);
    auto dirty = [&] { dirty_every_slot(ringo_test::ring_of(rt), 0xff); };
    rt.block_on([&]() -> Task<void> {
        char buf[16] = {};
        for (int round = 0; round < 6; ++round) { // several turns around the 4-entry SQ
            dirty();
            EXPECT_EQ(co_await op::nop(), 0);
            dirty();
            EXPECT_EQ(co_await op::write(file, "0123456789", 10, 0), 10);
            dirty();
            EXPECT_EQ(co_await op::read(file, buf, 4, 3), 4);
            EXPECT_EQ(std::string(buf, 4), "3456");
            dirty();
            EXPECT_EQ(co_await op::write(p[1], "pipe", 4, -1), 4);
            dirty();
            EXPECT_EQ(co_await op::read(p[0], buf, sizeof buf, -1), 4);
            dirty();
            EXPECT_EQ(co_await op::send(sv[0], "sock", 4, 0), 4);
            dirty();
            EXPECT_EQ(co_await op::recv(sv[1], buf, sizeof buf, 0), 4);
            dirty();
            EXPECT_EQ(co_await op::poll_add(sv[1], POLLOUT), POLLOUT);
            dirty();
            EXPECT_EQ(co_await op::timeout(1ms), -ETIME);
            dirty();
            auto [a, b] = co_await ringo::when_all(op::nop(), op::write(p[1], "x", 1, -1));
            EXPECT_EQ(a, 0);
            EXPECT_EQ(b, 1);
            dirty();
            EXPECT_EQ(co_await op::read(p[0], buf, sizeof buf, -1), 1);
            dirty();
            EXPECT_EQ(co_await op::fsync(file, 0), 0);
        }
    }());
    ::close(file);
    for (int fd : {p[0], p[1], sv[0], sv[1]})
        ::close(fd);
}

// Poisoning builds only: a hand-made preparation that forgets a field the kernel reads
// (here the file offset of a read) reaches the kernel with poison in it and fails, where
// an all-zero slot would silently have read from offset 0.
TEST(SqeInit, PoisonMakesAFieldNoCodeSetsFail) {
    if (!ringo::uring::poisons_sqes)
        GTEST_SKIP() << "this build does not poison SQEs (RINGO_POISON_SQES is on in the sanitizer builds)";
    Runtime rt;
    char tmpl[] = "/tmp/ringo-poison-XXXXXX";
    int file = ::mkstemp(tmpl);
    ASSERT_GE(file, 0);
    ::unlink(tmpl);
    ASSERT_EQ(::pwrite(file, "data", 4, 0), 4);
    struct Log : ringo::Completion {
        std::vector<int> res;
    } log;
    log.fn = [](ringo::Completion* c, int res, std::uint32_t) {
        static_cast<Log*>(c)->res.push_back(res);
        ringo::op::raw::finished(*ringo::Runtime::current());
    };
    char buf[8];
    rt.block_on([&]() -> Task<void> {
        int q = op::raw::queue(rt, log, [&](io_uring_sqe* s) {
            s->opcode = compat::opcode::read; // fd, addr and len set; off forgotten
            s->fd = file;
            s->addr = reinterpret_cast<std::uint64_t>(buf);
            s->len = sizeof buf;
        });
        EXPECT_EQ(q, 0);
        while (log.res.empty())
            co_await op::nop();
    }());
    ASSERT_EQ(log.res.size(), 1u);
    EXPECT_LT(log.res[0], 0) << "a read at the poisoned offset succeeded";
    ::close(file);
}

} // namespace
