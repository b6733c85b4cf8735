// ringo/op/detail/stream.hpp - the one mechanism behind every multishot stream (recv, read,
// recvmsg, bundles, poll, interval).
//
// A multishot operation posts many CQEs with one user_data, so its state cannot live in a
// coroutine frame or in the stream object the user holds: the kernel refers to it until the
// operation's final CQE, which may come after the stream object is gone. StreamNode<D> is that
// state, taken from a per-thread pool (no allocation after the first stream of a kind on a
// thread). It queues what the CQEs bring (the derived node decides how: buffers linked through
// their ring, a counter, an event mask), re-arms the operation when the kernel stops it while
// the stream is still wanted, cancels it (ASYNC_CANCEL) when the stream object is dropped
// while armed, and frees itself at the final CQE then.
//
// A derived node D provides:
//   D* pool_next;                          the pool's link
//   using Item = ...;                      what next() yields
//   static constexpr bool cancel_ends;     a cancelled reader cancels the operation (true) or
//                                          only stops waiting, with the stream left armed (false)
//   void prep(io_uring_sqe*);              fills the SQE of one arming
//   bool take(int res, unsigned flags);    one CQE's payload: queue it (true: something new to
//                                          read) or drop it (always when orphan)
//   void on_stop(int res);                 the final CQE of an uncancelled arming: re-arm, park
//                                          or end(res)
//   int cancelled_end(int res);            the end to report when a cancel stopped it
//   bool has_items(); Item pop(); static Item error_item(int); void drop_items();
//   bool before_wait();                    the reader is about to wait (false: do not, it ended)
//   void unpark() and release() may be redefined (buffer streams leave their ring's list).
#pragma once

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <utility>

#include <ringo/core/detail/node_pool.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/raw.hpp>

namespace ringo::op::stream_impl {

template <class D>
struct StreamNode : ringo::Completion {
    Runtime* rt = nullptr;
    std::coroutine_handle<> reader{}; // the coroutine waiting in next()
    int final_res = 0;
    bool armed = false;       // the operation is in the kernel (counted in ops_in_flight)
    bool cancel_sent = false; // ASYNC_CANCEL submitted for it
    bool ended = false;       // nothing more will be queued; final_res is the end
    bool orphan = false;      // the stream object is gone: free the node at the final CQE
    std::uint64_t rearms = 0;

    D& self() noexcept { return static_cast<D&>(*this); }

    static D* acquire(Runtime& rt) {
        D* n = ringo::detail::ThreadNodePool<D, &D::pool_next>::acquire();
        n->fn = &on_cqe;
        n->rt = &rt;
        return n;
    }
    void release() noexcept { ringo::detail::ThreadNodePool<D, &D::pool_next>::recycle(&self()); }
    void unpark() noexcept {}

    void wake_reader() noexcept {
        if (reader)
            rt->schedule(std::exchange(reader, {}));
    }
    void end(int res) noexcept {
        ended = true;
        final_res = res;
        wake_reader();
    }

    /// Queues one arming of the operation: true when armed, false when the stream ended
    /// (-EOPNOTSUPP: the probe lacks the opcode; -ECANCELED: the runtime is shutting down).
    bool arm() noexcept {
        if (rt->shutting_down()) {
            end(-ECANCELED);
            return false;
        }
        int r;
        try {
            r = op::raw::queue(*rt, *this, [this](io_uring_sqe* s) { self().prep(s); });
        } catch (...) {
            r = ringo::detail::sqe_failure_result(); // the ring could not take an SQE (it failed)
        }
        if (r < 0) {
            end(r);
            return false;
        }
        armed = true;
        return true;
    }
    /// Arms again after the kernel stopped the operation with the stream still wanted.
    bool rearm() noexcept {
        ++rearms;
        return arm();
    }

    /// Ends the stream: ASYNC_CANCEL for an armed operation (its final CQE ends the stream),
    /// at once otherwise. What was queued stays readable.
    void cancel() noexcept {
        if (ended)
            return;
        if (armed) {
            if (!cancel_sent) {
                cancel_sent = true;
                ringo::detail::RuntimeAccess::engine(*rt).cancel_op(op::raw::completion_user_data(*this));
            }
            return;
        }
        self().unpark();
        end(-ECANCELED);
    }

    /// The stream object goes: drop what is queued; the node goes now, or at the final CQE.
    void close() noexcept {
        orphan = true;
        reader = {}; // a coroutine still suspended in next() is being destroyed with the stream
        self().unpark();
        self().drop_items();
        if (armed) {
            cancel();
            return;
        }
        self().release();
    }

    static void on_cqe(ringo::Completion* c, int res, std::uint32_t flags) {
        D* n = static_cast<D*>(c);
        bool got = n->take(res, flags);
        if (op::has_more(flags)) {
            // A cancel can miss an operation that is between two shots (a multishot timeout
            // is off the kernel's list until its CQE is posted): cancel again.
            if (n->cancel_sent)
                ringo::detail::RuntimeAccess::engine(*n->rt).cancel_op(op::raw::completion_user_data(*n));
            if (got)
                n->wake_reader();
            return;
        }
        n->armed = false;
        ringo::detail::RuntimeAccess::engine(*n->rt).op_finished();
        if (n->orphan) {
            n->release();
            return;
        }
        if (n->cancel_sent)
            n->end(n->cancelled_end(res));
        else
            n->on_stop(res);
        if (got)
            n->wake_reader();
    }
};

} // namespace ringo::op::stream_impl
