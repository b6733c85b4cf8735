// ringo/io/signal.hpp - signals as a stream read through the ring (signalfd), and the mask rules.
//
//   ringo::SignalSet stop{SIGINT, SIGTERM};   // blocks them on this thread, opens a signalfd
//   int sig = co_await stop.next();           // SIGINT or SIGTERM, or -errno (-ECANCELED)
//
// A signal reaches a signalfd only while it is blocked in the thread it would otherwise be
// delivered to. In a program with more than one thread (a RuntimePool, spawn_blocking's pool,
// any std::thread) call ringo::block_signals({...}) at the start of main, before any thread
// starts: threads inherit the mask. See docs/signals.md.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/poll.hpp>

namespace ringo {

namespace detail {

/// The mask of `signals`; throws std::invalid_argument for an empty list and for a number
/// that no signalfd can read (0, out of range, SIGKILL, SIGSTOP, the C library's own
/// real-time signals below SIGRTMIN).
inline sigset_t signal_mask_of(std::initializer_list<int> signals) {
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

/// What the SignalSets of one thread have done to its mask: how many sets hold each signal,
/// and which of them the first set had to block (they were unblocked before it).
struct ThreadSignalHolds {
    unsigned holders[NSIG] = {};
    sigset_t unblock_at_end{}; // zero bits: the empty set
};
inline thread_local ThreadSignalHolds t_signal_holds;

/// Blocks `m` on the calling thread for a SignalSet.
inline void hold_signals(const sigset_t& m) noexcept {
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, &m, &before);
    ThreadSignalHolds& h = t_signal_holds;
    for (int s = 1; s < NSIG; ++s)
        if (sigismember(&m, s) == 1 && h.holders[s]++ == 0 && sigismember(&before, s) == 0)
            sigaddset(&h.unblock_at_end, s);
}

/// The SignalSet holding `m` on the calling thread goes: a signal no other set of this
/// thread holds is unblocked again if the first set blocked it, unless it is pending (it
/// then stays blocked: unblocking it would deliver it with its ordinary disposition, which
/// for SIGINT, SIGTERM and SIGUSR1 ends the process).
inline void release_signals(const sigset_t& m) noexcept {
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

/// The state of one SignalSet, on the heap so that the set can move while a task waits in
/// next(). When the set is destroyed while a task waits, the waiting next() owns it and
/// frees it when it ends (the operation it awaits still points into it).
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

inline Task<int> next_signal(SignalState* s) {
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

} // namespace detail

/// Blocks `signals` in the calling thread and returns the mask the thread had before (for
/// pthread_sigmask(SIG_SETMASK, &old, nullptr), should it want it back). Call it at the start
/// of main, before any thread starts: every thread inherits its creator's mask, and a signal
/// sent to the process goes to any one thread that does not block it, where its ordinary
/// disposition applies (for SIGINT and SIGTERM: the process ends) and no SignalSet sees it.
/// Throws std::invalid_argument as SignalSet does.
///
///     int main() {
///         ringo::block_signals({SIGINT, SIGTERM}); // first, before a RuntimePool or any thread
///         ...
inline sigset_t block_signals(std::initializer_list<int> signals) {
    sigset_t m = detail::signal_mask_of(signals);
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &m, &old);
    return old;
}

/// Signals as a stream: blocks the given signals in the calling thread (pthread_sigmask) and
/// opens a signalfd for them (SFD_CLOEXEC | SFD_NONBLOCK, owned by an Fd);
/// `co_await set.next()` yields each signal as it arrives, read through the ring. Move-only;
/// used on one thread: the one that created it (whose mask it changed) and whose runtime
/// awaits next(). See docs/signals.md.
///
///     ringo::SignalSet stop{SIGINT, SIGTERM};
///     auto [which, v] = co_await ringo::when_any(serve(), stop.next());
///
/// Rules:
/// - Thread: a signal sent to the process reaches the set only if every thread of the
///   process blocks it. The set blocks it in its own thread; with other threads, call
///   block_signals at the start of main. A signal sent to the set's thread (raise,
///   pthread_kill) is read as well. (Under RuntimeOptions::sqpoll the kernel's polling
///   thread reads, and only signals sent to the process are seen.)
/// - Several at once: one read takes up to 8 pending signals; next() hands them out one by
///   one (buffered() counts what is left). The kernel merges repeats of a standard signal
///   that is already pending into one, and hands pending signals out lowest number first;
///   real-time signals (SIGRTMIN + n) queue, each delivery once, in order.
/// - Mask at the end: when the last set of this thread holding a signal goes, the signal is
///   unblocked again if a set blocked it (it was not blocked before the first set) and is not
///   pending; a pending one stays blocked rather than be delivered with its default action,
///   and a signal that was blocked before (block_signals) stays blocked. Signals the set had
///   read and not handed out are dropped with it. A set destroyed on another thread than its
///   own changes no mask (its signals stay blocked in its thread).
/// - Two sets holding the same signal on one thread compete for it: one of them reads it.
class SignalSet {
public:
    /// Blocks `signals` in this thread and opens the signalfd. Throws std::invalid_argument
    /// for an empty list or a signal that cannot be read (SIGKILL, SIGSTOP, 0, out of range),
    /// std::system_error when signalfd fails (the mask is then left as it was).
    SignalSet(std::initializer_list<int> signals) : s_(new detail::SignalState) {
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
    /// Takes `o`'s signals over; `o` is left empty.
    SignalSet(SignalSet&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    /// Closes this set (as close() does), then takes `o`'s over.
    SignalSet& operator=(SignalSet&& o) noexcept {
        if (this != &o) {
            close();
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    SignalSet(const SignalSet&) = delete;
    SignalSet& operator=(const SignalSet&) = delete;
    /// Closes the signalfd and applies the mask rule. A task waiting in next() is woken with
    /// -ECANCELED (its read is cancelled; destroy the set on that task's thread), and the
    /// state its read points into stays alive until it has.
    ~SignalSet() { close(); }

    /// `co_await set.next()`: the next signal's number (>= 1), or -errno: -ECANCELED when
    /// the awaiting task is cancelled (JoinHandle::cancel, a lost when_any, with_timeout, a
    /// cancelled TaskScope, a runtime's shutdown) or the set is destroyed while it waits,
    /// -EBUSY when another task already waits in next() of this set, -EBADF for a moved-from
    /// set, -ENXIO outside a runtime. A signal that was read before the cancellation is
    /// handed out first; nothing read is lost while the set lives.
    [[nodiscard]] Task<int> next() { return detail::next_signal(s_); }

    /// The signalfd record of the signal next() last yielded: ssi_signo, the sender's ssi_pid
    /// and ssi_uid, ssi_code (SI_USER from kill, SI_TKILL from raise and pthread_kill,
    /// SI_QUEUE with ssi_int from sigqueue, SI_KERNEL ...). Zeros before the first.
    [[nodiscard]] const signalfd_siginfo& info() const noexcept {
        static const signalfd_siginfo none{};
        return s_ ? s_->last : none;
    }
    /// Signals read from the kernel and not yet handed out by next().
    [[nodiscard]] unsigned buffered() const noexcept { return s_ ? s_->count : 0; }
    /// Whether `sig` is one of the set's signals.
    [[nodiscard]] bool contains(int sig) const noexcept {
        return s_ && sig > 0 && sig < NSIG && sigismember(&s_->mask, sig) == 1;
    }
    /// The signalfd, or -1 for a moved-from set.
    [[nodiscard]] int fd() const noexcept { return s_ ? s_->fd.get() : -1; }

private:
    void close() noexcept {
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

    detail::SignalState* s_ = nullptr;
};

namespace detail {
inline Task<int> wait_one_signal(SignalSet s) { co_return co_await s.next(); }
} // namespace detail

/// One-shot: `co_await ringo::wait_signal(SIGINT, SIGTERM)` yields the first of them to
/// arrive (or -errno, as SignalSet::next). The set is made (and the signals blocked) when
/// wait_signal is called, so a signal arriving before the co_await is not missed; it goes
/// when the await ends, with SignalSet's mask rule: unless they were blocked before (see
/// block_signals), the signals are unblocked again and the next Ctrl-C ends the process.
/// Throws std::invalid_argument as SignalSet does.
///
/// The signals are plain arguments, so the call can stand inside `co_await`: GCC before 13
/// rejects a braced list there ("array used as initializer", GCC Bugzilla PR 103871), which
/// the std::initializer_list form below needs.
template <class... More>
requires(std::is_convertible_v<More, int>&&...) [[nodiscard]] Task<int> wait_signal(int signal, More... more) {
    return detail::wait_one_signal(SignalSet{signal, static_cast<int>(more)...});
}

/// wait_signal with the signals as a list: `ringo::wait_signal({SIGINT, SIGTERM})`, for a
/// call outside `co_await` (block_on, a Task kept in a variable) or a compiler that takes a
/// braced list in `co_await` (GCC 13 and later, Clang).
[[nodiscard]] inline Task<int> wait_signal(std::initializer_list<int> signals) {
    return detail::wait_one_signal(SignalSet(signals));
}

} // namespace ringo
