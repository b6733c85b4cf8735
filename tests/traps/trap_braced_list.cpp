// Trap 2 of docs/guide.md ("GCC 12: three patterns to avoid"): a braced list inside co_await.
// GCC before 13.1 rejects it, "array used as initializer" (GCC Bugzilla PR 103871); Clang and
// GCC 13.1 compile it. tests/traps/check_braced_list.cmake compiles this file (syntax only)
// with the compiler of the build: as it is (the documented form, which every compiler must
// take) and with RINGO_TRAP_BRACED_LIST defined (the trap).
#include <ringo/io/signal.hpp>

#include <signal.h>

// The documented form: the signals as plain arguments.
ringo::Task<int> documented_form() { co_return co_await ringo::wait_signal(SIGINT, SIGTERM); }

#ifdef RINGO_TRAP_BRACED_LIST
// The trap, as docs/signals.md used to write it.
ringo::Task<int> braced_list() { co_return co_await ringo::wait_signal({SIGINT, SIGTERM}); }
#endif
