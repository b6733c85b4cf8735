// Compiled by check_nodiscard.cmake: with DISCARD undefined every operation is awaited and the
// file compiles cleanly; with DISCARD=k the k-th operation is created and dropped without
// co_await, which must draw the compiler's [[nodiscard]] warning (an error under -Werror).
#include <ringo/core/task.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/futex.hpp>
#include <ringo/op/path.hpp>
#include <ringo/op/send_zc.hpp>

#include <sys/stat.h>

namespace op = ringo::op;

#ifdef DISCARD
#define USE(k, expr)                                                                                                   \
    if constexpr (DISCARD == (k))                                                                                      \
        expr;
#else
#define USE(k, expr) (void)co_await expr;
#endif

ringo::Task<void> uses(int fd, void* buf, std::uint32_t* word, struct statx* st, op::ZcTracker& zc) {
    USE(1, op::close(fd))
    USE(2, op::read(fd, buf, 1, 0))
    USE(3, op::write(fd, buf, 1, 0))
    USE(4, op::nop())
    USE(5, op::futex_wake(word, 1))
    USE(6, op::send_zc(fd, buf, 1, zc))
    USE(7, op::statx(fd, "", 0, 0, st))
    USE(8, op::fsync(fd))
    co_return;
}

int main() {}
