// src/epoll/epoll_engine.cpp - the epoll engine behind the engine seam
// (uring/queue_engine.hpp): the verbs a Ring calls, with no exception let out, and the
// function that makes the engine.
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "engine.hpp"

namespace ringo::uring {
namespace epoll {

// Operations in flight progress only in enter (the kernel's go on by themselves): while there
// are any, the SQ flags ask the runtime to enter (IORING_SQ_TASKRUN, as deferred task work
// does), so a busy run queue does not keep timers, readiness or the pool's results from being
// seen; each enter then also looks at what became ready.
EnterResult Engine::enter(unsigned to_submit, unsigned wait_nr, bool get_events,
                          const std::uint64_t* timeout_ns) noexcept {
    const bool asks = (sq_flags & (compat::sq_cq_overflow | compat::sq_taskrun)) != 0;
    if (!to_submit && !wait_nr && !get_events && !asks)
        return {};
    get_events = get_events || asks;
    // (Every SQE is taken before the wait: they count as submitted whatever it ends with.)
    EnterResult e{0, to_submit, true};
    try {
        e.res = static_cast<int>(
            enter_once(to_submit, wait_nr, (wait_nr || get_events) ? compat::enter::getevents : 0u, timeout_ns));
        if (all)
            sq_flags |= compat::sq_taskrun;
        else
            sq_flags &= ~compat::sq_taskrun;
    } catch (const std::bad_alloc&) {
        e.res = -ENOMEM;
    } catch (const std::system_error& err) {
        e.res = -err.code().value();
    } catch (...) {
        e.res = -ENOMEM;
    }
    return e;
}

int Engine::register_buf_ring(io_uring_buf_reg& reg) noexcept {
    std::uint16_t flags;
    std::memcpy(&flags,
                reinterpret_cast<const unsigned char*>(&reg) + offsetof(io_uring_buf_reg, bgid) + sizeof reg.bgid,
                sizeof flags);
    const unsigned n = reg.ring_entries;
    if (flags != 0 || n == 0 || (n & (n - 1)) != 0 || n > 32768 || reg.ring_addr == 0)
        return -EINVAL;
    try {
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

int Engine::unregister_buf_ring(std::uint16_t bgid) noexcept {
    if (bgid >= groups.size() || !groups[bgid].br)
        return -EINVAL;
    groups[bgid] = {};
    return 0;
}

void Engine::own_fd(int fd, bool owned) noexcept {
    try {
        note_owner(fd, owned);
    } catch (...) { // (the table could not grow: the descriptor stays untrusted)
    }
}

void Engine::fill_probe(Probe& p) noexcept {
    p.reset(compat::opcode::known_last, compat::feat::nodrop | compat::feat::rw_cur_pos | compat::feat::ext_arg |
                                            compat::feat::submit_stable | compat::feat::poll_32bits);
    for (const Way& w : ways)
        p.set_supported(w.opcode, true);
}

} // namespace epoll

std::unique_ptr<QueueEngine> make_epoll_engine(unsigned sq_entries, unsigned cq_entries, io_uring& ring, Probe& probe) {
    auto e = std::make_unique<epoll::Engine>(sq_entries, cq_entries, ring);
    epoll::Engine::fill_probe(probe);
    return e;
}

} // namespace ringo::uring
