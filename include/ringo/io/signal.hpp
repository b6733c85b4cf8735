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

#include <signal.h>
#include <sys/signalfd.h>

#include <initializer_list>
#include <type_traits>
#include <utility>

#include <ringo/core/task.hpp>

namespace ringo {

namespace detail {
/// The state of one SignalSet (src/signal.cpp), on the heap so that the set can move while a
/// task waits in next().
struct SignalState;
/// What SignalSet::next() awaits: the next signal of `s` (null: -EBADF).
Task<int> next_signal(SignalState* s);
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
sigset_t block_signals(std::initializer_list<int> signals);

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
    SignalSet(std::initializer_list<int> signals);
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
    [[nodiscard]] const signalfd_siginfo& info() const noexcept;
    /// Signals read from the kernel and not yet handed out by next().
    [[nodiscard]] unsigned buffered() const noexcept;
    /// Whether `sig` is one of the set's signals.
    [[nodiscard]] bool contains(int sig) const noexcept;
    /// The signalfd, or -1 for a moved-from set.
    [[nodiscard]] int fd() const noexcept;

private:
    void close() noexcept;

    detail::SignalState* s_ = nullptr;
};

namespace detail {
/// Awaits the next signal of `s`, which goes when the await ends.
Task<int> wait_one_signal(SignalSet s);
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
[[nodiscard]] Task<int> wait_signal(std::initializer_list<int> signals);

} // namespace ringo
