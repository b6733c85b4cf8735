// src/epoll/descriptors.cpp - what the engine knows of each descriptor number, its waiters, and the readiness that
// wakes them.
#include "engine.hpp"

#include <algorithm>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

namespace ringo::uring::epoll {

// The operation ended with `res`: its CQE, then what its link does.
// A descriptor this engine just made (accept, socket): whatever the engine knew of an
// earlier descriptor of that number is gone.
// (openat's and openat2's too, though what they made is looked at again at each call that
// goes to the pool: see start.)
void Engine::made(const io_uring_sqe& sqe, int fd) {
    const std::uint8_t opcode = sqe.opcode;
    if (fd < 0)
        return;
    if (opcode == opc::openat || opcode == opc::openat2) {
        // (openat2's open_how is still the caller's, the operation not completed yet; read
        // as the kernel reads it, and unknown when it cannot be: then as O_DIRECT, the pool's
        // way. An open made at once sets it from its own copy: open_at_once.)
        std::uint64_t flags = sqe.open_flags;
        if (opcode == opc::openat2) {
            open_how how{};
            flags = copy_in(&how, sqe.off, sizeof how) ? how.flags : O_DIRECT;
        }
        FdState& st = fd_state(fd);
        reset_fd(st);
        st.opened = true;
        st.direct = (flags & O_DIRECT) != 0;
        st.just_made = true;
        return;
    }
    if (opcode != opc::accept && opcode != opc::socket)
        return;
    bool stream;
    if (opcode == opc::socket) {
        stream = (sqe.off & 0xf) == SOCK_STREAM;
    } else {
        int type = 0;
        socklen_t len = sizeof type;
        stream = ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
    }
    FdState& st = fd_state(fd);
    reset_fd(st);
    st.owned = true;
    st.stream = stream;
    st.just_made = true;
}

// An Fd took `fd` (owned) or gave it up (release: the caller may close it behind the
// engine's back from now on). Taken, its registration is made once and kept for its life
// (adopted), as its close comes through the engine (Fd's destructor, close_soon); a close
// the engine does not see (on another thread, with no runtime current) leaves a wait on a
// reused number late, never lost: verify_registrations re-arms it. What it is, is still
// looked at as for a bare number, so a stale word never changes what a call does. What
// the engine knew of the number before is forgotten (it may have been closed behind its
// back and reused), except what made() found for the descriptor it just made.
void Engine::note_owner(int fd, bool owned) {
    if (fd < 0 || in_table(fd) < 0)
        return; // (a number not open: nothing to keep)
    FdState& st = fd_state(fd);
    if (!owned) { // (made by the engine or not, the caller may now close it anywhere)
        reset_fd(st);
        return;
    }
    if (st.just_made) {
        st.just_made = false;
        return;
    }
    reset_fd(st);
    st.adopted = true;
}

void Engine::grow_table(int fd) { fds.resize(std::max<std::size_t>(static_cast<std::size_t>(fd) + 1, fds.size() * 2)); }

// Makes room in the table for descriptor `fd` (>= 0), which the table only grows to when
// the number is open: 0, -EBADF for a number not open (as the kernel answers; a number
// far above any open one, INT_MAX, must not cost a slot per number below it), or
// -ENOMEM.
int Engine::in_table_slow(int fd) noexcept {
    if (::fcntl(fd, F_GETFD) < 0)
        return -EBADF;
    try {
        (void)fd_state(fd);
    } catch (...) {
        return -ENOMEM;
    }
    return 0;
}

Engine::Kind Engine::find_kind(int fd) {
    FdState& s = fd_state(fd);
    struct stat st;
    if (::fstat(fd, &st) < 0)
        return Kind::unknown; // EBADF: the call itself says so
    s.regular = S_ISREG(st.st_mode);
    s.direct = false;
    s.no_aio = false;
    if (s.regular) {
        const int fl = ::fcntl(fd, F_GETFL);
        s.direct = fl < 0 || (fl & O_DIRECT) != 0; // (unknown: as O_DIRECT, never on the loop)
    }
    if (S_ISSOCK(st.st_mode))
        s.kind = Kind::socket;
    else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode))
        s.kind = Kind::blocking;
    else if (::fcntl(fd, F_GETFL) & O_NONBLOCK)
        s.kind = Kind::nonblocking;
    else
        s.kind = Kind::nowait; // tried with RWF_NOWAIT; -EOPNOTSUPP makes it gated
    return s.kind;
}

// An edge-triggered registration. A descriptor this engine made (accept, socket) is
// registered at its first wait and stays so for its life: later waits make no call
// (returns 1), and op::close through the engine, or the engine making a descriptor of the
// same number, forgets it. Any other descriptor may have been closed behind the engine's
// back (another runtime, a plain close) and its number reused, which took the kernel's
// registration with it: it is made or re-armed at each wait. A descriptor registered before
// is re-armed first (one call while the registration lives), one not yet registered is
// added first; the other call follows when the kernel says the registration is gone
// (ENOENT) or there (EEXIST). Returns 0 after a call, or -errno.
// A descriptor the engine made may still be closed behind its back with a plain close(2)
// and its number come back from a call the engine did not make: a waiter parked without a
// call is counted as unverified, and verify_registrations re-arms what is still unverified
// (an event after which nothing waits on the descriptor verifies it) when a wait found
// nothing for verify_ms, or after 1024 looks at the events: such a wait ends late, never
// not at all.
[[gnu::always_inline]] inline int Engine::watch(int fd) {
    FdState& s = fd_state(fd);
    if (s.registered && (s.owned || s.adopted)) {
        if (!s.unverified) {
            s.unverified = true;
            ++unverified_fds;
        }
        return 1;
    }
    const bool mod_first = s.registered;
    if (int r = arm(!mod_first, fd, s); r < 0) {
        if (r != (mod_first ? -ENOENT : -EEXIST))
            return r;
        if (r = arm(mod_first, fd, s); r < 0)
            return r;
    }
    s.registered = true;
    return 0;
}

// What the engine knew of a descriptor number, forgotten; its waiters (none, unless the
// descriptor was closed behind the engine's back) stay on their lists, where a cancel
// finds them.
// A waiter still parked on the number may wait under a registration that is gone: it is
// counted as unverified (verify_registrations re-arms it). The generation is kept: the
// next registration call (arm) takes the next one.
void Engine::reset_fd(FdState& s) noexcept {
    const bool waiting = s.waits();
    if (s.unverified != waiting)
        waiting ? ++unverified_fds : --unverified_fds;
    FdState fresh{};
    fresh.unverified = waiting;
    fresh.reg_gen = s.reg_gen;
    fresh.readers = s.readers;
    fresh.writers = s.writers;
    fresh.pollers = s.pollers;
    s = fresh;
}

// Re-arms the registration of every descriptor with waiters parked unverified (see
// watch); one whose registration was gone is added again and its waiters tried, and what
// still waits on a descriptor that cannot be registered ends with the error.
void Engine::verify_registrations() {
    for (std::size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].unverified)
            continue;
        verified(fds[i]);
        if (!fds[i].waits())
            continue;
        const int fd = static_cast<int>(i);
        int r = arm(false, fd, fds[i]);
        if (r == 0) {
            fds[i].registered = true;
            continue; // it was alive (and a re-arm reports what is ready now)
        }
        if (r == -ENOENT)
            r = arm(true, fd, fds[i]);
        fds[i].registered = r == 0;
        on_event(fd, readable | writable);
        if (r != 0)
            end_waiters(fd, r);
    }
    polls_since_verify = 0; // (what the pass parked meanwhile is the next pass's)
}

// A descriptor closed through the engine: forget it (its registration went with it), and
// end what still waited on it.
void Engine::forget(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= fds.size())
        return;
    end_waiters(fd, -EBADF);
    reset_fd(fds[static_cast<std::size_t>(fd)]);
}

// Ends what waits on a descriptor with `res`.
void Engine::end_waiters(int fd, int res) {
    // (Indexed again each time: what a finish starts may grow the table.)
    for (int which = 0; which < 3; ++which)
        for (;;) {
            FdState& s = fds[static_cast<std::size_t>(fd)];
            Pending*& list = which == 0 ? s.readers : which == 1 ? s.writers : s.pollers;
            Pending* p = list;
            if (!p)
                break;
            unlink_waiter(list, p);
            finish(p, res);
        }
}

// Runs a waiter's call; true when it is done (removed from its list), false when it waits on.
bool Engine::retry(Pending* p) {
    if (p->gated) [[unlikely]] {
        Side w{};
        const int r = gate_check(p, w);
        if (r == 0 && w.fd == p->fd && w.st == p->state)
            return false; // (still not ready: it waits on where it is)
        unlink_waiter(list_of(p), p);
        gate_on(p, r, w);
        return true;
    }
    for (;;) {
        int r = try_call(p);
        if (r == -EAGAIN)
            return false;
        if (r == -EOPNOTSUPP && fd_state(p->fd).kind == Kind::nowait && !(p->sqe.rw_flags & RWF_NOWAIT) &&
            rw_call(p->sqe.opcode)) {
            // This descriptor cannot be read or written without blocking (no RWF_NOWAIT):
            // its calls wait for readiness, then go to the pool, from now on (with flags of
            // the caller's, this one only: the refusal may be theirs).
            unlink_waiter(list_of(p), p);
            if (p->sqe.rw_flags == 0) {
                fd_state(p->fd).kind = Kind::gated;
                gate(p);
            } else {
                to_pool(p);
            }
            return true;
        }
        if (multishot(p->sqe) && goes_on(p->sqe, r, p->empty)) {
            made(p->sqe, r);
            post(p->sqe.user_data, r, p->cflags | compat::cqe_f_more);
            if (p->sqe.opcode == opc::poll_add)
                return false; // the next edge reports again
            continue;         // the next connection or bytes, if some wait
        }
        unlink_waiter(list_of(p), p);
        finish(p, r);
        return true;
    }
}

// `again`: the call's last try did not end with EAGAIN (a multishot's bytes or
// connection): it must be tried until it does, since no new edge comes for what waits.
void Engine::wait_ready(Pending* p, State st, bool again) {
    p->state = st;
    FdState& s = fd_state(p->fd);
    push_waiter(st == State::reading ? s.readers : st == State::writing ? s.writers : s.pollers, p);
    int r = watch(p->fd);
    if (r < 0) {
        unlink_waiter(list_of(p), p);
        finish(p, r);
        return;
    }
    // One more try: an edge may have come between the call's first try and the
    // registration. (Leaving this to the event that adding or re-arming a registration
    // queues for a descriptor already ready left a multishot receive parked on the epoll
    // engine with bytes waiting: RecvStream.RuntimeDestroyedWithAParkedStream.) Not needed
    // when the registration was there before the try that said EAGAIN (watch made no
    // call): every edge since is reported.
    if (r == 0 || again)
        (void)retry(p);
}

// What a gated call waits for: 1 when every descriptor it needs is ready (or is not one
// poll(2) knows: the pool's call answers), 0 with `wait` set to the first that is not, or
// -errno. A read or write needs its descriptor readable or writable; a splice or tee its input
// readable and its output writable. An error or hang-up counts as ready: the call reports it.
int Engine::gate_check(const Pending* p, Side& wait) noexcept {
    const io_uring_sqe& s = p->sqe;
    pollfd pf[2]{};
    nfds_t n = 1;
    if (s.opcode == opc::splice || s.opcode == opc::tee) {
        pf[0] = {static_cast<int>(compat::sqe_field::splice_fd_in(s)), POLLIN, 0};
        pf[1] = {s.fd, POLLOUT, 0};
        n = 2;
    } else {
        pf[0] = {s.fd, static_cast<short>(is_write(s.opcode) ? POLLOUT : POLLIN), 0};
    }
    for (nfds_t i = 0; i < n; ++i)
        if (pf[i].fd < 0)
            return 1;
    if (::poll(pf, n, 0) < 0)
        return -errno;
    for (nfds_t i = 0; i < n; ++i)
        if (pf[i].revents == 0) {
            wait = {pf[i].fd, pf[i].events == POLLIN ? State::reading : State::writing};
            return 0;
        }
    return 1;
}

void Engine::gate(Pending* p) {
    p->gated = true;
    Side w{};
    const int r = gate_check(p, w);
    gate_on(p, r, w);
}

// A gated call after its check `r` (gate_check): parked on the descriptor it waits for (an
// event tries it again: retry), or on the pool once all is ready, or ended with an error.
void Engine::gate_on(Pending* p, int r, Side w) {
    if (r == 0) {
        p->fd = w.fd;
        p->state = w.st;
        FdState& s = fd_state(w.fd); // (open: poll(2) found it)
        push_waiter(w.st == State::reading ? s.readers : s.writers, p);
        // (A registration made now reports what became ready since the check; one kept
        // reports each edge since, and what was ready before the check was found by it.)
        const int wr = watch(w.fd);
        if (wr >= 0)
            return;
        unlink_waiter(list_of(p), p);
        r = wr == -EPERM ? 1 : wr; // (no readiness to wait for after all: the pool's call waits)
    }
    p->gated = false;
    p->fd = p->sqe.fd;
    if (r < 0)
        finish(p, r);
    else
        to_pool(p);
}

void Engine::on_event(int fd, std::uint32_t what) {
    if (static_cast<std::size_t>(fd) >= fds.size())
        return;
    const bool in = what & readable;
    if (in)
        fds[static_cast<std::size_t>(fd)].drained = false;
    const bool out = what & writable;
    if (in)
        while (Pending* p = fds[static_cast<std::size_t>(fd)].readers)
            if (!retry(p))
                break;
    if (out)
        while (Pending* p = fds[static_cast<std::size_t>(fd)].writers)
            if (!retry(p))
                break;
    // Pollers: each looks at the descriptor itself. What one's end sets off may end others
    // (a link that closes the descriptor, a cancel): each next one is checked to be the
    // same record, still polling this descriptor, before it is tried.
    Pending* p = fds[static_cast<std::size_t>(fd)].pollers;
    while (p) {
        Pending* n = p->w_next;
        const std::uint32_t gen = n ? n->gen : 0;
        (void)retry(p);
        p = (n && n->gen == gen && n->state == State::polling && n->fd == fd) ? n : nullptr;
    }
    // A registration that reported is alive, but an event may still be an older file's
    // under this number (closed behind the engine's back, alive under a dup, its number
    // reused): what still waits after it stays unverified, for verify_registrations.
    FdState& s = fds[static_cast<std::size_t>(fd)];
    if (!s.waits())
        verified(s);
}

// One pass over the descriptors that became ready, waiting up to `timeout_ms` (-1:
// without limit). -EINTR when a signal came.
int Engine::poll_events(int timeout_ms) {
    Ready evs[64];
    const int n = readiness.wait(evs, 64, timeout_ms);
    if (n < 0)
        return n;
    for (int i = 0; i < n; ++i) {
        if (Readiness::woken(evs[i])) { // the pool's results, native AIO's completions
            take_pool_results();
            take_aio_results();
            continue;
        }
        const std::uint32_t fd = Readiness::fd(evs[i]);
        if (fd < fds.size() && fds[fd].reg_gen == Readiness::gen(evs[i])) // (an older registration's: dropped)
            on_event(static_cast<int>(fd), Readiness::what(evs[i]));
    }
    if (unverified_fds > 0 && ((n == 0 && timeout_ms != 0) || ++polls_since_verify >= 1024))
        verify_registrations();
    return n;
}

} // namespace ringo::uring::epoll
