// ringo/sync/wait_group.hpp - WaitGroup: wait until a count of pieces of work drops to zero.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <limits>
#include <utility>

#include <ringo/sync/condition_waiters.hpp>

namespace ringo {

/// Counts outstanding work, like Go's sync.WaitGroup: `add(n)` before starting n pieces,
/// `done()` as each ends, `co_await wg.wait()` until the count is zero. See docs/sync.md.
class WaitGroup : public ConditionWaiters<WaitGroup> {
public:
    /// A wait group whose count starts at `initial`.
    explicit WaitGroup(std::size_t initial = 0) noexcept : count_(static_cast<std::ptrdiff_t>(initial)) {}

    /// Adds `n` (may be negative) to the count; at zero every waiter is woken. Returns 0, or
    /// -EINVAL (nothing changes) when the count would drop below zero or overflow.
    int add(std::ptrdiff_t n) noexcept {
        lock_.lock();
        if ((n < 0 && count_ < -n) || (n > 0 && count_ > std::numeric_limits<std::ptrdiff_t>::max() - n)) {
            lock_.unlock();
            return -EINVAL;
        }
        count_ += n;
        detail::SyncWaiter* all = count_ == 0 ? take_all_waiters_locked() : nullptr;
        lock_.unlock();
        detail::wake_chain(all);
        return 0;
    }
    /// add(-1): 0, or -EINVAL when the count is already zero.
    int done() noexcept { return add(-1); }

    /// `co_await wg.wait()`: 0 once the count is zero (at once if it is), -ECANCELED when
    /// the task is cancelled first, -EPIPE when the group is destroyed first.
    [[nodiscard]] WaitAwaiter wait() noexcept { return WaitAwaiter(this); }
    // wait_blocking(): blocks a plain thread until the count is zero (ConditionWaiters).

    /// The count now (a snapshot).
    [[nodiscard]] std::size_t count() const noexcept {
        std::lock_guard lk(lock_);
        return static_cast<std::size_t>(count_);
    }

private:
    friend class ConditionWaiters<WaitGroup>;
    static constexpr const char* wait_outside_runtime =
        "ringo: WaitGroup::wait would wait outside a runtime; use wait_blocking";
    static constexpr const char* wait_blocking_on_runtime =
        "ringo: WaitGroup::wait_blocking on a runtime's thread; co_await wait()";
    bool ready_locked() const noexcept { return count_ == 0; }
    std::ptrdiff_t count_;
};

} // namespace ringo
