// ringo/sync/semaphore.hpp - Semaphore: a counting semaphore for tasks on any runtime and
// for plain threads.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <limits>
#include <utility>

#include <ringo/sync/detail/wait_list.hpp>

namespace ringo {

namespace detail {
struct SemNode : WaitNode {
    std::size_t need = 1;
    using WaitNode::WaitNode;
    SemNode(SemNode&& o) noexcept : WaitNode(std::move(o)), need(o.need) {}
};
} // namespace detail

/// A counting semaphore. `co_await s.acquire(n)` takes n permits, waiting until they are
/// there; `release(n)` gives n back. Waiters are served first come, first served: a waiter
/// that needs more permits than are free holds back the ones behind it (no starvation of
/// large requests). See docs/sync.md.
class Semaphore {
public:
    /// The most permits a semaphore holds.
    static constexpr std::size_t max_permits = std::numeric_limits<std::ptrdiff_t>::max();

    /// Starts with `permits` free permits. Throws std::invalid_argument above max_permits.
    explicit Semaphore(std::size_t permits) : count_(permits) {
        if (permits > max_permits)
            throw std::invalid_argument("ringo::Semaphore: more than max_permits permits");
    }
    /// Waiters still queued end with -EPIPE.
    ~Semaphore() { detail::abandon_all(lock_, waiters_, -EPIPE); }
    Semaphore(const Semaphore&) = delete;
    Semaphore& operator=(const Semaphore&) = delete;

    /// What acquire() returns: awaited directly, it yields 0, -ECANCELED, -EINVAL or -EPIPE.
    class AcquireAwaiter : detail::SemNode {
    public:
        /// An acquire of `n` permits of `s`.
        AcquireAwaiter(Semaphore* s, std::size_t n) noexcept : SemNode(s->lock_), s_(s) {
            need = n;
            cancel_fn = &on_cancel;
        }
        /// Moves an awaiter that has not been awaited yet.
        AcquireAwaiter(AcquireAwaiter&& o) noexcept : SemNode(std::move(o)), s_(o.s_) { cancel_fn = &on_cancel; }
        /// Never ready: the permits are tried under the semaphore's lock in await_suspend.
        bool await_ready() const noexcept { return false; }
        template <class P>
        /// Takes the permits at once when they are free and nobody waits before (-ECANCELED at
        /// once in a cancelled task, -EINVAL for more than max_permits); else waits in order.
        /// Throws std::logic_error outside a runtime.
        bool await_suspend(std::coroutine_handle<P> h) {
            ctx = detail::ctx_of_or_dummy(h);
            if (need > max_permits) [[unlikely]] {
                res = -EINVAL;
                return false;
            }
            Semaphore* s = s_;
            std::size_t n = need;
            return try_or_suspend(ctx, s->waiters_, h,
                                  "ringo: Semaphore::acquire would wait outside a runtime; use acquire_blocking",
                                  [s, n]() noexcept {
                                      if (!s->waiters_.empty() || s->count_ < n)
                                          return false;
                                      s->count_ -= n;
                                      return true;
                                  });
        }
        /// The result is 0 or -errno: with_timeout yields -ETIME for it (compose/traits.hpp).
        static constexpr bool errno_result = true; // with_timeout: -ETIME (compose/traits.hpp)
        /// 0 (the permits are taken), -ECANCELED (none taken), -EINVAL (n > max_permits),
        /// -EPIPE (the semaphore was destroyed).
        int await_resume() noexcept { return wait_result(); }

    private:
        static void on_cancel(detail::Waitable* w) noexcept {
            auto* self = static_cast<AcquireAwaiter*>(w);
            Semaphore& s = *self->s_;
            if (!self->is_linked())
                return;
            s.lock_.lock();
            if (!self->is_linked()) {
                s.lock_.unlock();
                return;
            }
            s.waiters_.remove(self);
            self->res = -ECANCELED;
            // The waiters behind it may fit in the free permits now.
            detail::SyncWaiter* granted = s.grant_locked();
            s.lock_.unlock();
            self->rt->schedule(self->h);
            detail::wake_chain(granted);
        }
        Semaphore* s_;
    };

    /// `co_await s.acquire(n)`: 0 once n permits are taken; -ECANCELED when the task was
    /// cancelled while it waited (none taken); -EINVAL when n exceeds max_permits.
    /// acquire(0) succeeds at once.
    [[nodiscard]] AcquireAwaiter acquire(std::size_t n = 1) noexcept { return AcquireAwaiter(this, n); }

    /// Takes n permits if they are free and nobody waits ahead.
    [[nodiscard]] bool try_acquire(std::size_t n = 1) noexcept {
        std::lock_guard lk(lock_);
        if (!waiters_.empty() || count_ < n)
            return false;
        count_ -= n;
        return true;
    }

    /// Blocks a plain thread until it has n permits: 0, or -EINVAL for n > max_permits.
    /// Throws std::logic_error on a runtime's thread.
    int acquire_blocking(std::size_t n = 1) {
        detail::check_blocking_allowed("ringo: Semaphore::acquire_blocking on a runtime's thread; co_await acquire()");
        if (n > max_permits)
            return -EINVAL;
        lock_.lock();
        if (waiters_.empty() && count_ >= n) {
            count_ -= n;
            lock_.unlock();
            return 0;
        }
        detail::SemNode node(lock_);
        node.need = n;
        detail::ThreadParker p;
        node.link_thread(waiters_, p);
        lock_.unlock();
        p.wait();
        return node.res;
    }

    /// Gives n permits back and wakes the waiters they satisfy, in order. Returns 0, or
    /// -EOVERFLOW (nothing changes) when the count would pass max_permits.
    int release(std::size_t n = 1) noexcept {
        lock_.lock();
        if (n > max_permits - count_) {
            lock_.unlock();
            return -EOVERFLOW;
        }
        count_ += n;
        detail::SyncWaiter* granted = grant_locked();
        lock_.unlock();
        detail::wake_chain(granted);
        return 0;
    }

    /// Free permits now (a snapshot).
    [[nodiscard]] std::size_t available() const noexcept {
        std::lock_guard lk(lock_);
        return count_;
    }

private:
    // Under lock_: takes out the waiters at the front that the free permits satisfy, as a
    // chain for wake_chain.
    detail::SyncWaiter* grant_locked() noexcept {
        detail::SyncWaiter* head = nullptr;
        detail::SyncWaiter** tail = &head;
        while (auto* w = static_cast<detail::SemNode*>(waiters_.front())) {
            if (w->need > count_)
                break;
            count_ -= w->need;
            waiters_.remove(w);
            w->res = 0;
            *tail = w;
            tail = &w->next;
        }
        *tail = nullptr;
        return head;
    }

    mutable detail::SpinLock lock_;
    std::size_t count_;
    detail::WaitList waiters_;
};

} // namespace ringo
