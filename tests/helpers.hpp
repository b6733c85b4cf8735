// Shared helpers for the test suites: temporary directories, loopback sockets.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include <ringo/core/join_handle.hpp>
#include <ringo/core/time.hpp>
#include <ringo/net/tcp.hpp>

namespace ringo_test {

/// The ring (engine) of `rt`, for tests that look at its queues, counters and faults.
inline ringo::uring::Ring& ring_of(ringo::Runtime& rt) noexcept {
    return ringo::detail::RuntimeAccess::engine(rt).ring;
}

/// True when this run's runtimes use the epoll engine: CI runs the suites a second time with
/// RINGO_ENGINE=epoll.
inline bool on_epoll() {
    const char* e = std::getenv("RINGO_ENGINE");
    return e && std::strcmp(e, "epoll") == 0;
}
/// Skips a test that only means something on io_uring (a registered file, a kernel-full CQ)
/// when the suite runs on the epoll engine, saying why.
#define RINGO_IO_URING_ONLY(why)                                                                                       \
    do {                                                                                                               \
        if (::ringo_test::on_epoll())                                                                                  \
            GTEST_SKIP() << "io_uring only: " << why;                                                                  \
    } while (0)

/// Skips a test of FIFO order itself (the run queue's, or an order that follows from it) in a
/// build that scrambles the run queue on purpose (CMake option RINGO_SHUFFLE_RUN_QUEUE),
/// saying why.
#define RINGO_FIFO_ONLY(why)                                                                                           \
    do {                                                                                                               \
        if (::ringo::detail::shuffles_run_queue)                                                                       \
            GTEST_SKIP() << "FIFO order only (the run queue is shuffled): " << why;                                    \
    } while (0)

/// True in a ThreadSanitizer build.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool under_tsan = true;
#else
inline constexpr bool under_tsan = false;
#endif
#else
inline constexpr bool under_tsan = false;
#endif

/// Runs `body` (which returns an exit code) in a forked child that ends by SIGALRM after 20 s
/// if it hangs, and returns the child's wait status (-1 when fork failed). An exception from
/// `body` is exit code 3.
template <class F>
int wait_status_of_child(F body) {
    pid_t pid = ::fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        ::alarm(20);
        int code = 3;
        try {
            code = body();
        } catch (...) {
        }
        ::_exit(code);
    }
    int status = 0;
    return ::waitpid(pid, &status, 0) == pid ? status : -1;
}

/// Lets the other ready tasks run until each waits for something: yields until no other
/// task is ready (in FIFO order one yield, or a few; with a shuffled run queue as many as it
/// takes). For a test that needs the tasks it spawned to be waiting before it goes on.
inline ringo::Task<void> let_others_run() {
    for (int i = 0; i < 1'000'000; ++i) {
        co_await ringo::yield();
        if (ringo::detail::t_ready->empty())
            co_return;
    }
}

/// Counts the live copies of itself in `*n`: a parameter of a task, to see its frame freed.
struct Alive {
    std::atomic<int>* n;
    explicit Alive(std::atomic<int>* p) : n(p) { ++*n; }
    Alive(Alive&& o) noexcept : n(o.n) { ++*n; }
    ~Alive() { --*n; }
};

/// Sleeps for `d` holding an Alive (its frame's), and yields the sleep's result.
inline ringo::Task<int> sleep_holding(Alive, std::chrono::milliseconds d) { co_return co_await ringo::sleep_for(d); }

/// How many descriptors this process has open (the entries of /proc/self/fd, counted the
/// same way every time): equal before and after means nothing leaked.
inline int open_fds() {
    int n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d))
            ++n;
        ::closedir(d);
    }
    return n;
}

/// The whole content of the file `path` (empty if it cannot be read).
inline std::string slurp(const std::string& path) {
    std::string out;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return out;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}

/// Writes `data` to the file `path`, made (mode 0666 less the umask) or emptied first: true
/// when all of it was written.
inline bool spit(const std::string& path, std::string_view data) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return false;
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n <= 0)
            break;
        done += static_cast<std::size_t>(n);
    }
    return ::close(fd) == 0 && done == data.size();
}

/// A fresh directory under TMPDIR, removed with everything in it.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "ringo-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            std::abort();
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    /// The path of a new file `name` in it that holds `data`; empty if it could not be written.
    std::string file_with(const std::string& name, std::string_view data) const {
        std::string p = file(name);
        return spit(p, data) ? p : std::string();
    }

private:
    std::filesystem::path path_;
};

/// A TCP listener on 127.0.0.1 with an ephemeral port: a net::TcpListener that owns it, and
/// the raw descriptor and address that the op:: tests use.
struct Listener {
    ringo::net::TcpListener owner =
        ringo::net::TcpListener::bind_sync(ringo::net::SocketAddr::v4_loopback(0), {.backlog = 64}).value();
    int fd = owner.fd().get();
    sockaddr_in addr = v4(owner.local_addr().value());
    // Closed at once, even inside a runtime (where an Fd's close goes through the ring, later):
    // a test may need the port free as soon as the listener is gone (closed_port).
    ~Listener() { ::close(owner.take_fd().release()); }

private:
    static sockaddr_in v4(const ringo::net::SocketAddr& a) {
        sockaddr_in in{};
        std::memcpy(&in, a.data(), sizeof in);
        return in;
    }
};

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
inline sockaddr_in closed_port() {
    Listener l;
    sockaddr_in a = l.addr;
    return a;
}

} // namespace ringo_test
