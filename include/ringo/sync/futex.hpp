// ringo/sync/futex.hpp - Futex: one 32-bit word that tasks wait on through io_uring and
// plain threads wait on with futex(2).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>

#include <ringo/core/detail/chrono.hpp>
#include <ringo/op/futex.hpp>

namespace ringo {

/// A process-private futex word shared between tasks and plain threads: a task waits with
/// `co_await f.wait(expected)` (IORING_OP_FUTEX_WAIT, kernel 6.7; the task suspends, its
/// thread keeps running other tasks), a thread with `f.wait_blocking(expected)` (futex(2));
/// either side wakes both kinds of waiter with `f.wake(n)` (a futex(2) call) or, from a task,
/// `co_await f.wake_async(n)` (IORING_OP_FUTEX_WAKE). Build a primitive on it by changing
/// the word with its atomic operations, then waking. See docs/sync.md.
class Futex {
public:
    /// A futex word holding `initial`.
    explicit Futex(std::uint32_t initial = 0) noexcept : word_(initial) {}
    Futex(const Futex&) = delete;
    Futex& operator=(const Futex&) = delete;

    /// The word itself, for atomic updates.
    std::atomic<std::uint32_t>& word() noexcept { return word_; }
    /// The word's value (an atomic load).
    [[nodiscard]] std::uint32_t load(std::memory_order o = std::memory_order_seq_cst) const noexcept {
        return word_.load(o);
    }
    /// Sets the word (an atomic store; it wakes nobody: wake() does).
    void store(std::uint32_t v, std::memory_order o = std::memory_order_seq_cst) noexcept { word_.store(v, o); }

    /// `co_await f.wait(expected)`: sleeps while the word equals `expected`: 0 when woken
    /// (possibly spuriously: re-check the word), -EAGAIN when it did not hold `expected`,
    /// -ECANCELED when the task was cancelled, -EOPNOTSUPP on kernels without io_uring futex
    /// operations (the epoll engine serves them on any kernel).
    [[nodiscard]] op::FutexWait wait(std::uint32_t expected) const noexcept { return op::futex_wait(addr(), expected); }

    /// `co_await f.wake_async(n)`: wakes up to n waiters through the ring; the number woken.
    [[nodiscard]] op::FutexWake wake_async(std::uint32_t n = 1) const noexcept { return op::futex_wake(addr(), n); }

    /// Wakes up to n waiters (tasks and threads) with one futex(2) call, from any thread:
    /// the number woken, or -errno.
    int wake(std::uint32_t n = 1) const noexcept {
        int cnt = n > static_cast<std::uint32_t>(INT_MAX) ? INT_MAX : static_cast<int>(n);
        long r = ::syscall(SYS_futex, addr(), FUTEX_WAKE_PRIVATE, cnt, nullptr, nullptr, 0);
        return r < 0 ? -errno : static_cast<int>(r);
    }
    /// wake(all).
    int wake_all() const noexcept { return wake(static_cast<std::uint32_t>(INT_MAX)); }

    /// Blocks the calling thread while the word equals `expected` (futex(2)): 0 when woken,
    /// -EAGAIN when it did not hold `expected`, -EINTR on a signal. Do not call it on a
    /// runtime's thread (it would stop the runtime); nothing prevents it.
    int wait_blocking(std::uint32_t expected) const noexcept { return sys_wait(expected, nullptr); }
    /// The same with a relative timeout: -ETIMEDOUT when it passes. A negative timeout
    /// counts as zero.
    template <class Rep, class Period>
    int wait_blocking_for(std::uint32_t expected, std::chrono::duration<Rep, Period> d) const noexcept {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
        if (ns < 0)
            ns = 0;
        timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
        return sys_wait(expected, &ts);
    }

private:
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free);
    const std::uint32_t* addr() const noexcept { return reinterpret_cast<const std::uint32_t*>(&word_); }
    int sys_wait(std::uint32_t expected, const timespec* ts) const noexcept {
        long r = ::syscall(SYS_futex, addr(), FUTEX_WAIT_PRIVATE, expected, ts, nullptr, 0);
        return r < 0 ? -errno : 0;
    }
    std::atomic<std::uint32_t> word_;
};

} // namespace ringo
