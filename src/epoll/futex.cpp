// src/epoll/futex.cpp - futex waits and wakes on the epoll engine. A wait is checked at its
// start as the kernel checks it (its flags, its word's alignment and value), then made on the
// thread pool with futex_waitv(2) on two words: the caller's, which a futex(2) wake of any
// thread reaches, and a word of its own that a wake through any epoll engine of the process
// sets and wakes (a "kick"). Such a wake first wakes the waits the engines hold (all of them
// are in one table, so that a wake between a wait's start and its pool thread's arrival in the
// kernel is not lost), then the plain threads with futex(2). The caller's word changed since
// the wait's start also ends it with 0: its waker changed it before waking (the protocol of
// futex words), and the kernel's request, armed at once, would have seen that wake.
// A futex_waitv waits so on each of its words (its result: the index of the word woken).
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <mutex>
#include <new>
#include <vector>

#include "engine.hpp"

namespace ringo::uring::epoll {

namespace {

namespace f2 = compat::futex2;

// The futex waits in flight on every epoll engine of the process.
struct FutexTable {
    std::mutex m;
    std::vector<Engine::Pending*> waits;
};
FutexTable& table() {
    static FutexTable* t = [] {
        auto* made = new FutexTable; // (never destroyed: pool threads may outlive main)
        // fork(): the lock is held across it; the child starts with no wait (those in the table
        // are the parent's, on threads the child does not have).
        ::pthread_atfork([] { table().m.lock(); }, [] { table().m.unlock(); },
                         [] {
                             FutexTable& c = table();
                             new (&c.m) std::mutex;
                             c.waits.clear();
                         });
        return made;
    }();
    return *t;
}

long sys_futex(const void* addr, int op, std::uint32_t val, std::uint32_t val3) noexcept {
    return ::syscall(SYS_futex, addr, op, val, nullptr, nullptr, val3);
}

// A futex_waitv's words at most (FUTEX_WAITV_MAX): one of fewer waits on its kick word too; one
// of this many is interrupted by a kick, and looks at it every 10 ms.
constexpr std::size_t waitv_max = 128;
// What a futex_waitv's done_io says once it was kicked by a cancel (else: the word woken).
constexpr std::uint32_t futex_waitv_cancelled = ~std::uint32_t{0};

// The first of futex_waitv `w`'s words that is the word at `addr` (private or shared as `priv`
// says), or their count.
std::size_t waitv_index(const Engine::Pending& w, std::uint64_t addr, bool priv) noexcept {
    std::size_t i = 0;
    for (; i < w.words.size(); ++i)
        if (w.words[i].uaddr == addr && ((w.words[i].flags & f2::private_) != 0) == priv)
            break;
    return i;
}

// Whether the kernel can key the 32-bit word at `addr` (get_futex_key, after the alignment
// check): a user address, and for a shared word one it can read.
bool keyable(std::uint64_t addr, bool priv) noexcept {
    std::uint32_t now = 0;
    return addr <= (std::uint64_t{1} << 47) - 4096 - sizeof now && (priv || read_user(&now, addr, sizeof now));
}

} // namespace

// The checks the kernel makes of a futex SQE before anything else (io_uring's futex prep):
// fields it wants zero, futex2 flags (a 32-bit word only), a value and a mask that fit the
// word, and a mask that is not empty.
int Engine::futex_checks(const io_uring_sqe& s) noexcept {
    if (s.len || s.rw_flags || s.buf_index || s.file_index)
        return -EINVAL;
    const auto flags = static_cast<std::uint32_t>(s.fd);
    if ((flags & ~(3u | f2::mpol | f2::private_)) || (flags & 3u) != f2::size_u32)
        return -EINVAL; // (the engine has no NUMA futexes; FUTEX2_MPOL alone is a hint, taken)
    if ((s.off >> 32) || (s.addr3 >> 32) || s.addr3 == 0)
        return -EINVAL;
    if (s.addr % 4)
        return -EINVAL; // (a word the kernel cannot key)
    return 0;
}

// FUTEX_WAIT: -EAGAIN at once when the word does not hold the value, -EFAULT when it cannot be
// read; else in the table and on the pool (futex_wait_call).
void Engine::futex_wait(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    if (const int r = futex_checks(s); r < 0) {
        finish(p, r);
        return;
    }
    std::uint32_t now = 0;
    if (!read_user(&now, s.addr, sizeof now)) {
        finish(p, -EFAULT);
        return;
    }
    if (now != static_cast<std::uint32_t>(s.off)) {
        finish(p, -EAGAIN);
        return;
    }
    futex_queue(p);
}

// A wait that passed its checks: in the table (where a wake through any engine finds it from
// now on), then on the pool.
void Engine::futex_queue(Pending* p) {
    p->kick.store(0, std::memory_order_relaxed);
    FutexTable& t = table();
    {
        std::lock_guard lk(t.m);
        t.waits.push_back(p);
    }
    try {
        to_pool(p);
    } catch (...) {
        futex_done(p);
        throw;
    }
}

// The wait, made on a pool thread: 0 when woken (the word's wake, a kick, or a word changed
// since the start), -EINTR when interrupted (cancelled: -ECANCELED), or the call's error.
int Engine::futex_wait_call(Pending* p) noexcept {
    const io_uring_sqe& s = p->sqe;
    const bool priv = static_cast<std::uint32_t>(s.fd) & f2::private_;
    const auto* word = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(s.addr));
    const auto mask = static_cast<std::uint32_t>(s.addr3);
    long n = 0;
    p->armed.store(true, std::memory_order_seq_cst);
    if (mask == f2::bitset_match_any) {
        // Both words at once: futex_waitv's waits match any wake's mask, as this one does.
        struct futex_waitv w[2] = {};
        w[0].val = s.off;
        w[0].uaddr = s.addr;
        w[0].flags = static_cast<std::uint32_t>(s.fd) & ~f2::mpol; // (a hint without FUTEX2_NUMA)
        w[1].val = 0;
        w[1].uaddr = reinterpret_cast<std::uintptr_t>(&p->kick);
        w[1].flags = f2::size_u32 | f2::private_;
        n = ::syscall(SYS_futex_waitv, w, 2u, 0u, nullptr, 0);
    }
    if (mask != f2::bitset_match_any || (n < 0 && errno == ENOSYS)) {
        // A wait with a mask (or before 5.16): the caller's word alone, with its mask, and the
        // kick looked at every 10 ms (a kick also interrupts the call: futex_kick).
        for (;;) {
            if (p->kick.load(std::memory_order_acquire) != 0) {
                n = 0;
                break;
            }
            timespec tick{0, 10'000'000};
            n = ::syscall(SYS_futex, word, priv ? FUTEX_WAIT_BITSET_PRIVATE : FUTEX_WAIT_BITSET,
                          static_cast<std::uint32_t>(s.off), &tick, nullptr, mask);
            if (n >= 0 || (errno != ETIMEDOUT && !(errno == EINTR && p->kick.load(std::memory_order_acquire))))
                break;
        }
        if (n < 0 && errno == ETIMEDOUT)
            n = 0;
    }
    const int r = n >= 0 || errno == EAGAIN ? 0 : -errno;
    p->armed.store(false, std::memory_order_seq_cst);
    return r;
}

// The wait ended (on its pool thread, before its result is posted): out of the table, where no
// wake finds it any more.
void Engine::futex_done(Pending* p) noexcept {
    FutexTable& t = table();
    std::lock_guard lk(t.m);
    for (std::size_t i = 0; i < t.waits.size(); ++i)
        if (t.waits[i] == p) {
            t.waits[i] = t.waits.back();
            t.waits.pop_back();
            break;
        }
}

// Ends a wait that is in the table (a wake, a cancel): its kick word set and woken. Under the
// table's lock. False when it was ended so already.
bool Engine::futex_kick(Pending* p) noexcept {
    if (p->kick.exchange(1, std::memory_order_acq_rel) != 0)
        return false;
    if (p->sqe.opcode == opc::futex_waitv ? p->words.size() < waitv_max
                                          : static_cast<std::uint32_t>(p->sqe.addr3) == f2::bitset_match_any)
        (void)sys_futex(&p->kick, FUTEX_WAKE_PRIVATE, 1, 0);
    else
        (void)BlockingCalls::get().interrupt(p); // (its call looks at the kick every 10 ms too)
    return true;
}

// FUTEX_WAKE: up to `off` waiters whose mask meets the wake's: the engines' own waits first,
// then plain threads with futex(2). The number woken. A wait kicked here whose pool thread may
// still be in the kernel's queue of the word (kicked, not yet run) can take one of the
// futex(2) call's wakes: the call asks for that many more, and they are not counted (a plain
// thread so woken beyond the count had a spurious wake-up, which futex words allow).
int Engine::futex_wake(const io_uring_sqe& s) noexcept {
    if (const int r = futex_checks(s); r < 0)
        return r;
    const auto max = static_cast<std::uint32_t>(s.off);
    const bool priv = static_cast<std::uint32_t>(s.fd) & f2::private_;
    if (max == 0) // (the kernel keys the word first: -EFAULT for one it cannot key)
        return keyable(s.addr, priv) ? 0 : -EFAULT;
    const auto mask = static_cast<std::uint32_t>(s.addr3);
    std::uint32_t woken = 0, queued = 0;
    {
        FutexTable& t = table();
        std::lock_guard lk(t.m);
        for (Pending* w : t.waits) {
            if (woken == max)
                break;
            const io_uring_sqe& ws = w->sqe;
            if (ws.opcode == opc::futex_waitv) {
                // (Its words match any mask; the first of them that is this word is the one woken.)
                const std::size_t i = waitv_index(*w, s.addr, priv);
                if (i == w->words.size() || w->kick.load(std::memory_order_acquire) != 0)
                    continue;
                w->done_io = static_cast<std::uint32_t>(i); // (read by its thread once kicked)
            } else if (ws.addr != s.addr || ((static_cast<std::uint32_t>(ws.fd) & f2::private_) != 0) != priv ||
                       !(static_cast<std::uint32_t>(ws.addr3) & mask)) {
                continue;
            }
            if (futex_kick(w)) {
                ++woken;
                queued += w->armed.load(std::memory_order_seq_cst);
            }
        }
    }
    if (woken < max) {
        const std::uint32_t more = max - woken > INT_MAX - queued ? INT_MAX : max - woken + queued;
        const long n = sys_futex(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(s.addr)),
                                 priv ? FUTEX_WAKE_BITSET_PRIVATE : FUTEX_WAKE_BITSET, more, mask);
        if (n < 0)
            return woken ? static_cast<int>(woken) : -errno;
        if (static_cast<std::uint32_t>(n) > queued)
            woken += std::min(static_cast<std::uint32_t>(n) - queued, max - woken);
    }
    return static_cast<int>(woken);
}

// A cancelled wait: kicked, and -ECANCELED when its pool thread returns. The kernel's cancel of
// a futex request reports the number it cancelled.
int Engine::futex_cancel(Pending* p) noexcept {
    FutexTable& t = table();
    std::lock_guard lk(t.m);
    for (Pending* w : t.waits)
        if (w == p && p->kick.load(std::memory_order_acquire) == 0) {
            p->done_io = futex_waitv_cancelled; // (a futex_waitv's thread tells a cancel so)
            (void)futex_kick(p);
            p->cancelled = true; // (read on the loop's thread alone: ended_off_loop)
            return 1;
        }
    return -EALREADY; // (woken already, or its call ended: its result is on its way)
}

// IORING_OP_FUTEX_WAITV: the kernel's checks of the SQE (fields it wants zero, 1 to 128
// words), of each word it copies (-EFAULT; futex2 flags of a 32-bit word, nothing reserved, a
// value that fits the word), then of each word's address (aligned, a user address, readable
// when shared), then of each one's value (-EFAULT unreadable, -EAGAIN when it does not hold it); then in the table and
// on the pool, as a futex wait.
void Engine::futex_waitv_start(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    if (s.fd || s.buf_index || s.file_index || s.off || s.rw_flags || s.addr3 || s.len == 0 || s.len > waitv_max) {
        finish(p, -EINVAL);
        return;
    }
    p->words.resize(s.len);
    if (!read_user(p->words.data(), s.addr, s.len * sizeof(Pending::FutexWord))) {
        finish(p, -EFAULT);
        return;
    }
    for (const Pending::FutexWord& w : p->words)
        if ((w.flags & ~(3u | f2::mpol | f2::private_)) || (w.flags & 3u) != f2::size_u32 || w.reserved ||
            (w.val >> 32)) {
            finish(p, -EINVAL); // (the engine has no NUMA futexes)
            return;
        }
    // Every word's key first (the kernel's get_futex_key): aligned, a user address, and for a
    // shared word one it can read; then every word's value.
    for (const Pending::FutexWord& w : p->words) {
        const int r = w.uaddr % 4 ? -EINVAL : !keyable(w.uaddr, w.flags & f2::private_) ? -EFAULT : 0;
        if (r < 0) {
            finish(p, r);
            return;
        }
    }
    for (const Pending::FutexWord& w : p->words) {
        std::uint32_t now = 0;
        const int r = !read_user(&now, w.uaddr, sizeof now) ? -EFAULT : 0;
        if (r < 0 || now != static_cast<std::uint32_t>(w.val)) {
            finish(p, r < 0 ? r : -EAGAIN);
            return;
        }
    }
    futex_queue(p);
}

// The wait, made on a pool thread with futex_waitv(2) on the caller's words and the kick word:
// the index of the word woken (a kick's, from done_io), -ECANCELED when a cancel kicked it,
// -EINTR when interrupted, or the call's error. A word changed since the start ends it with its
// index, as the wake that follows the change would.
int Engine::futex_waitv_call(Pending* p) noexcept {
    const std::size_t n = p->words.size();
    struct futex_waitv w[waitv_max + 1] = {};
    for (std::size_t i = 0; i < n; ++i) {
        w[i].val = p->words[i].val;
        w[i].uaddr = p->words[i].uaddr;
        w[i].flags = p->words[i].flags & ~f2::mpol;
    }
    const bool kick_word = n < waitv_max;
    if (kick_word) {
        w[n].uaddr = reinterpret_cast<std::uintptr_t>(&p->kick);
        w[n].flags = f2::size_u32 | f2::private_;
    }
    p->armed.store(true, std::memory_order_seq_cst);
    long r = -1;
    int err = 0;
    for (;;) {
        if (p->kick.load(std::memory_order_acquire) != 0)
            break;
        timespec tick{};
        if (!kick_word) { // (the kick interrupts the call, and is looked at every 10 ms)
            ::clock_gettime(CLOCK_MONOTONIC, &tick);
            tick.tv_nsec += 10'000'000;
            if (tick.tv_nsec >= 1'000'000'000) {
                tick.tv_nsec -= 1'000'000'000;
                ++tick.tv_sec;
            }
        }
        r = ::syscall(SYS_futex_waitv, w, static_cast<unsigned>(n + kick_word), 0u, kick_word ? nullptr : &tick,
                      CLOCK_MONOTONIC);
        err = r < 0 ? errno : 0;
        if (r >= 0 || (err != ETIMEDOUT && err != EINTR) || (err == EINTR && p->kick.load() == 0))
            break;
    }
    p->armed.store(false, std::memory_order_seq_cst);
    if (p->kick.load(std::memory_order_acquire) != 0)
        return p->done_io == futex_waitv_cancelled ? -ECANCELED : static_cast<int>(p->done_io);
    if (r >= 0)
        return static_cast<int>(r);
    if (err == EAGAIN) // (a word changed since the start: the first that did)
        for (std::size_t i = 0; i < n; ++i) {
            std::uint32_t now = 0;
            if (read_user(&now, w[i].uaddr, sizeof now) && now != static_cast<std::uint32_t>(w[i].val))
                return static_cast<int>(i);
        }
    return err == ENOSYS ? -EOPNOTSUPP : -err; // (futex_waitv(2): Linux 5.16)
}

} // namespace ringo::uring::epoll
