// ringo/op/send_zc.hpp - zero-copy sends: two completions per operation.
//
// A zero-copy send lends its buffer to the kernel. The kernel answers twice with the same
// user_data: first with the send's result (the coroutine resumes then), later with a
// notification (IORING_CQE_F_NOTIF) once no skb references the pages any more. Until that
// notification the buffer must not be reused or freed. A ZcTracker follows the buffers of
// the sends made with it: busy() says whether the kernel still holds one, released()
// waits until it holds none, and an optional callback runs at each release.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <utility>

#include <ringo/core/detail/node_pool.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

class ZcTracker;

namespace zc {

/// The state of one zero-copy send from submission to notification. It lives in a
/// per-thread pool rather than in the awaiting frame: the notification may arrive after
/// the awaiting coroutine has moved on (and after the tracker is gone), and the CQE's
/// user_data must stay valid until then. Nodes are recycled; steady state allocates nothing.
struct Node : ringo::Completion {
    Runtime* rt = nullptr;
    std::coroutine_handle<> sender{}; // the coroutine awaiting the first CQE
    int* res_out = nullptr;           // the awaitable's result fields, valid until the first CQE
    std::uint32_t* flags_out = nullptr;
    ZcTracker* owner = nullptr; // null once the tracker is destroyed
    Node* prev = nullptr;       // the tracker's list of buffers the kernel holds
    Node* next = nullptr;
    void (*on_release)(void* arg, int notif_res) = nullptr;
    void* arg = nullptr;
    int notif_res = 0;
    bool main_done = false;
    bool notif_done = false;
};

/// Nodes outlive the send (the kernel holds the buffer until the notification CQE).
using NodePool = ringo::detail::ThreadNodePool<Node, &Node::next>;
inline Node* acquire() { return NodePool::acquire(); }
inline void recycle(Node* n) noexcept { NodePool::recycle(n); }

inline void on_cqe(ringo::Completion* c, int res, std::uint32_t flags);

} // namespace zc

/// Follows the buffers lent to the kernel by zero-copy sends (send_zc, sendto_zc,
/// sendmsg_zc, send_zc_fixed). One tracker may follow any number of sends; it is busy from
/// the submission of the first until the notification of the last. Owner thread only.
///
/// Destroying a busy tracker is allowed: the sends carry on, their callbacks still run at
/// release, but nobody can wait for them any more. A Runtime's destructor waits for every
/// pending notification before it returns.
class ZcTracker {
public:
    ZcTracker() noexcept = default;
    /// `on_release(arg, notif_res)` runs on the runtime's thread once per send, when the
    /// kernel lets go of that send's buffer. `notif_res` is the notification's result
    /// (uring::compat::notif_usage_zc_copied is set in it when the kernel copied the data and
    /// the send asked for recvsend::send_zc_report_usage), or 0 when the send failed before
    /// the kernel took the buffer. It must not resume coroutines inline (schedule them).
    ZcTracker(void (*on_release)(void* arg, int notif_res), void* arg) noexcept : on_release_(on_release), arg_(arg) {}
    ZcTracker(const ZcTracker&) = delete;
    ZcTracker& operator=(const ZcTracker&) = delete;
    ~ZcTracker() {
        for (zc::Node* n = nodes_; n; n = n->next)
            n->owner = nullptr;
    }

    /// True while the kernel may still read a buffer of a send made with this tracker.
    [[nodiscard]] bool busy() const noexcept { return nodes_ != nullptr; }
    /// Sends whose buffer the kernel still holds.
    [[nodiscard]] unsigned pending() const noexcept { return pending_; }
    /// Sends whose buffer has been released so far.
    [[nodiscard]] std::uint64_t released_count() const noexcept { return released_; }
    /// True if some notification reported that the kernel copied the data (loopback does;
    /// needs recvsend::send_zc_report_usage).
    [[nodiscard]] bool copied() const noexcept { return copied_; }

    /// Awaitable: resumes once no buffer of this tracker is held (at once when none is).
    /// One waiter at a time. Cancelling the waiting task does not end this wait early: a
    /// notification cannot be cancelled, and the buffer is not free before it.
    struct ReleasedAwaiter {
        ZcTracker* t; ///< the tracker waited for
        /// Ready when no buffer is held.
        bool await_ready() const noexcept { return !t->busy(); }
        /// Waits for the last notification.
        void await_suspend(std::coroutine_handle<> h) noexcept { t->waiter_ = h; }
        /// Nothing: the buffers are free.
        void await_resume() const noexcept {}
    };
    /// Waits until no buffer of this tracker is held: `co_await tracker.released()`.
    [[nodiscard]] ReleasedAwaiter released() noexcept { return {this}; }

private:
    friend void zc::on_cqe(ringo::Completion*, int, std::uint32_t);
    template <class D>
    friend class ZcOp;

    void attach(zc::Node* n) noexcept {
        n->owner = this;
        n->on_release = on_release_;
        n->arg = arg_;
        n->prev = nullptr;
        n->next = nodes_;
        if (nodes_)
            nodes_->prev = n;
        nodes_ = n;
        ++pending_;
    }
    void detach(zc::Node* n, Runtime* rt) noexcept {
        if (n->prev)
            n->prev->next = n->next;
        else
            nodes_ = n->next;
        if (n->next)
            n->next->prev = n->prev;
        --pending_;
        ++released_;
        if (static_cast<std::uint32_t>(n->notif_res) & uring::compat::notif_usage_zc_copied)
            copied_ = true;
        if (!nodes_ && waiter_)
            rt->schedule(std::exchange(waiter_, {}));
    }

    zc::Node* nodes_ = nullptr;
    unsigned pending_ = 0;
    std::uint64_t released_ = 0;
    bool copied_ = false;
    std::coroutine_handle<> waiter_{};
    void (*on_release_)(void*, int) = nullptr;
    void* arg_ = nullptr;
};

namespace zc {
// First CQE: store the result and schedule the sender. Notification (or a first CQE without
// IORING_CQE_F_MORE, which means none will follow): release the buffer. The two may arrive
// in either order.
inline void on_cqe(ringo::Completion* c, int res, std::uint32_t flags) {
    Node* n = static_cast<Node*>(c);
    Runtime* rt = n->rt;
    bool release = false;
    if (flags & uring::compat::cqe_f_notif) {
        n->notif_done = true;
        n->notif_res = res;
        release = n->main_done;
    } else {
        n->main_done = true;
        *n->res_out = res;
        *n->flags_out = flags;
        rt->schedule(std::exchange(n->sender, {}));
        release = n->notif_done || !(flags & uring::compat::cqe_f_more);
    }
    if (!release)
        return;
    ringo::detail::RuntimeAccess::engine(*rt).op_finished();
    if (ZcTracker* t = n->owner)
        t->detach(n, rt);
    auto fn = n->on_release;
    void* arg = n->arg;
    int nres = n->notif_res;
    recycle(n);
    if (fn)
        fn(arg, nres);
}
} // namespace zc

/// The awaitable of a zero-copy send. `co_await` yields the first CQE's result (bytes sent
/// or -errno) as soon as it arrives; the buffer stays lent to the kernel until the tracker
/// says it is released. Results without a runtime, for a cancelled task, and for an opcode
/// the kernel lacks are as for every operation (-ENXIO, -ECANCELED, -EOPNOTSUPP).
template <class Derived>
class [[nodiscard]] ZcOp : public SqeFlags<Derived> {
public:
    /// The result is the kernel's (a count or -errno), as for every operation.
    static constexpr bool errno_result = true;
    /// A send whose buffer `t` follows.
    explicit ZcOp(ZcTracker& t) noexcept : tracker_(&t) {}
    /// Never ready: the send is always submitted (or refused) in await_suspend.
    bool await_ready() const noexcept { return false; }
    /// Submits the send; false (nothing submitted) without a runtime, in a cancelled task,
    /// or for an opcode the kernel lacks.
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        Runtime* rt = ringo::detail::t_current;
        ringo::detail::CancelCtx* ctx = ringo::detail::ctx_of(h);
        if (!rt || (ctx && ctx->cancelled)) [[unlikely]] {
            res_ = rt ? -ECANCELED : -ENXIO;
            return false;
        }
        if (!rt->supports(Derived::opcode)) [[unlikely]] {
            res_ = -EOPNOTSUPP;
            return false;
        }
        zc::Node* n = zc::acquire();
        io_uring_sqe* sqe;
        try {
            sqe = ringo::detail::RuntimeAccess::engine(*rt).get_sqe();
        } catch (...) {
            zc::recycle(n);
            throw;
        }
        n->fn = &zc::on_cqe;
        n->rt = rt;
        n->sender = h;
        n->res_out = &res_;
        n->flags_out = &flags_;
        tracker_->attach(n);
        static_cast<Derived*>(this)->prepare(sqe);
        this->apply_sqe_flags(sqe);
        sqe->user_data =
            reinterpret_cast<std::uint64_t>(static_cast<ringo::Completion*>(n)) | ringo::detail::tag_completion;
        ringo::detail::RuntimeAccess::engine(*rt).op_started();
        if (ctx) {
            waitable_.user_data = sqe->user_data;
            ctx->waiting = &waitable_;
            ctx_ = ctx;
        }
        return true;
    }
    /// The first CQE's result: the bytes sent or -errno.
    int await_resume() const noexcept {
        if (ctx_)
            ctx_->waiting = nullptr;
        return res_;
    }
    /// The first CQE's flags (IORING_CQE_F_MORE when a notification follows).
    [[nodiscard]] std::uint32_t result_flags() const noexcept { return flags_; }

private:
    struct CancelWaitable : ringo::detail::Waitable {
        std::uint64_t user_data = 0;
        CancelWaitable() noexcept { cancel_fn = &cancel; }
        static void cancel(ringo::detail::Waitable* self) noexcept {
            if (Runtime* rt = ringo::detail::t_current)
                ringo::detail::RuntimeAccess::engine(*rt).cancel_op(static_cast<CancelWaitable*>(self)->user_data);
        }
    };
    ZcTracker* tracker_;
    int res_ = 0;
    std::uint32_t flags_ = 0;
    CancelWaitable waitable_;
    ringo::detail::CancelCtx* ctx_ = nullptr;
};

/// IORING_OP_SEND_ZC (6.0), like send(2) with the pages lent instead of copied: bytes sent
/// or -errno. `zc_flags` takes uring::compat::recvsend flags (send_zc_report_usage,
/// poll_first). Keep `buf` untouched until `tracker` releases it.
struct [[nodiscard]] SendZc : ZcOp<SendZc> {
    /// The opcode submitted: IORING_OP_SEND_ZC.
    static constexpr std::uint8_t opcode = uring::compat::opcode::send_zc;
    /// Keeps the arguments for prepare(); op::send_zc() makes one.
    SendZc(FileRef fd, const void* buf, std::size_t len, int flags, unsigned zc_flags, ZcTracker& t,
           const sockaddr* addr, socklen_t alen, int buf_index) noexcept
        : ZcOp(t), fd_(fd), buf_(buf), len_(len), flags_(flags), zc_flags_(zc_flags), addr_(addr), alen_(alen),
          buf_index_(buf_index) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        if (buf_index_ >= 0)
            io_uring_prep_send_zc_fixed(s, fd_.raw(), buf_, len_, flags_, zc_flags_, static_cast<unsigned>(buf_index_));
        else
            io_uring_prep_send_zc(s, fd_.raw(), buf_, len_, flags_, zc_flags_);
        if (addr_)
            io_uring_prep_send_set_addr(s, addr_, static_cast<std::uint16_t>(alen_));
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const void* buf_;
    std::size_t len_;
    int flags_;
    unsigned zc_flags_;
    const sockaddr* addr_;
    socklen_t alen_;
    int buf_index_;
    ///@}
};
inline SendZc send_zc(FileRef fd, const void* buf, std::size_t len, ZcTracker& tracker, int flags = 0,
                      unsigned zc_flags = 0) noexcept {
    return {fd, buf, len, flags, zc_flags, tracker, nullptr, 0, -1};
}
/// IORING_OP_SEND_ZC from registered buffer `buf_index` (6.0); [buf, buf+len) must lie in it.
inline SendZc send_zc_fixed(FileRef fd, const void* buf, std::size_t len, unsigned buf_index, ZcTracker& tracker,
                            int flags = 0, unsigned zc_flags = 0) noexcept {
    return {fd, buf, len, flags, zc_flags, tracker, nullptr, 0, static_cast<int>(buf_index)};
}
/// IORING_OP_SEND_ZC with a destination address (6.0), like sendto(2).
inline SendZc sendto_zc(FileRef fd, const void* buf, std::size_t len, int flags, const sockaddr* addr,
                        socklen_t addrlen, ZcTracker& tracker, unsigned zc_flags = 0) noexcept {
    return {fd, buf, len, flags, zc_flags, tracker, addr, addrlen, -1};
}

/// IORING_OP_SENDMSG_ZC (6.1), like sendmsg(2) with the pages lent: bytes sent or -errno.
/// The iovec buffers stay lent until `tracker` releases them.
struct [[nodiscard]] SendmsgZc : ZcOp<SendmsgZc> {
    /// The opcode submitted: IORING_OP_SENDMSG_ZC.
    static constexpr std::uint8_t opcode = uring::compat::opcode::sendmsg_zc;
    /// Keeps the arguments for prepare(); op::sendmsg_zc() makes one.
    SendmsgZc(FileRef fd, const msghdr* msg, unsigned flags, ZcTracker& t) noexcept
        : ZcOp(t), fd_(fd), msg_(msg), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_sendmsg_zc(s, fd_.raw(), msg_, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const msghdr* msg_;
    unsigned flags_;
    ///@}
};
inline SendmsgZc sendmsg_zc(FileRef fd, const msghdr* msg, ZcTracker& tracker, unsigned flags = 0) noexcept {
    return {fd, msg, flags, tracker};
}

} // namespace ringo::op
