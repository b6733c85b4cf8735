// ringo/io/fixed_fd.hpp - FixedFd: an owned slot of a runtime's registered file table (a
// "direct descriptor"), emptied when it goes.
#pragma once

#include <atomic>
#include <cerrno>
#include <coroutine>
#include <memory>
#include <utility>

#include <ringo/core/join_handle.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/direct.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/path.hpp>

namespace ringo {

namespace detail {
// Empties a slot from a task on the slot's runtime: for a FixedFd dropped on another thread.
inline Task<void> empty_slot(unsigned slot) { (void)co_await op::close(op::Fixed{slot}); }
} // namespace detail

/// A slot of a runtime's registered file table that this object owns: the registered
/// counterpart of Fd. Operations name it as `op::Fixed{slot}` (it converts to op::FileRef),
/// which spares the kernel the descriptor lookup and reference count of every operation.
///
/// When it goes, the slot is emptied (IORING_OP_CLOSE on the slot, 5.15), on every path:
///   - on the runtime's thread, through an unawaited close with the next batch of submissions
///     (no system call of its own), in a cancelled task too;
///   - on another thread, by a small task spawned onto the runtime;
///   - while the runtime is being destroyed, not at all: the table goes with the ring.
/// A FixedFd must not outlive its runtime (nor its table, which is the runtime's).
///
///     auto f = co_await ringo::FixedFd::install(std::move(fd)); // Result<FixedFd>
///     if (f) co_await ringo::op::recv(*f, buf, n);              // IOSQE_FIXED_FILE
///
/// The runtime needs a registered file table with a free slot: `op::FileTable t(rt);
/// t.register_sparse(n);` first. install() lets the kernel pick the slot.
class FixedFd {
public:
    FixedFd() noexcept = default;
    /// Takes ownership of slot `slot` of `rt`'s registered file table.
    FixedFd(Runtime& rt, unsigned slot) noexcept
        : rt_(&rt), alive_(detail::RuntimeAccess::liveness(rt)), slot_(static_cast<int>(slot)) {}
    /// Takes `o`'s slot over; `o` owns none.
    FixedFd(FixedFd&& o) noexcept : rt_(o.rt_), alive_(std::move(o.alive_)), slot_(std::exchange(o.slot_, -1)) {}
    /// Empties the slot it owns (as reset() does), then takes `o`'s over.
    FixedFd& operator=(FixedFd&& o) noexcept {
        if (this != &o) {
            reset();
            rt_ = o.rt_;
            alive_ = std::move(o.alive_);
            slot_ = std::exchange(o.slot_, -1);
        }
        return *this;
    }
    FixedFd(const FixedFd&) = delete;
    FixedFd& operator=(const FixedFd&) = delete;
    ~FixedFd() { reset(); }

    /// Moves `fd` into a free slot of the current runtime's registered file table
    /// (IORING_OP_FILES_UPDATE with the kernel picking the slot, 5.19), and closes `fd` (the
    /// slot holds its own reference to the file). ENXIO when the runtime has no registered
    /// table, ENFILE when every slot is taken, EBADF for an invalid `fd`. On an error `fd` is
    /// closed all the same.
    static Task<Result<FixedFd>> install(Fd fd) {
        Runtime& rt = *Runtime::current(); // a Task runs on a runtime
        if (!fd)
            co_return errno_code(EBADF);
        int slot = fd.get();
        int r = co_await op::files_update(&slot, 1, op::alloc_slot);
        if (r < 0)
            co_return errno_code(r);
        if (r == 0) // nothing updated: no free slot
            co_return errno_code(ENFILE);
        co_return FixedFd(rt, static_cast<unsigned>(slot));
    }

    /// The slot, or -1 when it owns none.
    [[nodiscard]] int slot() const noexcept { return slot_; }
    /// True when it owns a slot.
    [[nodiscard]] bool valid() const noexcept { return slot_ >= 0; }
    /// valid().
    explicit operator bool() const noexcept { return slot_ >= 0; }
    /// What operations take: `op::Fixed{slot}` (an empty FixedFd names descriptor -1: EBADF).
    operator op::FileRef() const noexcept { // NOLINT: pass it to any operation
        return slot_ >= 0 ? op::FileRef(op::Fixed{static_cast<unsigned>(slot_)}) : op::FileRef(-1);
    }
    /// The runtime whose table holds the slot (null when it owns none).
    [[nodiscard]] Runtime* runtime() const noexcept { return slot_ >= 0 ? rt_ : nullptr; }

    /// Gives the slot up without emptying it: the caller owns it now.
    [[nodiscard]] int release() noexcept { return std::exchange(slot_, -1); }
    /// Empties the slot it owns (as the destructor does) and owns none.
    void reset() noexcept {
        int s = std::exchange(slot_, -1);
        // A runtime shutting down or gone (a frame destroyed by its handle after the runtime)
        // takes its table with it: nothing to empty, and the runtime is not to be touched.
        if (s < 0 || !alive_->load(std::memory_order_acquire))
            return;
        if (rt_->on_owner_thread()) {
            try {
                if (io_uring_sqe* sqe = detail::RuntimeAccess::unawaited_sqe(*rt_)) {
                    io_uring_prep_close_direct(sqe, static_cast<unsigned>(s));
                    sqe->user_data = 0; // nobody awaits it: its CQE is dropped
                    return;
                }
            } catch (...) { // the kernel refused to take a full SQ: a task will do it
            }
        }
        try {
            ringo::spawn(*rt_, detail::empty_slot(static_cast<unsigned>(s))).detach();
        } catch (...) { // no memory for the task's frame: the slot stays taken until the table goes
        }
    }

    /// Empties the slot now and reports the result: 0 or -errno (EBADF when it owns none). A
    /// release operation: it runs in a cancelled task too, and is not interrupted. Await it on
    /// the FixedFd's own runtime (slots are per ring: elsewhere it would empty that ring's
    /// slot of the same number); to let go from anywhere, reset() or drop it.
    op::Close close() noexcept {
        int s = std::exchange(slot_, -1);
        return s >= 0 ? op::close(op::Fixed{static_cast<unsigned>(s)}) : op::close(-1);
    }

private:
    Runtime* rt_ = nullptr;
    std::shared_ptr<const std::atomic<bool>> alive_; // the runtime's liveness (see reset)
    int slot_ = -1;
};

} // namespace ringo
