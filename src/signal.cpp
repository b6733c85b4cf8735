// ringo::SignalSet and block_signals: signals read through the ring from a signalfd, and the
// rules of the threads' signal masks (io/signal.hpp says what each call does).
#include <ringo/io/signal.hpp>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/poll.hpp>

namespace ringo {

namespace detail {

// The mask of `signals`; throws std::invalid_argument for an empty list and for a number
// that no signalfd can read (0, out of range, SIGKILL, SIGSTOP, the C library's own
// real-time signals below SIGRTMIN).
static sigset_t signal_mask_of(std::initializer_list<int> signals) {
    if (signals.size() == 0)
        throw std::invalid_argument("ringo: an empty list of signals");
    sigset_t m;
    sigemptyset(&m);
    for (int s : signals) {
        if (s <= 0 || s >= NSIG || s == SIGKILL || s == SIGSTOP || (s >= 32 && s < SIGRTMIN))
            throw std::invalid_argument("ringo: not a signal a program can block and read: " + std::to_string(s));
        sigaddset(&m, s);
    }
    return m;
}

// What the SignalSets of one thread have done to its mask: how many sets hold each signal,
// and which of them the first set had to block (they were unblocked before it).
struct ThreadSignalHolds {
    unsigned holders[NSIG] = {};
    sigset_t unblock_at_end{}; // zero bits: the empty set
};
static thread_local ThreadSignalHolds t_signal_holds;

// Blocks `m` on the calling thread for a SignalSet.
static void hold_signals(const sigset_t& m) noexcept {
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, &m, &before);
    ThreadSignalHolds& h = t_signal_holds;
    for (int s = 1; s < NSIG; ++s)
        if (sigismember(&m, s) == 1 && h.holders[s]++ == 0 && sigismember(&before, s) == 0)
            sigaddset(&h.unblock_at_end, s);
}

// The SignalSet holding `m` on the calling thread goes: a signal no other set of this
// thread holds is unblocked again if the first set blocked it, unless it is pending (it
// then stays blocked: unblocking it would deliver it with its ordinary disposition, which
// for SIGINT, SIGTERM and SIGUSR1 ends the process).
static void release_signals(const sigset_t& m) noexcept {
    ThreadSignalHolds& h = t_signal_holds;
    sigset_t pending, unblock;
    sigemptyset(&pending);
    sigemptyset(&unblock);
    sigpending(&pending);
    bool any = false;
    for (int s = 1; s < NSIG; ++s) {
        if (sigismember(&m, s) != 1 || h.holders[s] == 0 || --h.holders[s] != 0)
            continue;
        if (sigismember(&h.unblock_at_end, s) == 1) {
            sigdelset(&h.unblock_at_end, s);
            if (sigismember(&pending, s) == 0) {
                sigaddset(&unblock, s);
                any = true;
            }
        }
    }
    if (any)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
}

// The state of one SignalSet, on the heap so that the set can move while a task waits in
// next(). When the set is destroyed while a task waits, the waiting next() owns it and
// frees it when it ends (the operation it awaits still points into it).
struct SignalState {
    static constexpr unsigned batch = 8; // siginfo records one read takes at most
    Fd fd;
    sigset_t mask{};
    std::thread::id thread; // the thread whose mask the set changed
    signalfd_siginfo buf[batch]{};
    unsigned head = 0;
    unsigned count = 0; // records in buf not yet handed out
    signalfd_siginfo last{};
    bool reading = false; // a next() is reading from the kernel
    bool orphan = false;  // the SignalSet is gone: the reading next() frees this
    Runtime* rt = nullptr;
    std::uint64_t in_flight = 0; // user_data of the operation the reader awaits, 0: none

    int pop() noexcept {
        last = buf[head++];
        --count;
        return static_cast<int>(last.ssi_signo);
    }
    template <class O>
    void awaiting(const O& o) noexcept {
        in_flight = op::user_data_of(o);
        rt = Runtime::current();
    }
};

Task<int> next_signal(SignalState* s) {
    if (!s)
        co_return -EBADF;
    if (s->count)
        co_return s->pop();
    if (s->reading)
        co_return -EBUSY;
    s->reading = true;
    struct Reading {
        SignalState* s;
        ~Reading() {
            s->reading = false;
            s->in_flight = 0;
            if (s->orphan)
                delete s;
        }
    } guard{s};
    constexpr std::size_t size = sizeof s->buf;
    bool ring_read = true; // false on a kernel without IORING_OP_READ (before 5.6)
    bool polled = false;
    for (;;) {
        int r = -EAGAIN;
        if (ring_read) {
            // A kernel that lets a read of a pollable file wait (6.x, with signalfd's
            // read_iter) waits here; an older one answers -EAGAIN for the non-blocking
            // descriptor at once, and we poll first.
            auto rd = op::read(s->fd, s->buf, size, 0);
            s->awaiting(rd);
            r = co_await rd;
            s->in_flight = 0;
            ring_read = r != -EOPNOTSUPP;
        }
        // Without the ring's read, and when the poll said readable yet the ring's read found
        // nothing (the kernel ran it on one of its own threads, which does not see signals
        // sent to this thread: pthread_kill, raise), read here, where they are pending.
        if (!ring_read || (r == -EAGAIN && polled)) {
            long n = ::read(s->fd.get(), s->buf, size);
            r = n < 0 ? -errno : static_cast<int>(n);
        }
        if (r >= static_cast<int>(sizeof(signalfd_siginfo))) {
            s->head = 0;
            s->count = static_cast<unsigned>(r) / sizeof(signalfd_siginfo);
            co_return s->pop();
        }
        if (s->orphan)
            co_return -ECANCELED; // the set was destroyed while we waited
        if (r != -EAGAIN)
            co_return r < 0 ? r : -EIO;
        auto pl = op::poll_add(s->fd, POLLIN);
        s->awaiting(pl);
        int p = co_await pl;
        s->in_flight = 0;
        if (s->orphan)
            co_return -ECANCELED;
        if (p < 0)
            co_return p;
        polled = true;
    }
}

Task<int> wait_one_signal(SignalSet s) { co_return co_await s.next(); }

} // namespace detail

sigset_t block_signals(std::initializer_list<int> signals) {
    sigset_t m = detail::signal_mask_of(signals);
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &m, &old);
    return old;
}

SignalSet::SignalSet(std::initializer_list<int> signals) : s_(new detail::SignalState) {
    try {
        s_->mask = detail::signal_mask_of(signals);
    } catch (...) {
        delete s_;
        throw;
    }
    s_->thread = std::this_thread::get_id();
    detail::hold_signals(s_->mask);
    int fd = ::signalfd(-1, &s_->mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        detail::release_signals(s_->mask);
        delete s_;
        throw std::system_error(e, std::system_category(), "ringo: signalfd");
    }
    s_->fd.reset(fd);
}

const signalfd_siginfo& SignalSet::info() const noexcept {
    static const signalfd_siginfo none{};
    return s_ ? s_->last : none;
}

unsigned SignalSet::buffered() const noexcept { return s_ ? s_->count : 0; }

bool SignalSet::contains(int sig) const noexcept {
    return s_ && sig > 0 && sig < NSIG && sigismember(&s_->mask, sig) == 1;
}

int SignalSet::fd() const noexcept { return s_ ? s_->fd.get() : -1; }

void SignalSet::close() noexcept {
    detail::SignalState* s = std::exchange(s_, nullptr);
    if (!s)
        return;
    if (s->thread == std::this_thread::get_id())
        detail::release_signals(s->mask);
    if (s->reading) {
        s->orphan = true; // the reader frees it
        if (s->in_flight && s->rt && s->rt == Runtime::current())
            ringo::detail::RuntimeAccess::engine(*s->rt).cancel_op(s->in_flight);
        return;
    }
    delete s;
}

Task<int> wait_signal(std::initializer_list<int> signals) { return detail::wait_one_signal(SignalSet(signals)); }

} // namespace ringo
