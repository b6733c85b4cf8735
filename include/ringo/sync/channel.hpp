// ringo/sync/channel.hpp - Channel<T>: a bounded multi-producer multi-consumer queue for
// tasks on any runtime and for plain threads.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include <ringo/sync/detail/wait_list.hpp>

namespace ringo {

namespace detail {
template <class T>
struct ChanRecvNode : WaitNode {
    std::optional<T> value; // filled by a sender that hands its value over
    using WaitNode::WaitNode;
    ChanRecvNode(ChanRecvNode&& o) noexcept : WaitNode(std::move(o)) {}
};
template <class T>
struct ChanSendNode : WaitNode {
    T value; // taken by a receiver (or moved into the buffer) when the send completes
    template <class U>
    ChanSendNode(SpinLock& l, U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>)
        : WaitNode(l), value(std::forward<U>(v)) {}
    ChanSendNode(ChanSendNode&& o) noexcept : WaitNode(std::move(o)), value(std::move(o.value)) {}
};
} // namespace detail

/// A bounded channel of T between tasks (on one runtime or on several, on different
/// threads) and plain threads. See docs/sync.md.
///
/// - Capacity N > 0: up to N values wait in a ring buffer allocated once, at construction;
///   a send beyond that waits for room. Capacity 0 is a rendezvous: a send waits until a
///   receiver takes its value.
/// - `co_await ch.send(v)` yields 0 when the value is in the channel (or in a receiver's
///   hands), -EPIPE when the channel is closed, -ECANCELED when the task was cancelled while
///   it waited (the value was then not sent, and is dropped with the awaiter).
/// - `co_await ch.recv()` yields the next value, or std::nullopt once the channel is closed
///   and empty, or when the task was cancelled while it waited (tell the two apart with
///   is_closed() or cancellation_requested()). A receiver that a sender has already handed
///   a value to gets that value even if it is cancelled before it runs: nothing is lost.
/// - Values from one producer arrive in the order sent; waiting senders and receivers are
///   served first come, first served.
/// - `try_send`, `try_recv` never wait; `send_blocking`, `recv_blocking` block a plain
///   thread (they throw std::logic_error on a runtime's thread).
/// - `close()` wakes every waiter: receivers still get the values already buffered, then
///   std::nullopt; waiting senders get -EPIPE. Destroying the channel closes it (waiters
///   end as above); destroy it only when no other thread can still call into it.
///
/// No heap allocation per message. T must be nothrow move constructible (values move
/// under the channel's lock).
template <class T>
class Channel {
    static_assert(std::is_nothrow_move_constructible_v<T>, "ringo::Channel<T>: T must be nothrow move constructible");
    static_assert(std::is_nothrow_destructible_v<T>, "ringo::Channel<T>: T must be nothrow destructible");
    using RecvNode = detail::ChanRecvNode<T>;
    using SendNode = detail::ChanSendNode<T>;

public:
    /// The type of the values.
    using value_type = T;

    /// A channel holding up to `capacity` values (0: rendezvous). Throws std::bad_alloc
    /// (or std::length_error) when the buffer cannot be allocated.
    explicit Channel(std::size_t capacity) : cap_(capacity) {
        if (cap_ > 0)
            buf_ = std::allocator<T>().allocate(cap_);
    }
    ~Channel() {
        close();
        while (count_ > 0) {
            buf_[head_].~T();
            if (++head_ == cap_)
                head_ = 0;
            --count_;
        }
        if (buf_)
            std::allocator<T>().deallocate(buf_, cap_);
    }
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    /// What send() returns: awaited directly, it yields 0, -EPIPE (closed) or -ECANCELED.
    class SendAwaiter : SendNode {
    public:
        template <class U>
        /// A send of `v` (moved or copied into the awaiter) on `ch`.
        SendAwaiter(Channel* ch, U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>)
            : SendNode(ch->lock_, std::forward<U>(v)), ch_(ch) {}
        /// Moves an awaiter that has not been awaited yet.
        SendAwaiter(SendAwaiter&& o) noexcept : SendNode(std::move(o)), ch_(o.ch_) {}
        /// Never ready: the send is tried in await_suspend.
        bool await_ready() const noexcept { return false; }
        template <class P>
        /// Sends at once when there is room or a receiver waits; else waits (-ECANCELED at
        /// once in a cancelled task).
        bool await_suspend(std::coroutine_handle<P> h) {
            detail::CancelCtx* c = detail::ctx_of_or_dummy(h);
            if (c->cancelled) [[unlikely]] {
                this->res = -ECANCELED;
                return false;
            }
            Channel& ch = *ch_;
            ch.lock_.lock();
            if (ch.count_ < ch.cap_ && ch.recv_waiters_.empty() && !ch.closed_) [[likely]] { // room, nobody waits
                new (ch.slot(ch.count_)) T(std::move(this->value));
                ++ch.count_;
                ch.lock_.unlock();
                this->res = 0;
                return false;
            }
            return suspend_slow(h, c);
        }
        /// The result is 0 or -errno: with_timeout yields -ETIME for it (compose/traits.hpp).
        static constexpr bool errno_result = true; // with_timeout: -ETIME (compose/traits.hpp)
        /// 0, -EPIPE (closed) or -ECANCELED.
        int await_resume() noexcept { return this->wait_result(); }

    private:
        // The lock is held.
        [[gnu::noinline]] bool suspend_slow(std::coroutine_handle<> h, detail::CancelCtx* c) {
            Channel& ch = *ch_;
            int r = ch.send_locked(this->value);
            if (r <= 0) { // done; send_locked released the lock
                this->res = r;
                return false;
            }
            this->cancel_fn = &this->cancel_unlinking;
            this->ctx = c;
            this->suspend_in(ch.send_waiters_, h,
                             "ringo: Channel::send would wait outside a runtime; use send_blocking");
            return true;
        }
        Channel* ch_;
    };

    /// What recv() returns: awaited directly, it yields the value or std::nullopt.
    class RecvAwaiter : RecvNode {
    public:
        /// A receive on `ch`.
        explicit RecvAwaiter(Channel* ch) noexcept : RecvNode(ch->lock_), ch_(ch) {}
        /// Moves an awaiter that has not been awaited yet.
        RecvAwaiter(RecvAwaiter&& o) noexcept : RecvNode(std::move(o)), ch_(o.ch_) {}
        /// Never ready: the receive is tried in await_suspend.
        bool await_ready() const noexcept { return false; }
        template <class P>
        /// Takes a value at once when one is buffered; else waits (std::nullopt at once in a
        /// cancelled task).
        bool await_suspend(std::coroutine_handle<P> h) {
            detail::CancelCtx* c = detail::ctx_of_or_dummy(h);
            if (c->cancelled) [[unlikely]]
                return false;
            Channel& ch = *ch_;
            ch.lock_.lock();
            if (ch.count_ > 0 && ch.send_waiters_.empty()) [[likely]] { // a value, nobody to move up
                T* p = ch.buf_ + ch.head_;
                this->value.emplace(std::move(*p));
                p->~T();
                if (++ch.head_ == ch.cap_)
                    ch.head_ = 0;
                --ch.count_;
                ch.lock_.unlock();
                return false;
            }
            return suspend_slow(h, c);
        }
        /// The value, or std::nullopt (closed and empty, or cancelled while waiting).
        std::optional<T> await_resume() noexcept {
            if (this->suspended) [[unlikely]]
                this->finished();
            // Member by member, not a copy of the whole optional: the fast path has just
            // stored the value and the flag separately, and one wide load of both would wait
            // for those stores to retire (a store-forwarding stall, ~1/4 of a message's cost).
            if (this->value.has_value())
                return std::optional<T>(std::in_place, std::move(*this->value));
            return std::nullopt;
        }

    private:
        // The lock is held.
        [[gnu::noinline]] bool suspend_slow(std::coroutine_handle<> h, detail::CancelCtx* c) {
            Channel& ch = *ch_;
            if (ch.recv_locked(this->value)) // done; the lock was released
                return false;
            this->cancel_fn = &this->cancel_unlinking;
            this->ctx = c;
            this->suspend_in(ch.recv_waiters_, h,
                             "ringo: Channel::recv would wait outside a runtime; use recv_blocking");
            return true;
        }
        Channel* ch_;
    };

    /// `co_await ch.send(v)`: 0, -EPIPE (closed) or -ECANCELED. See the class comment.
    [[nodiscard]] SendAwaiter send(T value) noexcept { return SendAwaiter(this, std::move(value)); }
    /// `co_await ch.recv()`: the next value, or std::nullopt (closed and empty, or cancelled).
    [[nodiscard]] RecvAwaiter recv() noexcept { return RecvAwaiter(this); }

    /// Sends without waiting: 0 when sent, -EAGAIN when the channel is full (for capacity 0:
    /// when no receiver is waiting), -EPIPE when it is closed. `v` is moved from only when
    /// it was sent.
    template <class U>
    int try_send(U&& v) {
        static_assert(std::is_constructible_v<T, U&&>, "ringo::Channel::try_send: value not convertible to T");
        lock_.lock();
        if (closed_) {
            lock_.unlock();
            return -EPIPE;
        }
        if (detail::SyncWaiter* r = recv_waiters_.pop_front()) {
            auto* rn = static_cast<RecvNode*>(r);
            rn->value.emplace(std::forward<U>(v));
            rn->res = 0;
            lock_.unlock();
            detail::wake(rn);
            return 0;
        }
        if (count_ < cap_) {
            new (slot(count_)) T(std::forward<U>(v));
            ++count_;
            lock_.unlock();
            return 0;
        }
        lock_.unlock();
        return -EAGAIN;
    }

    /// Receives without waiting: the next value, or std::nullopt when none is ready (the
    /// channel is empty and no sender waits, or it is closed: see is_closed()).
    std::optional<T> try_recv() {
        std::optional<T> out;
        lock_.lock();
        if (!take_locked(out))
            lock_.unlock();
        return out;
    }

    /// Sends from a plain thread, blocking until the value is in the channel: 0 or -EPIPE.
    /// Throws std::logic_error on a runtime's thread.
    int send_blocking(T value) {
        detail::check_blocking_allowed("ringo: Channel::send_blocking on a runtime's thread; co_await send()");
        lock_.lock();
        int r = send_locked(value);
        if (r <= 0)
            return r;
        SendNode node(lock_, std::move(value));
        detail::ThreadParker p;
        node.link_thread(send_waiters_, p);
        lock_.unlock();
        p.wait();
        return node.res;
    }

    /// Receives from a plain thread, blocking until a value comes: the value, or
    /// std::nullopt once the channel is closed and empty. Throws std::logic_error on a
    /// runtime's thread.
    std::optional<T> recv_blocking() {
        detail::check_blocking_allowed("ringo: Channel::recv_blocking on a runtime's thread; co_await recv()");
        RecvNode node(lock_);
        lock_.lock();
        if (recv_locked(node.value))
            return std::move(node.value);
        detail::ThreadParker p;
        node.link_thread(recv_waiters_, p);
        lock_.unlock();
        p.wait();
        return std::move(node.value);
    }

    /// Closes the channel: later sends fail with -EPIPE, receivers drain what is buffered and
    /// then get std::nullopt; every waiter is woken. Returns false when it was closed already.
    bool close() noexcept {
        lock_.lock();
        if (closed_) {
            lock_.unlock();
            return false;
        }
        closed_ = true;
        detail::SyncWaiter* rs = recv_waiters_.take_all();
        for (detail::SyncWaiter* w = rs; w; w = w->next)
            w->res = 0;
        detail::SyncWaiter* ss = send_waiters_.take_all();
        for (detail::SyncWaiter* w = ss; w; w = w->next)
            w->res = -EPIPE;
        lock_.unlock();
        detail::wake_chain(rs);
        detail::wake_chain(ss);
        return true;
    }

    /// True once close() has been called.
    [[nodiscard]] bool is_closed() const noexcept {
        std::lock_guard lk(lock_);
        return closed_;
    }
    /// Values buffered now (a snapshot).
    [[nodiscard]] std::size_t size() const noexcept {
        std::lock_guard lk(lock_);
        return count_;
    }
    /// The capacity given to the constructor (0: rendezvous).
    [[nodiscard]] std::size_t capacity() const noexcept { return cap_; }

private:
    template <class>
    friend struct ChannelTestAccess;

    T* slot(std::size_t i) noexcept {
        std::size_t j = head_ + i;
        if (j >= cap_)
            j -= cap_;
        return buf_ + j;
    }

    // Under lock_. Completes a send of `v` if it can (then releases the lock and returns 0,
    // or -EPIPE when closed); returns 1, lock held, when the sender must wait.
    int send_locked(T& v) noexcept {
        if (closed_) [[unlikely]] {
            lock_.unlock();
            return -EPIPE;
        }
        if (detail::SyncWaiter* r = recv_waiters_.pop_front()) {
            auto* rn = static_cast<RecvNode*>(r);
            rn->value.emplace(std::move(v));
            rn->res = 0;
            lock_.unlock();
            detail::wake(rn);
            return 0;
        }
        if (count_ < cap_) [[likely]] {
            new (slot(count_)) T(std::move(v));
            ++count_;
            lock_.unlock();
            return 0;
        }
        return 1;
    }

    // Under lock_. Moves the next value into `out` if there is one (then releases the lock
    // and returns true); a waiting sender moves up into the freed buffer slot. Returns false,
    // lock held, when nothing is ready.
    bool take_locked(std::optional<T>& out) noexcept {
        if (count_ > 0) [[likely]] {
            T* p = buf_ + head_;
            out.emplace(std::move(*p));
            p->~T();
            if (++head_ == cap_)
                head_ = 0;
            --count_;
            if (detail::SyncWaiter* s = send_waiters_.pop_front()) [[unlikely]] {
                auto* sn = static_cast<SendNode*>(s);
                new (slot(count_)) T(std::move(sn->value));
                ++count_;
                sn->res = 0;
                lock_.unlock();
                detail::wake(sn);
                return true;
            }
            lock_.unlock();
            return true;
        }
        if (detail::SyncWaiter* s = send_waiters_.pop_front()) { // rendezvous
            auto* sn = static_cast<SendNode*>(s);
            out.emplace(std::move(sn->value));
            sn->res = 0;
            lock_.unlock();
            detail::wake(sn);
            return true;
        }
        return false;
    }

    // Under lock_. take_locked, and "closed and empty" also completes (with nullopt).
    bool recv_locked(std::optional<T>& out) noexcept {
        if (take_locked(out))
            return true;
        if (closed_) {
            lock_.unlock();
            return true;
        }
        return false;
    }

    mutable detail::SpinLock lock_;
    T* buf_ = nullptr;
    std::size_t cap_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool closed_ = false;
    detail::WaitList recv_waiters_;
    detail::WaitList send_waiters_;
};

} // namespace ringo
