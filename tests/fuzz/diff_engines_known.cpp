// The differences between the epoll engine and io_uring that tests/fuzz/diff_engines.cpp
// knows of: each class names a defect of the engine (or a quirk of io_uring's that the engine
// need not copy) by opcode and argument class, with a line saying why. A run of the fuzzer in
// CI (--ci) passes when every difference it finds falls in one of these classes, so a new
// kind of difference fails it. When a fix lands, delete its class: the corpus
// (tests/fuzz/diff_engines/, one case per class) then shows whether anything still falls in
// it (`diff_engines --replay tests/fuzz/diff_engines` prints the cases that differ, with the
// class each difference fell in).
//
// The first class that matches a difference is its class: the specific ones come first.
#include "diff_engines.hpp"

#include <ringo/uring/compat.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace diffeng {

namespace {

namespace opc = ringo::uring::compat::opcode;
namespace sf = ringo::uring::compat::sqe_flag;

// ---- what an SQE asks for

std::uint64_t num(const Val& v) { return v.kind == Val::Kind::num ? v.num : 0; }
bool nonzero(const Val& v) { return !v.is_num(0); }
bool op_in(const Sqe& q, std::initializer_list<std::uint8_t> ops) {
    for (std::uint8_t o : ops)
        if (q.opcode == o)
            return true;
    return false;
}
bool rw_op(const Sqe& q) { return op_in(q, {opc::read, opc::write, opc::readv, opc::writev}); }
bool socket_io(const Sqe& q) { return op_in(q, {opc::send, opc::recv, opc::sendmsg, opc::recvmsg}); }
bool path_op(const Sqe& q) {
    return op_in(q, {opc::openat, opc::openat2, opc::statx, opc::renameat, opc::unlinkat, opc::mkdirat, opc::symlinkat,
                     opc::linkat});
}
std::uint64_t sqe_flags(const Sqe& q) { return num(q.f[f_flags]); }
bool links(const Sqe& q) { return (sqe_flags(q) & (sf::io_link | sf::io_hardlink)) != 0; }
bool fd_in(const Val& v, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (is_fd(v, n))
            return true;
    return false;
}
bool socket_fd(const Val& v) {
    return fd_in(v, {"UNIX_A", "UNIX_B", "TCP_C", "TCP_S", "TCP_P", "LISTEN", "TCP_NEW", "UDP"});
}
// Descriptors that have no file position: pipes, sockets, character devices, eventfd, timerfd.
bool nonseekable_fd(const Val& v) {
    return socket_fd(v) ||
           fd_in(v, {"PIPE_R", "PIPE_W", "PIPE_R_EMPTY", "PIPE_W_EMPTY", "PIPE_R_FULL", "PIPE_W_FULL", "PIPE_R_NB",
                     "PIPE_W_NB", "DEVNULL", "EVENTFD", "TIMERFD", "TIMERFD_IDLE", "EPOLL", "EPOLL_READY"});
}
// A pointer the kernel cannot read whole: a bad pointer, or a string that runs into the
// guard page (an object at the arena's edge).
bool unreadable(const Val& v) { return v.bad_pointer(); }
// True when field `f` of the SQE is a pointer the opcode reads or writes.
bool pointer_field(const Sqe& q, int f) {
    if (f == f_addr)
        return rw_op(q) || socket_io(q) || path_op(q) ||
               op_in(q, {opc::accept, opc::connect, opc::bind, opc::timeout, opc::epoll_ctl});
    if (f == f_off)
        return op_in(q, {opc::accept, opc::statx, opc::openat2, opc::renameat, opc::linkat, opc::symlinkat,
                         opc::timeout_remove});
    return false;
}
// True when the SQE, or an object it points at (a msghdr's parts, an iovec's bases), holds a
// bad pointer (null where the opcode takes a pointer included).
bool any_bad_pointer(const Case& c, const Sqe& q) {
    for (int f : {f_addr, f_off, f_addr3})
        if (q.f[f].kind == Val::Kind::ptr || (pointer_field(q, f) && q.f[f].is_num(0)))
            return true;
    for (int f : {f_addr, f_off}) {
        const Obj* o = c.obj(q.f[f]);
        if (!o)
            continue;
        for (const auto& [k, v] : o->fields)
            if (v.kind == Val::Kind::ptr)
                return true;
        if (o->kind == "iov" && bad_iovec(c, q.f[f], 4))
            return true;
        if (o->kind == "msg")
            if (const Val* iov = o->field("iov"); iov && (iov->bad_pointer() || bad_iovec(c, *iov, o->num("iovlen"))))
                return true;
    }
    return false;
}
bool reserved_fields(const Sqe& q) { return nonzero(q.f[f_bufidx]) || nonzero(q.f[f_pers]) || nonzero(q.f[f_addr3]); }
// The total length a read or write asks for.
std::uint64_t rw_length(const Case& c, const Sqe& q) {
    if (q.opcode == opc::read || q.opcode == opc::write)
        return num(q.f[f_len]);
    const Obj* o = c.obj(q.f[f_addr]);
    if (!o || o->kind != "iov")
        return 0;
    const std::uint64_t count = num(q.f[f_len]);
    const std::uint64_t rep = std::max<std::uint64_t>(o->num("rep", 1), 1);
    std::uint64_t total = 0;
    for (std::uint64_t k = 0; k < count && k < o->iov.size() * rep; ++k)
        total += o->iov[rep > 1 ? 0 : k].second;
    return total;
}
// True when a read or write reaches past the object its address points at (into the objects
// after it in the arena, and at the arena's end the guard page).
bool spills(const Case& c, const Sqe& q) {
    if (op_in(q, {opc::read, opc::write, opc::send, opc::recv})) {
        const Obj* o = c.obj(q.f[f_addr]);
        return o && o->kind == "buf" && num(q.f[f_len]) > o->num("size", 64);
    }
    if (op_in(q, {opc::readv, opc::writev})) {
        const Obj* o = c.obj(q.f[f_addr]);
        if (!o || o->kind != "iov")
            return false;
        for (const auto& [b, l] : o->iov)
            if (const Obj* ob = c.obj(b); ob && ob->kind == "buf" && l > ob->num("size", 64))
                return true;
    }
    return false;
}
// The first and last SQE of the link (IOSQE_IO_LINK or IOSQE_IO_HARDLINK) that SQE i is in.
std::pair<std::size_t, std::size_t> chain_of(const Case& c, std::size_t i) {
    std::size_t first = i, last = i;
    while (first > 0 && links(c.sqes[first - 1]))
        --first;
    while (last + 1 < c.sqes.size() && links(c.sqes[last]))
        ++last;
    return {first, last};
}
bool has_drain(const Case& c) {
    for (const Sqe& q : c.sqes)
        if (sqe_flags(q) & sf::io_drain)
            return true;
    return false;
}

// ---- what a difference is

bool kind(const Diff& d, std::initializer_list<DiffKind> ks) {
    for (DiffKind k : ks)
        if (d.kind == k)
            return true;
    return false;
}
bool result(const Diff& d) {
    return d.kind != DiffKind::effect && d.kind != DiffKind::crash && d.kind != DiffKind::hang;
}
// True when some SQE of the case (or the one of the difference, when known) matches.
template <class P>
bool some_sqe(const Case& c, const Diff& d, P p) {
    if (const Sqe* q = sqe_of(c, d))
        return p(*q);
    for (const Sqe& q : c.sqes)
        if (p(q))
            return true;
    return false;
}
// The value of "key=" in a descriptor's description (diff_engines_child.cpp's describe_fd).
std::string field_of(const std::string& desc, const std::string& key) {
    auto at = desc.find(" " + key + "=");
    if (at == std::string::npos)
        return {};
    at += key.size() + 2;
    return desc.substr(at, desc.find(' ', at) - at);
}
// ------------------------------------------------------------------ the classes

const std::vector<Known> classes = {
    // ---- crashes of the epoll engine's child

    {"crash-accept-bad-addrlen",
     "accept with an unreadable addrlen pointer: the engine's accept4 goes through ASan's interceptor, which reads "
     "*addrlen itself (SEGV; io_uring and an uninstrumented build: -EFAULT)",
     [](const Case& c, const Diff& d) {
         return d.kind == DiffKind::crash && d.epoll_side && some_sqe(c, d, [](const Sqe& q) {
                    return q.opcode == opc::accept && nonzero(q.f[f_off]) && unreadable(q.f[f_off]);
                });
     }},
    {"crash-null-pointer-to-libc",
     "path calls with a null path, statx with a null buffer: the engine hands them to glibc's mkdirat, unlinkat, "
     "linkat, symlinkat, openat, statx, ..., declared nonnull (UBSan: undefined behaviour; io_uring: -EFAULT)",
     [](const Case& c, const Diff& d) {
         return d.kind == DiffKind::crash && d.epoll_side && some_sqe(c, d, [](const Sqe& q) {
                    return path_op(q) && (q.f[f_addr].is_num(0) ||
                                          (op_in(q, {opc::renameat, opc::linkat, opc::symlinkat, opc::statx}) &&
                                           q.f[f_off].is_num(0)));
                });
     }},

    // ---- waits that never end on the epoll engine

    {"splice-cancel-erestartsys",
     "splice/tee cancelled while it waits: io_uring answers -ERESTARTSYS (-512, an errno the kernel keeps to "
     "itself everywhere else), the engine -ECANCELED",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::splice, opc::tee}) && d.res_uring == -512 && d.res_epoll == -ECANCELED;
     }},

    // ---- SQE flags

    {"sqe-flag-cqe-skip-success",
     "IOSQE_CQE_SKIP_SUCCESS: which CQEs are skipped differs (io_uring skips the error CQE of some opcodes: fsync, "
     "ftruncate, fallocate, sync_file_range, path calls, shutdown; and posts a short read's, a failure to it)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && (sqe_flags(*q) & sf::cqe_skip_success) && kind(d, {DiffKind::pending, DiffKind::cqe_count}) &&
                (d.phase_uring == 0 || d.phase_epoll == 0);
     }},
    {"drain-after-cqe-skip",
     "IOSQE_IO_DRAIN after an SQE with IOSQE_CQE_SKIP_SUCCESS: io_uring refuses the drain from then on "
     "(-EOPNOTSUPP), the engine drains",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !(sqe_flags(*q) & sf::io_drain) || !result(d) || d.res_uring != -EOPNOTSUPP)
             return false;
         for (int k = 0; k < d.sqe; ++k)
             if (sqe_flags(c.sqes[static_cast<std::size_t>(k)]) & sf::cqe_skip_success)
                 return true;
         return false;
     }},
    {"sqe-flag-cqe-skip-multishot",
     "IOSQE_CQE_SKIP_SUCCESS on a multishot poll, accept or recv: io_uring -EINVAL (it would skip every CQE but "
     "the last), the engine runs it",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !(sqe_flags(*q) & sf::cqe_skip_success) || !result(d) || d.res_uring != -EINVAL)
             return false;
         return (q->opcode == opc::poll_add && (num(q->f[f_len]) & 1)) ||
                (q->opcode == opc::accept && (num(q->f[f_ioprio]) & 1)) ||
                (op_in(*q, {opc::recv, opc::recvmsg}) && (num(q->f[f_ioprio]) & 2));
     }},
    {"sqe-flag-fixed-file",
     "IOSQE_FIXED_FILE without a registered table: the engine answers -EBADF for every opcode, io_uring only where "
     "the opcode looks a file up (ignored or -EINVAL elsewhere)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && (sqe_flags(*q) & sf::fixed_file) && result(d);
     }},
    {"sqe-flag-buffer-select",
     "IOSQE_BUFFER_SELECT without a provided-buffer group: io_uring -ENOBUFS or -EINVAL; the engine -EOPNOTSUPP or "
     "-ENOBUFS in another order, and a read of a file ignores the flag (reads into addr)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && (sqe_flags(*q) & sf::buffer_select) && result(d) &&
                (d.kind == DiffKind::errno_only || d.res_uring == -ENOBUFS || d.res_uring == -EINVAL);
     }},
    {"sqe-flag-unknown", "an IOSQE flag no kernel defines (0x80): io_uring -EINVAL, the engine ignores it",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && (sqe_flags(*q) & 0x80) && result(d) && d.res_uring == -EINVAL;
     }},
    {"unterminated-link",
     "IOSQE_IO_LINK on the last SQE of a submission: io_uring issues that dangling chain from io-wq (-EAGAIN on an "
     "O_NONBLOCK descriptor, RWF_NOWAIT dropped, a blocking write of all it was given, -EINTR when cancelled), the "
     "engine as it issues any SQE",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         // (Any member of the chain that ends at the last SQE: io_uring issues its head so.)
         return q && links(c.sqes.back()) && chain_of(c, static_cast<std::size_t>(d.sqe)).second + 1 == c.sqes.size() &&
                result(d) && (d.res_uring == -EAGAIN || d.res_uring == -EINTR || d.phase_uring == 2);
     }},
    {"link-member-refused",
     "a link with a member io_uring refuses at submission: io_uring fails the whole link (-ECANCELED), hard "
     "links included; the engine runs the other members",
     [](const Case& c, const Diff& d) {
         if (!result(d) || d.sqe < 0 || d.res_uring != -ECANCELED || d.phase_uring != 1 || d.all_uring.empty() ||
             (d.res_epoll == -ECANCELED && d.phase_epoll == 1))
             return false;
         // Another member of the same link (hard links included) failed with something other
         // than -ECANCELED: io_uring failed the chain at submission.
         auto [first, last] = chain_of(c, static_cast<std::size_t>(d.sqe));
         for (std::size_t j = first; j <= last; ++j) {
             const int r = d.all_uring[j];
             if (j != static_cast<std::size_t>(d.sqe) && r < 0 && r != -ECANCELED && r != no_result)
                 return true;
         }
         return false;
     }},
    {"cancelled-in-io-wq",
     "a call io_uring ran blocking in io-wq ends with -EINTR when cancelled, the engine's with -ECANCELED",
     [](const Case&, const Diff& d) {
         return d.kind == DiffKind::errno_only && d.res_uring == -EINTR && d.res_epoll == -ECANCELED;
     }},

    // ---- fields io_uring checks at submission and the engine does not look at

    {"reserved-fields",
     "buf_index, personality or addr3 non-zero where the opcode takes none (personality 1 is not registered): "
     "io_uring -EINVAL, the engine ignores them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && reserved_fields(*q) && result(d) && d.res_uring == -EINVAL;
     }},
    {"direct-descriptors",
     "file_index (a direct descriptor) on openat, openat2, accept, socket, close: the engine -EOPNOTSUPP, io_uring "
     "its own answer without a registered table (-EINVAL, -ENXIO, -ENFILE, -EBADF, ...)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::openat, opc::openat2, opc::accept, opc::socket, opc::close}) &&
                nonzero(q->f[f_fi]) && d.kind == DiffKind::errno_only;
     }},
    {"nop-flags",
     "nop_flags other than IORING_NOP_INJECT_RESULT (NOP_FILE looks the descriptor up, unknown bits are -EINVAL): "
     "the engine ignores them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::nop && (num(q->f[f_opflags]) & ~std::uint64_t{1}) && result(d);
     }},
    {"poll-add-flags",
     "poll_add with flags in len other than IORING_POLL_ADD_MULTI (ADD_LEVEL, unknown bits), or events with "
     "EPOLLET/EPOLLONESHOT/EPOLLEXCLUSIVE: io_uring -EINVAL (EPOLLONESHOT with ADD_MULTI: one shot), the engine "
     "ignores them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         const std::uint64_t ev = num(q ? q->f[f_opflags] : Val{});
         if (!q || q->opcode != opc::poll_add || !result(d))
             return false;
         if ((num(q->f[f_len]) & 1) && (ev & EPOLLONESHOT))
             return true; // io_uring: one shot after all
         return d.res_uring == -EINVAL &&
                ((num(q->f[f_len]) & ~std::uint64_t{1}) || (ev & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE)));
     }},
    {"poll-add-file",
     "poll_add on a regular file or directory for events it does not report (POLLPRI, none): io_uring -EINVAL "
     "(nothing could wake it), the engine completes with 0",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::poll_add && fd_in(q->f[f_fd], {"REG", "RO", "DIRECT", "MEMFD", "DIR"}) &&
                result(d) && d.res_uring == -EINVAL;
     }},
    {"poll-rdhup-unasked",
     "poll_add: io_uring reports POLLRDHUP (as POLLERR, POLLHUP, POLLNVAL) whether asked for or not, the engine "
     "only when asked",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::poll_add && d.kind == DiffKind::value && d.res_uring >= 0 && d.res_epoll >= 0 &&
                (d.res_uring ^ d.res_epoll) == POLLRDHUP;
     }},
    {"poll-unpollable-file",
     "multishot poll_add on a descriptor epoll cannot watch (/dev/null, regular files): io_uring reports it ready "
     "once and ends, the engine ends with epoll_ctl's -EPERM",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::poll_add &&
                fd_in(q->f[f_fd], {"DEVNULL", "REG", "RO", "DIRECT", "MEMFD", "DIR"}) && result(d) &&
                d.res_epoll == -EPERM;
     }},
    {"poll-multishot-repeats",
     "multishot poll_add on a descriptor that stays ready: the engine posts the same readiness again without a new "
     "event (io_uring: once per wake-up)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::poll_add && (num(q->f[f_len]) & 1) && d.kind == DiffKind::cqe_count;
     }},
    {"poll-update",
     "poll_remove with IORING_POLL_UPDATE_EVENTS/UPDATE_USER_DATA: the engine neither checks the update's fields "
     "(io_uring -EINVAL) nor updates: it removes the poll",
     [](const Case& c, const Diff& d) {
         return some_sqe(c, d, [](const Sqe& q) { return q.opcode == opc::poll_remove && nonzero(q.f[f_len]); }) &&
                result(d);
     }},
    {"timeout-flags",
     "timeout: IORING_TIMEOUT_MULTISHOT (-EINVAL on the engine), unknown flags or len != 1 (-EINVAL on io_uring), "
     "tv_nsec >= 1e9 (io_uring accepts it)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || q->opcode != opc::timeout || !result(d))
             return false;
         const std::uint64_t fl = num(q->f[f_opflags]);
         const Obj* ts = c.obj(q->f[f_addr]);
         const bool big_nsec = ts && ts->num("nsec") >= 1'000'000'000u && ts->num("nsec") < (1ull << 63);
         return (fl & ~std::uint64_t{1 | 4 | 8 | 32}) || !q->f[f_len].is_num(1) || big_nsec;
     }},
    {"timeout-remove-flags", "timeout_remove with unknown flags: io_uring -EINVAL, the engine ignores them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::timeout_remove && (num(q->f[f_opflags]) & ~std::uint64_t{2 | 1 | 4 | 8 | 16}) &&
                result(d) && d.res_uring == -EINVAL;
     }},
    {"async-cancel-flags", "async_cancel with flags no kernel defines: io_uring -EINVAL, the engine ignores them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::async_cancel && (num(q->f[f_opflags]) & ~std::uint64_t{0x3f}) && result(d) &&
                d.res_uring == -EINVAL;
     }},
    {"async-cancel-op-flag",
     "async_cancel with IORING_ASYNC_CANCEL_OP: io_uring matches the opcode in len too, the engine the user_data "
     "alone",
     [](const Case& c, const Diff& d) {
         if (!result(d) || d.sqe < 0)
             return false;
         for (std::size_t k = 0; k < c.sqes.size(); ++k) {
             const Sqe& q = c.sqes[k];
             if (q.opcode == opc::async_cancel && (num(q.f[f_opflags]) & 32) &&
                 (static_cast<std::size_t>(d.sqe) == k ||
                  (q.f[f_addr].kind == Val::Kind::ud && q.f[f_addr].ud == d.sqe)))
                 return true;
         }
         return false;
     }},
    {"async-cancel-none-found",
     "async_cancel with ALL or ANY that finds nothing: io_uring 0 (the count), the engine -ENOENT",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::async_cancel && (num(q->f[f_opflags]) & 5) && d.res_uring == 0 &&
                d.res_epoll == -ENOENT;
     }},
    {"splice-flags",
     "splice/tee with unknown flags: io_uring -EINVAL, the engine passes them to splice(2), which ignores them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::splice, opc::tee}) && (num(q->f[f_opflags]) & 0x7ffffff0u) && result(d) &&
                d.res_uring == -EINVAL;
     }},
    {"openat-unknown-flags",
     "openat with flag bits no O_* names: io_uring -EINVAL (it checks them as openat2 does), the engine's "
     "openat(2) ignores them and opens",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::openat &&
                (num(q->f[f_opflags]) & 0x7ff00000u & ~std::uint64_t(O_PATH | O_TMPFILE)) && result(d) &&
                d.res_uring == -EINVAL;
     }},
    {"socket-flags", "socket with a non-zero rw_flags field: io_uring -EINVAL, the engine ignores it",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::socket && nonzero(q->f[f_opflags]) && result(d) && d.res_uring == -EINVAL;
     }},
    {"splice-zero-length",
     "splice/tee of length 0: splice(2) answers 0 before it looks at the descriptors, io_uring looks them up at "
     "submission (-EBADF)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::splice, opc::tee}) && q->f[f_len].is_num(0) && result(d) && d.res_epoll == 0;
     }},

    // ---- reads and writes

    {"rw-ioprio", "read/write with an ioprio of an invalid class: io_uring -EINVAL, the engine ignores ioprio",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && rw_op(*q) && (num(q->f[f_ioprio]) >> 13) > 3 && result(d) && d.res_uring == -EINVAL;
     }},
    {"rw-hipri", "RWF_HIPRI on a ring without IOPOLL: io_uring -EINVAL (or -EOPNOTSUPP), the engine reads or writes",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && rw_op(*q) && (num(q->f[f_opflags]) & RWF_HIPRI) && result(d) &&
                (d.res_uring == -EINVAL || d.res_uring == -EOPNOTSUPP);
     }},
    {"rw-flags-unchecked",
     "read/write with RWF flags the file cannot honour (unknown bits, RWF_NOWAIT on a write to tmpfs): io_uring "
     "-EOPNOTSUPP at submission; the engine's read/write of a stream ignores them, and its preadv2/pwritev2 of "
     "length 0 answers 0 before looking at them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && rw_op(*q) && nonzero(q->f[f_opflags]) && result(d) && d.res_uring == -EOPNOTSUPP &&
                d.res_epoll != -EOPNOTSUPP;
     }},
    {"rw-cur-pos-after-fault",
     "a read or write at the file position (offset -1) cut short by a fault (a bad iovec, the end of the memory): "
     "io_uring returns the count but leaves the position, the engine's readv/writev moves it on",
     [](const Case& c, const Diff& d) {
         if (d.kind != DiffKind::effect || d.key.rfind("fd:", 0) != 0 ||
             field_of(d.val_uring, "pos") == field_of(d.val_epoll, "pos"))
             return false;
         const std::string name = d.key.substr(3);
         for (const Sqe& q : c.sqes)
             if (rw_op(q) && is_fd(q.f[f_fd], name.c_str()) && q.f[f_off].is_num(~std::uint64_t{0}) &&
                 (any_bad_pointer(c, q) || spills(c, q)))
                 return true;
         return false;
     }},
    {"rw-offset-nonseekable",
     "read/write at an offset below -1, or whose end overflows, on a pipe, socket, eventfd, timerfd or character "
     "device: io_uring -EINVAL, the engine ignores the offset (sockets: -ESPIPE)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !rw_op(*q) || !nonseekable_fd(q->f[f_fd]) || !result(d) || d.res_uring != -EINVAL)
             return false;
         const auto off = static_cast<std::int64_t>(num(q->f[f_off]));
         const std::uint64_t len = rw_length(c, *q);
         return off < -1 || (off > 0 && static_cast<std::uint64_t>(off) + len > 0x7fffffffffffffffull);
     }},
    {"rw-zero-length",
     "a read or write of length 0: the engine's preadv2/pwritev2 answers 0 before the descriptor is asked, "
     "io_uring asks it (-EINVAL from an eventfd or timerfd, -EPIPE from a listening socket; but a directory's "
     "read: io_uring 0, the engine -EISDIR)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && rw_op(*q) && rw_length(c, *q) == 0 && result(d) && d.res_uring != -ECANCELED &&
                d.res_epoll != -ECANCELED;
     }},
    {"socket-len-over-int-max",
     "send/recv of more than INT_MAX bytes: io_uring -EINVAL, the engine's send/recv takes a size_t",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::send, opc::recv}) && num(q->f[f_len]) > 0x7fffffffu && result(d) &&
                d.res_uring == -EINVAL;
     }},
    {"recvsend-ioprio",
     "send/recv/sendmsg/recvmsg with IORING_RECVSEND_* flags in ioprio (POLL_FIRST, RECV_MULTISHOT without a buffer "
     "group, FIXED_BUF, BUNDLE): the engine -EOPNOTSUPP or ignores them, io_uring its own answer",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && socket_io(*q) && nonzero(q->f[f_ioprio]) && result(d);
     }},
    {"accept-ioprio",
     "accept with IORING_ACCEPT_DONTWAIT or IORING_ACCEPT_POLL_FIRST: the engine ignores them (io_uring: -EAGAIN "
     "without waiting, or a poll first)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::accept && (num(q->f[f_ioprio]) & 6) && result(d);
     }},
    {"msg-waitall-ignored",
     "send/recv/sendmsg/recvmsg with MSG_WAITALL: the engine answers with what one call moved, io_uring waits "
     "for the rest (and answers the count when cancelled)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && socket_io(*q) && (num(q->f[f_opflags]) & MSG_WAITALL) && d.kind == DiffKind::pending &&
                d.phase_uring == 2 && d.phase_epoll == 1;
     }},
    {"msg-cmsg-compat",
     "sendmsg/recvmsg (zero-copy sends too) with MSG_CMSG_COMPAT (0x80000000): io_uring drops the flag, the "
     "engine's sendmsg(2) refuses it (-EINVAL)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::sendmsg, opc::recvmsg, opc::send, opc::recv, opc::send_zc, opc::sendmsg_zc}) &&
                (num(q->f[f_opflags]) & 0x80000000u) && result(d) && d.res_epoll == -EINVAL;
     }},
    {"msg-errqueue-waits",
     "recv/recvmsg with MSG_ERRQUEUE on an empty error queue: io_uring -EAGAIN at once, the engine waits for "
     "readiness that never reports an error queue",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::recv, opc::recvmsg}) && (num(q->f[f_opflags]) & MSG_ERRQUEUE) &&
                d.kind == DiffKind::pending && d.res_uring == -EAGAIN;
     }},
    {"waitall-cancelled-loses-count",
     "send/recv/sendmsg/recvmsg with MSG_WAITALL cancelled after part of the data went: the engine ends it with "
     "-ECANCELED, so the bytes it took or sent are lost to the caller; io_uring returns their count",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && socket_io(*q) && (num(q->f[f_opflags]) & MSG_WAITALL) && result(d) && d.res_uring > 0 &&
                d.res_epoll == -ECANCELED;
     }},
    {"writev-eventfd-offset",
     "writev at an offset (0 included) on an eventfd: the engine's pwritev2 -ESPIPE (eventfd has no write_iter, so "
     "the call goes to the pool as a positional one), io_uring ignores the offset",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::writev && is_fd(q->f[f_fd], "EVENTFD") &&
                !q->f[f_off].is_num(~std::uint64_t{0}) && result(d) && d.res_epoll == -ESPIPE;
     }},
    {"rw-flags-without-iter",
     "RWF_* flags on an eventfd or timerfd (no read_iter/write_iter): the engine's preadv2/pwritev2 -EOPNOTSUPP, "
     "io_uring ignores the flags",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && rw_op(*q) && fd_in(q->f[f_fd], {"EVENTFD", "TIMERFD", "TIMERFD_IDLE"}) &&
                nonzero(q->f[f_opflags]) && result(d) && d.res_epoll == -EOPNOTSUPP;
     }},
    {"rw-epoll-fd",
     "read/write of an epoll descriptor: io_uring waits for it to be ready (the call itself then fails), the engine "
     "-EINVAL at once",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && rw_op(*q) && fd_in(q->f[f_fd], {"EPOLL", "EPOLL_READY"}) && result(d) && d.res_epoll == -EINVAL;
     }},
    {"close-ends-waiters",
     "a close of a descriptor another SQE of the submission uses: io_uring's request holds the file (and waits "
     "on), the engine ends a waiting call with -EBADF, and its pool call may look the number up after the close",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !result(d) || d.res_epoll != -EBADF || q->f[f_fd].kind != Val::Kind::fd)
             return false;
         for (const Sqe& k : c.sqes)
             if (k.opcode == opc::close && is_fd(k.f[f_fd], q->f[f_fd].name.c_str()))
                 return true;
         return false;
     }},
    {"fd-number-order",
     "a descriptor made while another SQE of the submission makes or closes one: which number it gets depends on "
     "which runs first (the engine opens on its pool, io_uring mostly inline)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !makes_fd(*q) || d.kind != DiffKind::value)
             return false;
         int makers = 0;
         for (const Sqe& k : c.sqes)
             makers += makes_fd(k) ? 1 : 0;
         return makers > 1 || has_opcode(c, opc::close);
     }},
    {"stream-send-amount",
     "a send or write of megabytes to a stream socket: how much the socket takes at once depends on its buffer's "
     "autotuning, not on the engine",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && op_in(*q, {opc::send, opc::write, opc::sendmsg, opc::writev}) && socket_fd(q->f[f_fd]) &&
                d.kind == DiffKind::value && d.res_uring > 65536 && d.res_epoll > 65536;
     }},
    {"connect-failed-socket-state",
     "a connect that failed leaves the socket in another state (bound or not, poll events, what a second connect "
     "answers) on each engine (a blocking connect in io-wq against the engine's non-blocking one)",
     [](const Case& c, const Diff& d) {
         std::string name;
         std::size_t before = c.sqes.size();
         if (d.kind == DiffKind::effect && d.key.rfind("fd:", 0) == 0) {
             name = d.key.substr(3);
         } else if (const Sqe* q = sqe_of(c, d); q && q->opcode == opc::connect && q->f[f_fd].kind == Val::Kind::fd) {
             name = q->f[f_fd].name; // a later connect of the same socket
             before = static_cast<std::size_t>(d.sqe);
         } else {
             return false;
         }
         for (std::size_t i = 0; i < before; ++i)
             if (c.sqes[i].opcode == opc::connect && is_fd(c.sqes[i].f[f_fd], name.c_str()) && i < d.all_uring.size() &&
                 d.all_uring[i] < 0 && d.all_epoll[i] < 0)
                 return true;
         return false;
     }},

    // ---- orderings within one submission

    {"cancel-pool-call",
     "async_cancel of a call io_uring had queued to io-wq (fsync, fallocate, fadvise, path calls, opens, ...): "
     "io_uring cancels it; the engine's pool call runs to its end (the cancel answers -EALREADY)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !result(d))
             return false;
         if (q->opcode == opc::async_cancel)
             return d.res_epoll == -EALREADY || d.res_uring == -EALREADY ||
                    (d.kind == DiffKind::value && (num(q->f[f_opflags]) & 7));
         if (d.res_uring != -ECANCELED || d.res_epoll == -ECANCELED)
             return false;
         for (const Sqe& k : c.sqes)
             if (k.opcode == opc::async_cancel &&
                 ((k.f[f_addr].kind == Val::Kind::ud && k.f[f_addr].ud == d.sqe) || (num(k.f[f_opflags]) & 7)))
                 return true;
         return false;
     }},
    {"sqe-flag-async-cancel",
     "an async_cancel, poll_remove or timeout_remove with IOSQE_ASYNC: io_uring issues it from io-wq, after the "
     "SQEs submitted with it (its target included), the engine at once",
     [](const Case& c, const Diff& d) {
         if (!result(d) || d.sqe < 0)
             return false;
         for (std::size_t k = 0; k < c.sqes.size(); ++k) {
             const Sqe& q = c.sqes[k];
             if (!op_in(q, {opc::async_cancel, opc::poll_remove, opc::timeout_remove}) || !(sqe_flags(q) & sf::async))
                 continue;
             const Val& t = q.f[f_addr];
             if (static_cast<std::size_t>(d.sqe) == k || (t.kind == Val::Kind::ud && t.ud == d.sqe) ||
                 (q.opcode == opc::async_cancel && (num(q.f[f_opflags]) & 7)))
                 return true;
         }
         return false;
     }},
    {"sqe-flag-async-order",
     "IOSQE_ASYNC: io_uring issues the SQE from io-wq, after the SQEs submitted with it, the engine in order; two "
     "calls on the same pipe or connection then end the other way round",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !result(d))
             return false;
         for (std::size_t k = 0; k < c.sqes.size(); ++k) {
             const Sqe& p = c.sqes[k];
             if (!(sqe_flags(p) & sf::async))
                 continue;
             const std::string mine = connection(q->f[f_fd]);
             if (!mine.empty() && connection(p.f[f_fd]) == mine && c.sqes.size() > 1)
                 return true;
         }
         return false;
     }},
    {"linked-cancel-runs-later",
     "an async_cancel, poll_remove or timeout_remove that is the next member of a link: io_uring starts it after "
     "the whole submission (task work), the engine as soon as its predecessor ends, before the SQEs after it",
     [](const Case& c, const Diff& d) {
         if (!result(d) || d.sqe < 0)
             return false;
         for (std::size_t k = 1; k < c.sqes.size(); ++k) {
             const Sqe& q = c.sqes[k];
             if (!op_in(q, {opc::async_cancel, opc::poll_remove, opc::timeout_remove}) || !links(c.sqes[k - 1]))
                 continue;
             const Val& t = q.f[f_addr];
             if (static_cast<std::size_t>(d.sqe) == k ||
                 (t.kind == Val::Kind::ud && t.ud == d.sqe && static_cast<std::size_t>(t.ud) > k))
                 return true;
         }
         return false;
     }},
    {"shutdown-runs-later",
     "an unlinked shutdown and a call submitted after it on the same connection (or the accept that makes the "
     "descriptor it names): io_uring runs shutdown from io-wq, after the calls submitted with it, the engine at "
     "once (unlinked SQEs have no order)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !result(d))
             return false;
         if (q->opcode == opc::shutdown && q->f[f_fd].kind == Val::Kind::fd && q->f[f_fd].name.rfind("NEW", 0) == 0)
             for (std::size_t k = static_cast<std::size_t>(d.sqe) + 1; k < c.sqes.size(); ++k)
                 if (makes_fd(c.sqes[k]))
                     return true;
         for (int k = 0; k < d.sqe; ++k) {
             const Sqe& p = c.sqes[static_cast<std::size_t>(k)];
             if (p.opcode == opc::shutdown && !links(p) && !connection(p.f[f_fd]).empty() &&
                 connection(p.f[f_fd]) == connection(q->f[f_fd]))
                 return true;
         }
         return false;
     }},
    {"fadvise-runs-later",
     "an fadvise with advice other than NORMAL, RANDOM or SEQUENTIAL and an unlinked close of its descriptor "
     "submitted with it: io_uring makes that fadvise from io-wq, after the close, the engine at once (unlinked "
     "SQEs have no order)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || !result(d) || q->opcode != opc::fadvise || num(q->f[f_opflags]) <= 2)
             return false;
         for (std::size_t k = static_cast<std::size_t>(d.sqe) + 1; k < c.sqes.size(); ++k)
             if (c.sqes[k].opcode == opc::close)
                 return true;
         return false;
     }},
    {"statx-unordered",
     "a statx submitted with an unlinked call that changes what it looks at (an unlink, rename, mkdir, ... of the "
     "same directory): io_uring and the engine run them in another order (io-wq, the pool, statx at once)",
     [](const Case& c, const Diff& d) {
         int who = d.sqe;
         if (d.kind == DiffKind::effect && d.key.rfind("obj:", 0) == 0) // the statx buffer's bytes
             for (std::size_t i = 0; i < c.sqes.size(); ++i)
                 if (c.sqes[i].opcode == opc::statx && c.sqes[i].f[f_off].kind == Val::Kind::obj &&
                     "obj:" + c.sqes[i].f[f_off].name == d.key)
                     who = static_cast<int>(i);
         if (who < 0 || c.sqes[static_cast<std::size_t>(who)].opcode != opc::statx)
             return false;
         const auto chain = chain_of(c, static_cast<std::size_t>(who));
         for (std::size_t k = 0; k < c.sqes.size(); ++k)
             if ((k < chain.first || k > chain.second) &&
                 op_in(c.sqes[k], {opc::unlinkat, opc::renameat, opc::mkdirat, opc::symlinkat, opc::linkat, opc::openat,
                                   opc::openat2, opc::ftruncate, opc::fallocate, opc::write, opc::writev}))
                 return true;
         return false;
     }},
    {"timeout-expired-vs-cancel",
     "a timeout that has already expired (0 s, or absolute and past) and a cancel or timeout_remove of it in the "
     "same submission: "
     "io_uring's timer fires before the cancel runs, the engine's only after the submission",
     [](const Case& c, const Diff& d) {
         if (!result(d) || d.sqe < 0)
             return false;
         auto expired = [&](std::size_t i) {
             const Sqe& q = c.sqes[i];
             const Obj* ts = c.obj(q.f[f_addr]);
             // (or absolute, and past: an hour of CLOCK_MONOTONIC on a machine up longer)
             return q.opcode == opc::timeout && ts && ts->num("sec") <= 3600 && ts->num("nsec") == 0 &&
                    (ts->num("sec") == 0 || (num(q.f[f_opflags]) & 1));
         };
         const Sqe& q = c.sqes[static_cast<std::size_t>(d.sqe)];
         if (expired(static_cast<std::size_t>(d.sqe)))
             return d.res_uring == -ETIME && d.res_epoll == -ECANCELED;
         const Val& t = q.f[f_addr];
         return op_in(q, {opc::async_cancel, opc::timeout_remove}) && t.kind == Val::Kind::ud && t.ud >= 0 &&
                expired(static_cast<std::size_t>(t.ud));
     }},
    {"link-capped-length",
     "a read or write of more than MAX_RW_COUNT (0x7ffff000) bytes in a link: io_uring measures a short count "
     "against the capped length, the engine against the length asked, so only the engine breaks the link",
     [](const Case& c, const Diff& d) {
         if (!result(d) || d.sqe <= 0 || d.all_uring.empty() || d.res_epoll != -ECANCELED || d.res_uring == -ECANCELED)
             return false;
         const std::size_t k = static_cast<std::size_t>(d.sqe) - 1;
         const Sqe& p = c.sqes[k];
         return links(p) && rw_op(p) && rw_length(c, p) > 0x7ffff000u && d.all_uring[k] >= 0 &&
                d.all_uring[k] == d.all_epoll[k];
     }},
    {"timeout-count",
     "a timeout with a completion count (off > 0): which completions count differs (io_uring counts CQEs posted "
     "after its issue, which task work may delay; the engine those posted after it started), and a short timer "
     "races them",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && q->opcode == opc::timeout && nonzero(q->f[f_off]) && result(d);
     }},

    {"sqe-flag-drain",
     "IOSQE_IO_DRAIN: when each SQE after a drain may start differs (io_uring also holds SQEs submitted after the "
     "drained one while earlier ones are in flight, the ASYNC_CANCEL of the harness included)",
     [](const Case& c, const Diff& d) {
         return kind(d, {DiffKind::pending, DiffKind::cqe_count}) && d.sqe >= 0 && has_drain(c);
     }},

    // ---- errno differences: the same failure found in another order

    {"errno-cancelled-link",
     "-ECANCELED on one side only, in a link whose earlier member failed with another errno on that side",
     [](const Case& c, const Diff& d) {
         if (d.kind != DiffKind::errno_only || d.sqe <= 0 || d.all_uring.empty())
             return false;
         const bool u = d.res_uring == -ECANCELED, e = d.res_epoll == -ECANCELED;
         if (u == e)
             return false;
         const auto& res = u ? d.all_uring : d.all_epoll;
         for (int k = d.sqe - 1; k >= 0 && links(c.sqes[static_cast<std::size_t>(k)]); --k)
             if (res[static_cast<std::size_t>(k)] < 0 && res[static_cast<std::size_t>(k)] != no_result)
                 return true;
         return false;
     }},
    {"errno-efault-first",
     "io_uring copies what the SQE points at (iovecs, msghdr, paths, addresses) at submission and fails with "
     "-EFAULT (or -EINVAL for the garbage it read) before anything else; the engine's system call checks the rest "
     "first",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && d.kind == DiffKind::errno_only &&
                (d.res_uring == -EFAULT || d.res_epoll == -EFAULT || d.res_uring == -EINVAL) && any_bad_pointer(c, *q);
     }},
    {"errno-descriptor-order",
     "a bad or wrong-kind descriptor together with another bad argument: io_uring looks the descriptor up at "
     "submission (-EBADF) or checks the SQE first (-EINVAL), the system call the other way round",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || d.kind != DiffKind::errno_only)
             return false;
         const bool bad_fd = is_bad_fd(q->f[f_fd]) || (op_in(*q, {opc::splice, opc::tee}) && is_bad_fd(q->f[f_fi]));
         const auto first = [](int r) {
             return r == -EBADF || r == -ENOTSOCK || r == -ESPIPE || r == -EISDIR || r == -EOPNOTSUPP ||
                    r == -ENOTCONN || r == -ENOTDIR;
         };
         return (bad_fd || !socket_fd(q->f[f_fd])) && (first(d.res_uring) || first(d.res_epoll));
     }},
    {"errno-path-order",
     "path calls: io_uring copies and checks the names at submission (-ENOENT for \"\", -ENAMETOOLONG, -EFAULT), "
     "the system call checks the flags first (-EINVAL)",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         return q && path_op(*q) && d.kind == DiffKind::errno_only;
     }},
    {"errno-iov-count",
     "readv/writev/sendmsg/recvmsg with more than IOV_MAX iovecs: io_uring -EINVAL or -EMSGSIZE at submission, the "
     "engine another errno first",
     [](const Case& c, const Diff& d) {
         const Sqe* q = sqe_of(c, d);
         if (!q || d.kind != DiffKind::errno_only)
             return false;
         if (op_in(*q, {opc::readv, opc::writev}))
             return num(q->f[f_len]) > 1024;
         if (const Obj* m = c.obj(q->f[f_addr]); m && m->kind == "msg")
             return m->num("iovlen") > 1024;
         return false;
     }},

    // ---- last: a case whose memory one of its calls overwrites

    {"memory-read-at-submission",
     "a read that spills past its buffer into what another SQE of the submission points at (a path, a "
     "timespec, ...): io_uring copied that SQE's memory at submission, the engine reads it when the call runs",
     [](const Case& c, const Diff& d) {
         if (d.sqe < 0 && d.kind != DiffKind::effect)
             return false;
         for (std::size_t k = 0; k < c.sqes.size(); ++k)
             if (static_cast<int>(k) != d.sqe && op_in(c.sqes[k], {opc::read, opc::readv, opc::recv, opc::recvmsg}) &&
                 spills(c, c.sqes[k]))
                 return true;
         return false;
     }},
};

} // namespace

// The pipe, connection or listener a descriptor belongs to (both ends count as one).
std::string connection(const Val& v) {
    if (v.kind != Val::Kind::fd)
        return {};
    std::string n = v.name;
    if (n.rfind("PIPE", 0) == 0)
        for (const char* end : {"_R", "_W"})
            if (auto at = n.find(end); at != std::string::npos)
                n.erase(at, 2);
    if (n == "UNIX_B")
        n = "UNIX_A";
    if (n == "TCP_S")
        n = "TCP_C";
    if (n == "TCP_P")
        n = "LISTEN";
    return n;
}

const std::vector<Known>& known_differences() {
    static const std::vector<Known> all = [] {
        std::vector<Known> v = classes;
        const auto& m = more_known_differences();
        v.insert(v.end(), m.begin(), m.end());
        return v;
    }();
    return all;
}

} // namespace diffeng
