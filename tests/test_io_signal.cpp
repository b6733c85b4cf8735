// SignalSet (io/signal.hpp): signals read through the ring from a signalfd, one by one, with
// cancellation, a set dropped while a task waits, the mask rule, and a RuntimePool whose
// threads block the signal from the start. Then the two Ctrl-C examples, run as programs
// that get a real SIGINT.
//
// Only SIGUSR1, SIGUSR2 and SIGRTMIN are used (never SIGINT in this process: ctest). While a
// test runs, a handler counts those signals if one is ever delivered the ordinary way (a
// thread that did not block it), instead of letting it end the process; every test checks
// that none was, that the thread's mask is as it found it, and that no descriptor leaked.
#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::SignalSet;
using ringo::Task;

using ringo_test::open_fds;

sigset_t current_mask() {
    sigset_t m;
    pthread_sigmask(SIG_SETMASK, nullptr, &m);
    return m;
}
bool blocked(int sig) {
    sigset_t m = current_mask();
    return sigismember(&m, sig) == 1;
}
bool pending(int sig) {
    sigset_t p;
    sigpending(&p);
    return sigismember(&p, sig) == 1;
}

std::atomic<int> g_stray{0};
extern "C" void count_stray(int) { g_stray.fetch_add(1); }

/// Sends `sig` to thread `t` once `ready` is set, after a short pause so that the receiver is
/// most likely waiting in the kernel (the result does not depend on it).
std::thread send_later(pthread_t t, int sig, std::atomic<bool>* ready = nullptr) {
    return std::thread([t, sig, ready] {
        while (ready && !ready->load())
            std::this_thread::yield();
        std::this_thread::sleep_for(20ms);
        pthread_kill(t, sig);
    });
}

/// The same with kill(2), to the process, from a thread that blocks `sig` itself: the
/// receiving set's thread is then the only one the signal can go to.
std::thread kill_later(int sig, std::atomic<bool>* ready) {
    return std::thread([sig, ready] {
        ringo::block_signals({sig});
        while (!ready->load())
            std::this_thread::yield();
        std::this_thread::sleep_for(20ms);
        ::kill(::getpid(), sig);
    });
}

class Signals : public ::testing::Test {
protected:
    static constexpr int kCount = 3;
    int sigs_[kCount] = {SIGUSR1, SIGUSR2, 0};
    struct sigaction old_[kCount] {};
    sigset_t mask_before_{};
    int fds_before_ = 0;

    void SetUp() override {
        sigs_[2] = SIGRTMIN;
        mask_before_ = current_mask();
        struct sigaction sa {};
        sa.sa_handler = &count_stray;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < kCount; ++i)
            sigaction(sigs_[i], &sa, &old_[i]);
        g_stray = 0;
        fds_before_ = open_fds();
    }
    void TearDown() override {
        sigset_t now = current_mask();
        for (int s = 1; s < NSIG; ++s)
            EXPECT_EQ(sigismember(&now, s), sigismember(&mask_before_, s)) << "signal " << s << " left (un)blocked";
        // Drop what a failed test left pending, then the handlers.
        sigset_t ours;
        sigemptyset(&ours);
        for (int s : sigs_)
            sigaddset(&ours, s);
        pthread_sigmask(SIG_BLOCK, &ours, nullptr);
        timespec zero{};
        while (sigtimedwait(&ours, nullptr, &zero) > 0) {
        }
        pthread_sigmask(SIG_SETMASK, &mask_before_, nullptr);
        for (int i = 0; i < kCount; ++i)
            sigaction(sigs_[i], &old_[i], nullptr);
        EXPECT_EQ(g_stray.load(), 0) << "a test signal was delivered to a thread that did not block it";
        EXPECT_EQ(open_fds(), fds_before_);
    }
};

TEST_F(Signals, KillToTheProcessArrivesThroughTheStream) {
    int got = ringo::block_on([]() -> Task<int> {
        SignalSet s{SIGUSR1};
        EXPECT_TRUE(blocked(SIGUSR1));
        EXPECT_GE(s.fd(), 0);
        EXPECT_TRUE(s.contains(SIGUSR1));
        EXPECT_FALSE(s.contains(SIGUSR2));
        ::kill(::getpid(), SIGUSR1); // this process has one thread: it is pending for the set
        int sig = co_await s.next();
        EXPECT_EQ(s.info().ssi_code, SI_USER);
        EXPECT_EQ(static_cast<pid_t>(s.info().ssi_pid), ::getpid());
        EXPECT_EQ(s.info().ssi_uid, ::getuid());
        co_return sig;
    }());
    EXPECT_EQ(got, SIGUSR1);
    EXPECT_FALSE(blocked(SIGUSR1)); // the set blocked it, nothing is pending: unblocked again
}

TEST_F(Signals, RaiseArrivesThroughTheStream) {
    int got = ringo::block_on([]() -> Task<int> {
        SignalSet s{SIGUSR1, SIGUSR2};
        ::raise(SIGUSR2);
        int sig = co_await s.next();
        EXPECT_EQ(s.info().ssi_code, SI_TKILL);
        co_return sig;
    }());
    EXPECT_EQ(got, SIGUSR2);
}

TEST_F(Signals, PthreadKillToTheRuntimeThreadWakesAWaitingNext) {
    std::atomic<bool> ready{false};
    std::thread sender = send_later(pthread_self(), SIGUSR1, &ready);
    int got = ringo::block_on([](std::atomic<bool>& ready) -> Task<int> {
        SignalSet s{SIGUSR1};
        ready = true;
        co_return co_await s.next();
    }(ready));
    sender.join();
    EXPECT_EQ(got, SIGUSR1);
}

TEST_F(Signals, KillFromAnotherThreadWakesAWaitingNext) {
    std::atomic<bool> ready{false};
    std::thread sender = kill_later(SIGUSR1, &ready);
    int got = ringo::block_on([](std::atomic<bool>& ready) -> Task<int> {
        SignalSet s{SIGUSR1};
        ready = true;
        int sig = co_await s.next();
        EXPECT_EQ(s.info().ssi_code, SI_USER);
        co_return sig;
    }(ready));
    sender.join();
    EXPECT_EQ(got, SIGUSR1);
}

TEST_F(Signals, WithoutTheRingsReadItPollsThenReads) {
    // A kernel without IORING_OP_READ (the probe hides it here): the set polls through the
    // ring and reads with read(2) on its thread, so signals sent to that thread still arrive.
    ringo::Runtime rt;
    rt.probe().set_supported(ringo::uring::compat::opcode::read, false);
    std::atomic<bool> ready{false};
    std::thread sender = send_later(pthread_self(), SIGUSR2, &ready);
    auto got = rt.block_on([](std::atomic<bool>& ready) -> Task<std::vector<int>> {
        SignalSet s{SIGUSR1, SIGUSR2};
        std::vector<int> v;
        ::raise(SIGUSR1); // already pending: read at once
        v.push_back(co_await s.next());
        ready = true; // then one that comes while it polls
        v.push_back(co_await s.next());
        // Cancelled while it polls.
        auto h = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(s));
        co_await ringo::yield();
        h.cancel();
        v.push_back(co_await h);
        co_return v;
    }(ready));
    sender.join();
    EXPECT_EQ(got, (std::vector<int>{SIGUSR1, SIGUSR2, -ECANCELED}));
}

TEST_F(Signals, UnderSqpollASignalToTheProcessArrives) {
    // The kernel's SQ thread reads then: it sees what is sent to the process (kill, a
    // terminal's Ctrl-C), not what is sent to the runtime's thread.
    // The set is made outside the runtime and outlives it: its descriptor then closes with
    // close(2). (Dropped inside block_on, an Fd's close goes to the SQ, which the SQ thread
    // need not have taken when the runtime is torn down.)
    SignalSet s{SIGUSR1};
    ringo::Runtime rt{ringo::RuntimeOptions{}.sqpoll()};
    if (!(rt.setup_flags() & IORING_SETUP_SQPOLL))
        GTEST_SKIP() << "no SQPOLL here";
    std::atomic<bool> ready{false};
    std::thread sender = kill_later(SIGUSR1, &ready);
    int got = rt.block_on([](SignalSet& s, std::atomic<bool>& ready) -> Task<int> {
        ready = true;
        co_return co_await s.next();
    }(s, ready));
    sender.join();
    EXPECT_EQ(got, SIGUSR1);
}

TEST_F(Signals, TwoQueuedSignalsComeOutOfOneReadInOrder) {
    auto got = ringo::block_on([]() -> Task<std::vector<int>> {
        SignalSet s{SIGUSR1, SIGUSR2};
        ::raise(SIGUSR1);
        ::raise(SIGUSR2);
        std::vector<int> v;
        v.push_back(co_await s.next());
        EXPECT_EQ(s.buffered(), 1u); // both came with the first read
        v.push_back(co_await s.next());
        EXPECT_EQ(s.buffered(), 0u);
        co_return v;
    }());
    EXPECT_EQ(got, (std::vector<int>{SIGUSR1, SIGUSR2}));
}

TEST_F(Signals, StandardSignalsComeLowestNumberFirstAndRepeatsMerge) {
    auto got = ringo::block_on([]() -> Task<std::vector<int>> {
        SignalSet s{SIGUSR1, SIGUSR2};
        ::raise(SIGUSR2);
        ::raise(SIGUSR1);
        ::raise(SIGUSR1); // already pending: merged by the kernel
        std::vector<int> v;
        v.push_back(co_await s.next());
        v.push_back(co_await s.next());
        EXPECT_EQ(s.buffered(), 0u);
        EXPECT_FALSE(pending(SIGUSR1));
        co_return v;
    }());
    EXPECT_EQ(got, (std::vector<int>{SIGUSR1, SIGUSR2}));
}

TEST_F(Signals, RealTimeSignalsQueueAndComeOutInOrderWithTheirValues) {
    auto got = ringo::block_on([]() -> Task<std::vector<int>> {
        const int rt = SIGRTMIN;
        SignalSet s{rt};
        for (int i = 1; i <= 3; ++i)
            EXPECT_EQ(::sigqueue(::getpid(), rt, sigval{.sival_int = i * 10}), 0);
        std::vector<int> v;
        for (int i = 0; i < 3; ++i) {
            int sig = co_await s.next();
            EXPECT_EQ(sig, rt);
            EXPECT_EQ(s.info().ssi_code, SI_QUEUE);
            v.push_back(s.info().ssi_int);
            if (i == 0) {
                EXPECT_EQ(s.buffered(), 2u);
            }
        }
        co_return v;
    }());
    EXPECT_EQ(got, (std::vector<int>{10, 20, 30}));
}

TEST_F(Signals, MoreThanOneReadsWorthComesOutInFull) {
    // 12 queued real-time signals: two reads (8 + 4), every one handed out once, in order.
    auto got = ringo::block_on([]() -> Task<std::vector<int>> {
        const int rt = SIGRTMIN;
        SignalSet s{rt};
        for (int i = 0; i < 12; ++i)
            ::sigqueue(::getpid(), rt, sigval{.sival_int = i});
        std::vector<int> v;
        for (int i = 0; i < 12; ++i) {
            int sig = co_await s.next();
            EXPECT_EQ(sig, rt);
            v.push_back(s.info().ssi_int);
        }
        co_return v;
    }());
    ASSERT_EQ(got.size(), 12u);
    for (int i = 0; i < 12; ++i)
        EXPECT_EQ(got[static_cast<std::size_t>(i)], i);
}

TEST_F(Signals, CancellingAWaitingTaskYieldsECANCELEDAndLosesNothing) {
    ringo::block_on([]() -> Task<void> {
        SignalSet s{SIGUSR1};
        auto h = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(s));
        for (int i = 0; i < 5; ++i)
            co_await ringo::yield(); // it waits in the kernel now
        h.cancel();
        int waiter = co_await h;
        EXPECT_EQ(waiter, -ECANCELED);
        // The set still works, and a task that was cancelled before it awaits gets
        // -ECANCELED without reading anything.
        ::raise(SIGUSR1);
        auto late = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(s));
        late.cancel();
        int late_res = co_await late;
        EXPECT_EQ(late_res, -ECANCELED);
        EXPECT_TRUE(pending(SIGUSR1));
        int sig = co_await s.next();
        EXPECT_EQ(sig, SIGUSR1);
    }());
}

TEST_F(Signals, CancelledByWithTimeoutAndByALostWhenAny) {
    ringo::block_on([]() -> Task<void> {
        SignalSet s{SIGUSR1};
        auto timed = co_await ringo::with_timeout(s.next(), 20ms);
        EXPECT_FALSE(static_cast<bool>(timed));
        auto [which, v] = co_await ringo::when_any(s.next(), []() -> Task<int> {
            co_await ringo::sleep_for(10ms);
            co_return 7;
        }());
        EXPECT_EQ(which, 1u);
        EXPECT_EQ(v, 7);
        ::raise(SIGUSR1);
        int sig = co_await s.next(); // nothing was consumed by the cancelled reads
        EXPECT_EQ(sig, SIGUSR1);
    }());
}

TEST_F(Signals, CancelThenDestroyWhileTheReadIsInFlight) {
    ringo::block_on([]() -> Task<void> {
        std::optional<SignalSet> s;
        s.emplace(std::initializer_list<int>{SIGUSR1});
        auto h = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(*s));
        for (int i = 0; i < 5; ++i)
            co_await ringo::yield();
        h.cancel();
        s.reset(); // the read is still in the kernel: the waiting next() keeps what it points into
        EXPECT_FALSE(blocked(SIGUSR1));
        int waiter = co_await h;
        EXPECT_EQ(waiter, -ECANCELED);
    }());
}

TEST_F(Signals, DestroyingTheSetWakesItsWaiterWithECANCELED) {
    ringo::block_on([]() -> Task<void> {
        auto s = std::make_unique<SignalSet>(std::initializer_list<int>{SIGUSR1});
        auto h = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(*s));
        for (int i = 0; i < 5; ++i)
            co_await ringo::yield();
        s.reset(); // no cancel: the set's destruction cancels the read
        int waiter = co_await h;
        EXPECT_EQ(waiter, -ECANCELED);
    }());
}

TEST_F(Signals, ARuntimeShutdownEndsAWaitingNext) {
    // The task holding the set waits in next() when the root returns: the runtime cancels the
    // read and destroys the frame, which closes the signalfd and restores the mask.
    ringo::block_on([]() -> Task<void> {
        ringo::spawn([]() -> Task<void> {
            SignalSet s{SIGUSR1};
            (void)co_await s.next();
            ADD_FAILURE() << "not reached: the runtime goes first";
        }())
            .detach();
        for (int i = 0; i < 5; ++i)
            co_await ringo::yield();
        EXPECT_TRUE(blocked(SIGUSR1));
    }());
    EXPECT_FALSE(blocked(SIGUSR1));
}

TEST_F(Signals, MovingTheSetWhileATaskWaits) {
    int got = ringo::block_on([]() -> Task<int> {
        SignalSet a{SIGUSR1};
        auto h = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(a));
        co_await ringo_test::let_others_run();
        SignalSet b = std::move(a);
        EXPECT_EQ(a.fd(), -1); // NOLINT(bugprone-use-after-move)
        int moved = co_await a.next();
        EXPECT_EQ(moved, -EBADF);
        ::raise(SIGUSR1);
        co_return co_await h;
    }());
    EXPECT_EQ(got, SIGUSR1);
}

TEST_F(Signals, ASecondWaiterIsRefusedWithEBUSY) {
    ringo::block_on([]() -> Task<void> {
        SignalSet s{SIGUSR1};
        auto h = ringo::spawn([](SignalSet& s) -> Task<int> { co_return co_await s.next(); }(s));
        co_await ringo_test::let_others_run();
        int second = co_await s.next();
        EXPECT_EQ(second, -EBUSY);
        ::raise(SIGUSR1);
        int first = co_await h;
        EXPECT_EQ(first, SIGUSR1);
    }());
}

TEST_F(Signals, BadSignalsAreRefusedAtSetup) {
    EXPECT_THROW(SignalSet(std::initializer_list<int>{}), std::invalid_argument);
    EXPECT_THROW(SignalSet{0}, std::invalid_argument);
    EXPECT_THROW(SignalSet{SIGKILL}, std::invalid_argument);
    EXPECT_THROW((SignalSet{SIGUSR1, SIGSTOP}), std::invalid_argument);
    EXPECT_THROW(SignalSet{NSIG}, std::invalid_argument);
    EXPECT_THROW(SignalSet{-SIGUSR1}, std::invalid_argument);
    EXPECT_THROW(SignalSet{32}, std::invalid_argument); // the C library's own
    EXPECT_THROW(ringo::block_signals({SIGKILL}), std::invalid_argument);
    EXPECT_FALSE(blocked(SIGUSR1)); // nothing was blocked on the way
}

TEST_F(Signals, APendingSignalStaysBlockedWhenTheSetGoes) {
    {
        SignalSet s{SIGUSR1};
        ::raise(SIGUSR1); // never read
    }
    // Unblocking it now would deliver it: it stays blocked and pending instead.
    EXPECT_TRUE(blocked(SIGUSR1));
    EXPECT_TRUE(pending(SIGUSR1));
    EXPECT_EQ(g_stray.load(), 0);
    // A later set reads it.
    int got = ringo::block_on([]() -> Task<int> {
        SignalSet s{SIGUSR1};
        co_return co_await s.next();
    }());
    EXPECT_EQ(got, SIGUSR1);
    // That set found it blocked, so it leaves it blocked: give the mask back by hand.
    EXPECT_TRUE(blocked(SIGUSR1));
    pthread_sigmask(SIG_SETMASK, &mask_before_, nullptr);
}

TEST_F(Signals, OverlappingSetsKeepTheSignalBlockedUntilTheLastGoes) {
    auto a = std::make_unique<SignalSet>(std::initializer_list<int>{SIGUSR1});
    auto b = std::make_unique<SignalSet>(std::initializer_list<int>{SIGUSR1, SIGUSR2});
    a.reset();
    EXPECT_TRUE(blocked(SIGUSR1)); // b still reads it
    EXPECT_TRUE(blocked(SIGUSR2));
    b.reset();
    EXPECT_FALSE(blocked(SIGUSR1));
    EXPECT_FALSE(blocked(SIGUSR2));
}

TEST_F(Signals, ASignalBlockedBeforeStaysBlocked) {
    sigset_t old = ringo::block_signals({SIGUSR1});
    { SignalSet s{SIGUSR1, SIGUSR2}; }
    EXPECT_TRUE(blocked(SIGUSR1));
    EXPECT_FALSE(blocked(SIGUSR2));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_F(Signals, WaitSignalIsOneShot) {
    std::atomic<bool> ready{false};
    std::thread sender = send_later(pthread_self(), SIGUSR2, &ready);
    int got = ringo::block_on([](std::atomic<bool>& ready) -> Task<int> {
        auto wait = ringo::wait_signal({SIGUSR1, SIGUSR2}); // blocked from here on
        EXPECT_TRUE(blocked(SIGUSR2));
        ready = true;
        co_return co_await std::move(wait);
    }(ready));
    sender.join();
    EXPECT_EQ(got, SIGUSR2);
    EXPECT_FALSE(blocked(SIGUSR2));
}

// The signals as plain arguments, so the call stands inside co_await: GCC 12 rejects the
// braced list there (GCC Bugzilla PR 103871), which the initializer_list form needs.
TEST_F(Signals, WaitSignalTakesTheSignalsAsArgumentsInsideCoAwait) {
    sigset_t old = ringo::block_signals({SIGUSR2}); // pending until a set reads it
    ::raise(SIGUSR2);
    ASSERT_TRUE(pending(SIGUSR2));
    int got = ringo::block_on([]() -> Task<int> { co_return co_await ringo::wait_signal(SIGUSR1, SIGUSR2); }());
    EXPECT_EQ(got, SIGUSR2);
    EXPECT_FALSE(pending(SIGUSR2));
    EXPECT_TRUE(blocked(SIGUSR2));  // blocked before the set: stays blocked
    EXPECT_FALSE(blocked(SIGUSR1)); // blocked by the set: unblocked when it went
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    // One signal, and a bad one refused when wait_signal is called, as SignalSet refuses it.
    EXPECT_FALSE(blocked(SIGUSR1));
    {
        Task<int> one = ringo::wait_signal(SIGUSR1);
        EXPECT_TRUE(blocked(SIGUSR1));
    }
    EXPECT_FALSE(blocked(SIGUSR1));
    EXPECT_THROW((void)ringo::wait_signal(SIGUSR1, 0), std::invalid_argument);
    EXPECT_FALSE(blocked(SIGUSR1));
}

/// Whether every thread of this process blocks `sig` (from /proc/self/task/*/status).
bool every_thread_blocks(int sig, int* threads) {
    *threads = 0;
    DIR* d = ::opendir("/proc/self/task");
    if (!d)
        return false;
    bool all = true;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/status");
        std::string line;
        while (std::getline(f, line)) {
            if (line.rfind("SigBlk:", 0) == 0) {
                unsigned long long bits = std::stoull(line.substr(7), nullptr, 16);
                ++*threads;
                all = all && ((bits >> (sig - 1)) & 1u);
            }
        }
    }
    ::closedir(d);
    return all;
}

TEST_F(Signals, ARuntimeOfAPoolReadsASignalEveryThreadBlocks) {
    sigset_t old = ringo::block_signals({SIGUSR1}); // before the pool's threads start
    {
        ringo::RuntimePool pool{2};
        std::atomic<bool> ready{false};
        auto h = pool.spawn_on(1, [](std::atomic<bool>& ready) -> Task<int> {
            SignalSet s{SIGUSR1};
            ready = true;
            int sig = co_await s.next();
            EXPECT_EQ(s.info().ssi_code, SI_USER);
            co_return sig;
        }(ready));
        while (!ready)
            std::this_thread::yield();
        int threads = 0;
        EXPECT_TRUE(every_thread_blocks(SIGUSR1, &threads));
        EXPECT_GE(threads, 3);
        ::kill(::getpid(), SIGUSR1); // to the process: no thread takes it but the set's
        EXPECT_EQ(h.join(), SIGUSR1);
        pool.shutdown();
    }
    EXPECT_TRUE(blocked(SIGUSR1));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_F(Signals, AShutdownNowCancelsAPoolTaskWaitingForASignal) {
    sigset_t old = ringo::block_signals({SIGUSR1});
    {
        ringo::RuntimePool pool{2};
        std::atomic<bool> ready{false};
        auto h = pool.spawn([](std::atomic<bool>& ready) -> Task<int> {
            SignalSet s{SIGUSR1};
            ready = true;
            co_return co_await s.next();
        }(ready));
        while (!ready)
            std::this_thread::yield();
        EXPECT_FALSE(pool.shutdown_for(20ms)); // it waits for a signal that never comes
        EXPECT_EQ(h.join(), -ECANCELED);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// --- the Ctrl-C examples, run as programs that get a real SIGINT or SIGTERM.

std::string example_path(const char* name) {
    char self[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return {};
    std::string dir(self, static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/'));                                 // .../tests
    return dir.substr(0, dir.rfind('/')) + "/examples/" + name; // .../examples/name
}

/// A program started with its stdout on a pipe.
struct Child {
    pid_t pid = -1;
    int out = -1;
    std::string text;

    Child(const std::string& path, std::vector<std::string> args) {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0)
            return;
        pid = ::fork();
        if (pid == 0) {
            ::dup2(p[1], 1);
            sigset_t none;
            sigemptyset(&none);
            pthread_sigmask(SIG_SETMASK, &none, nullptr); // as from a shell
            std::vector<char*> argv{const_cast<char*>(path.c_str())};
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(path.c_str(), argv.data());
            ::_exit(127);
        }
        ::close(p[1]);
        out = p[0];
    }
    ~Child() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        if (out >= 0)
            ::close(out);
    }
    /// Reads the output until it holds `what` (true) or `limit` passes or it ends (false).
    bool read_until(const std::string& what, std::chrono::milliseconds limit) {
        auto end = std::chrono::steady_clock::now() + limit;
        while (text.find(what) == std::string::npos) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                return false;
            pollfd pfd{out, POLLIN, 0};
            if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0)
                return false;
            char buf[512];
            ssize_t n = ::read(out, buf, sizeof buf);
            if (n <= 0)
                return false;
            text.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    /// Waits up to `limit` for the exit; its wait status, or -1 when it still runs.
    int wait_exit(std::chrono::milliseconds limit) {
        auto end = std::chrono::steady_clock::now() + limit;
        for (;;) {
            int status = 0;
            pid_t r = ::waitpid(pid, &status, WNOHANG);
            if (r == pid) {
                pid = -1;
                read_until("\x01", 200ms); // the rest of its output, to the end
                return status;
            }
            if (std::chrono::steady_clock::now() >= end)
                return -1;
            std::this_thread::sleep_for(5ms);
        }
    }
};

int connect_to(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

/// Runs examples/ctrl_c_server with one idle connection open, sends `sig`, and checks that it
/// stops within a second (its grace period is 200 ms), exits 0 and says what it did.
void server_stops_on(int sig, const char* name) {
    std::string path = example_path("ctrl_c_server");
    if (::access(path.c_str(), X_OK) != 0)
        GTEST_SKIP() << path << " is not built (RINGO_BUILD_EXAMPLES=OFF?)";
    Child c(path, {"0", "200"});
    ASSERT_GT(c.pid, 0);
    ASSERT_TRUE(c.read_until("\n", 10s)) << c.text;
    unsigned port = 0;
    ASSERT_EQ(std::sscanf(c.text.c_str(), "listening on port %u", &port), 1) << c.text;
    int conn = connect_to(static_cast<std::uint16_t>(port));
    ASSERT_GE(conn, 0);
    ASSERT_EQ(::send(conn, "hi", 2, 0), 2);
    char buf[2];
    ASSERT_EQ(::recv(conn, buf, 2, MSG_WAITALL), 2); // echoed: its handler runs
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(c.pid, sig), 0);
    int status = c.wait_exit(5s);
    auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_NE(status, -1) << "still running 5 s after " << name << "; output: " << c.text;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "; output: " << c.text;
    EXPECT_LT(took, 1s);
    EXPECT_NE(c.text.find(std::string("got ") + name + ", stopping"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find("1 connection(s) still open after 200 ms: cancelled"), std::string::npos) << c.text;
    EXPECT_EQ(::recv(conn, buf, 1, 0), 0); // the server closed it
    ::close(conn);
}

TEST(CtrlC, OneRuntimeServerStopsOnSigint) { server_stops_on(SIGINT, "SIGINT"); }
TEST(CtrlC, OneRuntimeServerStopsOnSigterm) { server_stops_on(SIGTERM, "SIGTERM"); }

TEST(CtrlC, OneRuntimeServerWithNoOpenConnectionStopsAtOnce) {
    std::string path = example_path("ctrl_c_server");
    if (::access(path.c_str(), X_OK) != 0)
        GTEST_SKIP() << path << " is not built";
    Child c(path, {"0", "200"});
    ASSERT_TRUE(c.read_until("listening", 10s)) << c.text;
    ASSERT_EQ(::kill(c.pid, SIGINT), 0);
    int status = c.wait_exit(5s);
    ASSERT_NE(status, -1) << c.text;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << c.text;
    EXPECT_NE(c.text.find("0 connection(s) still open: all finished"), std::string::npos) << c.text;
}

TEST(CtrlC, PoolStopsOnSigint) {
    std::string path = example_path("ctrl_c_pool");
    if (::access(path.c_str(), X_OK) != 0)
        GTEST_SKIP() << path << " is not built";
    Child c(path, {"2", "200"});
    ASSERT_GT(c.pid, 0);
    ASSERT_TRUE(c.read_until("press Ctrl-C", 10s)) << c.text;
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(c.pid, SIGINT), 0);
    int status = c.wait_exit(5s);
    auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_NE(status, -1) << "still running 5 s after SIGINT; output: " << c.text;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "; output: " << c.text;
    EXPECT_LT(took, 1s);
    EXPECT_NE(c.text.find("got SIGINT, shutting down"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find("4 workers stopped when asked, 1 task(s) cancelled after 200 ms"), std::string::npos)
        << c.text;
}

} // namespace
