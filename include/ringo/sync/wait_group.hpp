// ringo/sync/wait_group.hpp - WaitGroup: wait until a count of pieces of work drops to zero.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <limits>
#include <utility>

#include <ringo/sync/detail/wait_list.hpp>

namespace ringo {

/// Counts outstanding work, like Go's sync.WaitGroup: `add(n)` before starting n pieces,
/// `done()` as each ends, `co_await wg.wait()` until the count is zero. See docs/sync.md.
class WaitGroup {
public:
    explicit WaitGroup(std::size_t initial = 0) noexcept : count_(static_cast<std::ptrdiff_t>(initial)) {}
    /// Waiters still queued end with -EPIPE.
    ~WaitGroup() { detail::abandon_all(lock_, waiters_, -EPIPE); }
    WaitGroup(const WaitGroup&) = delete;
    WaitGroup& operator=(const WaitGroup&) = delete;

    class WaitAwaiter : detail::WaitNode {
    public:
        explicit WaitAwaiter(WaitGroup* g) noexcept : WaitNode(g->lock_), g_(g) { cancel_fn = &cancel_unlinking; }
        WaitAwaiter(WaitAwaiter&& o) noexcept : WaitNode(std::move(o)), g_(o.g_) { cancel_fn = &cancel_unlinking; }
        bool await_ready() const noexcept { return false; }
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) {
            WaitGroup* g = g_;
            return try_or_suspend(detail::ctx_of_or_dummy(h), g->waiters_, h,
                                  "ringo: WaitGroup::wait would wait outside a runtime; use wait_blocking",
                                  [g]() noexcept { return g->count_ == 0; });
        }
        /// 0 once the count is zero, -ECANCELED when the task was cancelled first, -EPIPE when
        /// the group was destroyed.
        int await_resume() noexcept { return wait_result(); }

    private:
        WaitGroup* g_;
    };

    /// Adds `n` (may be negative) to the count; at zero every waiter is woken. Returns 0, or
    /// -EINVAL (nothing changes) when the count would drop below zero or overflow.
    int add(std::ptrdiff_t n) noexcept {
        lock_.lock();
        if ((n < 0 && count_ < -n) || (n > 0 && count_ > std::numeric_limits<std::ptrdiff_t>::max() - n)) {
            lock_.unlock();
            return -EINVAL;
        }
        count_ += n;
        detail::SyncWaiter* all = nullptr;
        if (count_ == 0) {
            all = waiters_.take_all();
            for (detail::SyncWaiter* w = all; w; w = w->next)
                w->res = 0;
        }
        lock_.unlock();
        detail::wake_chain(all);
        return 0;
    }
    /// add(-1): 0, or -EINVAL when the count is already zero.
    int done() noexcept { return add(-1); }

    /// `co_await wg.wait()`: 0 once the count is zero (at once if it is), -ECANCELED when
    /// the task is cancelled first.
    [[nodiscard]] WaitAwaiter wait() noexcept { return WaitAwaiter(this); }

    /// Blocks a plain thread until the count is zero. Throws std::logic_error on a
    /// runtime's thread.
    void wait_blocking() {
        detail::check_blocking_allowed("ringo: WaitGroup::wait_blocking on a runtime's thread; co_await wait()");
        lock_.lock();
        if (count_ == 0) {
            lock_.unlock();
            return;
        }
        detail::WaitNode node(lock_);
        detail::ThreadParker p;
        node.link_thread(waiters_, p);
        lock_.unlock();
        p.wait();
    }

    /// The count now (a snapshot).
    [[nodiscard]] std::size_t count() const noexcept {
        std::lock_guard lk(lock_);
        return static_cast<std::size_t>(count_);
    }

private:
    mutable detail::SpinLock lock_;
    std::ptrdiff_t count_;
    detail::WaitList waiters_;
};

} // namespace ringo
