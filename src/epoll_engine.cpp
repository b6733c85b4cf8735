// The epoll engine (uring/epoll_engine.hpp): the SQEs a Ring hands it run as plain system
// calls, by readiness or on a bounded thread pool, and their results come back as CQEs.
#include <ringo/uring/epoll_engine.hpp>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include <linux/aio_abi.h>
#include <linux/magic.h>
#include <linux/openat2.h>

#include <ringo/uring/compat.hpp>

namespace ringo::uring {

namespace {

namespace opc = compat::opcode;

// Values of the kernel's ABI that liburing 2.3's headers name under other spellings or lack.
constexpr std::uint8_t sqe_fixed_file = 1u << 0;
constexpr std::uint8_t sqe_io_link = 1u << 2;
constexpr std::uint8_t sqe_io_hardlink = 1u << 3;
constexpr std::uint8_t sqe_buffer_select = 1u << 5;
constexpr std::uint32_t cqe_f_more = 1u << 1;
constexpr std::uint16_t accept_multishot = 1u << 0;
constexpr std::uint16_t recvsend_fixed_buf = 1u << 2;
constexpr std::uint16_t recv_multishot = 1u << 1;
constexpr std::uint16_t recvsend_bundle = 1u << 4;
constexpr std::uint32_t poll_add_multi = 1u << 0;
constexpr std::uint32_t timeout_abs = 1u << 0;
constexpr std::uint32_t timeout_update = 1u << 1;
constexpr std::uint32_t timeout_realtime = 1u << 3;
constexpr std::uint32_t cancel_all = 1u << 0;
constexpr std::uint32_t cancel_fd = 1u << 1;
constexpr std::uint32_t cancel_any = 1u << 2;
constexpr std::uint32_t fsync_datasync = 1u << 0;
constexpr unsigned enter_getevents = 1u << 0;

std::uint64_t mono_ns() noexcept {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

[[gnu::always_inline]] inline int sys(long r) noexcept { return r < 0 ? -errno : static_cast<int>(r); }

// A call handed to the pool.
struct Job {
    Job* next = nullptr;
    void (*run)(Job*) noexcept = nullptr;
    // The thread that makes the call, while it makes it (BlockingCalls::m_ guards both): a
    // cancelled call is interrupted there (BlockingCalls::interrupt).
    pthread_t runner{};
    bool running = false;
    bool interrupted = false; // an interrupt was aimed at this call
};

// The signal that interrupts a blocking call of the pool when its operation is cancelled or
// its engine ends (a read of a terminal, a FIFO's open, a futex wait: calls that may never
// return by themselves). Its handler does nothing and is installed without SA_RESTART, so the
// call returns EINTR. Taken only while the program has no handler of its own for it.
int interrupt_signal() noexcept { return SIGRTMAX - 7; }
extern "C" void ringo_pool_interrupted(int) {}

// The bounded pool of threads that make blocking calls for every epoll engine of the
// process. Threads start when calls wait and none is idle, up to `max_threads`; they live as
// long as the process (a call that never returns, a read of a terminal, holds its thread, not
// the engine's).
class BlockingCalls {
public:
    static BlockingCalls& get() {
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
    void submit(Job* j) {
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

private:
    static constexpr unsigned max_threads = 64;
    void after_fork_in_child() noexcept {
        new (&m_) std::mutex; // made anew: the parent's waiters are not here
        new (&cv_) std::condition_variable;
        head_ = tail_ = nullptr;
        threads_ = idle_ = 0;
        finishing_.store(0, std::memory_order_relaxed);
    }
    void work() {
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

public:
    /// A call is done and about to post its result: its thread counts as free for the next
    /// call from then on (a call made right after the result is seen starts no thread), and
    /// no interrupt is aimed at it any more (its record may be reused once the result is seen).
    void finishing(Job* j) noexcept {
        {
            std::lock_guard lk(m_);
            j->running = false;
        }
        finishing_.fetch_add(1, std::memory_order_release);
    }
    /// Interrupts job `j`'s call if a thread makes it now: its call returns EINTR. A signal
    /// that comes before the call starts is lost; the caller sends it again until the job
    /// ends. Returns false when the pool cannot interrupt (the program handles the signal).
    bool interrupt(Job* j) noexcept {
        if (!interruptible_)
            return false;
        std::lock_guard lk(m_);
        if (j->running) {
            j->interrupted = true;
            (void)pthread_kill(j->runner, interrupt_signal());
        }
        return true;
    }
    /// Whether an interrupt was aimed at job `j`, which its thread runs (an EINTR without
    /// one is a signal meant for an earlier call: the call is made again).
    bool interrupted(Job* j) noexcept {
        std::lock_guard lk(m_);
        return j->interrupted;
    }

private:
    bool interruptible_ = false;
    std::atomic<unsigned> finishing_{0};
    std::mutex m_;
    std::condition_variable cv_;
    Job* head_ = nullptr;
    Job* tail_ = nullptr;
    unsigned threads_ = 0;
    unsigned idle_ = 0;
};

// How each opcode the engine has runs: docs/ops.md's index says so for every operation
// (scripts/ops-index reads this table; one entry a line). An opcode that is not here is absent
// from the engine's probe.
enum class How : unsigned char { readiness, thread_pool, at_once, timer };
struct Way {
    std::uint8_t opcode;
    How how;
};
// clang-format off
constexpr Way ways[] = {
    {opc::nop, How::at_once},
    {opc::readv, How::readiness},
    {opc::writev, How::readiness},
    {opc::fsync, How::thread_pool},
    {opc::poll_add, How::readiness},
    {opc::poll_remove, How::at_once},
    {opc::sync_file_range, How::thread_pool},
    {opc::sendmsg, How::readiness},
    {opc::recvmsg, How::readiness},
    {opc::timeout, How::timer},
    {opc::timeout_remove, How::at_once},
    {opc::accept, How::readiness},
    {opc::async_cancel, How::at_once},
    {opc::connect, How::readiness},
    {opc::fallocate, How::thread_pool},
    {opc::openat, How::thread_pool},
    {opc::close, How::at_once},
    {opc::statx, How::thread_pool},
    {opc::read, How::readiness},
    {opc::write, How::readiness},
    {opc::fadvise, How::at_once},
    {opc::send, How::readiness},
    {opc::recv, How::readiness},
    {opc::openat2, How::thread_pool},
    {opc::epoll_ctl, How::at_once},
    {opc::shutdown, How::at_once},
    {opc::renameat, How::thread_pool},
    {opc::unlinkat, How::thread_pool},
    {opc::mkdirat, How::thread_pool},
    {opc::symlinkat, How::thread_pool},
    {opc::linkat, How::thread_pool},
    {opc::socket, How::at_once},
    {opc::ftruncate, How::thread_pool},
    {opc::bind, How::at_once},
    {opc::listen, How::at_once},
    {opc::splice, How::thread_pool},
    {opc::tee, How::thread_pool},
};
// clang-format on

} // namespace

struct EpollEngine::Impl {
    // How an operation runs on its descriptor.
    enum class Kind : unsigned char { unknown, socket, nonblocking, nowait, blocking };
    enum class State : unsigned char { free, held, reading, writing, polling, timer, pool, aio, done };

    struct Pending : Job {
        io_uring_sqe sqe;
        Impl* eng = nullptr;
        Pending* all_prev = nullptr; // every operation in flight (for cancellation)
        Pending* all_next = nullptr;
        Pending* w_prev = nullptr; // the waiters of one descriptor, or the free list
        Pending* w_next = nullptr;
        Pending* chain = nullptr; // the next SQE of a link, held until this one ends
        std::uint64_t deadline = 0;
        std::uint64_t period = 0; // a multishot timeout's (ns), and its expiries so far in done_io
        std::size_t heap_index = static_cast<std::size_t>(-1);
        int res = 0;
        std::uint32_t gen = 0;    // counts the record's uses
        std::uint32_t cflags = 0; // CQE flags of the result (a selected buffer)
        bool empty = false;       // a multishot recvmsg's last message had no payload
        // The bytes a recv or send with MSG_WAITALL on a stream socket moved so far (it ends
        // when all came, or with what came at an error or the stream's end, as the kernel's).
        std::uint32_t done_io = 0;
        // A recvmsg into a provided buffer: the caller's msghdr, read once at its start as
        // the kernel reads it (its name and control lengths, and for a single-shot one the
        // length its one iovec asks for).
        msghdr hdr{};
        iovec hdr_iov{}; // (hdr.msg_iov points here: its one iovec, read then too)
        int fd = -1;
        State state = State::free;
        bool cancelled = false;
        bool connecting = false;    // a connect that got EINPROGRESS: the next step reads SO_ERROR
        bool drain_started = false; // an IOSQE_IO_DRAIN SQE that started (counted in drains_running)
        // A positional call sent to the pool on the word of the descriptor's cached kind (a
        // regular file) without looking again: -ESPIPE from the pool then means the number
        // names a stream now, and the operation starts over (take_pool_results).
        bool recheck = false;
        // What submit's fast path found when it tried a read at once (read_now), or a socket
        // call (missed: -EAGAIN), before the record was made: start does not try again.
        unsigned char first_try = 0; // an AtOnce
    };
    // 32 bytes (a table indexed by descriptor number, looked at several times per operation).
    struct FdState {
        Kind kind = Kind::unknown;
        bool registered : 1 = false;
        // Made by this engine (accept, socket): what it is (kind) is kept from call to call.
        // Any other descriptor may be closed behind the engine's back and its number reused:
        // it is looked at again at a call that finds nothing waiting on it.
        bool owned : 1 = false;
        bool regular : 1 = false; // a regular file (read_at_once), as kind_of last found it
        bool direct : 1 = false;  // ... opened with O_DIRECT (its reads and writes go to native AIO)
        bool no_aio : 1 = false;  // ... on a file system whose direct calls io_submit refuses (the pool's)
        // Opened by the engine (openat, openat2): `direct` is from the open's flags, and a
        // statx of the descriptor says what it is (statx_at_once) without an fstat.
        bool opened : 1 = false;
        // A waiter parked on this descriptor without a registration call (owned, registered
        // before): counted in unverified_fds until an event after which nothing waits on it, or
        // verify_registrations.
        bool unverified : 1 = false;
        // A stream socket the engine made (SOCK_STREAM), and whether its last read found its
        // queue empty: an EAGAIN, or fewer bytes than asked (a stream socket's read copies what
        // is queued until the buffer is full). A read of a drained socket waits for its next
        // edge without a first try (an event undrains it).
        bool stream : 1 = false;
        bool drained : 1 = false;
        // Made by the engine (accept, socket, openat) and not yet taken by an Fd: own_fd keeps
        // what made() found.
        bool just_made : 1 = false;
        // Owned by a ringo::Fd (own_fd), whose close comes through the engine: its
        // registration is kept, as a made one's, but what it is is looked at as for a bare
        // number (the Fd may yet be closed where the engine does not see it: on another
        // thread, or with no runtime current).
        bool adopted : 1 = false;
        // The registration's generation, in its events' data with the number: each registration
        // call (arm) takes the next one, and events of an older one are not this descriptor's.
        // (The kernel keeps a registration while its file is open: a descriptor closed behind
        // the engine's back whose file lives on under a dup still reports under its old number.)
        std::uint32_t reg_gen = 0;
        Pending* readers = nullptr; // FIFO lists (head; the tail is found through w_prev of head)
        Pending* writers = nullptr;
        Pending* pollers = nullptr;
        /// True while an operation waits on the descriptor (read, write or poll).
        [[nodiscard]] bool waits() const noexcept { return readers || writers || pollers; }
    };
    static_assert(sizeof(FdState) == 8 + 3 * sizeof(void*)); // (32 bytes with 8-byte pointers)

    io_uring& ring;
    // The queues, in the layout of the kernel's.
    std::vector<io_uring_sqe> sqes;
    std::vector<io_uring_cqe> cqes;
    unsigned sq_head = 0, sq_tail = 0, sq_flags = 0, sq_dropped = 0;
    unsigned cq_head = 0, cq_tail = 0, cq_flags = 0, cq_overflow = 0;
    std::vector<unsigned> sq_array;
    std::deque<io_uring_cqe> overflow;

    int epfd = -1;
    int wake_fd = -1; // the pool's completions wake the wait through it
    std::vector<FdState> fds;
    struct BufGroup {
        io_uring_buf_ring* br = nullptr; // null: not registered
        unsigned mask = 0;
        std::uint16_t head = 0;
    };
    std::vector<BufGroup> groups; // by group id
    std::vector<Pending*> heap;   // timers
    Pending* all = nullptr;
    Pending* free_list = nullptr;
    std::vector<std::unique_ptr<Pending[]>> chunks;
    Pending* link_head = nullptr; // the first and last SQE of a link being submitted
    Pending* link_tail = nullptr;
    // IOSQE_IO_DRAIN: an SQE so flagged starts once every SQE submitted before it ended, and
    // the SQEs after it start once it ended. Links held for that (their first SQEs, in order),
    // the records they hold, and the drained SQEs started and not ended.
    std::deque<Pending*> drain_queue;
    std::size_t drain_held = 0;
    unsigned drains_running = 0;
    bool undraining = false;      // undrain runs (what it starts may end at once and call it again)
    std::uint64_t private_ud = 0; // the runtime's own SQEs (private_user_data): no drain waits for them

    // Completions the pool posts (any thread).
    std::mutex done_m;
    std::condition_variable done_cv;
    Pending* done_head = nullptr;
    unsigned on_pool = 0; // guarded by done_m
    // Whether done_head may hold results: read without the lock at every enter, so that an
    // enter with nothing back from the pool takes no lock (set under done_m; a result posted
    // after a look that missed it also writes wake_fd, and the wait looks again).
    std::atomic<bool> done_any{false};

    // SIGPIPE: io_uring's writes to a pipe whose reader left yield -EPIPE and raise no signal.
    // The engine's runtime thread keeps SIGPIPE blocked while the engine lives and takes the
    // one a write raised (sigpipe_taken); the old mask comes back with the engine's end.
    // Engines alive on this thread, and whether the first of them blocked SIGPIPE (the last
    // to go unblocks it): several runtimes may share a thread and end in any order.
    static inline thread_local unsigned t_engines = 0;
    static inline thread_local bool t_unblock_sigpipe = false;
    static void take_sigpipe() noexcept {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPIPE);
        timespec zero{0, 0};
        while (::sigtimedwait(&s, nullptr, &zero) == SIGPIPE) {
        }
    }

    Impl(unsigned sq_entries, unsigned cq_entries, io_uring& r) : ring(r) {
        // Memory first (std::bad_alloc leaves nothing to undo), then the descriptors (each
        // failure closes what was opened), then the signal mask, which cannot fail.
        sqes.resize(sq_entries);
        cqes.resize(cq_entries);
        fds.resize(1024); // the usual descriptor limit: the first call on a descriptor allocates nothing
        heap.reserve(64);
        devs.reserve(max_devs); // (statx_at_once allocates nothing)
        sq_array.resize(sq_entries);
        epfd = ::epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0)
            throw std::system_error(errno, std::generic_category(), "ringo: epoll engine: epoll_create1");
        wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (wake_fd < 0) {
            int e = errno;
            ::close(epfd);
            throw std::system_error(e, std::generic_category(), "ringo: epoll engine: eventfd");
        }
        // Edge-triggered: each write (a pool thread's, an AIO completion's) is an event of its
        // own, so the loop never reads the counter back (a system call per wake saved); the
        // counter would need 2^64 writes to fill (then a writer empties it: wake).
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLET;
        ev.data.u64 = wake_tag;
        if (::epoll_ctl(epfd, EPOLL_CTL_ADD, wake_fd, &ev) < 0) {
            int e = errno;
            ::close(wake_fd);
            ::close(epfd);
            throw std::system_error(e, std::generic_category(), "ringo: epoll engine: epoll_ctl");
        }
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

    ~Impl() {
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
        ::close(wake_fd);
        ::close(epfd);
        if (--t_engines == 0 && t_unblock_sigpipe) {
            take_sigpipe();
            sigset_t pipe_set;
            sigemptyset(&pipe_set);
            sigaddset(&pipe_set, SIGPIPE);
            pthread_sigmask(SIG_UNBLOCK, &pipe_set, nullptr);
        }
    }

    // ------------------------------------------------------------------ records

    Pending* make() {
        if (!free_list) {
            constexpr std::size_t n = 64;
            std::unique_ptr<Pending[]> fresh(new Pending[n]);
            chunks.push_back(std::move(fresh)); // when this throws, `fresh` frees the chunk
            Pending* c = chunks.back().get();
            for (std::size_t i = 0; i < n; ++i) {
                c[i].w_next = free_list;
                free_list = &c[i];
            }
        }
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
        p->first_try = 0;
        p->done_io = 0;
        p->drain_started = false;
        p->heap_index = static_cast<std::size_t>(-1);
        p->res = 0;
        p->cflags = 0;
        return p;
    }
    void release(Pending* p) noexcept {
        if ((p->sqe.flags & compat::sqe_flag::io_drain) && p->drain_started) {
            p->drain_started = false;
            --drains_running;
        }
        if (p->all_prev)
            p->all_prev->all_next = p->all_next;
        else
            all = p->all_next;
        if (p->all_next)
            p->all_next->all_prev = p->all_prev;
        p->state = State::free;
        p->w_next = free_list;
        free_list = p;
    }

    // ------------------------------------------------------------------ completions

    [[nodiscard]] unsigned cq_ready() const noexcept { return cq_tail - __atomic_load_n(&cq_head, __ATOMIC_ACQUIRE); }

    // Timeouts with a completion count: each posted CQE counts for them (count_down).
    std::vector<Pending*> counted;
    bool counting = false;
    void count_down() {
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

    void post(std::uint64_t ud, int res, std::uint32_t flags) {
        post_cqe(ud, res, flags);
        if (!counted.empty() && !counting)
            count_down();
    }
    void post_cqe(std::uint64_t ud, int res, std::uint32_t flags) {
        if (!overflow.empty() || cq_ready() >= cqes.size()) {
            overflow.push_back(io_uring_cqe{ud, res, flags});
            sq_flags |= compat::sq_cq_overflow;
            return;
        }
        io_uring_cqe& c = cqes[cq_tail & (cqes.size() - 1)];
        c.user_data = ud;
        c.res = res;
        c.flags = flags;
        __atomic_store_n(&cq_tail, cq_tail + 1, __ATOMIC_RELEASE);
    }
    void flush_overflow() {
        while (!overflow.empty() && cq_ready() < cqes.size()) {
            io_uring_cqe c = overflow.front();
            overflow.pop_front();
            cqes[cq_tail & (cqes.size() - 1)] = c;
            __atomic_store_n(&cq_tail, cq_tail + 1, __ATOMIC_RELEASE);
        }
        if (overflow.empty())
            sq_flags &= ~compat::sq_cq_overflow;
    }

    // The operation ended with `res`: its CQE, then what its link does.
    // A descriptor this engine just made (accept, socket): whatever the engine knew of an
    // earlier descriptor of that number is gone.
    // (openat's and openat2's too, though what they made is looked at again at each call that
    // goes to the pool: see start.)
    void made(const io_uring_sqe& sqe, int fd) {
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
    void own_fd(int fd, bool owned) {
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

    void finish(Pending* p, int res) {
        // Done before its CQE is posted: what the post sets off (a counted timeout's count, a
        // link) must not find it still in flight.
        p->state = State::done;
        if (p->sqe.opcode == opc::timeout && p->sqe.off)
            counted.erase(std::remove(counted.begin(), counted.end(), p), counted.end());
        made(p->sqe, res);
        Pending* next = p->chain;
        if (!(p->sqe.flags & compat::sqe_flag::cqe_skip_success)) [[likely]] {
            post(p->sqe.user_data, res, res >= 0 ? p->cflags : 0);
        } else if (res < 0 || breaks_link(p, res)) {
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
    [[gnu::noinline]] void finish_link(Pending* p, Pending* next, int res) {
        const bool broke = next && !(p->sqe.flags & sqe_io_hardlink) && breaks_link(p, res);
        const bool quiet = p->sqe.flags & compat::sqe_flag::cqe_skip_success;
        release(p);
        if (next) {
            if (broke)
                cancel_chain(next, quiet);
            else
                start(next);
        }
        if (drain_held != 0) // (links a drain holds)
            undrain();
    }
    // The bytes an iovec array asks for, read as the kernel reads it (0 when it cannot be
    // read: the call then fails, which breaks the link anyway).
    static std::uint32_t vector_length(const io_uring_sqe& s) noexcept {
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
    static bool breaks_link(const Pending* p, int res) noexcept {
        const io_uring_sqe& s = p->sqe;
        if (res < 0)
            return !(s.opcode == opc::timeout && res == -ETIME && (s.timeout_flags & compat::timeout_etime_success));
        switch (s.opcode) {
        case opc::read:
        case opc::write: return !(s.flags & sqe_buffer_select) && static_cast<std::uint32_t>(res) != s.len;
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
    void cancel_chain(Pending* p, bool quiet = false) {
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

    // ------------------------------------------------------------------ descriptors

    // The state of a descriptor number the table holds (in_table said so, or a call on it
    // succeeded: an open descriptor's number is within the process's own table).
    [[gnu::always_inline]] FdState& fd_state(int fd) {
        if (static_cast<std::size_t>(fd) >= fds.size()) [[unlikely]]
            grow_table(fd);
        return fds[static_cast<std::size_t>(fd)];
    }
    [[gnu::noinline]] void grow_table(int fd) {
        fds.resize(std::max<std::size_t>(static_cast<std::size_t>(fd) + 1, fds.size() * 2));
    }
    // Makes room in the table for descriptor `fd` (>= 0), which the table only grows to when
    // the number is open: 0, -EBADF for a number not open (as the kernel answers; a number
    // far above any open one, INT_MAX, must not cost a slot per number below it), or
    // -ENOMEM.
    int in_table(int fd) noexcept {
        if (static_cast<std::size_t>(fd) < fds.size())
            return 0;
        if (::fcntl(fd, F_GETFD) < 0)
            return -EBADF;
        try {
            (void)fd_state(fd);
        } catch (...) {
            return -ENOMEM;
        }
        return 0;
    }
    Kind kind_of(int fd) {
        if (fd < 0)
            return Kind::unknown;
        FdState& s = fd_state(fd);
        if (s.kind != Kind::unknown)
            return s.kind;
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
            s.kind = Kind::nowait; // tried with RWF_NOWAIT; -EOPNOTSUPP makes it blocking
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
    int watch(int fd) {
        FdState& s = fd_state(fd);
        if (s.registered && (s.owned || s.adopted)) {
            if (!s.unverified) {
                s.unverified = true;
                ++unverified_fds;
            }
            return 1;
        }
        const bool mod_first = s.registered;
        if (arm(mod_first ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, s) < 0) {
            if (errno != (mod_first ? ENOENT : EEXIST))
                return -errno;
            if (arm(mod_first ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, s) < 0)
                return -errno;
        }
        s.registered = true;
        return 0;
    }
    // One registration call for `fd` (EPOLL_CTL_ADD or EPOLL_CTL_MOD), edge-triggered, for
    // every event a waiter waits for; each starts a new generation (reg_gen: what an older one
    // reported and is still to be looked at is dropped, and a modified registration reports
    // what is ready again). Counted in RuntimeStats::readiness_registrations.
    int arm(int op, int fd, FdState& s) noexcept {
        ++s.reg_gen;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET;
        ev.data.u64 = (std::uint64_t{s.reg_gen} << 32) | static_cast<std::uint32_t>(fd);
        ++registrations;
        return ::epoll_ctl(epfd, op, fd, &ev);
    }
    // The wake eventfd's events (no descriptor's: a number's data has 32 bits of generation
    // above it, and a generation of all ones with a number of all ones is never made).
    static constexpr std::uint64_t wake_tag = ~std::uint64_t{0};
    static constexpr int verify_ms = 10;
    std::uint64_t registrations = 0; // epoll_ctl calls of watch and verify_registrations
    unsigned unverified_fds = 0;
    unsigned polls_since_verify = 0;
    // What the engine knew of a descriptor number, forgotten; its waiters (none, unless the
    // descriptor was closed behind the engine's back) stay on their lists, where a cancel
    // finds them.
    // A waiter still parked on the number may wait under a registration that is gone: it is
    // counted as unverified (verify_registrations re-arms it). The generation is kept: the
    // next registration call (arm) takes the next one.
    void reset_fd(FdState& s) noexcept {
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
    void verified(FdState& s) noexcept {
        if (s.unverified) {
            s.unverified = false;
            --unverified_fds;
        }
    }
    // Re-arms the registration of every descriptor with waiters parked unverified (see
    // watch); one whose registration was gone is added again and its waiters tried, and what
    // still waits on a descriptor that cannot be registered ends with the error.
    void verify_registrations() {
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (!fds[i].unverified)
                continue;
            verified(fds[i]);
            if (!fds[i].waits())
                continue;
            const int fd = static_cast<int>(i);
            if (arm(EPOLL_CTL_MOD, fd, fds[i]) == 0) {
                fds[i].registered = true;
                continue; // it was alive (and a re-arm reports what is ready now)
            }
            int e = errno == ENOENT && arm(EPOLL_CTL_ADD, fd, fds[i]) == 0 ? 0 : errno;
            fds[i].registered = e == 0;
            on_event(fd, EPOLLIN | EPOLLOUT);
            if (e != 0)
                end_waiters(fd, -e);
        }
        polls_since_verify = 0; // (what the pass parked meanwhile is the next pass's)
    }
    // A descriptor closed through the engine: forget it (its registration went with it), and
    // end what still waited on it.
    void forget(int fd) {
        if (fd < 0 || static_cast<std::size_t>(fd) >= fds.size())
            return;
        end_waiters(fd, -EBADF);
        reset_fd(fds[static_cast<std::size_t>(fd)]);
    }
    // Ends what waits on a descriptor with `res`.
    void end_waiters(int fd, int res) {
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
    static void push_waiter(Pending*& head, Pending* p) noexcept {
        if (!head) {
            head = p;
            p->w_prev = p;
            p->w_next = nullptr;
            return;
        }
        Pending* tail = head->w_prev;
        tail->w_next = p;
        p->w_prev = tail;
        p->w_next = nullptr;
        head->w_prev = p;
    }
    static void unlink_waiter(Pending*& head, Pending* p) noexcept {
        if (p == head) {
            head = p->w_next;
            if (head)
                head->w_prev = p->w_prev;
        } else {
            p->w_prev->w_next = p->w_next;
            if (p->w_next)
                p->w_next->w_prev = p->w_prev;
            else
                head->w_prev = p->w_prev;
        }
        p->w_next = p->w_prev = nullptr;
    }
    Pending*& list_of(Pending* p) {
        FdState& s = fd_state(p->fd);
        return p->state == State::reading ? s.readers : p->state == State::writing ? s.writers : s.pollers;
    }

    // ------------------------------------------------------------------ timers

    void heap_swap(std::size_t a, std::size_t b) noexcept {
        std::swap(heap[a], heap[b]);
        heap[a]->heap_index = a;
        heap[b]->heap_index = b;
    }
    void heap_up(std::size_t i) noexcept {
        while (i > 0) {
            std::size_t parent = (i - 1) / 2;
            if (heap[parent]->deadline <= heap[i]->deadline)
                break;
            heap_swap(i, parent);
            i = parent;
        }
    }
    void heap_down(std::size_t i) noexcept {
        for (;;) {
            std::size_t l = 2 * i + 1, r = l + 1, m = i;
            if (l < heap.size() && heap[l]->deadline < heap[m]->deadline)
                m = l;
            if (r < heap.size() && heap[r]->deadline < heap[m]->deadline)
                m = r;
            if (m == i)
                return;
            heap_swap(i, m);
            i = m;
        }
    }
    void heap_push(Pending* p) {
        p->heap_index = heap.size();
        heap.push_back(p);
        heap_up(p->heap_index);
    }
    void heap_remove(Pending* p) noexcept {
        std::size_t i = p->heap_index;
        std::size_t last = heap.size() - 1;
        if (i != last) {
            heap_swap(i, last);
            heap.pop_back();
            heap_down(i);
            heap_up(i);
        } else {
            heap.pop_back();
        }
        p->heap_index = static_cast<std::size_t>(-1);
    }
    // A timeout's timespec, read as the kernel reads it: 0, -EFAULT for a pointer it cannot
    // read (null included), -EINVAL for a negative time (a tv_nsec of 10^9 or more is taken,
    // as the kernel takes it: it adds up).
    static int read_timespec(std::uint64_t addr, __kernel_timespec& ts) noexcept {
        if (!addr || !read_user(&ts, addr, sizeof ts))
            return -EFAULT;
        return ts.tv_sec < 0 || ts.tv_nsec < 0 ? -EINVAL : 0;
    }
    // The deadline (mono_ns) of a valid timespec; one that the clock cannot reach saturates
    // (never: UINT64_MAX) rather than wrapping to a time that has passed.
    // A valid timespec in ns, saturated.
    static std::uint64_t ns_of(const __kernel_timespec& ts) noexcept {
        constexpr std::uint64_t never = ~std::uint64_t{0};
        const auto sec = static_cast<std::uint64_t>(ts.tv_sec), nsec = static_cast<std::uint64_t>(ts.tv_nsec);
        std::uint64_t ns;
        if (sec > (never - nsec) / 1'000'000'000u || __builtin_add_overflow(sec * 1'000'000'000u, nsec, &ns))
            return never;
        return ns;
    }
    static std::uint64_t deadline_of(const __kernel_timespec& ts, std::uint32_t flags) noexcept {
        constexpr std::uint64_t never = ~std::uint64_t{0};
        const std::uint64_t ns = ns_of(ts);
        if (ns == never)
            return never;
        std::uint64_t at;
        if (!(flags & timeout_abs))
            return __builtin_add_overflow(mono_ns(), ns, &at) ? never : at;
        if (flags & timeout_realtime) {
            timespec rt;
            ::clock_gettime(CLOCK_REALTIME, &rt);
            auto now_rt =
                static_cast<std::uint64_t>(rt.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(rt.tv_nsec);
            if (ns <= now_rt)
                return 0;
            return __builtin_add_overflow(mono_ns(), ns - now_rt, &at) ? never : at;
        }
        return ns; // CLOCK_MONOTONIC (a boottime deadline is read as monotonic)
    }
    void fire_timers() {
        if (heap.empty())
            return;
        std::uint64_t now = mono_ns();
        while (!heap.empty() && heap.front()->deadline <= now) {
            Pending* p = heap.front();
            heap_remove(p);
            if ((p->sqe.timeout_flags & compat::timeout_multishot) && (p->sqe.off == 0 || ++p->done_io < p->sqe.off)) {
                // A multishot timeout: -ETIME with IORING_CQE_F_MORE at each expiry, one period
                // after the last, until its count (off; 0: for ever) ran out. Back in the heap
                // before its CQE is posted (what the post sets off may remove it), and not
                // due again in this pass (a period is at least 1 ns).
                p->deadline = now + p->period;
                heap_push(p);
                post(p->sqe.user_data, -ETIME, cqe_f_more);
                continue;
            }
            finish(p, -ETIME);
        }
    }

    // ------------------------------------------------------------------ the pool

    static void run_on_pool(Job* j) noexcept {
        auto* p = static_cast<Pending*>(j);
        do
            p->res = blocking_call(p->sqe, p->recheck);
        while (p->res == -EINTR && !BlockingCalls::get().interrupted(p));
        BlockingCalls::get().finishing(p);
        Impl* e = p->eng;
        std::lock_guard lk(e->done_m);
        // The first result of a batch wakes the loop; later ones find it woken already (the
        // loop reads wake_fd before it takes the list, and takes the whole list).
        const bool first = e->done_head == nullptr;
        p->w_next = e->done_head;
        e->done_head = p;
        e->done_any.store(true, std::memory_order_release);
        if (first)
            wake(e->wake_fd);
        if (--e->on_pool == 0)
            e->done_cv.notify_all();
    }
    // Adds one to the eventfd the loop's wait watches (edge-triggered: every write is seen).
    static void wake(int fd) noexcept {
        std::uint64_t one = 1;
        if (::write(fd, &one, sizeof one) < 0 && errno == EAGAIN) {
            std::uint64_t v; // full after 2^64 - 2 wakes: empty it and write again
            (void)!::read(fd, &v, sizeof v);
            (void)!::write(fd, &one, sizeof one);
        }
    }
    // A cancelled call on the pool is interrupted (its call returns EINTR, the operation
    // -ECANCELED), and again at each look at the events until it ended: a signal that came
    // before the call started was lost.
    struct Interrupted {
        Pending* p;
        std::uint32_t gen;
    };
    std::vector<Interrupted> interrupted;
    void interrupt(Pending* p) {
        if (!BlockingCalls::get().interrupt(p))
            return; // (the program handles the signal: the call runs to its end)
        for (const Interrupted& i : interrupted)
            if (i.p == p && i.gen == p->gen)
                return;
        try {
            interrupted.push_back({p, p->gen});
        } catch (...) { // (then only the first signal: a call not yet started runs to its end)
        }
    }
    // Sends the interrupts again to the calls that have not ended; true while some remain.
    bool interrupt_again() noexcept {
        std::size_t kept = 0;
        for (const Interrupted& i : interrupted)
            if (i.p->gen == i.gen && i.p->state == State::pool) {
                (void)BlockingCalls::get().interrupt(i.p);
                interrupted[kept++] = i;
            }
        interrupted.resize(kept);
        return kept > 0;
    }
    void to_pool(Pending* p) {
        p->state = State::pool;
        p->run = &run_on_pool;
        {
            std::lock_guard lk(done_m);
            ++on_pool;
        }
        try {
            BlockingCalls::get().submit(p);
        } catch (...) {
            std::lock_guard lk(done_m);
            --on_pool;
            throw;
        }
    }
    void take_pool_results() {
        if (!done_any.load(std::memory_order_acquire))
            return;
        Pending* list;
        {
            std::lock_guard lk(done_m);
            list = done_head;
            done_head = nullptr;
            done_any.store(false, std::memory_order_relaxed);
        }
        // The list is newest first: post in the order the calls ended.
        Pending* rev = nullptr;
        while (list) {
            Pending* n = list->w_next;
            list->w_next = rev;
            rev = list;
            list = n;
        }
        while (rev) {
            Pending* n = rev->w_next;
            rev->w_next = nullptr;
            ended_off_loop(rev, rev->res);
            rev = n;
        }
    }
    // The result of a call made off the loop's thread (the pool, native AIO).
    void ended_off_loop(Pending* p, int res) {
        if (p->cancelled && res == -EINTR)
            res = -ECANCELED; // (interrupted: interrupt)
        if (p->recheck && res == -ESPIPE && !p->cancelled) {
            // The descriptor is no longer the regular file it was (closed behind the
            // engine's back, its number reused by a pipe or socket): start over.
            if (p->fd >= 0)
                fd_state(p->fd).kind = Kind::unknown;
            p->recheck = false;
            start(p);
        } else {
            finish(p, res);
        }
    }

    // The call of an SQE that may block, made on a pool thread. `positional_only`: a read or
    // write at an offset answers -ESPIPE as it comes (no call of a stream, which may block).
    static int blocking_call(const io_uring_sqe& s, bool positional_only) noexcept {
        const int fd = s.fd;
        const auto off = static_cast<off_t>(s.off);
        void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
        const bool cur = s.off == ~std::uint64_t{0};
        switch (s.opcode) {
        case opc::read:
        case opc::write: {
            // (The caller's RWF_* flags go to the call: the kernel answers what it lacks.)
            const bool wr = s.opcode == opc::write;
            iovec v{addr, s.len};
            auto call = [&](off_t at) {
                return sys(wr ? ::pwritev2(fd, &v, 1, at, static_cast<int>(s.rw_flags))
                              : ::preadv2(fd, &v, 1, at, static_cast<int>(s.rw_flags)));
            };
            int r = cur ? -ESPIPE : call(off);
            return r == -ESPIPE && !positional_only ? call(-1) : r; // a stream: no offset, as io_uring
        }
        case opc::readv:
            return sys(::preadv2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), cur ? -1 : off,
                                 static_cast<int>(s.rw_flags)));
        case opc::writev:
            return sys(::pwritev2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), cur ? -1 : off,
                                  static_cast<int>(s.rw_flags)));
        case opc::fsync: return sys((s.fsync_flags & fsync_datasync) ? ::fdatasync(fd) : ::fsync(fd));
        case opc::sync_file_range: return sys(::sync_file_range(fd, off, s.len, s.sync_range_flags));
        case opc::fallocate: return sys(::fallocate(fd, static_cast<int>(s.len), off, static_cast<off_t>(s.addr)));
        case opc::ftruncate: return sys(::ftruncate(fd, off));
        case opc::openat:
            return sys(::openat(fd, static_cast<const char*>(addr), static_cast<int>(s.open_flags),
                                static_cast<mode_t>(s.len)));
        case opc::openat2:
            return sys(::syscall(SYS_openat2, fd, addr, reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.off)),
                                 static_cast<std::size_t>(s.len)));
        case opc::statx:
            return sys(::statx(fd, static_cast<const char*>(addr), static_cast<int>(s.statx_flags), s.len,
                               reinterpret_cast<struct statx*>(static_cast<std::uintptr_t>(s.off))));
        case opc::renameat:
            return sys(::renameat2(fd, static_cast<const char*>(addr), static_cast<int>(s.len),
                                   reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.off)), s.rename_flags));
        case opc::unlinkat:
            return sys(::unlinkat(fd, static_cast<const char*>(addr), static_cast<int>(s.unlink_flags)));
        case opc::mkdirat: return sys(::mkdirat(fd, static_cast<const char*>(addr), static_cast<mode_t>(s.len)));
        case opc::symlinkat:
            return sys(::symlinkat(static_cast<const char*>(addr), fd,
                                   reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.off))));
        case opc::linkat:
            return sys(::linkat(fd, static_cast<const char*>(addr), static_cast<int>(s.len),
                                reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.off)),
                                static_cast<int>(s.hardlink_flags)));
        case opc::splice:
        case opc::tee: {
            // fd_in, its offset (-1: none) in the address field, fd_out and its offset in off.
            std::int32_t in;
            std::memcpy(&in, reinterpret_cast<const char*>(&s) + 44, sizeof in);
            const unsigned flags = s.splice_flags & ~SPLICE_F_FD_IN_FIXED;
            if (s.opcode == opc::tee)
                return sys(::tee(in, fd, s.len, flags));
            loff_t oin = static_cast<loff_t>(s.addr), oout = static_cast<loff_t>(s.off);
            return sys(::splice(in, s.addr == ~std::uint64_t{0} ? nullptr : &oin, fd,
                                s.off == ~std::uint64_t{0} ? nullptr : &oout, s.len, flags));
        }
        default: return -EOPNOTSUPP;
        }
    }

    // ------------------------------------------------------------------ native AIO

    // A read or write of a file opened with O_DIRECT goes to the device without a pool
    // thread: Linux's native AIO (io_submit) queues it, and its completion writes wake_fd
    // (IOCB_FLAG_RESFD), which the wait watches already. The context is set up at the first
    // direct call; a kernel without AIO (ENOSYS), a seccomp profile that refuses it or a full
    // fs.aio-max-nr (EAGAIN) leaves the calls on the pool, as does any call io_submit refuses
    // (the pool's own call then gives the answer). RWF_NOWAIT keeps io_submit from waiting on
    // the loop's thread (a write that allocates blocks, a lock held): such a call ends with
    // -EAGAIN and is made again on the pool. A call in flight cannot be withdrawn (io_cancel
    // does not stop a direct read): it runs to its end (a call on the pool is interrupted).
    enum class AioState : unsigned char { untried, ready, refused };
    AioState aio = AioState::untried;
    aio_context_t aio_ctx = 0;
    unsigned aio_in_flight = 0;
    static constexpr unsigned aio_depth = 256;
    // The head of the context's completion ring, mapped into this process (the layout of
    // fs/aio.c's struct aio_ring): an enter looks at it before it asks the kernel.
    struct AioRingHead {
        unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
    };
    static constexpr unsigned aio_ring_magic = 0xa10a10a1;

    bool aio_usable() {
        if (aio == AioState::untried) {
            aio_context_t c = 0;
            if (::syscall(SYS_io_setup, aio_depth, &c) == 0) {
                aio_ctx = c;
                aio = AioState::ready;
            } else {
                aio = AioState::refused;
            }
        }
        return aio == AioState::ready;
    }
    // Queues a direct read or write (the caller knows the descriptor opened with O_DIRECT).
    // False: not queued, the pool makes it.
    bool aio_start(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        if (!positional(s) || aio_in_flight >= aio_depth || !aio_usable())
            return false;
        iocb cb{};
        cb.aio_data = reinterpret_cast<std::uintptr_t>(p);
        cb.aio_lio_opcode = s.opcode == opc::read    ? IOCB_CMD_PREAD
                            : s.opcode == opc::write ? IOCB_CMD_PWRITE
                            : s.opcode == opc::readv ? IOCB_CMD_PREADV
                                                     : IOCB_CMD_PWRITEV;
        cb.aio_fildes = static_cast<std::uint32_t>(s.fd);
        cb.aio_buf = s.addr;
        cb.aio_nbytes = s.len; // (the vector's length for readv and writev)
        cb.aio_offset = static_cast<std::int64_t>(s.off);
        cb.aio_rw_flags = static_cast<int>(s.rw_flags | RWF_NOWAIT);
        cb.aio_flags = IOCB_FLAG_RESFD;
        cb.aio_resfd = static_cast<std::uint32_t>(wake_fd);
        iocb* one[1] = {&cb}; // (the kernel copies the iocb, and a vector's iovecs, here)
        if (::syscall(SYS_io_submit, aio_ctx, 1L, one) != 1) {
            // A file system without non-blocking direct calls (FMODE_NOWAIT: a network or FUSE
            // file system) refuses every one: its calls go straight to the pool from now on.
            if (errno == EOPNOTSUPP)
                fd_state(s.fd).no_aio = true;
            return false;
        }
        p->state = State::aio;
        ++aio_in_flight;
        return true;
    }
    // The completions that came, taken from the ring in this process's memory as io_getevents
    // would take them (this thread is the context's only reader), or with io_getevents when the
    // ring's header is not the one known.
    void take_aio_results() {
        if (aio_in_flight == 0)
            return;
        auto* ring_head = reinterpret_cast<AioRingHead*>(aio_ctx);
        io_event evs[64];
        for (;;) {
            long n = 0;
            if (ring_head->magic == aio_ring_magic && ring_head->incompat_features == 0) {
                const unsigned nr = ring_head->nr;
                unsigned head = __atomic_load_n(&ring_head->head, __ATOMIC_RELAXED);
                const unsigned tail = __atomic_load_n(&ring_head->tail, __ATOMIC_ACQUIRE);
                const auto* ring_evs = reinterpret_cast<const io_event*>(reinterpret_cast<const char*>(ring_head) +
                                                                         ring_head->header_length);
                while (head != tail && n < 64) {
                    evs[n++] = ring_evs[head];
                    head = head + 1 == nr ? 0 : head + 1;
                }
                if (n == 0)
                    return; // nothing ended: no system call
                __atomic_store_n(&ring_head->head, head, __ATOMIC_RELEASE);
            } else {
                timespec zero{0, 0};
                n = ::syscall(SYS_io_getevents, aio_ctx, 0L, 64L, evs, &zero);
                if (n <= 0)
                    return;
            }
            for (long i = 0; i < n; ++i) {
                auto* p = reinterpret_cast<Pending*>(static_cast<std::uintptr_t>(evs[i].data));
                --aio_in_flight;
                const auto res = static_cast<int>(evs[i].res);
                if (res == -EAGAIN && !(p->sqe.rw_flags & RWF_NOWAIT)) {
                    // It would have waited on the loop's thread (RWF_NOWAIT was the engine's).
                    try {
                        to_pool(p);
                    } catch (...) {
                        finish(p, -EAGAIN);
                    }
                    continue;
                }
                ended_off_loop(p, res);
            }
            if (n < 64)
                return;
        }
    }

    // ------------------------------------------------------------------ readiness

    // Tries the call of a readiness operation without blocking: its result, or -EAGAIN.
    [[gnu::always_inline]] int try_call(Pending* p) {
        if ((p->sqe.msg_flags & MSG_WAITALL) && waits_for_all(p->sqe)) [[unlikely]]
            return waitall_call(p);
        return after_try(p->sqe, try_call_once(p));
    }
    // What a try's result `r` tells (the call's result, returned).
    [[gnu::always_inline]] int after_try(const io_uring_sqe& s, int r) {
        if (r == -EPIPE)
            take_sigpipe(); // a write into a pipe (or socket) whose reader left
        else if (r == -EAGAIN || r > 0)
            note_read(s, r);
        return r;
    }
    // A plain read of a stream socket the engine made: whether it left the queue empty.
    [[gnu::always_inline]] void note_read(const io_uring_sqe& s, int r) {
        if (s.opcode != opc::recv && s.opcode != opc::read)
            return;
        FdState& st = fd_state(s.fd);
        if (!st.stream || (s.flags & sqe_buffer_select))
            return;
        const bool plain =
            s.opcode == opc::recv ? (s.msg_flags & ~unsigned(MSG_DONTWAIT | MSG_NOSIGNAL)) == 0 : s.rw_flags == 0;
        if (r == -EAGAIN || (plain && static_cast<unsigned>(r) < s.len))
            st.drained = true;
    }
    // A read that may wait for the socket's next edge without a first try: the socket's last
    // read left its queue empty and its registration is there (any byte since made an edge).
    bool skips_first_try(const io_uring_sqe& s) {
        if ((s.opcode != opc::recv && s.opcode != opc::read) || (s.flags & sqe_buffer_select) || s.fd < 0 ||
            callers_nowait(s))
            return false;
        const FdState& st = fd_state(s.fd);
        return st.drained && st.stream && st.owned && st.registered;
    }
    int try_call_once(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        const int fd = s.fd;
        void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
        // (A socket in blocking mode honours RWF_NOWAIT too: no read or write here ever waits.)
        const bool nowait = fd_state(fd).kind == Kind::nowait || fd_state(fd).kind == Kind::socket;
        switch (s.opcode) {
        case opc::recv:
        case opc::recvmsg:
            if (s.flags & sqe_buffer_select)
                return recv_selected(p);
            return socket_call_now(s);
        case opc::send:
        case opc::sendmsg: return socket_call_now(s);
        case opc::accept: {
            auto call = [&] {
                return sys(::accept4(fd, static_cast<sockaddr*>(addr),
                                     reinterpret_cast<socklen_t*>(static_cast<std::uintptr_t>(s.off)),
                                     static_cast<int>(s.accept_flags)));
            };
            if (const FdState& st = fd_state(fd); st.owned || st.adopted) {
                // A listener of ringo's own (made by the engine, or owned by a ringo::Fd)
                // becomes non-blocking for good: several runtimes may accept on it at once,
                // and a mode set for one call alone could be set back under another's call.
                const int fl = ::fcntl(fd, F_GETFL);
                if (fl >= 0 && !(fl & O_NONBLOCK))
                    (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
                return call();
            }
            return without_waiting(fd, call);
        }
        case opc::connect: {
            if (p->connecting) {
                int err = 0;
                socklen_t len = sizeof err;
                if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                    return -errno;
                if (err == 0) {
                    // Writable with no error can also mean "not yet": ask the socket.
                    sockaddr_storage peer;
                    socklen_t pl = sizeof peer;
                    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) < 0)
                        return errno == ENOTCONN ? -EAGAIN : -errno;
                }
                return -err;
            }
            int r = without_waiting(fd, [&] {
                return sys(::connect(fd, static_cast<const sockaddr*>(addr), static_cast<socklen_t>(s.off)));
            });
            if (r == -EINPROGRESS || r == -EAGAIN) {
                p->connecting = true;
                return -EAGAIN;
            }
            return r;
        }
        case opc::read:
            if (s.flags & sqe_buffer_select)
                return recv_selected(p);
            if (nowait || s.rw_flags) { // (the caller's RWF_* flags: the kernel answers what it lacks)
                iovec v{addr, s.len};
                return sys(::preadv2(fd, &v, 1, -1, static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
            }
            return sys(::read(fd, addr, s.len));
        case opc::write:
            if (nowait || s.rw_flags) {
                iovec v{addr, s.len};
                return sys(::pwritev2(fd, &v, 1, -1, static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
            }
            return sys(::write(fd, addr, s.len));
        case opc::readv:
            return sys(::preadv2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), -1,
                                 static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
        case opc::writev:
            return sys(::pwritev2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), -1,
                                  static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
        case opc::poll_add: {
            pollfd pf{fd, static_cast<short>(s.poll32_events & 0xffff), 0};
            int r = ::poll(&pf, 1, 0);
            if (r < 0)
                return -errno;
            return r == 0 ? -EAGAIN : (pf.revents & (pf.events | POLLERR | POLLHUP | POLLNVAL));
        }
        default: return -EOPNOTSUPP;
        }
    }
    // accept4 or connect (`call`) on socket `fd` without waiting: a socket in blocking mode
    // has O_NONBLOCK for the call alone, as io_uring makes it without changing the caller's
    // file flags (accept4 and connect have no MSG_DONTWAIT).
    template <class Call>
    static int without_waiting(int fd, Call call) {
        const int fl = ::fcntl(fd, F_GETFL);
        if (fl < 0 || (fl & O_NONBLOCK))
            return call();
        (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        const int r = call();
        (void)::fcntl(fd, F_SETFL, fl);
        return r;
    }
    // A recv or send with MSG_WAITALL on a stream socket: it goes on until all `len` bytes
    // moved (done_io counts them across waits), and ends with what moved at the stream's end
    // or an error, as the kernel's request does.
    [[gnu::noinline, gnu::cold]] int waitall_call(Pending* p) {
        io_uring_sqe part = p->sqe;
        for (;;) {
            part.addr = p->sqe.addr + p->done_io;
            part.len = p->sqe.len - p->done_io;
            const int r = after_try(part, socket_call_now(part));
            if (r > 0) {
                p->done_io += static_cast<std::uint32_t>(r);
                if (p->done_io < p->sqe.len)
                    continue;
                return static_cast<int>(p->done_io);
            }
            if (r == -EAGAIN)
                return r;
            return p->done_io ? static_cast<int>(p->done_io) : r;
        }
    }
    [[gnu::noinline, gnu::cold]] static bool waits_for_all(const io_uring_sqe& s) noexcept {
        if ((s.opcode != opc::recv && s.opcode != opc::send) || !(s.msg_flags & MSG_WAITALL) ||
            (s.flags & sqe_buffer_select) || (s.ioprio & recv_multishot))
            return false;
        int type = 0;
        socklen_t len = sizeof type;
        return ::getsockopt(s.fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
               (type == SOCK_STREAM || type == SOCK_SEQPACKET);
    }
    // recv, send, recvmsg or sendmsg (no provided buffer) without waiting: its result, or -EAGAIN.
    [[gnu::always_inline]] static int socket_call_now(const io_uring_sqe& s) noexcept {
        void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
        const int flags = static_cast<int>(s.msg_flags) | MSG_DONTWAIT;
        switch (s.opcode) {
        case opc::recv: return sys(::recv(s.fd, addr, s.len, flags));
        case opc::send: {
            std::uint16_t alen;
            std::memcpy(&alen, reinterpret_cast<const char*>(&s) + 44, sizeof alen);
            auto* dest = reinterpret_cast<const sockaddr*>(static_cast<std::uintptr_t>(s.off));
            return sys(::sendto(s.fd, addr, s.len, flags, dest, dest ? alen : 0));
        }
        case opc::recvmsg: return sys(::recvmsg(s.fd, static_cast<msghdr*>(addr), flags));
        default: return sys(::sendmsg(s.fd, static_cast<const msghdr*>(addr), flags));
        }
    }
    // recv into a buffer of the SQE's group, taken from the ring's head as the kernel takes
    // it (a buffer is used only when bytes arrive).
    int recv_selected(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        const bool read = s.opcode == opc::read;
        p->cflags = 0;
        if (s.buf_group >= groups.size() || !groups[s.buf_group].br)
            return -ENOBUFS;
        BufGroup& g = groups[s.buf_group];
        const std::uint16_t tail = __atomic_load_n(&g.br->tail, __ATOMIC_ACQUIRE);
        if (tail == g.head)
            return -ENOBUFS;
        const io_uring_buf& b = g.br->bufs[g.head & g.mask];
        const std::uint32_t len = s.len && s.len < b.len ? s.len : b.len;
        void* to = reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.addr));
        int r;
        if (s.opcode == opc::recvmsg && multishot(s)) {
            r = recvmsg_into(s, p->hdr, static_cast<char*>(to), b.len, p->empty);
        } else if (s.opcode == opc::recvmsg) {
            // Single-shot: the caller's msghdr receives the name, the control data and the
            // flags as from a recvmsg(2) whose one iovec is the buffer.
            msghdr m = p->hdr;
            // (An iovec of length 0 takes the whole buffer, as the kernel's.)
            iovec v{to,
                    p->hdr.msg_iovlen && p->hdr_iov.iov_len && p->hdr_iov.iov_len < b.len ? p->hdr_iov.iov_len : b.len};
            m.msg_iov = &v;
            m.msg_iovlen = 1;
            r = sys(::recvmsg(s.fd, &m, static_cast<int>(s.msg_flags) | MSG_DONTWAIT));
            if (r >= 0) {
                // Written back as the kernel writes it (a msghdr it cannot write: -EFAULT): the
                // name's length when there is a name, the control length and the flags.
                static_assert(offsetof(msghdr, msg_flags) ==
                              offsetof(msghdr, msg_controllen) + sizeof(m.msg_controllen));
                struct {
                    decltype(m.msg_controllen) controllen;
                    decltype(m.msg_flags) flags;
                } tail{m.msg_controllen, m.msg_flags};
                if ((p->hdr.msg_name &&
                     !copy_out(s.addr + offsetof(msghdr, msg_namelen), &m.msg_namelen, sizeof m.msg_namelen)) ||
                    !copy_out(s.addr + offsetof(msghdr, msg_controllen), &tail,
                              sizeof tail.controllen + sizeof tail.flags))
                    r = -EFAULT;
            }
        } else if (!read) {
            r = sys(::recv(s.fd, to, len, static_cast<int>(s.msg_flags) | MSG_DONTWAIT));
        } else if (fd_state(s.fd).kind == Kind::nowait || fd_state(s.fd).kind == Kind::socket) {
            iovec v{to, len};
            r = sys(::preadv2(s.fd, &v, 1, -1, RWF_NOWAIT));
        } else {
            r = sys(::read(s.fd, to, len));
        }
        if (r > 0) {
            ++g.head;
            p->cflags = IORING_CQE_F_BUFFER | (static_cast<std::uint32_t>(b.bid) << IORING_CQE_BUFFER_SHIFT);
        }
        return r;
    }
    // The msghdr of a recvmsg into a provided buffer, read into its record as the kernel reads
    // it before the call: -EFAULT for one it cannot read; for a multishot one, -EOVERFLOW when
    // the header, name and control data it asks room for do not add up within an int; for a
    // single-shot one, -EINVAL for more than one iovec (the buffer takes the place of the
    // one, whose length bounds it).
    int read_msghdr(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        if (!read_user(&p->hdr, s.addr, sizeof p->hdr))
            return -EFAULT;
        if (multishot(s)) {
            const unsigned long long room =
                sizeof(io_uring_recvmsg_out) + static_cast<unsigned long long>(p->hdr.msg_namelen);
            if (p->hdr.msg_controllen > INT_MAX || room + p->hdr.msg_controllen > INT_MAX)
                return -EOVERFLOW;
            return 0;
        }
        if (p->hdr.msg_iovlen > 1)
            return -EINVAL;
        p->hdr_iov = iovec{};
        if (p->hdr.msg_iovlen == 1 &&
            !read_user(&p->hdr_iov, reinterpret_cast<std::uintptr_t>(p->hdr.msg_iov), sizeof p->hdr_iov))
            return -EFAULT;
        p->hdr.msg_iov = &p->hdr_iov;
        return 0;
    }
    // A recvmsg into a provided buffer lays it out as the kernel does: an io_uring_recvmsg_out
    // header, the room the SQE's msghdr asks for the name and the control data, then the
    // payload; the result counts all of it.
    static int recvmsg_into(const io_uring_sqe& s, const msghdr& user, char* buf, std::uint32_t cap,
                            bool& empty) noexcept {
        const std::size_t nl = user.msg_namelen, cl = user.msg_controllen; // (their sum checked at start)
        const std::size_t head = sizeof(io_uring_recvmsg_out) + nl + cl;
        if (cap < head)
            return -EFAULT;
        msghdr m{};
        m.msg_name = nl ? buf + sizeof(io_uring_recvmsg_out) : nullptr;
        m.msg_namelen = static_cast<socklen_t>(nl);
        m.msg_control = cl ? buf + sizeof(io_uring_recvmsg_out) + nl : nullptr;
        m.msg_controllen = cl;
        iovec v{buf + head, cap - head};
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        int r = sys(::recvmsg(s.fd, &m, static_cast<int>(s.msg_flags) | MSG_DONTWAIT | MSG_TRUNC));
        if (r < 0)
            return r;
        empty = r == 0; // the kernel ends a multishot recvmsg there
        io_uring_recvmsg_out out{};
        out.namelen = m.msg_namelen;
        out.controllen = static_cast<std::uint32_t>(m.msg_controllen);
        out.payloadlen = static_cast<std::uint32_t>(r);
        out.flags = static_cast<std::uint32_t>(m.msg_flags);
        std::memcpy(buf, &out, sizeof out);
        const std::size_t got = static_cast<std::size_t>(r) < cap - head ? static_cast<std::size_t>(r) : cap - head;
        return static_cast<int>(head + got);
    }
    // A multishot's result that keeps it going (IORING_CQE_F_MORE): a connection, a readiness,
    // bytes; not the end of a stream (recv's 0, a recvmsg without payload) nor an error.
    static bool goes_on(const io_uring_sqe& s, int r, bool empty) noexcept {
        if (s.opcode == opc::recv)
            return r > 0;
        if (s.opcode == opc::recvmsg)
            return r > 0 && !empty;
        return r >= 0;
    }
    static bool multishot(const io_uring_sqe& s) noexcept {
        if ((s.opcode == opc::recv || s.opcode == opc::recvmsg) && (s.ioprio & recv_multishot))
            return true;
        return (s.opcode == opc::accept && (s.ioprio & accept_multishot)) ||
               (s.opcode == opc::poll_add && (s.len & poll_add_multi));
    }
    // The caller asked not to wait (MSG_DONTWAIT, RWF_NOWAIT): -EAGAIN is its answer.
    static bool callers_nowait(const io_uring_sqe& s) noexcept {
        switch (s.opcode) {
        case opc::recv:
        case opc::send:
        case opc::recvmsg:
        case opc::sendmsg: return (s.msg_flags & MSG_DONTWAIT) != 0;
        case opc::read:
        case opc::write:
        case opc::readv:
        case opc::writev: return (s.rw_flags & RWF_NOWAIT) != 0;
        default: return false;
        }
    }
    // Calls that only a socket takes (anything else answers -ENOTSOCK) and that change
    // nothing before they are made.
    // (Not accept and connect: they first make the socket non-blocking, which must not
    // happen to what the number may name now.)
    static bool socket_only(std::uint8_t op) noexcept {
        return op == opc::recv || op == opc::send || op == opc::recvmsg || op == opc::sendmsg;
    }
    static bool is_write(std::uint8_t op) noexcept {
        return op == opc::send || op == opc::sendmsg || op == opc::connect || op == opc::write || op == opc::writev;
    }

    // Runs a waiter's call; true when it is done (removed from its list), false when it waits on.
    bool retry(Pending* p) {
        for (;;) {
            int r = try_call(p);
            if (r == -EAGAIN)
                return false;
            if (r == -EOPNOTSUPP && fd_state(p->fd).kind == Kind::nowait && !(p->sqe.rw_flags & RWF_NOWAIT) &&
                (p->sqe.opcode == opc::read || p->sqe.opcode == opc::write || p->sqe.opcode == opc::readv ||
                 p->sqe.opcode == opc::writev)) {
                // This descriptor cannot be read or written without blocking (no RWF_NOWAIT):
                // its calls go to the pool from now on (with flags of the caller's, this one
                // only: the refusal may be theirs).
                if (p->sqe.rw_flags == 0)
                    fd_state(p->fd).kind = Kind::blocking;
                unlink_waiter(list_of(p), p);
                to_pool(p);
                return true;
            }
            if (multishot(p->sqe) && goes_on(p->sqe, r, p->empty)) {
                made(p->sqe, r);
                post(p->sqe.user_data, r, p->cflags | cqe_f_more);
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
    void wait_ready(Pending* p, State st, bool again) {
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
    void on_event(int fd, std::uint32_t ev) {
        if (static_cast<std::size_t>(fd) >= fds.size())
            return;
        const bool in = ev & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
        if (in)
            fds[static_cast<std::size_t>(fd)].drained = false;
        const bool out = ev & (EPOLLOUT | EPOLLHUP | EPOLLERR);
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

    // ------------------------------------------------------------------ submission

    // Ends an operation that is in flight with -ECANCELED (a call on the pool runs to its
    // end: -EALREADY). Returns the cancel request's result for it.
    int cancel_one(Pending* p) {
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
            p->cancelled = true;
            interrupt(p);
            return -EALREADY;
        case State::aio: p->cancelled = true; return -EALREADY;
        default: return -ENOENT;
        }
    }
    int cancel(const io_uring_sqe& s, Pending* self) {
        const std::uint32_t fl = s.cancel_flags;
        constexpr std::uint32_t cancel_fixed = 1u << 3, cancel_userdata = 1u << 4, cancel_op = 1u << 5;
        if (fl & ~(cancel_all | cancel_fd | cancel_any | cancel_fixed | cancel_userdata | cancel_op))
            return -EINVAL; // (a flag the kernel does not have: never "everything")
        if (fl & cancel_fixed)
            return -EBADF; // no registered file table
        if ((fl & cancel_fd) && !(fl & cancel_any) && ::fcntl(s.fd, F_GETFD) < 0)
            return -EBADF; // as the kernel, which looks the descriptor up first
        const bool many = fl & (cancel_all | cancel_any);
        // One at a time, looking again each time: ending one can start another (the next SQE
        // of its link). A call on the pool stays in the list until it ends (marked cancelled).
        int found = 0, last = -ENOENT;
        for (;;) {
            Pending* hit = nullptr;
            for (Pending* p = all; p && !hit; p = p->all_next) {
                if (p == self || p->state == State::held || p->state == State::free ||
                    ((p->state == State::pool || p->state == State::aio) && p->cancelled))
                    continue;
                // (What the flags name must all match; without FD or OP, the user_data.)
                const bool by_data = (fl & cancel_userdata) || !(fl & (cancel_fd | cancel_op));
                if ((fl & cancel_any) ||
                    ((!(fl & cancel_fd) || (p->fd == s.fd && p->sqe.opcode != opc::timeout)) &&
                     (!(fl & cancel_op) || p->sqe.opcode == s.len) && (!by_data || p->sqe.user_data == s.addr)))
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

    Pending* find_in_flight(std::uint64_t ud, std::uint8_t opcode) {
        for (Pending* p = all; p; p = p->all_next)
            if (p->sqe.user_data == ud && p->sqe.opcode == opcode && p->state != State::held && p->state != State::free)
                return p;
        return nullptr;
    }

    // A read of a regular file at an offset is first tried here without waiting (RWF_NOWAIT),
    // as io_uring tries a read before it hands it to a worker: what the page cache holds is
    // copied at once, without the pool's thread switches. Only a whole read (or 0: the end of
    // the file) is taken; one that would wait (-EAGAIN), a short one and any error go to the
    // pool, which makes the call itself. Not O_DIRECT: a direct read with RWF_NOWAIT would wait
    // here for the device.
    // It trusts what kind_of last found the descriptor to be (a regular file, not O_DIRECT)
    // without looking again: a positional read is the kernel's own check. A descriptor closed
    // behind the engine's back whose number now names a pipe, socket or terminal answers
    // -ESPIPE, a directory -EISDIR, a closed one -EBADF (`stale`: the caller looks again); one
    // that names another regular file is read as io_uring would read it.
    enum class AtOnce : unsigned char { not_tried, done, stale, missed };
    // A read or write at an offset (the calls whose -ESPIPE tells a stream).
    static bool positional(const io_uring_sqe& s) noexcept {
        return (s.opcode == opc::read || s.opcode == opc::write || s.opcode == opc::readv || s.opcode == opc::writev) &&
               s.off != ~std::uint64_t{0} && !(s.flags & sqe_buffer_select);
    }
    AtOnce read_at_once(Pending* p) {
        int r;
        const AtOnce a = read_now(p->sqe, r);
        if (a == AtOnce::done)
            finish(p, r);
        return a;
    }
    // read_at_once's call, for an SQE that may have no record yet (submit's fast path):
    // `done` with the result in `r`, or what it found.
    AtOnce read_now(const io_uring_sqe& s, int& res) {
        if ((s.opcode != opc::read && s.opcode != opc::readv) || s.off == ~std::uint64_t{0} || s.rw_flags ||
            (s.flags & sqe_buffer_select))
            return AtOnce::not_tried;
        if (static_cast<std::size_t>(s.fd) >= fds.size())
            return AtOnce::not_tried; // (start looks at the number first)
        {
            const FdState& st = fds[static_cast<std::size_t>(s.fd)];
            if (st.kind != Kind::blocking || !st.regular || st.direct)
                return AtOnce::not_tried;
        }
        void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
        const auto off = static_cast<off_t>(s.off);
        std::size_t want = s.len;
        int r;
        if (s.opcode == opc::read) {
            iovec v{addr, s.len};
            r = sys(::preadv2(s.fd, &v, 1, off, RWF_NOWAIT));
        } else {
            const auto* iov = static_cast<const iovec*>(addr);
            r = sys(::preadv2(s.fd, iov, static_cast<int>(s.len), off, RWF_NOWAIT));
            // (The vector is summed only once the kernel has read it: a bad pointer or count
            // is the call's -EFAULT or -EINVAL, never a fault here.)
            want = 0;
            for (unsigned i = 0; r > 0 && i < s.len; ++i)
                want += iov[i].iov_len;
        }
        if (r == -ESPIPE || r == -EISDIR || r == -EBADF)
            return AtOnce::stale;
        if (r < 0 || (r != 0 && static_cast<std::size_t>(r) != want))
            return AtOnce::missed;
        res = r;
        return AtOnce::done;
    }

    // An open that cannot wait for anything but its path's lookup is first tried here with
    // RESOLVE_CACHED (the path only from the dentry cache, else -EAGAIN), as io_uring first
    // tries an open before it hands it to a worker: one asked with O_NONBLOCK (a FIFO's or a
    // device's open then does not wait), O_PATH or O_DIRECTORY. Other opens (which may wait
    // for a FIFO's other end or a device), those that create or truncate, an open the cache
    // cannot resolve, and any error go to the pool, which makes the caller's own call. Kernels
    // without RESOLVE_CACHED (before 5.12) are found out once per process.
    static inline std::atomic<int> cached_opens{0}; // 0: not known yet, 1: the kernel has them, -1: not
    bool open_at_once(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        if (cached_opens.load(std::memory_order_relaxed) < 0)
            return false;
        open_how how{};
        if (s.opcode == opc::openat) {
            how.flags = s.open_flags;
        } else {
            if (s.len != sizeof(open_how) || !s.off) // (a larger one: the pool's call checks what follows)
                return false;
            if (!copy_in(&how, s.off, sizeof how))
                return false; // a bad pointer: the pool's call answers -EFAULT
            if (how.resolve & RESOLVE_CACHED)
                return false; // the caller's own: its -EAGAIN is the answer (the pool gives it)
        }
        if ((how.flags & (O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY))) ||
            !(how.flags & (O_NONBLOCK | O_PATH | O_DIRECTORY)))
            return false;
        how.resolve |= RESOLVE_CACHED;
        const char* path = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.addr));
        int r = sys(::syscall(SYS_openat2, s.fd, path, &how, sizeof how));
        if (r < 0) {
            // (-EPERM and -ENOSYS: also a seccomp profile that refuses openat2.)
            if ((r == -EINVAL || r == -ENOSYS || r == -EPERM) && cached_opens.load(std::memory_order_relaxed) == 0)
                probe_cached_opens();
            return false; // (-EINVAL may also be the caller's flags: the pool answers)
        }
        cached_opens.store(1, std::memory_order_relaxed);
        p->sqe.opcode = opc::openat; // (for made(): the flags are these, already read)
        p->sqe.open_flags = static_cast<std::uint32_t>(how.flags);
        finish(p, r);
        return true;
    }
    // The caller's memory, read as the kernel reads it: a bad pointer is false, never a fault
    // in the engine (process_vm_readv of this process; where a seccomp profile refuses it,
    // false from then on).
    static inline std::atomic<bool> no_copy_in{false};
    static bool copy_in(void* to, std::uint64_t from, std::size_t len) noexcept {
        if (no_copy_in.load(std::memory_order_relaxed))
            return false;
        iovec local{to, len};
        iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(from)), len};
        const ssize_t r = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
        if (r == static_cast<ssize_t>(len))
            return true;
        if (r < 0 && errno != EFAULT)
            no_copy_in.store(true, std::memory_order_relaxed);
        return false;
    }
    // The caller's memory that the kernel reads before the call, read as copy_in reads it;
    // where a seccomp profile refuses process_vm_readv, read directly (a bad pointer then
    // faults here, as it did before the engine checked it), a null one still false.
    static bool read_user(void* to, std::uint64_t from, std::size_t len) noexcept {
        if (copy_in(to, from, len))
            return true;
        if (!no_copy_in.load(std::memory_order_relaxed) || !from)
            return false;
        std::memcpy(to, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(from)), len);
        return true;
    }
    // The caller's memory, written as the kernel writes it (process_vm_writev): false for a
    // bad pointer (written directly where a seccomp profile refuses the call).
    static inline std::atomic<bool> no_copy_out{false};
    static bool copy_out(std::uint64_t to, const void* from, std::size_t len) noexcept {
        if (!no_copy_out.load(std::memory_order_relaxed)) {
            iovec local{const_cast<void*>(from), len};
            iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(to)), len};
            const ssize_t r = ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0);
            if (r == static_cast<ssize_t>(len))
                return true;
            if (r >= 0 || errno == EFAULT)
                return false;
            no_copy_out.store(true, std::memory_order_relaxed);
        }
        if (!to)
            return false;
        std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(to)), from, len);
        return true;
    }
    static void probe_cached_opens() noexcept {
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC;
        how.resolve = RESOLVE_CACHED;
        int r = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how));
        if (r >= 0)
            ::close(r);
        cached_opens.store(r >= 0 || errno == EAGAIN ? 1 : -1, std::memory_order_relaxed);
    }

    // statx of a descriptor itself (AT_EMPTY_PATH, an empty path) is made here when the
    // descriptor's file system keeps its metadata in memory (local ones: what a stat of an
    // open file reads is in its inode). The call is made with AT_STATX_DONT_SYNC, which local
    // file systems ignore and network ones (NFS, SMB, FUSE) honour by answering from their
    // cache; when the answer's device is not a known local file system the pool makes the
    // caller's own call (which writes the buffer again). A path, or AT_STATX_FORCE_SYNC, goes
    // to the pool: a lookup may read directories from the disk.
    struct DevKind {
        dev_t dev;
        bool local;
        std::uint64_t until; // looked at again after this (mono_ns): a device number is reused after an unmount
    };
    static constexpr std::size_t max_devs = 32;
    std::vector<DevKind> devs;
    bool statx_at_once(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        const auto* path = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(s.addr));
        const int flags = static_cast<int>(s.statx_flags);
        if (s.fd < 0 || !path || !(flags & AT_EMPTY_PATH) || (flags & AT_STATX_SYNC_TYPE) == AT_STATX_FORCE_SYNC ||
            !s.off)
            return false;
        char first = 1; // (read as the kernel reads it: an unreadable path is the pool's -EFAULT)
        if (!read_user(&first, s.addr, 1) || first != '\0')
            return false;
        auto* out = reinterpret_cast<struct statx*>(static_cast<std::uintptr_t>(s.off));
        int r = sys(::statx(s.fd, "", flags | AT_STATX_DONT_SYNC, s.len, out));
        if (r < 0 || !local_fs(makedev(out->stx_dev_major, out->stx_dev_minor), s.fd))
            return false;
        // What a descriptor the engine opened is, from the answer (as kind_of's fstat tells it).
        FdState& st = fd_state(s.fd);
        if (st.opened && st.kind == Kind::unknown && (out->stx_mask & STATX_TYPE) &&
            (S_ISREG(out->stx_mode) || S_ISDIR(out->stx_mode) || S_ISBLK(out->stx_mode))) {
            st.kind = Kind::blocking;
            st.regular = S_ISREG(out->stx_mode);
        }
        finish(p, r);
        return true;
    }
    bool local_fs(dev_t dev, int fd) {
        const std::uint64_t now = mono_ns();
        for (std::size_t i = 0; i < devs.size(); ++i)
            if (devs[i].dev == dev) {
                if (now < devs[i].until)
                    return devs[i].local;
                devs[i] = devs.back();
                devs.pop_back();
                break;
            }
        struct statfs fs;
        if (::fstatfs(fd, &fs) < 0)
            return false;
        bool local = false;
        switch (static_cast<unsigned long>(fs.f_type)) {
        case EXT4_SUPER_MAGIC:
        case XFS_SUPER_MAGIC:
        case BTRFS_SUPER_MAGIC:
        case F2FS_SUPER_MAGIC:
        case TMPFS_MAGIC:
        case RAMFS_MAGIC:
        case OVERLAYFS_SUPER_MAGIC:
        case PIPEFS_MAGIC:
        case SOCKFS_MAGIC:
        case ANON_INODE_FS_MAGIC: local = true; break;
        default: break;
        }
        if (devs.size() < max_devs)
            devs.push_back(DevKind{dev, local, now + 1'000'000'000u});
        return local;
    }

    // Starts one SQE (held ones of a link start when their predecessor ends).
    void start(Pending* p) {
        const io_uring_sqe& s = p->sqe;
        p->fd = s.fd;
        if (s.flags & ~(compat::sqe_flag::cqe_skip_success * 2 - 1)) {
            finish(p, -EINVAL); // an IOSQE_* flag the kernel does not have
            return;
        }
        if (s.flags & sqe_fixed_file) {
            finish(p, -EBADF); // no registered file table here: as the kernel answers without one
            return;
        }
        if ((s.flags & sqe_buffer_select) && s.opcode != opc::recv && s.opcode != opc::read &&
            s.opcode != opc::recvmsg) {
            finish(p, -EOPNOTSUPP); // provided buffers: recv, recvmsg and read
            return;
        }
        switch (s.opcode) {
        case opc::nop: // IORING_NOP_INJECT_RESULT (nop_flags bit 0): the result is in len
            finish(p, (s.rw_flags & 1u) ? static_cast<int>(s.len) : 0);
            return;
        case opc::close:
            if (s.file_index) {
                finish(p, -EOPNOTSUPP);
                return;
            }
            {
                int r = sys(::close(s.fd));
                forget(s.fd);
                finish(p, r);
            }
            return;
        case opc::socket:
            if (s.file_index) {
                finish(p, -EOPNOTSUPP);
                return;
            }
            finish(p, sys(::socket(s.fd, static_cast<int>(s.off), static_cast<int>(s.len))));
            return;
        case opc::shutdown: finish(p, sys(::shutdown(s.fd, static_cast<int>(s.len)))); return;
        case opc::bind:
            finish(p, sys(::bind(s.fd, reinterpret_cast<const sockaddr*>(static_cast<std::uintptr_t>(s.addr)),
                                 static_cast<socklen_t>(s.off))));
            return;
        case opc::listen: finish(p, sys(::listen(s.fd, static_cast<int>(s.len)))); return;
        case opc::fadvise:
            finish(p, -::posix_fadvise(s.fd, static_cast<off_t>(s.off), static_cast<off_t>(s.len),
                                       static_cast<int>(s.fadvise_advice)));
            return;
        case opc::epoll_ctl:
            finish(p, sys(::epoll_ctl(s.fd, static_cast<int>(s.len), static_cast<int>(s.off),
                                      reinterpret_cast<epoll_event*>(static_cast<std::uintptr_t>(s.addr)))));
            return;
        case opc::timeout: {
            // As the kernel checks it: the SQE's fields, the flags (at most one clock; a
            // multishot one relative), then the timespec.
            constexpr std::uint32_t clocks = timeout_realtime | (1u << 2);
            const std::uint32_t fl = s.timeout_flags;
            __kernel_timespec ts{};
            int r = s.len != 1 || s.buf_index ? -EINVAL : 0;
            if (r == 0 && ((fl & ~(timeout_abs | clocks | compat::timeout_etime_success | compat::timeout_multishot)) ||
                           (fl & clocks) == clocks || ((fl & compat::timeout_multishot) && (fl & timeout_abs))))
                r = -EINVAL;
            if (r == 0)
                r = read_timespec(s.addr, ts);
            if (r < 0) {
                finish(p, r);
                return;
            }
            p->deadline = deadline_of(ts, s.timeout_flags);
            p->state = State::timer;
            if (fl & compat::timeout_multishot) {
                // (From the timespec itself, at least 1 ns: two reads of the clock could make it 0.)
                p->period = std::max<std::uint64_t>(1, ns_of(ts));
                heap_push(p); // (its count, off, is of its own expiries)
                return;
            }
            heap_push(p);
            if (s.off) // also ends (with 0) once that many other completions were posted
                counted.push_back(p);
            return;
        }
        case opc::timeout_remove: {
            __kernel_timespec ts{};
            if (s.timeout_flags & timeout_update) {
                if (const int r = read_timespec(s.off, ts); r < 0) {
                    finish(p, r);
                    return;
                }
            }
            Pending* t = find_in_flight(s.addr, opc::timeout);
            if (!t || t->state != State::timer) {
                finish(p, -ENOENT);
                return;
            }
            if (s.timeout_flags & timeout_update) {
                heap_remove(t);
                t->deadline = deadline_of(ts, s.timeout_flags);
                heap_push(t);
            } else {
                heap_remove(t);
                finish(t, -ECANCELED);
            }
            finish(p, 0);
            return;
        }
        case opc::poll_remove: {
            Pending* t = find_in_flight(s.addr, opc::poll_add);
            if (!t) {
                finish(p, -ENOENT);
                return;
            }
            (void)cancel_one(t);
            finish(p, 0);
            return;
        }
        case opc::async_cancel: {
            int r = cancel(s, p);
            finish(p, r);
            return;
        }
        case opc::recv:
        case opc::send:
        case opc::recvmsg:
        case opc::sendmsg:
            if ((s.ioprio & (recvsend_fixed_buf | recvsend_bundle)) ||
                ((s.ioprio & recv_multishot) &&
                 !((s.opcode == opc::recv || s.opcode == opc::recvmsg) && (s.flags & sqe_buffer_select)))) {
                finish(p, -EOPNOTSUPP);
                return;
            }
            if (s.opcode == opc::recvmsg && (s.flags & sqe_buffer_select)) {
                if (const int r = read_msghdr(p); r < 0) {
                    finish(p, r);
                    return;
                }
            }
            break;
        case opc::accept:
            if (s.file_index) {
                finish(p, -EOPNOTSUPP);
                return;
            }
            break;
        case opc::connect:
        case opc::poll_add: break;
        case opc::read:
        case opc::write: break;
        case opc::readv:
        case opc::writev:
            if (p->chain || (s.flags & compat::sqe_flag::cqe_skip_success))
                p->done_io = vector_length(s); // (what a full call moves: a shorter one breaks the link)
            break;
        case opc::splice:
        case opc::tee:
            if (s.splice_flags & SPLICE_F_FD_IN_FIXED) {
                finish(p, -EBADF); // no registered file table
                return;
            }
            to_pool(p); // a file's side may block; a pipe's is served as it comes
            return;
        case opc::statx:
            if (!s.addr) { // (statx(2) takes a null path with AT_EMPTY_PATH since 6.11; io_uring does not)
                finish(p, -EFAULT);
                return;
            }
            if (statx_at_once(p))
                return;
            to_pool(p);
            return;
        case opc::fsync:
        case opc::sync_file_range:
        case opc::fallocate:
        case opc::ftruncate:
        case opc::renameat:
        case opc::unlinkat:
        case opc::mkdirat:
        case opc::symlinkat:
        case opc::linkat: to_pool(p); return;
        case opc::openat:
        case opc::openat2:
            if (s.file_index) {
                finish(p, -EOPNOTSUPP);
                return;
            }
            if (open_at_once(p))
                return;
            to_pool(p);
            return;
        default: finish(p, -EOPNOTSUPP); return;
        }
        // A call on a descriptor: by readiness, or on the pool for files. A positional read
        // of what was last found a regular file is tried at once on that word (read_at_once
        // says when the descriptor is something else now). Otherwise what a descriptor the
        // engine did not make is, is looked at again unless calls already wait on it (its
        // number may name another file since), and so is a file whatever made it, before its
        // call goes to the pool: a stale kind must never send a socket's read to block a pool
        // thread.
        AtOnce tried = AtOnce::not_tried;
        bool trusted = false; // a positional call on what was last found a regular file
        if (s.fd >= 0) {
            if (const int r = in_table(s.fd); r < 0) {
                finish(p, r);
                return;
            }
            if (s.opcode == opc::read || s.opcode == opc::readv) {
                tried = p->first_try ? static_cast<AtOnce>(p->first_try) : read_at_once(p);
                p->first_try = 0; // (used once: a start over, from ended_off_loop, tries again)
                if (tried == AtOnce::done)
                    return;
            }
            FdState& st = fd_state(s.fd); // (after read_at_once: what it ends may grow the table)
            // (After a miss it looks again: the pool's trip dwarfs an fstat, and a file opened
            // with O_DIRECT since under the same number is found out.)
            trusted = tried == AtOnce::not_tried && st.kind == Kind::blocking && st.regular && positional(s);
            // (A call that only a socket takes, on what was last found a socket, needs no new
            // look: should the number name something else now, the call itself says so with
            // the kernel's own -ENOTSOCK, -EBADF, never by waiting.)
            const bool socket_call = st.kind == Kind::socket && socket_only(s.opcode);
            if (!trusted && !socket_call && ((!st.owned && !st.waits()) || st.kind == Kind::blocking))
                st.kind = Kind::unknown;
        }
        Kind k = kind_of(s.fd);
        if (k == Kind::unknown) {
            finish(p, -EBADF);
            return;
        }
        if (k == Kind::blocking) {
            if (s.opcode == opc::poll_add) { // files are always ready
                finish(p, static_cast<int>(s.poll32_events & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)));
                return;
            }
            if (s.opcode == opc::accept || s.opcode == opc::connect || s.opcode == opc::recv || s.opcode == opc::send ||
                s.opcode == opc::recvmsg || s.opcode == opc::sendmsg) {
                finish(p, -ENOTSOCK);
                return;
            }
            if (tried != AtOnce::missed && read_at_once(p) == AtOnce::done)
                return;
            p->recheck = trusted;
            if (const FdState& f = fd_state(s.fd); f.direct && f.regular && !f.no_aio && aio_start(p))
                return;
            to_pool(p);
            return;
        }
        if (s.off != 0 && s.off != ~std::uint64_t{0} && k == Kind::socket && positional(s)) {
            finish(p, -ESPIPE); // (a socket takes no offset; io_uring lets 0 pass)
            return;
        }
        const State st = s.opcode == opc::poll_add ? State::polling
                         : is_write(s.opcode)      ? State::writing
                                                   : State::reading;
        // First try at once: most calls on a socket or pipe find data or room (not a read of
        // a stream socket whose last read emptied it: it waits for the next edge).
        p->state = st;
        if (p->first_try == static_cast<unsigned char>(AtOnce::missed) || skips_first_try(s)) {
            p->first_try = 0; // (submit tried it: -EAGAIN)
            wait_ready(p, st, false);
            return;
        }
        int r = try_call(p);
        if (r == -EAGAIN && !callers_nowait(s)) {
            wait_ready(p, st, false);
            return;
        }
        if (r == -EOPNOTSUPP && k == Kind::nowait && s.opcode != opc::poll_add && !(s.rw_flags & RWF_NOWAIT)) {
            // (With flags of the caller's, the refusal may be theirs: the pool's call, made
            // with their flags alone, answers, and the descriptor keeps its kind.)
            if (s.rw_flags == 0)
                fd_state(s.fd).kind = Kind::blocking;
            to_pool(p);
            return;
        }
        if (multishot(s) && goes_on(s, r, p->empty)) {
            made(s, r);
            post(s.user_data, r, p->cflags | cqe_f_more);
            wait_ready(p, st, true);
            return;
        }
        finish(p, r);
    }

    // A link (IOSQE_IO_LINK) is gathered whole before its first SQE starts: the first may end
    // at once, and the rest must then be there to follow it or be cancelled. A link still
    // open when the submission ends is complete, as the kernel takes it.
    void submit(unsigned n) {
        for (unsigned i = 0; i < n; ++i) {
            const io_uring_sqe& s = sqes[sq_head & (sqes.size() - 1)];
            // The fast path of a positional read that the page cache holds (read_now), the
            // common call on a file: its CQE without a record, when it is not in a link.
            // Both take only a call on a plain descriptor number outside any link; anything
            // unusual (see start) takes the record's way.
            AtOnce first = AtOnce::not_tried;
            const bool plain = s.fd >= 0 && !link_tail && (s.flags & ~compat::sqe_flag::async) == 0 &&
                               drain_held == 0 && drains_running == 0;
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
            const bool links = s.flags & (sqe_io_link | sqe_io_hardlink);
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
    // The SQE at the head (`s`) ended as it was taken, with `r`: the head moves past it and
    // its CQE is posted.
    void taken_done(const io_uring_sqe& s, int r) {
        const std::uint64_t ud = s.user_data; // (read before the slot is given back)
        __atomic_store_n(&sq_head, sq_head + 1, __ATOMIC_RELEASE);
        post(ud, r, 0);
    }
    void start_link() {
        Pending* head = link_head;
        if (!head)
            return;
        link_head = link_tail = nullptr;
        if (drain_held == 0 && drains_running == 0 && !(head->sqe.flags & compat::sqe_flag::io_drain)) [[likely]] {
            start(head);
            return;
        }
        start_or_hold(head);
    }
    // A link that a drain may hold (start_link's slow path).
    [[gnu::noinline]] void start_or_hold(Pending* head) {
        if (private_ud && head->sqe.user_data == private_ud && !head->chain) {
            start(head); // (the runtime's own wake-up read: no SQE at all on io_uring)
            return;
        }
        std::size_t n = 0;
        for (Pending* q = head; q; q = q->chain)
            ++n;
        // Held behind a drain (queued, or one running), or a drain itself while others run.
        if (!drain_queue.empty() || drains_running > 0 ||
            ((head->sqe.flags & compat::sqe_flag::io_drain) && alive() > n)) {
            drain_queue.push_back(head);
            drain_held += n;
            return;
        }
        start_drained(head);
    }
    void start_drained(Pending* head) {
        if (head->sqe.flags & compat::sqe_flag::io_drain) {
            head->drain_started = true;
            ++drains_running;
        }
        start(head);
    }
    // The records alive (made and not released), the runtime's own excepted: counted only
    // where a drain is involved, so that no other operation pays for it.
    std::size_t alive() const noexcept {
        std::size_t n = 0;
        for (const Pending* p = all; p; p = p->all_next)
            n += !(private_ud && p->sqe.user_data == private_ud);
        return n;
    }
    // Starts what the drain held once it may: a drain when nothing else is alive, anything
    // else when no drain runs.
    void undrain() {
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

    // ------------------------------------------------------------------ waiting

    // One pass over the descriptors that became ready, waiting up to `timeout_ms` (-1:
    // without limit). -EINTR when a signal came.
    int poll_events(int timeout_ms) {
        epoll_event evs[64];
        int n = ::epoll_wait(epfd, evs, 64, timeout_ms);
        if (n < 0)
            return -errno;
        for (int i = 0; i < n; ++i) {
            const std::uint64_t tag = evs[i].data.u64;
            if (tag == wake_tag) { // (wake_fd: edge-triggered, never read)
                take_pool_results();
                take_aio_results();
                continue;
            }
            const auto fd = static_cast<std::uint32_t>(tag);
            if (fd < fds.size() && fds[fd].reg_gen == static_cast<std::uint32_t>(tag >> 32))
                on_event(static_cast<int>(fd), evs[i].events);
        }
        if (unverified_fds > 0 && ((n == 0 && timeout_ms != 0) || ++polls_since_verify >= 1024))
            verify_registrations();
        return n;
    }

    // Operations in flight progress only in enter (the kernel's go on by themselves): while
    // there are any, the SQ flags ask the runtime to enter (IORING_SQ_TASKRUN, as deferred
    // task work does), so a busy run queue does not keep timers, readiness or the pool's
    // results from being seen.
    long enter(unsigned to_submit, unsigned min_complete, unsigned flags, const std::uint64_t* timeout_ns) {
        long r = enter_once(to_submit, min_complete, flags, timeout_ns);
        if (all)
            sq_flags |= compat::sq_taskrun;
        else
            sq_flags &= ~compat::sq_taskrun;
        return r;
    }
    long enter_once(unsigned to_submit, unsigned min_complete, unsigned flags, const std::uint64_t* timeout_ns) {
        const unsigned n = std::min(to_submit, sq_tail - sq_head);
        submit(n);
        flush_overflow();
        if (!(flags & enter_getevents))
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
    unsigned quick_enters_ = 0;
};

EpollEngine::EpollEngine(unsigned sq_entries, unsigned cq_entries, io_uring& ring)
    : impl_(std::make_unique<Impl>(sq_entries, cq_entries, ring)) {}

EpollEngine::~EpollEngine() = default;

long EpollEngine::enter(unsigned to_submit, unsigned min_complete, unsigned flags,
                        const std::uint64_t* timeout_ns) noexcept {
    try {
        return impl_->enter(to_submit, min_complete, flags, timeout_ns);
    } catch (const std::bad_alloc&) {
        return -ENOMEM;
    } catch (const std::system_error& e) {
        return -e.code().value();
    } catch (...) {
        return -ENOMEM;
    }
}

int EpollEngine::register_buf_ring(const io_uring_buf_reg& reg) noexcept {
    std::uint16_t flags;
    std::memcpy(&flags,
                reinterpret_cast<const unsigned char*>(&reg) + offsetof(io_uring_buf_reg, bgid) + sizeof reg.bgid,
                sizeof flags);
    const unsigned n = reg.ring_entries;
    if (flags != 0 || n == 0 || (n & (n - 1)) != 0 || n > 32768 || reg.ring_addr == 0)
        return -EINVAL;
    try {
        auto& groups = impl_->groups;
        if (reg.bgid >= groups.size())
            groups.resize(static_cast<std::size_t>(reg.bgid) + 1);
        auto& g = groups[reg.bgid];
        if (g.br)
            return -EEXIST;
        g.br = reinterpret_cast<io_uring_buf_ring*>(static_cast<std::uintptr_t>(reg.ring_addr));
        g.mask = n - 1;
        g.head = 0;
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

int EpollEngine::unregister_buf_ring(std::uint16_t bgid) noexcept {
    auto& groups = impl_->groups;
    if (bgid >= groups.size() || !groups[bgid].br)
        return -EINVAL;
    groups[bgid] = {};
    return 0;
}

void EpollEngine::own_fd(int fd, bool owned) noexcept {
    try {
        impl_->own_fd(fd, owned);
    } catch (...) { // (the table could not grow: the descriptor stays untrusted)
    }
}

std::uint64_t EpollEngine::registrations() const noexcept { return impl_->registrations; }

void EpollEngine::private_user_data(std::uint64_t ud) noexcept { impl_->private_ud = ud; }

void EpollEngine::fill_probe(Probe& p) const noexcept {
    p.reset(opc::known_last, compat::feat::nodrop | compat::feat::rw_cur_pos | compat::feat::ext_arg |
                                 compat::feat::submit_stable | compat::feat::poll_32bits);
    for (const Way& w : ways)
        p.set_supported(w.opcode, true);
}

} // namespace ringo::uring
