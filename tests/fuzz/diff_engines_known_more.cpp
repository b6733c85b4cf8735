// tests/fuzz/diff_engines_known_more.cpp - known differences of the opcodes the grammar drew
// last: link timeouts, zero-copy sends (the rest of the list is diff_engines_known.cpp, which
// ends with these).

#include "diff_engines_impl.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace diffeng {

namespace {

namespace sf = ringo::uring::compat::sqe_flag;

std::uint64_t num_of(const Val& v) { return v.kind == Val::Kind::num ? v.num : 0; }
bool linked(const Sqe& q) { return (num_of(q.f[f_flags]) & (sf::io_link | sf::io_hardlink)) != 0; }
bool one_of(int v, std::initializer_list<int> l) {
    for (int x : l)
        if (v == x)
            return true;
    return false;
}
bool zero_copy(const Sqe& q) { return q.opcode == opc::send_zc || q.opcode == opc::sendmsg_zc; }
bool same_result(const Diff& d, std::size_t k) {
    return k < d.all_uring.size() && k < d.all_epoll.size() && d.all_uring[k] == d.all_epoll[k];
}

// Whether side `uring` (else epoll) of a zero-copy send's difference has a notification
// whose result is `res` (the difference's text: "io_uring R[f2],N[f8] | epoll ...").
bool notif(const Diff& d, bool uring, int res) {
    const auto bar = d.what.find("| epoll ");
    if (bar == std::string::npos)
        return false;
    const std::string side = uring ? d.what.substr(0, bar) : d.what.substr(bar);
    return side.find("," + std::to_string(res) + "[f8]") != std::string::npos;
}
bool zc_diff(const Case& c, const Diff& d) {
    const Sqe* q = sqe_of(c, d);
    return q && zero_copy(*q) && d.kind != DiffKind::effect;
}

// Whether the deadline of link timeout `q` is due at once or nearly: a zero or 1 ms timespec,
// or an absolute one (CLOCK_MONOTONIC's 3600 s are past on a machine up for an hour).
bool due_at_once(const Case& c, const Sqe& q) {
    const Obj* ts = c.obj(q.f[f_addr]);
    return ts && ((num_of(q.f[f_opflags]) & 1) != 0 || (ts->num("sec") == 0 && ts->num("nsec") <= 1'000'000));
}

const std::vector<Known> more = {
    {"link-timeout-head-checks",
     "an SQE whose own submission checks fail, in a link with a link timeout the kernel refuses: io_uring's keeps "
     "its own error (its checks ran as it was submitted), the engine's is cancelled with the link (its checks run "
     "when it starts)",
     [](const Case& c, const Diff& d) {
         if (d.sqe < 0 || d.res_epoll != -ECANCELED || d.res_uring >= 0 || d.res_uring == -ECANCELED ||
             !linked(c.sqes[static_cast<std::size_t>(d.sqe)]))
             return false;
         for (std::size_t k = static_cast<std::size_t>(d.sqe) + 1; k < c.sqes.size(); ++k) {
             if (c.sqes[k].opcode == opc::link_timeout && same_result(d, k) && d.all_uring[k] < 0 &&
                 !one_of(d.all_uring[k], {-ECANCELED, -ETIME, no_result}))
                 return true;
             if (!linked(c.sqes[k]))
                 break;
         }
         return false;
     }},
    {"link-timeout-due-race",
     "a link timeout due at once races with the SQE linked before it, which ends the same on both sides: the "
     "kernel's timer finds that SQE running inline (-ENOENT), the engine's finds it on the thread pool (-EALREADY) "
     "or ended (-ECANCELED), or the other way round",
     [](const Case& c, const Diff& d) {
         if (d.sqe <= 0 || d.kind == DiffKind::effect)
             return false;
         const Sqe& q = c.sqes[static_cast<std::size_t>(d.sqe)];
         const std::initializer_list<int> ends = {-ENOENT, -EALREADY, -ECANCELED, -ETIME};
         return q.opcode == opc::link_timeout && due_at_once(c, q) && one_of(d.res_uring, ends) &&
                one_of(d.res_epoll, ends) && same_result(d, static_cast<std::size_t>(d.sqe) - 1);
     }},
    {"futex-numa",
     "a futex call with FUTEX2_NUMA: the engine has no NUMA futexes (-EINVAL, docs/ops.md); the kernel reads the "
     "node from the word after it (-EFAULT, or runs)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && d.kind != DiffKind::effect && d.res_epoll == -EINVAL &&
                (q->opcode == opc::futex_wait || q->opcode == opc::futex_wake) && (num_of(q->f[f_fd]) & 4) &&
                (num_of(q->f[f_fd]) & ~std::uint64_t{0x86}) == 0;
     }},
    {"futex-wait-async-order",
     "a futex wait with IOSQE_ASYNC and a futex_wake after it in the same submission: io_uring arms the wait from "
     "io-wq after the wake ran (the wake finds none, the wait lasts until cancelled), the engine arms it at once",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || d.kind == DiffKind::effect || (q->opcode != opc::futex_wait && q->opcode != opc::futex_waitv) ||
             !(num_of(q->f[f_flags]) & sf::async) || d.res_uring != -ECANCELED || d.res_epoll < 0)
             return false;
         for (std::size_t k = static_cast<std::size_t>(d.sqe) + 1; k < c.sqes.size(); ++k)
             if (c.sqes[k].opcode == opc::futex_wake)
                 return true;
         return false;
     }},
    {"zc-checks-before-descriptor",
     "send_zc/sendmsg_zc: io_uring copies the msghdr, the iovec array and the buffer at submission (-EFAULT, "
     "-EMSGSIZE, -EINVAL, -ENOBUFS) before it looks at the descriptor; the engine looks at the descriptor first "
     "(-EBADF, -ENOTSOCK, -EOPNOTSUPP) and its sendmsg copies them",
     [](const Case& c, const Diff& d) {
         return zc_diff(c, d) && one_of(d.res_uring, {-EFAULT, -EMSGSIZE, -EINVAL, -ENOBUFS}) &&
                one_of(d.res_epoll, {-EBADF, -ENOTSOCK, -EOPNOTSUPP});
     }},
    {"zc-usage-report-on-error",
     "a zero-copy send with IORING_SEND_ZC_REPORT_USAGE that failed (-EFAULT): the kernel reports no copy when the "
     "socket took the buffer into a packet it then freed unsent; the engine, which copies, reports a copy",
     [](const Case& c, const Diff& d) {
         return zc_diff(c, d) && d.res_uring == d.res_epoll && d.res_uring < 0 && notif(d, true, 0) &&
                notif(d, false, INT_MIN);
     }},
    {"zc-notif-later",
     "a zero-copy send whose bytes still wait in a socket's queue when the case ends: the kernel's notification "
     "comes once they left it (none yet), the engine's right after the result (docs/ops.md); a stream send the "
     "harness cancelled counts what fit in the socket's buffer by then",
     [](const Case& c, const Diff& d) {
         return zc_diff(c, d) && d.phase_uring == 0 && d.phase_epoll != 0 && d.res_uring > 0 && d.res_epoll > 0;
     }},
};

} // namespace

const std::vector<Known>& more_known_differences() { return more; }

} // namespace diffeng
