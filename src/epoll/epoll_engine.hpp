// src/epoll/epoll_engine.hpp - the epoll engine: io_uring's submission and completion
// queues kept in user space and served by readiness (epoll) and a bounded thread pool, for
// where the kernel refuses io_uring (a container's seccomp profile, kernel.io_uring_disabled,
// a memlock limit). Internal: a uring::Ring made with EngineKind::epoll owns one. Its
// rooms are the files of this folder (engine.hpp says which holds what).
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include <ringo/uring/probe.hpp>

namespace ringo::uring {

namespace epoll {
struct Engine;
}

/// Executes the SQEs a Ring hands it the way the kernel would, with plain system calls, and
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
///   - everything else (registered files and buffers, bundles, zero-copy send, msg_ring, uring_cmd, futex, splice, ...)
///   is absent from its
///     probe, so ringo's operations complete with -EOPNOTSUPP or take the fallback they take
///     on an older kernel; an SQE that asks for one of them anyway completes with
///     -EOPNOTSUPP. Linked SQEs (IOSQE_IO_LINK) run one after the other, as the kernel runs
///     them.
class EpollEngine {
public:
    /// An engine whose queues `ring` then describes (its sq/cq fields point into this
    /// engine's memory). Throws std::system_error when epoll or its eventfd cannot be made.
    EpollEngine(unsigned sq_entries, unsigned cq_entries, io_uring& ring);
    ~EpollEngine();
    EpollEngine(const EpollEngine&) = delete;
    EpollEngine& operator=(const EpollEngine&) = delete;

    /// io_uring_enter: takes the `to_submit` SQEs published in the SQ, then, with GETEVENTS,
    /// waits until `min_complete` CQEs are in the CQ, at most `timeout_ns` when given
    /// (-ETIME then); -EINTR when a signal interrupted the wait. Returns the SQEs taken.
    long enter(unsigned to_submit, unsigned min_complete, unsigned flags, const std::uint64_t* timeout_ns) noexcept;

    /// A provided-buffer ring (io_uring_buf_reg): recv with IOSQE_BUFFER_SELECT, multishot
    /// included, then takes its buffers from the ring's head as the kernel would, and says
    /// which in the CQE (IORING_CQE_F_BUFFER). -EEXIST for a group already registered,
    /// -EINVAL for flags it lacks (incremental rings: the caller then registers a plain one).
    int register_buf_ring(const io_uring_buf_reg& reg) noexcept;
    /// Unregisters buffer group `bgid`: 0, or -EINVAL when none is registered.
    int unregister_buf_ring(std::uint16_t bgid) noexcept;

    /// An owner (ringo::Fd) took descriptor `fd` (`owned`) or gave it up. A descriptor taken
    /// keeps its registration for its life, as one the engine made, since its close comes
    /// through the engine; what it is, is still looked at as for a bare number.
    void own_fd(int fd, bool owned) noexcept;
    /// SQEs of user_data `ud` are the runtime's own (the eventfd read that wakes it from
    /// other threads, always in flight; where io_uring has ring-less MSG_RING it is no SQE):
    /// an IOSQE_IO_DRAIN SQE does not wait for them, or it would wait for ever.
    void private_user_data(std::uint64_t ud) noexcept;
    /// The epoll_ctl calls it made to register or re-arm descriptors so far.
    [[nodiscard]] std::uint64_t registrations() const noexcept;
    /// The opcodes this engine runs (for the Ring's probe).
    void fill_probe(Probe& p) const noexcept;

private:
    std::unique_ptr<epoll::Engine> impl_;
};

} // namespace ringo::uring
