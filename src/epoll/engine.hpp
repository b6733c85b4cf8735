// src/epoll/engine.hpp - the epoll engine's state, shared by its rooms (the .cpp files of
// this folder). Private to the engine: the rest of ringo sees the seam (uring/queue_engine.hpp)
// and make_epoll_engine.
#pragma once

#include <liburing.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include <linux/aio_abi.h>
#include <linux/time_types.h>

#include <ringo/uring/compat.hpp>
#include <ringo/uring/probe.hpp>
#include <ringo/uring/queue_engine.hpp>

#include "basics.hpp"
#include "blocking_calls.hpp"
#include "op_table.hpp"
#include "readiness.hpp"

namespace ringo::uring::epoll {

/// The epoll engine. It executes the SQEs a Ring hands it the way the kernel would, with plain system calls, and
/// posts their CQEs into a completion queue of the same layout: every operation prepared
/// for io_uring runs here unchanged, with the same results (a count or value, or -errno) and
/// the same cancellation (ASYNC_CANCEL: an operation waiting for readiness ends at once with
/// -ECANCELED; a call already running on the thread pool is interrupted with a signal and
/// ends with -ECANCELED, or with its result when it finished first, its buffer still in use
/// until its CQE). Bad input gets the kernel's answer (docs/ops.md). How each opcode runs:
///   - readiness: sockets (MSG_DONTWAIT) and pipes, eventfds, terminals in non-blocking mode:
///     the call is tried at once; on EAGAIN it waits for the descriptor's readiness (an
///     edge-triggered epoll registration: kept for the descriptor's life when the engine made
///     it, by accept or socket, or a ringo::Fd owns it (own_fd); made or re-armed at each wait
///     for any other) and is tried again. recv, send, recvmsg, sendmsg, accept (and multishot accept), connect,
///     read, write, readv, writev, poll_add (and multishot poll);
///   - thread pool: regular files and block devices (read, write, readv, writev, fsync,
///     fallocate, ftruncate, sync_file_range), descriptors that cannot be read without
///     blocking, and path calls (openat, openat2, statx, renameat, unlinkat, mkdirat,
///     symlinkat, linkat); a positional read of a file opened without O_DIRECT, an open that
///     cannot wait (O_NONBLOCK, O_PATH, O_DIRECTORY; with RESOLVE_CACHED) and a statx of a
///     descriptor on a local file system are first tried at once;
///   - native AIO: a read or write (readv, writev) at an offset of a file opened with
///     O_DIRECT is queued with io_submit (RWF_NOWAIT; its completion writes the eventfd the
///     wait watches), and goes to the pool when AIO is refused or the call would wait;
///   - at once: nop, close, socket, shutdown, bind, listen, fadvise, epoll_ctl;
///   - timers: timeout (and timeout_remove / update) in a heap whose nearest deadline is
///     epoll_wait's timeout; async_cancel and poll_remove;
///   - provided-buffer rings: recv with buffer selection, single or multishot, takes the
///     ring's buffers as the kernel does (register_buf_ring);
///   - link timeouts (link_timeouts.cpp), zero-copy sends (zero_copy.cpp: a send followed by
///     its notification), waitid (waitid.cpp: at once, else on the pool), futex waits (of one
///     word or several) and wakes (futex.cpp);
///   - everything else (registered files and buffers, bundles, msg_ring, uring_cmd, ...)
///   is absent from its
///     probe, so ringo's operations complete with -EOPNOTSUPP or take the fallback they take
///     on an older kernel; an SQE that asks for one of them anyway completes with
///     -EOPNOTSUPP. Linked SQEs (IOSQE_IO_LINK) run one after the other, as the kernel runs
///     them.
///
/// One struct, behind the engine seam (uring/queue_engine.hpp: make_epoll_engine makes it),
/// its member functions defined by room: epoll_engine.cpp (the seam's verbs), ring.cpp (records, completions, links,
/// drains, cancellation, submission, enter), timers.cpp, descriptors.cpp (what each descriptor is, its waiters,
/// readiness), calls.cpp (the calls made without waiting), start.cpp (how an SQE starts), pool.cpp and aio.cpp (calls
/// made off the loop's thread).
struct Engine final : QueueEngine {
    // How an operation runs on its descriptor.
    // gated: a descriptor with readiness whose calls cannot be made without blocking (no
    // RWF_NOWAIT: ttys and ptys, inotify, an eventfd's writes, a FIFO opened by its path): its
    // reads and writes wait for readiness first, then run on the pool (gate).
    enum class Kind : unsigned char { unknown, socket, nonblocking, nowait, blocking, gated };
    enum class State : unsigned char { free, held, reading, writing, polling, timer, pool, aio, done };

    struct Pending : Job {
        io_uring_sqe sqe;
        Engine* eng = nullptr;
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
        // Waits for its descriptors' readiness before its call goes to the pool (gate): fd is
        // the descriptor it waits on (a splice's or tee's input or output). On the pool, a
        // splice or tee first made without waiting (splice_try).
        bool gated = false;
        bool refused = false; // ended by the kernel's checks before it ran (refuse)
        // What submit's fast path found when it tried a read at once (read_now), or a socket
        // call (missed: -EAGAIN), before the record was made: start does not try again.
        unsigned char first_try = 0; // an AtOnce
        // A futex wait's own word, which a wake through an engine sets and wakes (futex.cpp).
        std::atomic<std::uint32_t> kick{0};
        // A futex_waitv's words, copied at its start as the kernel copies them (the layout of
        // struct futex_waitv); kept from use to use of the record. Its kick tells which one a
        // wake through an engine woke in done_io (futex_waitv_cancelled: a cancel).
        struct FutexWord {
            std::uint64_t val;
            std::uint64_t uaddr;
            std::uint32_t flags;
            std::uint32_t reserved;
        };
        std::vector<FutexWord> words;
        std::atomic<bool> armed{false}; // ... and whether its pool thread may be in the kernel's queue
        // A link timeout: the SQE before it in its link, which it times once armed (link_timeouts.cpp).
        Pending* timed = nullptr;
        // Refused when it was submitted (a link timeout's checks): its result is in res.
        bool prep_failed = false;
        // The first SQE of a link with an SQE refused at submission: the whole link ends
        // without starting (fail_link).
        bool link_failed = false;
        // A zero-copy send (zero_copy.cpp): its result has IORING_CQE_F_MORE and is followed by
        // its notification (IORING_CQE_F_NOTIF), which reports a copy when it was asked to.
        bool notif = false;
        bool notif_report = false;
        std::uint8_t zc_opcode = 0; // (its own opcode: the SQE's is a send's or sendmsg's now)
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

    // The readiness back end (readiness.hpp): watches descriptors, and its wait is woken by
    // the pool's results and native AIO's completions.
    Readiness readiness;
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
    static void take_sigpipe() noexcept;

    Engine(unsigned sq_entries, unsigned cq_entries, io_uring& r);

    ~Engine() override;
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // ------------------------------------------------------------------ the seam (epoll_engine.cpp)
    [[nodiscard]] EngineKind kind() const noexcept override { return EngineKind::epoll; }
    EnterResult enter(unsigned to_submit, unsigned wait_nr, bool get_events,
                      const std::uint64_t* timeout_ns) noexcept override;
    int register_buf_ring(io_uring_buf_reg& reg) noexcept override;
    int unregister_buf_ring(std::uint16_t bgid) noexcept override;
    void own_fd(int fd, bool owned) noexcept override;
    void private_user_data(std::uint64_t ud) noexcept override { private_ud = ud; }
    [[nodiscard]] std::uint64_t readiness_registrations() const noexcept override { return readiness.calls(); }
    static void fill_probe(Probe& p) noexcept;

    // ------------------------------------------------------------------ records (ring.cpp)

    Pending* make();
    void more_records();
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

    // ------------------------------------------------------------------ completions (ring.cpp)

    [[nodiscard]] unsigned cq_ready() const noexcept { return cq_tail - __atomic_load_n(&cq_head, __ATOMIC_ACQUIRE); }

    // Timeouts with a completion count: each posted CQE counts for them (count_down).
    std::vector<Pending*> counted;
    bool counting = false;
    void count_down();

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
    // The CQEs that did not fit in the CQ, moved in as it has room.
    void flush_overflow() {
        if (!overflow.empty()) [[unlikely]]
            move_overflow();
    }
    void move_overflow();

    void made(const io_uring_sqe& sqe, int fd);
    void note_owner(int fd, bool owned);

    void finish(Pending* p, int res);
    // A zero-copy send's two CQEs: its result, then its notification (the engine copied the
    // bytes: the caller's buffer is free once the call returned).
    void post_zc(const Pending* p, int res) {
        post(p->sqe.user_data, res, compat::cqe_f_more);
        post(p->sqe.user_data, p->notif_report ? static_cast<int>(compat::notif_usage_zc_copied) : 0,
             compat::cqe_f_notif);
    }
    [[gnu::noinline]] void finish_link(Pending* p, Pending* next, int res);
    static std::uint32_t vector_length(const io_uring_sqe& s) noexcept;
    static bool breaks_link(const Pending* p, int res) noexcept;
    void cancel_chain(Pending* p, bool quiet = false);

    // ------------------------------------------------------------------ descriptors (descriptors.cpp)

    // The state of a descriptor number the table holds (in_table said so, or a call on it
    // succeeded: an open descriptor's number is within the process's own table).
    [[gnu::always_inline]] FdState& fd_state(int fd) {
        if (static_cast<std::size_t>(fd) >= fds.size()) [[unlikely]]
            grow_table(fd);
        return fds[static_cast<std::size_t>(fd)];
    }
    [[gnu::noinline]] void grow_table(int fd);
    int in_table(int fd) noexcept {
        if (static_cast<std::size_t>(fd) < fds.size())
            return 0;
        return in_table_slow(fd);
    }
    int in_table_slow(int fd) noexcept;
    // What descriptor `fd` is (its cached word, or looked at: find_kind); unknown for a number
    // not open.
    Kind kind_of(int fd) {
        if (fd < 0)
            return Kind::unknown;
        const Kind k = fd_state(fd).kind;
        return k != Kind::unknown ? k : find_kind(fd);
    }
    Kind find_kind(int fd);
    int watch(int fd);
    // One registration call for `fd` (`add`, or a renewal), for every readiness a waiter waits
    // for; each starts a new generation (reg_gen: what an older one reported and is still to
    // be looked at is dropped, and a renewed registration reports what is ready again). 0 or
    // -errno. Counted in RuntimeStats::readiness_registrations.
    int arm(bool add, int fd, FdState& s) noexcept { return readiness.watch(fd, ++s.reg_gen, add); }
    static constexpr int verify_ms = 10;
    unsigned unverified_fds = 0;
    unsigned polls_since_verify = 0;
    void reset_fd(FdState& s) noexcept;
    void verified(FdState& s) noexcept {
        if (s.unverified) {
            s.unverified = false;
            --unverified_fds;
        }
    }
    void verify_registrations();
    void forget(int fd);
    void end_waiters(int fd, int res);
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

    // ------------------------------------------------------------------ timers (timers.cpp)

    void heap_swap(std::size_t a, std::size_t b) noexcept;
    void heap_up(std::size_t i) noexcept;
    void heap_down(std::size_t i) noexcept;
    void heap_push(Pending* p);
    void heap_remove(Pending* p) noexcept;
    static int read_timespec(std::uint64_t addr, __kernel_timespec& ts) noexcept;
    static int timeout_checks(const io_uring_sqe& s, __kernel_timespec& ts) noexcept;
    static std::uint64_t ns_of(const __kernel_timespec& ts) noexcept;
    static std::uint64_t deadline_of(const __kernel_timespec& ts, std::uint32_t flags) noexcept;
    void fire_timers() {
        if (!heap.empty())
            fire_due_timers();
    }
    void fire_due_timers();

    // ------------------------------------------------------------------ the pool (pool.cpp)

    static void run_on_pool(Job* j) noexcept;
    // A cancelled call on the pool is interrupted (its call returns EINTR, the operation
    // -ECANCELED), and again at each look at the events until it ended: a signal that came
    // before the call started was lost.
    struct Interrupted {
        Pending* p;
        std::uint32_t gen;
    };
    std::vector<Interrupted> interrupted;
    void interrupt(Pending* p);
    bool interrupt_again() noexcept;
    void to_pool(Pending* p);
    void take_pool_results() {
        if (done_any.load(std::memory_order_acquire))
            take_pool_results_now();
    }
    void take_pool_results_now();
    void ended_off_loop(Pending* p, int res);

    static int blocking_call(const io_uring_sqe& s, bool positional_only) noexcept;
    // A splice or tee made first without waiting for a pipe (SPLICE_F_NONBLOCK), on the pool
    // (a file's side may still block): what the kernel's call answers at once, or
    // would_wait when it would wait for readiness (then it is gated, and made again).
    static int splice_try(const io_uring_sqe& s) noexcept;
    static constexpr int would_wait = INT_MIN;

    // ------------------------------------------------------------------ native AIO (aio.cpp)

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

    bool aio_usable();
    bool aio_start(Pending* p);
    void take_aio_results() {
        if (aio_in_flight != 0)
            take_aio_completions();
    }
    void take_aio_completions();

    // ------------------------------------------------------------------ calls without waiting (calls.cpp)

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
        if (!st.stream || (s.flags & compat::sqe_flag::buffer_select))
            return;
        const bool plain =
            s.opcode == opc::recv ? (s.msg_flags & ~unsigned(MSG_DONTWAIT | MSG_NOSIGNAL)) == 0 : s.rw_flags == 0;
        if (r == -EAGAIN || (plain && static_cast<unsigned>(r) < s.len))
            st.drained = true;
    }
    // A read that may wait for the socket's next edge without a first try: the socket's last
    // read left its queue empty and its registration is there (any byte since made an edge).
    bool skips_first_try(const io_uring_sqe& s) {
        if ((s.opcode != opc::recv && s.opcode != opc::read) || (s.flags & compat::sqe_flag::buffer_select) ||
            s.fd < 0 || callers_nowait(s))
            return false;
        const FdState& st = fd_state(s.fd);
        return st.drained && st.stream && st.owned && st.registered;
    }
    int try_call_once(Pending* p);
    [[gnu::noinline, gnu::cold]] int waitall_call(Pending* p);
    [[gnu::noinline, gnu::cold]] static bool waits_for_all(const io_uring_sqe& s) noexcept;
    // recv, send, recvmsg or sendmsg (no provided buffer) without waiting: its result, or -EAGAIN.
    [[gnu::always_inline]] static int socket_call_now(const io_uring_sqe& s) noexcept {
        void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
        const int flags = static_cast<int>(s.msg_flags) | MSG_DONTWAIT;
        switch (s.opcode) {
        case opc::recv: return sys(::recv(s.fd, addr, s.len, flags));
        case opc::send: {
            const std::uint16_t alen = compat::sqe_field::addr_len(s);
            auto* dest = reinterpret_cast<const sockaddr*>(static_cast<std::uintptr_t>(s.off));
            return sys(::sendto(s.fd, addr, s.len, flags, dest, dest ? alen : 0));
        }
        case opc::recvmsg: return sys(::recvmsg(s.fd, static_cast<msghdr*>(addr), flags));
        default: return sys(::sendmsg(s.fd, static_cast<const msghdr*>(addr), flags));
        }
    }
    int recv_selected(Pending* p);
    int read_msghdr(Pending* p);
    static int recvmsg_into(const io_uring_sqe& s, const msghdr& user, char* buf, std::uint32_t cap,
                            bool& empty) noexcept;
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
        if ((s.opcode == opc::recv || s.opcode == opc::recvmsg) && (s.ioprio & compat::recvsend::recv_multishot))
            return true;
        return (s.opcode == opc::accept && (s.ioprio & compat::accept_flag::multishot)) ||
               (s.opcode == opc::poll_add && (s.len & compat::poll_flag::add_multi));
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

    bool retry(Pending* p);
    void wait_ready(Pending* p, State st, bool again);
    // A call that blocks (no RWF_NOWAIT, or splice and tee) on descriptors that have
    // readiness: it waits for the readiness it needs, then runs on the pool, as the kernel's
    // request waits for its poll before an io-wq worker makes it. No pool thread is held while
    // nothing is ready, so such waits never starve the pool.
    struct Side {
        int fd;
        State st;
    };
    void gate(Pending* p);
    int gate_check(const Pending* p, Side& wait) noexcept;
    void gate_on(Pending* p, int r, Side wait);
    static bool rw_call(std::uint8_t op) noexcept {
        return op == opc::read || op == opc::write || op == opc::readv || op == opc::writev;
    }
    void on_event(int fd, std::uint32_t what);

    // ------------------------------------------------------------------ starting an SQE (start.cpp; cancellation:
    // ring.cpp)

    int cancel_one(Pending* p);
    int cancel(const io_uring_sqe& s, Pending* self);

    Pending* find_in_flight(std::uint64_t ud, std::uint8_t opcode);

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
               s.off != ~std::uint64_t{0} && !(s.flags & compat::sqe_flag::buffer_select);
    }
    AtOnce read_at_once(Pending* p);
    AtOnce read_now(const io_uring_sqe& s, int& res);

    // An open is first tried here as io_uring first tries it before it hands it to a worker:
    // with RESOLVE_CACHED (the path only from the dentry cache, else -EAGAIN) and O_NONBLOCK
    // (a FIFO's or a device's open does not wait for its other end; the descriptor leaves
    // non-blocking mode again unless it was asked for; a FIFO opened for writing with no
    // reader is -ENXIO, as io_uring answers). Opens that create or truncate, an open the
    // cache cannot resolve, and any other error go to the pool, which makes the caller's own
    // call. Kernels without RESOLVE_CACHED (before 5.12) are found out once per process.
    static inline std::atomic<int> cached_opens{0}; // 0: not known yet, 1: the kernel has them, -1: not
    bool open_at_once(Pending* p);
    static void probe_cached_opens() noexcept;

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
    bool statx_at_once(Pending* p);
    bool local_fs(dev_t dev, int fd);

    void start(Pending* p);
    // Starts an SQE of a link (its first, or the next after one ended): a link refused at
    // submission ends here, and a link timeout after the SQE is armed before it starts.
    void begin(Pending* p) {
        if ((p->link_failed || (p->chain && p->chain->sqe.opcode == opc::link_timeout)) && link_timeout_start(p))
            [[unlikely]]
            return;
        start(p);
    }

    // ------------------------------------------------------------------ waitid (waitid.cpp)
    void waitid_start(Pending* p);
    static int waitid_call(const io_uring_sqe& s) noexcept;

    // ------------------------------------------------------------------ zero-copy sends (zero_copy.cpp)
    int zc_prepare(Pending* p);

    // ------------------------------------------------------------------ link timeouts (link_timeouts.cpp)
    void link_timeout_prep(Pending* t);
    bool link_timeout_start(Pending* p);
    void fail_link(Pending* head);
    void link_timeout_fired(Pending* t);
    Pending* link_timeout_ended(Pending* t, bool broke);
    int link_timeout_update(const io_uring_sqe& s, const __kernel_timespec& ts);

    // ------------------------------------------------------------------ futexes (futex.cpp)
    static int futex_checks(const io_uring_sqe& s) noexcept;
    void futex_wait(Pending* p);
    static int futex_wait_call(Pending* p) noexcept;
    static void futex_done(Pending* p) noexcept;
    static bool futex_kick(Pending* p) noexcept;
    static int futex_wake(const io_uring_sqe& s) noexcept;
    static int futex_cancel(Pending* p) noexcept;
    void futex_waitv_start(Pending* p);
    void futex_queue(Pending* p);
    static int futex_waitv_call(Pending* p) noexcept;
    static bool is_futex_wait(std::uint8_t op) noexcept { return op == opc::futex_wait || op == opc::futex_waitv; }
    int pipe_now(const io_uring_sqe& s);
    void finish_or_pool(Pending* p, int checked);
    void refuse(Pending* p, int err);

    void submit(unsigned n);
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
            begin(head);
            return;
        }
        start_or_hold(head);
    }
    [[gnu::noinline]] void start_or_hold(Pending* head);
    void start_drained(Pending* head);
    std::size_t alive() const noexcept;
    void undrain();

    // ------------------------------------------------------------------ waiting (ring.cpp; poll_events:
    // descriptors.cpp)

    int poll_events(int timeout_ms);

    long enter_once(unsigned to_submit, unsigned min_complete, unsigned flags, const std::uint64_t* timeout_ns);
    unsigned quick_enters_ = 0;
};

} // namespace ringo::uring::epoll
