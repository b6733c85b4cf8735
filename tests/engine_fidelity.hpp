// Helpers of the engine-fidelity suites (test_engine_fidelity.cpp, test_engine_ops.cpp): the
// same raw SQEs run on a ring of each engine (uring::Ring made with EngineKind::io_uring and
// EngineKind::epoll), their CQEs compared. Where io_uring cannot be set up (a seccomp profile
// refuses it) only the epoll side runs.
#pragma once

#include <ringo/uring/compat.hpp>
#include <ringo/uring/ring.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "helpers.hpp"

using ringo::uring::EngineKind;
using ringo::uring::Ring;
using ringo::uring::RingParams;
namespace compat = ringo::uring::compat;
namespace opc = ringo::uring::compat::opcode;
using namespace std::chrono_literals;

namespace fidelity {

struct Cqe {
    std::uint64_t user_data;
    int res;
    std::uint32_t flags;
};

inline const char* name_of(EngineKind k) { return k == EngineKind::epoll ? "epoll" : "io_uring"; }

// A ring of engine `k` (`sq` and `cq` entries; 0: twice `sq`), or none when io_uring cannot be
// set up here.
inline std::unique_ptr<Ring> make_ring(EngineKind k, unsigned sq = 8, unsigned cq = 0) {
    RingParams p;
    p.engine = k;
    p.sq_entries = sq;
    p.cq_entries = cq;
    try {
        return std::make_unique<Ring>(p);
    } catch (const std::system_error&) {
        if (k == EngineKind::epoll)
            throw;
        return nullptr;
    }
}

// Submits what `prep` prepares (it may take several SQEs from the ring) and gathers CQEs until
// `want` came or `limit` passed.
inline std::vector<Cqe> run(Ring& r, const std::function<void(Ring&)>& prep, unsigned want,
                            std::chrono::nanoseconds limit = 2s) {
    prep(r);
    std::vector<Cqe> got;
    const auto end = std::chrono::steady_clock::now() + limit;
    (void)r.submit(0, false);
    for (;;) {
        r.reap([&](std::uint64_t ud, int res, std::uint32_t fl) { got.push_back({ud, res, fl}); });
        const auto left = end - std::chrono::steady_clock::now();
        if (got.size() >= want || left <= 0ns)
            break;
        (void)r.submit_and_wait_timeout(
            1, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count()));
    }
    return got;
}

// One SQE (user_data 1) filled by `fill`, on a ring of engine `k`: its CQE, if one came.
inline std::optional<Cqe> one(Ring& r, const std::function<void(io_uring_sqe*)>& fill, std::chrono::nanoseconds limit) {
    auto cqes = run(
        r,
        [&](Ring& rr) {
            io_uring_sqe* s = rr.get_sqe();
            fill(s);
            s->user_data = 1;
        },
        1, limit);
    if (cqes.empty())
        return std::nullopt;
    return cqes[0];
}

// Runs one SQE that `fill` fills on both engines; returns the epoll engine's result after
// checking that io_uring's, when it could be set up, is the same.
inline int both(const std::function<void(io_uring_sqe*)>& fill, std::chrono::nanoseconds limit = 2s) {
    std::optional<int> results[2];
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        auto c = one(*ring, fill, limit);
        EXPECT_TRUE(c.has_value()) << name_of(k) << ": no CQE in time";
        if (c)
            results[k == EngineKind::epoll] = c->res;
    }
    if (results[0] && results[1]) {
        EXPECT_EQ(*results[0], *results[1]) << "io_uring " << *results[0] << ", epoll " << *results[1];
    }
    return results[1].value_or(INT_MIN);
}

// A page that no read can read (kept mapped without access for the process's life: a page
// unmapped would soon hold a ring's queues).
inline void* unmapped_page() {
    static void* p = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    return p;
}

inline std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

inline void prep(io_uring_sqe* s, std::uint8_t op, int fd, std::uint64_t addr, std::uint32_t len, std::uint64_t off) {
    if (!s)
        throw std::runtime_error("the submission queue is full");
    std::memset(s, 0, sizeof *s);
    s->opcode = op;
    s->fd = fd;
    s->addr = addr;
    s->len = len;
    s->off = off;
}

// An 8 KiB file of 'x', open for reading and writing.
struct File {
    ringo_test::TempDir dir;
    int fd;
    File() {
        const std::string path = dir.file_with("f", std::string(8192, 'x'));
        fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    }
    ~File() { ::close(fd); }
};

// Runs what `prep` prepares on a ring of each engine and gathers `want` CQEs (within
// `limit`); checks that both engines gave the same CQEs in the same order (user_data,
// result, flags), and returns the epoll engine's. `by_user_data`: each engine's CQEs are
// ordered by user_data first (where the kernel posts them from different contexts, and their
// order is not part of the comparison).
inline std::vector<Cqe> both_seq(const std::function<void(Ring&)>& prep, unsigned want,
                                 std::chrono::nanoseconds limit = 1s, bool by_user_data = false) {
    std::vector<Cqe> got[2];
    bool ran[2] = {false, false};
    for (EngineKind k : {EngineKind::io_uring, EngineKind::epoll}) {
        auto ring = make_ring(k);
        if (!ring)
            continue;
        const int i = k == EngineKind::epoll;
        ran[i] = true;
        got[i] = run(*ring, prep, want, limit);
        if (by_user_data)
            std::stable_sort(got[i].begin(), got[i].end(),
                             [](const Cqe& a, const Cqe& b) { return a.user_data < b.user_data; });
    }
    if (ran[0]) {
        EXPECT_EQ(got[0].size(), got[1].size());
        for (std::size_t i = 0; i < got[0].size() && i < got[1].size(); ++i) {
            EXPECT_EQ(got[0][i].user_data, got[1][i].user_data) << "CQE " << i;
            EXPECT_EQ(got[0][i].res, got[1][i].res) << "CQE " << i << " (user_data " << got[0][i].user_data << ")";
            EXPECT_EQ(got[0][i].flags, got[1][i].flags) << "CQE " << i;
        }
    }
    return got[1];
}

inline io_uring_sqe* next(Ring& r, std::uint64_t ud, std::uint8_t op, int fd, std::uint64_t addr, std::uint32_t len,
                          std::uint64_t off, std::uint8_t flags = 0) {
    io_uring_sqe* s = r.get_sqe();
    prep(s, op, fd, addr, len, off);
    s->user_data = ud;
    s->flags = flags;
    return s;
}

struct SocketPair {
    int sv[2];
    explicit SocketPair(int type = SOCK_STREAM) { EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0); }
    ~SocketPair() {
        ::close(sv[0]);
        ::close(sv[1]);
    }
};

} // namespace fidelity
