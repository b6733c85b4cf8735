// ringo/compose/group.hpp - several operations submitted together and awaited as one.
//
// The engine under when_all of operations and link/hard_link: every operation's SQE goes
// into the SQ in one go (never split across two submissions), each CQE is counted, and the
// awaiting coroutine resumes once, after the last one. No coroutine frame per operation.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <ringo/compose/traits.hpp>

namespace ringo::detail {

struct GroupState;

struct GroupSlot : Completion {
    GroupState* group = nullptr;
    OpState* op = nullptr;
    bool done = false;
};

struct GroupState : Waitable {
    std::coroutine_handle<> h{};
    Runtime* rt = nullptr;
    CancelCtx* ctx = nullptr;
    GroupSlot* slots = nullptr;
    std::size_t n = 0;
    std::size_t remaining = 0;

    GroupState() noexcept { cancel_fn = &cancel_all; }

    static void on_cqe(Completion* c, int res, std::uint32_t flags) {
        auto* s = static_cast<GroupSlot*>(c);
        s->op->res = res;
        s->op->cqe_flags = flags;
        s->done = true;
        GroupState* g = s->group;
        g->rt->op_finished();
        if (--g->remaining == 0)
            g->rt->schedule(g->h);
    }
    static void cancel_all(Waitable* w) noexcept {
        auto* g = static_cast<GroupState*>(w);
        for (std::size_t i = 0; i < g->n; ++i)
            if (!g->slots[i].done)
                g->rt->cancel_op(reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(&g->slots[i]) | tag_completion));
    }

    /// Prepares and queues every operation; `link_flag` (IOSQE_IO_LINK / _HARDLINK or 0) goes
    /// on all but the last. Returns false (with every result set) when nothing was submitted.
    template <class P, class ForEach, class ForEachType>
    bool start(std::coroutine_handle<P> awaiting, std::uint8_t link_flag, ForEach&& for_each_op,
               ForEachType&& for_each_type) {
        rt = t_current;
        ctx = ctx_of(awaiting);
        int early = 0;
        if (!rt)
            early = -ENXIO;
        else if (ctx && ctx->cancelled)
            early = -ECANCELED;
        else if (n > rt->ring().sq_entries())
            early = -EINVAL; // a chain larger than the SQ cannot go in one submission
        if (early || n == 0) {
            for_each_op([&](auto& op) {
                op.res = early;
                op.cqe_flags = 0;
            });
            return false;
        }
        bool unsupported = false;
        for_each_type([&](auto* tag) {
            using O = std::remove_pointer_t<decltype(tag)>;
            if (!rt->supports(O::opcode))
                unsupported = true;
        });
        if (unsupported) {
            for_each_op([&](auto& op) {
                op.res = -EOPNOTSUPP;
                op.cqe_flags = 0;
            });
            return false;
        }
        // Room for the whole group in the SQ, so it is never split across two submissions;
        // then the SQEs are taken without further checks.
        rt->reserve_sqes(static_cast<unsigned>(n));
        uring::Ring& ring = rt->ring();
        std::size_t i = 0;
        for_each_op([&](auto& op) {
            GroupSlot& slot = slots[i];
            slot.fn = &on_cqe;
            slot.group = this;
            slot.op = &op;
            io_uring_sqe* sqe = ring.get_sqe_reserved();
            op.prepare(sqe);
            sqe->flags |= op.sqe_flags();
            if (link_flag && i + 1 < n)
                sqe->flags |= link_flag;
            sqe->user_data = reinterpret_cast<std::uint64_t>(static_cast<Completion*>(&slot)) | tag_completion;
            ++i;
        });
        rt->ops_started(static_cast<std::uint32_t>(n));
        remaining = n;
        h = awaiting;
        if (ctx)
            ctx->waiting = this;
        return true;
    }
    void finish() noexcept {
        if (ctx && ctx->waiting == this)
            ctx->waiting = nullptr;
    }
};

/// A fixed set of operations of any types, awaited together; yields std::tuple<int...>.
template <class... Ops>
class OpTuple : public GroupState {
public:
    explicit OpTuple(std::uint8_t link_flag, Ops... ops) : ops_(std::move(ops)...), link_(link_flag) {
        slots = slots_.data();
        n = sizeof...(Ops);
    }
    OpTuple(OpTuple&& o) noexcept : GroupState(), ops_(std::move(o.ops_)), link_(o.link_) {
        slots = slots_.data();
        n = sizeof...(Ops);
    }
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return start(
            h, link_, [&](auto&& f) { std::apply([&](auto&... op) { (f(op), ...); }, ops_); },
            [](auto&& f) { (f(static_cast<Ops*>(nullptr)), ...); });
    }
    std::tuple<decltype(std::declval<Ops&>().res)...> await_resume() noexcept {
        finish();
        return std::apply([](auto&... op) { return std::make_tuple(op.res...); }, ops_);
    }

private:
    std::tuple<Ops...> ops_;
    std::array<GroupSlot, sizeof...(Ops)> slots_{};
    std::uint8_t link_;
};

/// A run-time number of operations of one type, awaited together; yields std::vector<int>.
template <class Op>
class OpVector : public GroupState {
public:
    OpVector(std::uint8_t link_flag, std::vector<Op> ops) : ops_(std::move(ops)), slots_(ops_.size()), link_(link_flag) {
        slots = slots_.data();
        n = ops_.size();
    }
    OpVector(OpVector&& o) noexcept : GroupState(), ops_(std::move(o.ops_)), slots_(std::move(o.slots_)), link_(o.link_) {
        slots = slots_.data();
        n = ops_.size();
    }
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return start(
            h, link_,
            [&](auto&& f) {
                for (auto& op : ops_)
                    f(op);
            },
            [](auto&& f) { f(static_cast<Op*>(nullptr)); });
    }
    std::vector<int> await_resume() {
        finish();
        std::vector<int> r;
        r.reserve(ops_.size());
        for (auto& op : ops_)
            r.push_back(op.res);
        return r;
    }

private:
    std::vector<Op> ops_;
    std::vector<GroupSlot> slots_;
    std::uint8_t link_;
};

} // namespace ringo::detail
