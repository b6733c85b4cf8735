// src/kernel_engine.hpp - the kernel's io_uring behind the engine seam (uring/queue_engine.hpp):
// the enters a Ring does not make inline (SQPOLL's, and waits with a timeout), provided-buffer
// rings, and the ring's end.
#pragma once

#include <liburing.h>

#include <ringo/uring/queue_engine.hpp>

namespace ringo::uring {

class KernelEngine final : public QueueEngine {
public:
    /// The engine of `ring`, set up (io_uring_queue_init_params); it ends the ring with its own
    /// end. `enter_fd` and `enter_flags` are the Ring's (the registered ring's index and
    /// REGISTERED_RING when registered, GETEVENTS under IOPOLL); `sqpoll`: a kernel thread
    /// takes the SQEs.
    KernelEngine(io_uring& ring, int enter_fd, unsigned enter_flags, bool sqpoll) noexcept
        : ring_(ring), enter_fd_(enter_fd), enter_flags_(enter_flags), sqpoll_(sqpoll) {}
    ~KernelEngine() override;
    KernelEngine(const KernelEngine&) = delete;
    KernelEngine& operator=(const KernelEngine&) = delete;

    [[nodiscard]] EngineKind kind() const noexcept override { return EngineKind::io_uring; }
    EnterResult enter(unsigned to_submit, unsigned wait_nr, bool get_events,
                      const std::uint64_t* timeout_ns) noexcept override;
    int register_buf_ring(io_uring_buf_reg& reg) noexcept override;
    int unregister_buf_ring(std::uint16_t bgid) noexcept override;

private:
    EnterResult enter_sqpoll(unsigned to_submit, unsigned wait_nr, bool get_events) noexcept;
    EnterResult enter_with_timeout(unsigned to_submit, unsigned wait_nr, std::uint64_t timeout_ns) noexcept;

    io_uring& ring_;
    int enter_fd_;
    unsigned enter_flags_;
    bool sqpoll_;
};

} // namespace ringo::uring
