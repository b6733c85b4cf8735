// The README's quick start, compiled and run by the test suite.
#include <ringo/ringo.hpp>

#include <fcntl.h>

ringo::Task<int> child(int x) { co_return x * 2; }

ringo::Task<int> main_task() {
    auto h = ringo::spawn(child(21)); // JoinHandle<int>, runs concurrently
    co_await ringo::yield();
    char buf[64];
    int fd = co_await ringo::op::openat(AT_FDCWD, "/etc/hostname", O_RDONLY, 0);
    int n = co_await ringo::op::read(fd, buf, sizeof buf, 0); // kernel semantics: bytes or -errno
    co_await ringo::op::close(fd);
    co_return co_await h + (n > 0 ? 0 : 1);
}

int main() { return ringo::block_on(main_task()) == 42 ? 0 : 1; }
