// The epoll engine answers what the kernel answers, bad input included: each case runs the
// same raw SQEs on a ring of each engine (uring::Ring made with EngineKind::io_uring and
// EngineKind::epoll) and compares the CQEs, and with what the kernel documents. Where io_uring
// cannot be set up (a seccomp profile refuses it) the epoll side is checked against the
// expected answer alone. (tests/fuzz/diff_engines_gen.cpp draws such cases at random; these are
// the ones it, or a reader, found, kept as tests.)
#include "engine_fidelity.hpp"

using namespace fidelity;

// A vector of a readv that the kernel cannot read is its -EFAULT (the epoll engine summed
// the lengths itself before the call, and faulted).
TEST(EngineFidelity, ReadvOfAnUnreadableVectorIsEfault) {
    File f;
    void* gone = unmapped_page();
    for (std::uint64_t off : {std::uint64_t{0}, ~std::uint64_t{0}}) {
        EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::readv, f.fd, 0, 1, off); }), -EFAULT);
        EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::readv, f.fd, addr_of(gone), 2, off); }), -EFAULT);
    }
}

// More iovecs than IOV_MAX: -EINVAL, without the engine reading past the caller's array.
TEST(EngineFidelity, ReadvOfMoreThanIovMaxVectorsIsEinval) {
    File f;
    std::vector<char> buf(16);
    iovec one_vec{buf.data(), buf.size()};
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::readv, f.fd, addr_of(&one_vec), IOV_MAX + 1, 0); }), -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::readv, f.fd, addr_of(&one_vec), 0x7fffffff, 0); }), -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::readv, f.fd, addr_of(&one_vec), 1, 0); }), 16);
}

// statx of a descriptor whose path pointer cannot be read: -EFAULT (the engine looked at the
// path's first byte itself).
TEST(EngineFidelity, StatxWithAnUnreadablePathIsEfault) {
    File f;
    void* gone = unmapped_page();
    struct statx out {};
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::statx, f.fd, addr_of(gone), STATX_BASIC_STATS, addr_of(&out));
                  s->statx_flags = AT_EMPTY_PATH;
              }),
              -EFAULT);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::statx, f.fd, 0, STATX_BASIC_STATS, addr_of(&out));
                  s->statx_flags = AT_EMPTY_PATH;
              }),
              -EFAULT)
        << "a null path: statx(2) takes it with AT_EMPTY_PATH, io_uring does not";
    const char empty[] = "";
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::statx, f.fd, addr_of(empty), STATX_BASIC_STATS, addr_of(&out));
                  s->statx_flags = AT_EMPTY_PATH;
              }),
              0);
    EXPECT_EQ(out.stx_size, 8192u);
}

// A timeout's timespec the kernel cannot read is -EFAULT (null too); a negative one -EINVAL;
// two clocks, or an SQE length other than 1, -EINVAL.
TEST(EngineFidelity, TimeoutTimespecsAreCheckedAsTheKernelChecksThem) {
    void* gone = unmapped_page();
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::timeout, -1, addr_of(gone), 1, 0); }), -EFAULT);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::timeout, -1, 0, 1, 0); }), -EFAULT);
    __kernel_timespec neg{-1, 0}, soon{0, 1'000'000};
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::timeout, -1, addr_of(&neg), 1, 0); }), -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::timeout, -1, addr_of(&soon), 2, 0); }), -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::timeout, -1, addr_of(&soon), 1, 0);
                  s->timeout_flags = compat::timeout_realtime | compat::timeout_boottime;
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::timeout, -1, addr_of(&soon), 1, 0); }), -ETIME);
    // An update whose timespec cannot be read: -EFAULT before its target is looked for.
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::timeout_remove, -1, 1234, 0, addr_of(gone));
                  s->timeout_flags = compat::timeout_update;
              }),
              -EFAULT);
}

// A tv_nsec of 10^9 or more is taken (the kernel adds it up), and a timeout the clock never
// reaches (2^62 s) leaves every other timer of the ring running.
TEST(EngineFidelity, FarAndUnnormalisedTimeoutsKeepOtherTimersRunning) {
    __kernel_timespec far{std::int64_t{1} << 62, 0}, unnormalised{0, 1'500'000'000}, soon{0, 5'000'000};
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        auto fired = run(
            *ring,
            [&](Ring& r) {
                io_uring_sqe* s = r.get_sqe();
                prep(s, opc::timeout, -1, addr_of(&far), 1, 0);
                s->user_data = 1;
                s = r.get_sqe();
                prep(s, opc::timeout, -1, addr_of(&unnormalised), 1, 0);
                s->user_data = 2;
                s = r.get_sqe();
                prep(s, opc::timeout, -1, addr_of(&soon), 1, 0);
                s->user_data = 3;
            },
            1, 1s);
        ASSERT_EQ(fired.size(), 1u) << "the 5 ms timer did not fire alone";
        EXPECT_EQ(fired[0].user_data, 3u);
        EXPECT_EQ(fired[0].res, -ETIME);
        // The 1.5 s one still waits (neither refused nor fired), and so does the far one.
        auto rest = run(
            *ring,
            [&](Ring& r) {
                io_uring_sqe* s = r.get_sqe();
                prep(s, opc::async_cancel, -1, 0, 0, 0);
                s->cancel_flags = compat::async_cancel_any;
                s->user_data = 9;
            },
            3, 1s);
        int cancelled = 0;
        for (const Cqe& c : rest)
            if (c.user_data != 9 && c.res == -ECANCELED)
                ++cancelled;
        EXPECT_EQ(cancelled, 2) << "the far timeout and the 1.5 s one";
    }
}

// Any operation on a number far above every open descriptor is -EBADF at once (the engine
// grew its table to the number: 32 bytes a slot, 64 GiB for INT_MAX).
TEST(EngineFidelity, AHugeDescriptorNumberIsEbadfAtOnce) {
    char buf[16];
    for (int fd : {INT_MAX, 100'000'000, 1'000'000}) {
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::read, fd, addr_of(buf), sizeof buf, 0); }), -EBADF);
        EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::recv, fd, addr_of(buf), sizeof buf, 0); }), -EBADF);
        EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::poll_add, fd, 0, 0, 0); }), -EBADF);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << fd;
    }
}

namespace {

// A provided-buffer ring of group 1 (8 buffers of 256 bytes) registered on `r`.
struct BufRing {
    void* mem;
    char bufs[8][256];
    explicit BufRing(Ring& r) {
        mem = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        auto* br = static_cast<io_uring_buf_ring*>(mem);
        io_uring_buf_ring_init(br);
        for (int i = 0; i < 8; ++i)
            io_uring_buf_ring_add(br, bufs[i], sizeof bufs[i], static_cast<unsigned short>(i),
                                  io_uring_buf_ring_mask(8), i);
        io_uring_buf_ring_advance(br, 8);
        io_uring_buf_reg reg{};
        reg.ring_addr = reinterpret_cast<std::uintptr_t>(mem);
        reg.ring_entries = 8;
        reg.bgid = 1;
        EXPECT_EQ(r.register_buf_ring(reg), 0);
    }
    ~BufRing() { ::munmap(mem, 4096); }
    BufRing(const BufRing&) = delete;
    BufRing& operator=(const BufRing&) = delete;
};

// One recvmsg with a buffer of group 1 on each engine, after "hello" was sent on a datagram
// socketpair; `multi`: multishot. Each engine's first CQE, io_uring's first.
std::vector<Cqe> recvmsg_both(msghdr* m, bool multi) {
    std::vector<Cqe> out;
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        auto bufs = std::make_unique<BufRing>(*ring);
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
        EXPECT_EQ(::send(sv[1], "hello", 5, 0), 5);
        auto c = one(
            *ring,
            [&](io_uring_sqe* s) {
                prep(s, opc::recvmsg, sv[0], addr_of(m), 1, 0);
                s->flags = IOSQE_BUFFER_SELECT;
                s->buf_group = 1;
                if (multi)
                    s->ioprio = IORING_RECV_MULTISHOT;
            },
            1s);
        EXPECT_TRUE(c.has_value()) << name_of(k);
        if (c)
            out.push_back(*c);
        if (c && (c->flags & IORING_CQE_F_MORE)) // (a multishot that goes on: cancel it, and wait for its end)
            (void)run(
                *ring,
                [&](Ring& r) {
                    io_uring_sqe* s = r.get_sqe();
                    prep(s, opc::async_cancel, -1, 1, 0, 0);
                    s->user_data = 2;
                },
                2, 1s);
        ::close(sv[0]);
        ::close(sv[1]);
    }
    return out;
}

} // namespace

// recvmsg into a provided buffer: a null msghdr is -EFAULT, a multishot one whose name and
// control lengths overflow an int is -EOVERFLOW (the engine read through the null pointer,
// and wrapped the size sum), and a single-shot one puts the payload alone in the buffer.
TEST(EngineFidelity, RecvmsgWithAProvidedBufferReadsItsMsghdrAsTheKernelDoes) {
    for (bool multi : {false, true}) {
        SCOPED_TRACE(multi ? "multishot" : "single-shot");
        for (const Cqe& c : recvmsg_both(nullptr, multi))
            EXPECT_EQ(c.res, -EFAULT);
        msghdr huge{};
        huge.msg_controllen = SIZE_MAX;
        auto got = recvmsg_both(&huge, multi);
        for (const Cqe& c : got)
            EXPECT_EQ(c.res, multi ? -EOVERFLOW : 5);
        if (got.size() == 2) {
            EXPECT_EQ(got[0].flags & ~IORING_CQE_F_MORE, got[1].flags & ~IORING_CQE_F_MORE);
        }
    }
    msghdr plain{};
    for (const Cqe& c : recvmsg_both(&plain, false)) {
        EXPECT_EQ(c.res, 5) << "the payload alone, no io_uring_recvmsg_out header";
        EXPECT_TRUE(c.flags & IORING_CQE_F_BUFFER);
    }
}

// A read or write of a socket at an offset other than 0 (or -1: none) is -ESPIPE; a pipe
// takes any offset (it has none).
TEST(EngineFidelity, ASocketTakesNoOffset) {
    SocketPair sp;
    char buf[8];
    ASSERT_EQ(::write(sp.sv[1], "abcabc", 6), 6);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::read, sp.sv[0], addr_of(buf), 3, 5); }), -ESPIPE);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::write, sp.sv[0], addr_of("x"), 1, 5); }), -ESPIPE);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::read, sp.sv[0], addr_of(buf), 3, 0); }), 3);
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    ASSERT_EQ(::write(p[1], "abcabc", 6), 6);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::read, p[0], addr_of(buf), 3, 5); }), 3);
    ::close(p[0]);
    ::close(p[1]);
}

// Read and write flags the kernel does not have are -EOPNOTSUPP (they were ignored).
TEST(EngineFidelity, UnknownReadWriteFlagsAreEopnotsupp) {
    SocketPair sp;
    File f;
    char buf[8];
    ASSERT_EQ(::write(sp.sv[1], "abc", 3), 3);
    for (int fd : {sp.sv[0], f.fd})
        for (std::uint8_t op : {opc::read, opc::write})
            EXPECT_EQ(both([&](io_uring_sqe* s) {
                          prep(s, op, fd, addr_of(buf), 3, ~std::uint64_t{0});
                          s->rw_flags = 1 << 20;
                      }),
                      -EOPNOTSUPP);
}

// SQE flags the kernel does not have, and cancel flags it does not have, are -EINVAL (an
// unknown cancel flag cancelled everything in flight).
TEST(EngineFidelity, UnknownSqeAndCancelFlagsAreEinval) {
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::nop, -1, 0, 0, 0);
                  s->flags = 0x80;
              }),
              -EINVAL);
    __kernel_timespec soon{0, 20'000'000};
    auto cqes = both_seq(
        [&](Ring& r) {
            next(r, 1, opc::timeout, -1, addr_of(&soon), 1, 0);
            next(r, 2, opc::async_cancel, -1, 0, 0, 0)->cancel_flags = 1u << 10;
        },
        2);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].user_data, 2u);
    EXPECT_EQ(cqes[0].res, -EINVAL);
    EXPECT_EQ(cqes[1].res, -ETIME) << "the timeout was not cancelled";
}

// A link breaks where the kernel breaks it: after a short read, not after a timeout's -ETIME
// with ETIME_SUCCESS.
TEST(EngineFidelity, LinksBreakAfterAShortReadNotAfterAnEtimeSuccess) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    char buf[16];
    auto cqes = both_seq(
        [&](Ring& r) {
            EXPECT_EQ(::write(p[1], "abc", 3), 3); // (for each engine's read)
            next(r, 1, opc::read, p[0], addr_of(buf), 10, ~std::uint64_t{0}, IOSQE_IO_LINK);
            next(r, 2, opc::nop, -1, 0, 0, 0);
        },
        2);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].res, 3);
    EXPECT_EQ(cqes[1].res, -ECANCELED);
    __kernel_timespec soon{0, 1'000'000};
    cqes = both_seq(
        [&](Ring& r) {
            next(r, 1, opc::timeout, -1, addr_of(&soon), 1, 0, IOSQE_IO_LINK)->timeout_flags =
                compat::timeout_etime_success;
            next(r, 2, opc::nop, -1, 0, 0, 0);
        },
        2);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].res, -ETIME);
    EXPECT_EQ(cqes[1].res, 0) << "ETIME_SUCCESS: the link goes on";
    ::close(p[0]);
    ::close(p[1]);
}

// IOSQE_CQE_SKIP_SUCCESS: no CQE when the operation succeeds, one when it fails.
TEST(EngineFidelity, CqeSkipSuccess) {
    auto cqes = both_seq(
        [&](Ring& r) {
            next(r, 1, opc::nop, -1, 0, 0, 0, IOSQE_CQE_SKIP_SUCCESS);
            next(r, 2, opc::read, INT_MAX, 0, 0, 0, IOSQE_CQE_SKIP_SUCCESS);
            next(r, 3, opc::nop, -1, 0, 0, 0);
        },
        3, 200ms);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].user_data, 2u);
    EXPECT_EQ(cqes[0].res, -EBADF);
    EXPECT_EQ(cqes[1].user_data, 3u);
}

// IOSQE_IO_DRAIN: the drained SQE starts once everything before it ended (it completed at
// once while a timeout was in flight).
TEST(EngineFidelity, ADrainWaitsForWhatCameBefore) {
    __kernel_timespec soon{0, 30'000'000};
    auto cqes = both_seq(
        [&](Ring& r) {
            next(r, 1, opc::timeout, -1, addr_of(&soon), 1, 0);
            next(r, 2, opc::nop, -1, 0, 0, 0, IOSQE_IO_DRAIN);
            next(r, 3, opc::nop, -1, 0, 0, 0);
        },
        3);
    ASSERT_EQ(cqes.size(), 3u);
    EXPECT_EQ(cqes[0].user_data, 1u);
    EXPECT_EQ(cqes[1].user_data, 2u);
    EXPECT_EQ(cqes[2].user_data, 3u) << "what follows a drain waits for it";
}

// recv and send with MSG_WAITALL on a stream socket end when all bytes moved (the flag was
// ignored: 5 of 10 bytes, 219 264 of 4 MiB).
TEST(EngineFidelity, MsgWaitallWaitsForEveryByte) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        SocketPair sp;
        char buf[10];
        ASSERT_EQ(::write(sp.sv[1], "hello", 5), 5);
        auto first = run(
            *ring, [&](Ring& r) { next(r, 1, opc::recv, sp.sv[0], addr_of(buf), 10, 0)->msg_flags = MSG_WAITALL; }, 1,
            50ms);
        EXPECT_TRUE(first.empty()) << "ended with " << first[0].res << " after 5 of 10 bytes";
        ASSERT_EQ(::write(sp.sv[1], "world", 5), 5);
        auto rest = run(
            *ring, [](Ring&) {}, 1, 1s);
        ASSERT_EQ(rest.size(), 1u);
        EXPECT_EQ(rest[0].res, 10);
        EXPECT_EQ(std::string(buf, 10), "helloworld");
        // A send of 4 MiB: all of it, while the other end reads.
        std::vector<char> big(4 << 20, 'z');
        std::thread reader([fd = sp.sv[1], n = big.size()] {
            std::vector<char> in(65536);
            std::size_t got = 0;
            while (got < n) {
                const ssize_t r = ::read(fd, in.data(), in.size());
                if (r <= 0)
                    break;
                got += static_cast<std::size_t>(r);
            }
        });
        auto sent = run(
            *ring,
            [&](Ring& r) {
                next(r, 2, opc::send, sp.sv[0], addr_of(big.data()), static_cast<std::uint32_t>(big.size()), 0)
                    ->msg_flags = MSG_WAITALL;
            },
            1, 5s);
        reader.join();
        ASSERT_EQ(sent.size(), 1u);
        EXPECT_EQ(sent[0].res, static_cast<int>(big.size()));
    }
}

// accept and connect leave the caller's socket as it was: in blocking mode (the engine set
// O_NONBLOCK on it for good).
TEST(EngineFidelity, AcceptAndConnectLeaveTheSocketsFlags) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        ASSERT_EQ(::listen(lfd, 4), 0);
        socklen_t al = sizeof a;
        ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &al), 0);
        const int cfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        auto cqes = run(
            *ring,
            [&](Ring& r) {
                next(r, 1, opc::accept, lfd, 0, 0, 0);
                next(r, 2, opc::connect, cfd, addr_of(&a), 0, sizeof a);
            },
            2, 2s);
        ASSERT_EQ(cqes.size(), 2u);
        for (const Cqe& c : cqes) {
            EXPECT_GE(c.res, 0) << c.user_data;
            if (c.user_data == 1 && c.res >= 0)
                ::close(c.res);
        }
        EXPECT_FALSE(::fcntl(lfd, F_GETFL) & O_NONBLOCK) << "the listener";
        EXPECT_FALSE(::fcntl(cfd, F_GETFL) & O_NONBLOCK) << "the connected socket";
        ::close(cfd);
        ::close(lfd);
    }
}

// A call that may never return by itself (a read of an inotify descriptor, a write to a
// full eventfd, a splice from an empty pipe, each in blocking mode) ends when it is
// cancelled, and a ring destroyed with one in flight is destroyed (the epoll engine's pool
// made such calls and waited for ever, and its destructor with them).
TEST(EngineFidelity, ABlockingCallThatNeverEndsIsCancelled) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        const int in = ::inotify_init1(IN_CLOEXEC);
        const int ev = ::eventfd(0, EFD_CLOEXEC);
        const std::uint64_t full = 0xfffffffffffffffe;
        ASSERT_EQ(::write(ev, &full, sizeof full), 8);
        int p[2];
        ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
        const int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
        char buf[256];
        std::uint64_t one = 1;
        auto started = run(
            *ring,
            [&](Ring& r) {
                next(r, 1, opc::read, in, addr_of(buf), sizeof buf, ~std::uint64_t{0});
                next(r, 2, opc::write, ev, addr_of(&one), sizeof one, ~std::uint64_t{0});
                io_uring_sqe* s = next(r, 3, opc::splice, out, ~std::uint64_t{0}, 4096, ~std::uint64_t{0});
                s->splice_fd_in = p[0];
            },
            1, 100ms);
        for (const Cqe& c : started)
            ADD_FAILURE() << "call " << c.user_data << " ended: " << c.res;
        const auto t0 = std::chrono::steady_clock::now();
        auto ended = run(
            *ring,
            [&](Ring& r) {
                for (std::uint64_t ud : {1, 2, 3})
                    next(r, 10 + ud, opc::async_cancel, -1, ud, 0, 0);
            },
            6, 3s);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
        int calls = 0;
        for (const Cqe& c : ended)
            if (c.user_data >= 1 && c.user_data <= 3) {
                ++calls;
                // (io_uring's splice interrupted on its worker ends with the kernel's internal
                // -ERESTARTSYS, 512, as 6.18 leaves it.)
                EXPECT_TRUE(c.res == -ECANCELED || c.res == -EINTR || (k == EngineKind::io_uring && c.res == -512))
                    << c.user_data << ": " << c.res;
            }
        EXPECT_EQ(calls, 3);
        for (int fd : {in, ev, p[0], p[1], out})
            ::close(fd);
    }
    // Destroyed with such a call in flight, without a cancel: the destructor returns.
    auto ring = make_ring(EngineKind::epoll);
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    const int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    (void)run(
        *ring,
        [&](Ring& r) {
            io_uring_sqe* s = next(r, 1, opc::splice, out, ~std::uint64_t{0}, 4096, ~std::uint64_t{0});
            s->splice_fd_in = p[0];
        },
        1, 50ms);
    const auto t0 = std::chrono::steady_clock::now();
    ring.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    for (int fd : {p[0], p[1], out})
        ::close(fd);
}

// A multishot timeout: -ETIME with IORING_CQE_F_MORE at each period, the last of its count
// without (the epoll engine answered -EINVAL); absolute and multishot together: -EINVAL.
TEST(EngineFidelity, AMultishotTimeoutRepeatsItsCount) {
    __kernel_timespec period{0, 5'000'000};
    auto cqes = both_seq(
        [&](Ring& r) {
            next(r, 1, opc::timeout, -1, addr_of(&period), 1, 3)->timeout_flags = compat::timeout_multishot;
        },
        3, 2s);
    ASSERT_EQ(cqes.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(cqes[i].res, -ETIME);
        EXPECT_EQ(cqes[i].flags & IORING_CQE_F_MORE, i < 2 ? IORING_CQE_F_MORE : 0u) << i;
    }
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::timeout, -1, addr_of(&period), 1, 0);
                  s->timeout_flags = compat::timeout_multishot | compat::timeout_abs;
              }),
              -EINVAL);
}

// A multishot timeout of period 0 repeats its count (the epoll engine's period came out 0 and
// its timer loop never ended).
TEST(EngineFidelity, AMultishotTimeoutOfPeriodZero) {
    __kernel_timespec zero{0, 0};
    auto cqes = both_seq(
        [&](Ring& r) { next(r, 1, opc::timeout, -1, addr_of(&zero), 1, 3)->timeout_flags = compat::timeout_multishot; },
        3, 2s);
    ASSERT_EQ(cqes.size(), 3u);
    EXPECT_EQ(cqes[2].flags & IORING_CQE_F_MORE, 0u);
}

// IOSQE_CQE_SKIP_SUCCESS on a read that falls short: its CQE is posted (it failed the link),
// and the rest of the link is cancelled without CQEs of its own.
TEST(EngineFidelity, CqeSkipSuccessOnAShortReadInALink) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    char buf[16];
    auto cqes = both_seq(
        [&](Ring& r) {
            EXPECT_EQ(::write(p[1], "abc", 3), 3);
            next(r, 1, opc::read, p[0], addr_of(buf), 10, ~std::uint64_t{0}, IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS);
            next(r, 2, opc::nop, -1, 0, 0, 0);
            next(r, 3, opc::nop, -1, 0, 0, 0);
        },
        3, 200ms);
    ASSERT_GE(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].user_data, 1u);
    EXPECT_EQ(cqes[0].res, 3);
    EXPECT_EQ(cqes.back().user_data, 3u);
    ::close(p[0]);
    ::close(p[1]);
}

// A linked readv whose vector the caller reuses once it is submitted (the kernel copied it:
// IORING_FEAT_SUBMIT_STABLE): the link breaks on the length asked at submission.
TEST(EngineFidelity, ALinkedReadvJudgedByTheVectorAsSubmitted) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    char buf[16];
    iovec v[1];
    auto cqes = both_seq(
        [&](Ring& r) {
            EXPECT_EQ(::write(p[1], "abc", 3), 3);
            v[0] = iovec{buf, 10};
            next(r, 1, opc::readv, p[0], addr_of(v), 1, ~std::uint64_t{0}, IOSQE_IO_LINK);
            next(r, 2, opc::nop, -1, 0, 0, 0);
            (void)r.submit(0, false);
            v[0].iov_len = 3; // (after the submission: what the kernel took is 10)
        },
        2);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].res, 3);
    EXPECT_EQ(cqes[1].res, -ECANCELED);
    ::close(p[0]);
    ::close(p[1]);
}

// Thousands of SQEs held behind a drain start when it ends, without the engine's stack
// growing with each (they started one inside the other's end).
TEST(EngineFidelity, ManySqesHeldBehindADrain) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k, 256, 65536);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        __kernel_timespec soon{0, 20'000'000};
        constexpr unsigned n = 50'000;
        (void)run(
            *ring,
            [&](Ring& r) {
                next(r, 1, opc::timeout, -1, addr_of(&soon), 1, 0);
                next(r, 2, opc::nop, -1, 0, 0, 0, IOSQE_IO_DRAIN);
            },
            0, 0ns);
        for (unsigned i = 0; i < n; ++i) {
            io_uring_sqe* s = ring->get_sqe();
            if (!s) {
                (void)ring->submit(0, false);
                s = ring->get_sqe();
            }
            prep(s, opc::nop, -1, 0, 0, 0);
            s->user_data = 3;
        }
        auto cqes = run(
            *ring, [](Ring&) {}, n + 2, 5s);
        EXPECT_EQ(cqes.size(), n + 2);
    }
}
