// src/epoll/ring.cpp - the epoll engine's user-space ring: its records, the completion queue
// and its overflow, links, drains, cancellation, submission and enter.
#include "engine.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>

namespace ringo::uring::epoll {

Engine::Engine(unsigned sq_entries, unsigned cq_entries, io_uring& r) : ring(r) {
    // (The readiness back end is made first, a member: what throws here closes it.) Memory,
    // then the signal mask, which cannot fail.
    sqes.resize(sq_entries);
    cqes.resize(cq_entries);
    fds.resize(1024); // the usual descriptor limit: the first call on a descriptor allocates nothing
    heap.reserve(64);
    devs.reserve(max_devs); // (statx_at_once allocates nothing)
    sq_array.resize(sq_entries);
    if (t_engines++ == 0) {
        sigset_t pipe_set, old;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        t_unblock_sigpipe = pthread_sigmask(SIG_BLOCK, &pipe_set, &old) == 0 && !sigismember(&old, SIGPIPE);
    }
    for (unsigned i = 0; i < sq_entries; ++i)
        sq_array[i] = i;
    std::memset(&ring, 0, sizeof ring);
    ring.sq.khead = &sq_head;
    ring.sq.ktail = &sq_tail;
    ring.sq.kring_mask = nullptr;
    ring.sq.kflags = &sq_flags;
    ring.sq.kdropped = &sq_dropped;
    ring.sq.array = sq_array.data();
    ring.sq.sqes = sqes.data();
    ring.sq.ring_mask = sq_entries - 1;
    ring.sq.ring_entries = sq_entries;
    ring.cq.khead = &cq_head;
    ring.cq.ktail = &cq_tail;
    ring.cq.kflags = &cq_flags;
    ring.cq.koverflow = &cq_overflow;
    ring.cq.cqes = cqes.data();
    ring.cq.ring_mask = cq_entries - 1;
    ring.cq.ring_entries = cq_entries;
    ring.ring_fd = -1;
    ring.enter_ring_fd = -1;
}

Engine::~Engine() {
    // Direct reads and writes in flight: io_destroy waits for them to end (their buffers
    // are written until then). Calls still running on the pool write into their
    // operation's buffers and post into this engine: wait for them (the runtime has
    // cancelled everything else).
    if (aio == AioState::ready)
        (void)::syscall(SYS_io_destroy, aio_ctx);
    // Calls that may never end by themselves (a read of a terminal, a FIFO's open) are
    // interrupted, again every 10 ms until they ended.
    for (Pending* p = all; p; p = p->all_next)
        if (p->state == State::pool && !p->cancelled) {
            if (is_futex_wait(p->sqe.opcode) && futex_cancel(p) > 0)
                continue;
            p->cancelled = true;
            interrupt(p);
        }
    {
        std::unique_lock lk(done_m);
        while (!done_cv.wait_for(lk, std::chrono::milliseconds(10), [this] { return on_pool == 0; })) {
            lk.unlock();
            (void)interrupt_again();
            lk.lock();
        }
    }
    if (--t_engines == 0 && t_unblock_sigpipe) {
        take_sigpipe();
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_UNBLOCK, &pipe_set, nullptr);
    }
}

void Engine::more_records() {
    constexpr std::size_t n = 64;
    std::unique_ptr<Pending[]> fresh(new Pending[n]);
    chunks.push_back(std::move(fresh)); // when this throws, `fresh` frees the chunk
    Pending* c = chunks.back().get();
    for (std::size_t i = 0; i < n; ++i) {
        c[i].w_next = free_list;
        free_list = &c[i];
    }
}

Engine::Pending* Engine::make() {
    if (!free_list) [[unlikely]]
        more_records();
    Pending* p = free_list;
    free_list = p->w_next;
    ++p->gen;
    p->w_next = p->w_prev = nullptr;
    p->chain = nullptr;
    p->all_prev = nullptr;
    p->all_next = all;
    if (all)
        all->all_prev = p;
    all = p;
    p->eng = this;
    p->cancelled = false;
    p->connecting = false;
    p->recheck = false;
    p->gated = false;
    p->refused = false;
    p->first_try = 0;
    p->done_io = 0;
    p->drain_started = false;
    p->heap_index = static_cast<std::size_t>(-1);
    p->res = 0;
    p->cflags = 0;
    p->timed = nullptr;
    p->prep_failed = false;
    p->link_failed = false;
    p->notif = false;
    p->notif_report = false;
    return p;
}

void Engine::count_down() {
    counting = true;
    for (std::size_t i = 0; i < counted.size();) {
        Pending* t = counted[i];
        if (t->state != State::timer || t->sqe.opcode != opc::timeout) { // ended meanwhile
            counted[i] = counted.back();
            counted.pop_back();
            continue;
        }
        if (--t->sqe.off == 0) {
            counted[i] = counted.back();
            counted.pop_back();
            heap_remove(t);
            finish(t, 0);
            continue;
        }
        ++i;
    }
    counting = false;
}

void Engine::move_overflow() {
    while (!overflow.empty() && cq_ready() < cqes.size()) {
        io_uring_cqe c = overflow.front();
        overflow.pop_front();
        cqes[cq_tail & (cqes.size() - 1)] = c;
        __atomic_store_n(&cq_tail, cq_tail + 1, __ATOMIC_RELEASE);
    }
    if (overflow.empty())
        sq_flags &= ~compat::sq_cq_overflow;
}

void Engine::finish(Pending* p, int res) {
    // Done before its CQE is posted: what the post sets off (a counted timeout's count, a
    // link) must not find it still in flight.
    p->state = State::done;
    if (p->sqe.opcode == opc::timeout && p->sqe.off)
        counted.erase(std::remove(counted.begin(), counted.end(), p), counted.end());
    made(p->sqe, res);
    Pending* next = p->chain;
    if (p->notif) [[unlikely]] {
        post_zc(p, res); // (IOSQE_CQE_SKIP_SUCCESS: refused at its start, as the kernel refuses it)
    } else if (!(p->sqe.flags & compat::sqe_flag::cqe_skip_success)) [[likely]] {
        post(p->sqe.user_data, res, res >= 0 ? p->cflags : 0);
    } else if (breaks_link(p, res)) {
        // IOSQE_CQE_SKIP_SUCCESS: a result that fails the link is posted (and the rest of
        // the link is cancelled without CQEs of its own, as the kernel skips them).
        post(p->sqe.user_data, res, res >= 0 ? p->cflags : 0);
    }
    if (next || drain_held != 0) [[unlikely]] {
        finish_link(p, next, res);
        return;
    }
    release(p);
}

// finish's end for an SQE followed in its link, or while a drain holds links: the next
// starts, or the rest of the link is cancelled; then what the drain held may start.
void Engine::finish_link(Pending* p, Pending* next, int res) {
    const bool broke = next && !(p->sqe.flags & compat::sqe_flag::io_hardlink) && breaks_link(p, res);
    const bool quiet = p->sqe.flags & compat::sqe_flag::cqe_skip_success;
    release(p);
    if (next && next->sqe.opcode == opc::link_timeout && next->state == State::timer)
        next = link_timeout_ended(next, broke);
    if (next) {
        if (broke)
            cancel_chain(next, quiet);
        else
            begin(next);
    }
    if (drain_held != 0) // (links a drain holds)
        undrain();
}

// The bytes an iovec array asks for, read as the kernel reads it (0 when it cannot be
// read: the call then fails, which breaks the link anyway).
std::uint32_t Engine::vector_length(const io_uring_sqe& s) noexcept {
    std::uint64_t total = 0;
    iovec part[64];
    for (std::uint32_t i = 0; i < s.len && i < IOV_MAX; i += 64) {
        const std::uint32_t n = std::min<std::uint32_t>(64, s.len - i);
        if (!read_user(part, s.addr + i * sizeof(iovec), n * sizeof(iovec)))
            return 0;
        for (std::uint32_t k = 0; k < n; ++k)
            total += part[k].iov_len;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(total, 0x7fffffff));
}

// Whether result `res` of `s` cancels the rest of its link, as the kernel decides it: an
// error (not a timeout's -ETIME with ETIME_SUCCESS), and a read or write (or splice, tee)
// that moved fewer bytes than asked, and a recv or send with MSG_WAITALL that did.
bool Engine::breaks_link(const Pending* p, int res) noexcept {
    const io_uring_sqe& s = p->sqe;
    if (res < 0) {
        // The kernel marks most failures as failing the link, not these calls' own: the next
        // member runs, and with IOSQE_CQE_SKIP_SUCCESS no CQE is posted for the error either.
        // (Its checks' refusals before a call runs fail the link all the same: refuse.)
        if (p->refused)
            return true;
        switch (s.opcode) {
        case opc::fsync:
        case opc::sync_file_range:
        case opc::fallocate:
        case opc::ftruncate:
        case opc::shutdown:
        case opc::statx:
        case opc::renameat:
        case opc::unlinkat:
        case opc::mkdirat:
        case opc::symlinkat:
        case opc::linkat:
        case opc::madvise:
        case opc::getxattr:
        case opc::fgetxattr:
        case opc::setxattr:
        case opc::fsetxattr: return false;
        case opc::futex_wait:
        case opc::futex_waitv: return res != -ECANCELED; // (a cancelled wait is not a failure)
        case opc::timeout: return !(res == -ETIME && (s.timeout_flags & compat::timeout_etime_success));
        default: return true;
        }
    }
    switch (s.opcode) {
    case opc::read:
    case opc::write: return !(s.flags & compat::sqe_flag::buffer_select) && static_cast<std::uint32_t>(res) != s.len;
    case opc::readv:
    case opc::writev: return static_cast<std::uint32_t>(res) != p->done_io; // (vector_length, at start)
    case opc::splice:
    case opc::tee: return static_cast<std::uint32_t>(res) != s.len;
    case opc::recv:
    case opc::send: return (s.msg_flags & MSG_WAITALL) && static_cast<std::uint32_t>(res) < s.len;
    default: return false;
    }
}

// `quiet`: the SQE that failed asked for IOSQE_CQE_SKIP_SUCCESS, and the kernel then posts
// no -ECANCELED for the rest of its link.
void Engine::cancel_chain(Pending* p, bool quiet) {
    while (p) {
        Pending* n = p->chain;
        if (!quiet)
            post(p->sqe.user_data, -ECANCELED, 0);
        release(p);
        p = n;
    }
    if (drain_held != 0) // (links a drain holds)
        undrain();
}

// Ends an operation that is in flight with -ECANCELED (a call on the pool runs to its
// end: -EALREADY). Returns the cancel request's result for it.
int Engine::cancel_one(Pending* p) {
    switch (p->state) {
    case State::reading:
    case State::writing:
    case State::polling:
        unlink_waiter(list_of(p), p);
        finish(p, -ECANCELED);
        return 0;
    case State::timer:
        heap_remove(p);
        finish(p, -ECANCELED);
        return 0;
    case State::pool:
        if (is_futex_wait(p->sqe.opcode))
            return futex_cancel(p); // (withdrawn at once, as the kernel's futex request is)
        p->cancelled = true;
        interrupt(p);
        // (A waitid is withdrawn as the kernel withdraws its wait: the cancel reports 1.)
        return p->sqe.opcode == opc::waitid ? 1 : -EALREADY;
    case State::aio: p->cancelled = true; return -EALREADY;
    default: return -ENOENT;
    }
}

int Engine::cancel(const io_uring_sqe& s, Pending* self) {
    const std::uint32_t fl = s.cancel_flags;
    if (fl & ~(compat::async_cancel_all | compat::async_cancel_fd | compat::async_cancel_any |
               compat::async_cancel_fd_fixed | compat::async_cancel_userdata | compat::async_cancel_op))
        return -EINVAL; // (a flag the kernel does not have: never "everything")
    if (fl & compat::async_cancel_fd_fixed)
        return -EBADF; // no registered file table
    if ((fl & compat::async_cancel_fd) && !(fl & compat::async_cancel_any) && ::fcntl(s.fd, F_GETFD) < 0)
        return -EBADF; // as the kernel, which looks the descriptor up first
    const bool many = fl & (compat::async_cancel_all | compat::async_cancel_any);
    // One at a time, looking again each time: ending one can start another (the next SQE
    // of its link). A call on the pool stays in the list until it ends (marked cancelled).
    int found = 0, last = -ENOENT;
    for (;;) {
        Pending* hit = nullptr;
        for (Pending* p = all; p && !hit; p = p->all_next) {
            // (A link timeout is not found by a cancel, as the kernel's is not: its SQE ends it.)
            if (p == self || p->state == State::held || p->state == State::free || p->sqe.opcode == opc::link_timeout ||
                ((p->state == State::pool || p->state == State::aio) && p->cancelled))
                continue;
            // (What the flags name must all match; without FD or OP, the user_data.)
            const bool by_data =
                (fl & compat::async_cancel_userdata) || !(fl & (compat::async_cancel_fd | compat::async_cancel_op));
            if ((fl & compat::async_cancel_any) ||
                ((!(fl & compat::async_cancel_fd) || (p->sqe.fd == s.fd && p->sqe.opcode != opc::timeout)) &&
                 (!(fl & compat::async_cancel_op) || (p->notif ? p->zc_opcode : p->sqe.opcode) == s.len) &&
                 (!by_data || p->sqe.user_data == s.addr)))
                hit = p;
        }
        if (!hit)
            break;
        last = cancel_one(hit);
        ++found;
        if (!many)
            break;
    }
    if (many)
        return found ? found : -ENOENT;
    return last;
}

Engine::Pending* Engine::find_in_flight(std::uint64_t ud, std::uint8_t opcode) {
    for (Pending* p = all; p; p = p->all_next)
        if (p->sqe.user_data == ud && p->sqe.opcode == opcode && p->state != State::held && p->state != State::free)
            return p;
    return nullptr;
}

// A link (IOSQE_IO_LINK) is gathered whole before its first SQE starts: the first may end
// at once, and the rest must then be there to follow it or be cancelled. A link still
// open when the submission ends is complete, as the kernel takes it.
void Engine::submit(unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
        const io_uring_sqe& s = sqes[sq_head & (sqes.size() - 1)];
        // The fast path of a positional read that the page cache holds (read_now), the
        // common call on a file: its CQE without a record, when it is not in a link.
        // Both take only a call on a plain descriptor number outside any link; anything
        // unusual (see start) takes the record's way.
        AtOnce first = AtOnce::not_tried;
        const bool plain = s.fd >= 0 && !link_tail && (s.flags & ~compat::sqe_flag::async) == 0 && drain_held == 0 &&
                           drains_running == 0;
        if (plain && (s.opcode == opc::read || s.opcode == opc::readv)) {
            int r;
            first = read_now(s, r);
            if (first == AtOnce::done) {
                taken_done(s, r);
                continue;
            }
        } else if (plain && socket_only(s.opcode) && s.ioprio == 0 && !(s.msg_flags & MSG_WAITALL) &&
                   static_cast<std::size_t>(s.fd) < fds.size() &&
                   fds[static_cast<std::size_t>(s.fd)].kind == Kind::socket && !skips_first_try(s)) {
            // And of a socket call on what was last found a socket (start makes it without
            // looking again either), the common call on a socket: most find data or room.
            // Waiting, its record skips start's first try.
            const int r = after_try(s, socket_call_now(s));
            if (r != -EAGAIN || callers_nowait(s)) {
                taken_done(s, r);
                continue;
            }
            first = AtOnce::missed;
        }
        __atomic_store_n(&sq_head, sq_head + 1, __ATOMIC_RELEASE);
        Pending* p = make();
        p->sqe = s;
        p->first_try = static_cast<unsigned char>(first);
        p->state = State::held;
        if (s.opcode == opc::link_timeout) [[unlikely]]
            link_timeout_prep(p); // (checked as it joins its link, as the kernel checks it)
        const bool links = s.flags & (compat::sqe_flag::io_link | compat::sqe_flag::io_hardlink);
        if (link_tail) {
            link_tail->chain = p; // starts when its predecessor ends
            link_tail = p;
        } else {
            link_head = link_tail = p;
        }
        if (!links)
            start_link();
    }
    start_link();
}

// A link that a drain may hold (start_link's slow path).
void Engine::start_or_hold(Pending* head) {
    if (private_ud && head->sqe.user_data == private_ud && !head->chain) {
        start(head); // (the runtime's own wake-up read: no SQE at all on io_uring)
        return;
    }
    std::size_t n = 0;
    for (Pending* q = head; q; q = q->chain)
        ++n;
    // Held behind a drain (queued, or one running), or a drain itself while others run.
    if (!drain_queue.empty() || drains_running > 0 || ((head->sqe.flags & compat::sqe_flag::io_drain) && alive() > n)) {
        drain_queue.push_back(head);
        drain_held += n;
        return;
    }
    start_drained(head);
}

void Engine::start_drained(Pending* head) {
    if (head->sqe.flags & compat::sqe_flag::io_drain) {
        head->drain_started = true;
        ++drains_running;
    }
    begin(head);
}

// The records alive (made and not released), the runtime's own excepted: counted only
// where a drain is involved, so that no other operation pays for it.
std::size_t Engine::alive() const noexcept {
    std::size_t n = 0;
    for (const Pending* p = all; p; p = p->all_next)
        n += !(private_ud && p->sqe.user_data == private_ud);
    return n;
}

// Starts what the drain held once it may: a drain when nothing else is alive, anything
// else when no drain runs.
void Engine::undrain() {
    if (undraining)
        return; // (the outer call goes on: what a start ends comes back here)
    undraining = true;
    struct Reset {
        bool& b;
        ~Reset() { b = false; }
    } reset{undraining};
    while (!drain_queue.empty()) {
        Pending* head = drain_queue.front();
        const bool drains = head->sqe.flags & compat::sqe_flag::io_drain;
        if (drains_running > 0 || (drains && alive() > drain_held))
            return;
        drain_queue.pop_front();
        for (Pending* q = head; q; q = q->chain)
            --drain_held;
        start_drained(head);
    }
}

long Engine::enter_once(unsigned to_submit, unsigned min_complete, unsigned flags, const std::uint64_t* timeout_ns) {
    const unsigned n = std::min(to_submit, sq_tail - sq_head);
    submit(n);
    flush_overflow();
    if (!(flags & compat::enter::getevents))
        return n;
    take_pool_results();
    take_aio_results();
    fire_timers();
    // Completions that came at once must not keep the descriptors that wait from being
    // looked at: every 16th enter that would not wait looks anyway (without waiting).
    if (min_complete == 0 || cq_ready() >= min_complete) {
        if (min_complete == 0 || ++quick_enters_ % 16 == 0) {
            int r = poll_events(0);
            if (r == -EINTR)
                return -EINTR;
            fire_timers();
            flush_overflow();
        }
        return n;
    }
    // (The caller's timeout counts from here: what came before took no wait.)
    const std::uint64_t start_ns = timeout_ns ? mono_ns() : 0;
    for (;;) {
        flush_overflow();
        if (cq_ready() >= min_complete)
            return n;
        // How long the wait may last: the caller's timeout and the nearest timer.
        long long wait_ns = -1;
        if (timeout_ns) {
            std::uint64_t now = mono_ns();
            std::uint64_t end = start_ns + *timeout_ns;
            if (now >= end)
                return -ETIME;
            wait_ns = static_cast<long long>(end - now);
        }
        if (!heap.empty()) {
            std::uint64_t now = mono_ns();
            const std::uint64_t d = heap.front()->deadline;
            // (A deadline the clock never reaches waits no shorter than any other wait.)
            long long t = d > now ? static_cast<long long>(std::min<std::uint64_t>(d - now, 1ull << 62)) : 0;
            if (wait_ns < 0 || t < wait_ns)
                wait_ns = t;
        }
        if (unverified_fds > 0 && (wait_ns < 0 || wait_ns > verify_ms * 1'000'000LL))
            wait_ns = verify_ms * 1'000'000LL; // (then verify_registrations, if nothing came)
        if (!interrupted.empty() && interrupt_again() && (wait_ns < 0 || wait_ns > 10'000'000))
            wait_ns = 10'000'000; // (an interrupt may have come before its call started)
        int ms = wait_ns < 0 ? -1 : static_cast<int>(std::min<long long>((wait_ns + 999'999) / 1'000'000, 1 << 30));
        int r = poll_events(ms);
        if (r == -EINTR)
            return -EINTR;
        fire_timers();
    }
}

} // namespace ringo::uring::epoll
