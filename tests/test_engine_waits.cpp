// Calls that wait on descriptors whose reads and writes cannot be made without blocking (a
// FIFO opened by its path, a pseudo-terminal, an inotify descriptor, an eventfd's writes) and
// splice and tee on pipes: each runs as raw SQEs on a ring of each engine (engine_fidelity.hpp)
// and gets the same answers. The epoll engine makes them on its thread pool only once their
// descriptors are ready, so that any number of them may wait without starving the pool.
#include <sys/inotify.h>

#include <filesystem>
#include <map>

#include "engine_fidelity.hpp"

using namespace fidelity;

namespace {

// A directory of its own, removed with everything in it at the end.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/ringo-waits-XXXXXX";
        const char* p = ::mkdtemp(tmpl);
        EXPECT_NE(p, nullptr);
        path = p ? p : "/tmp";
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

// The two ends of a pseudo-terminal: reads of the main side wait for what the other writes.
struct Pty {
    int main = -1, other = -1;
    Pty() {
        main = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        EXPECT_GE(main, 0);
        if (main < 0 || ::grantpt(main) != 0 || ::unlockpt(main) != 0)
            return;
        other = ::open(::ptsname(main), O_RDWR | O_NOCTTY | O_CLOEXEC);
        EXPECT_GE(other, 0);
    }
    ~Pty() {
        ::close(other);
        ::close(main);
    }
};

bool ended_by_cancel(EngineKind k, int res) {
    // (io_uring's call interrupted on its worker: -EINTR, or for splice and tee the kernel's
    // internal -ERESTARTSYS, 512, as 6.18 leaves it.)
    return res == -ECANCELED || res == -EINTR || (k == EngineKind::io_uring && res == -512);
}

} // namespace

// Eleven waits of each of six kinds, more than the epoll engine's pool has threads: none of
// them ends by itself, an open submitted after them still completes at once, each kind's
// call ends with what the kernel gives once its descriptor is ready, and the others end when
// cancelled. (The epoll engine made each of them on a pool thread that blocked: 64 of them
// held every thread, and the open waited for ever.)
TEST(EngineWaits, BlockingDescriptorsDoNotStarveThePool) {
    constexpr int per_kind = 11;
    constexpr int kinds = 6; // FIFO read, pty read, inotify read, eventfd write, splice, tee
    std::map<std::uint64_t, int> seen[2];
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k, 128, 256);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        TempDir dir;
        std::vector<int> fds; // closed at the end
        std::vector<std::unique_ptr<Pty>> ptys;
        char bufs[kinds * per_kind][256];
        const std::uint64_t one = 1;
        const std::uint64_t full = 0xfffffffffffffffe;
        auto ud = [](int kind, int i) { return std::uint64_t(100 * (kind + 1) + i); };
        int inotifies[per_kind];
        int fifo_writers[per_kind];
        int splice_in[2][per_kind][2]; // [splice, tee][i]: the input pipe
        auto started = run(
            *ring,
            [&](Ring& r) {
                for (int i = 0; i < per_kind; ++i) {
                    const std::string fifo = dir.path + "/fifo" + std::to_string(i);
                    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
                    const int f = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC); // (blocking: no O_NONBLOCK)
                    ASSERT_GE(f, 0);
                    fifo_writers[i] = f;
                    fds.push_back(f);
                    next(r, ud(0, i), opc::read, f, addr_of(bufs[i]), 256, ~std::uint64_t{0});

                    ptys.push_back(std::make_unique<Pty>());
                    next(r, ud(1, i), opc::read, ptys.back()->main, addr_of(bufs[per_kind + i]), 256,
                         ~std::uint64_t{0});

                    const int in = ::inotify_init1(IN_CLOEXEC);
                    ASSERT_GE(in, 0);
                    const std::string watched = dir.path + "/w" + std::to_string(i);
                    ASSERT_EQ(::mkdir(watched.c_str(), 0700), 0);
                    ASSERT_GE(::inotify_add_watch(in, watched.c_str(), IN_CREATE), 0);
                    inotifies[i] = in;
                    fds.push_back(in);
                    next(r, ud(2, i), opc::read, in, addr_of(bufs[2 * per_kind + i]), 256, ~std::uint64_t{0});

                    const int ev = ::eventfd(0, EFD_CLOEXEC);
                    ASSERT_EQ(::write(ev, &full, sizeof full), 8);
                    fds.push_back(ev);
                    next(r, ud(3, i), opc::write, ev, addr_of(&one), sizeof one, ~std::uint64_t{0});

                    for (int t = 0; t < 2; ++t) {
                        int in_p[2], out_p[2];
                        ASSERT_EQ(::pipe2(in_p, O_CLOEXEC), 0);
                        ASSERT_EQ(::pipe2(out_p, O_CLOEXEC), 0);
                        for (int fd : {in_p[0], in_p[1], out_p[0], out_p[1]})
                            fds.push_back(fd);
                        splice_in[t][i][0] = in_p[0];
                        splice_in[t][i][1] = in_p[1];
                        const std::uint64_t no_offset = t == 0 ? ~std::uint64_t{0} : 0; // (tee takes none)
                        io_uring_sqe* s = next(r, ud(4 + t, i), t == 0 ? opc::splice : opc::tee, out_p[1], no_offset,
                                               4096, no_offset);
                        s->splice_fd_in = in_p[0];
                    }
                }
            },
            1, 200ms);
        for (const Cqe& c : started)
            ADD_FAILURE() << "call " << c.user_data << " ended by itself: " << c.res;

        // An open that the epoll engine makes on its pool: it must not wait behind them.
        const auto t0 = std::chrono::steady_clock::now();
        auto opened = run(
            *ring, [&](Ring& r) { next(r, 1, opc::openat, AT_FDCWD, addr_of("/proc/self/stat"), 0, 0); }, 1, 5s);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
        ASSERT_EQ(opened.size(), 1u);
        EXPECT_EQ(opened[0].user_data, 1u);
        EXPECT_GE(opened[0].res, 0);
        if (opened[0].res >= 0)
            ::close(opened[0].res);

        // One of each kind made ready: each of those ends, and only those.
        ASSERT_EQ(::write(fifo_writers[0], "abc", 3), 3);
        ASSERT_EQ(::write(ptys[0]->other, "x", 1), 1);
        ASSERT_EQ(::close(::open((dir.path + "/w0/made").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
        std::uint64_t v = 0;
        ASSERT_EQ(::read(fds[2], &v, sizeof v), 8); // (the first eventfd, emptied: room for the write)
        ASSERT_EQ(::write(splice_in[0][0][1], "defg", 4), 4);
        ASSERT_EQ(::write(splice_in[1][0][1], "hi", 2), 2);
        auto woken = run(
            *ring, [](Ring&) {}, kinds, 3s);
        std::map<std::uint64_t, int>& got = seen[k == EngineKind::epoll];
        for (const Cqe& c : woken)
            got[c.user_data] = c.res;
        EXPECT_EQ(woken.size(), std::size_t(kinds));
        EXPECT_EQ(got[ud(0, 0)], 3);
        EXPECT_EQ(got[ud(1, 0)], 1);
        EXPECT_EQ(got[ud(2, 0)], int(sizeof(inotify_event) + 16)); // ("made", its name padded)
        EXPECT_EQ(got[ud(3, 0)], 8);
        EXPECT_EQ(got[ud(4, 0)], 4);
        EXPECT_EQ(got[ud(5, 0)], 2);
        EXPECT_EQ(std::memcmp(bufs[0], "abc", 3), 0);

        // The others: ended by a cancel of everything, which counts them.
        auto cancelled = run(
            *ring,
            [&](Ring& r) { next(r, 2, opc::async_cancel, -1, 0, 0, 0)->cancel_flags = compat::async_cancel_any; },
            1 + kinds * (per_kind - 1), 5s);
        int calls = 0;
        for (const Cqe& c : cancelled) {
            if (c.user_data == 2) {
                // (io_uring counts the calls it found waiting for readiness; its splice and tee
                // are on its workers, interrupted there and not counted. The epoll engine's
                // splice and tee wait for readiness too, and are counted.)
                EXPECT_EQ(c.res, (k == EngineKind::epoll ? kinds : 4) * (per_kind - 1));
                continue;
            }
            ++calls;
            EXPECT_TRUE(ended_by_cancel(k, c.res)) << c.user_data << ": " << c.res;
        }
        EXPECT_EQ(calls, kinds * (per_kind - 1));
        for (int fd : fds)
            ::close(fd);
    }
    if (!seen[0].empty()) {
        EXPECT_EQ(seen[0], seen[1]);
    }
}

// A splice and a tee into a full pipe wait for room, then move what their input holds, in
// order after what was there; with SPLICE_F_NONBLOCK they answer -EAGAIN at once instead.
TEST(EngineWaits, SpliceAndTeeWaitForRoomInTheirOutput) {
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        for (std::uint8_t op : {opc::splice, opc::tee}) {
            SCOPED_TRACE(op == opc::splice ? "splice" : "tee");
            int in[2], out[2];
            ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
            ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
            const int cap = ::fcntl(out[1], F_SETPIPE_SZ, 4096);
            ASSERT_GE(cap, 4096);
            const std::string filler(static_cast<std::size_t>(cap), 'f');
            ASSERT_EQ(::write(out[1], filler.data(), filler.size()), cap);
            ASSERT_EQ(::write(in[1], "hello", 5), 5);
            const std::uint64_t no_offset = op == opc::splice ? ~std::uint64_t{0} : 0;
            auto prep_move = [&](Ring& r, std::uint64_t ud, unsigned flags) {
                io_uring_sqe* s = next(r, ud, op, out[1], no_offset, 64, no_offset);
                s->splice_fd_in = in[0];
                s->splice_flags = flags;
            };
            auto refused = run(
                *ring, [&](Ring& r) { prep_move(r, 1, SPLICE_F_NONBLOCK); }, 1, 2s);
            ASSERT_EQ(refused.size(), 1u);
            EXPECT_EQ(refused[0].res, -EAGAIN);
            auto early = run(
                *ring, [&](Ring& r) { prep_move(r, 2, 0); }, 1, 100ms);
            EXPECT_TRUE(early.empty()) << "ended with no room: " << (early.empty() ? 0 : early[0].res);
            std::string drained(filler.size(), '\0');
            ASSERT_EQ(::read(out[0], drained.data(), drained.size()), cap);
            auto moved = run(
                *ring, [](Ring&) {}, 1, 3s);
            ASSERT_EQ(moved.size(), 1u);
            EXPECT_EQ(moved[0].user_data, 2u);
            EXPECT_EQ(moved[0].res, 5);
            char got[8] = {};
            ASSERT_EQ(::read(out[0], got, sizeof got), 5);
            EXPECT_EQ(std::string(got, 5), "hello");
            // (tee copies: its input still holds the bytes; splice moved them.)
            char left[8] = {};
            ::fcntl(in[0], F_SETFL, O_NONBLOCK);
            EXPECT_EQ(::read(in[0], left, sizeof left), op == opc::tee ? 5 : -1);
            for (int fd : {in[0], in[1], out[0], out[1]})
                ::close(fd);
        }
    }
}

// A read with RWF_NOWAIT of a descriptor that cannot be read without blocking is refused
// with -EOPNOTSUPP (it never waits), on a FIFO opened by its path as on a terminal.
TEST(EngineWaits, NowaitIsRefusedWhereTheFileLacksIt) {
    TempDir dir;
    const std::string fifo = dir.path + "/fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int f = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(f, 0);
    Pty pty;
    char buf[16];
    for (int fd : {f, pty.main}) {
        EXPECT_EQ(both([&](io_uring_sqe* s) {
                      prep(s, opc::read, fd, addr_of(buf), sizeof buf, ~std::uint64_t{0});
                      s->rw_flags = RWF_NOWAIT;
                  }),
                  -EOPNOTSUPP);
    }
    // Once something waits, a plain read gets it, the same on both engines.
    ASSERT_EQ(::write(f, "ab", 2), 2);
    EXPECT_EQ(both([&](io_uring_sqe* s) { prep(s, opc::read, f, addr_of(buf), 1, ~std::uint64_t{0}); }), 1);
    ::close(f);
}

// An open of a FIFO does not wait for its other end, as io_uring's first try does not: for
// reading it opens at once (in blocking mode, as asked), for writing with no reader it is
// -ENXIO, and with a reader it opens. (The epoll engine opened it on its pool, which waited for
// a writer for ever.)
TEST(EngineWaits, AFifoOpensWithoutWaitingForItsOtherEnd) {
    TempDir dir;
    const std::string fifo = dir.path + "/fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    struct stat st;
    ASSERT_EQ(::stat(fifo.c_str(), &st), 0); // (its path in the dentry cache)
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        SCOPED_TRACE(name_of(k));
        auto open_it = [&](int flags) {
            auto c = one(
                *ring,
                [&](io_uring_sqe* s) {
                    prep(s, opc::openat, AT_FDCWD, addr_of(fifo.c_str()), 0, 0);
                    s->open_flags = flags;
                },
                2s);
            return c ? c->res : INT_MIN;
        };
        EXPECT_EQ(open_it(O_WRONLY | O_CLOEXEC), -ENXIO);
        const int r = open_it(O_RDONLY | O_CLOEXEC);
        ASSERT_GE(r, 0);
        EXPECT_EQ(::fcntl(r, F_GETFL) & O_NONBLOCK, 0);
        const int w = open_it(O_WRONLY | O_CLOEXEC);
        ASSERT_GE(w, 0);
        ASSERT_EQ(::write(w, "z", 1), 1);
        char c = 0;
        EXPECT_EQ(::read(r, &c, 1), 1);
        EXPECT_EQ(c, 'z');
        const int nb = open_it(O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ASSERT_GE(nb, 0);
        EXPECT_NE(::fcntl(nb, F_GETFL) & O_NONBLOCK, 0);
        for (int fd : {r, w, nb})
            ::close(fd);
    }
}

// A splice whose input is not open for reading (a pipe's write end) is -EBADF, checked before
// the offset that a pipe does not take (-ESPIPE from splice(2) itself, which the epoll engine
// answered).
TEST(EngineWaits, ASpliceFromAWriteEndIsEbadfBeforeItsOffset) {
    int in[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    SocketPair sp;
    EXPECT_EQ(both([&](io_uring_sqe* s) {
                  prep(s, opc::splice, sp.sv[1], 0, 4096, ~std::uint64_t{0});
                  s->splice_fd_in = in[1];
              }),
              -EBADF);
    ::close(in[0]);
    ::close(in[1]);
}
