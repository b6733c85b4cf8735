// src/epoll/epoll_engine.cpp - the epoll engine's face (epoll_engine.hpp): what a Ring calls,
// with no exception let out.
#include "epoll_engine.hpp"

#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "engine.hpp"

namespace ringo::uring {

EpollEngine::EpollEngine(unsigned sq_entries, unsigned cq_entries, io_uring& ring)
    : impl_(std::make_unique<epoll::Engine>(sq_entries, cq_entries, ring)) {}

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

std::uint64_t EpollEngine::registrations() const noexcept { return impl_->readiness.calls(); }

void EpollEngine::private_user_data(std::uint64_t ud) noexcept { impl_->private_ud = ud; }

void EpollEngine::fill_probe(Probe& p) const noexcept {
    p.reset(compat::opcode::known_last, compat::feat::nodrop | compat::feat::rw_cur_pos | compat::feat::ext_arg |
                                            compat::feat::submit_stable | compat::feat::poll_32bits);
    for (const epoll::Way& w : epoll::ways)
        p.set_supported(w.opcode, true);
}

} // namespace ringo::uring
