// src/epoll/blocking_calls.cpp - the process's pool of threads for blocking calls
// (blocking_calls.hpp).
#include "blocking_calls.hpp"

#include <signal.h>

#include <new>
#include <thread>

namespace ringo::uring::epoll {

namespace {
// The signal that interrupts a blocking call of the pool when its operation is cancelled or
// its engine ends (a read of a terminal, a FIFO's open, a futex wait: calls that may never
// return by themselves). Its handler does nothing and is installed without SA_RESTART, so the
// call returns EINTR. Taken only while the program has no handler of its own for it.
int interrupt_signal() noexcept { return SIGRTMAX - 7; }
extern "C" void ringo_pool_interrupted(int) {}
} // namespace

BlockingCalls& BlockingCalls::get() {
    static BlockingCalls* p = [] {
        auto* made = new BlockingCalls; // never destroyed: its threads outlive main
        // (Not when the program has a handler, or blocks the signal on this thread: it
        // takes it with signalfd or sigwait.)
        struct sigaction old {};
        sigset_t mask;
        if (::sigaction(interrupt_signal(), nullptr, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO) && pthread_sigmask(SIG_SETMASK, nullptr, &mask) == 0 &&
            !sigismember(&mask, interrupt_signal())) {
            struct sigaction sa {};
            sa.sa_handler = ringo_pool_interrupted; // (no SA_RESTART: the call returns EINTR)
            sigemptyset(&sa.sa_mask);
            made->interruptible_ = ::sigaction(interrupt_signal(), &sa, nullptr) == 0;
        }
        // fork(): the lock is held across it, and the child starts over with no thread
        // and no call (those queued or running belong to the parent's engines).
        ::pthread_atfork([] { get().m_.lock(); }, [] { get().m_.unlock(); }, [] { get().after_fork_in_child(); });
        return made;
    }();
    return *p;
}

void BlockingCalls::submit(Job* j) {
    std::unique_lock lk(m_);
    if (tail_)
        tail_->next = j;
    else
        head_ = j;
    tail_ = j;
    j->next = nullptr;
    // A free thread (idle, or about to be) takes it; else a new one, up to max_threads.
    // (Calls queued at once may so wait for one another's thread: a call that blocks for
    // long, such as the open of a FIFO until its other end opens, holds the ones behind it.)
    if (idle_ + finishing_.load(std::memory_order_acquire) > 0) {
        cv_.notify_one();
        return;
    }
    if (threads_ < max_threads) {
        ++threads_;
        // The pool's threads take no signals (created with all blocked: a splice into a
        // pipe whose reader left gets EPIPE, and SIGPIPE stays pending there).
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        try {
            std::thread([this] { work(); }).detach();
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
        } catch (...) {
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
            --threads_;
            if (threads_ == 0)
                throw;
        }
    }
}

void BlockingCalls::after_fork_in_child() noexcept {
    new (&m_) std::mutex; // made anew: the parent's waiters are not here
    new (&cv_) std::condition_variable;
    head_ = tail_ = nullptr;
    threads_ = idle_ = 0;
    finishing_.store(0, std::memory_order_relaxed);
}

void BlockingCalls::work() {
    if (interruptible_) { // (created with every signal blocked)
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, interrupt_signal());
        pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    }
    std::unique_lock lk(m_);
    for (;;) {
        while (!head_) {
            ++idle_;
            cv_.wait(lk);
            --idle_;
        }
        Job* j = head_;
        head_ = j->next;
        if (!head_)
            tail_ = nullptr;
        j->runner = pthread_self();
        j->running = true;
        j->interrupted = false;
        lk.unlock();
        j->run(j); // calls finishing() before its result is seen
        lk.lock();
        finishing_.fetch_sub(1, std::memory_order_release);
    }
}

void BlockingCalls::finishing(Job* j) noexcept {
    {
        std::lock_guard lk(m_);
        j->running = false;
    }
    finishing_.fetch_add(1, std::memory_order_release);
}

bool BlockingCalls::interrupt(Job* j) noexcept {
    if (!interruptible_)
        return false;
    std::lock_guard lk(m_);
    if (j->running) {
        j->interrupted = true;
        (void)pthread_kill(j->runner, interrupt_signal());
    }
    return true;
}

bool BlockingCalls::interrupted(Job* j) noexcept {
    std::lock_guard lk(m_);
    return j->interrupted;
}
} // namespace ringo::uring::epoll
