// src/epoll/pool.cpp - the engine's calls on the process's thread pool: handing them over, interrupting them, taking
// their results.
#include "engine.hpp"

#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <mutex>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ringo::uring::epoll {

void Engine::run_on_pool(Job* j) noexcept {
    auto* p = static_cast<Pending*>(j);
    const bool futex = is_futex_wait(p->sqe.opcode);
    do
        p->res = futex      ? (p->sqe.opcode == opc::futex_wait ? futex_wait_call(p) : futex_waitv_call(p))
                 : p->gated ? splice_try(p->sqe)
                            : blocking_call(p->sqe, p->recheck);
    while (p->res == -EINTR && !BlockingCalls::get().interrupted(p));
    if (futex)
        futex_done(p); // (no wake finds it from here on)
    BlockingCalls::get().finishing(p);
    Engine* e = p->eng;
    std::lock_guard lk(e->done_m);
    // The first result of a batch wakes the loop; later ones find it woken already (the
    // loop reads wake_fd before it takes the list, and takes the whole list).
    const bool first = e->done_head == nullptr;
    p->w_next = e->done_head;
    e->done_head = p;
    e->done_any.store(true, std::memory_order_release);
    if (first)
        Readiness::wake(e->readiness.wake_fd());
    if (--e->on_pool == 0)
        e->done_cv.notify_all();
}

void Engine::interrupt(Pending* p) {
    if (!BlockingCalls::get().interrupt(p))
        return; // (the program handles the signal: the call runs to its end)
    for (const Interrupted& i : interrupted)
        if (i.p == p && i.gen == p->gen)
            return;
    try {
        interrupted.push_back({p, p->gen});
    } catch (...) { // (then only the first signal: a call not yet started runs to its end)
    }
}

// Sends the interrupts again to the calls that have not ended; true while some remain.
bool Engine::interrupt_again() noexcept {
    std::size_t kept = 0;
    for (const Interrupted& i : interrupted)
        if (i.p->gen == i.gen && i.p->state == State::pool) {
            (void)BlockingCalls::get().interrupt(i.p);
            interrupted[kept++] = i;
        }
    interrupted.resize(kept);
    return kept > 0;
}

void Engine::to_pool(Pending* p) {
    p->state = State::pool;
    p->run = &run_on_pool;
    {
        std::lock_guard lk(done_m);
        ++on_pool;
    }
    try {
        BlockingCalls::get().submit(p);
    } catch (...) {
        std::lock_guard lk(done_m);
        --on_pool;
        throw;
    }
}

void Engine::take_pool_results_now() {
    Pending* list;
    {
        std::lock_guard lk(done_m);
        list = done_head;
        done_head = nullptr;
        done_any.store(false, std::memory_order_relaxed);
    }
    // The list is newest first: post in the order the calls ended.
    Pending* rev = nullptr;
    while (list) {
        Pending* n = list->w_next;
        list->w_next = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        Pending* n = rev->w_next;
        rev->w_next = nullptr;
        ended_off_loop(rev, rev->res);
        rev = n;
    }
}

// The result of a call made off the loop's thread (the pool, native AIO).
void Engine::ended_off_loop(Pending* p, int res) {
    if (p->cancelled && (res == -EINTR || res == would_wait || (res == 0 && p->sqe.opcode == opc::futex_wait)))
        res = -ECANCELED; // (interrupted: interrupt; a futex wait kicked by its cancel: futex_cancel)
    if (res == would_wait) {
        gate(p); // (a splice or tee that waits for its pipes: splice_try)
        return;
    }
    if (p->recheck && res == -ESPIPE && !p->cancelled) {
        // The descriptor is no longer the regular file it was (closed behind the
        // engine's back, its number reused by a pipe or socket): start over.
        if (p->fd >= 0)
            fd_state(p->fd).kind = Kind::unknown;
        p->recheck = false;
        start(p);
    } else {
        finish(p, res);
    }
}

// The call of an SQE that may block, made on a pool thread. `positional_only`: a read or
// write at an offset answers -ESPIPE as it comes (no call of a stream, which may block).
int Engine::blocking_call(const io_uring_sqe& s, bool positional_only) noexcept {
    const int fd = s.fd;
    const auto off = static_cast<off_t>(s.off);
    void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
    const bool cur = s.off == ~std::uint64_t{0};
    switch (s.opcode) {
    case opc::read:
    case opc::write: {
        // (The caller's RWF_* flags go to the call: the kernel answers what it lacks.)
        const bool wr = s.opcode == opc::write;
        iovec v{addr, s.len};
        auto call = [&](off_t at) {
            return sys(wr ? ::pwritev2(fd, &v, 1, at, static_cast<int>(s.rw_flags))
                          : ::preadv2(fd, &v, 1, at, static_cast<int>(s.rw_flags)));
        };
        int r = cur ? -ESPIPE : call(off);
        return r == -ESPIPE && !positional_only ? call(-1) : r; // a stream: no offset, as io_uring
    }
    case opc::readv:
        return sys(::preadv2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), cur ? -1 : off,
                             static_cast<int>(s.rw_flags)));
    case opc::writev:
        return sys(::pwritev2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), cur ? -1 : off,
                              static_cast<int>(s.rw_flags)));
    case opc::fsync: return sys((s.fsync_flags & compat::fsync_datasync) ? ::fdatasync(fd) : ::fsync(fd));
    case opc::sync_file_range: return sys(::sync_file_range(fd, off, s.len, s.sync_range_flags));
    case opc::fallocate: return sys(::fallocate(fd, static_cast<int>(s.len), off, static_cast<off_t>(s.addr)));
    case opc::ftruncate: return sys(::ftruncate(fd, off));
    case opc::openat:
        return sys(
            ::openat(fd, static_cast<const char*>(addr), static_cast<int>(s.open_flags), static_cast<mode_t>(s.len)));
    case opc::openat2:
        return sys(::syscall(SYS_openat2, fd, addr, reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.off)),
                             static_cast<std::size_t>(s.len)));
    case opc::statx:
        return sys(::statx(fd, static_cast<const char*>(addr), static_cast<int>(s.statx_flags), s.len,
                           reinterpret_cast<struct statx*>(static_cast<std::uintptr_t>(s.off))));
    case opc::renameat:
        return sys(::renameat2(fd, static_cast<const char*>(addr), static_cast<int>(s.len),
                               reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.off)), s.rename_flags));
    case opc::unlinkat: return sys(::unlinkat(fd, static_cast<const char*>(addr), static_cast<int>(s.unlink_flags)));
    case opc::mkdirat: return sys(::mkdirat(fd, static_cast<const char*>(addr), static_cast<mode_t>(s.len)));
    case opc::symlinkat:
        return sys(::symlinkat(static_cast<const char*>(addr), fd,
                               reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.off))));
    case opc::linkat:
        return sys(::linkat(fd, static_cast<const char*>(addr), static_cast<int>(s.len),
                            reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.off)),
                            static_cast<int>(s.hardlink_flags)));
    case opc::madvise:
        return sys(
            ::madvise(addr, s.off ? static_cast<std::size_t>(s.off) : s.len, static_cast<int>(s.fadvise_advice)));
    // (The extended-attribute calls by their system call numbers: the C library's wrappers are
    // declared with nonnull arguments, and a bad pointer must be the kernel's -EFAULT.)
    case opc::getxattr:
        return sys(::syscall(SYS_getxattr, reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.addr3)), addr,
                             reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.off)), std::size_t{s.len}));
    case opc::setxattr:
        return sys(::syscall(SYS_setxattr, reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.addr3)), addr,
                             reinterpret_cast<const void*>(static_cast<std::uintptr_t>(s.off)), std::size_t{s.len},
                             static_cast<int>(s.xattr_flags)));
    case opc::fgetxattr:
        return sys(::syscall(SYS_fgetxattr, fd, addr, reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.off)),
                             std::size_t{s.len}));
    case opc::fsetxattr:
        return sys(::syscall(SYS_fsetxattr, fd, addr, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(s.off)),
                             std::size_t{s.len}, static_cast<int>(s.xattr_flags)));
    case opc::splice:
    case opc::tee: {
        // fd_in, its offset (-1: none) in the address field, fd_out and its offset in off.
        const int in = compat::sqe_field::splice_fd_in(s);
        const unsigned flags = s.splice_flags & ~compat::splice_f_fd_in_fixed;
        if (s.opcode == opc::tee)
            return sys(::tee(in, fd, s.len, flags));
        // (io_uring's splice checks the files' modes before the offsets; splice(2) looks at a
        // pipe's offset first.)
        const int in_fl = ::fcntl(in, F_GETFL), out_fl = ::fcntl(fd, F_GETFL);
        if (in_fl < 0 || out_fl < 0 || ((in_fl | out_fl) & O_PATH) || (in_fl & O_ACCMODE) == O_WRONLY ||
            (out_fl & O_ACCMODE) == O_RDONLY)
            return -EBADF;
        loff_t oin = static_cast<loff_t>(s.addr), oout = static_cast<loff_t>(s.off);
        return sys(::splice(in, s.addr == ~std::uint64_t{0} ? nullptr : &oin, fd,
                            s.off == ~std::uint64_t{0} ? nullptr : &oout, s.len, flags));
    }
    case opc::waitid: return waitid_call(s);
    default: return -EOPNOTSUPP;
    }
}

int Engine::splice_try(const io_uring_sqe& s) noexcept {
    io_uring_sqe now = s;
    now.splice_flags |= SPLICE_F_NONBLOCK;
    const int r = blocking_call(now, false);
    if (r != -EAGAIN)
        return r;
    // The kernel's own call gives -EAGAIN too when the side it would wait for is in
    // non-blocking mode, or, from pipe to pipe, either side is.
    const int ends[2] = {compat::sqe_field::splice_fd_in(s), s.fd};
    pollfd pf[2] = {{ends[0], POLLIN, 0}, {ends[1], POLLOUT, 0}};
    (void)::poll(pf, 2, 0);
    bool pipes = true, nonblocking = false;
    for (int i = 0; i < 2; ++i) {
        struct stat st;
        pipes = pipes && ::fstat(ends[i], &st) == 0 && S_ISFIFO(st.st_mode);
        const int fl = ::fcntl(ends[i], F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK) && pf[i].revents == 0)
            nonblocking = true;
    }
    if (pipes)
        for (int fd : ends)
            if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0 && (fl & O_NONBLOCK))
                nonblocking = true;
    return nonblocking ? -EAGAIN : would_wait;
}

} // namespace ringo::uring::epoll
