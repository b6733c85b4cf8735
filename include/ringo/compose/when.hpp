// ringo/compose/when.hpp - when_all and when_any.
#pragma once

#include <array>
#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <ringo/compose/cancel.hpp>
#include <ringo/compose/detail/group.hpp>
#include <ringo/compose/traits.hpp>

namespace ringo {

namespace detail {

/// The branches of one when_all / when_any / TaskScope: a cancellation node that is the
/// parent of every branch, a count of running branches, the first exception.
struct BranchGroup {
    CancelCtx ctx;
    std::size_t remaining = 0;
    std::size_t first = static_cast<std::size_t>(-1); // index of the first branch to finish
    bool any_mode = false;                            // when_any: first finisher cancels the rest
    std::exception_ptr exc;
    std::coroutine_handle<> waiter{};
    Runtime* rt = nullptr;

    void branch_done(std::size_t idx, std::exception_ptr e) noexcept {
        if (first == static_cast<std::size_t>(-1)) {
            first = idx;
            if (any_mode)
                cancel(ctx);
        }
        if (e && !exc) {
            exc = e;
            cancel(ctx); // the first failure stops the others
        }
        if (--remaining == 0) {
            if (waiter)
                rt->schedule(waiter);
            else // a TaskScope between joins: its group leaves the runtime's root meanwhile
                ctx.unlink();
        }
    }

    /// Awaits the end of every branch.
    struct Wait {
        BranchGroup* g;
        bool await_ready() const noexcept { return g->remaining == 0; }
        void await_suspend(std::coroutine_handle<> h) noexcept { g->waiter = h; }
        void await_resume() const noexcept {}
    };
};

template <class T>
using branch_value_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
Task<void> run_branch(BranchGroup& g, std::size_t idx, Task<T> t, std::optional<branch_value_t<T>>* out) {
    std::exception_ptr e;
    try {
        if constexpr (std::is_void_v<T>) {
            co_await std::move(t);
            if (out)
                out->emplace();
        } else {
            auto v = co_await std::move(t);
            if (out)
                out->emplace(std::move(v));
        }
    } catch (...) {
        e = std::current_exception();
    }
    g.branch_done(idx, e);
}

/// Starts `t` on the current runtime as a branch of `g`: detached, cancelled with `g.ctx`.
/// Room for it in the run queue must have been reserved (Scheduler::reserve): from
/// here on nothing allocates, so a branch is never half started.
inline void start_branch(BranchGroup& g, Task<void> t) noexcept {
    auto h = t.release();
    auto& p = h.promise();
    Runtime& rt = *g.rt;
    p.become_spawned(rt, h.address(), /*task_root=*/false); // cancelled with its group
    auto& reg = detail::RuntimeAccess::registry(rt);
    // The group hangs in the runtime's tree (under the awaiting task, or else under the
    // root), so the runtime's cancel sweeps and shutdown find the branch through it.
    if (!g.ctx.linked())
        g.ctx.link_first(reg.root());
    p.own_ctx_.link_under(g.ctx);
    p.join_.store(join_detached, std::memory_order_relaxed);
    reg.count_task();
    rt.schedule(h);
}

template <class A>
Task<await_result_t<A>> as_task(A a) {
    co_return co_await std::move(a);
}

template <class T>
struct IsTask : std::false_type {};
template <class T>
struct IsTask<Task<T>> : std::true_type {};

template <class A>
auto to_task(A&& a) {
    using D = std::remove_cvref_t<A>;
    if constexpr (IsTask<D>::value)
        return D(std::forward<A>(a));
    else
        return as_task(D(std::forward<A>(a)));
}

/// `co_await OpenBranches{&g, any}` opens `g` in the awaiting coroutine: on the current
/// runtime (std::logic_error outside one), its cancellation linked under the awaiting
/// strand's. It does not suspend.
struct OpenBranches {
    BranchGroup* g;
    bool any;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        g->any_mode = any;
        g->rt = Runtime::current();
        if (!g->rt)
            throw std::logic_error(any ? "ringo: when_any outside a runtime" : "ringo: when_all outside a runtime");
        if (CancelCtx* outer = ctx_of(h))
            g->ctx.link_under(*outer);
        return false;
    }
    void await_resume() const noexcept {}
};

/// Starts one branch of `g` per task, branch i storing its value in std::get<i>(out). Every
/// branch's frame is made, and room in the run queue reserved, before the first starts: when
/// memory runs out (std::bad_alloc) no branch has started, so none outlives the group.
template <class... Ts>
void start_branches(BranchGroup& g, std::tuple<std::optional<branch_value_t<Ts>>...>& out, Task<Ts>... tasks) {
    std::array<Task<void>, sizeof...(Ts)> branches = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::array<Task<void>, sizeof...(Ts)>{run_branch(g, I, std::move(tasks), &std::get<I>(out))...};
    }
    (std::index_sequence_for<Ts...>{});
    RuntimeAccess::scheduler(*g.rt).reserve(branches.size());
    g.remaining = branches.size();
    for (Task<void>& b : branches)
        start_branch(g, std::move(b));
}

/// Starts one branch of `g` per task of the range, branch i storing its value in out[i]; as
/// above, all or none.
template <class T>
void start_branches(BranchGroup& g, std::vector<std::optional<branch_value_t<T>>>& out, std::vector<Task<T>>& tasks) {
    std::vector<Task<void>> branches;
    branches.reserve(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i)
        branches.push_back(run_branch(g, i, std::move(tasks[i]), &out[i]));
    RuntimeAccess::scheduler(*g.rt).reserve(branches.size());
    g.remaining = branches.size();
    for (Task<void>& b : branches)
        start_branch(g, std::move(b));
}

template <class... Ts>
Task<std::tuple<branch_value_t<Ts>...>> when_all_tasks(Task<Ts>... tasks) {
    BranchGroup g;
    co_await OpenBranches{&g, false};
    std::tuple<std::optional<branch_value_t<Ts>>...> out;
    start_branches<Ts...>(g, out, std::move(tasks)...);
    co_await BranchGroup::Wait{&g};
    if (g.exc)
        std::rethrow_exception(g.exc);
    co_return std::apply([](auto&... o) { return std::make_tuple(std::move(*o)...); }, out);
}

template <class T>
Task<std::vector<branch_value_t<T>>> when_all_range(std::vector<Task<T>> tasks) {
    BranchGroup g;
    co_await OpenBranches{&g, false};
    std::vector<std::optional<branch_value_t<T>>> out(tasks.size());
    start_branches(g, out, tasks);
    co_await BranchGroup::Wait{&g};
    if (g.exc)
        std::rethrow_exception(g.exc);
    std::vector<branch_value_t<T>> r;
    r.reserve(out.size());
    for (auto& o : out)
        r.push_back(std::move(*o));
    co_return r;
}

template <class T>
inline constexpr bool is_variant_v = false;
template <class... Ts>
inline constexpr bool is_variant_v<std::variant<Ts...>> = true;

/// What when_any yields for winner `I` with value `v`: {I, v}, or the variant holding `v` as
/// its alternative I.
template <class Out, std::size_t I, class V>
Out any_result(V&& v) {
    if constexpr (is_variant_v<Out>)
        return Out(std::in_place_index<I>, std::forward<V>(v));
    else
        return Out{I, std::forward<V>(v)};
}

template <class Out, class... Ts>
Task<Out> when_any_tasks(Task<Ts>... tasks) {
    BranchGroup g;
    co_await OpenBranches{&g, true};
    std::tuple<std::optional<branch_value_t<Ts>>...> out;
    start_branches<Ts...>(g, out, std::move(tasks)...);
    // Every loser is cancelled and awaited to its end before we return (buffer-safe).
    co_await BranchGroup::Wait{&g};
    std::size_t idx = g.first;
    std::optional<Out> value;
    std::exception_ptr winner_exc;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((I == idx ? (std::get<I>(out) ? (void)value.emplace(any_result<Out, I>(std::move(*std::get<I>(out))))
                                       : (void)(winner_exc = g.exc))
                   : void()),
         ...);
    }
    (std::index_sequence_for<Ts...>{});
    if (!value)
        std::rethrow_exception(winner_exc ? winner_exc : g.exc);
    co_return std::move(*value);
}

template <class T>
Task<std::pair<std::size_t, branch_value_t<T>>> when_any_range(std::vector<Task<T>> tasks) {
    if (tasks.empty())
        throw std::invalid_argument("ringo: when_any of an empty range");
    BranchGroup g;
    co_await OpenBranches{&g, true};
    std::vector<std::optional<branch_value_t<T>>> out(tasks.size());
    start_branches(g, out, tasks);
    co_await BranchGroup::Wait{&g};
    std::size_t idx = g.first;
    if (!out[idx])
        std::rethrow_exception(g.exc);
    co_return std::pair<std::size_t, branch_value_t<T>>{idx, std::move(*out[idx])};
}

} // namespace detail

/// Awaits every argument concurrently and yields all their results.
///
/// - All arguments operations (op::...): their SQEs go to the kernel together in one
///   submission, no coroutine per operation; yields std::tuple<int...>.
/// - Otherwise (tasks, or any mix of awaitables): each runs as a branch task on the current
///   runtime; yields std::tuple of their values (std::monostate for void). The first
///   exception cancels the other branches; all are awaited, then it is rethrown. Any
///   awaitable ringo returns works (`when_all(listener.accept(), TcpStream::connect(a))`):
///   arguments are moved in, as every awaitable ringo returns can be until it is awaited.
/// Cancelling the awaiting task cancels every branch.
template <class... As>
auto when_all(As&&... as) {
    static_assert(sizeof...(As) > 0, "when_all needs at least one awaitable");
    if constexpr ((Operation<As> && ...))
        return detail::OpTuple<std::remove_cvref_t<As>...>(0, std::forward<As>(as)...);
    else
        return detail::when_all_tasks(detail::to_task(std::forward<As>(as))...);
}

namespace detail {
template <class T>
inline constexpr bool always_false = false;
} // namespace detail

/// when_all over a run-time number of tasks, moved in (`when_all(std::move(v))`): yields
/// std::vector of their values.
template <class T>
Task<std::vector<detail::branch_value_t<T>>> when_all(std::vector<Task<T>>&& tasks) {
    return detail::when_all_range(std::move(tasks));
}
/// A vector of tasks that was not moved: a compile error that says so.
template <class T>
Task<std::vector<detail::branch_value_t<T>>> when_all(std::vector<Task<T>>& tasks) {
    static_assert(detail::always_false<T>,
                  "ringo::when_all(v): pass std::move(v): the tasks move into the group, a vector is not copied");
    return when_all(std::move(tasks)); // (not compiled: only the message above is)
}

/// when_all over a run-time number of operations of one type, submitted together: yields
/// std::vector<int>. An empty vector yields an empty result at once. The vector is moved in
/// (`when_all(std::move(ops))`): the group owns the operations while the kernel works.
template <Operation O>
detail::OpVector<O> when_all(std::vector<O>&& ops) {
    return detail::OpVector<O>(0, std::move(ops));
}
template <Operation O>
detail::OpVector<O> when_all(std::vector<O>& ops) {
    static_assert(detail::always_false<O>, "ringo::when_all(ops): pass std::move(ops): the group owns the "
                                           "operations while they are in flight, a vector is not copied");
    return when_all(std::move(ops));
}

/// Awaits the arguments concurrently; the first to finish wins. The others are cancelled
/// and awaited to their end (their operations to their final CQE) before this returns, so
/// no buffer of theirs is still in the kernel's hands. A loser's result is discarded; if the
/// winner threw, its exception is rethrown. Arguments are moved in, as for when_all. Yields:
///
/// - when every argument yields the same type R: std::pair<std::size_t, R>, the winner's
///   index and value (`auto [which, value] = co_await when_any(a, b)`);
/// - otherwise: std::variant of their types (std::monostate for void), holding the winner's
///   value as the alternative of its index (`v.index()`, `std::get<1>(v)`, std::visit), as
///   Asio's `||` of awaitables does: `when_any(accept_loop(...), stop.next())` yields
///   std::variant<std::error_code, int>.
template <class A0, class... As>
auto when_any(A0&& a0, As&&... as) {
    using R = detail::branch_value_t<await_result_t<A0>>;
    if constexpr ((std::is_same_v<R, detail::branch_value_t<await_result_t<As>>> && ...))
        return detail::when_any_tasks<std::pair<std::size_t, R>>(detail::to_task(std::forward<A0>(a0)),
                                                                 detail::to_task(std::forward<As>(as))...);
    else
        return detail::when_any_tasks<std::variant<R, detail::branch_value_t<await_result_t<As>>...>>(
            detail::to_task(std::forward<A0>(a0)), detail::to_task(std::forward<As>(as))...);
}

/// when_any over a run-time number of tasks, moved in (`when_any(std::move(v))`). An empty
/// range throws std::invalid_argument.
template <class T>
Task<std::pair<std::size_t, detail::branch_value_t<T>>> when_any(std::vector<Task<T>>&& tasks) {
    return detail::when_any_range(std::move(tasks));
}
template <class T>
Task<std::pair<std::size_t, detail::branch_value_t<T>>> when_any(std::vector<Task<T>>& tasks) {
    static_assert(detail::always_false<T>,
                  "ringo::when_any(v): pass std::move(v): the tasks move into the group, a vector is not copied");
    return when_any(std::move(tasks));
}

} // namespace ringo
