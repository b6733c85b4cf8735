// ringo/compose/link.hpp - linked operations and SQE flag decorators.
#pragma once

#include <ringo/compose/detail/group.hpp>
#include <ringo/compose/traits.hpp>

namespace ringo {

/// Submits the operations as one IOSQE_IO_LINK chain, in one submission: each starts after
/// the previous one succeeded; after the first failure the rest complete with -ECANCELED.
/// Yields std::tuple<int...> of every result. Only operations can be linked (a compile
/// error otherwise); a chain longer than the SQ yields -EINVAL for every member.
template <Operation... Os>
detail::OpTuple<std::remove_cvref_t<Os>...> link(Os&&... ops) {
    static_assert(sizeof...(Os) > 0, "link needs at least one operation");
    return detail::OpTuple<std::remove_cvref_t<Os>...>(uring::compat::sqe_flag::io_link, std::forward<Os>(ops)...);
}

/// Like link, with IOSQE_IO_HARDLINK: the chain goes on after a failure.
template <Operation... Os>
detail::OpTuple<std::remove_cvref_t<Os>...> hard_link(Os&&... ops) {
    static_assert(sizeof...(Os) > 0, "hard_link needs at least one operation");
    return detail::OpTuple<std::remove_cvref_t<Os>...>(uring::compat::sqe_flag::io_hardlink, std::forward<Os>(ops)...);
}

/// Run-time length chains of one operation type.
template <Operation O>
detail::OpVector<O> link(std::vector<O> ops) {
    return detail::OpVector<O>(uring::compat::sqe_flag::io_link, std::move(ops));
}
template <Operation O>
detail::OpVector<O> hard_link(std::vector<O> ops) {
    return detail::OpVector<O>(uring::compat::sqe_flag::io_hardlink, std::move(ops));
}

/// IOSQE_IO_DRAIN: the operation starts only after every earlier submitted one completed.
/// Only for operations (a channel pop or a task has no SQE: compile error). While a drained
/// operation waits, the kernel holds back every later SQE of the ring too, so the current
/// runtime stops sending its cross-runtime wake-ups as SQEs (docs/pool.md).
template <Operation O>
std::remove_cvref_t<O> drain(O&& op) {
    std::remove_cvref_t<O> o = std::forward<O>(op);
    o.with_sqe_flags(uring::compat::sqe_flag::io_drain); // the runtime notes it when the SQE is made
    return o;
}

/// IOSQE_ASYNC: skip the non-blocking attempt and go straight to an io-wq worker.
template <Operation O>
std::remove_cvref_t<O> always_async(O&& op) {
    std::remove_cvref_t<O> o = std::forward<O>(op);
    o.with_sqe_flags(uring::compat::sqe_flag::async);
    return o;
}

} // namespace ringo
