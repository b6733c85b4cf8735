#include <ringo/core/join_handle.hpp>
#include <ringo/core/runtime.hpp>

#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "report.hpp"

namespace ringo {

namespace detail {

constinit thread_local Runtime* t_current = nullptr;
constinit RunQueue no_runtime_queue{RunQueue::NoRuntime{}};
constinit thread_local RunQueue* t_ready = &no_runtime_queue;

namespace {
// A coroutine that runs to its final suspend point at once and stays there.
struct Finished {
    struct promise_type {
        Finished get_return_object() noexcept { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept {}
    };
    std::coroutine_handle<promise_type> h;
};
Finished make_finished() { co_return; }
} // namespace

std::coroutine_handle<> finished_coroutine() {
    static const std::coroutine_handle<> h = make_finished().h; // lives as long as the process
    return h;
}

void ExceptionSink::report(const std::exception_ptr& e) noexcept {
    reported.fetch_add(1, std::memory_order_relaxed);
    if (handler) {
        handler(e);
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "ringo: a detached task ended with an exception: %s\n", ex.what());
    } catch (...) {
        std::fprintf(stderr, "ringo: a detached task ended with a non-standard exception\n");
    }
}

void PromiseBase::rethrow_joined() {
    if (ended_with_exception())
        exc_sink()->release(); // taken by spawned_task_failed
    std::rethrow_exception(exc());
}

void PromiseBase::spawned_task_failed() noexcept {
    // Runs on the owner's thread, in the task: the task leaves its runtime's tree now, so
    // the words of its links can hold the exception and a reference to the owner's sink for
    // whoever consumes the result (a detach reports through it, a join releases it).
    // spawned_final sees the tag and leaves the tree alone.
    Runtime* rt = owner_;
    own_ctx_.unlink();
    std::construct_at(&own_ctx_.ended_exc, std::current_exception());
    own_ctx_.ended_sink =
        reinterpret_cast<std::uintptr_t>(detail::RuntimeAccess::registry(*rt).exception_sink().acquire()) | 1;
}

namespace {
// The rest of spawned_kept_end: a task of a pool, a detach after spawned_final looked, a
// joiner on another runtime or a plain thread. `old` is the join state the task's end
// replaced.
[[gnu::noinline]] std::coroutine_handle<> spawned_final_slow(PromiseBase& p, std::coroutine_handle<> self, Runtime* rt,
                                                             PoolLink* pool, std::uintptr_t old,
                                                             void (*drop_kept)(PromiseBase&) noexcept) noexcept {
    // A pool counts its live tasks; the count drops last, once this task touches nothing
    // of the pool any more.
    struct PoolCount {
        PoolLink* l;
        ~PoolCount() {
            if (l)
                l->task_ended();
        }
    } pool_count{pool};
    if (old == join_running || old == join_abandoned)
        return std::noop_coroutine();
    if (old == join_detached) {
        if (p.ended_with_exception()) {
            p.exc_sink()->report(p.exc());
            p.exc_sink()->release();
        }
        if (p.own_ctx_.frame_kept) // detached after spawned_final looked
            drop_kept(p);
        else if (self)
            self.destroy();
        return std::noop_coroutine();
    }
    auto* w = reinterpret_cast<JoinWaiter*>(old & ~join_linked_tag);
    if (w->h) {
        if (w->rt == rt || w->rt == nullptr) {
            if (w->rt == rt && RuntimeAccess::scheduler(*rt).queue_behind_ready(w->h))
                return std::noop_coroutine();
            return w->h;
        }
        wake_join_waiter(*w);
        return std::noop_coroutine();
    }
    auto* tw = static_cast<ThreadJoinWaiter*>(w);
    tw->parker.notify();
    return std::noop_coroutine();
}
} // namespace

void wake_join_waiter(JoinWaiter& w) {
    // The waiter's runtime waits for `released` before it lets the waiter go (its resumption,
    // or its shutdown): after that store, nothing here touches w or its runtime. Stored on
    // every path, a post that throws (no memory) included, so no one waits for it forever.
    struct Release {
        JoinWaiter& w;
        ~Release() { w.released.store(true, std::memory_order_release); }
    } release{w};
    w.rt->post(w.h);
}

void withdraw_join_waiter(JoinWaiter& w) noexcept {
    std::uintptr_t expected = reinterpret_cast<std::uintptr_t>(&w) | join_linked_tag;
    if (!w.join->compare_exchange_strong(expected, join_running, std::memory_order_acq_rel, std::memory_order_acquire))
        w.wait_released(); // the task's end took it: it is posting the wake-up here
    RuntimeAccess::registry(*w.rt).unlink_join_waiter(w);
}

void hang_foreign_awaited(PromiseBase& p) noexcept {
    if (t_current && !p.own_ctx_.linked())
        p.own_ctx_.link_first(RuntimeAccess::registry(*t_current).root());
}

namespace {
// A spawned task that ended without an exception leaves its runtime's tree; the words of
// its links then say: no exception, no sink. No test for being in a tree: a task is in
// one until it ends, or its pprev points at its own next_sibling (a context that went before
// it let it go: CancelCtx::orphan_children).
inline void unlink_ended_task(PromiseBase& p) noexcept {
    CancelCtx& c = p.own_ctx_;
    *c.pprev = c.next_sibling;
    if (c.next_sibling)
        c.next_sibling->pprev = c.pprev;
    c.pprev = nullptr;
    std::construct_at(&c.ended_exc);
}
} // namespace

void spawned_final(PromiseBase& p) noexcept {
    Runtime* rt = p.owner_;
    if (!p.ended_with_exception()) [[likely]]
        unlink_ended_task(p);
    PoolLink* pool = detail::RuntimeAccess::registry(*rt).pool_link();
    if (p.join_.load(std::memory_order_acquire) == join_detached) { // stays so
        if (p.ended_with_exception()) {
            p.exc_sink()->report(p.exc());
            p.exc_sink()->release();
        }
        if (pool == nullptr)
            return; // the frame goes as it flows off its end, and nobody looks at it again
        // A pool's task: the pool's count drops once the frame is gone (spawned_kept_end).
    } else {
        p.own_ctx_.frame_kept = true; // a handle holds it: the result stays
    }
    // (The value it replaces comes back at this frame's end: a parameter's destructor may
    // end another task meanwhile. The word is free: the task runs no more.)
    p.kept_size_ = reinterpret_cast<std::size_t>(t_keep_frame);
    t_keep_frame = p.frame_address();
}

void spawned_kept_end(PromiseBase& p, std::size_t n, void (*drop_kept)(PromiseBase&) noexcept) noexcept {
    void* frame = t_keep_frame;
    t_keep_frame = reinterpret_cast<void*>(p.kept_size_);
    Runtime* rt = p.owner_;
    PoolLink* pool = detail::RuntimeAccess::registry(*rt).pool_link();
    if (!p.own_ctx_.frame_kept) { // a detached task of a pool
        free_frame(frame, n);
        pool->task_ended(); // last: this task touches nothing of the pool any more
        return;
    }
    p.kept_size_ = n;
    // Once join_ says completed, a joiner on another thread may free the memory.
    std::uintptr_t old = p.join_.exchange(join_completed, std::memory_order_acq_rel);
    if (old == join_running && pool == nullptr) [[likely]] // nobody waits yet
        return;
    // A joiner that began to wait meanwhile or before (on another thread, or one here whose
    // task had moved, or a coroutine outside any runtime), a detach, a pool's count. A waiter
    // to resume on this thread is resumed from here: the frame that ended has no code left.
    std::coroutine_handle<> h = spawned_final_slow(p, {}, rt, pool, old, drop_kept);
    if (h != std::noop_coroutine())
        h.resume();
}

std::coroutine_handle<> on_spawned_final(PromiseBase& p, std::coroutine_handle<> self) noexcept {
    Runtime* rt = p.owner_;
    if (!p.ended_with_exception()) [[likely]]
        unlink_ended_task(p);
    PoolLink* pool = detail::RuntimeAccess::registry(*rt).pool_link();
    // Once join_ says completed, a joiner on another thread may free the frame: only locals
    // from here on. (The joiner is a coroutine of this runtime; with a pool it may have moved
    // by the time it resumes: spawned_final_slow.)
    std::uintptr_t old = p.join_.exchange(join_completed, std::memory_order_acq_rel);
    if (pool == nullptr) [[likely]] {
        // It resumes at once when nothing else is ready (one task at a time: no queue round
        // trip), else behind the ready tasks (many alive: the joiner then finds the next ones
        // already ended, instead of suspending once per task).
        std::coroutine_handle<> h = reinterpret_cast<JoinWaiter*>(old)->h;
        if (detail::RuntimeAccess::scheduler(*rt).queue_behind_ready(h))
            return std::noop_coroutine();
        return h;
    }
    return spawned_final_slow(p, self, rt, pool, old, nullptr);
}

} // namespace detail

RuntimeOptions& RuntimeOptions::attach_wq(const Runtime& other) noexcept {
    p_.attach_wq_fd = other.ring_fd();
    return *this;
}

Runtime::Runtime(const RuntimeOptions& options)
    : engine_(*this, options.ring_params()), sched_(options.flush_interval()),
      registry_(options.detached_exception_handler()), opts_(options), owner_thread_(std::this_thread::get_id()) {
    using namespace uring::compat::setup;
    engine_.wants_events = (engine_.ring.setup_flags() & (defer_taskrun | iopoll)) != 0;
    inbox_.start();
    // Hand what setup queued to the kernel now and drop the probe's CQE, so the counters
    // start from a quiet ring.
    submit_or_throw(0, true);
    reap();
    engine_.cqes = 0;
}

Runtime::~Runtime() {
    // A destructor must not throw: what shutdown could throw (no memory for the run queue,
    // the kernel refusing every submission) is reported, and what it had not freed leaks.
    detail::run_reporting_failure("~Runtime: shutdown stopped early", "; some task frames may leak",
                                  [this] { shutdown(); });
}

RuntimeStats Runtime::stats() const noexcept {
    RuntimeStats s;
    s.sqes_submitted = engine_.ring.sqes_submitted();
    s.enters = engine_.ring.enters();
    s.cqes = engine_.cqes + engine_.completed_alone;
    s.completed_alone = engine_.completed_alone;
    s.resumptions = sched_.resumptions + sched_.ready.popped_in_turn(); // and those of a turn under way
    s.tasks_spawned = registry_.spawned();
    s.detached_exceptions = registry_.exception_sink().reported.load(std::memory_order_relaxed);
    s.backpressure_events = engine_.backpressure;
    s.ops_in_flight = engine_.in_flight;
    s.remote_items = inbox_.items();
    s.wakeups = inbox_.wakeups();
    s.wakeups_by_sqe = inbox_.wakeups_by_sqe();
    s.tasks_migrated_in = registry_.migrated_in();
    s.readiness_registrations = engine_.ring.readiness_registrations();
    return s;
}

void Runtime::drain_remote() {
    std::vector<detail::Inbox::Item>& items = inbox_.take();
    bool sweep = false;
    for (const detail::Inbox::Item& it : items) {
        if (!it.addr) { // a cancellation request from another thread
            sweep = true;
            continue;
        }
        if (it.spawn) {
            // A spawn (counted by the poster), or a task arriving by switch_to (tag bit 0).
            auto raw = reinterpret_cast<std::uintptr_t>(it.spawn);
            auto* p = reinterpret_cast<detail::PromiseBase*>(raw & ~std::uintptr_t{1});
            if (raw & 1)
                registry_.count_migration();
            else
                registry_.count_spawn();
            registry_.link_task(*p);
            // A cancel sent while the task was in transit went to a runtime that no longer
            // had it; the flag it left makes this runtime apply it.
            if (p->own_ctx_.remote_request.load(std::memory_order_seq_cst))
                sweep = true;
        }
        sched_.ready.push(std::coroutine_handle<>::from_address(it.addr));
    }
    if (sweep) {
        // The remote requests of the tasks that carry one (cleared as they are taken), then,
        // when asked, every task.
        for (detail::CancelCtx* c = registry_.root().first_child; c; c = c->next_sibling)
            if (c->task_root && c->remote_request.exchange(false, std::memory_order_acq_rel))
                detail::cancel(*c);
        if (registry_.cancel_all.exchange(false, std::memory_order_acq_rel))
            cancel_all_tasks();
    }
}

void Runtime::post_migration(detail::PromiseBase& p, std::coroutine_handle<> h) {
    inbox_.post({h.address(), reinterpret_cast<detail::PromiseBase*>(reinterpret_cast<std::uintptr_t>(&p) | 1)});
}

namespace {
// Cancels every spawned task (and branch task) in the subtree under `n`: those that hang
// under plain contexts (a TaskScope's group, block_on's root) and under shields (which a
// task's own cancellation does not reach) too, but not those contexts themselves.
void cancel_tasks_under(detail::CancelCtx& n) noexcept {
    for (detail::CancelCtx* c = n.first_child; c; c = c->next_sibling) {
        if (c->of_spawned_task())
            detail::cancel(*c);
        cancel_tasks_under(*c);
    }
}

// The spawned tasks and branch tasks in the runtime's tree under `root`, for its shutdown.
std::vector<detail::PromiseBase*> tasks_in_tree(detail::CancelCtx& root) {
    std::vector<detail::PromiseBase*> out;
    std::vector<detail::CancelCtx*> todo{&root};
    while (!todo.empty()) {
        detail::CancelCtx* n = todo.back();
        todo.pop_back();
        for (detail::CancelCtx* c = n->first_child; c; c = c->next_sibling) {
            if (c->of_spawned_task())
                out.push_back(&detail::task_of(*c));
            todo.push_back(c);
        }
    }
    return out;
}
} // namespace

void Runtime::cancel_all_tasks() noexcept { cancel_tasks_under(registry_.root()); }

void Runtime::request_cancel_all() {
    registry_.cancel_all.store(true, std::memory_order_release);
    inbox_.post({nullptr, nullptr});
}

void Runtime::flush_submissions() noexcept {
    if (engine_.ring.pending())
        (void)engine_.ring.submit(0, false);
}

void Runtime::finish_outgoing_wakes() noexcept {
    CurrentFor scope{this}; // on_ring_wake_sent books the CQE on the current runtime
    flush_submissions();
    reap_without_resuming(); // failed messages (sent again by system call)
    while (inbox_.outgoing() > 0) {
        int r = engine_.ring.submit(1, true);
        if (r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN && r != -ETIME)
            break;
        reap_without_resuming();
    }
}

void Runtime::post(std::coroutine_handle<> h) { inbox_.post({h.address(), nullptr}); }

void Runtime::post_spawn(detail::PromiseBase& p, std::coroutine_handle<> h) {
    if (registry_.pool_link())
        registry_.pool_link()->task_started();
    inbox_.post({h.address(), &p});
}

void Runtime::post_spawn_counted(detail::PromiseBase& p, std::coroutine_handle<> h) { inbox_.post({h.address(), &p}); }

void Runtime::request_cancel(detail::PromiseBase& p) {
    // The flag first, then the owner: a task that moves with switch_to meanwhile finds the
    // flag when it arrives (see drain_remote), or this reads its new owner.
    p.own_ctx_.remote_request.store(true, std::memory_order_seq_cst);
    Runtime* owner = std::atomic_ref<Runtime*>(p.owner_).load(std::memory_order_seq_cst);
    (owner ? owner : this)->inbox_.post({nullptr, nullptr});
}

void Runtime::reap_without_resuming() {
    engine_.cqes +=
        engine_.ring.reap([this](std::uint64_t ud, int res, std::uint32_t fl) { route(ud, res, fl, QueueOnly{this}); });
}

void Runtime::reap_overflow() {
    // The CQ filled up and the kernel keeps the completions that did not fit in its overflow
    // list (IORING_FEAT_NODROP). Back-pressure: an enter with GETEVENTS moves them into the CQ
    // as room allows; reap and repeat until the list is empty.
    do {
        ++engine_.backpressure;
        submit_or_throw(0, true);
        unsigned n = engine_.ring.reap([this](std::uint64_t ud, int res, std::uint32_t fl) { dispatch(ud, res, fl); });
        engine_.cqes += n;
        if (n == 0) // nothing moved in (cannot happen with an empty CQ); the loop's next enter retries
            break;
    } while (engine_.ring.cq_overflowed());
}

void Runtime::handle_submit_error(int r) {
    switch (-r) {
    case EINTR:
    case ETIME: return;
    case EBUSY:
    case EAGAIN:
        // CQ overflow: the caller reaps and comes back.
        ++engine_.backpressure;
        return;
    case EBADR: std::fprintf(stderr, "ringo: the kernel dropped completions (CQ overflow without NODROP)\n"); return;
    default: throw std::system_error(-r, std::generic_category(), "ringo: io_uring_enter failed");
    }
}

void Runtime::run_ready() {
    // A turn resumes at most sched_.flush_interval tasks from the queue (yield's hand-offs
    // included), then the loop flushes I/O; its resumptions are counted once, at its end.
    sched_.ready.begin_turn(sched_.flush_interval);
    do {
        sched_.ready.pop().resume();
    } while (!sched_.ready.turn_over() && !sched_.ready.empty());
    sched_.resumptions += sched_.ready.end_turn();
}

void Runtime::run(std::coroutine_handle<> root) {
    if (std::this_thread::get_id() != owner_thread_)
        throw std::logic_error("ringo: a Runtime must be driven by the thread that created it");
    if (running_ || (detail::t_current && detail::t_current != this))
        throw std::logic_error("ringo: block_on called from inside a running runtime");
    struct Guard {
        Runtime* self;
        Runtime* prev;
        ~Guard() {
            self->running_ = false;
            self->root_ = detail::finished_coroutine();
            make_current(prev);
        }
    } guard{this, detail::t_current};
    running_ = true;
    root_ = root;
    make_current(this);

    sched_.ready.push(root);
    for (;;) {
        if (!sched_.ready.empty())
            run_ready();
        if (root.done()) {
            if (std::exchange(engine_.unawaited_queued, false))
                flush_submissions(); // what the last turn queued without awaiting it (a close)
            return;
        }
        if (sched_.ready.empty() && sched_.timers.empty()) [[likely]] {
            // Nothing to run and no deadline: submit what was gathered and wait, in one
            // enter (the common case of an I/O-bound loop). When a task's own wait
            // (start_op) brought other CQEs too, this enter returns at once: a wait that ends
            // with a cross-thread wake-up, rare enough not to check for on every turn.
            submit_or_throw(1, true);
        } else {
            step_with_work_or_timers();
        }
        reap();
    }
}

void Runtime::step_with_work_or_timers() {
    if (!sched_.timers.empty())
        fire_timers(detail::now_ns());
    if (sched_.ready.empty()) {
        wait_for_events();
    } else if (engine_.ring.pending() || (engine_.in_flight && engine_.wants_events) || engine_.ring.needs_enter()) {
        submit_or_throw(0, engine_.in_flight != 0);
    }
}

void Runtime::fire_timers(std::uint64_t now) {
    while (!sched_.timers.empty() && sched_.timers.top()->deadline <= now) {
        detail::TimerEntry* t = sched_.timers.top();
        sched_.timers.remove(t);
        t->fire(t);
    }
}

void Runtime::wait_for_events() {
    if (sched_.timers.empty()) [[likely]] {
        submit_or_throw(1, true);
        return;
    }
    std::uint64_t now = detail::now_ns();
    std::uint64_t deadline = sched_.timers.top()->deadline;
    if (deadline <= now) {
        fire_timers(now);
        if (!sched_.ready.empty()) {
            submit_or_throw(0, false);
            return;
        }
    }
    if (sched_.timers.empty()) {
        submit_or_throw(1, true);
        return;
    }
    deadline = sched_.timers.top()->deadline;
    now = detail::now_ns();
    int r = engine_.ring.submit_and_wait_timeout(1, deadline > now ? deadline - now : 0);
    if (r < 0 && r != -ETIME) [[unlikely]]
        handle_submit_error(r);
    fire_timers(detail::now_ns());
}

void Runtime::withdraw_join_waiters() noexcept {
    // Coroutines here that wait for tasks of other runtimes: nothing may post their wake-up
    // into this runtime once it is gone (their frames may even outlive it, held by a handle).
    while (detail::JoinWaiter* w = registry_.first_join_waiter())
        detail::withdraw_join_waiter(*w);
}

void Runtime::shutdown() {
    // Frame destructors below may look for their runtime. The previous one comes back however
    // this ends (a failed submission throws, and ~Runtime reports it): no thread is left with
    // a current runtime, or run queue, that is gone.
    CurrentFor scope{this};
    flush_submissions(); // unawaited SQEs (closes) queued before the shutdown
    discard_ = true;
    alive_->store(false, std::memory_order_release);
    // 0. Take back the waits of this runtime's coroutines for tasks of other runtimes; a
    //    wake-up already under way arrives in the inbox, which step 1 drains.
    withdraw_join_waiters();
    // 1. Cancel every operation still in flight and wait for each one's final CQE, so no
    //    kernel write can land in a frame we are about to free. Nothing is resumed.
    while (engine_.in_flight > 0 || inbox_.read_armed()) {
        io_uring_sqe* sqe = engine_.get_sqe();
        io_uring_prep_cancel64(sqe, 0, 0);
        sqe->cancel_flags = uring::compat::async_cancel_any | uring::compat::async_cancel_all;
        sqe->user_data = 0;
        int r = engine_.ring.submit(1, true);
        if (r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN && r != -ETIME) {
            std::fprintf(stderr, "ringo: io_uring_enter failed during shutdown: %s\n",
                         std::error_code(-r, std::generic_category()).message().c_str());
            break;
        }
        reap_without_resuming();
    }
    drain_remote();
    while (!sched_.timers.empty()) // their owners are frames about to be destroyed
        sched_.timers.remove(sched_.timers.top());
    // 2. Destroy the frames of detached tasks. Destroying one may detach others (its
    //    JoinHandles), so repeat until a pass frees nothing. (Destroying a frame frees no
    //    other task's frame: what a frame ends is a JoinHandle's task that had ended already,
    //    and so had left the tree.)
    for (bool progress = true; progress;) {
        progress = false;
        for (detail::PromiseBase* p : tasks_in_tree(registry_.root())) {
            if (p->join_.load(std::memory_order_acquire) == detail::join_detached) {
                p->own_ctx_.unlink();
                std::coroutine_handle<>::from_address(p->frame_address()).destroy();
                progress = true;
            }
        }
    }
    // 3. Tasks still held by a JoinHandle: mark them abandoned and wake their joiners. First
    //    everything leaves the tree, whose root goes with this runtime: a woken joiner may
    //    destroy a frame on its own thread at once (with a TaskScope whose group hung here).
    std::vector<detail::PromiseBase*> held = tasks_in_tree(registry_.root());
    for (detail::PromiseBase* p : held)
        p->own_ctx_.unlink();
    registry_.root().orphan_children(); // what is left: plain contexts (a TaskScope's group)
    for (detail::PromiseBase* p : held) {
        std::uintptr_t old = p->join_.exchange(detail::join_abandoned, std::memory_order_acq_rel);
        if (old == detail::join_detached) {
            std::coroutine_handle<>::from_address(p->frame_address()).destroy();
        } else if (old != detail::join_running && old != detail::join_completed) {
            auto* w = reinterpret_cast<detail::JoinWaiter*>(old & ~detail::join_linked_tag);
            if (!w->h) {
                auto* tw = static_cast<detail::ThreadJoinWaiter*>(w);
                tw->parker.notify();
            } else if (w->rt && w->rt != this) {
                detail::wake_join_waiter(*w);
            }
        }
    }
}

void Runtime::make_current(Runtime* rt) noexcept {
    detail::t_current = rt;
    detail::t_ready = rt ? &rt->sched_.ready : &detail::no_runtime_queue;
}

namespace detail {

io_uring_sqe* IoEngine::get_sqe_slow() {
    for (;;) {
        make_sq_room();
        if (io_uring_sqe* s = ring.get_sqe())
            return s;
    }
}

void IoEngine::make_sq_room() {
    // The SQ is full: hand it to the kernel. Completions reaped here are not resumed inline
    // (we are inside some coroutine's await_suspend); their coroutines go to the run queue.
    int r = ring.submit(0, false);
    if (ring.sq_space() > 0)
        return;
    if (r < 0 && r != -EBUSY && r != -EAGAIN && r != -EINTR)
        throw std::system_error(-r, std::generic_category(), "ringo: io_uring_enter failed while the SQ was full");
    ++backpressure;
    // Back-pressure: make room in the CQ, deferring the resumptions.
    ring.submit(0, true);
    rt_.reap_without_resuming();
}

void TaskRegistry::link_join_waiter(JoinWaiter& w) noexcept {
    w.prev = nullptr;
    w.next = join_waiters_;
    if (join_waiters_)
        join_waiters_->prev = &w;
    join_waiters_ = &w;
    w.linked = true;
}

void TaskRegistry::unlink_join_waiter(JoinWaiter& w) noexcept {
    if (!w.linked)
        return;
    (w.prev ? w.prev->next : join_waiters_) = w.next;
    if (w.next)
        w.next->prev = w.prev;
    w.linked = false;
}

} // namespace detail

} // namespace ringo
