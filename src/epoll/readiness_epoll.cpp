// src/epoll/readiness_epoll.cpp - the readiness back end on epoll (readiness.hpp).
#include "readiness.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ringo::uring::epoll {

Readiness::Readiness() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0)
        throw std::system_error(errno, std::generic_category(), "ringo: epoll engine: epoll_create1");
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) {
        int e = errno;
        ::close(epfd_);
        throw std::system_error(e, std::generic_category(), "ringo: epoll engine: eventfd");
    }
    // Edge-triggered: each write (a pool thread's, an AIO completion's) is an event of its
    // own, so the loop never reads the counter back (a system call per wake saved); the
    // counter would need 2^64 writes to fill (then a writer empties it: wake).
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = wake_tag;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev) < 0) {
        int e = errno;
        ::close(wake_fd_);
        ::close(epfd_);
        throw std::system_error(e, std::generic_category(), "ringo: epoll engine: epoll_ctl");
    }
}

Readiness::~Readiness() {
    ::close(wake_fd_);
    ::close(epfd_);
}

void Readiness::wake(int fd) noexcept {
    std::uint64_t one = 1;
    if (::write(fd, &one, sizeof one) < 0 && errno == EAGAIN) {
        std::uint64_t v; // full after 2^64 - 2 wakes: empty it and write again
        (void)!::read(fd, &v, sizeof v);
        (void)!::write(fd, &one, sizeof one);
    }
}

} // namespace ringo::uring::epoll
