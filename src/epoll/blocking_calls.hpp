// src/epoll/blocking_calls.hpp - the bounded pool of threads that make the epoll engine's
// blocking calls (regular files, path calls, descriptors without readiness), shared by every
// engine of the process, and the signal that interrupts a call that is cancelled.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace ringo::uring::epoll {

/// A call handed to the pool.
struct Job {
    Job* next = nullptr;
    void (*run)(Job*) noexcept = nullptr;
    // The thread that makes the call, while it makes it (BlockingCalls::m_ guards both): a
    // cancelled call is interrupted there (BlockingCalls::interrupt).
    pthread_t runner{};
    bool running = false;
    bool interrupted = false; // an interrupt was aimed at this call
};

/// The bounded pool of threads that make blocking calls for every epoll engine of the
/// process. Threads start when calls wait and none is idle, up to `max_threads`; they live as
/// long as the process (a call that never returns, a read of a terminal, holds its thread, not
/// the engine's).
class BlockingCalls {
public:
    /// The process's pool (made at the first call; its threads outlive main).
    static BlockingCalls& get();
    /// Queues job `j`: a free thread takes it, or a new one up to max_threads. Throws when no
    /// thread can be started and none runs.
    void submit(Job* j);
    /// A call is done and about to post its result: its thread counts as free for the next
    /// call from then on (a call made right after the result is seen starts no thread), and
    /// no interrupt is aimed at it any more (its record may be reused once the result is seen).
    void finishing(Job* j) noexcept;
    /// Interrupts job `j`'s call if a thread makes it now: its call returns EINTR. A signal
    /// that comes before the call starts is lost; the caller sends it again until the job
    /// ends. Returns false when the pool cannot interrupt (the program handles the signal).
    bool interrupt(Job* j) noexcept;
    /// Whether an interrupt was aimed at job `j`, which its thread runs (an EINTR without
    /// one is a signal meant for an earlier call: the call is made again).
    bool interrupted(Job* j) noexcept;

private:
    static constexpr unsigned max_threads = 64;
    void after_fork_in_child() noexcept;
    void work();

    bool interruptible_ = false;
    std::atomic<unsigned> finishing_{0};
    std::mutex m_;
    std::condition_variable cv_;
    Job* head_ = nullptr;
    Job* tail_ = nullptr;
    unsigned threads_ = 0;
    unsigned idle_ = 0;
};

} // namespace ringo::uring::epoll
