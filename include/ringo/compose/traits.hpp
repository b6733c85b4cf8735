// ringo/compose/traits.hpp - what an awaitable yields, and whether it is one io_uring operation.
#pragma once

#include <concepts>
#include <type_traits>
#include <utility>

#include <ringo/op/base.hpp>

namespace ringo {

namespace detail {

template <class A>
concept HasMemberCoAwait = requires(A&& a) {
    std::forward<A>(a).operator co_await();
};

template <class A>
decltype(auto) get_awaiter(A&& a) {
    if constexpr (HasMemberCoAwait<A>)
        return std::forward<A>(a).operator co_await();
    else
        return std::forward<A>(a);
}

} // namespace detail

/// The type `co_await std::declval<A>()` yields.
template <class A>
using await_result_t = decltype(detail::get_awaiter(std::declval<A>()).await_resume());

/// An awaitable whose int result follows the kernel's convention: >= 0, or -errno, and
/// -ECANCELED when its task is cancelled. ringo's own awaiters say so with `static constexpr
/// bool errno_result = true`: every operation, sleep_for/sleep_until, the waits of the sync
/// primitives, Fd::close. A Task<int> or any other int is a plain value, not a status.
template <class A>
concept ErrnoAwaitable = std::same_as < await_result_t<A>,
int > &&requires { requires std::remove_cvref_t<decltype(detail::get_awaiter(std::declval<A>()))>::errno_result; };

/// One io_uring operation (an op:: awaitable): it has an SQE, so SQE flags, links and
/// grouped submission apply to it. Tasks, channel pops and other awaitables are not.
template <class A>
concept Operation = requires(std::remove_cvref_t<A>& a, io_uring_sqe* s) {
    { std::remove_cvref_t<A>::opcode } -> std::convertible_to<std::uint8_t>;
    a.prepare(s);
    a.with_sqe_flags(std::uint8_t{});
}
&&std::is_base_of_v<detail::OpState, std::remove_cvref_t<A>>;

} // namespace ringo
