// ringo/op/poll_stream.hpp - multishot poll as a stream of readiness masks.
//
//   auto ps = op::poll_stream(fd, POLLIN);
//   for (;;) {
//       int mask = co_await ps.next();   // POLLIN | ..., or -errno
//       if (mask < 0) break;
//       drain(fd);                       // edge-triggered: consume, or no new event comes
//   }
//
// One IORING_OP_POLL_ADD with IORING_POLL_ADD_MULTI (5.13) stays armed and posts one CQE per
// new readiness. Masks the reader has not taken are merged (OR), never queued: next() yields
// what became ready since the previous next().
#pragma once

#include <poll.h>

#include <cerrno>
#include <cstdint>

#include <ringo/op/base.hpp>
#include <ringo/op/detail/stream.hpp>
#include <ringo/op/multishot.hpp>
#include <ringo/op/stream.hpp>

namespace ringo::op {

class PollStream;
[[nodiscard]] inline PollStream poll_stream(FileRef fd, unsigned events);

namespace stream_impl {

struct PollNode : StreamNode<PollNode> {
    using Item = int;
    static constexpr bool cancel_ends = false; // a cancelled next() leaves the poll armed

    PollNode* pool_next = nullptr;
    FileRef fd{-1};
    unsigned events = 0;
    unsigned mask = 0;             // readiness not yet taken
    std::uint64_t events_seen = 0; // CQEs with a mask

    void prep(io_uring_sqe* s) noexcept { op::raw::prep_poll_multishot(s, fd, events); }
    bool take(int res, std::uint32_t) noexcept {
        if (res <= 0 || orphan)
            return false;
        mask |= static_cast<unsigned>(res);
        ++events_seen;
        return true;
    }
    void on_stop(int res) noexcept {
        if (res > 0)
            rearm(); // the kernel stopped the multishot (CQ pressure): still wanted
        else
            end(res < 0 ? res : -ECANCELED);
    }
    static int cancelled_end(int res) noexcept { return res < 0 ? res : -ECANCELED; }
    [[nodiscard]] bool has_items() const noexcept { return mask != 0; }
    int pop() noexcept {
        if (mask)
            return static_cast<int>(std::exchange(mask, 0u));
        return ended ? final_res : -EAGAIN;
    }
    static int error_item(int e) noexcept { return e; }
    void drop_items() noexcept { mask = 0; }
    static bool before_wait() noexcept { return true; }
};

} // namespace stream_impl

/// A multishot poll (op::poll_stream), consumed with `co_await next()`. Move-only; owner
/// thread of its runtime only. Destroying it cancels the poll.
///
/// next() yields the readiness mask (> 0) accumulated since the previous next(), waiting for
/// one when none is pending; or the end: -ECANCELED after cancel(), -errno when the kernel
/// ended the poll (-EBADF ...). A cancelled awaiting task resumes at once with -ECANCELED and
/// the poll stays armed. -EBUSY when another coroutine already waits, -ENXIO outside the
/// stream's runtime, -EBADF for a moved-from stream.
class PollStream : public MultishotStream<stream_impl::PollNode> {
public:
    PollStream() noexcept = default;
    /// CQEs that carried a mask so far (several may merge into one next()).
    [[nodiscard]] std::uint64_t events_seen() const noexcept { return n_ ? n_->events_seen : 0; }

private:
    friend PollStream poll_stream(FileRef, unsigned);
    explicit PollStream(stream_impl::PollNode* n) noexcept : MultishotStream(n) {}
};

/// Polls `fd` (plain or Fixed) for `events` (POLLIN, POLLOUT, POLLRDHUP ...) with one
/// multishot IORING_OP_POLL_ADD (5.13), as a stream of readiness masks. Edge-triggered: a new
/// CQE comes when the file becomes ready again, so consume what is ready. Armed here, on the
/// calling task's runtime (outside a runtime the stream is empty: next() yields -EBADF). A
/// poll the kernel stops while the stream is wanted (CQ pressure) is re-armed. Costs one SQE
/// now, one CQE per readiness, no allocation after the first stream of a thread; next() with
/// a mask pending takes no frame and no system call.
inline PollStream poll_stream(FileRef fd, unsigned events) {
    Runtime* rt = ringo::detail::t_current;
    if (!rt)
        return PollStream{};
    auto* n = stream_impl::PollNode::acquire(*rt);
    n->fd = fd;
    n->events = events;
    PollStream s(n);
    n->arm();
    return s;
}

} // namespace ringo::op
