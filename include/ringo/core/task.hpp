// ringo/core/task.hpp - Task<T>: a lazy, move-only coroutine.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <ringo/core/detail/frame_pool.hpp>

namespace ringo {

class Runtime;
template <class T = void>
class Task;
template <class T = void>
class JoinHandle;

namespace detail {

// Join states of a spawned task (PromiseBase::join_); any other value is a JoinWaiter*.
inline constexpr std::uintptr_t join_running = 0;
inline constexpr std::uintptr_t join_completed = 1;
inline constexpr std::uintptr_t join_detached = 2;
inline constexpr std::uintptr_t join_abandoned = 3; // its runtime was destroyed first
// Bit 0 of a JoinWaiter* in join_: the waiter is not a coroutine on the task's runtime. It
// may be linked in its runtime's list (another thread may withdraw and free it: only the
// task's end and shutdown, by exchange, may touch it), or a thread join, or a coroutine
// outside any runtime. An untagged waiter is a coroutine on the task's runtime.
inline constexpr std::uintptr_t join_linked_tag = 1;
/// True when join word `j` holds an untagged JoinWaiter*: a coroutine on the task's runtime.
/// (The states 1-3 have a low bit set; a waiter is aligned to 8, so its two low bits are clear
/// unless tagged.)
constexpr bool is_local_waiter(std::uintptr_t j) noexcept {
    static_assert((join_completed & 3) != 0 && (join_detached & 3) != 0 && (join_abandoned & 3) != 0 &&
                  join_linked_tag == 1);
    return j != join_running && (j & 3) == 0;
}

struct PromiseBase;

/// The point a task is suspended at, when that point can be cancelled (an operation in
/// flight, a timer, a join). `cancel_fn` runs on the owning runtime's thread; it must make the
/// suspension end soon (an operation: submit ASYNC_CANCEL and let its own CQE resume it).
struct Waitable {
    void (*cancel_fn)(Waitable* self) noexcept = nullptr;
};

/// Cancellation state of one strand of execution: a spawned task and everything it awaits
/// directly, or one branch of a combinator (when_all, when_any, with_timeout, TaskScope).
/// Branches form a tree; cancelling a node cancels its subtree. A node is linked into its
/// parent's list of children through `next_sibling` and `pprev` (the word that points to
/// it: the parent's `first_child` or the previous sibling's `next_sibling`), so it leaves
/// the tree in O(1) without knowing its parent. Each runtime's tree has a root of its own
/// (TaskRegistry::root): its spawned tasks hang there, so the tree is also the runtime's
/// list of live tasks. Owner thread only, except `remote_request`, which other threads set
/// (then wake the owner).
struct CancelCtx {
    Waitable* waiting = nullptr;
    CancelCtx* first_child = nullptr;
    // The links in the parent's list. The own context of a task (PromiseBase::own_ctx_) that
    // is in no tree holds in the same two words what the task ended with instead (a tree link
    // is never odd, a tagged sink always is): see PromiseBase::exc().
    union {
        CancelCtx* next_sibling = nullptr;
        std::exception_ptr ended_exc;
    };
    union {
        CancelCtx** pprev = nullptr; // null: not in any tree
        std::uintptr_t ended_sink;
    };
    bool cancelled = false;
    std::atomic<bool> remote_request{false};
    bool task_root = false; // the own context of a spawned task (PromiseBase::own_ctx_)
    // A shield (ringo::shielded): in its awaiting strand's tree, so that the runtime finds
    // what hangs under it, but cancelling that strand does not reach it.
    bool shield = false;
    // The own context of a spawned task or of a combinator's branch task: how many bytes its
    // coroutine frame starts before its promise (PromiseBase::frame_address; never 0, as the
    // frame starts with the coroutine's resume and destroy pointers). 0 in any other context.
    // Kept here, in what would be padding.
    std::uint8_t frame_offset = 0;
    // The own context of a spawned task that has ended while a JoinHandle held it: its frame
    // was destroyed (parameters and all) and only its memory kept, holding the result
    // (spawned_final). Also in what would be padding.
    bool frame_kept = false;
    // The padding up to the next 8 bytes, zeroed with the flags in one store.
    std::uint8_t spare_[2]{};

    constexpr CancelCtx() noexcept {}
    CancelCtx(const CancelCtx&) = delete;
    CancelCtx& operator=(const CancelCtx&) = delete;

    /// True for the own context of a spawned task or branch task (PromiseBase::own_ctx_).
    [[nodiscard]] bool of_spawned_task() const noexcept { return frame_offset != 0; }
    /// True while this node is a child of another.
    [[nodiscard]] bool linked() const noexcept { return pprev != nullptr; }
    /// Links this node first among the children of `p`, which is never cancelled (a
    /// runtime's root).
    void link_first(CancelCtx& p) noexcept {
        next_sibling = p.first_child;
        if (next_sibling)
            next_sibling->pprev = &next_sibling;
        p.first_child = this;
        pprev = &p.first_child;
    }
    void link_under(CancelCtx& p) noexcept {
        link_first(p);
        if (p.cancelled)
            cancelled = true;
    }
    void unlink() noexcept {
        if (!pprev)
            return;
        *pprev = next_sibling;
        if (next_sibling)
            next_sibling->pprev = pprev;
        pprev = nullptr;
        next_sibling = nullptr;
    }
    /// Lets go of the children (they are then in no tree). The context of a spawned task
    /// (a TaskScope's task whose scope went first) is pointed at its own `next_sibling`
    /// instead of null: the task may still reach its end, which unlinks without a test
    /// (see spawned_final), and then writes only its own words.
    void orphan_children() noexcept {
        for (CancelCtx* c = first_child; c;) {
            CancelCtx* n = c->next_sibling;
            c->next_sibling = nullptr;
            c->pprev = c->of_spawned_task() ? &c->next_sibling : nullptr;
            c = n;
        }
        first_child = nullptr;
    }
    /// Leaves the tree, handing the children to the parent: they take this node's place
    /// among its siblings, so what hangs under a context that goes (a group whose last
    /// branch is ending, a frame destroyed by its runtime's shutdown) stays where the
    /// runtime finds it. Out of any tree, the children are let go (orphan_children).
    void leave_tree() noexcept {
        CancelCtx* c = first_child;
        if (!c) {
            unlink();
            return;
        }
        if (!pprev) {
            orphan_children();
            return;
        }
        first_child = nullptr;
        CancelCtx* last = c;
        while (last->next_sibling)
            last = last->next_sibling;
        *pprev = c;
        c->pprev = pprev;
        last->next_sibling = next_sibling;
        if (next_sibling)
            next_sibling->pprev = &last->next_sibling;
        pprev = nullptr;
        next_sibling = nullptr;
    }
    ~CancelCtx() { leave_tree(); }
};

/// Requests cancellation of `c` and its subtree (owner thread). Idempotent.
inline void cancel(CancelCtx& c) noexcept {
    if (!c.cancelled) {
        c.cancelled = true;
        if (Waitable* w = c.waiting)
            w->cancel_fn(w);
    }
    for (CancelCtx* ch = c.first_child; ch; ch = ch->next_sibling)
        if (!ch->shield)
            cancel(*ch);
}

/// The cancellation context of the coroutine behind `h`, when it is a ringo task.
template <class P>
CancelCtx* ctx_of(std::coroutine_handle<P> h) noexcept;

/// A context for coroutines that are not ringo tasks: never cancelled; awaitables may note
/// what they wait for in it as in any other.
inline constinit thread_local CancelCtx t_foreign_ctx{};

/// ctx_of(h), or t_foreign_ctx for a coroutine that is not a ringo task: never null.
template <class P>
CancelCtx* ctx_of_or_dummy(std::coroutine_handle<P> h) noexcept {
    if constexpr (std::is_base_of_v<PromiseBase, P>)
        return h.promise().ctx_;
    else
        return &t_foreign_ctx;
}

/// Who waits for a spawned task: a coroutine on some runtime, or a plain thread (h empty).
struct JoinWaiter;

/// Where a runtime's detached-task exceptions go: the RuntimeOptions handler (or stderr) and
/// the count in RuntimeStats::detached_exceptions. Reference-counted: a task that ended with
/// an exception while a JoinHandle held it keeps a reference, so the report still reaches
/// its runtime's handler when the handle is detached or dropped later, from any thread, even
/// after the runtime is gone.
struct ExceptionSink {
    explicit ExceptionSink(void (*h)(std::exception_ptr)) noexcept : handler(h) {}
    void (*const handler)(std::exception_ptr);
    std::atomic<std::uint64_t> reported{0};
    std::atomic<std::uint32_t> refs{1};

    ExceptionSink* acquire() noexcept {
        refs.fetch_add(1, std::memory_order_relaxed);
        return this;
    }
    void release() noexcept {
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }
    /// Counts the exception and hands it to the handler (default: prints it to stderr).
    void report(const std::exception_ptr& e) noexcept;
};

/// A spawned task reaching its final suspend point (owner thread, from final_suspend) with no
/// coroutine of its runtime waiting to join it: leaves its runtime's list of live tasks, and
/// the coroutine then flows off its end at once, its frame destroyed. For a detached task that
/// is all. For one that a JoinHandle holds, everything the task owns (its parameters: a
/// stream, a buffer) is so released when it ends, not when the handle goes, while the frame's
/// memory is kept (frame_kept): the promise's result (value_, exc()), join state and owner stay
/// there for the joiner, as a finished Tokio task keeps only its output. The frame's operator
/// delete then runs spawned_kept_end (through t_keep_frame), which publishes the end.
void spawned_final(PromiseBase& p) noexcept;
/// Runs when a spawned task that a coroutine of its runtime waits to join suspends at its
/// final point (that coroutine frees the frame as it takes the result); returns the coroutine
/// to resume next.
std::coroutine_handle<> on_spawned_final(PromiseBase& p, std::coroutine_handle<> self) noexcept;
/// The operator delete of the frame of `p`, of `n` bytes, that spawned_final marked: a kept
/// frame records its size and publishes the task's end (wakes a joiner that began to wait
/// meanwhile; `drop_kept` frees the result if the handle was detached meanwhile); a detached
/// task of a pool frees its memory and then drops the pool's count.
void spawned_kept_end(PromiseBase& p, std::size_t n, void (*drop_kept)(PromiseBase&) noexcept) noexcept;

/// Hangs the own context of `p`, a task that a coroutine of another kind (not a ringo task)
/// awaits, under the root of the runtime of this thread (if any), so that the runtime's cancel
/// sweeps and its end find the combinator branches the task starts. The awaiter takes it out
/// again before it reads the task's result (Task::Awaiter::await_resume): the two words of the
/// tree's links are also where the task's exception is kept.
void hang_foreign_awaited(PromiseBase& p) noexcept;

/// The frame whose operator delete is to run spawned_kept_end (see spawned_final); null
/// otherwise.
inline constinit thread_local void* t_keep_frame = nullptr;

struct PromiseBase {
    PromiseBase() noexcept : own_ctx_() { ctx_ = &own_ctx_; } // (own_ctx_ made before its address is kept)
    PromiseBase(const PromiseBase&) = delete;
    PromiseBase& operator=(const PromiseBase&) = delete;
    ~PromiseBase() {
        // Most frames go with three tests: in no tree, no children, no exception.
        if ((own_ctx_.ended_sink != 0 && (own_ctx_.ended_sink & 1) == 0) || own_ctx_.first_child) [[unlikely]]
            leave_tree_at_end();
        // The slot holds an exception_ptr whenever a frame goes; a frame kept for its result
        // keeps it.
        if (own_ctx_.ended_exc && !own_ctx_.frame_kept) [[unlikely]]
            own_ctx_.ended_exc.~exception_ptr();
    }
    /// A frame that goes while its context is in a tree (a block_on root whose run ended by
    /// an exception) or has children (contexts that outlive it): it leaves the tree, and
    /// hands the children to its parent (CancelCtx::leave_tree).
    [[gnu::cold, gnu::noinline]] void leave_tree_at_end() noexcept {
        if ((own_ctx_.ended_sink & 1) == 0)
            own_ctx_.leave_tree();
        else
            own_ctx_.orphan_children();
    }

    // For a task that is awaited: the address of who resumes when it ends (continuation(),
    // set by Task's awaiter; 0: nobody). A spawned task (owner_ set) has no awaiter: the same
    // word is its join state instead (a JoinHandle's view of it), which starts as
    // join_running, the value of an empty continuation, so a spawn need not store it.
    // Relaxed loads and stores of an awaited task's word are plain moves.
    std::atomic<std::uintptr_t> join_{join_running};
    // Set when the task is spawned; null for a task that is only awaited.
    Runtime* owner_ = nullptr;
    // The strand this coroutine runs in: its awaiter's when awaited by a ringo task, its own
    // otherwise (spawned, the root of block_on, or awaited by a foreign coroutine). Never null
    // while it runs. Once a spawned task's frame is kept for its result (spawned_final), the
    // same word holds the frame's size instead.
    union {
        CancelCtx* ctx_; // &own_ctx_ at first (the constructor)
        std::size_t kept_size_;
    };
    // Its own cancellation context, also its place in its runtime's list of live tasks: a
    // spawned task hangs in its runtime's tree (under the root, or under its combinator's
    // group) while it runs. Once it has left the tree (it ended, or its runtime let it go),
    // the two words of the tree links hold what it ended with: exc(), and, when that is an
    // exception of a spawned task, a reference to the owner's ExceptionSink tagged with bit 0
    // (exc_sink_tagged(); a tree link is never odd), through which the exception is reported
    // if the task's handle is detached, and which joining releases. A task that is only
    // awaited is in no tree: exc() is all it uses. Sharing the words keeps the frame of an
    // empty spawned task at 96 bytes. In a union: the destructor above, not CancelCtx's, says
    // what the words hold when the frame goes.
    union {
        CancelCtx own_ctx_;
    };

    /// What the task ended with: an exception, or none.
    [[nodiscard]] std::exception_ptr& exc() noexcept { return own_ctx_.ended_exc; }
    [[nodiscard]] const std::exception_ptr& exc() const noexcept { return own_ctx_.ended_exc; }

    /// Who resumes when this awaited task ends (see join_).
    void set_continuation(std::coroutine_handle<> c) noexcept {
        join_.store(reinterpret_cast<std::uintptr_t>(c.address()), std::memory_order_relaxed);
    }
    [[nodiscard]] std::coroutine_handle<> continuation() const noexcept {
        const std::uintptr_t c = join_.load(std::memory_order_relaxed);
        return c ? std::coroutine_handle<>::from_address(reinterpret_cast<void*>(c)) : std::noop_coroutine();
    }

    /// A spawned task's coroutine frame (for its runtime's shutdown), from where
    /// take_for_spawn or start_branch found it to start (CancelCtx::frame_offset).
    [[nodiscard]] void* frame_address() noexcept { return reinterpret_cast<char*>(this) - own_ctx_.frame_offset; }
    /// Makes this the promise of a spawned task on `rt` whose frame is `frame`: its own
    /// cancellation context, a root of its own (`task_root`) or a combinator's branch,
    /// cancelled with its group. The task has not started: its join state is still
    /// join_running and its context its own (the constructor's), as nobody awaited it.
    void become_spawned(Runtime& rt, void* frame, bool task_root = true) noexcept {
        owner_ = &rt;
        own_ctx_.task_root = task_root;
        own_ctx_.frame_offset = static_cast<std::uint8_t>(reinterpret_cast<char*>(this) - static_cast<char*>(frame));
    }

    /// A spawned task that ended with an exception: its owner's sink (a reference).
    [[nodiscard]] ExceptionSink* exc_sink() const noexcept {
        return reinterpret_cast<ExceptionSink*>(own_ctx_.ended_sink & ~std::uintptr_t{1});
    }
    /// True once a spawned task has left its runtime's list with an exception.
    [[nodiscard]] bool ended_with_exception() const noexcept { return (own_ctx_.ended_sink & 1) != 0; }

    void unhandled_exception() noexcept {
        if (owner_) [[unlikely]] {
            spawned_task_failed(); // leaves its runtime's tree first: the words become exc()
        } else {
            own_ctx_.unlink(); // a block_on root leaves its runtime's tree
            std::construct_at(&own_ctx_.ended_exc, std::current_exception());
        }
    }
    /// unhandled_exception of a spawned task (out of line: needs Runtime).
    void spawned_task_failed() noexcept;

    static void* operator new(std::size_t n) { return allocate_frame(n); }
    /// The operator delete of Promise<T>: a frame kept for its result stays (see
    /// spawned_final).
    template <class P>
    static void delete_frame(void* p, std::size_t n) noexcept {
        if (p == t_keep_frame) [[unlikely]] {
            // (The promise's address from the frame's: arithmetic only, the frame is gone.)
            spawned_kept_end(std::coroutine_handle<P>::from_address(p).promise(), n, &P::drop_kept);
            return;
        }
        free_frame(p, n);
    }

    /// What Promise<T>::drop_kept leaves to the base: the exception slot and the memory.
    [[gnu::always_inline]] void drop_kept_base() noexcept {
        void* frame = frame_address();
        std::size_t n = kept_size_;
        exc().~exception_ptr();
        free_frame(frame, n);
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }

    // How a coroutine ends (final_suspend decides): its awaiter resumes (an awaited task); it
    // suspends for good (a spawned task that a coroutine of its runtime waits to join:
    // on_spawned_final); or it flows off its end, its frame destroyed at once (any other
    // spawned task: spawned_final). One byte in the frame, like an empty awaiter.
    enum class End : unsigned char { awaited, joined_here, flow_off };
    struct FinalAwaiter {
        End how;
        bool await_ready() const noexcept { return how == End::flow_off; }
        template <class P>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) const noexcept {
            PromiseBase& p = h.promise();
            if (how == End::awaited) [[likely]]
                return p.continuation();
            return on_spawned_final(p, h);
        }
        void await_resume() const noexcept {}
    };
    FinalAwaiter final_suspend() noexcept {
        if (owner_ == nullptr) [[likely]]
            return {End::awaited};
        // A coroutine of this runtime waiting to join it (untagged) cannot change under us:
        // only this thread could withdraw it, and its handle, in the waiting frame, cannot be
        // detached.
        if (is_local_waiter(join_.load(std::memory_order_acquire))) [[likely]]
            return {End::joined_here};
        spawned_final(*this);
        return {End::flow_off};
    }

    void rethrow_if_exception() const {
        if (exc()) [[unlikely]]
            std::rethrow_exception(exc());
    }
    /// For a JoinHandle taking the result of a spawned task that ended with an exception:
    /// lets go of exc_sink_ (nothing is reported: the joiner gets the exception) and
    /// rethrows. Out of line, so the join path stays small enough to inline.
    [[noreturn, gnu::cold, gnu::noinline]] void rethrow_joined();
    void rethrow_if_exception_joined() {
        if (exc()) [[unlikely]]
            rethrow_joined();
    }
};

/// The spawned task or branch task whose own cancellation context is `c`
/// (c.of_spawned_task() must hold).
inline PromiseBase& task_of(CancelCtx& c) noexcept {
    static_assert(std::is_standard_layout_v<PromiseBase>, "task_of relies on offsetof(PromiseBase, own_ctx_)");
    return *reinterpret_cast<PromiseBase*>(reinterpret_cast<char*>(&c) - offsetof(PromiseBase, own_ctx_));
}

template <class T>
struct Promise : PromiseBase {
    // In a union so that a frame kept for its result (spawned_final) keeps it too.
    union {
        std::optional<T> value_;
    };
    Promise() noexcept : value_() {}
    ~Promise() {
        if (!own_ctx_.frame_kept) [[likely]]
            value_.~optional();
    }
    /// Frees a frame kept by spawned_final: its value, exception slot and memory.
    [[gnu::always_inline]] static void drop_kept(PromiseBase& b) noexcept {
        auto& p = static_cast<Promise&>(b);
        p.value_.~optional();
        p.drop_kept_base();
    }
    static void* operator new(std::size_t n) { return allocate_frame(n); } // beside its delete
    static void operator delete(void* p, std::size_t n) noexcept { delete_frame<Promise>(p, n); }
    Task<T> get_return_object() noexcept;
    template <class U = T>
    void return_value(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
        value_.emplace(std::forward<U>(v));
    }
    T result() {
        rethrow_if_exception();
        return std::move(*value_);
    }
    /// result() for a JoinHandle (see rethrow_joined).
    T join_result() {
        rethrow_if_exception_joined();
        return std::move(*value_);
    }
};

template <>
struct Promise<void> : PromiseBase {
    [[gnu::always_inline]] static void drop_kept(PromiseBase& b) noexcept { b.drop_kept_base(); }
    static void* operator new(std::size_t n) { return allocate_frame(n); } // beside its delete
    static void operator delete(void* p, std::size_t n) noexcept { delete_frame<Promise>(p, n); }
    Task<void> get_return_object() noexcept;
    void return_void() noexcept {}
    void result() { rethrow_if_exception(); }
    void join_result() { rethrow_if_exception_joined(); }
};

} // namespace detail

/// A lazy coroutine returning T. Nothing runs until it is awaited (`co_await task`, which
/// transfers control into it symmetrically and yields its value or rethrows its exception),
/// spawned, or handed to block_on. Move-only; destroying an unstarted or finished Task frees
/// its frame.
template <class T>
class [[nodiscard]] Task {
public:
    /// The coroutine's promise (what the compiler needs to make a Task coroutine).
    using promise_type = detail::Promise<T>;
    /// What awaiting the task yields.
    using value_type = T;
    /// The handle of the coroutine's frame.
    using handle_type = std::coroutine_handle<promise_type>;

    /// An empty Task (valid() is false): awaiting it throws std::logic_error.
    Task() noexcept = default;
    /// Takes ownership of the frame `h` (what the promise's get_return_object does).
    explicit Task(handle_type h) noexcept : h_(h) {}
    /// Takes the frame of `o`, which is left empty.
    Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
    /// Frees this Task's frame, if any, and takes the frame of `o`, which is left empty.
    Task& operator=(Task&& o) noexcept {
        if (this != &o) {
            if (h_)
                h_.destroy();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    ~Task() {
        if (h_)
            h_.destroy();
    }

    /// True when the Task holds a frame (not default-made, moved from, released or spawned).
    [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(h_); }
    /// True when the Task holds a frame that has run to its end.
    [[nodiscard]] bool done() const noexcept { return h_ && h_.done(); }
    /// Gives up ownership of the frame.
    handle_type release() noexcept { return std::exchange(h_, {}); }
    /// The frame's handle, ownership kept (null for an empty Task).
    handle_type handle() const noexcept { return h_; }

    /// What `co_await task` uses: starts the task by symmetric transfer, and resumes the
    /// awaiting coroutine when it ends.
    struct Awaiter {
        handle_type h; ///< the awaited task's frame
        /// True (no suspension) for an empty or finished task.
        bool await_ready() const noexcept { return !h || h.done(); }
        /// Makes `cont` the task's continuation (and, from a ringo task, the task's
        /// cancellation context the awaiter's) and transfers control into the task.
        template <class P>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<P> cont) noexcept {
            h.promise().set_continuation(cont);
            if constexpr (std::is_base_of_v<detail::PromiseBase, P>)
                h.promise().ctx_ = cont.promise().ctx_;
            else // its own context, in the current runtime's tree until it ends
                detail::hang_foreign_awaited(h.promise());
            return h;
        }
        /// The task's value, or its exception rethrown; std::logic_error for an empty Task.
        T await_resume() {
            if (!h) [[unlikely]]
                throw std::logic_error("ringo: awaiting an empty Task");
            // Awaited by a coroutine of another kind, the task's own context may still hang in
            // its runtime's tree (hang_foreign_awaited; a task that ended by an exception has
            // left it): out first, so that the two words hold no exception. An awaited task's
            // second word is never written otherwise. (unlink tests for that itself.)
            h.promise().own_ctx_.unlink();
            return h.promise().result();
        }
    };
    /// `co_await task` (the Task keeps its frame, freed when the Task goes).
    Awaiter operator co_await() const& noexcept { return Awaiter{h_}; }
    /// `co_await f()` (the temporary frees the frame at the end of the full expression).
    Awaiter operator co_await() const&& noexcept { return Awaiter{h_}; }

private:
    handle_type h_{};
};

namespace detail {
template <class P>
CancelCtx* ctx_of(std::coroutine_handle<P> h) noexcept {
    if constexpr (std::is_base_of_v<PromiseBase, P>)
        return h.promise().ctx_;
    else
        return nullptr;
}

template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
    return Task<T>{std::coroutine_handle<Promise<T>>::from_promise(*this)};
}
inline Task<void> Promise<void>::get_return_object() noexcept {
    return Task<void>{std::coroutine_handle<Promise<void>>::from_promise(*this)};
}
} // namespace detail

} // namespace ringo
