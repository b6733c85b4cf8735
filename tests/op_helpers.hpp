// Helpers shared by the tests/test_op_*.cpp suites: descriptors that close themselves,
// connected loopback sockets, pipes, bad inputs.
#pragma once

#include <ringo/io/fd.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>

#include <ringo/ringo.hpp>

#include "helpers.hpp"

namespace ringo_test {

/// Runs `f()` (a coroutine returning Task<T>) on a fresh default runtime.
template <class F>
auto run(F f) {
    ringo::Runtime rt;
    return rt.block_on(f());
}

/// An owned descriptor for the tests' own set-up: the library's ringo::Fd, which also reads as
/// a plain int (for the system calls that set up and check a test).
class Fd : public ringo::Fd {
public:
    Fd() noexcept = default;
    explicit Fd(int fd) noexcept : ringo::Fd(fd) {}
    operator int() const noexcept { return get(); } // NOLINT
};

// Awaits an operation that lives in the caller's frame (so the caller can name it).
template <class O>
ringo::Task<int> await_ref(O& o) {
    co_return co_await o;
}

/// A descriptor number that is certainly not open.
inline int closed_fd() {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ::close(fd);
    return fd;
}

/// An address no process can read or write (a PROT_NONE page).
inline void* bad_address() {
    static void* p = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p;
}

/// A pipe whose ends close themselves.
struct Pipe {
    Fd r, w;
    explicit Pipe(int flags = O_CLOEXEC) {
        int fds[2];
        if (::pipe2(fds, flags) != 0)
            std::abort();
        r.reset(fds[0]);
        w.reset(fds[1]);
    }
};

/// A connected TCP pair over 127.0.0.1 (client, server side).
struct TcpPair {
    Fd client, server;
    explicit TcpPair(int client_rcvbuf = 0, int server_rcvbuf = 0) {
        Listener l;
        client.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (client_rcvbuf)
            ::setsockopt(client, SOL_SOCKET, SO_RCVBUF, &client_rcvbuf, sizeof client_rcvbuf);
        if (::connect(client, reinterpret_cast<const sockaddr*>(&l.addr), sizeof l.addr) != 0)
            std::abort();
        server.reset(::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC));
        if (server < 0)
            std::abort();
        if (server_rcvbuf)
            ::setsockopt(server, SOL_SOCKET, SO_RCVBUF, &server_rcvbuf, sizeof server_rcvbuf);
        int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
};

/// A bound UDP socket on 127.0.0.1 with an ephemeral port.
struct UdpSocket {
    Fd fd;
    sockaddr_in addr{};
    UdpSocket() {
        fd.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
            std::abort();
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    }
    [[nodiscard]] const sockaddr* sa() const noexcept { return reinterpret_cast<const sockaddr*>(&addr); }
};

/// Writes `content` to a new file at `path`.
inline void write_file(const std::string& path, const std::string& content) {
    Fd fd(::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644));
    if (fd < 0 || ::write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size()))
        std::abort();
}

/// The whole content of the file at `path`.
inline std::string read_file(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    std::string out;
    char buf[4096];
    ssize_t n;
    while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0)
        out.append(buf, static_cast<std::size_t>(n));
    return out;
}

} // namespace ringo_test
