// ringo/core/detail/parker.hpp - how a plain thread (not a runtime) sleeps until another
// thread wakes it: a futex(2) word, where a mutex and a std::condition_variable would pull
// <condition_variable> (and through it <stop_token> and <memory>'s shared pointers) into every
// file that includes a ringo header.
#pragma once

#include <atomic>
#include <cstdint>

namespace ringo::detail {

/// Sleeps while `word` holds `expected`, for at most `timeout_ns` (negative: no limit).
/// Returns false only when the time ran out. It may return early (a signal, a stray wake-up):
/// callers test their condition in a loop.
bool futex_sleep(const std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t timeout_ns) noexcept;

/// Wakes up to `n` threads sleeping on the word at `addr`. It reads nothing there: the kernel
/// keys a process-private futex by its address alone, so the caller may pass the address of a
/// word its sleeper has already seen change and freed. Whatever sleeps at that address later
/// gets a stray wake-up, which futex_sleep's callers tolerate.
void futex_wake(const void* addr, int n) noexcept;

/// A one-shot wake-up for one plain thread: wait() returns once notify() has been called.
struct ThreadParker {
    std::atomic<std::uint32_t> ready{0};
    void wait() noexcept {
        while (ready.load(std::memory_order_acquire) == 0)
            futex_sleep(ready, 0, -1);
    }
    /// The waiting thread may return, and free the parker, as soon as it sees the store:
    /// nothing after the store touches the parker's memory.
    void notify() noexcept {
        const void* addr = &ready;
        ready.store(1, std::memory_order_release);
        futex_wake(addr, 1);
    }
};

} // namespace ringo::detail
