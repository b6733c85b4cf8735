// ringo/op/socket.hpp - sockets: create, connect, accept, send, receive, shut down.
#pragma once

#include <sys/socket.h>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// IORING_OP_SOCKET (5.19), like socket(2): the new fd or -errno.
struct Socket : Op<Socket> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::socket;
    Socket(int domain, int type, int protocol, unsigned flags) noexcept : domain_(domain), type_(type), protocol_(protocol), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_socket(s, domain_, type_, protocol_, flags_); }
    int domain_, type_, protocol_; unsigned flags_;
};
inline Socket socket(int domain, int type, int protocol = 0, unsigned flags = 0) noexcept { return {domain, type, protocol, flags}; }

/// IORING_OP_CONNECT (5.5), like connect(2): 0 or -errno. `addr` must stay valid until the
/// await ends.
struct Connect : Op<Connect> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::connect;
    Connect(FileRef fd, const sockaddr* addr, socklen_t len) noexcept : fd_(fd), addr_(addr), len_(len) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_connect(s, fd_.raw(), addr_, len_); fd_.apply(s); }
    FileRef fd_; const sockaddr* addr_; socklen_t len_;
};
inline Connect connect(FileRef fd, const sockaddr* addr, socklen_t addrlen) noexcept { return {fd, addr, addrlen}; }

/// IORING_OP_ACCEPT (5.5), like accept4(2): the new fd or -errno. `addr`/`addrlen` may be null.
struct Accept : Op<Accept> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::accept;
    Accept(FileRef fd, sockaddr* addr, socklen_t* len, int flags) noexcept : fd_(fd), addr_(addr), len_(len), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_accept(s, fd_.raw(), addr_, len_, flags_); fd_.apply(s); }
    FileRef fd_; sockaddr* addr_; socklen_t* len_; int flags_;
};
inline Accept accept(FileRef fd, sockaddr* addr = nullptr, socklen_t* addrlen = nullptr, int flags = 0) noexcept {
    return {fd, addr, addrlen, flags};
}

/// IORING_OP_SEND (5.6), like send(2): bytes sent or -errno.
struct Send : Op<Send> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::send;
    Send(FileRef fd, const void* buf, std::size_t len, int flags) noexcept : fd_(fd), buf_(buf), len_(len), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_send(s, fd_.raw(), buf_, len_, flags_); fd_.apply(s); }
    FileRef fd_; const void* buf_; std::size_t len_; int flags_;
};
inline Send send(FileRef fd, const void* buf, std::size_t len, int flags = 0) noexcept { return {fd, buf, len, flags}; }

/// IORING_OP_RECV (5.6), like recv(2): bytes received (0 at orderly shutdown) or -errno.
struct Recv : Op<Recv> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::recv;
    Recv(FileRef fd, void* buf, std::size_t len, int flags) noexcept : fd_(fd), buf_(buf), len_(len), flags_(flags) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_recv(s, fd_.raw(), buf_, len_, flags_); fd_.apply(s); }
    FileRef fd_; void* buf_; std::size_t len_; int flags_;
};
inline Recv recv(FileRef fd, void* buf, std::size_t len, int flags = 0) noexcept { return {fd, buf, len, flags}; }

/// IORING_OP_SHUTDOWN (5.11), like shutdown(2): 0 or -errno.
struct Shutdown : Op<Shutdown> {
    static constexpr std::uint8_t opcode = uring::compat::opcode::shutdown;
    Shutdown(FileRef fd, int how) noexcept : fd_(fd), how_(how) {}
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_shutdown(s, fd_.raw(), how_); fd_.apply(s); }
    FileRef fd_; int how_;
};
inline Shutdown shutdown(FileRef fd, int how) noexcept { return {fd, how}; }

} // namespace ringo::op
