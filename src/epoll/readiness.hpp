// src/epoll/readiness.hpp - the readiness back end of the epoll engine: it watches
// descriptors and says which became ready. The engine keeps what it knows of each descriptor
// and its waiters (descriptors.cpp); this is the part that talks to the kernel's readiness
// interface. Another back end (poll(2), a test back end that injects events) provides a class
// of this name with these members, and nothing else changes: the seam is at compile time, so
// the per-event path stays inlined. This one is epoll's (set-up in readiness_epoll.cpp):
// edge-triggered registrations, and an eventfd that wakes its wait.
#pragma once

#include <sys/epoll.h>

#include <cerrno>
#include <cstdint>

namespace ringo::uring::epoll {

/// What a wait reports of one descriptor (read with the accessors of Readiness).
using Ready = epoll_event;
/// Readiness::what: the descriptor became readable, writable, or both (an error or a hang-up
/// is both: the waiter's call then says what happened).
inline constexpr std::uint32_t readable = 1u << 0;
inline constexpr std::uint32_t writable = 1u << 1;

class Readiness {
public:
    /// Throws std::system_error when the back end cannot be made.
    Readiness();
    ~Readiness();
    Readiness(const Readiness&) = delete;
    Readiness& operator=(const Readiness&) = delete;

    /// Watches descriptor `fd` for every readiness, edge-triggered (each change is reported
    /// once), under generation `gen`, which its reports carry: `add` for a descriptor not
    /// watched, else the watch is renewed (a renewed watch reports what is ready now). 0, or
    /// -errno: -EEXIST (add: watched already), -ENOENT (renew: not watched), -EBADF, -EPERM (a
    /// regular file), -ENOMEM. A descriptor's watch ends when its file is closed.
    int watch(int fd, std::uint32_t gen, bool add) noexcept {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET;
        ev.data.u64 = (std::uint64_t{gen} << 32) | static_cast<std::uint32_t>(fd);
        ++calls_;
        return ::epoll_ctl(epfd_, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
    }
    /// Waits up to `timeout_ms` (-1: without limit; 0: a look) until a watched descriptor is
    /// ready or wake() was called, and puts at most `max` reports in `out`: their number, or
    /// -errno (-EINTR: a signal came).
    int wait(Ready* out, int max, int timeout_ms) noexcept {
        const int n = ::epoll_wait(epfd_, out, max, timeout_ms);
        return n < 0 ? -errno : n;
    }
    /// A report of wake() (no descriptor's).
    static bool woken(const Ready& r) noexcept { return r.data.u64 == wake_tag; }
    /// A descriptor's report: its number, its registration's generation, and what it became.
    static std::uint32_t fd(const Ready& r) noexcept { return static_cast<std::uint32_t>(r.data.u64); }
    static std::uint32_t gen(const Ready& r) noexcept { return static_cast<std::uint32_t>(r.data.u64 >> 32); }
    static std::uint32_t what(const Ready& r) noexcept {
        return ((r.events & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ? readable : 0) |
               ((r.events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) ? writable : 0);
    }

    /// The descriptor that wakes the wait when written (8 bytes, as an eventfd): a thread of
    /// the pool, or a native AIO completion (IOCB_FLAG_RESFD), writes it.
    [[nodiscard]] int wake_fd() const noexcept { return wake_fd_; }
    /// Wakes the wait of the back end whose wake_fd() is `fd` (any thread).
    static void wake(int fd) noexcept;
    /// The watch calls made so far (RuntimeStats::readiness_registrations).
    [[nodiscard]] std::uint64_t calls() const noexcept { return calls_; }

private:
    // The wake eventfd's reports (no descriptor's: a number's data has 32 bits of generation
    // above it, and a generation of all ones with a number of all ones is never made).
    static constexpr std::uint64_t wake_tag = ~std::uint64_t{0};
    int epfd_ = -1;
    int wake_fd_ = -1;
    std::uint64_t calls_ = 0;
};

} // namespace ringo::uring::epoll
