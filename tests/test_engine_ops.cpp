// Operations the epoll engine serves besides the common ones (pipe, madvise, the
// extended-attribute calls, epoll_wait, futexes, link timeouts): each runs as raw SQEs on a ring of each engine and
// gets the same answers, bad input included (engine_fidelity.hpp).
#include <linux/futex.h>
#include <linux/time_types.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "engine_fidelity.hpp"

using namespace fidelity;

namespace {

// Whether `fd` is an open descriptor.
bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

} // namespace

// IORING_OP_PIPE: both ends written to the caller's array; bad flags, fields the kernel wants
// zero and an array it cannot write are refused (no descriptor left open then).
TEST(EngineOps, Pipe) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        if (!ring->probe().supports(opc::pipe)) {
            EXPECT_EQ(k, EngineKind::io_uring);
            continue; // (a kernel before 6.16)
        }
        int fds[2] = {-1, -1};
        auto c = one(
            *ring,
            [&](io_uring_sqe* s) {
                prep(s, opc::pipe, 0, addr_of(fds), 0, 0);
                s->rw_flags = O_CLOEXEC;
            },
            2s);
        ASSERT_TRUE(c);
        EXPECT_EQ(c->res, 0);
        ASSERT_TRUE(is_open(fds[0]) && is_open(fds[1]));
        EXPECT_EQ(::fcntl(fds[0], F_GETFD), FD_CLOEXEC);
        EXPECT_EQ(::write(fds[1], "ab", 2), 2);
        char got[2] = {};
        EXPECT_EQ(::read(fds[0], got, 2), 2);
        EXPECT_EQ(std::string(got, 2), "ab");
        ::close(fds[0]);
        ::close(fds[1]);
    }
    int fds[2] = {-1, -1};
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::pipe, 0, addr_of(fds), 0, 0);
                  s->rw_flags = O_APPEND; // not a pipe flag
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::pipe, 3, addr_of(fds), 0, 0); }), -EINVAL); // fd set
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::pipe, 0, addr_of(fds), 0, 1); }), -EINVAL); // off set
    // An array the kernel cannot write: -EFAULT, and the pipe it made is closed again.
    const int lowest = ::dup(0);
    ::close(lowest);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::pipe, 0, addr_of(unmapped_page()), 0, 0); }), -EFAULT);
    EXPECT_FALSE(is_open(lowest)) << "a descriptor of the refused pipe was left open";
}

// IORING_OP_MADVISE: the advice is taken, an unknown one and an unaligned range are -EINVAL,
// and a range that is not mapped is -ENOMEM.
TEST(EngineOps, Madvise) {
    const long page = ::sysconf(_SC_PAGESIZE);
    void* mem = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto advise = [&](void* at, std::uint32_t len, int advice) {
        return both([&](io_uring_sqe* s) {
            prep(s, opc::madvise, -1, addr_of(at), len, 0);
            s->fadvise_advice = static_cast<std::uint32_t>(advice);
        });
    };
    static_cast<char*>(mem)[0] = 'x';
    EXPECT_EQ(advise(mem, static_cast<std::uint32_t>(4 * page), MADV_DONTNEED), 0);
    EXPECT_EQ(static_cast<char*>(mem)[0], 0) << "MADV_DONTNEED gives private anonymous memory back as zeros";
    EXPECT_EQ(advise(mem, static_cast<std::uint32_t>(page), MADV_WILLNEED), 0);
    EXPECT_EQ(advise(mem, static_cast<std::uint32_t>(page), 12345), -EINVAL);
    EXPECT_EQ(advise(static_cast<char*>(mem) + 1, static_cast<std::uint32_t>(page), MADV_DONTNEED), -EINVAL);
    ::munmap(mem, 4 * page);
    EXPECT_EQ(advise(mem, static_cast<std::uint32_t>(page), MADV_WILLNEED), -ENOMEM);
    // A field the kernel wants zero.
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::madvise, -1, 0, 0, 0);
                  s->buf_index = 1;
              }),
              -EINVAL);
}

// The extended-attribute calls, by path and by descriptor, on a file in a temporary directory
// (tmpfs and the usual disk file systems take user.* attributes).
TEST(EngineOps, ExtendedAttributes) {
    File f;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", f.fd);
    char real[4096] = {};
    ASSERT_GT(::readlink(path, real, sizeof real - 1), 0);
    if (::fsetxattr(f.fd, "user.probe", "1", 1, 0) < 0)
        GTEST_SKIP() << "the temporary directory's file system takes no user.* attributes: " << std::strerror(errno);
    auto set = [&](std::uint8_t op, const char* name, const char* value, std::uint32_t flags) {
        return both([&](io_uring_sqe* s) {
            prep(s, op, op == opc::fsetxattr ? f.fd : 0, addr_of(name), static_cast<std::uint32_t>(std::strlen(value)),
                 addr_of(value));
            if (op == opc::setxattr)
                s->addr3 = addr_of(real);
            s->xattr_flags = flags;
        });
    };
    auto get = [&](std::uint8_t op, const char* name, char* out, std::uint32_t size, std::uint32_t flags = 0) {
        return both([&](io_uring_sqe* s) {
            prep(s, op, op == opc::fgetxattr ? f.fd : 0, addr_of(name), size, addr_of(out));
            if (op == opc::getxattr)
                s->addr3 = addr_of(real);
            s->xattr_flags = flags;
        });
    };
    char out[16] = {};
    EXPECT_EQ(set(opc::fsetxattr, "user.a", "one", 0), 0);
    EXPECT_EQ(get(opc::fgetxattr, "user.a", out, sizeof out), 3);
    EXPECT_EQ(std::string(out, 3), "one");
    // XATTR_CREATE on an attribute that exists, XATTR_REPLACE on one that does not.
    EXPECT_EQ(set(opc::setxattr, "user.a", "two", XATTR_CREATE), -EEXIST);
    EXPECT_EQ(set(opc::setxattr, "user.b", "two", XATTR_REPLACE), -ENODATA);
    // (Each engine's set ran: the second finds what the first made, so the attribute is set
    // without flags here and read by path.)
    EXPECT_EQ(set(opc::setxattr, "user.b", "three", 0), 0);
    EXPECT_EQ(get(opc::getxattr, "user.b", out, sizeof out), 5);
    EXPECT_EQ(std::string(out, 5), "three");
    EXPECT_EQ(get(opc::getxattr, "user.b", nullptr, 0), 5) << "size 0 asks for the size";
    EXPECT_EQ(get(opc::getxattr, "user.b", out, 2), -ERANGE);
    EXPECT_EQ(get(opc::fgetxattr, "user.none", out, sizeof out), -ENODATA);
    // Flags a get does not take, unknown set flags, and pointers the kernel cannot read.
    EXPECT_EQ(get(opc::fgetxattr, "user.a", out, sizeof out, XATTR_CREATE), -EINVAL);
    EXPECT_EQ(set(opc::fsetxattr, "user.a", "x", 0x40), -EINVAL);
    EXPECT_EQ(get(opc::fgetxattr, static_cast<const char*>(unmapped_page()), out, sizeof out), -EFAULT);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::getxattr, 0, addr_of("user.a"), sizeof out, addr_of(out));
                  s->addr3 = addr_of(unmapped_page());
              }),
              -EFAULT);
    EXPECT_EQ(get(opc::fgetxattr, "user.a", static_cast<char*>(unmapped_page()), sizeof out), -EFAULT);
}

// IORING_OP_EPOLL_WAIT: what is ready at once; a wait that ends when an event comes, or when
// it is cancelled; and what the kernel refuses (no epoll descriptor, no room for an event).
TEST(EngineOps, EpollWait) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        if (!ring->probe().supports(opc::epoll_wait)) {
            EXPECT_EQ(k, EngineKind::io_uring);
            continue; // (a kernel before 6.15)
        }
        const int ep = ::epoll_create1(EPOLL_CLOEXEC);
        const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = 77;
        ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
        epoll_event got[4] = {};
        // Nothing ready: it waits; an event ends the wait with it.
        std::thread later([efd] {
            std::this_thread::sleep_for(50ms);
            std::uint64_t one = 1;
            (void)!::write(efd, &one, sizeof one);
        });
        auto c = one(
            *ring, [&](io_uring_sqe* s) { prep(s, opc::epoll_wait, ep, addr_of(got), 4, 0); }, 5s);
        later.join();
        ASSERT_TRUE(c);
        EXPECT_EQ(c->res, 1);
        const std::uint64_t data = got[0].data.u64; // (epoll_event is packed: read by value)
        const std::uint32_t events = got[0].events;
        EXPECT_EQ(data, 77u);
        EXPECT_TRUE(events & EPOLLIN);
        // Ready already (the eventfd still holds its count): at once.
        c = one(
            *ring, [&](io_uring_sqe* s) { prep(s, opc::epoll_wait, ep, addr_of(got), 4, 0); }, 2s);
        ASSERT_TRUE(c);
        EXPECT_EQ(c->res, 1);
        // A wait that nothing ends is cancelled.
        std::uint64_t v;
        ASSERT_EQ(::read(efd, &v, sizeof v), 8);
        auto cs = run(
            *ring,
            [&](Ring& r) {
                io_uring_sqe* s = r.get_sqe();
                prep(s, opc::epoll_wait, ep, addr_of(got), 4, 0);
                s->user_data = 1;
                s = r.get_sqe();
                prep(s, opc::async_cancel, -1, 1, 0, 0); // (the wait's user_data)
                s->user_data = 2;
            },
            2, 2s);
        bool cancelled = false;
        for (const Cqe& x : cs)
            cancelled |= x.user_data == 1 && x.res == -ECANCELED;
        EXPECT_TRUE(cancelled);
        ::close(efd);
        ::close(ep);
    }
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event got[2];
    File f;
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::epoll_wait, f.fd, addr_of(got), 2, 0); }), -EINVAL)
        << "a regular file is no epoll descriptor";
    SocketPair sp;
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::epoll_wait, sp.sv[0], addr_of(got), 2, 0); }), -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::epoll_wait, ep, addr_of(got), 0, 0); }), -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::epoll_wait, -1, addr_of(got), 2, 0); }), -EBADF);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::epoll_wait, ep, addr_of(got), 2, 1); }), -EINVAL) << "off set";
    ::close(ep);
}

namespace {

// A futex SQE: the word's address, the value (a wait's expected one, a wake's count), the mask
// and the futex2 flags.
void prep_futex(io_uring_sqe* s, std::uint8_t op, const std::uint32_t* word, std::uint64_t val,
                std::uint64_t mask = compat::futex2::bitset_match_any,
                std::uint32_t flags = compat::futex2::size_u32 | compat::futex2::private_) {
    prep(s, op, static_cast<int>(flags), addr_of(word), 0, val);
    s->addr3 = mask;
}

} // namespace

// A futex wait is armed when it is submitted, as the kernel arms it: a wake submitted right
// after it, in the same submission, wakes it (1, and the wait's 0), and a wake whose mask
// misses it does not. The epoll engine makes the wait on its thread pool; the wake finds it
// in the engines' table before the pool thread is in the kernel.
TEST(EngineOps, AFutexWaitIsArmedWhenSubmitted) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        if (!ring->probe().supports(opc::futex_wait)) {
            EXPECT_EQ(k, EngineKind::io_uring);
            continue; // (a kernel before 6.7)
        }
        alignas(4) std::uint32_t word = 0;
        auto got = run(
            *ring,
            [&](Ring& r) {
                io_uring_sqe* s = r.get_sqe();
                prep_futex(s, opc::futex_wait, &word, 0, 0x1);
                s->user_data = 1;
                s = r.get_sqe();
                prep_futex(s, opc::futex_wake, &word, 5, 0x2); // (misses the wait's mask)
                s->user_data = 2;
                s = r.get_sqe();
                prep_futex(s, opc::futex_wake, &word, 5, 0x1);
                s->user_data = 3;
            },
            3, 5s);
        ASSERT_EQ(got.size(), 3u);
        for (const Cqe& c : got) {
            if (c.user_data == 1)
                EXPECT_EQ(c.res, 0) << "the wait";
            else
                EXPECT_EQ(c.res, c.user_data == 2 ? 0 : 1) << "wake " << c.user_data;
        }
        // A wake of nobody, a count of 0, a wait that the word does not hold, and checks.
        EXPECT_EQ(one(
                      *ring, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wake, &word, 1); }, 2s)
                      ->res,
                  0);
        EXPECT_EQ(one(
                      *ring, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wake, &word, 0); }, 2s)
                      ->res,
                  0);
        EXPECT_EQ(one(
                      *ring, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wait, &word, 7); }, 2s)
                      ->res,
                  -EAGAIN);
        EXPECT_EQ(one(
                      *ring, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wait, &word, 0, 0); }, 2s)
                      ->res,
                  -EINVAL);
        EXPECT_EQ(one(
                      *ring,
                      [&](io_uring_sqe* s) {
                          prep_futex(s, opc::futex_wait, &word, 0);
                          s->len = 1;
                      },
                      2s)
                      ->res,
                  -EINVAL);
        EXPECT_EQ(one(
                      *ring, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wait, &word, 1ull << 32); }, 2s)
                      ->res,
                  -EINVAL);
        EXPECT_EQ(one(
                      *ring,
                      [&](io_uring_sqe* s) {
                          prep_futex(s, opc::futex_wait, static_cast<const std::uint32_t*>(unmapped_page()), 0);
                      },
                      2s)
                      ->res,
                  -EFAULT);
    }
}

// A wait on one ring is woken by a wake through another ring on another thread (a plain
// thread's futex(2): FutexOp.WaitIsWokenByAPlainThread); a wait cancelled ends with -ECANCELED
// (its cancel reports 1, as the kernel's cancel of a futex request does).
TEST(EngineOps, FutexWaitsAcrossRingsAndThreads) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        if (!ring->probe().supports(opc::futex_wait))
            continue;
        alignas(4) std::uint32_t word = 0;
        std::atomic<int> woke{0};
        std::thread other([&] {
            auto r2 = make_ring(k);
            for (int i = 0; i < 5000 && woke.load() == 0; ++i) {
                auto c = one(
                    *r2, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wake, &word, 1); }, 2s);
                if (c && c->res != 0)
                    woke.store(c->res);
                else
                    std::this_thread::sleep_for(1ms);
            }
        });
        auto c = one(
            *ring, [&](io_uring_sqe* s) { prep_futex(s, opc::futex_wait, &word, 0); }, 10s);
        other.join();
        ASSERT_TRUE(c);
        EXPECT_EQ(c->res, 0);
        EXPECT_EQ(woke.load(), 1);
        auto got = run(
            *ring,
            [&](Ring& r) {
                io_uring_sqe* s = r.get_sqe();
                prep_futex(s, opc::futex_wait, &word, 0);
                s->user_data = 1;
                s = r.get_sqe();
                prep(s, opc::async_cancel, -1, 1, 0, 0);
                s->user_data = 2;
            },
            2, 5s);
        ASSERT_EQ(got.size(), 2u);
        for (const Cqe& x : got)
            EXPECT_EQ(x.res, x.user_data == 1 ? -ECANCELED : 1) << x.user_data;
    }
}

namespace {

// both_seq with each engine's CQEs ordered by user_data (the kernel posts a link timeout's CQE
// and its operation's from different contexts).
std::vector<Cqe> both_sorted(const std::function<void(Ring&)>& prep, unsigned want) {
    return both_seq(prep, want, 2s, true);
}

// A recv (user_data 1) of `buf` on `fd` that waits, linked to what follows.
io_uring_sqe* linked_recv(Ring& r, int fd, char (&buf)[8]) {
    return next(r, 1, opc::recv, fd, addr_of(buf), sizeof buf, 0, compat::sqe_flag::io_link);
}

// The results of `cqes` by user_data 1, 2, ... (INT_MIN where none came).
std::vector<int> results(const std::vector<Cqe>& cqes, unsigned n) {
    std::vector<int> r(n, INT_MIN);
    for (const Cqe& c : cqes)
        if (c.user_data >= 1 && c.user_data <= n)
            r[c.user_data - 1] = c.res;
    return r;
}

// A link timeout (user_data `ud`) of `ts`, with the SQE flags `flags`.
io_uring_sqe* link_timeout(Ring& r, std::uint64_t ud, const __kernel_timespec* ts, std::uint8_t flags = 0) {
    return next(r, ud, opc::link_timeout, -1, addr_of(ts), 1, 0, flags);
}

} // namespace

// IORING_OP_LINK_TIMEOUT: the SQE linked before it is cancelled when the deadline comes first
// (-ECANCELED, the timeout -ETIME, what follows in the link -ECANCELED); an SQE that ends first
// ends the timeout with -ECANCELED and the link goes on (or is cancelled when it broke), and so
// does a cancel request of that SQE.
TEST(EngineOps, LinkTimeout) {
    static const __kernel_timespec short_ts{0, 20'000'000}, long_ts{5, 0};
    constexpr auto link = compat::sqe_flag::io_link;
    SocketPair sp;
    char buf[8];
    // A recv that waits: cancelled by the deadline; a nop after the timeout is cancelled too.
    auto got = both_sorted(
        [&](Ring& r) {
            linked_recv(r, sp.sv[0], buf);
            link_timeout(r, 2, &short_ts, link);
            next(r, 3, opc::nop, -1, 0, 0, 0);
        },
        3);
    EXPECT_EQ(results(got, 3), (std::vector<int>{-ECANCELED, -ETIME, -ECANCELED}));
    // A linked timeout (the timer heap's own) bounded by a shorter link timeout.
    got = both_sorted(
        [&](Ring& r) {
            next(r, 1, opc::timeout, -1, addr_of(&long_ts), 1, 0, link);
            link_timeout(r, 2, &short_ts);
        },
        2);
    EXPECT_EQ(results(got, 2), (std::vector<int>{-ECANCELED, -ETIME}));
    // An SQE that ends at once: the timeout -ECANCELED, the SQE after it runs.
    got = both_sorted(
        [&](Ring& r) {
            next(r, 1, opc::nop, -1, 0, 0, 0, link);
            link_timeout(r, 2, &long_ts, link);
            next(r, 3, opc::nop, -1, 0, 0, 0);
        },
        3);
    EXPECT_EQ(results(got, 3), (std::vector<int>{0, -ECANCELED, 0}));
    // A recv whose data comes before the deadline (written from another thread).
    std::vector<std::thread> writers;
    got = both_sorted(
        [&](Ring& r) {
            linked_recv(r, sp.sv[0], buf);
            link_timeout(r, 2, &long_ts, link);
            next(r, 3, opc::nop, -1, 0, 0, 0);
            writers.emplace_back([&] {
                std::this_thread::sleep_for(30ms);
                EXPECT_EQ(::write(sp.sv[1], "hi", 2), 2);
            });
        },
        3);
    for (std::thread& w : writers)
        w.join();
    EXPECT_EQ(results(got, 3), (std::vector<int>{2, -ECANCELED, 0}));
    // An SQE that fails: the timeout -ECANCELED with the rest of the link.
    got = both_sorted(
        [&](Ring& r) {
            next(r, 1, opc::read, -1, addr_of(buf), sizeof buf, 0, link);
            link_timeout(r, 2, &long_ts, link);
            next(r, 3, opc::nop, -1, 0, 0, 0);
        },
        3);
    EXPECT_EQ(results(got, 3), (std::vector<int>{-EBADF, -ECANCELED, -ECANCELED}));
    // An operation ended by a cancel request: -ECANCELED, the timeout -ECANCELED. A cancel
    // request does not find the link timeout itself (-ENOENT), nor does a timeout removal.
    got = both_sorted(
        [&](Ring& r) {
            linked_recv(r, sp.sv[0], buf);
            link_timeout(r, 2, &long_ts);
            next(r, 3, opc::async_cancel, -1, 2, 0, 0);
            next(r, 4, opc::timeout_remove, -1, 2, 0, 0);
            next(r, 5, opc::async_cancel, -1, 1, 0, 0);
        },
        5);
    EXPECT_EQ(results(got, 5), (std::vector<int>{-ECANCELED, -ECANCELED, -ENOENT, -ENOENT, 0}));
    // A futex wait (withdrawn at once by a cancel, which reports 1): the timeout's result is
    // what that cancel answered.
    alignas(4) static std::uint32_t word = 0;
    got = both_sorted(
        [&](Ring& r) {
            io_uring_sqe* s =
                next(r, 1, opc::futex_wait, static_cast<int>(compat::futex2::size_u32 | compat::futex2::private_),
                     addr_of(&word), 0, 0, link);
            s->addr3 = compat::futex2::bitset_match_any;
            link_timeout(r, 2, &short_ts);
        },
        2);
    EXPECT_EQ(results(got, 2), (std::vector<int>{-ECANCELED, 1}));
}

// The kernel's checks of a link timeout, made as it joins its link: a bad one ends the whole
// link before anything in it starts (the timeout with its error, the others -ECANCELED).
TEST(EngineOps, LinkTimeoutChecks) {
    static const __kernel_timespec ts{1, 0}, negative{-1, 0};
    constexpr auto link = compat::sqe_flag::io_link;
    const auto linked_nop_then = [&](const std::function<void(Ring&)>& lt) {
        return both_sorted(
            [&](Ring& r) {
                next(r, 1, opc::nop, -1, 0, 0, 0, link);
                lt(r);
            },
            2);
    };
    using V = std::vector<int>;
    // Alone (no SQE links to it), first of a link, and after another link timeout.
    EXPECT_EQ(results(both_sorted([&](Ring& r) { link_timeout(r, 1, &ts); }, 1), 1), V{-EINVAL});
    EXPECT_EQ(results(both_sorted(
                          [&](Ring& r) {
                              link_timeout(r, 1, &ts, link);
                              next(r, 2, opc::nop, -1, 0, 0, 0);
                          },
                          2),
                      2),
              (V{-EINVAL, -ECANCELED}));
    EXPECT_EQ(results(both_sorted(
                          [&](Ring& r) {
                              next(r, 1, opc::nop, -1, 0, 0, 0, link);
                              link_timeout(r, 2, &ts, link);
                              link_timeout(r, 3, &ts);
                          },
                          3),
                      3),
              (V{-ECANCELED, -ECANCELED, -EINVAL}));
    // Its fields, flags and timespec.
    EXPECT_EQ(results(linked_nop_then([&](Ring& r) { link_timeout(r, 2, &ts)->len = 2; }), 2),
              (V{-ECANCELED, -EINVAL}));
    EXPECT_EQ(results(linked_nop_then([&](Ring& r) { link_timeout(r, 2, &ts)->off = 1; }), 2),
              (V{-ECANCELED, -EINVAL}));
    EXPECT_EQ(results(linked_nop_then([&](Ring& r) {
                          link_timeout(r, 2, &ts)->timeout_flags = compat::timeout_realtime | compat::timeout_boottime;
                      }),
                      2),
              (V{-ECANCELED, -EINVAL}));
    EXPECT_EQ(results(linked_nop_then([&](Ring& r) { link_timeout(r, 2, &ts)->timeout_flags = 1u << 12; }), 2),
              (V{-ECANCELED, -EINVAL}));
    EXPECT_EQ(results(linked_nop_then([&](Ring& r) { link_timeout(r, 2, &negative); }), 2), (V{-ECANCELED, -EINVAL}));
    EXPECT_EQ(results(linked_nop_then([&](Ring& r) { link_timeout(r, 2, &ts)->splice_fd_in = 1; }), 2),
              (V{-ECANCELED, -EINVAL}));
    // (And a plain timeout's, which it shares: splice_fd_in set.)
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::timeout, -1, addr_of(&ts), 1, 0);
                  s->splice_fd_in = 1;
              }),
              -EINVAL);
    EXPECT_EQ(results(linked_nop_then(
                          [&](Ring& r) { link_timeout(r, 2, static_cast<const __kernel_timespec*>(unmapped_page())); }),
                      2),
              (V{-ECANCELED, -EFAULT}));
    // An absolute deadline that has passed: the linked SQE that waits is cancelled.
    SocketPair sp;
    char buf[8];
    static const __kernel_timespec past{0, 1};
    EXPECT_EQ(results(both_sorted(
                          [&](Ring& r) {
                              linked_recv(r, sp.sv[0], buf);
                              link_timeout(r, 2, &past)->timeout_flags = compat::timeout_abs;
                          },
                          2),
                      2),
              (V{-ECANCELED, -ETIME}));
}

// A link timeout's deadline moved by IORING_OP_TIMEOUT_REMOVE with IORING_TIMEOUT_UPDATE and
// IORING_LINK_TIMEOUT_UPDATE: it then fires sooner (-ETIME, its operation -ECANCELED); one not
// armed is -ENOENT, and so is a removal (IORING_LINK_TIMEOUT_UPDATE alone: its timespec is read
// all the same).
TEST(EngineOps, LinkTimeoutUpdate) {
    static const __kernel_timespec long_ts{5, 0}, short_ts{0, 10'000'000};
    constexpr std::uint32_t update = compat::timeout_update | compat::link_timeout_update;
    SocketPair sp;
    char buf[8];
    auto got = both_sorted(
        [&](Ring& r) {
            linked_recv(r, sp.sv[0], buf);
            link_timeout(r, 2, &long_ts);
            next(r, 3, opc::timeout_remove, -1, 2, 0, 0)->timeout_flags = compat::link_timeout_update;
            next(r, 4, opc::timeout_remove, -1, 2, 0, addr_of(&short_ts))->timeout_flags = update;
            next(r, 5, opc::timeout_remove, -1, 99, 0, addr_of(&short_ts))->timeout_flags = update;
            next(r, 6, opc::timeout_remove, -1, 2, 0, addr_of(&short_ts))->timeout_flags = compat::link_timeout_update;
        },
        6);
    EXPECT_EQ(results(got, 6), (std::vector<int>{-ECANCELED, -ETIME, -EFAULT, 0, -ENOENT, -ENOENT}));
}

namespace {
// A connected TCP pair on 127.0.0.1 (c: the client's end, s: the server's).
struct TcpPair {
    ringo_test::Listener l;
    int c = -1, s = -1;
    TcpPair() {
        c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_EQ(::connect(c, reinterpret_cast<const sockaddr*>(&l.addr), sizeof l.addr), 0);
        s = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
        EXPECT_GE(s, 0);
    }
    ~TcpPair() {
        ::close(c);
        ::close(s);
    }
};
} // namespace

namespace {

// A send_zc (user_data 1) of `len` bytes at `buf` on `fd`, its zero-copy flags in ioprio.
io_uring_sqe* send_zc(Ring& r, int fd, const void* buf, std::uint32_t len, std::uint16_t zc_flags = 0,
                      std::uint8_t flags = 0) {
    io_uring_sqe* s = next(r, 1, opc::send_zc, fd, addr_of(buf), len, 0, flags);
    s->ioprio = zc_flags;
    return s;
}

constexpr std::uint32_t more = compat::cqe_f_more, notif = compat::cqe_f_notif;

// The CQEs of user_data 1 as (result, flags) pairs.
std::vector<std::pair<int, std::uint32_t>> of_first(const std::vector<Cqe>& cqes) {
    std::vector<std::pair<int, std::uint32_t>> r;
    for (const Cqe& c : cqes)
        if (c.user_data == 1)
            r.emplace_back(c.res, c.flags);
    return r;
}

using Pairs = std::vector<std::pair<int, std::uint32_t>>;

} // namespace

// IORING_OP_SEND_ZC and IORING_OP_SENDMSG_ZC: the result with IORING_CQE_F_MORE, then the
// notification (IORING_CQE_F_NOTIF, its result IORING_NOTIF_USAGE_ZC_COPIED when the send asked
// for a report: the bytes went over the loopback as copies), on TCP and UDP sockets; the probe
// lists both opcodes.
TEST(EngineOps, SendZc) {
    {
        auto ring = make_ring(EngineKind::epoll);
        EXPECT_TRUE(ring->probe().supports(opc::send_zc));
        EXPECT_TRUE(ring->probe().supports(opc::sendmsg_zc));
    }
    TcpPair tp;
    char msg[] = "hello";
    const int copied = static_cast<int>(compat::notif_usage_zc_copied);
    EXPECT_EQ(of_first(both_seq([&](Ring& r) { send_zc(r, tp.c, msg, 5); }, 2)), (Pairs{{5, more}, {0, notif}}));
    EXPECT_EQ(of_first(both_seq([&](Ring& r) { send_zc(r, tp.c, msg, 5, compat::recvsend::send_zc_report_usage); }, 2)),
              (Pairs{{5, more}, {copied, notif}}));
    EXPECT_EQ(of_first(both_seq([&](Ring& r) { send_zc(r, tp.c, msg, 5, compat::recvsend::poll_first); }, 2)),
              (Pairs{{5, more}, {0, notif}}));
    EXPECT_EQ(of_first(both_seq([&](Ring& r) { send_zc(r, tp.c, msg, 0); }, 2)), (Pairs{{0, more}, {0, notif}}));
    // IORING_SEND_VECTORIZED: addr is an iovec array of len entries.
    iovec parts[2] = {{msg, 2}, {msg + 2, 3}};
    EXPECT_EQ(of_first(both_seq([&](Ring& r) { send_zc(r, tp.c, parts, 2, 1u << 5); }, 2)),
              (Pairs{{5, more}, {0, notif}}));
    iovec whole{msg, 5};
    msghdr mh{};
    mh.msg_iov = &whole;
    mh.msg_iovlen = 1;
    EXPECT_EQ(of_first(both_seq([&](Ring& r) { next(r, 1, opc::sendmsg_zc, tp.c, addr_of(&mh), 1, 0); }, 2)),
              (Pairs{{5, more}, {0, notif}}));
    // In a link: the next SQE starts after both CQEs; a failed send cancels it.
    auto got = both_seq(
        [&](Ring& r) {
            send_zc(r, tp.c, msg, 5, 0, compat::sqe_flag::io_link);
            next(r, 2, opc::nop, -1, 0, 0, 0);
        },
        3);
    EXPECT_EQ(results(got, 2), (std::vector<int>{0, 0})); // (user_data 1's last CQE: the notification)
    got = both_seq(
        [&](Ring& r) {
            send_zc(r, tp.c, unmapped_page(), 5, 0, compat::sqe_flag::io_link);
            next(r, 2, opc::nop, -1, 0, 0, 0);
        },
        3);
    EXPECT_EQ(of_first(got), (Pairs{{-EFAULT, more}, {0, notif}}));
    EXPECT_EQ(results(got, 2)[1], -ECANCELED);
    // Every byte came, from each engine's sends (5 sends of 5 bytes, one of 0).
    std::string all;
    char in[256];
    const timeval patience{2, 0};
    ASSERT_EQ(::setsockopt(tp.s, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience), 0);
    while (all.size() < 2 * 30) {
        const ssize_t n = ::recv(tp.s, in, sizeof in, 0);
        ASSERT_GT(n, 0);
        all.append(in, static_cast<std::size_t>(n));
    }
    EXPECT_EQ(all.substr(0, 10), "hellohello");
    // UDP: to a destination (addr2 and addr_len), none, a bad length.
    const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to = tp.l.addr;
    EXPECT_EQ(of_first(both_seq(
                  [&](Ring& r) {
                      io_uring_sqe* sqe = send_zc(r, u, msg, 5);
                      sqe->addr2 = addr_of(&to);
                      sqe->addr_len = sizeof to;
                  },
                  2)),
              (Pairs{{5, more}, {0, notif}}));
    ::close(u);
}
// The kernel's checks of a zero-copy send, each engine's CQEs compared: fields it wants zero and
// IOSQE_CQE_SKIP_SUCCESS are refused alone; anything refused later has its notification too
// (unknown flags, a registered buffer that is not there, what the descriptor is, a bad buffer or
// msghdr, a UDP send without a destination), as does a send cancelled while it waits for room
// and one that would wait with MSG_DONTWAIT.
TEST(EngineOps, SendZcChecks) {
    TcpPair tp;
    SocketPair sp;
    char msg[] = "hello";
    int pfd[2];
    ASSERT_EQ(::pipe2(pfd, O_CLOEXEC), 0);
    const auto pairs = [&](const std::function<void(Ring&)>& prep) {
        return of_first(both_seq(prep, 3, 50ms)); // (waits for a third CQE: none may come)
    };
    const auto alone = [](int res) { return Pairs{{res, 0}}; };
    const auto with_notif = [](int res) { return Pairs{{res, more}, {0, notif}}; };
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5)->addr3 = 1; }), alone(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) {
                  io_uring_sqe* s = send_zc(r, tp.c, msg, 5);
                  std::memset(reinterpret_cast<unsigned char*>(s) + 56, 1, 8); // (the pad after addr3)
              }),
              alone(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5, 0, compat::sqe_flag::cqe_skip_success); }), alone(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5, 0, compat::sqe_flag::buffer_select); }),
              alone(-EOPNOTSUPP));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5, compat::recvsend::bundle); }), with_notif(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5, compat::recvsend::recv_multishot); }), with_notif(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5, 1u << 6); }), with_notif(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, msg, 5, compat::recvsend::fixed_buf); }), with_notif(-EFAULT));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, sp.sv[0], msg, 5); }), with_notif(-EOPNOTSUPP)); // (a unix socket)
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, pfd[1], msg, 5); }), with_notif(-ENOTSOCK));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, 999, msg, 5); }), with_notif(-EBADF));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, tp.c, unmapped_page(), 5); }), with_notif(-EFAULT));
    iovec whole{msg, 5};
    msghdr mh{};
    mh.msg_iov = &whole;
    mh.msg_iovlen = 1;
    EXPECT_EQ(pairs([&](Ring& r) { next(r, 1, opc::sendmsg_zc, tp.c, addr_of(&mh), 1, 8); }), with_notif(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { next(r, 1, opc::sendmsg_zc, tp.c, addr_of(&mh), 1, 0)->file_index = 3; }),
              with_notif(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) { next(r, 1, opc::sendmsg_zc, sp.sv[0], addr_of(&mh), 1, 0); }),
              with_notif(-EOPNOTSUPP));
    EXPECT_EQ(pairs([&](Ring& r) { next(r, 1, opc::sendmsg_zc, tp.c, addr_of(unmapped_page()), 1, 0); }),
              with_notif(-EFAULT));
    const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, u, msg, 5); }), with_notif(-EDESTADDRREQ));
    ::close(u);
    ::close(pfd[0]);
    ::close(pfd[1]);
    // A socket with no room: a send that waits is cancelled (the cancel's 0 first), one with
    // MSG_DONTWAIT is -EAGAIN.
    std::vector<char> junk(1 << 20);
    const auto fill = [&] { // (down to single bytes: no room is left at all)
        for (std::size_t n = junk.size(); n > 0; n /= 2)
            while (::send(tp.c, junk.data(), n, MSG_DONTWAIT) > 0) {
            }
    };
    auto got = both_sorted(
        [&](Ring& r) {
            fill();
            send_zc(r, tp.c, msg, 5);
            next(r, 2, opc::async_cancel, -1, 1, 0, 0);
        },
        3);
    EXPECT_EQ(results(got, 2)[1], 0);
    EXPECT_EQ(of_first(got), with_notif(-ECANCELED));
    // ... and so by its opcode (not by a send's).
    got = both_sorted(
        [&](Ring& r) {
            fill();
            send_zc(r, tp.c, msg, 5);
            next(r, 2, opc::async_cancel, tp.c, 0, opc::send, 0)->cancel_flags =
                compat::async_cancel_fd | compat::async_cancel_op;
            next(r, 3, opc::async_cancel, tp.c, 0, opc::send_zc, 0)->cancel_flags =
                compat::async_cancel_fd | compat::async_cancel_op;
        },
        4);
    EXPECT_EQ(of_first(got), with_notif(-ECANCELED));
    EXPECT_EQ(results(got, 3), (std::vector<int>{0, -ENOENT, 0})); // (user_data 1's last: its notification)
    EXPECT_EQ(pairs([&](Ring& r) {
                  fill();
                  send_zc(r, tp.c, msg, 5)->msg_flags = MSG_DONTWAIT;
              }),
              with_notif(-EAGAIN));
    // Cancelled with its link, refused at submission (a link timeout with unknown flags): the
    // notification follows, with its usage report when asked for.
    for (const std::uint16_t zc : {std::uint16_t{0}, compat::recvsend::send_zc_report_usage}) {
        __kernel_timespec ts{1, 0};
        got = both_sorted(
            [&](Ring& r) {
                send_zc(r, tp.c, msg, 5, zc, compat::sqe_flag::io_link);
                link_timeout(r, 2, &ts)->timeout_flags = 0x400;
            },
            3);
        EXPECT_EQ(of_first(got),
                  (Pairs{{-ECANCELED, more}, {zc ? static_cast<int>(compat::notif_usage_zc_copied) : 0, notif}}));
        EXPECT_EQ(results(got, 2)[1], -EINVAL);
    }
    // A destination is copied in before the descriptor is looked at: too long (-EINVAL) or
    // unreadable (-EFAULT) on a pipe.
    sockaddr_in to{};
    ASSERT_EQ(::pipe2(pfd, O_CLOEXEC), 0);
    EXPECT_EQ(pairs([&](Ring& r) {
                  io_uring_sqe* s = send_zc(r, pfd[1], msg, 5);
                  s->addr2 = addr_of(&to);
                  s->addr_len = 200;
              }),
              with_notif(-EINVAL));
    EXPECT_EQ(pairs([&](Ring& r) {
                  io_uring_sqe* s = send_zc(r, pfd[1], msg, 5);
                  s->addr2 = addr_of(unmapped_page());
                  s->addr_len = sizeof to;
              }),
              with_notif(-EFAULT));
    EXPECT_EQ(pairs([&](Ring& r) { send_zc(r, pfd[1], msg, 5)->addr2 = addr_of(&to); }), with_notif(-ENOTSOCK));
    ::close(pfd[0]);
    ::close(pfd[1]);
}

namespace {

// A child that exits with `status` after `delay` (or is killed by `sig` when nonzero).
pid_t child(std::chrono::milliseconds delay, int status) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::usleep(static_cast<useconds_t>(delay.count() * 1000));
        ::_exit(status);
    }
    EXPECT_GT(pid, 0);
    return pid;
}

// A waitid SQE (user_data `ud`): id type, id, options and the caller's siginfo_t.
io_uring_sqe* waitid_sqe(Ring& r, std::uint64_t ud, int which, int id, int options, siginfo_t* info) {
    io_uring_sqe* s = next(r, ud, opc::waitid, id, 0, static_cast<std::uint32_t>(which), addr_of(info));
    s->file_index = static_cast<std::uint32_t>(options);
    return s;
}

// What io_uring writes of a siginfo_t, and the bytes it leaves (filled with 0x5a before).
struct Written {
    int signo, err, code, pid, uid, status;
    int gap; // (the padding after si_code: untouched)
    bool operator==(const Written&) const = default;
};
Written written(const siginfo_t& si, pid_t pid) {
    int gap;
    std::memcpy(&gap, reinterpret_cast<const char*>(&si) + 12, sizeof gap);
    return {si.si_signo,  si.si_errno, si.si_code, si.si_pid == pid ? 1 : si.si_pid, static_cast<int>(si.si_uid),
            si.si_status, gap};
}

} // namespace

// IORING_OP_WAITID: a child that exited already, one that exits later (by pid, by pidfd, any
// child), one killed by a signal, WNOHANG with a child still running: the same results (0, not a
// pid) and the same siginfo fields written on both engines (the child's pid compared as "its
// pid"); each engine forks its own children.
TEST(EngineOps, Waitid) {
    struct Case {
        const char* what;
        std::function<pid_t()> spawn;
        int which, options;
        bool by_pidfd = false;
    };
    const auto at_once = [] { return child(0ms, 3); };
    const auto later = [] { return child(50ms, 4); };
    const Case cases[] = {
        {"exited", at_once, P_PID, WEXITED},
        {"exits later", later, P_PID, WEXITED},
        {"any child", later, P_ALL, WEXITED},
        {"by pidfd", later, P_PIDFD, WEXITED, true},
        {"killed",
         [] {
             const pid_t pid = child(10s, 0);
             ::kill(pid, SIGKILL);
             return pid;
         },
         P_PID, WEXITED},
        {"nohang, running", [] { return child(100ms, 5); }, P_PID, WEXITED | WNOHANG},
        {"nowait", at_once, P_PID, WEXITED | WNOWAIT},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        std::optional<std::pair<int, Written>> seen[2];
        for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
            auto ring = make_ring(k);
            if (!ring)
                continue;
            if (c.what == cases[0].what && k == EngineKind::epoll) {
                EXPECT_TRUE(ring->probe().supports(opc::waitid));
            }
            const pid_t pid = c.spawn();
            if (std::string(c.what) == "exited")
                ::usleep(20'000); // (it has exited)
            const int pidfd = c.by_pidfd ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1;
            siginfo_t si;
            std::memset(&si, 0x5a, sizeof si);
            auto got = run(
                *ring,
                [&](Ring& r) {
                    waitid_sqe(r, 1, c.which, c.which == P_PIDFD ? pidfd : c.which == P_ALL ? 0 : pid, c.options, &si);
                },
                1, 3s);
            EXPECT_EQ(got.size(), 1u) << name_of(k);
            if (!got.empty())
                seen[k == EngineKind::epoll] = std::make_pair(got[0].res, written(si, pid));
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            if (pidfd >= 0)
                ::close(pidfd);
        }
        ASSERT_TRUE(seen[1]);
        EXPECT_EQ(seen[1]->first, 0);
        if (seen[0]) {
            EXPECT_EQ(seen[0]->first, seen[1]->first);
            const Written& a = seen[0]->second;
            const Written& b = seen[1]->second;
            EXPECT_EQ(a, b) << "io_uring: " << a.signo << ' ' << a.err << ' ' << a.code << ' ' << a.pid << ' ' << a.uid
                            << ' ' << a.status << ' ' << a.gap << "; epoll: " << b.signo << ' ' << b.err << ' '
                            << b.code << ' ' << b.pid << ' ' << b.uid << ' ' << b.status << ' ' << b.gap;
        }
    }
}

// The kernel's checks of a waitid SQE and of its arguments: fields it wants zero, an id type,
// options and ids it does not take, no such child, a siginfo it cannot write (the child is
// reaped all the same). A wait cancelled: -ECANCELED.
TEST(EngineOps, WaitidChecks) {
    siginfo_t si{};
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, 0, 8, P_ALL, addr_of(&si)); // addr set
                  s->file_index = WEXITED;
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, 0, 0, P_ALL, addr_of(&si));
                  s->file_index = WEXITED;
                  s->rw_flags = 1; // waitid_flags
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, 0, 0, 9, addr_of(&si)); // no such id type
                  s->file_index = WEXITED;
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::waitid, 0, 0, P_ALL, addr_of(&si)); }),
              -EINVAL); // no WEXITED...
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, 0, 0, P_ALL, addr_of(&si));
                  s->file_index = WEXITED | 0x100; // an unknown option
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, -3, 0, P_PID, addr_of(&si));
                  s->file_index = WEXITED;
              }),
              -EINVAL);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, ::getpid(), 0, P_PID, addr_of(&si)); // not a child
                  s->file_index = WEXITED;
              }),
              -ECHILD);
    // No such child: the siginfo_t is written all the same (as for a wait that found nothing),
    // and one that cannot be written makes it -EFAULT; an argument refused writes nothing.
    for (const int which : {P_PID, P_PIDFD}) {
        std::optional<Written> w[2];
        for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
            auto ring = make_ring(k);
            if (!ring)
                continue;
            std::memset(&si, 0x5a, sizeof si);
            auto got = run(
                *ring, [&](Ring& r) { waitid_sqe(r, 1, which, which == P_PID ? ::getpid() : 999, WEXITED, &si); }, 1);
            ASSERT_EQ(got.size(), 1u);
            EXPECT_EQ(got[0].res, which == P_PID ? -ECHILD : -EBADF) << name_of(k);
            w[k == EngineKind::epoll] = written(si, 0);
        }
        if (w[0]) {
            EXPECT_EQ(*w[0], *w[1]) << "io_uring: " << w[0]->signo << ' ' << w[0]->code << ' ' << w[0]->pid << ' '
                                    << w[0]->status << ' ' << w[0]->gap << "; epoll: " << w[1]->signo << ' '
                                    << w[1]->code << ' ' << w[1]->pid << ' ' << w[1]->status << ' ' << w[1]->gap;
        }
    }
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, ::getpid(), 0, P_PID, addr_of(unmapped_page()));
                  s->file_index = WEXITED;
              }),
              -EFAULT);
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::waitid, 999, 0, P_PIDFD, addr_of(&si)); // not a descriptor
                  s->file_index = WEXITED;
              }),
              -EBADF);
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        // A siginfo it cannot write: -EFAULT, and the child is reaped.
        const pid_t pid = child(0ms, 1);
        ::usleep(20'000);
        auto got = run(
            *ring, [&](Ring& r) { waitid_sqe(r, 1, P_PID, pid, WEXITED, static_cast<siginfo_t*>(unmapped_page())); },
            1);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].res, -EFAULT);
        EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
        EXPECT_EQ(errno, ECHILD);
        // A wait cancelled: -ECANCELED, its siginfo_t written as for a wait that found nothing,
        // and the child still there to be waited for.
        const pid_t runs = child(10s, 0);
        std::memset(&si, 0x5a, sizeof si);
        got = run(
            *ring,
            [&](Ring& r) {
                waitid_sqe(r, 1, P_PID, runs, WEXITED, &si);
                r.submit(0, false);
                std::this_thread::sleep_for(20ms);
                next(r, 2, opc::async_cancel, -1, 1, 0, 0);
            },
            2);
        ::kill(runs, SIGKILL);
        std::sort(got.begin(), got.end(), [](const Cqe& a, const Cqe& b) { return a.user_data < b.user_data; });
        ASSERT_EQ(got.size(), 2u);
        EXPECT_EQ(got[0].res, -ECANCELED);
        EXPECT_EQ(got[1].res, 1) << "the cancel's result";
        EXPECT_EQ(written(si, runs), (Written{0, 0, 0, 0, 0, 0, 0x5a5a5a5a}));
        EXPECT_EQ(::waitpid(runs, nullptr, 0), runs);
    }
}

namespace {

// A futex_waitv SQE (user_data `ud`) on `n` entries at `v`.
io_uring_sqe* waitv_sqe(Ring& r, std::uint64_t ud, const futex_waitv* v, std::uint32_t n) {
    return next(r, ud, opc::futex_waitv, 0, addr_of(v), n, 0);
}

// An entry of a futex_waitv on the 32-bit private word `word`, expected to hold `val`.
futex_waitv entry(const std::uint32_t* word, std::uint64_t val) {
    futex_waitv e{};
    e.val = val;
    e.uaddr = addr_of(word);
    e.flags = compat::futex2::size_u32 | compat::futex2::private_;
    return e;
}

} // namespace

// IORING_OP_FUTEX_WAITV: a wait on several words, woken through the ring by a futex_wake of one
// of them (its index is the result, the wake's count 1), or by a plain thread's futex(2) wake
// after it changed the word; a word that does not hold its value is -EAGAIN at once; a
// cancelled wait -ECANCELED (the cancel reports 1).
TEST(EngineOps, FutexWaitv) {
    alignas(4) static std::uint32_t words[3] = {0, 0, 0};
    futex_waitv v[3] = {entry(&words[0], 0), entry(&words[1], 0), entry(&words[2], 0)};
    const auto by_user_data = [](std::vector<Cqe> c) {
        std::sort(c.begin(), c.end(), [](const Cqe& a, const Cqe& b) { return a.user_data < b.user_data; });
        return results(c, 2);
    };
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        if (!ring->probe().supports(opc::futex_waitv)) {
            EXPECT_EQ(k, EngineKind::io_uring);
            continue; // (a kernel before 6.7)
        }
        words[0] = words[1] = words[2] = 0;
        // Woken through the ring: the wake of word 2, in the same submission.
        auto got = run(
            *ring,
            [&](Ring& r) {
                waitv_sqe(r, 1, v, 3);
                io_uring_sqe* s = r.get_sqe();
                prep_futex(s, opc::futex_wake, &words[2], 1);
                s->user_data = 2;
            },
            2, 3s);
        EXPECT_EQ(by_user_data(got), (std::vector<int>{2, 1}));
        // Woken by a plain thread that changes word 1 and wakes it.
        std::thread waker([&] {
            std::this_thread::sleep_for(30ms);
            __atomic_store_n(&words[1], 1u, __ATOMIC_SEQ_CST);
            ::syscall(SYS_futex, &words[1], FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
        });
        got = run(
            *ring, [&](Ring& r) { waitv_sqe(r, 1, v, 3); }, 1, 3s);
        waker.join();
        EXPECT_EQ(results(got, 1), (std::vector<int>{1}));
        // Word 1 no longer holds 0: -EAGAIN at once.
        got = run(
            *ring, [&](Ring& r) { waitv_sqe(r, 1, v, 3); }, 1, 3s);
        EXPECT_EQ(results(got, 1), (std::vector<int>{-EAGAIN}));
        words[1] = 0;
        // Cancelled while it waits.
        got = run(
            *ring,
            [&](Ring& r) {
                waitv_sqe(r, 1, v, 3);
                (void)r.submit(0, false);
                std::this_thread::sleep_for(20ms);
                next(r, 2, opc::async_cancel, -1, 1, 0, 0);
            },
            2, 3s);
        EXPECT_EQ(by_user_data(got), (std::vector<int>{-ECANCELED, 1}));
        // 128 words, the most (the epoll engine has no room for its own word then: a wake
        // interrupts its call), woken at the last, from another thread's wake through a ring.
        alignas(4) static std::uint32_t many[128] = {};
        static futex_waitv all[128];
        for (std::size_t i = 0; i < 128; ++i)
            all[i] = entry(&many[i], 0);
        std::thread other([&] {
            std::this_thread::sleep_for(30ms);
            auto wr = make_ring(k);
            auto woke = run(
                *wr,
                [&](Ring& r) {
                    io_uring_sqe* s = r.get_sqe();
                    prep_futex(s, opc::futex_wake, &many[127], 1);
                    s->user_data = 7;
                },
                1, 3s);
            EXPECT_EQ(results(woke, 7).back(), 1);
        });
        got = run(
            *ring, [&](Ring& r) { waitv_sqe(r, 1, all, 128); }, 1, 3s);
        other.join();
        EXPECT_EQ(results(got, 1), (std::vector<int>{127}));
    }
}

// The kernel's checks of a futex_waitv: fields it wants zero, 1 to 128 words, the array read
// (-EFAULT), each word's flags (a 32-bit word), reserved field and value, then its address.
TEST(EngineOps, FutexWaitvChecks) {
    alignas(4) static std::uint32_t word = 0;
    futex_waitv v[129];
    for (futex_waitv& e : v)
        e = entry(&word, 0);
    const auto waitv = [&](const std::function<void(io_uring_sqe*)>& more, std::uint32_t n = 1) {
        return both([&](io_uring_sqe* s) {
            prep(s, opc::futex_waitv, 0, addr_of(v), n, 0);
            more(s);
        });
    };
    EXPECT_EQ(waitv([](io_uring_sqe* s) { s->fd = 1; }), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe* s) { s->off = 1; }), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe* s) { s->rw_flags = 1; }), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe* s) { s->addr3 = 1; }), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe* s) { s->buf_index = 1; }), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe*) {}, 0), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe*) {}, 129), -EINVAL);
    EXPECT_EQ(waitv([](io_uring_sqe* s) { s->addr = addr_of(unmapped_page()); }), -EFAULT);
    const auto with_entry = [&](const std::function<void(futex_waitv&)>& bad) {
        futex_waitv saved = v[1];
        bad(v[1]);
        const int r = waitv([](io_uring_sqe*) {}, 2);
        v[1] = saved;
        return r;
    };
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.flags = compat::futex2::private_; }), -EINVAL); // an 8-bit word
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.flags |= 0x1000; }), -EINVAL);
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.__reserved = 1; }), -EINVAL);
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.val = 1ull << 32; }), -EINVAL);
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.uaddr += 1; }), -EINVAL);
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.uaddr = addr_of(unmapped_page()); }), -EFAULT);
    EXPECT_EQ(with_entry([](futex_waitv& e) { e.val = 7; }), -EAGAIN);
    // Every word's address is checked before any word's value; a private word's address is not
    // read there, a shared word's is.
    const auto first_and_second = [&](const std::function<void(futex_waitv&)>& first) {
        const futex_waitv saved[2] = {v[0], v[1]};
        first(v[0]);
        v[1].uaddr += 2;
        const int r = waitv([](io_uring_sqe*) {}, 2);
        v[0] = saved[0];
        v[1] = saved[1];
        return r;
    };
    EXPECT_EQ(first_and_second([](futex_waitv& e) { e.val = 7; }), -EINVAL);
    EXPECT_EQ(first_and_second([](futex_waitv& e) { e.uaddr = addr_of(unmapped_page()); }), -EINVAL);
    EXPECT_EQ(first_and_second([](futex_waitv& e) {
                  e.uaddr = addr_of(unmapped_page());
                  e.flags = compat::futex2::size_u32;
              }),
              -EFAULT);
    // A futex_wake of no waiters keys its word all the same: a shared word it cannot read is
    // -EFAULT (a private one is not read: 0).
    const auto* nowhere = static_cast<const std::uint32_t*>(unmapped_page());
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep_futex(s, opc::futex_wake, nowhere, 0, ~0u, compat::futex2::size_u32); }),
              -EFAULT);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep_futex(s, opc::futex_wake, nowhere, 0); }), 0);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep_futex(s, opc::futex_wake, nowhere, 1, ~0u, compat::futex2::size_u32); }),
              -EFAULT);
}
