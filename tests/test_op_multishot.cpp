// op/multishot.hpp: the raw SQE preparation of every multishot operation, queued with
// op::raw::queue and consumed through a ringo::Completion: several CQEs with
// IORING_CQE_F_MORE, then op::async_cancel and the final CQE without it. Real loopback
// sockets, pipes and kernel timeouts.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <coroutine>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::op::Fixed;
namespace op = ringo::op;
namespace raw = ringo::op::raw;
namespace compat = ringo::uring::compat;
using namespace ringo_test;
using namespace std::chrono_literals;

namespace {

struct Cqe {
    int res;
    std::uint32_t flags;
};

// Records every CQE of one multishot operation. At the last CQE (no IORING_CQE_F_MORE) it
// tells the runtime the operation is over, as raw::queue asks.
class CqeLog : public ringo::Completion {
public:
    explicit CqeLog(Runtime& rt) : rt_(&rt) { fn = &on_cqe; }
    CqeLog(const CqeLog&) = delete;
    CqeLog& operator=(const CqeLog&) = delete;
    ~CqeLog() { EXPECT_TRUE(finished_ || !started_) << "a multishot operation outlived its log"; }

    /// Queues the operation `prep` prepares: 0 or -EOPNOTSUPP.
    template <class Prep>
    int start(Prep&& prep) {
        int r = raw::queue(*rt_, *this, std::forward<Prep>(prep));
        started_ = r == 0;
        return r;
    }
    [[nodiscard]] std::uint64_t user_data() const noexcept { return raw::completion_user_data(*this); }
    [[nodiscard]] bool finished() const noexcept { return finished_; }
    [[nodiscard]] std::size_t size() const noexcept { return cqes_.size(); }
    [[nodiscard]] const Cqe& operator[](std::size_t i) const { return cqes_[i]; }
    [[nodiscard]] const Cqe& back() const { return cqes_.back(); }

    /// Awaitable: resumes once at least `n` CQEs have arrived or the operation finished.
    struct Wait {
        CqeLog* log;
        std::size_t n;
        bool await_ready() const noexcept { return log->cqes_.size() >= n || log->finished_; }
        void await_suspend(std::coroutine_handle<> h) noexcept {
            log->want_ = n;
            log->waiter_ = h;
        }
        void await_resume() const noexcept {}
    };
    /// Waits for `n` CQEs (or the last one), at most about `limit`: a test that fails does
    /// not hang. Returns the number of CQEs seen.
    Task<std::size_t> wait_for(std::size_t n, std::chrono::milliseconds limit = 5000ms) {
        // The watchdog wakes the waiter when the limit passes.
        struct Watchdog {
            CqeLog* log;
            static Task<void> run(CqeLog* log, std::chrono::milliseconds limit, bool* stop) {
                for (auto left = limit; left > 0ms && !*stop; left -= 1ms)
                    co_await op::timeout(1ms);
                if (!*stop && log->waiter_)
                    log->rt_->schedule(std::exchange(log->waiter_, {}));
            }
        };
        bool stop = false;
        auto dog = ringo::spawn(Watchdog::run(this, limit, &stop));
        co_await Wait{this, n};
        waiter_ = {};
        stop = true;
        co_await dog;
        co_return cqes_.size();
    }

private:
    static void on_cqe(ringo::Completion* c, int res, std::uint32_t flags) {
        auto* log = static_cast<CqeLog*>(c);
        log->cqes_.push_back({res, flags});
        if (!op::has_more(flags)) {
            log->finished_ = true;
            ringo::op::raw::finished(*log->rt_);
        }
        if (log->waiter_ && (log->cqes_.size() >= log->want_ || log->finished_))
            log->rt_->schedule(std::exchange(log->waiter_, {}));
    }

    Runtime* rt_;
    std::vector<Cqe> cqes_;
    std::coroutine_handle<> waiter_{};
    std::size_t want_ = 0;
    bool started_ = false;
    bool finished_ = false;
};

// Cancels the operation of `log` and waits for its final CQE: returns async_cancel's result.
Task<int> cancel_and_finish(CqeLog& log) {
    int r = co_await op::async_cancel(log.user_data());
    co_await log.wait_for(1000000);
    EXPECT_TRUE(log.finished());
    co_return r;
}

// Keeps this thread busy (no system call) for `d`.
void spin_for(std::chrono::nanoseconds d) {
    const auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
    }
}

// cancel_and_finish for a multishot timeout (async_cancel, or timeout_remove with `remove`).
// Between an expiry and the posting of its CQE the timeout is off the kernel's list (it is
// re-armed as the CQE is posted), so a cancel in that window finds nothing (-ENOENT; one that
// meets the timer firing on another CPU, -EALREADY) and the timeout goes on, as ringo's
// interval allows for: after its next CQE the cancel is sent again. Returns the result of the
// last cancel sent.
Task<int> send_timeout_cancel(const CqeLog& log, bool remove) {
    if (remove)
        co_return co_await op::timeout_remove(log.user_data());
    co_return co_await op::async_cancel(log.user_data());
}
Task<int> cancel_timeout_and_finish(CqeLog& log, bool remove = false) {
    int r = co_await send_timeout_cancel(log, remove);
    for (int tries = 0; (r == -ENOENT || r == -EALREADY) && !log.finished() && tries < 100; ++tries) {
        co_await log.wait_for(log.size() + 1, 100ms);
        if (!log.finished())
            r = co_await send_timeout_cancel(log, remove);
    }
    co_await log.wait_for(1000000);
    EXPECT_TRUE(log.finished());
    co_return r;
}

// Every CQE but the last has IORING_CQE_F_MORE.
void expect_more_on_all_but_last(const CqeLog& log) {
    for (std::size_t i = 0; i + 1 < log.size(); ++i)
        EXPECT_TRUE(op::has_more(log[i].flags)) << "CQE " << i;
    if (log.size() > 0) {
        EXPECT_FALSE(op::has_more(log.back().flags));
    }
}

Fd connect_to(const sockaddr_in& a) {
    Fd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
        std::abort();
    return c;
}

// --- accept ---------------------------------------------------------------------------------

TEST(Multishot, AcceptOneCqePerConnectionThenCancel) {
    Runtime rt;
    Listener l;
    CqeLog log(rt);
    std::vector<Fd> clients;
    std::vector<Fd> accepted;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(
            log.start([&](io_uring_sqe* s) { raw::prep_accept_multishot(s, l.fd, nullptr, nullptr, SOCK_CLOEXEC); }),
            0);
        co_await op::nop(); // submitted and armed
        EXPECT_EQ(log.size(), 0u);
        for (int i = 0; i < 3; ++i) {
            clients.push_back(connect_to(l.addr));
            EXPECT_EQ(co_await log.wait_for(static_cast<std::size_t>(i) + 1), static_cast<std::size_t>(i) + 1);
        }
        EXPECT_FALSE(log.finished());
        for (std::size_t i = 0; i < log.size(); ++i) {
            EXPECT_GE(log[i].res, 0);
            EXPECT_TRUE(op::has_more(log[i].flags));
            accepted.emplace_back(log[i].res);
        }
        // Each accepted fd is a distinct, working connection.
        for (std::size_t i = 0; i < accepted.size() && i < clients.size(); ++i) {
            char c = static_cast<char>('a' + i);
            EXPECT_EQ(::send(accepted[i], &c, 1, 0), 1);
            char got = 0;
            EXPECT_EQ(::recv(clients[i], &got, 1, 0), 1);
            EXPECT_EQ(got, c);
        }
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(log.size(), 4u);
        EXPECT_EQ(log.back().res, -ECANCELED);
        expect_more_on_all_but_last(log);
        // Cancelling again finds nothing.
        EXPECT_EQ(co_await op::async_cancel(log.user_data()), -ENOENT);
    }());
}

TEST(Multishot, AcceptDirectIntoFreeSlots) {
    RINGO_IO_URING_ONLY("accept_direct into a registered file table");
    Runtime rt;
    Listener l;
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(4), 0);
    CqeLog log(rt);
    std::vector<Fd> clients;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_accept_multishot(s, l.fd, nullptr, nullptr, 0, true); }),
                  0);
        for (int i = 0; i < 2; ++i) {
            clients.push_back(connect_to(l.addr));
            co_await log.wait_for(static_cast<std::size_t>(i) + 1);
        }
        EXPECT_EQ(log.size(), 2u);
        if (log.size() == 2) {
            // The results are slots of the table, not descriptors.
            EXPECT_GE(log[0].res, 0);
            EXPECT_LT(log[0].res, 4);
            EXPECT_GE(log[1].res, 0);
            EXPECT_LT(log[1].res, 4);
            EXPECT_NE(log[0].res, log[1].res);
            for (std::size_t i = 0; i < 2; ++i) {
                Fixed slot{static_cast<unsigned>(log[i].res)};
                EXPECT_EQ(co_await op::send(slot, "d", 1), 1);
                char got = 0;
                EXPECT_EQ(::recv(clients[i], &got, 1, 0), 1);
            }
        }
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(log.back().res, -ECANCELED);
        expect_more_on_all_but_last(log);
    }());
}

TEST(Multishot, AcceptAndReadOnFixedFiles) {
    Runtime rt;
    if (!rt.supports(compat::opcode::read_multishot))
        GTEST_SKIP() << "kernel lacks IORING_OP_READ_MULTISHOT (6.7)";
    Listener l;
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    ringo::op::FileTable files(rt);
    int fds[2] = {l.fd, p.r};
    ASSERT_EQ(files.register_files(fds), 0);
    static char pool[2][32];
    CqeLog acc(rt), rd(rt);
    Fd client;
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{19};
        EXPECT_EQ(co_await op::provide_buffers(pool, 32, 2, g, 0), 0);
        EXPECT_EQ(acc.start([&](io_uring_sqe* s) {
            raw::prep_accept_multishot(s, Fixed{0}, nullptr, nullptr, SOCK_CLOEXEC);
        }),
                  0);
        EXPECT_EQ(rd.start([&](io_uring_sqe* s) { raw::prep_read_multishot(s, Fixed{1}, g); }), 0);
        client = connect_to(l.addr);
        EXPECT_EQ(::write(p.w, "fixed pipe", 10), 10);
        co_await acc.wait_for(1);
        co_await rd.wait_for(1);
        EXPECT_EQ(acc.size(), 1u);
        EXPECT_EQ(rd.size(), 1u);
        if (acc.size() == 1) {
            EXPECT_GE(acc[0].res, 0);
            EXPECT_TRUE(op::has_more(acc[0].flags));
            Fd conn(acc[0].res);
        }
        if (rd.size() == 1) {
            EXPECT_EQ(rd[0].res, 10);
            EXPECT_TRUE(op::has_more(rd[0].flags));
        }
        EXPECT_EQ(co_await cancel_and_finish(acc), 0);
        EXPECT_EQ(co_await cancel_and_finish(rd), 0);
        EXPECT_EQ(acc.back().res, -ECANCELED);
        EXPECT_EQ(rd.back().res, -ECANCELED);
    }());
}

TEST(Multishot, AcceptDirectEndsWhenTheTableIsFull) {
    RINGO_IO_URING_ONLY("accept_direct into a registered file table");
    Runtime rt;
    Listener l;
    ringo::op::FileTable files(rt);
    ASSERT_EQ(files.register_sparse(1), 0);
    CqeLog log(rt);
    std::vector<Fd> clients;
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_accept_multishot(s, l.fd, nullptr, nullptr, 0, true); }),
                  0);
        clients.push_back(connect_to(l.addr));
        co_await log.wait_for(1);
        clients.push_back(connect_to(l.addr));
        co_await log.wait_for(2);
        EXPECT_EQ(log.size(), 2u);
        EXPECT_TRUE(log.finished());
        if (log.size() == 2) {
            EXPECT_EQ(log[0].res, 0);
            EXPECT_EQ(log[1].res, -ENFILE); // no free slot: the operation ends
        }
        expect_more_on_all_but_last(log);
    }());
}

TEST(Multishot, AcceptErrorsEndAtOnce) {
    Runtime rt;
    Fd not_listening(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    CqeLog closed(rt), idle(rt), fixed(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(
            closed.start([&](io_uring_sqe* s) { raw::prep_accept_multishot(s, closed_fd(), nullptr, nullptr, 0); }), 0);
        EXPECT_EQ(
            idle.start([&](io_uring_sqe* s) { raw::prep_accept_multishot(s, not_listening, nullptr, nullptr, 0); }), 0);
        EXPECT_EQ(fixed.start([&](io_uring_sqe* s) { raw::prep_accept_multishot(s, Fixed{0}, nullptr, nullptr, 0); }),
                  0);
        co_await closed.wait_for(1);
        co_await idle.wait_for(1);
        co_await fixed.wait_for(1);
        EXPECT_EQ(closed.size(), 1u);
        EXPECT_TRUE(closed.finished());
        EXPECT_EQ(closed.back().res, -EBADF);
        EXPECT_TRUE(idle.finished());
        EXPECT_EQ(idle.back().res, -EINVAL);
        EXPECT_TRUE(fixed.finished());
        EXPECT_EQ(fixed.back().res, -EBADF); // no table registered
    }());
}

// --- recv / recvmsg -------------------------------------------------------------------------

TEST(Multishot, RecvIntoProvidedBuffers) {
    RINGO_IO_URING_ONLY("PROVIDE_BUFFERS groups");
    Runtime rt;
    TcpPair tcp;
    static char pool[4][64];
    CqeLog log(rt);
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{11};
        EXPECT_EQ(co_await op::provide_buffers(pool, 64, 4, g, 0), 0);
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, tcp.server, g); }), 0);
        const char* msgs[] = {"one", "two!", "three"};
        for (std::size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(::send(tcp.client, msgs[i], std::strlen(msgs[i]), 0), static_cast<ssize_t>(std::strlen(msgs[i])));
            co_await log.wait_for(i + 1); // one at a time, so no two sends coalesce
        }
        EXPECT_EQ(log.size(), 3u);
        EXPECT_FALSE(log.finished());
        std::vector<int> ids;
        for (std::size_t i = 0; i < log.size(); ++i) {
            EXPECT_EQ(log[i].res, static_cast<int>(std::strlen(msgs[i])));
            EXPECT_TRUE(op::has_buffer(log[i].flags));
            EXPECT_TRUE(op::has_more(log[i].flags));
            int id = op::buffer_id(log[i].flags);
            EXPECT_LT(id, 4);
            if (id < 4 && log[i].res > 0) {
                EXPECT_EQ(std::string(pool[id], static_cast<std::size_t>(log[i].res)), msgs[i]);
            }
            ids.push_back(id);
        }
        EXPECT_NE(ids[0], ids[1]);
        EXPECT_NE(ids[1], ids[2]);
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(log.back().res, -ECANCELED);
        EXPECT_FALSE(op::has_buffer(log.back().flags));
        expect_more_on_all_but_last(log);
    }());
}

TEST(Multishot, RecvEndsWhenTheGroupRunsDryAndAtEndOfStream) {
    RINGO_IO_URING_ONLY("PROVIDE_BUFFERS groups");
    Runtime rt;
    TcpPair tcp;
    static char pool[2][16];
    CqeLog dry(rt), eof(rt);
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{12};
        EXPECT_EQ(co_await op::provide_buffers(pool, 16, 2, g, 0), 0);
        EXPECT_EQ(dry.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, tcp.server, g); }), 0);
        for (std::size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(::send(tcp.client, "abc", 3, 0), 3);
            co_await dry.wait_for(i + 1);
        }
        // Two buffers, three sends: the third CQE is -ENOBUFS and ends the operation.
        EXPECT_EQ(dry.size(), 3u);
        EXPECT_TRUE(dry.finished());
        if (dry.size() == 3) {
            EXPECT_EQ(dry[0].res, 3);
            EXPECT_EQ(dry[1].res, 3);
            EXPECT_EQ(dry[2].res, -ENOBUFS);
        }
        expect_more_on_all_but_last(dry);
        // The unread bytes are still there; give the buffers back and receive until the
        // peer closes: the end of the stream is a final CQE with res 0.
        EXPECT_EQ(co_await op::provide_buffers(pool, 16, 2, g, 0), 0);
        EXPECT_EQ(eof.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, tcp.server, g); }), 0);
        co_await eof.wait_for(1);
        EXPECT_EQ(eof.size(), 1u);
        if (eof.size() >= 1) {
            EXPECT_EQ(eof[0].res, 3);
        }
        tcp.client.reset();
        co_await eof.wait_for(2);
        EXPECT_TRUE(eof.finished());
        EXPECT_EQ(eof.back().res, 0);
        expect_more_on_all_but_last(eof);
    }());
}

TEST(Multishot, RecvErrors) {
    Runtime rt;
    UdpSocket udp;
    CqeLog closed(rt), no_group(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(closed.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, closed_fd(), op::BufferGroup{13}); }),
                  0);
        co_await closed.wait_for(1);
        EXPECT_TRUE(closed.finished());
        EXPECT_EQ(closed.back().res, -EBADF);
        // Data arrives but the group has no buffer.
        EXPECT_EQ(no_group.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, udp.fd, op::BufferGroup{14}); }),
                  0);
        co_await op::nop();
        EXPECT_EQ(::sendto(udp.fd, "x", 1, 0, udp.sa(), sizeof udp.addr), 1);
        co_await no_group.wait_for(1);
        EXPECT_TRUE(no_group.finished());
        EXPECT_EQ(no_group.back().res, -ENOBUFS);
    }());
}

TEST(Multishot, RecvmsgWithHeaderInEachBuffer) {
    RINGO_IO_URING_ONLY("PROVIDE_BUFFERS groups");
    Runtime rt;
    UdpSocket rx, tx;
    static char pool[4][128];
    CqeLog log(rt);
    msghdr layout{};
    layout.msg_namelen = sizeof(sockaddr_in); // each buffer: header, source address, payload
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{15};
        EXPECT_EQ(co_await op::provide_buffers(pool, 128, 4, g, 0), 0);
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_recvmsg_multishot(s, rx.fd, &layout, g); }), 0);
        const char* msgs[] = {"datagram-1", "dg2"};
        for (std::size_t i = 0; i < 2; ++i) {
            EXPECT_EQ(::sendto(tx.fd, msgs[i], std::strlen(msgs[i]), 0, rx.sa(), sizeof rx.addr),
                      static_cast<ssize_t>(std::strlen(msgs[i])));
            co_await log.wait_for(i + 1);
        }
        EXPECT_EQ(log.size(), 2u);
        for (std::size_t i = 0; i < log.size(); ++i) {
            EXPECT_TRUE(op::has_more(log[i].flags));
            EXPECT_TRUE(op::has_buffer(log[i].flags));
            int id = op::buffer_id(log[i].flags);
            if (id >= 4 || log[i].res <= 0) {
                ADD_FAILURE() << "CQE " << i << ": res " << log[i].res << " buffer " << id;
                continue;
            }
            // res is the number of bytes of the buffer used: header + name + payload.
            io_uring_recvmsg_out out{};
            std::memcpy(&out, pool[id], sizeof out);
            const std::size_t len = std::strlen(msgs[i]);
            EXPECT_EQ(out.payloadlen, len);
            EXPECT_EQ(out.namelen, sizeof(sockaddr_in));
            EXPECT_EQ(static_cast<std::size_t>(log[i].res), sizeof out + sizeof(sockaddr_in) + len);
            sockaddr_in from{};
            std::memcpy(&from, pool[id] + sizeof out, sizeof from);
            EXPECT_EQ(from.sin_port, tx.addr.sin_port);
            EXPECT_EQ(std::string(pool[id] + sizeof out + sizeof(sockaddr_in), len), msgs[i]);
        }
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(log.back().res, -ECANCELED);
        expect_more_on_all_but_last(log);
    }());
}

TEST(Multishot, RecvOnFixedFile) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    TcpPair tcp;
    ringo::op::FileTable files(rt);
    int fds[1] = {tcp.server};
    ASSERT_EQ(files.register_files(fds), 0);
    static char pool[2][32];
    CqeLog log(rt), wrong(rt);
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{16};
        EXPECT_EQ(co_await op::provide_buffers(pool, 32, 2, g, 0), 0);
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, Fixed{0}, g); }), 0);
        EXPECT_EQ(::send(tcp.client, "fixed", 5, 0), 5);
        co_await log.wait_for(1);
        EXPECT_EQ(log.size(), 1u);
        if (log.size() == 1) {
            EXPECT_EQ(log[0].res, 5);
            EXPECT_TRUE(op::has_more(log[0].flags));
        }
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(wrong.start([&](io_uring_sqe* s) { raw::prep_recv_multishot(s, Fixed{5}, g); }), 0);
        co_await wrong.wait_for(1);
        EXPECT_TRUE(wrong.finished());
        EXPECT_EQ(wrong.back().res, -EBADF);
    }());
}

// --- read -----------------------------------------------------------------------------------

TEST(Multishot, ReadOnAPipe) {
    Runtime rt;
    if (!rt.supports(compat::opcode::read_multishot))
        GTEST_SKIP() << "kernel lacks IORING_OP_READ_MULTISHOT (6.7)";
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    static char pool[4][32];
    CqeLog log(rt);
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{17};
        EXPECT_EQ(co_await op::provide_buffers(pool, 32, 4, g, 0), 0);
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_read_multishot(s, p.r, g); }), 0);
        const char* msgs[] = {"pipe-a", "pipe-bb"};
        for (std::size_t i = 0; i < 2; ++i) {
            EXPECT_EQ(::write(p.w, msgs[i], std::strlen(msgs[i])), static_cast<ssize_t>(std::strlen(msgs[i])));
            co_await log.wait_for(i + 1);
        }
        EXPECT_EQ(log.size(), 2u);
        for (std::size_t i = 0; i < log.size(); ++i) {
            EXPECT_EQ(log[i].res, static_cast<int>(std::strlen(msgs[i])));
            EXPECT_TRUE(op::has_more(log[i].flags));
            int id = op::buffer_id(log[i].flags);
            if (id < 4 && log[i].res > 0) {
                EXPECT_EQ(std::string(pool[id], static_cast<std::size_t>(log[i].res)), msgs[i]);
            }
        }
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(log.back().res, -ECANCELED);
        expect_more_on_all_but_last(log);
    }());
}

TEST(Multishot, ReadEndsAtEndOfFileAndOnBadInput) {
    Runtime rt;
    if (!rt.supports(compat::opcode::read_multishot))
        GTEST_SKIP() << "kernel lacks IORING_OP_READ_MULTISHOT (6.7)";
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    TempDir dir;
    write_file(dir.file("f"), "regular");
    Fd file(::open(dir.file("f").c_str(), O_RDONLY | O_CLOEXEC));
    static char pool[2][32];
    CqeLog eof(rt), regular(rt), closed(rt);
    rt.block_on([&]() -> Task<void> {
        const op::BufferGroup g{18};
        EXPECT_EQ(co_await op::provide_buffers(pool, 32, 2, g, 0), 0);
        EXPECT_EQ(eof.start([&](io_uring_sqe* s) { raw::prep_read_multishot(s, p.r, g); }), 0);
        EXPECT_EQ(::write(p.w, "last", 4), 4);
        co_await eof.wait_for(1);
        p.w.reset(); // the writer goes away: end of file
        co_await eof.wait_for(2);
        EXPECT_TRUE(eof.finished());
        EXPECT_EQ(eof.size(), 2u);
        if (eof.size() == 2) {
            EXPECT_EQ(eof[0].res, 4);
            EXPECT_EQ(eof[1].res, 0);
        }
        expect_more_on_all_but_last(eof);
        // A file that cannot be polled, and a closed descriptor.
        EXPECT_EQ(regular.start([&](io_uring_sqe* s) { raw::prep_read_multishot(s, file, g); }), 0);
        EXPECT_EQ(closed.start([&](io_uring_sqe* s) { raw::prep_read_multishot(s, closed_fd(), g); }), 0);
        co_await regular.wait_for(1);
        co_await closed.wait_for(1);
        EXPECT_TRUE(regular.finished());
        EXPECT_EQ(regular.back().res, -EBADFD);
        EXPECT_TRUE(closed.finished());
        EXPECT_EQ(closed.back().res, -EBADF);
    }());
}

// --- timeout --------------------------------------------------------------------------------

TEST(Multishot, TimeoutWithACountStopsByItself) {
    RINGO_IO_URING_ONLY("multishot timeouts");
    Runtime rt;
    CqeLog log(rt);
    __kernel_timespec ts = op::to_timespec(2ms);
    rt.block_on([&]() -> Task<void> {
        auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_timeout_multishot(s, &ts, 3); }), 0);
        co_await log.wait_for(3);
        auto took = std::chrono::steady_clock::now() - t0;
        EXPECT_TRUE(log.finished());
        EXPECT_EQ(log.size(), 3u);
        for (std::size_t i = 0; i < log.size(); ++i)
            EXPECT_EQ(log[i].res, -ETIME);
        expect_more_on_all_but_last(log);
        EXPECT_GE(took, 6ms);
        // Nothing left to cancel.
        EXPECT_EQ(co_await op::async_cancel(log.user_data()), -ENOENT);
    }());
}

TEST(Multishot, TimeoutWithoutACountRepeatsUntilRemoved) {
    RINGO_IO_URING_ONLY("multishot timeouts");
    Runtime rt;
    CqeLog log(rt), removed(rt);
    __kernel_timespec ts = op::to_timespec(1ms);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_timeout_multishot(s, &ts); }), 0);
        co_await log.wait_for(4);
        EXPECT_GE(log.size(), 4u);
        EXPECT_FALSE(log.finished());
        // Busy past the next expiry first, so that the first cancel lands in the window where
        // the timeout is off the kernel's list (on a DEFER_TASKRUN ring it then misses).
        spin_for(2ms);
        EXPECT_EQ(co_await cancel_timeout_and_finish(log), 0);
        EXPECT_EQ(log.back().res, -ECANCELED);
        for (std::size_t i = 0; i + 1 < log.size(); ++i)
            EXPECT_EQ(log[i].res, -ETIME);
        expect_more_on_all_but_last(log);
        // timeout_remove ends one as well.
        EXPECT_EQ(removed.start([&](io_uring_sqe* s) { raw::prep_timeout_multishot(s, &ts); }), 0);
        co_await removed.wait_for(1);
        EXPECT_EQ(co_await cancel_timeout_and_finish(removed, /*remove=*/true), 0);
        EXPECT_EQ(removed.back().res, -ECANCELED);
    }());
}

TEST(Multishot, TimeoutErrors) {
    Runtime rt;
    CqeLog negative(rt), absolute(rt);
    __kernel_timespec neg{-1, 0};
    __kernel_timespec ts = op::to_timespec(1ms);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(negative.start([&](io_uring_sqe* s) { raw::prep_timeout_multishot(s, &neg, 2); }), 0);
        // An absolute multishot timeout makes no sense: the kernel refuses it.
        EXPECT_EQ(absolute.start([&](io_uring_sqe* s) { raw::prep_timeout_multishot(s, &ts, 2, compat::timeout_abs); }),
                  0);
        co_await negative.wait_for(1);
        co_await absolute.wait_for(1);
        EXPECT_TRUE(negative.finished());
        EXPECT_EQ(negative.back().res, -EINVAL);
        EXPECT_TRUE(absolute.finished());
        EXPECT_EQ(absolute.back().res, -EINVAL);
    }());
}

// --- poll -----------------------------------------------------------------------------------

TEST(Multishot, PollReportsEachReadiness) {
    Runtime rt;
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    CqeLog log(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_poll_multishot(s, p.r, POLLIN); }), 0);
        char buf[8];
        for (std::size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(::write(p.w, "x", 1), 1);
            co_await log.wait_for(i + 1);
            EXPECT_EQ(::read(p.r, buf, sizeof buf), 1); // drained: the next write is a new event
        }
        EXPECT_EQ(log.size(), 3u);
        EXPECT_FALSE(log.finished());
        for (std::size_t i = 0; i < log.size(); ++i) {
            EXPECT_TRUE(log[i].res & POLLIN) << "CQE " << i;
            EXPECT_TRUE(op::has_more(log[i].flags));
        }
        EXPECT_EQ(co_await cancel_and_finish(log), 0);
        EXPECT_EQ(log.back().res, -ECANCELED);
        expect_more_on_all_but_last(log);
    }());
}

TEST(Multishot, PollRemoveAndFixedFile) {
    RINGO_IO_URING_ONLY("a registered file");
    Runtime rt;
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    ringo::op::FileTable files(rt);
    int fds[1] = {p.r};
    ASSERT_EQ(files.register_files(fds), 0);
    CqeLog log(rt), closed(rt), wrong(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_poll_multishot(s, Fixed{0}, POLLIN); }), 0);
        EXPECT_EQ(::write(p.w, "y", 1), 1);
        co_await log.wait_for(1);
        EXPECT_EQ(log.size(), 1u);
        // poll_remove ends a multishot poll too.
        EXPECT_EQ(co_await op::poll_remove(log.user_data()), 0);
        co_await log.wait_for(1000000);
        EXPECT_TRUE(log.finished());
        EXPECT_EQ(log.back().res, -ECANCELED);
        expect_more_on_all_but_last(log);
        EXPECT_EQ(closed.start([&](io_uring_sqe* s) { raw::prep_poll_multishot(s, closed_fd(), POLLIN); }), 0);
        EXPECT_EQ(wrong.start([&](io_uring_sqe* s) { raw::prep_poll_multishot(s, Fixed{3}, POLLIN); }), 0);
        co_await closed.wait_for(1);
        co_await wrong.wait_for(1);
        EXPECT_EQ(closed.back().res, -EBADF);
        EXPECT_EQ(wrong.back().res, -EBADF);
        EXPECT_TRUE(closed.finished());
        EXPECT_TRUE(wrong.finished());
    }());
}

// --- the queue mechanism ----------------------------------------------------------------------

TEST(Multishot, QueueRefusesAnOpcodeTheProbeLacks) {
    Runtime rt;
    rt.probe().set_supported(compat::opcode::poll_add, false);
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    CqeLog log(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_poll_multishot(s, p.r, POLLIN); }), -EOPNOTSUPP);
        EXPECT_EQ(::write(p.w, "z", 1), 1);
        co_await op::nop(); // the SQE that was taken became a NOP the loop ignores
        co_await op::timeout(2ms);
        EXPECT_EQ(log.size(), 0u);
        EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    }());
}

TEST(Multishot, QueueSubmitsNothingWhenPrepThrows) {
    Runtime rt;
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    CqeLog log(rt);
    rt.block_on([&]() -> Task<void> {
        EXPECT_THROW(log.start([&](io_uring_sqe* s) {
            raw::prep_poll_multishot(s, p.r, POLLIN);
            s->flags |= compat::sqe_flag::io_link; // would swallow the next SQE as a link
            throw std::runtime_error("prep failed halfway");
        }),
                     std::runtime_error);
        EXPECT_EQ(::write(p.w, "z", 1), 1);
        EXPECT_EQ(co_await op::nop(), 0); // not linked to (or cancelled by) a broken SQE
        co_await op::timeout(2ms);
        EXPECT_EQ(log.size(), 0u);
        EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    }());
}

TEST(Multishot, RuntimeDestructorEndsAnArmedOperation) {
    auto rt = std::make_unique<Runtime>();
    Pipe p(O_CLOEXEC | O_NONBLOCK);
    CqeLog log(*rt);
    rt->block_on([&]() -> Task<void> {
        EXPECT_EQ(log.start([&](io_uring_sqe* s) { raw::prep_poll_multishot(s, p.r, POLLIN); }), 0);
        EXPECT_EQ(::write(p.w, "w", 1), 1);
        co_await log.wait_for(1);
        EXPECT_EQ(rt->stats().ops_in_flight, 1u);
    }());
    EXPECT_FALSE(log.finished());
    rt.reset(); // cancels the poll and delivers its final CQE before returning
    EXPECT_TRUE(log.finished());
    EXPECT_EQ(log.back().res, -ECANCELED);
}

} // namespace
