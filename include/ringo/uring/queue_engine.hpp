// ringo/uring/queue_engine.hpp - the seam between a Ring and what serves its queues: the
// kernel's io_uring, or an engine that keeps the same queues in user space (the epoll engine).
#pragma once

#include <cstdint>
#include <memory>

struct io_uring;
struct io_uring_buf_reg;

namespace ringo::uring {

class Probe;

/// What serves a Ring's queues (RingParams::engine): the kernel's io_uring, or the epoll
/// engine (the same queues in user space, served by readiness and a thread pool). `automatic`
/// takes io_uring when a ring can be set up and epoll when the kernel refuses io_uring; a
/// Runtime's options let the environment variable RINGO_ENGINE=epoll|io_uring override it.
enum class EngineKind : unsigned char { automatic, io_uring, epoll };

/// What one enter through the seam did (QueueEngine::enter).
struct EnterResult {
    /// What Ring::submit returns: the SQEs taken, or -errno (-ETIME: the timeout passed;
    /// -EINTR: a signal came; -EBUSY or -EAGAIN: the CQ is full, reap and enter again).
    int res = 0;
    /// The SQEs the engine took (the rest stay published and go with the next enter).
    unsigned taken = 0;
    /// Whether it entered (a system call, or the user-space engine's run): counted in
    /// Ring::enters().
    bool entered = false;
};

/// The engine behind a Ring: the few verbs a Ring needs of what serves its queues. The Ring
/// keeps the queues' memory in the kernel's layout (io_uring_sq, io_uring_cq), prepares SQEs
/// into the SQ and reads CQEs from the CQ; the engine takes the SQEs and posts the CQEs. Two
/// engines implement it: the kernel's io_uring (whose plain submission, with no SQPOLL and no
/// timeout, the Ring also makes inline, without this seam: the hot path pays no call) and
/// the epoll engine (src/epoll/). A new engine (another readiness back end, a test engine
/// that injects faults) is a class derived from this one, made by a function the Ring's
/// set-up calls (Ring::setup_epoll shows how).
class QueueEngine {
public:
    virtual ~QueueEngine();
    /// Which engine this is.
    [[nodiscard]] virtual EngineKind kind() const noexcept = 0;
    /// Takes the `to_submit` SQEs the Ring published (its SQ tail moved past them) and, when
    /// `wait_nr` or `get_events`, collects completions, waiting until `wait_nr` CQEs are in
    /// the CQ: at most `*timeout_ns` when given.
    virtual EnterResult enter(unsigned to_submit, unsigned wait_nr, bool get_events,
                              const std::uint64_t* timeout_ns) noexcept = 0;
    /// Registers a provided-buffer ring: 0 or -errno.
    virtual int register_buf_ring(io_uring_buf_reg& reg) noexcept = 0;
    /// Unregisters buffer group `bgid`: 0 or -errno.
    virtual int unregister_buf_ring(std::uint16_t bgid) noexcept = 0;
    /// An owner (ringo::Fd) took descriptor `fd` (`owned`) or gave it up: an engine that
    /// registers descriptors for readiness keeps a registration for the owner's life.
    virtual void own_fd(int fd, bool owned) noexcept;
    /// SQEs of user_data `ud` are the runtime's own (its wake-up read), which an
    /// IOSQE_IO_DRAIN does not wait for (on io_uring that read is no SQE at all).
    virtual void private_user_data(std::uint64_t ud) noexcept;
    /// The readiness registrations made so far (RuntimeStats::readiness_registrations); 0 for
    /// an engine without any.
    [[nodiscard]] virtual std::uint64_t readiness_registrations() const noexcept;
};

/// The epoll engine (src/epoll/) for queues of `sq_entries` and `cq_entries` (powers of two):
/// it points `ring`'s SQ and CQ at its own memory and fills `probe` with the opcodes it
/// serves. Throws std::system_error when epoll cannot be set up, std::bad_alloc.
std::unique_ptr<QueueEngine> make_epoll_engine(unsigned sq_entries, unsigned cq_entries, io_uring& ring, Probe& probe);

} // namespace ringo::uring
