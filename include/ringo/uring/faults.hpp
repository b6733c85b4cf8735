// ringo/uring/faults.hpp - faults a test can inject at the engine seam (the Ring's queues),
// on either engine: system-call errors, short reads and writes, provided buffers running dry.
#pragma once

#include <cstdint>
#include <string>

namespace ringo::uring {

/// What to inject, each fault with a probability of 1 in N (0: never). The choices come
/// from a generator seeded with `seed`, so a failing run replays exactly. Honoured only by
/// builds with fault injection compiled in (ringo::uring::fault_injection_built: the test
/// and sanitizer builds, CMake option RINGO_FAULT_INJECTION); elsewhere a plan that injects
/// anything makes the Ring's constructor throw std::invalid_argument.
///
/// - `enter_errors`: a call into the engine (io_uring_enter, or the epoll engine's enter)
///   fails before it reaches the engine, with -EAGAIN, -EBUSY or -EINTR in turn (-EINTR only
///   for a call that waits), and nothing of the submission queue is consumed: what the
///   kernel does under CQ back-pressure or a signal.
/// - `short_io`: a read, write, recv or send (plain, fixed-buffer or vectored) asks for less
///   than its caller did, as a pipe, a socket or a file being written may give: a random
///   length from 1 up to one byte (or one iovec) short. Only for byte streams and files
///   (regular files not opened with O_DIRECT, pipes, stream sockets, by fstat), where a short
///   transfer loses nothing; not for an SQE linked to the next (a short transfer would break
///   its chain), a registered file (it cannot be checked), or a length of 0 or 1.
/// - `no_buffers`: an operation that selects a provided buffer completes with -ENOBUFS
///   without running, as when its buffer group is empty (on io_uring by a NOP that injects
///   the result, IORING_NOP_INJECT_RESULT, Linux 6.10; the Ring checks that the kernel has it).
struct FaultPlan {
    unsigned enter_errors = 0; ///< 1 in N calls into the engine fail (0: never)
    unsigned short_io = 0;     ///< 1 in N eligible transfers ask for less (0: never)
    unsigned no_buffers = 0;   ///< 1 in N buffer selections fail with -ENOBUFS (0: never)
    std::uint64_t seed = 1;    ///< the generator's seed (the same seed, the same faults)

    /// True when any fault is planned.
    [[nodiscard]] bool any() const noexcept { return enter_errors || short_io || no_buffers; }
    /// Parses "enter=N,short=N,nobufs=N,seed=S" (any subset, in any order), the form of the
    /// RINGO_FAULTS environment variable. Throws std::invalid_argument on anything else.
    static FaultPlan parse(const std::string& text);
};

/// How many faults a Ring injected, by kind.
struct FaultCounts {
    std::uint64_t enter_errors = 0; ///< io_uring_enter calls failed on purpose
    std::uint64_t short_io = 0;     ///< transfers shortened
    std::uint64_t no_buffers = 0;   ///< buffer selections refused with -ENOBUFS
};

/// True in builds that honour a FaultPlan (the CMake option RINGO_FAULT_INJECTION, on in
/// the test and sanitizer builds).
bool fault_injection_built() noexcept;

} // namespace ringo::uring
