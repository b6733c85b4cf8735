// ringo/core/detail/io_engine.hpp - a Runtime's engine: its ring (io_uring, or the epoll
// engine behind the same queues) and the accounting of the operations in flight on it.
#pragma once

#include <cstdint>

#include <ringo/core/detail/completion.hpp>
#include <ringo/uring/ring.hpp>

namespace ringo {
class Runtime;
}

namespace ringo::detail {

/// Where operations go: SQEs are taken here and prepared by the operations; the Runtime's
/// loop submits them and reads the completions (Runtime::route, the one place that decodes
/// them). Owner thread only. Which engine serves the ring is chosen once, when the ring is
/// set up (uring::Ring): the calls below are the same on both.
class IoEngine {
public:
    IoEngine(Runtime& rt, const uring::RingParams& params) : ring(params), rt_(rt) {}

    /// A free SQE; when the SQ is full it first submits what is gathered. Never null.
    io_uring_sqe* get_sqe() {
        io_uring_sqe* s = ring.get_sqe();
        if (!s) [[unlikely]]
            s = get_sqe_slow();
        return s;
    }
    /// Makes room for `n` SQEs (n <= SQ size), submitting what is gathered if needed, so a
    /// group of SQEs prepared next goes to the kernel in one submission.
    void reserve_sqes(unsigned n) {
        while (ring.sq_space() < n)
            [[unlikely]] make_sq_room();
    }
    /// Book-keeping for an awaited operation whose SQE was just prepared.
    void op_started() noexcept { ++in_flight; }
    void ops_started(std::uint32_t n) noexcept { in_flight += n; }
    /// Book-keeping for an operation completed through a ringo::Completion (its last CQE).
    void op_finished() noexcept { --in_flight; }
    /// Submits IORING_OP_ASYNC_CANCEL for the operation whose SQE carried `user_data`, tag
    /// bits included. The operation's own CQE still arrives and resumes its awaiter.
    void cancel_op(std::uint64_t user_data) noexcept {
        try {
            io_uring_sqe* sqe = get_sqe();
            io_uring_prep_cancel64(sqe, user_data, 0);
            sqe->user_data = 0;
        } catch (...) {
            // The SQ could not take the cancel (the ring failed): the operation completes
            // on its own.
        }
    }
    /// cancel_op for a plain awaited operation (its user_data is its OpState's address).
    void cancel_op(const OpState* op) noexcept { cancel_op(reinterpret_cast<std::uint64_t>(op)); }
    /// The SQ is full: hands it to the kernel, reaping (without resuming anything) when the
    /// kernel pushes back. Throws std::system_error when io_uring_enter fails otherwise.
    void make_sq_room();

    uring::Ring ring;
    std::uint32_t in_flight = 0;       // awaited operations whose last CQE has not arrived
    std::uint64_t cqes = 0;            // CQEs the loop routed
    std::uint64_t completed_alone = 0; // CQEs Runtime::start_op took itself
    std::uint64_t backpressure = 0;    // see RuntimeStats::backpressure_events
    bool wants_events = false;         // completions need an enter with GETEVENTS (DEFER_TASKRUN, IOPOLL)
    bool unawaited_queued = false;     // an SQE nobody awaits was queued: block_on submits before it returns

private:
    io_uring_sqe* get_sqe_slow();
    Runtime& rt_; // whose loop routes what make_sq_room reaps
};

} // namespace ringo::detail
