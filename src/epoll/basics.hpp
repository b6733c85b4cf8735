// src/epoll/basics.hpp - what every room of the epoll engine uses: a system call's result as
// the kernel's (-errno), the monotonic clock, and the caller's memory read and written as the
// kernel reads and writes it (a bad pointer is an error, never a fault in the engine).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace ringo::uring::epoll {

/// A system call's return as an io_uring result: the value, or -errno.
[[gnu::always_inline]] inline int sys(long r) noexcept { return r < 0 ? -errno : static_cast<int>(r); }

/// CLOCK_MONOTONIC in ns (the timers' clock).
std::uint64_t mono_ns() noexcept;

/// Reads `len` bytes of the caller's memory at `from` as the kernel reads it: false for a
/// pointer it cannot read (process_vm_readv of this process; where a seccomp profile refuses
/// that call, false from then on).
bool copy_in(void* to, std::uint64_t from, std::size_t len) noexcept;
/// What the kernel reads before the call, read as copy_in reads it; where a seccomp profile
/// refuses process_vm_readv, read directly (a bad pointer then faults here, as it did before
/// the engine checked it), a null one still false.
bool read_user(void* to, std::uint64_t from, std::size_t len) noexcept;
/// Writes the caller's memory as the kernel writes it (process_vm_writev): false for a bad
/// pointer (written directly where a seccomp profile refuses the call).
bool copy_out(std::uint64_t to, const void* from, std::size_t len) noexcept;

} // namespace ringo::uring::epoll
