// ringo/op/base.hpp - the awaitable every io_uring operation is built on.
#pragma once

#include <cerrno>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <unistd.h>

#include <ringo/core/runtime.hpp>
#include <ringo/uring/compat.hpp>

namespace ringo::detail {
/// Every IOSQE_* flag an operation awaitable carries comes in here (SqeFlags, and so
/// link(), drain() and the rest of the composition layer): flags that change how the whole
/// ring behaves are told to the runtime of this thread (IO_DRAIN holds back every later SQE
/// of the ring; see Inbox). Set such flags on the thread of the runtime that awaits the
/// operation. Out of the await path, which stays as short as it was.
inline std::uint8_t note_sqe_flags(std::uint8_t f) noexcept {
    if (f & uring::compat::sqe_flag::io_drain) [[unlikely]]
        if (Runtime* rt = t_current)
            RuntimeAccess::note_drain_used(*rt);
    return f;
}

/// An operation type with a synchronous fallback (see Op): `int fallback() noexcept` makes
/// the same call with the plain system call and returns what the CQE would (0 or a value, or
/// -errno).
template <class D>
concept OperationWithFallback = requires(D& d) {
    requires std::same_as<decltype(d.fallback()), int> && noexcept(d.fallback());
};
/// ... that also falls back after a completion: `bool fallback_on(int res) const noexcept`
/// says whether a result means the kernel could not do the call at all (a uring_cmd the
/// driver of an older kernel does not know answers -EOPNOTSUPP, which the probe cannot
/// foresee).
template <class D>
concept FallbackOnResult = OperationWithFallback<D> && requires(const D& d, int res) {
    requires std::same_as<decltype(d.fallback_on(res)), bool> && noexcept(d.fallback_on(res));
};

/// A plain system call's return value as a CQE would carry it: `r` when >= 0, else -errno.
inline int syscall_result(long r) noexcept { return r < 0 ? -errno : static_cast<int>(r); }
} // namespace ringo::detail

namespace ringo::detail {
/// An operation that releases something (a descriptor, a table slot, an operation in
/// flight) declares `static constexpr bool releases = true`: it runs in a task that has
/// been cancelled, and cancelling the task does not interrupt it, so cleanup code such as
/// `co_await op::close(fd)` does its job on every path out of a cancelled task.
template <class D>
concept ReleaseOperation = D::releases;

/// The state of an operation whose result, when >= 0, is a new descriptor that belongs to
/// whoever takes the result (accept, openat, socket, fixed_fd_install): `Op<D,
/// DescriptorResult>`. A descriptor that nobody took is closed when the operation goes, so
/// it cannot leak: an operation that completed while a runtime's shutdown cancelled
/// everything has its result set and its coroutine is never resumed (its frame is just
/// destroyed). Taking the result (the await, or a group of operations) hands the descriptor
/// over. A copy never carries one.
struct DescriptorResult : OpState {
    DescriptorResult() noexcept { res = -1; }
    DescriptorResult(const DescriptorResult& o) noexcept : OpState(o), closes_result(o.closes_result) { res = -1; }
    DescriptorResult& operator=(const DescriptorResult&) = delete;
    ~DescriptorResult() {
        if (closes_result && res >= 0)
            (void)::close(res);
    }
    bool closes_result = true; // false: the result is a table slot (a direct variant)
};

/// An operation's result as the awaiting code takes it (a group of operations reads its
/// members' results through this too): for a DescriptorResult, the descriptor is handed over.
template <class O>
int take_res(O& op) noexcept {
    if constexpr (std::is_base_of_v<DescriptorResult, O>) {
        int r = op.res;
        op.res = -1;
        return r;
    } else {
        return op.res;
    }
}
} // namespace ringo::detail

namespace ringo::op {

/// The largest byte count one read or write transfers (the kernel's MAX_RW_COUNT); longer
/// requests are clamped and report the shorter count, as read(2) does.
inline constexpr std::size_t max_rw_count = 0x7ffff000;

inline unsigned clamp_len(std::size_t n) noexcept { return static_cast<unsigned>(n > max_rw_count ? max_rw_count : n); }

/// The IOSQE_* flags an operation awaitable adds to its SQE (the composition layer sets
/// them: links, drain, async). Shared by Op and the zero-copy send's ZcOp.
template <class Derived>
class SqeFlags {
public:
    /// Adds IOSQE_* flags to the SQE.
    Derived& with_sqe_flags(std::uint8_t f) & noexcept {
        sqe_flags_ |= detail::note_sqe_flags(f);
        return static_cast<Derived&>(*this);
    }
    /// Adds IOSQE_* flags to the SQE of a temporary operation:
    /// `co_await op::read(...).with_sqe_flags(IOSQE_ASYNC)`.
    Derived&& with_sqe_flags(std::uint8_t f) && noexcept {
        sqe_flags_ |= detail::note_sqe_flags(f);
        return static_cast<Derived&&>(*this);
    }
    /// The IOSQE_* flags added so far.
    [[nodiscard]] std::uint8_t sqe_flags() const noexcept { return sqe_flags_; }

protected:
    /// ORs the flags into `sqe` (after the operation prepared it).
    void apply_sqe_flags(io_uring_sqe* sqe) const noexcept {
        if (sqe_flags_) [[unlikely]]
            sqe->flags |= sqe_flags_;
    }
    std::uint8_t sqe_flags_ = 0; ///< the IOSQE_* flags added
};

/// Base of every operation awaitable. `Derived` provides `static constexpr std::uint8_t
/// opcode` and `void prepare(io_uring_sqe*)`. The state lives in the awaitable itself,
/// which sits in the awaiting coroutine's frame: awaiting costs no heap allocation. It may be
/// copied or moved before it is awaited (with_timeout, when_all and when_any take it by
/// value), never once await_suspend has run: its address is the SQE's user_data from then on.
///
/// `co_await` yields the CQE's result exactly as the kernel reports it: a count or value
/// >= 0, or -errno. Without a runtime on the thread it yields -ENXIO; when the kernel's
/// probe lacks the opcode it yields -EOPNOTSUPP without submitting anything. In a task that
/// has been cancelled it yields -ECANCELED without submitting anything, and cancelling the
/// task interrupts it in flight (ASYNC_CANCEL), except for a release operation
/// (detail::ReleaseOperation: close, async_cancel), which always runs to its end.
///
/// Fallback: a type that provides `int fallback() noexcept` (detail::OperationWithFallback:
/// bind, listen, getsockopt, setsockopt) does not yield -EOPNOTSUPP when the probe lacks its
/// opcode: the await then runs fallback(), the same call made synchronously with the plain
/// system call, and yields its result (0 or a value, or -errno, as the CQE would) without
/// suspending. No runtime is still -ENXIO and a cancelled task still -ECANCELED. A type that
/// also provides `bool fallback_on(int res) const noexcept` (detail::FallbackOnResult) is
/// asked instead, for the probe's -EOPNOTSUPP and for its CQE's result alike, whether to fall
/// back: for commands whose support the probe cannot see (socket uring_cmds before 6.7 are
/// -EOPNOTSUPP from the kernel). The check is compiled only into such types: every other
/// operation's await is the same code as without it. Operations awaited in a group
/// (when_all, link) do not fall back: the group is refused as a whole.
/// [[nodiscard]] here does not pass to the derived types: every operation type carries it
/// itself (`struct [[nodiscard]] Close : Op<Close>`), so an operation created and dropped
/// without co_await warns (tests/tools/check_nodiscard.cmake checks a sample).
template <class Derived, class State = detail::OpState>
class [[nodiscard]] Op : public State, public SqeFlags<Derived> {
public:
    Op() noexcept { this->cancel_fn = &cancel_self; }

    /// Never ready: the operation is always submitted (or refused) in await_suspend.
    bool await_ready() const noexcept { return false; }
    /// Prepares the SQE and starts the operation; false (go on at once, nothing submitted)
    /// without a runtime, for an opcode the probe lacks, or in a cancelled task.
    // Always inlined into the awaiting coroutine: this is the hot path of every operation,
    // and a call here costs more than the work it does.
    template <class P>
    [[gnu::always_inline]] bool await_suspend(std::coroutine_handle<P> h) {
        Runtime* rt = detail::t_current;
        detail::CancelCtx* ctx = detail::ctx_of_or_dummy(h);
        if (!rt || !supported(rt) || (ctx->cancelled && !detail::ReleaseOperation<Derived>)) [[unlikely]]
            return refuse(rt, ctx);
        io_uring_sqe* sqe = ringo::detail::RuntimeAccess::engine(*rt).get_sqe();
        static_cast<Derived*>(this)->prepare(sqe);
        this->apply_sqe_flags(sqe);
        sqe->user_data = reinterpret_cast<std::uint64_t>(static_cast<detail::OpState*>(this));
        this->h = h;
        ctx_ = ctx;
        if constexpr (!detail::ReleaseOperation<Derived>)
            ctx->waiting = this; // what cancelling the task interrupts
        return detail::RuntimeAccess::start_op(*rt, this);
    }
    /// The CQE's result: a count or value >= 0, or -errno (see the class).
    int await_resume() noexcept {
        if constexpr (!detail::ReleaseOperation<Derived>)
            ctx_->waiting = nullptr;
        if constexpr (detail::FallbackOnResult<Derived>)
            if (static_cast<const Derived*>(this)->fallback_on(this->res)) [[unlikely]]
                return fall_back_after(); // the kernel could not do it (or the probe said so)
        return detail::take_res(*this);
    }

    /// The CQE flags of the completion (IORING_CQE_F_*), valid after the await.
    [[nodiscard]] std::uint32_t result_flags() const noexcept { return this->cqe_flags; }

private:
    // One rule for every path that submits (a single await, a group, raw::queue): the
    // probe is consulted for every opcode, so set_supported(op, false) hides any operation.
    static bool supported(const Runtime* rt) noexcept { return rt->supports(Derived::opcode); }
    // Nothing is submitted: no runtime (-ENXIO), an opcode the kernel lacks (-EOPNOTSUPP),
    // or a task already cancelled (-ECANCELED). The coroutine goes on at once.
    [[gnu::noinline]] bool refuse(Runtime* rt, detail::CancelCtx* ctx) noexcept {
        this->res = !rt ? -ENXIO : (ctx->cancelled && !detail::ReleaseOperation<Derived>) ? -ECANCELED : -EOPNOTSUPP;
        if constexpr (detail::OperationWithFallback<Derived> && !detail::FallbackOnResult<Derived>)
            if (this->res == -EOPNOTSUPP) // the probe lacks the opcode: the plain system call instead
                this->res = static_cast<Derived*>(this)->fallback();
        this->cqe_flags = 0;
        ctx_ = ctx;
        return false;
    }
    // A result fallback_on accepted: the plain system call's result instead, unless the task
    // has been cancelled meanwhile (nothing was done: -ECANCELED).
    [[gnu::noinline]] int fall_back_after() noexcept {
        this->res = ctx_->cancelled ? -ECANCELED : static_cast<Derived*>(this)->fallback();
        this->cqe_flags = 0;
        return detail::take_res(*this); // a descriptor goes to the caller, as from the CQE
    }
    // Cancelling the awaiting task submits ASYNC_CANCEL for this operation; the operation's
    // own CQE (-ECANCELED, or its result if it finished first) then resumes the task.
    static void cancel_self(detail::Waitable* self) noexcept {
        if (Runtime* rt = detail::t_current)
            ringo::detail::RuntimeAccess::engine(*rt).cancel_op(static_cast<detail::OpState*>(self));
    }
    detail::CancelCtx* ctx_; // set by await_suspend (never null after it)
};

/// A registered-file index (see Runtime/FileTable registration): pass `Fixed{i}` wherever an
/// operation takes a file descriptor to use the i-th registered file (IOSQE_FIXED_FILE).
struct Fixed {
    unsigned index; ///< the slot in the runtime's registered file table
};

/// A file an operation works on: a plain descriptor (`int`) or a registered one (`Fixed`).
class FileRef {
public:
    /// A plain descriptor.
    FileRef(int fd) noexcept : v_(fd), fixed_(false) {} // NOLINT
    /// A registered file: the slot `f.index`.
    FileRef(Fixed f) noexcept : v_(static_cast<int>(f.index)), fixed_(true) {} // NOLINT
    /// The descriptor, or the slot of a registered file: what goes in the SQE's fd field.
    [[nodiscard]] int raw() const noexcept { return v_; }
    /// True for a registered file (Fixed).
    [[nodiscard]] bool fixed() const noexcept { return fixed_; }
    /// Marks the prepared SQE as using a registered file when this is one.
    void apply(io_uring_sqe* s) const noexcept {
        if (fixed_)
            s->flags |= uring::compat::sqe_flag::fixed_file;
    }

private:
    int v_;
    bool fixed_;
};

/// Clears an SQE and sets the fields every operation has; for opcodes liburing 2.3 has no
/// helper for.
inline void prep_raw(io_uring_sqe* sqe, std::uint8_t opcode, int fd, std::uint64_t addr, std::uint32_t len,
                     std::uint64_t off) noexcept {
    __builtin_memset(sqe, 0, sizeof *sqe);
    sqe->opcode = opcode;
    sqe->fd = fd;
    sqe->addr = addr;
    sqe->len = len;
    sqe->off = off;
}

/// The user_data an awaited operation carries while it is in flight: what poll_remove,
/// poll_update, timeout_remove, timeout_update and async_cancel take to name it. Name the
/// awaitable (`auto t = op::timeout(1s); co_await t;`) to be able to take its address.
template <class D, class S>
[[nodiscard]] std::uint64_t user_data_of(const Op<D, S>& o) noexcept {
    return reinterpret_cast<std::uint64_t>(static_cast<const detail::OpState*>(&o));
}

} // namespace ringo::op
