// src/epoll/start.cpp - how one SQE starts: its checks, then at once, by readiness, on the pool or by native AIO; and
// the calls tried at once (page-cache reads, cached opens, statx).
#include "engine.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace ringo::uring::epoll {

Engine::AtOnce Engine::read_at_once(Pending* p) {
    int r;
    const AtOnce a = read_now(p->sqe, r);
    if (a == AtOnce::done)
        finish(p, r);
    return a;
}

// read_at_once's call, for an SQE that may have no record yet (submit's fast path):
// `done` with the result in `r`, or what it found.
Engine::AtOnce Engine::read_now(const io_uring_sqe& s, int& res) {
    if ((s.opcode != opc::read && s.opcode != opc::readv) || s.off == ~std::uint64_t{0} || s.rw_flags ||
        (s.flags & compat::sqe_flag::buffer_select))
        return AtOnce::not_tried;
    if (static_cast<std::size_t>(s.fd) >= fds.size())
        return AtOnce::not_tried; // (start looks at the number first)
    {
        const FdState& st = fds[static_cast<std::size_t>(s.fd)];
        if (st.kind != Kind::blocking || !st.regular || st.direct)
            return AtOnce::not_tried;
    }
    void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
    const auto off = static_cast<off_t>(s.off);
    std::size_t want = s.len;
    int r;
    if (s.opcode == opc::read) {
        iovec v{addr, s.len};
        r = sys(::preadv2(s.fd, &v, 1, off, RWF_NOWAIT));
    } else {
        const auto* iov = static_cast<const iovec*>(addr);
        r = sys(::preadv2(s.fd, iov, static_cast<int>(s.len), off, RWF_NOWAIT));
        // (The vector is summed only once the kernel has read it: a bad pointer or count
        // is the call's -EFAULT or -EINVAL, never a fault here.)
        want = 0;
        for (unsigned i = 0; r > 0 && i < s.len; ++i)
            want += iov[i].iov_len;
    }
    if (r == -ESPIPE || r == -EISDIR || r == -EBADF)
        return AtOnce::stale;
    if (r < 0 || (r != 0 && static_cast<std::size_t>(r) != want))
        return AtOnce::missed;
    res = r;
    return AtOnce::done;
}

bool Engine::open_at_once(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    if (cached_opens.load(std::memory_order_relaxed) < 0)
        return false;
    open_how how{};
    if (s.opcode == opc::openat) {
        how.flags = s.open_flags;
    } else {
        if (s.len != sizeof(open_how) || !s.off) // (a larger one: the pool's call checks what follows)
            return false;
        if (!copy_in(&how, s.off, sizeof how))
            return false; // a bad pointer: the pool's call answers -EFAULT
        if (how.resolve & RESOLVE_CACHED)
            return false; // the caller's own: its -EAGAIN is the answer (the pool gives it)
    }
    if (how.flags & (O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY)))
        return false; // (as the kernel, which makes these on a worker)
    // As io_uring's first try: with RESOLVE_CACHED, and in non-blocking mode (a FIFO opens
    // without waiting for its other end), which the descriptor loses again unless asked for.
    const std::uint64_t asked = how.flags;
    const bool made_nonblocking = !(how.flags & (O_NONBLOCK | O_PATH));
    if (made_nonblocking)
        how.flags |= O_NONBLOCK;
    how.resolve |= RESOLVE_CACHED;
    const char* path = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.addr));
    int r = sys(::syscall(SYS_openat2, s.fd, path, &how, sizeof how));
    if (r < 0) {
        // (-EPERM and -ENOSYS: also a seccomp profile that refuses openat2.)
        if ((r == -EINVAL || r == -ENOSYS || r == -EPERM) && cached_opens.load(std::memory_order_relaxed) == 0)
            probe_cached_opens();
        if (r == -ENXIO && made_nonblocking) {
            finish(p, r); // (a FIFO opened for writing with no reader: io_uring's answer too)
            return true;
        }
        return false; // (-EINVAL may also be the caller's flags: the pool answers)
    }
    cached_opens.store(1, std::memory_order_relaxed);
    if (made_nonblocking) {
        if (const int fl = ::fcntl(r, F_GETFL); fl >= 0)
            (void)::fcntl(r, F_SETFL, fl & ~O_NONBLOCK);
    }
    p->sqe.opcode = opc::openat; // (for made(): the flags are these, already read)
    p->sqe.open_flags = static_cast<std::uint32_t>(asked);
    finish(p, r);
    return true;
}

void Engine::probe_cached_opens() noexcept {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_CACHED;
    int r = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how));
    if (r >= 0)
        ::close(r);
    cached_opens.store(r >= 0 || errno == EAGAIN ? 1 : -1, std::memory_order_relaxed);
}

bool Engine::statx_at_once(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    const auto* path = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.addr));
    const int flags = static_cast<int>(s.statx_flags);
    if (s.fd < 0 || !path || !(flags & AT_EMPTY_PATH) || (flags & AT_STATX_SYNC_TYPE) == AT_STATX_FORCE_SYNC || !s.off)
        return false;
    char first = 1; // (read as the kernel reads it: an unreadable path is the pool's -EFAULT)
    if (!read_user(&first, s.addr, 1) || first != '\0')
        return false;
    auto* out = reinterpret_cast<struct statx*>(static_cast<std::uintptr_t>(s.off));
    int r = sys(::statx(s.fd, "", flags | AT_STATX_DONT_SYNC, s.len, out));
    if (r < 0 || !local_fs(makedev(out->stx_dev_major, out->stx_dev_minor), s.fd))
        return false;
    // What a descriptor the engine opened is, from the answer (as kind_of's fstat tells it).
    FdState& st = fd_state(s.fd);
    if (st.opened && st.kind == Kind::unknown && (out->stx_mask & STATX_TYPE) &&
        (S_ISREG(out->stx_mode) || S_ISDIR(out->stx_mode) || S_ISBLK(out->stx_mode))) {
        st.kind = Kind::blocking;
        st.regular = S_ISREG(out->stx_mode);
    }
    finish(p, r);
    return true;
}

bool Engine::local_fs(dev_t dev, int fd) {
    const std::uint64_t now = mono_ns();
    for (std::size_t i = 0; i < devs.size(); ++i)
        if (devs[i].dev == dev) {
            if (now < devs[i].until)
                return devs[i].local;
            devs[i] = devs.back();
            devs.pop_back();
            break;
        }
    struct statfs fs;
    if (::fstatfs(fd, &fs) < 0)
        return false;
    bool local = false;
    switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case PIPEFS_MAGIC:
    case SOCKFS_MAGIC:
    case ANON_INODE_FS_MAGIC: local = true; break;
    default: break;
    }
    if (devs.size() < max_devs)
        devs.push_back(DevKind{dev, local, now + 1'000'000'000u});
    return local;
}

// IORING_OP_PIPE, made at once as the kernel makes it: its checks, then pipe2(2), and the two
// descriptors written to the caller's array (-EFAULT, the pipe closed again, when it cannot
// be written). A pipe into the registered file table (file_index) is io_uring's only.
int Engine::pipe_now(const io_uring_sqe& s) {
    constexpr unsigned notification_pipe = O_EXCL; // O_NOTIFICATION_PIPE
    if (s.fd || s.off || s.addr3)
        return -EINVAL;
    if (s.rw_flags & ~unsigned(O_CLOEXEC | O_NONBLOCK | O_DIRECT | notification_pipe))
        return -EINVAL;
    if (s.file_index)
        return -EOPNOTSUPP;
    int fds[2];
    if (::pipe2(fds, static_cast<int>(s.rw_flags)) < 0)
        return -errno;
    if (!copy_out(s.addr, fds, sizeof fds)) {
        ::close(fds[0]);
        ::close(fds[1]);
        return -EFAULT;
    }
    for (int fd : fds) // (numbers that may have named other files before: what was known is gone)
        reset_fd(fd_state(fd));
    return 0;
}

// A call the pool makes once its checks (`checked`: 0, or the kernel's -errno) passed.
void Engine::finish_or_pool(Pending* p, int checked) {
    if (checked < 0)
        refuse(p, checked);
    else
        to_pool(p);
}

// An SQE the kernel's checks refuse before it runs: that fails its link, whatever the opcode
// (breaks_link; a call that ran and failed does not fail the link for some opcodes).
void Engine::refuse(Pending* p, int err) {
    p->refused = true;
    finish(p, err);
}

// Starts one SQE (held ones of a link start when their predecessor ends).
void Engine::start(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    p->fd = s.fd;
    if (s.flags & ~(compat::sqe_flag::cqe_skip_success * 2 - 1)) {
        finish(p, -EINVAL); // an IOSQE_* flag the kernel does not have
        return;
    }
    if (s.flags & compat::sqe_flag::fixed_file) {
        finish(p, -EBADF); // no registered file table here: as the kernel answers without one
        return;
    }
    if ((s.flags & compat::sqe_flag::buffer_select) && s.opcode != opc::recv && s.opcode != opc::read &&
        s.opcode != opc::recvmsg) {
        finish(p, -EOPNOTSUPP); // provided buffers: recv, recvmsg and read
        return;
    }
    switch (s.opcode) {
    case opc::nop: // IORING_NOP_INJECT_RESULT (nop_flags bit 0): the result is in len
        finish(p, (s.rw_flags & compat::nop_inject_result) ? static_cast<int>(s.len) : 0);
        return;
    case opc::close:
        if (s.file_index) {
            finish(p, -EOPNOTSUPP);
            return;
        }
        {
            int r = sys(::close(s.fd));
            forget(s.fd);
            finish(p, r);
        }
        return;
    case opc::socket:
        if (s.file_index) {
            finish(p, -EOPNOTSUPP);
            return;
        }
        finish(p, sys(::socket(s.fd, static_cast<int>(s.off), static_cast<int>(s.len))));
        return;
    case opc::shutdown: finish(p, sys(::shutdown(s.fd, static_cast<int>(s.len)))); return;
    case opc::bind:
        finish(p, sys(::bind(s.fd, reinterpret_cast<const sockaddr*>(static_cast<std::uintptr_t>(s.addr)),
                             static_cast<socklen_t>(s.off))));
        return;
    case opc::listen: finish(p, sys(::listen(s.fd, static_cast<int>(s.len)))); return;
    case opc::fadvise:
        finish(p, -::posix_fadvise(s.fd, static_cast<off_t>(s.off), static_cast<off_t>(s.len),
                                   static_cast<int>(s.fadvise_advice)));
        return;
    case opc::epoll_ctl:
        finish(p, sys(::epoll_ctl(s.fd, static_cast<int>(s.len), static_cast<int>(s.off),
                                  reinterpret_cast<epoll_event*>(static_cast<std::uintptr_t>(s.addr)))));
        return;
    case opc::timeout: {
        const std::uint32_t fl = s.timeout_flags;
        __kernel_timespec ts{};
        if (const int r = timeout_checks(s, ts); r < 0) {
            finish(p, r);
            return;
        }
        p->deadline = deadline_of(ts, s.timeout_flags);
        p->state = State::timer;
        if (fl & compat::timeout_multishot) {
            // (From the timespec itself, at least 1 ns: two reads of the clock could make it 0.)
            p->period = std::max<std::uint64_t>(1, ns_of(ts));
            heap_push(p); // (its count, off, is of its own expiries)
            return;
        }
        heap_push(p);
        if (s.off) // also ends (with 0) once that many other completions were posted
            counted.push_back(p);
        return;
    }
    case opc::timeout_remove: {
        __kernel_timespec ts{};
        if (s.timeout_flags & (compat::timeout_update | compat::link_timeout_update)) {
            if (const int r = read_timespec(s.off, ts); r < 0) {
                finish(p, r);
                return;
            }
        }
        if ((s.timeout_flags & compat::timeout_update) && (s.timeout_flags & compat::link_timeout_update)) {
            finish(p, link_timeout_update(s, ts));
            return;
        }
        Pending* t = find_in_flight(s.addr, opc::timeout);
        if (!t || t->state != State::timer) {
            finish(p, -ENOENT);
            return;
        }
        if (s.timeout_flags & compat::timeout_update) {
            heap_remove(t);
            t->deadline = deadline_of(ts, s.timeout_flags);
            heap_push(t);
        } else {
            heap_remove(t);
            finish(t, -ECANCELED);
        }
        finish(p, 0);
        return;
    }
    case opc::poll_remove: {
        Pending* t = find_in_flight(s.addr, opc::poll_add);
        if (!t) {
            finish(p, -ENOENT);
            return;
        }
        (void)cancel_one(t);
        finish(p, 0);
        return;
    }
    case opc::async_cancel: {
        int r = cancel(s, p);
        finish(p, r);
        return;
    }
    case opc::recv:
    case opc::send:
    case opc::recvmsg:
    case opc::sendmsg:
        if ((s.ioprio & (compat::recvsend::fixed_buf | compat::recvsend::bundle)) ||
            ((s.ioprio & compat::recvsend::recv_multishot) &&
             !((s.opcode == opc::recv || s.opcode == opc::recvmsg) && (s.flags & compat::sqe_flag::buffer_select)))) {
            finish(p, -EOPNOTSUPP);
            return;
        }
        if (s.opcode == opc::recvmsg && (s.flags & compat::sqe_flag::buffer_select)) {
            if (const int r = read_msghdr(p); r < 0) {
                finish(p, r);
                return;
            }
        }
        break;
    case opc::send_zc:
    case opc::sendmsg_zc:
        if (const int r = zc_prepare(p); r < 0) {
            finish(p, r);
            return;
        }
        break; // (a send or sendmsg now, by readiness; its notification follows its result)
    case opc::accept:
        if (s.file_index) {
            finish(p, -EOPNOTSUPP);
            return;
        }
        break;
    case opc::connect:
    case opc::poll_add: break;
    case opc::read:
    case opc::write: break;
    case opc::readv:
    case opc::writev:
        if (p->chain || (s.flags & compat::sqe_flag::cqe_skip_success))
            p->done_io = vector_length(s); // (what a full call moves: a shorter one breaks the link)
        break;
    case opc::splice:
    case opc::tee:
        if (s.splice_flags & compat::splice_f_fd_in_fixed) {
            finish(p, -EBADF); // no registered file table
            return;
        }
        // (Made on the pool, as io_uring makes it on a worker: a file's side may block. A
        // pipe's or socket's side is waited for first; SPLICE_F_NONBLOCK's -EAGAIN is the
        // caller's answer.)
        p->gated = !(s.splice_flags & SPLICE_F_NONBLOCK); // (first made without waiting: splice_try)
        to_pool(p);
        return;
    case opc::pipe: finish(p, pipe_now(s)); return;
    case opc::waitid: waitid_start(p); return;
    case opc::futex_wait: futex_wait(p); return;
    case opc::futex_wake: finish(p, futex_wake(s)); return;
    case opc::futex_waitv: futex_waitv_start(p); return;
    case opc::madvise:
        // (As the kernel checks it; the length is in off, or in len when off is 0.)
        finish_or_pool(p, s.buf_index || compat::sqe_field::splice_fd_in(s) ? -EINVAL : 0);
        return;
    case opc::getxattr:
    case opc::fgetxattr:
    case opc::setxattr:
    case opc::fsetxattr: {
        // (A get takes no flags. Then the descriptor, looked up as the kernel looks it up:
        // fgetxattr(2) and fsetxattr(2) take AT_FDCWD for the working directory since 6.13,
        // io_uring's do not.)
        const bool get = s.opcode == opc::getxattr || s.opcode == opc::fgetxattr;
        int r = s.xattr_flags & ~(get ? 0u : unsigned(XATTR_CREATE | XATTR_REPLACE)) ? -EINVAL : 0;
        if (r == 0 && (s.opcode == opc::fgetxattr || s.opcode == opc::fsetxattr) && s.fd < 0)
            r = -EBADF;
        finish_or_pool(p, r);
        return;
    }
    case opc::epoll_wait:
        if (s.off || s.rw_flags || s.buf_index || compat::sqe_field::splice_fd_in(s)) {
            finish(p, -EINVAL);
            return;
        }
        break; // (by readiness: an epoll descriptor is ready when an event waits in it)
    case opc::statx:
        if (!s.addr) { // (statx(2) takes a null path with AT_EMPTY_PATH since 6.11; io_uring does not)
            refuse(p, -EFAULT);
            return;
        }
        if (statx_at_once(p))
            return;
        to_pool(p);
        return;
    case opc::fsync:
        // (As the kernel checks it: fields it wants zero, and no flag but DATASYNC.)
        if (s.addr || s.buf_index || compat::sqe_field::splice_fd_in(s) || (s.fsync_flags & ~compat::fsync_datasync)) {
            refuse(p, -EINVAL);
            return;
        }
        to_pool(p);
        return;
    case opc::sync_file_range:
    case opc::fallocate:
    case opc::ftruncate:
    case opc::renameat:
    case opc::unlinkat:
    case opc::mkdirat:
    case opc::symlinkat:
    case opc::linkat: to_pool(p); return;
    case opc::openat:
    case opc::openat2:
        if (s.file_index) {
            finish(p, -EOPNOTSUPP);
            return;
        }
        if (open_at_once(p))
            return;
        to_pool(p);
        return;
    default: finish(p, -EOPNOTSUPP); return;
    }
    // A call on a descriptor: by readiness, or on the pool for files. A positional read
    // of what was last found a regular file is tried at once on that word (read_at_once
    // says when the descriptor is something else now). Otherwise what a descriptor the
    // engine did not make is, is looked at again unless calls already wait on it (its
    // number may name another file since), and so is a file whatever made it, before its
    // call goes to the pool: a stale kind must never send a socket's read to block a pool
    // thread.
    AtOnce tried = AtOnce::not_tried;
    bool trusted = false; // a positional call on what was last found a regular file
    if (s.fd >= 0) {
        if (const int r = in_table(s.fd); r < 0) {
            finish(p, r);
            return;
        }
        if (s.opcode == opc::read || s.opcode == opc::readv) {
            tried = p->first_try ? static_cast<AtOnce>(p->first_try) : read_at_once(p);
            p->first_try = 0; // (used once: a start over, from ended_off_loop, tries again)
            if (tried == AtOnce::done)
                return;
        }
        FdState& st = fd_state(s.fd); // (after read_at_once: what it ends may grow the table)
        // (After a miss it looks again: the pool's trip dwarfs an fstat, and a file opened
        // with O_DIRECT since under the same number is found out.)
        trusted = tried == AtOnce::not_tried && st.kind == Kind::blocking && st.regular && positional(s);
        // (A call that only a socket takes, on what was last found a socket, needs no new
        // look: should the number name something else now, the call itself says so with
        // the kernel's own -ENOTSOCK, -EBADF, never by waiting.)
        const bool socket_call = st.kind == Kind::socket && socket_only(s.opcode);
        if (!trusted && !socket_call && ((!st.owned && !st.waits()) || st.kind == Kind::blocking))
            st.kind = Kind::unknown;
    }
    Kind k = kind_of(s.fd);
    if (k == Kind::unknown) {
        finish(p, -EBADF);
        return;
    }
    if (k == Kind::blocking) {
        if (s.opcode == opc::poll_add) { // files are always ready
            finish(p, static_cast<int>(s.poll32_events & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)));
            return;
        }
        if (s.opcode == opc::epoll_wait) { // (not an epoll descriptor)
            finish(p, -EINVAL);
            return;
        }
        if (s.opcode == opc::accept || s.opcode == opc::connect || s.opcode == opc::recv || s.opcode == opc::send ||
            s.opcode == opc::recvmsg || s.opcode == opc::sendmsg) {
            finish(p, -ENOTSOCK);
            return;
        }
        if (tried != AtOnce::missed && read_at_once(p) == AtOnce::done)
            return;
        p->recheck = trusted;
        if (const FdState& f = fd_state(s.fd); f.direct && f.regular && !f.no_aio && aio_start(p))
            return;
        to_pool(p);
        return;
    }
    if (k == Kind::gated && rw_call(s.opcode)) {
        if (s.rw_flags & RWF_NOWAIT)
            finish(p, -EOPNOTSUPP); // (as the kernel answers for a file without it)
        else if (s.rw_flags)
            to_pool(p); // (the caller's flags: the pool's call answers what it lacks)
        else
            gate(p);
        return;
    }
    if (s.off != 0 && s.off != ~std::uint64_t{0} && k == Kind::socket && positional(s)) {
        finish(p, -ESPIPE); // (a socket takes no offset; io_uring lets 0 pass)
        return;
    }
    const State st = s.opcode == opc::poll_add ? State::polling : is_write(s.opcode) ? State::writing : State::reading;
    // First try at once: most calls on a socket or pipe find data or room (not a read of
    // a stream socket whose last read emptied it: it waits for the next edge).
    p->state = st;
    if (p->first_try == static_cast<unsigned char>(AtOnce::missed) || skips_first_try(s)) {
        p->first_try = 0; // (submit tried it: -EAGAIN)
        wait_ready(p, st, false);
        return;
    }
    int r = try_call(p);
    if (r == -EAGAIN && !callers_nowait(s)) {
        wait_ready(p, st, false);
        return;
    }
    if (r == -EOPNOTSUPP && k == Kind::nowait && s.opcode != opc::poll_add && !(s.rw_flags & RWF_NOWAIT)) {
        // The descriptor cannot be read or written without blocking: its calls wait for
        // readiness, then go to the pool. (With flags of the caller's, the refusal may be
        // theirs: the pool's call, made with their flags alone, answers, and the descriptor
        // keeps its kind.)
        if (s.rw_flags == 0 && rw_call(s.opcode)) {
            fd_state(s.fd).kind = Kind::gated;
            gate(p);
        } else {
            to_pool(p);
        }
        return;
    }
    if (multishot(s) && goes_on(s, r, p->empty)) {
        made(s, r);
        post(s.user_data, r, p->cflags | compat::cqe_f_more);
        wait_ready(p, st, true);
        return;
    }
    finish(p, r);
}

} // namespace ringo::uring::epoll
