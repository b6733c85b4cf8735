#include <ringo/core/blocking.hpp>
#include <ringo/core/detail/parker.hpp>
#include <ringo/uring/compat.hpp>

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace ringo {

namespace detail {
namespace {

/// The process-wide pool. Created on first use and never destroyed: its threads are detached
/// and may still be running or waiting at exit, so nothing they touch may go with static
/// destruction.
class BlockingPool {
public:
    void submit(BlockingJob& j) {
        std::lock_guard lk(m_);
        push(j);
        if (idle_ > 0) { // claim an idle thread: it takes the job when it wakes
            --idle_;
            ++notified_;
            cv_.notify_one();
            return;
        }
        if (queued_ <= returning_ + notified_ || threads_ >= opts_.max_threads)
            return; // queued: a thread that has just run a job (or was claimed) takes it
        try {
            start_thread();
        } catch (...) {
            if (threads_ == 0) { // nobody would ever take it
                unlink_last(j);
                throw;
            }
        }
    }

    void set_options(const BlockingPoolOptions& o) {
        if (o.max_threads == 0)
            throw std::invalid_argument("ringo: set_blocking_pool_options: max_threads must be at least 1");
        if (o.keep_alive.count() < 0)
            throw std::invalid_argument("ringo: set_blocking_pool_options: negative keep_alive");
        std::lock_guard lk(m_);
        opts_ = o;
        // Queued jobs may start on new threads at once.
        try {
            while (queued_ > notified_ + idle_ + returning_ && threads_ < opts_.max_threads)
                start_thread();
        } catch (...) {
            // The threads already there take the queue.
        }
        cv_.notify_all(); // idle threads pick up the new keep-alive (or end above the maximum)
    }
    BlockingPoolOptions options() {
        std::lock_guard lk(m_);
        return opts_;
    }
    BlockingPoolStats stats() {
        std::lock_guard lk(m_);
        return {threads_, idle_, running_, queued_, done_, threads_started_};
    }

    // fork(): the child has none of the pool's threads. The forking thread holds the lock
    // across the fork, so the child's copy of the bookkeeping is consistent; the child then
    // starts over with no thread and no job (the jobs queued or running belong to the
    // parent's runtimes, which the child cannot use), and its first call starts a thread.
    void before_fork() noexcept { m_.lock(); }
    void after_fork_in_parent() noexcept { m_.unlock(); }
    void after_fork_in_child() noexcept {
        // The lock and the condition are made anew: the parent's waiters are not here.
        new (&m_) std::mutex;
        new (&cv_) std::condition_variable;
        head_ = nullptr;
        tail_ = &head_;
        queued_ = 0;
        threads_ = idle_ = notified_ = running_ = returning_ = 0;
    }

private:
    /// Starts one more thread (m_ held); throws std::system_error when it cannot.
    void start_thread() {
        ++threads_;
        try {
            std::thread([this] { work(); }).detach();
        } catch (...) {
            --threads_;
            throw;
        }
        ++threads_started_;
    }
    void push(BlockingJob& j) noexcept {
        j.next = nullptr;
        *tail_ = &j;
        tail_ = &j.next;
        ++queued_;
    }
    BlockingJob* pop() noexcept {
        BlockingJob* j = head_;
        if (j) {
            head_ = j->next;
            if (!head_)
                tail_ = &head_;
            --queued_;
        }
        return j;
    }
    void unlink_last(BlockingJob& j) noexcept {
        BlockingJob** pp = &head_;
        while (*pp != &j)
            pp = &(*pp)->next;
        *pp = nullptr;
        tail_ = pp;
        --queued_;
    }

    /// Publishes the job's end and wakes its awaiter (the job has run).
    static void complete(BlockingJob& j) noexcept {
        j.state.store(BlockingJob::done, std::memory_order_release);
        // Wake the awaiter's wait in its ring. The node stays alive until our release below.
        if (j.event_fd >= 0) {
            std::uint64_t one = 1;
            [[maybe_unused]] ssize_t r = ::write(j.event_fd, &one, sizeof one);
        } else {
            futex_wake(&j.state, INT_MAX);
        }
        j.release();
    }

    void work() noexcept {
        std::unique_lock lk(m_);
        for (;;) {
            if (BlockingJob* j = pop()) {
                ++running_;
                lk.unlock();
                j->run(j);
                lk.lock();
                // Counted as returning before the awaiter can resume: a call it makes next
                // waits for this thread instead of starting another.
                --running_;
                ++returning_;
                ++done_;
                lk.unlock();
                complete(*j);
                lk.lock();
                --returning_;
                if (threads_ > opts_.max_threads)
                    break; // the maximum was lowered
                continue;
            }
            // Idle: wait for a submitter to claim this thread, or end after the keep-alive.
            ++idle_;
            bool claimed = false;
            auto deadline = std::chrono::steady_clock::now() + opts_.keep_alive;
            for (;;) {
                std::cv_status st = cv_.wait_until(lk, deadline);
                if (notified_ > 0) {
                    --notified_;
                    claimed = true;
                    break;
                }
                // Jobs nobody was claimed for (set_options woke everyone): take them.
                if (st == std::cv_status::timeout || threads_ > opts_.max_threads || head_ != nullptr)
                    break;
                deadline = std::min(deadline, std::chrono::steady_clock::now() + opts_.keep_alive);
            }
            if (!claimed) {
                --idle_;
                if (head_ == nullptr || threads_ > opts_.max_threads)
                    break;
            }
        }
        --threads_;
        if (queued_ > returning_ + notified_ && idle_ > 0) { // jobs this thread would have taken
            --idle_;
            ++notified_;
            cv_.notify_one();
        }
    }

    std::mutex m_;
    std::condition_variable cv_;
    BlockingJob* head_ = nullptr;
    BlockingJob** tail_ = &head_;
    std::size_t queued_ = 0;
    unsigned threads_ = 0;   // alive
    unsigned idle_ = 0;      // waiting, not claimed
    unsigned notified_ = 0;  // claimed by a submitter, not yet awake
    unsigned running_ = 0;   // running a job
    unsigned returning_ = 0; // done with a job, about to look at the queue again
    std::uint64_t done_ = 0;
    std::uint64_t threads_started_ = 0;
    BlockingPoolOptions opts_{};
};

BlockingPool* the_pool = nullptr;

BlockingPool& pool() {
    static BlockingPool* p = [] {
        auto* made = new BlockingPool; // never destroyed (see BlockingPool)
        the_pool = made;
        ::pthread_atfork([] { the_pool->before_fork(); }, [] { the_pool->after_fork_in_parent(); },
                         [] { the_pool->after_fork_in_child(); });
        return made;
    }();
    return *p;
}

} // namespace

void BlockingJob::release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (event_fd >= 0)
            ::close(event_fd);
        destroy(this);
    }
}

void BlockingWait::start(Runtime& r, std::coroutine_handle<> awaiting, BlockingJob& j) {
    rt = &r;
    h = awaiting;
    fn = &BlockingWait::on_cqe;
    if (r.setup_flags() & uring::compat::setup::iopoll) // such a ring takes neither wait
        throw std::logic_error("ringo: spawn_blocking awaited on a runtime set up with IOPOLL");
    if (!r.supports(uring::compat::opcode::futex_wait)) {
        // Kernels before 6.7: the ring polls an eventfd the pool thread writes.
        j.event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (j.event_fd < 0)
            throw std::system_error(errno, std::generic_category(), "ringo: spawn_blocking: eventfd");
    }
    io_uring_sqe* sqe =
        ringo::detail::RuntimeAccess::engine(r).get_sqe(); // may throw: nothing has been handed to the pool yet
    j.refs.store(2, std::memory_order_relaxed);
    try {
        pool().submit(j);
    } catch (...) {
        j.refs.store(1, std::memory_order_relaxed);
        std::memset(sqe, 0, sizeof *sqe); // the SQE is taken: let it be a NOP nobody waits for
        sqe->opcode = IORING_OP_NOP;
        sqe->user_data = 0;
        throw;
    }
    job = &j;
    std::memset(sqe, 0, sizeof *sqe);
    prepare_wait(sqe);
    ringo::detail::RuntimeAccess::engine(r).op_started();
}

void BlockingWait::arm() {
    io_uring_sqe* sqe = ringo::detail::RuntimeAccess::engine(*rt).get_sqe();
    std::memset(sqe, 0, sizeof *sqe);
    prepare_wait(sqe);
    ringo::detail::RuntimeAccess::engine(*rt).op_started();
}

void BlockingWait::prepare_wait(io_uring_sqe* sqe) noexcept {
    if (job->event_fd >= 0) {
        io_uring_prep_poll_add(sqe, job->event_fd, POLLIN);
    } else {
        // Waits while the word is still `pending`; -EAGAIN at once when the job is done.
        sqe->opcode = uring::compat::opcode::futex_wait;
        sqe->fd = static_cast<int>(uring::compat::futex2::size_u32 | uring::compat::futex2::private_);
        sqe->addr = reinterpret_cast<std::uint64_t>(&job->state);
        sqe->off = BlockingJob::pending; // addr2: the value waited on
        sqe->addr3 = uring::compat::futex2::bitset_match_any;
    }
    sqe->user_data = reinterpret_cast<std::uint64_t>(static_cast<Completion*>(this)) | tag_completion;
}

void BlockingWait::on_cqe(Completion* c, int res, std::uint32_t) {
    auto* w = static_cast<BlockingWait*>(c);
    Runtime* r = w->rt;
    ringo::detail::RuntimeAccess::engine(*r).op_finished();
    if (r->shutting_down())
        return; // the runtime is going: the frame is freed or abandoned, the job runs on alone
    if (w->job->state.load(std::memory_order_acquire) == BlockingJob::done) {
        r->schedule(w->h);
        return;
    }
    // The wait ended before the job did. Cancelled (an ASYNC_CANCEL that matched it) or
    // woken early: wait again, since the job cannot be interrupted. Any other error would
    // come again at once: await_resume then blocks the thread until the job is done, the
    // last resort that frees nothing in use (as when the ring cannot take the SQE).
    if (res >= 0 || res == -ECANCELED || res == -EAGAIN || res == -EINTR) {
        try {
            w->arm();
            return;
        } catch (...) {
        }
    }
    r->schedule(w->h);
}

void BlockingWait::wait_done() noexcept {
    // 1 ms at a time: the pool thread may have woken the eventfd, not the word.
    while (job->state.load(std::memory_order_acquire) != BlockingJob::done)
        futex_sleep(job->state, BlockingJob::pending, 1000000);
}

void throw_blocking_refusal(BlockingRefusal r) {
    switch (r) {
    case BlockingRefusal::no_runtime: throw std::logic_error("ringo: spawn_blocking awaited outside a runtime");
    case BlockingRefusal::cancelled:
        throw std::system_error(ECANCELED, std::generic_category(), "ringo: spawn_blocking in a cancelled task");
    default: throw std::logic_error("ringo: spawn_blocking's awaitable awaited twice");
    }
}

} // namespace detail

void set_blocking_pool_options(const BlockingPoolOptions& options) { detail::pool().set_options(options); }
BlockingPoolOptions blocking_pool_options() { return detail::pool().options(); }
BlockingPoolStats blocking_pool_stats() { return detail::pool().stats(); }

} // namespace ringo
