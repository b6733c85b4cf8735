// src/epoll/aio.cpp - native AIO for reads and writes of O_DIRECT files.
#include "engine.hpp"

#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ringo::uring::epoll {

bool Engine::aio_usable() {
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
bool Engine::aio_start(Pending* p) {
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
    cb.aio_resfd = static_cast<std::uint32_t>(readiness.wake_fd());
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
void Engine::take_aio_completions() {
    auto* ring_head = reinterpret_cast<AioRingHead*>(aio_ctx);
    io_event evs[64];
    for (;;) {
        long n = 0;
        if (ring_head->magic == aio_ring_magic && ring_head->incompat_features == 0) {
            const unsigned nr = ring_head->nr;
            unsigned head = __atomic_load_n(&ring_head->head, __ATOMIC_RELAXED);
            const unsigned tail = __atomic_load_n(&ring_head->tail, __ATOMIC_ACQUIRE);
            const auto* ring_evs =
                reinterpret_cast<const io_event*>(reinterpret_cast<const char*>(ring_head) + ring_head->header_length);
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

} // namespace ringo::uring::epoll
