// io_uring_enter issued inline at the call site, for the raw-liburing baselines.
//
// liburing's io_uring_enter(), io_uring_enter2() and io_uring_submit_and_wait() are library
// functions: the `syscall` instruction is followed by that function's `ret`, which returns to a
// call made before the kernel ran. On some machines that return is costly. On the AMD EPYC
// (Zen 4) guest the benchmark report was measured on, whose kernel applies the SRSO "Safe RET"
// mitigation, one NOP round trip (same ring, same enter arguments) took about 350 ns of CPU
// through io_uring_submit_and_wait and about 240 ns with the enter inline in the loop; the
// same enter in a function ending in `syscall; ret` took 360 ns, and in one that leaves by
// `pop; jmp *reg` instead of `ret`, 241 ns. The extra time shows as system time, and grows
// with the kernel work of the enter (a one-connection ping-pong: ~0.5 us per enter). ringo
// issues its enter inline (an inlined submit with an inline `syscall`), so the baselines do
// too: the comparison is then between the two programs' work, not the placement of one
// instruction.
//
// x86-64 gets the inline system call; other architectures call liburing's io_uring_enter2().
#pragma once

#include <liburing.h>
#include <signal.h>

#include <cstddef>

namespace nb {

// io_uring_enter(fd, to_submit, min_complete, flags, arg, argsz). Returns the kernel's result:
// the number of SQEs consumed, or a negative errno.
[[gnu::always_inline]] inline int enter_inline(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                                               const void* arg = nullptr, std::size_t argsz = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = static_cast<long>(flags);
  register long r8 __asm__("r8") = reinterpret_cast<long>(arg);
  register long r9 __asm__("r9") = static_cast<long>(argsz);
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(static_cast<long>(__NR_io_uring_enter)), "D"(static_cast<long>(fd)),
                     "S"(static_cast<long>(to_submit)), "d"(static_cast<long>(min_complete)), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return static_cast<int>(ret);
#else
  return io_uring_enter2(fd, to_submit, min_complete, flags, static_cast<sigset_t*>(const_cast<void*>(arg)), argsz);
#endif
}

}  // namespace nb
