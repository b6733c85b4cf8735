// ringo/io/detail/exact.hpp - the awaitable behind every read_exact / write_all of the I/O layer.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/io/detail/fail_note.hpp>
#include <ringo/io/error.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/base.hpp>

namespace ringo::detail {

/// Moves `len` bytes in steps, awaited directly: no coroutine frame, no allocation. `step(done)`
/// (`done`: the bytes moved so far) makes the op:: operation of the next step (op::recv,
/// op::send, op::read, op::write: a count, or -errno), which is prepared straight into an
/// SQE; after a short step the next one goes to the kernel from the completion itself
/// (detail::RepeatOp), and the awaiting coroutine resumes once, when all `len` bytes have
/// moved or a step failed. A step that moves nothing is `on_zero` (IoError::unexpected_eof
/// for reads, write_zero for writes). A task that runs alone waits for each step in
/// await_suspend, as a single operation does (Runtime::start_op).
///
/// Cancelling the task interrupts the step in flight (ASYNC_CANCEL) and no further step
/// starts: the await yields ECANCELED (the bytes moved so far stay moved). So does a
/// runtime that shuts down meanwhile. Without a runtime: ENXIO; a kernel without the
/// step's opcode: EOPNOTSUPP. The awaitable may be moved before it is awaited (with_timeout
/// and the combinators take it by value), not while it is awaited.
///
///     auto read_exact(void* buf, std::size_t len) {
///         auto* p = static_cast<std::byte*>(buf);
///         return detail::ExactAwait(
///             [this, p, len](std::size_t done) { return op::recv(fd_, p + done, len - done, 0); },
///             len, IoError::unexpected_eof, FailNote<what::read>{});
///     }
///
/// `Note` (a FailNote) says what failed; the note is made only then, out of line.
template <class Step, class Note = FailNote<>>
class [[nodiscard]] ExactAwait : private RepeatOp {
    using StepOp = std::invoke_result_t<Step&, std::size_t>;
    static_assert(StepOp::errno_result && !OperationWithFallback<StepOp> &&
                      !std::is_base_of_v<DescriptorResult, StepOp>,
                  "ringo::detail::ExactAwait: a step is an op:: operation yielding a count");

public:
    /// `Note` says what failed, for the error's note (a type: nothing is stored).
    ExactAwait(Step step, std::size_t len, IoError on_zero,
               Note = {}) noexcept(std::is_nothrow_move_constructible_v<Step>)
        : step_(std::move(step)), len_(len), on_zero_(on_zero) {
        init();
    }
    // Before the await only (an awaitable being awaited is never moved).
    ExactAwait(ExactAwait&& o) noexcept(std::is_nothrow_move_constructible_v<Step>)
        : step_(std::move(o.step_)), len_(o.len_), on_zero_(o.on_zero_) {
        init();
    }
    ExactAwait& operator=(ExactAwait&&) = delete;

    bool await_ready() const noexcept { return len_ == 0; }
    // Inlined into the awaiting coroutine, as Op::await_suspend is: the hot path.
    template <class P>
    [[gnu::always_inline]] bool await_suspend(std::coroutine_handle<P> h) {
        Runtime* rt = t_current;
        ctx_ = ctx_of_or_dummy(h);
        if (!rt || ctx_->cancelled) [[unlikely]] {
            res = !rt ? -ENXIO : -ECANCELED;
            return false;
        }
        this->h = h;
        ctx_->waiting = this;
        try {
            for (;;) {
                if (!prepare_next(*rt)) [[unlikely]]
                    return false;
                if (RuntimeAccess::start_op(*rt, this, user_data()))
                    return true;
                if (!took_more(res)) // it completed alone: the next step, or done
                    return false;
            }
        } catch (...) { // the SQ could not take a step (the ring failed): nothing in flight
            ctx_->waiting = nullptr;
            throw;
        }
    }
    Result<void> await_resume() noexcept {
        if (ctx_)
            ctx_->waiting = nullptr;
        if (done_ == len_)
            return {};
        return failed();
    }

private:
    // The error (a step's -errno, or on_zero_ for a step that moved nothing) and its note:
    // out of line, so that await_resume stays small enough to be inlined.
    [[gnu::cold, gnu::noinline]] Result<void> failed() noexcept {
        ErrorNote note = Note::make(step_(done_));
        if (res < 0)
            return Result<void>(errno_code(res), std::move(note));
        return Result<void>(make_error_code(on_zero_), std::move(note));
    }
    void init() noexcept {
        cancel_fn = &cancel_self; // (res is set by await_suspend before anything reads it)
        again = &again_after;
    }
    [[nodiscard]] std::uint64_t user_data() const noexcept {
        return reinterpret_cast<std::uint64_t>(static_cast<const OpState*>(this)) | tag_repeat;
    }
    // The next step's SQE; false (res set) when the kernel lacks its opcode.
    bool prepare_next(Runtime& rt) {
        if (!rt.supports(StepOp::opcode)) [[unlikely]] {
            res = -EOPNOTSUPP;
            return false;
        }
        io_uring_sqe* sqe = ringo::detail::RuntimeAccess::engine(rt).get_sqe();
        step_(done_).prepare(sqe);
        sqe->user_data = user_data();
        // A full SQ makes get_sqe submit and reap, and what it reaps may cancel this task
        // (a request from another thread): its ASYNC_CANCEL then went first and found
        // nothing. One more, behind this SQE, interrupts the step.
        if (ctx_->cancelled) [[unlikely]]
            cancel_self(this);
        return true;
    }
    // A step's result `r`: true when another step is to go.
    bool took_more(int r) noexcept {
        if (r <= 0)
            return false;
        done_ += static_cast<std::size_t>(r);
        if (done_ >= len_)
            return false;
        if (ctx_->cancelled) [[unlikely]] {
            res = -ECANCELED;
            return false;
        }
        return true;
    }
    // From the runtime, at a step's CQE: prepare the next step (true) or resume (false).
    static bool again_after(RepeatOp* self, Runtime& rt) noexcept {
        auto* a = static_cast<ExactAwait*>(self);
        if (!a->took_more(a->res))
            return false;
        if (rt.shutting_down()) [[unlikely]] {
            a->res = -ECANCELED;
            return false;
        }
        try {
            return a->prepare_next(rt);
        } catch (...) { // the SQ could not take it (the ring failed)
            a->res = sqe_failure_result();
        }
        return false;
    }
    // Cancelling the task submits ASYNC_CANCEL for the step in flight; its CQE then resumes
    // the task (again_after starts no other step once the task is cancelled).
    [[gnu::noinline]] static void cancel_self(Waitable* self) noexcept {
        if (Runtime* rt = t_current)
            ringo::detail::RuntimeAccess::engine(*rt).cancel_op(
                static_cast<ExactAwait*>(static_cast<RepeatOp*>(static_cast<OpState*>(self)))->user_data());
    }

    Step step_;
    std::size_t len_;
    std::size_t done_ = 0;
    IoError on_zero_;
    CancelCtx* ctx_ = nullptr;
};

} // namespace ringo::detail
