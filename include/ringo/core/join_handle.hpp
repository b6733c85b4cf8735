// ringo/core/join_handle.hpp - spawn, JoinHandle, yield and block_on: starting tasks on a
// Runtime and waiting for them.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include <ringo/core/detail/parker.hpp>
#include <ringo/core/detail/std_parts.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>

namespace ringo {

namespace detail {

/// Who waits for a spawned task (the task's join_ word points here while it waits).
///
/// A coroutine waiter on another runtime than the task's is "linked": it sits in its own
/// runtime's list of such waiters (owner thread only), so that runtime, when it is destroyed
/// first, can withdraw it (a CAS of the task's join_ back to join_running) before anything
/// would post a wake-up into it. The task's end posts the wake-up to the waiter's runtime and
/// then sets `released`, its last touch of the waiter; the waiter does not go before that.
/// (A task that ends on the waiter's own runtime resumes it, or queues it behind the tasks
/// already ready, and sets nothing.) Only such a waiter, a coroutine on the task's runtime,
/// is stored in join_ untagged; every other one (a thread join, a coroutine outside any
/// runtime, a linked one) carries join_linked_tag.
struct JoinWaiter {
    JoinWaiter() noexcept {} // h is set where the waiter starts to wait (not twice)
    union {
        std::coroutine_handle<> h; // empty: a ThreadJoinWaiter
    };
    Runtime* rt;
    std::atomic<std::uintptr_t>* join; // the awaited task's join_ (set when linked)
    JoinWaiter* prev;                  // the runtime's list of linked waiters (when linked)
    JoinWaiter* next;
    bool linked = false;
    std::atomic<bool> released{false}; // a wake-up posted from another thread is done with this
    /// Waits until the task's end has let go of this waiter (a few instructions after its
    /// post, so the wait is short).
    void wait_released() const noexcept {
        while (!released.load(std::memory_order_acquire))
            std::this_thread::yield();
    }
};
struct ThreadJoinWaiter : JoinWaiter {
    ThreadJoinWaiter() noexcept {
        h = {};
        rt = nullptr;
    }
    ThreadParker parker; // notified when the task's end (or the runtime's) lets the thread go
};

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_join_misuse() {
    throw std::logic_error("ringo: JoinHandle awaited twice, or after detach");
}
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_join_abandoned() {
    throw std::runtime_error("ringo: the task's runtime was destroyed before it finished");
}

/// Links `w` (a coroutine waiter on runtime w.rt, owner thread) into w.rt's list of waiters
/// for tasks of other runtimes.
[[gnu::cold, gnu::noinline]] inline void link_join_waiter(JoinWaiter& w, std::atomic<std::uintptr_t>& join) noexcept {
    if (!w.rt) // a coroutine outside any runtime: its wake-up is a resumption on the task's thread
        return;
    w.join = &join;
    RuntimeAccess::registry(*w.rt).link_join_waiter(w);
}
inline void unlink_join_waiter(JoinWaiter& w) noexcept { RuntimeAccess::registry(*w.rt).unlink_join_waiter(w); }
/// A linked waiter that was woken (owner thread): when the task ended on another runtime,
/// waits until that end let go of it (a task that moved here ended on this thread); unlinks it.
[[gnu::cold, gnu::noinline]] inline void finish_linked_wait(JoinWaiter& w, PromiseBase& task) noexcept {
    if (std::atomic_ref<Runtime*>(task.owner_).load(std::memory_order_acquire) != w.rt)
        w.wait_released();
    unlink_join_waiter(w);
}
/// Takes a linked waiter back (owner thread): it stops waiting for the task, or, when the
/// task's end took it already, waits until that end let go of it. Unlinks it.
void withdraw_join_waiter(JoinWaiter& w) noexcept;
/// The task's end waking a coroutine waiter on another runtime: posts its resumption there,
/// then lets go of the waiter (its last touch).
void wake_join_waiter(JoinWaiter& w);

} // namespace detail

// ---------------------------------------------------------------------------------------
// JoinHandle

/// The handle `spawn` returns. `co_await handle` (from any runtime) or `handle.join()`
/// (from a plain thread) yields the task's value or rethrows its exception; `detach()`
/// lets it run on its own. A handle dropped without join or detach detaches. Awaiting or
/// joining a handle a second time throws std::logic_error.
template <class T>
class [[nodiscard]] JoinHandle {
public:
    /// The handle of the spawned task's frame.
    using handle_type = std::coroutine_handle<detail::Promise<T>>;
    /// An empty handle (valid() is false).
    JoinHandle() noexcept = default;
    /// The handle of the spawned task `h` (what spawn returns).
    explicit JoinHandle(handle_type h) noexcept : h_(h) {}
    /// Takes the task of `o`, which is left empty.
    JoinHandle(JoinHandle&& o) noexcept : h_(std::exchange(o.h_, {})) {}
    /// Detaches this handle's task, if any, and takes the task of `o`, which is left empty.
    JoinHandle& operator=(JoinHandle&& o) noexcept {
        if (this != &o) {
            detach();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    ~JoinHandle() { detach(); }

    /// True while the handle holds a task (not default-made, moved from, joined or detached).
    [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(h_); }
    /// True once the task has finished (its value is ready).
    [[nodiscard]] bool is_finished() const noexcept {
        return h_ && h_.promise().join_.load(std::memory_order_acquire) == detail::join_completed;
    }

    /// Lets the task run to completion on its own; its frame is freed when it ends, and an
    /// exception it ends with is reported through the handler of the runtime it ran on, once:
    /// when it ends, or here (on this thread) if it has already ended, even when that runtime
    /// has been destroyed since.
    void detach() noexcept {
        if (h_) // inline: most handles are empty when they go (joined, or moved from)
            detach_held();
    }

private:
    [[gnu::noinline]] void detach_held() noexcept {
        auto& p = h_.promise();
        std::uintptr_t old = p.join_.exchange(detail::join_detached, std::memory_order_acq_rel);
        if (old == detail::join_completed || old == detail::join_abandoned) {
            if (old == detail::join_completed && p.ended_with_exception()) {
                // It ended with an exception before this detach: report it through its
                // runtime's handler now (on this thread).
                p.exc_sink()->report(p.exc());
                p.exc_sink()->release();
            }
            if (p.own_ctx_.frame_kept)
                detail::Promise<T>::drop_kept(p); // it ended: its frame was kept for the result
            else
                h_.destroy(); // abandoned: its runtime went before it ended
        }
        h_ = {};
    }

public:
    /// Requests cancellation of the task: the operation it waits on is cancelled (it still
    /// resumes only after that operation's final CQE, with -ECANCELED unless it completed),
    /// and every operation it starts afterwards completes at once with -ECANCELED. Callable
    /// from any thread; from another thread it sends a message to the owning runtime and
    /// returns without waiting. No effect on a finished task or an empty handle.
    void cancel() {
        if (!h_)
            return;
        auto& p = h_.promise();
        std::uintptr_t s = p.join_.load(std::memory_order_acquire);
        if (s == detail::join_completed || s == detail::join_abandoned)
            return;
        // owner_ changes when the task moves with switch_to: read it atomically.
        Runtime* owner = std::atomic_ref<Runtime*>(p.owner_).load(std::memory_order_acquire);
        if (owner == detail::t_current)
            detail::cancel(p.own_ctx_);
        else
            detail::RuntimeAccess::request_cancel(*owner, p);
    }

    /// What `co_await handle` uses: waits, from any runtime or none, until the task ends;
    /// cancelling the awaiting task cancels the awaited one too (and still waits for its end).
    struct Awaiter : detail::Waitable {
        JoinHandle* jh;                   ///< the handle awaited
        detail::JoinWaiter w;             ///< this waiter, as the task's end finds it
        detail::CancelCtx* ctx = nullptr; ///< the awaiting strand's context, while waiting
        /// Awaits the task of `j`.
        explicit Awaiter(JoinHandle* j) noexcept : jh(j) { cancel_fn = &cancel_child; }
        /// The awaiting task's cancellation reaching this wait.
        static void cancel_child(detail::Waitable* self) noexcept {
            // The awaiting task is being cancelled: cancel the task it waits for, and keep
            // waiting until that task has finished.
            try {
                static_cast<Awaiter*>(self)->jh->cancel();
            } catch (...) {
            }
        }
        /// True (no suspension) when the task has ended already, or the handle is empty.
        bool await_ready() const noexcept {
            if (!jh->h_)
                return true;
            std::uintptr_t s = jh->h_.promise().join_.load(std::memory_order_acquire);
            return s == detail::join_completed || s == detail::join_abandoned;
        }
        /// Registers the awaiting coroutine as the task's joiner; false (no suspension) when
        /// the task ended meanwhile.
        // A frame waiting here is destroyed only by its runtime's shutdown, which withdraws
        // a linked waiter first: no destructor needed.
        template <class P>
        [[gnu::always_inline]] bool await_suspend(std::coroutine_handle<P> h) noexcept {
            w.h = h;
            w.rt = detail::t_current;
            auto& p = jh->h_.promise();
            // Read before the CAS: after it, the task's end may resume us elsewhere and free p.
            // (A waiter outside any runtime is tagged too, and never linked: the tag only
            // keeps a migration from looking at it.)
            const bool remote = std::atomic_ref<Runtime*>(p.owner_).load(std::memory_order_acquire) != w.rt;
            const std::uintptr_t me = reinterpret_cast<std::uintptr_t>(&w) | std::uintptr_t(remote);
            static_assert(detail::join_linked_tag == 1);
            std::uintptr_t expected = detail::join_running;
            if (!p.join_.compare_exchange_strong(expected, me, std::memory_order_acq_rel, std::memory_order_acquire))
                return false;
            if (remote) [[unlikely]]
                detail::link_join_waiter(w, p.join_);
            if ((ctx = detail::ctx_of(h))) {
                ctx->waiting = this;
                if (ctx->cancelled)
                    cancel_child(this);
            }
            return true;
        }
        /// The task's value, or its exception rethrown; std::logic_error for an empty handle
        /// or a task abandoned by its runtime's end.
        [[gnu::always_inline]] T await_resume() {
            if (ctx)
                ctx->waiting = nullptr;
            if (w.linked) [[unlikely]]
                detail::finish_linked_wait(w, jh->h_.promise());
            return jh->take();
        }
    };
    /// `co_await handle`: the task's value (the handle is empty afterwards).
    Awaiter operator co_await() & noexcept { return Awaiter{this}; }
    /// `co_await spawn(...)`: the task's value.
    Awaiter operator co_await() && noexcept { return Awaiter{this}; }

    /// Blocks the calling thread until the task finishes. Throws std::logic_error when
    /// called from a task on the runtime that runs it (that would deadlock: co_await it).
    T join() {
        if (!h_)
            throw std::logic_error("ringo: join of a JoinHandle that was joined or detached");
        auto& p = h_.promise();
        Runtime* owner = std::atomic_ref<Runtime*>(p.owner_).load(std::memory_order_acquire);
        if (owner != nullptr && owner == detail::t_current)
            throw std::logic_error("ringo: join() from the runtime that runs the task would deadlock; co_await it");
        if (Runtime* cur = detail::t_current)
            cur->flush_submissions(); // a wake-up this thread queued must leave before it blocks
        detail::ThreadJoinWaiter w;
        std::uintptr_t expected = detail::join_running;
        // Tagged: only a coroutine on the task's runtime is stored untagged (JoinWaiter).
        const std::uintptr_t me =
            reinterpret_cast<std::uintptr_t>(static_cast<detail::JoinWaiter*>(&w)) | detail::join_linked_tag;
        if (p.join_.compare_exchange_strong(expected, me, std::memory_order_acq_rel, std::memory_order_acquire)) {
            w.parker.wait();
        }
        return take();
    }

private:
    [[gnu::always_inline]] T take() {
        if (!h_) [[unlikely]]
            detail::throw_join_misuse();
        handle_type h = std::exchange(h_, {});
        if (h.promise().join_.load(std::memory_order_acquire) == detail::join_abandoned) [[unlikely]] {
            if (h.promise().own_ctx_.frame_kept)
                detail::Promise<T>::drop_kept(h.promise());
            else
                h.destroy(); // its runtime went before it ended: the whole frame is still there
            detail::throw_join_abandoned();
        }
        struct Free {
            handle_type h;
            [[gnu::always_inline]] ~Free() {
                if (h.promise().own_ctx_.frame_kept) // it ended before this join began to wait
                    detail::Promise<T>::drop_kept(h.promise());
                else // it ended with this join waiting, which frees the frame now
                    h.destroy();
            }
        } free{h};
        return h.promise().join_result(); // an exception goes to the joiner; nothing is reported
    }
    handle_type h_{};
};

// ---------------------------------------------------------------------------------------
// spawn, yield, block_on

namespace detail {
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_spawn_of_empty_task() {
    throw std::logic_error("ringo: spawn of an empty Task");
}
/// Takes the frame of `task` for a spawn on `rt`: owned by rt, its own cancellation root.
/// Throws std::logic_error for an empty Task.
template <class T>
std::coroutine_handle<Promise<T>> take_for_spawn(Runtime& rt, Task<T>& task) {
    auto h = task.release();
    if (!h) [[unlikely]]
        throw_spawn_of_empty_task();
    static_assert(alignof(Promise<T>) <= 128, "ringo: a task's result type may be aligned to 128 bytes at most");
    h.promise().become_spawned(rt, h.address());
    return h;
}
/// Starts a task taken by take_for_spawn on `rt`, the runtime of this thread.
template <class T>
JoinHandle<T> start_here(Runtime& rt, std::coroutine_handle<Promise<T>> h) {
    RuntimeAccess::registry(rt).register_task(h.promise());
    rt.schedule(h);
    return JoinHandle<T>{h};
}
} // namespace detail

/// Starts `task` on runtime `rt` (any thread may call this) and returns its handle.
template <class T>
JoinHandle<T> spawn(Runtime& rt, Task<T> task) {
    auto h = detail::take_for_spawn(rt, task);
    if (detail::t_current == &rt)
        return detail::start_here(rt, h);
    detail::RuntimeAccess::post_spawn(rt, h.promise(), h);
    return JoinHandle<T>{h};
}

namespace detail {
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_spawn_outside_runtime() {
    throw std::logic_error("ringo: spawn() outside a runtime; use spawn(runtime, task)");
}
} // namespace detail

/// Starts `task` on the current runtime. Throws std::logic_error outside a runtime.
template <class T>
JoinHandle<T> spawn(Task<T> task) {
    Runtime* rt = detail::t_current;
    if (!rt) [[unlikely]]
        detail::throw_spawn_outside_runtime();
    return detail::start_here(*rt, detail::take_for_spawn(*rt, task)); // on this thread: no post needed
}

/// Lets the other ready tasks run; resumes after them. Outside a runtime it does nothing.
struct YieldAwaiter {
    // Alone in the queue inside a turn, a yield would resume its own coroutine: with GCC it
    // goes on without suspending (still counted towards the turn, so I/O is not starved),
    // which saves the resume function's entry and exit (41.7 -> 17.9 instructions a yield,
    // GCC 12). Clang 14 already makes the hand-off cheap, and a yield that may not suspend
    // costs it the tail call of the hand-off (a two-task switch 32.6 -> 38.6 instructions).
    /// True (no suspension) when the coroutine is alone in the queue inside a turn (GCC).
    bool await_ready() const noexcept {
#if defined(__clang__)
        return false;
#else
        return detail::t_ready->try_yield_alone();
#endif
    }
    /// Queues `h` behind the ready coroutines and resumes the first of them.
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) const { return detail::t_ready->yield(h); }
    /// Nothing: a yield yields no value.
    void await_resume() const noexcept {}
};
[[nodiscard]] inline YieldAwaiter yield() noexcept { return {}; }

/// Runs `task` on a fresh default Runtime on this thread and returns its result.
template <class T>
T block_on(Task<T> task) {
    Runtime rt;
    return rt.block_on(std::move(task));
}

} // namespace ringo
