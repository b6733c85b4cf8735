// src/epoll/basics.cpp - the clock and the caller's memory (basics.hpp).
#include "basics.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>

namespace ringo::uring::epoll {

namespace {
std::atomic<bool> no_copy_in{false};  // process_vm_readv refused (a seccomp profile)
std::atomic<bool> no_copy_out{false}; // process_vm_writev refused
} // namespace

std::uint64_t mono_ns() noexcept {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool copy_in(void* to, std::uint64_t from, std::size_t len) noexcept {
    if (no_copy_in.load(std::memory_order_relaxed))
        return false;
    iovec local{to, len};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(from)), len};
    const ssize_t r = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (r == static_cast<ssize_t>(len))
        return true;
    if (r < 0 && errno != EFAULT)
        no_copy_in.store(true, std::memory_order_relaxed);
    return false;
}

bool read_user(void* to, std::uint64_t from, std::size_t len) noexcept {
    if (copy_in(to, from, len))
        return true;
    if (!no_copy_in.load(std::memory_order_relaxed) || !from)
        return false;
    std::memcpy(to, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(from)), len);
    return true;
}

bool copy_out(std::uint64_t to, const void* from, std::size_t len) noexcept {
    if (!no_copy_out.load(std::memory_order_relaxed)) {
        iovec local{const_cast<void*>(from), len};
        iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(to)), len};
        const ssize_t r = ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0);
        if (r == static_cast<ssize_t>(len))
            return true;
        if (r >= 0 || errno == EFAULT)
            return false;
        no_copy_out.store(true, std::memory_order_relaxed);
    }
    if (!to)
        return false;
    std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(to)), from, len);
    return true;
}

} // namespace ringo::uring::epoll
