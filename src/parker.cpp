// src/parker.cpp - the futex(2) calls behind ringo/core/detail/parker.hpp.
#include <ringo/core/detail/parker.hpp>

#include <climits>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ringo::detail {

bool futex_sleep(const std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t timeout_ns) noexcept {
    timespec ts{};
    timespec* limit = nullptr;
    if (timeout_ns >= 0) {
        ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
        ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
        limit = &ts; // FUTEX_WAIT's timeout is relative
    }
    // The kernel only reads the word (to compare it with `expected`); the cast drops the const.
    auto* addr = const_cast<std::uint32_t*>(reinterpret_cast<const std::uint32_t*>(&word));
    const int saved = errno;
    long r = ::syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, limit, nullptr, 0);
    const bool timed_out = r == -1 && errno == ETIMEDOUT;
    errno = saved;
    return !timed_out;
}

void futex_wake(const void* addr, int n) noexcept {
    const int saved = errno;
    ::syscall(SYS_futex, const_cast<void*>(addr), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
    errno = saved;
}

} // namespace ringo::detail
