// src/epoll/link_timeouts.cpp - IORING_OP_LINK_TIMEOUT on the epoll engine: a timeout that
// follows an SQE in its link (IOSQE_IO_LINK) and bounds it. It is checked as it joins its link
// (a bad one fails the whole link, which never starts), armed in the timer heap when the SQE
// before it starts, and then either
//   - the SQE ends first: the timeout leaves the heap with -ECANCELED, and the link goes on
//     after it (or is cancelled, when the SQE's result broke it);
//   - the deadline comes first: the SQE is cancelled as an ASYNC_CANCEL would cancel it (its
//     -ECANCELED, the rest of its link -ECANCELED), and the timeout ends with -ETIME, or with
//     what that cancel answered when it could not end the SQE at once (-EALREADY: a call
//     running on the pool, interrupted, which ends on its own).
// A cancel request does not find a link timeout (the kernel's looks for it in no list of its).
#include <cstddef>
#include <cstring>

#include "engine.hpp"

namespace ringo::uring::epoll {

namespace {

// Whether the kernel's preparation of zero-copy send `s` got past the checks it makes before
// it takes a notification (addr3 and the pad after it zero, no IOSQE_CQE_SKIP_SUCCESS): such a
// send, cancelled with its link, posts its notification after its -ECANCELED.
bool took_notif(const io_uring_sqe& s) noexcept {
    if (s.opcode != opc::send_zc && s.opcode != opc::sendmsg_zc)
        return false;
    std::uint64_t pad = 0;
    std::memcpy(&pad, reinterpret_cast<const unsigned char*>(&s) + offsetof(io_uring_sqe, addr3) + sizeof s.addr3,
                sizeof pad);
    return !s.addr3 && !pad && !(s.flags & compat::sqe_flag::cqe_skip_success);
}

} // namespace

// The kernel's checks of a link timeout's SQE, made at submission: its fields, its flags, its
// timespec, then that an SQE precedes it in a link and that this one is not a link timeout.
// Refused, the link ends without starting: the timeout with its error, the SQEs before it and
// after it with -ECANCELED (fail_link).
void Engine::link_timeout_prep(Pending* t) {
    const io_uring_sqe& s = t->sqe;
    __kernel_timespec ts{};
    int r = s.off ? -EINVAL : timeout_checks(s, ts); // (a link timeout counts no completions)
    if (r == 0 && (!link_tail || link_tail->sqe.opcode == opc::link_timeout))
        r = -EINVAL;
    if (r == 0) {
        t->period = ns_of(ts); // (read now, as the kernel reads it; the deadline counts from the arming)
        return;
    }
    t->res = r;
    t->prep_failed = true;
    (link_head ? link_head : t)->link_failed = true;
}

// begin's slow path, before `p` starts: a link refused at submission ends (true); a link
// timeout after `p` is armed (false: `p` starts).
bool Engine::link_timeout_start(Pending* p) {
    if (p->link_failed) {
        fail_link(p);
        return true;
    }
    Pending* t = p->chain;
    const __kernel_timespec ts{static_cast<long long>(t->period / 1'000'000'000u),
                               static_cast<long long>(t->period % 1'000'000'000u)};
    t->deadline = deadline_of(ts, t->sqe.timeout_flags);
    t->timed = p;
    t->state = State::timer;
    heap_push(t);
    return false;
}

// A link with an SQE refused at submission: each SQE's CQE, none started (the refused ones
// with their error, the others -ECANCELED; a zero-copy send's with its notification, which
// the kernel's preparation took), in the link's order.
void Engine::fail_link(Pending* head) {
    for (Pending* q = head; q;) {
        Pending* next = q->chain;
        if (!q->prep_failed && took_notif(q->sqe)) {
            q->notif_report = q->sqe.ioprio & compat::recvsend::send_zc_report_usage;
            post_zc(q, -ECANCELED);
        } else {
            post(q->sqe.user_data, q->prep_failed ? q->res : -ECANCELED, 0);
        }
        release(q);
        q = next;
    }
    if (drain_held != 0) // (links a drain holds)
        undrain();
}

// The SQE before armed link timeout `t` ended (finish_link; `broke`: its result cancels the
// rest of the link): the timeout leaves the heap. What follows in the link: the timeout itself
// when the rest is cancelled (its -ECANCELED with the others'), else what came after it, the
// timeout ended with -ECANCELED.
Engine::Pending* Engine::link_timeout_ended(Pending* t, bool broke) {
    heap_remove(t);
    t->state = State::held;
    t->timed = nullptr;
    if (broke)
        return t;
    Pending* after = t->chain;
    post(t->sqe.user_data, -ECANCELED, 0);
    release(t);
    return after;
}

// Link timeout `t`'s deadline came (out of the heap already) while the SQE it times runs: the
// timeout leaves the link, the SQE is cancelled, and the timeout ends with -ETIME (or with the
// cancel's answer when the SQE could not end at once).
void Engine::link_timeout_fired(Pending* t) {
    Pending* a = t->timed;
    t->timed = nullptr;
    a->chain = t->chain;
    t->chain = nullptr;
    const int r = cancel_one(a);
    finish(t, r == 0 ? -ETIME : r);
}

// IORING_OP_TIMEOUT_REMOVE with IORING_LINK_TIMEOUT_UPDATE: the armed link timeout of user_data
// `s.addr` counts again from now to `ts` (-ENOENT: none is armed).
int Engine::link_timeout_update(const io_uring_sqe& s, const __kernel_timespec& ts) {
    for (Pending* t = all; t; t = t->all_next)
        if (t->sqe.opcode == opc::link_timeout && t->state == State::timer && t->sqe.user_data == s.addr) {
            heap_remove(t);
            t->deadline = deadline_of(ts, s.timeout_flags);
            heap_push(t);
            return 0;
        }
    return -ENOENT;
}

} // namespace ringo::uring::epoll
