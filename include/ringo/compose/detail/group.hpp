// ringo/compose/detail/group.hpp - several operations submitted together and awaited as one.
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

// Every operation of a group keeps its own OpState in the group (in the awaiting frame);
// its SQE's user_data is that OpState's address tagged tag_group_member, and its `h` holds
// the GroupHead. The runtime stores each CQE's result in the OpState and resumes the
// awaiting coroutine when the group's count reaches zero (Runtime::dispatch).
struct GroupState : GroupHead, Waitable {
    Runtime* rt = nullptr;
    CancelCtx* ctx = nullptr;
    std::size_t n = 0;
    // Calls f(OpState&) for each operation (set by the owner before start()).
    void (*for_each_state)(GroupState* self, void (*f)(GroupState*, OpState&)) = nullptr;

    GroupState() noexcept { cancel_fn = &cancel_all; }

    static std::uint64_t member_user_data(OpState& op) noexcept {
        return reinterpret_cast<std::uint64_t>(&op) | tag_group_member;
    }
    // Cancels every operation whose final CQE has not come yet (res still res_pending).
    static void cancel_all(Waitable* w) noexcept {
        auto* g = static_cast<GroupState*>(w);
        g->for_each_state(g, [](GroupState* self, OpState& op) {
            if (op.res == res_pending)
                ringo::detail::RuntimeAccess::engine(*self->rt).cancel_op(member_user_data(op));
        });
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
        else if (n > ringo::detail::RuntimeAccess::engine(*rt).ring.sq_entries())
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
        ringo::detail::RuntimeAccess::engine(*rt).reserve_sqes(static_cast<unsigned>(n));
        uring::Ring& ring = ringo::detail::RuntimeAccess::engine(*rt).ring;
        auto head = std::coroutine_handle<>::from_address(static_cast<GroupHead*>(this));
        std::size_t i = 0;
        for_each_op([&](auto& op) {
            io_uring_sqe* sqe = ring.get_sqe_reserved();
            op.prepare(sqe);
            std::uint8_t f = op.sqe_flags();
            if (link_flag && i + 1 < n)
                f |= link_flag;
            sqe->flags |= f;
            OpState& st = op;
            st.res = res_pending;
            st.h = head;
            sqe->user_data = member_user_data(st);
            ++i;
        });
        detail::RuntimeAccess::engine(*rt).ops_started(static_cast<std::uint32_t>(n));
        remaining = n;
        waiter = awaiting;
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
    explicit OpTuple(std::uint8_t link_flag, Ops... ops) : ops_(std::move(ops)...), link_(link_flag) { init(); }
    OpTuple(OpTuple&& o) noexcept : GroupState(), ops_(std::move(o.ops_)), link_(o.link_) { init(); }
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        return start(
            h, link_, [&](auto&& f) { std::apply([&](auto&... op) { (f(op), ...); }, ops_); },
            [](auto&& f) { (f(static_cast<Ops*>(nullptr)), ...); });
    }
    std::tuple<decltype(std::declval<Ops&>().res)...> await_resume() noexcept {
        finish();
        return std::apply([](auto&... op) { return std::make_tuple(take_res(op)...); }, ops_);
    }

private:
    void init() noexcept {
        n = sizeof...(Ops);
        for_each_state = [](GroupState* self, void (*f)(GroupState*, OpState&)) {
            std::apply([&](auto&... op) { (f(self, op), ...); }, static_cast<OpTuple*>(self)->ops_);
        };
    }
    std::tuple<Ops...> ops_;
    std::uint8_t link_;
};

/// A run-time number of operations of one type, awaited together; yields std::vector<int>.
template <class Op>
class OpVector : public GroupState {
public:
    OpVector(std::uint8_t link_flag, std::vector<Op> ops) : ops_(std::move(ops)), link_(link_flag) { init(); }
    OpVector(OpVector&& o) noexcept : GroupState(), ops_(std::move(o.ops_)), link_(o.link_) { init(); }
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
            r.push_back(take_res(op));
        return r;
    }

private:
    void init() noexcept {
        n = ops_.size();
        for_each_state = [](GroupState* self, void (*f)(GroupState*, OpState&)) {
            for (auto& op : static_cast<OpVector*>(self)->ops_)
                f(self, op);
        };
    }
    std::vector<Op> ops_;
    std::uint8_t link_;
};

} // namespace ringo::detail
