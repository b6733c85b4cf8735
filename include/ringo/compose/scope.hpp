// ringo/compose/scope.hpp - TaskScope: structured concurrency.
#pragma once

#include <exception>
#include <type_traits>
#include <utility>

#include <ringo/compose/when.hpp>

namespace ringo {

/// A set of tasks that end together. Tasks spawned into the scope run concurrently on the
/// current runtime; `co_await scope.join()` waits for all of them and rethrows the first
/// exception one of them ended with. That first exception cancels the others at once.
/// Cancelling the task that awaits join() cancels the scope's tasks.
///
/// Prefer `ringo::scoped(fn)`, which always joins, also when `fn` throws. A TaskScope
/// destroyed with tasks still running (without join) cancels them; they then finish on
/// their own, and their frames are freed as they end (or by their runtime's shutdown, if it
/// comes first).
class TaskScope {
public:
    TaskScope() : s_(new State) { s_->g.rt = Runtime::current(); }
    TaskScope(const TaskScope&) = delete;
    TaskScope& operator=(const TaskScope&) = delete;
    ~TaskScope() {
        if (s_->g.remaining)
            detail::cancel(s_->g.ctx);
        release(s_);
    }

    /// Starts `t` in the scope. Throws std::logic_error outside a runtime.
    template <class T>
    void spawn(Task<T> t) {
        if (!s_->g.rt)
            throw std::logic_error("ringo: TaskScope used outside a runtime");
        // The frame and the run queue's room first: when memory runs out (std::bad_alloc),
        // nothing is counted, so join() does not wait for a task that never started.
        Task<void> branch = run(s_, s_->next_index, std::move(t));
        detail::RuntimeAccess::scheduler(*s_->g.rt).reserve(1);
        ++s_->next_index;
        ++s_->refs;
        ++s_->g.remaining;
        detail::start_branch(s_->g, std::move(branch));
    }

    /// Requests cancellation of every task in the scope.
    void cancel() noexcept { detail::cancel(s_->g.ctx); }

    /// Tasks of this scope still running.
    [[nodiscard]] std::size_t running() const noexcept { return s_->g.remaining; }

    /// Waits for every task of the scope; rethrows the first exception one ended with.
    Task<void> join() {
        State* s = s_;
        if (detail::CancelCtx* outer = co_await detail::CurrentCtx{}) {
            s->g.ctx.unlink(); // from under the runtime's root, where its tasks hung meanwhile
            s->g.ctx.link_under(*outer);
            if (outer->cancelled)
                detail::cancel(s->g.ctx);
        }
        co_await detail::BranchGroup::Wait{&s->g};
        s->g.waiter = {};
        s->g.ctx.unlink();
        // A task spawned into the scope after the last one ended, before this join resumed,
        // hangs under the group: the group goes back under the runtime's root with it.
        if (s->g.ctx.first_child)
            s->g.ctx.link_first(detail::RuntimeAccess::registry(*s->g.rt).root());
        if (s->g.exc)
            std::rethrow_exception(std::exchange(s->g.exc, nullptr));
    }

private:
    struct State {
        detail::BranchGroup g;
        std::size_t refs = 1;
        std::size_t next_index = 0;
    };
    static void release(State* s) noexcept {
        if (--s->refs == 0)
            delete s;
    }
    // The task's reference to the shared state goes however its frame goes: at its end, or
    // destroyed where it waits by its runtime's shutdown (a scope dropped without join
    // cancels its tasks, and the runtime may end before an operation's cancellation has
    // completed).
    template <class T>
    static Task<void> run(State* s, std::size_t idx, Task<T> t) {
        struct Ref {
            State* s;
            ~Ref() { release(s); }
        } ref{s};
        std::exception_ptr e;
        try {
            co_await std::move(t);
        } catch (...) {
            e = std::current_exception();
        }
        s->g.branch_done(idx, e);
    }
    State* s_;
};

/// Runs `fn(scope)` with a fresh TaskScope and always joins the scope before returning:
/// when `fn` throws, the scope's tasks are cancelled and joined, then the exception is
/// rethrown; otherwise the first exception of a scope task is rethrown. Yields fn's value.
template <class F>
auto scoped(F fn) -> Task<await_result_t<std::invoke_result_t<F&, TaskScope&>>> {
    using R = await_result_t<std::invoke_result_t<F&, TaskScope&>>;
    TaskScope scope;
    std::exception_ptr e;
    std::optional<detail::branch_value_t<R>> value;
    try {
        if constexpr (std::is_void_v<R>) {
            co_await fn(scope);
            value.emplace();
        } else {
            value.emplace(co_await fn(scope));
        }
    } catch (...) {
        e = std::current_exception();
        scope.cancel();
    }
    std::exception_ptr je;
    try {
        co_await scope.join();
    } catch (...) {
        je = std::current_exception();
    }
    if (e)
        std::rethrow_exception(e);
    if (je)
        std::rethrow_exception(je);
    if constexpr (!std::is_void_v<R>)
        co_return std::move(*value);
}

} // namespace ringo
