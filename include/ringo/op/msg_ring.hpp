// ringo/op/msg_ring.hpp - messages and registered files sent from one ring to another.
//
// IORING_OP_MSG_RING posts a CQE on another ring (the target). ringo's target runtime
// dispatches that CQE like any other by its user_data, so the sender must choose a
// user_data the target understands:
//   - 0: the target ignores the CQE (Runtime::dispatch skips user_data 0); use it for a
//     bare wake-up, or to pass a file the target finds in its table by slot;
//   - a Mailbox's user_data(): the Mailbox, living on the target runtime, queues the
//     message and wakes the task waiting in receive().
// Never send another value: the target would treat it as the address of an operation.
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// A message queue on a runtime that other rings post to with msg_ring / msg_ring_fd.
/// Create it on (and use it from) the receiving runtime's thread; only user_data() and
/// ring_fd() may be read from other threads. It must outlive every message sent to it.
class Mailbox : private ringo::Completion {
public:
    /// One message: what the sender's MSG_RING put in the CQE.
    struct Message {
        int value;           ///< the CQE's res: msg_ring's `value`, or msg_ring_fd's slot / -errno
        std::uint32_t flags; ///< the CQE's flags (msg_ring's `cqe_flags` when passed)
    };

    /// A mailbox of `capacity` messages (allocated once, here) on runtime `rt`.
    explicit Mailbox(Runtime& rt, std::size_t capacity = 64)
        : ring_fd_(rt.ring_fd()), cap_(capacity ? capacity : 1), buf_(new Message[cap_]) {
        fn = &on_cqe;
    }
    Mailbox(const Mailbox&) = delete;
    Mailbox& operator=(const Mailbox&) = delete;

    /// The user_data to post with, so that the message lands here.
    [[nodiscard]] std::uint64_t user_data() const noexcept {
        return reinterpret_cast<std::uint64_t>(static_cast<const ringo::Completion*>(this)) |
               ringo::detail::tag_completion;
    }
    /// The receiving ring's fd (the `fd` of msg_ring).
    [[nodiscard]] int ring_fd() const noexcept { return ring_fd_; }
    /// Messages queued and not yet received.
    [[nodiscard]] std::size_t pending() const noexcept { return count_; }
    /// Messages that arrived while the mailbox was full (they are lost).
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }

    /// Takes the oldest message, if any.
    bool try_receive(Message& out) noexcept {
        if (!count_)
            return false;
        out = buf_[head_];
        head_ = (head_ + 1) % cap_;
        --count_;
        return true;
    }

    /// Awaitable: the oldest message, waiting for one if none is queued. One receiver at a
    /// time (a second gets {-EBUSY, 0}); a cancelled receiver gets {-ECANCELED, 0}.
    struct Receive : ringo::detail::Waitable {
        Mailbox* box;                            ///< the mailbox received from
        Message msg{0, 0};                       ///< the message, once received
        ringo::detail::CancelCtx* ctx = nullptr; ///< the waiting task's cancellation context
        /// A receive from `b` (Mailbox::receive makes one).
        explicit Receive(Mailbox* b) noexcept : box(b) { cancel_fn = &cancel; }
        /// Ready when a message is queued (it is taken here).
        bool await_ready() noexcept { return box->try_receive(msg); }
        /// Waits for a message; refuses at once in a cancelled task ({-ECANCELED, 0}) or when
        /// another receiver waits ({-EBUSY, 0}).
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) noexcept {
            ctx = ringo::detail::ctx_of(h);
            if (ctx && ctx->cancelled) {
                msg = {-ECANCELED, 0};
                return false;
            }
            if (box->waiter_) {
                msg = {-EBUSY, 0};
                return false;
            }
            box->waiter_ = this;
            box->waiter_h_ = h;
            box->rt_ = ringo::detail::t_current;
            if (ctx)
                ctx->waiting = this;
            return true;
        }
        /// The message, or {-errno, 0} (see the class).
        Message await_resume() noexcept {
            if (ctx)
                ctx->waiting = nullptr;
            return msg;
        }
        /// Ends the wait of a cancelled receiver with {-ECANCELED, 0}.
        static void cancel(ringo::detail::Waitable* self) noexcept {
            auto* r = static_cast<Receive*>(self);
            Mailbox* b = r->box;
            if (b->waiter_ != r)
                return;
            r->msg = {-ECANCELED, 0};
            b->waiter_ = nullptr;
            if (b->rt_)
                b->rt_->schedule(std::exchange(b->waiter_h_, {}));
        }
    };
    /// Awaitable: the oldest message, waiting for one (see Receive).
    [[nodiscard]] Receive receive() noexcept { return Receive{this}; }

private:
    static void on_cqe(ringo::Completion* c, int res, std::uint32_t flags) {
        auto* b = static_cast<Mailbox*>(c);
        if (Receive* r = b->waiter_) {
            r->msg = {res, flags};
            b->waiter_ = nullptr;
            b->rt_->schedule(std::exchange(b->waiter_h_, {}));
            return;
        }
        if (b->count_ == b->cap_) {
            ++b->dropped_;
            return;
        }
        b->buf_[(b->head_ + b->count_) % b->cap_] = {res, flags};
        ++b->count_;
    }

    int ring_fd_;
    std::size_t cap_;
    std::unique_ptr<Message[]> buf_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    std::uint64_t dropped_ = 0;
    Receive* waiter_ = nullptr;
    std::coroutine_handle<> waiter_h_{};
    Runtime* rt_ = nullptr;
};

/// IORING_OP_MSG_RING with IORING_MSG_DATA (5.18): posts a CQE with res = `value` and the
/// given user_data on the ring `ring_fd` (another runtime's ring_fd(); the kernel refuses to
/// register a ring fd in a file table, so it is a plain fd). With `cqe_flags` != 0 those become the target CQE's flags
/// (IORING_MSG_RING_FLAGS_PASS, 6.3). The result is 0, or -errno (-EBADFD: not a ring,
/// -EBADF: closed fd, -EOVERFLOW: the target's CQ is full).
struct [[nodiscard]] MsgRing : Op<MsgRing> {
    /// The opcode submitted: IORING_OP_MSG_RING.
    static constexpr std::uint8_t opcode = uring::compat::opcode::msg_ring;
    /// Keeps the arguments for prepare(); op::msg_ring() makes one.
    MsgRing(FileRef ring, std::uint32_t value, std::uint64_t user_data, std::uint32_t cqe_flags) noexcept
        : ring_(ring), value_(value), ud_(user_data), cqe_flags_(cqe_flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, ring_.raw(), uring::compat::msg_ring::cmd_data, value_, ud_);
        if (cqe_flags_) {
            s->msg_ring_flags = uring::compat::msg_ring::flags_pass;
            s->file_index = cqe_flags_;
        }
        ring_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef ring_;
    std::uint32_t value_;
    std::uint64_t ud_;
    std::uint32_t cqe_flags_;
    ///@}
};
inline MsgRing msg_ring(FileRef ring_fd, std::uint32_t value, std::uint64_t user_data,
                        std::uint32_t cqe_flags = 0) noexcept {
    return {ring_fd, value, user_data, cqe_flags};
}
/// Posts `value` to `box` (on whichever runtime owns it).
inline MsgRing msg_ring(const Mailbox& box, std::uint32_t value, std::uint32_t cqe_flags = 0) noexcept {
    return {box.ring_fd(), value, box.user_data(), cqe_flags};
}

/// IORING_OP_MSG_RING with IORING_MSG_SEND_FD (6.0): installs registered file `src_slot` of
/// this runtime's table into slot `dst_slot` (or a free one with op::alloc_slot) of the
/// target ring's table, and posts a CQE there with the given user_data and res = the slot
/// chosen with alloc_slot (0 for a given slot). The result here is the same value, or -errno
/// (-EBADF: empty source slot, -EINVAL: target is this ring, -ENFILE: no free target slot,
/// -ENXIO: the target has no table). With `skip_target_cqe` the target gets no CQE.
struct [[nodiscard]] MsgRingFd : Op<MsgRingFd> {
    /// The opcode submitted: IORING_OP_MSG_RING.
    static constexpr std::uint8_t opcode = uring::compat::opcode::msg_ring;
    /// Keeps the arguments for prepare(); op::msg_ring_fd() makes one.
    MsgRingFd(FileRef ring, unsigned src, unsigned dst, std::uint64_t user_data, bool skip) noexcept
        : ring_(ring), src_(src), dst_(dst), ud_(user_data), skip_(skip) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, ring_.raw(), uring::compat::msg_ring::cmd_send_fd, 0, ud_);
        s->addr3 = src_;
        uring::compat::sqe_field::target_slot(s, dst_);
        if (skip_)
            s->msg_ring_flags = uring::compat::msg_ring::cqe_skip;
        ring_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef ring_;
    unsigned src_, dst_;
    std::uint64_t ud_;
    bool skip_;
    ///@}
};
inline MsgRingFd msg_ring_fd(FileRef ring_fd, unsigned src_slot, unsigned dst_slot, std::uint64_t user_data = 0,
                             bool skip_target_cqe = false) noexcept {
    return {ring_fd, src_slot, dst_slot, user_data, skip_target_cqe};
}
/// Sends registered file `src_slot` to `box`'s runtime; its receive() yields the slot.
inline MsgRingFd msg_ring_fd(const Mailbox& box, unsigned src_slot, unsigned dst_slot = alloc_slot) noexcept {
    return {box.ring_fd(), src_slot, dst_slot, box.user_data(), false};
}

} // namespace ringo::op
