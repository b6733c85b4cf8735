// src/epoll/waitid.cpp - IORING_OP_WAITID on the epoll engine. The kernel's checks of the SQE,
// then waitid(2) at once with WNOHANG (the system call makes the kernel's own checks of the
// id type, the id and the options, and answers -ECHILD when there is no such child): a child
// whose state changed, or a caller who asked WNOHANG, ends it there; otherwise the wait is a
// blocking waitid(2) on the thread pool, which a cancel interrupts (-ECANCELED). The result is
// 0 or -errno, as io_uring's (not a pid), and the caller's siginfo_t (addr2) gets the fields
// io_uring writes: si_signo (SIGCHLD, or 0 when no child changed), si_errno, si_code, si_pid,
// si_uid and si_status; nothing else of it is written.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>

#include "engine.hpp"

namespace ringo::uring::epoll {

namespace {

// The siginfo fields io_uring writes, from what waitid(2) wrote into `got` (its si_pid 0: no
// child changed). False when the caller's siginfo_t cannot be written (-EFAULT).
bool write_siginfo(std::uint64_t to, const siginfo_t& got) noexcept {
    if (!to)
        return true;
    const bool changed = got.si_pid != 0;
    const int head[3] = {changed ? SIGCHLD : 0, 0, changed ? got.si_code : 0};
    const int child[3] = {changed ? got.si_pid : 0, changed ? static_cast<int>(got.si_uid) : 0,
                          changed ? got.si_status : 0};
    return copy_out(to + offsetof(siginfo_t, si_signo), head, sizeof head) &&
           copy_out(to + offsetof(siginfo_t, si_pid), child, sizeof child);
}

long sys_waitid(const io_uring_sqe& s, siginfo_t& info, int extra) noexcept {
    return ::syscall(SYS_waitid, static_cast<int>(s.len), static_cast<int>(s.fd), &info,
                     static_cast<int>(s.file_index) | extra, nullptr);
}

// The result of a wait that failed with `err`: -ECHILD (no such child) and -EINTR (the wait
// interrupted by its cancel) end the wait, after which io_uring writes the siginfo_t as for a
// wait that found nothing (or fails with -EFAULT); the other errors are its checks of the
// arguments, before any write.
int ended(const io_uring_sqe& s, int err) noexcept {
    if (err != -ECHILD && err != -EINTR)
        return err;
    return write_siginfo(s.off, siginfo_t{}) ? err : -EFAULT;
}

} // namespace

// The SQE's fields the kernel wants zero; then the call at once.
void Engine::waitid_start(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    if (s.addr || s.buf_index || s.addr3 || s.rw_flags) {
        finish(p, -EINVAL);
        return;
    }
    siginfo_t info{};
    if (const long r = sys_waitid(s, info, WNOHANG); r < 0) {
        finish(p, ended(s, -errno));
        return;
    }
    if (info.si_pid != 0 || (s.file_index & WNOHANG)) {
        finish(p, write_siginfo(s.off, info) ? 0 : -EFAULT);
        return;
    }
    to_pool(p);
}

// The wait, made on a pool thread: the caller's own waitid(2), its siginfo written as io_uring
// writes it.
int Engine::waitid_call(const io_uring_sqe& s) noexcept {
    siginfo_t info{};
    if (sys_waitid(s, info, 0) < 0) // (-EINTR: cancelled, or else made again; either way the
        return ended(s, -errno);    // siginfo is written as the kernel's cancel writes it)
    return write_siginfo(s.off, info) ? 0 : -EFAULT;
}

} // namespace ringo::uring::epoll
