// ringo/op/socket.hpp - sockets: create, connect, accept, send, receive, shut down.
#pragma once

#include <sys/socket.h>

#include <cerrno>

#include <ringo/op/base.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::op {

/// IORING_OP_SOCKET (5.19), like socket(2): the new fd or -errno.
struct [[nodiscard]] Socket : Op<Socket, detail::DescriptorResult> {
    /// The opcode submitted: IORING_OP_SOCKET.
    static constexpr std::uint8_t opcode = uring::compat::opcode::socket;
    /// Keeps the arguments for prepare(); op::socket() makes one.
    Socket(int domain, int type, int protocol, unsigned flags) noexcept
        : domain_(domain), type_(type), protocol_(protocol), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept { io_uring_prep_socket(s, domain_, type_, protocol_, flags_); }
    ///@{
    /// The constructor's arguments, read by prepare().
    int domain_, type_, protocol_;
    unsigned flags_;
    ///@}
};
inline Socket socket(int domain, int type, int protocol = 0, unsigned flags = 0) noexcept {
    return {domain, type, protocol, flags};
}

/// IORING_OP_SOCKET into the registered file table (5.19): 0 for a chosen slot, the slot
/// with op::alloc_slot, or -errno (-ENFILE: no free slot, -ENXIO: no table).
struct [[nodiscard]] SocketDirect : Op<SocketDirect> {
    /// The opcode submitted: IORING_OP_SOCKET.
    static constexpr std::uint8_t opcode = uring::compat::opcode::socket;
    /// Keeps the arguments for prepare(); op::socket_direct() makes one.
    SocketDirect(int domain, int type, int protocol, unsigned slot, unsigned flags) noexcept
        : domain_(domain), type_(type), protocol_(protocol), slot_(slot), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_socket(s, domain_, type_, protocol_, flags_);
        uring::compat::sqe_field::target_slot(s, slot_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    int domain_, type_, protocol_;
    unsigned slot_, flags_;
    ///@}
};
inline SocketDirect socket_direct(int domain, int type, int protocol, unsigned file_index,
                                  unsigned flags = 0) noexcept {
    return {domain, type, protocol, file_index, flags};
}

/// IORING_OP_BIND (6.11), like bind(2): 0 or -errno. When the probe lacks the opcode
/// (kernels before 6.11) the await calls bind(2) itself, synchronously, and yields its result
/// the same way (see Op: fallback); a registered file has no plain descriptor to do that
/// with and stays -EOPNOTSUPP there.
struct [[nodiscard]] Bind : Op<Bind> {
    /// The opcode submitted: IORING_OP_BIND.
    static constexpr std::uint8_t opcode = uring::compat::opcode::bind;
    /// Keeps the arguments for prepare(); op::bind() makes one.
    Bind(FileRef fd, const sockaddr* addr, socklen_t len) noexcept : fd_(fd), addr_(addr), len_(len) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, fd_.raw(), reinterpret_cast<std::uint64_t>(addr_), 0, len_); // addr2 = addrlen
        fd_.apply(s);
    }
    /// The call made as a plain system call when the kernel cannot (see Op, Fallback).
    int fallback() const noexcept {
        return fd_.fixed() ? -EOPNOTSUPP : detail::syscall_result(::bind(fd_.raw(), addr_, len_));
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const sockaddr* addr_;
    socklen_t len_;
    ///@}
};
inline Bind bind(FileRef fd, const sockaddr* addr, socklen_t addrlen) noexcept { return {fd, addr, addrlen}; }

/// IORING_OP_LISTEN (6.11), like listen(2): 0 or -errno. When the probe lacks the opcode
/// (kernels before 6.11) the await calls listen(2) itself, synchronously (see Op: fallback);
/// a registered file stays -EOPNOTSUPP there.
struct [[nodiscard]] Listen : Op<Listen> {
    /// The opcode submitted: IORING_OP_LISTEN.
    static constexpr std::uint8_t opcode = uring::compat::opcode::listen;
    /// Keeps the arguments for prepare(); op::listen() makes one.
    Listen(FileRef fd, int backlog) noexcept : fd_(fd), backlog_(backlog) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        prep_raw(s, opcode, fd_.raw(), 0, static_cast<std::uint32_t>(backlog_), 0);
        fd_.apply(s);
    }
    /// The call made as a plain system call when the kernel cannot (see Op, Fallback).
    int fallback() const noexcept {
        return fd_.fixed() ? -EOPNOTSUPP : detail::syscall_result(::listen(fd_.raw(), backlog_));
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    int backlog_;
    ///@}
};
inline Listen listen(FileRef fd, int backlog) noexcept { return {fd, backlog}; }

/// IORING_OP_CONNECT (5.5), like connect(2): 0 or -errno. `addr` must stay valid until the
/// await ends.
struct [[nodiscard]] Connect : Op<Connect> {
    /// The opcode submitted: IORING_OP_CONNECT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::connect;
    /// Keeps the arguments for prepare(); op::connect() makes one.
    Connect(FileRef fd, const sockaddr* addr, socklen_t len) noexcept : fd_(fd), addr_(addr), len_(len) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_connect(s, fd_.raw(), addr_, len_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const sockaddr* addr_;
    socklen_t len_;
    ///@}
};
inline Connect connect(FileRef fd, const sockaddr* addr, socklen_t addrlen) noexcept { return {fd, addr, addrlen}; }

/// IORING_OP_ACCEPT (5.5), like accept4(2): the new fd or -errno. `addr`/`addrlen` may be null.
struct [[nodiscard]] Accept : Op<Accept, detail::DescriptorResult> {
    /// The opcode submitted: IORING_OP_ACCEPT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::accept;
    /// Keeps the arguments for prepare(); op::accept() makes one.
    Accept(FileRef fd, sockaddr* addr, socklen_t* len, int flags) noexcept
        : fd_(fd), addr_(addr), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_accept(s, fd_.raw(), addr_, len_, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    sockaddr* addr_;
    socklen_t* len_;
    int flags_;
    ///@}
};
inline Accept accept(FileRef fd, sockaddr* addr = nullptr, socklen_t* addrlen = nullptr, int flags = 0) noexcept {
    return {fd, addr, addrlen, flags};
}

/// IORING_OP_ACCEPT into the registered file table (5.15): 0 for a chosen slot, the slot
/// with op::alloc_slot, or -errno.
struct [[nodiscard]] AcceptDirect : Op<AcceptDirect> {
    /// The opcode submitted: IORING_OP_ACCEPT.
    static constexpr std::uint8_t opcode = uring::compat::opcode::accept;
    /// Keeps the arguments for prepare(); op::accept_direct() makes one.
    AcceptDirect(FileRef fd, sockaddr* addr, socklen_t* len, int flags, unsigned slot) noexcept
        : fd_(fd), addr_(addr), len_(len), flags_(flags), slot_(slot) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_accept(s, fd_.raw(), addr_, len_, flags_);
        uring::compat::sqe_field::target_slot(s, slot_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    sockaddr* addr_;
    socklen_t* len_;
    int flags_;
    unsigned slot_;
    ///@}
};
inline AcceptDirect accept_direct(FileRef fd, sockaddr* addr, socklen_t* addrlen, int flags,
                                  unsigned file_index) noexcept {
    return {fd, addr, addrlen, flags, file_index};
}

/// IORING_OP_SEND (5.6), like send(2): bytes sent or -errno.
struct [[nodiscard]] Send : Op<Send> {
    /// The opcode submitted: IORING_OP_SEND.
    static constexpr std::uint8_t opcode = uring::compat::opcode::send;
    /// Keeps the arguments for prepare(); op::send() makes one.
    Send(FileRef fd, const void* buf, std::size_t len, int flags) noexcept
        : fd_(fd), buf_(buf), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_send(s, fd_.raw(), buf_, len_, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const void* buf_;
    std::size_t len_;
    int flags_;
    ///@}
};
inline Send send(FileRef fd, const void* buf, std::size_t len, int flags = 0) noexcept { return {fd, buf, len, flags}; }

/// IORING_OP_SEND with a destination address (6.0), like sendto(2): bytes sent or -errno.
struct [[nodiscard]] Sendto : Op<Sendto> {
    /// The opcode submitted: IORING_OP_SEND.
    static constexpr std::uint8_t opcode = uring::compat::opcode::send;
    /// Keeps the arguments for prepare(); op::sendto() makes one.
    Sendto(FileRef fd, const void* buf, std::size_t len, int flags, const sockaddr* addr, socklen_t alen) noexcept
        : fd_(fd), buf_(buf), len_(len), flags_(flags), addr_(addr), alen_(alen) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_send(s, fd_.raw(), buf_, len_, flags_);
        io_uring_prep_send_set_addr(s, addr_, static_cast<std::uint16_t>(alen_));
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const void* buf_;
    std::size_t len_;
    int flags_;
    const sockaddr* addr_;
    socklen_t alen_;
    ///@}
};
inline Sendto sendto(FileRef fd, const void* buf, std::size_t len, int flags, const sockaddr* addr,
                     socklen_t addrlen) noexcept {
    return {fd, buf, len, flags, addr, addrlen};
}

/// IORING_OP_SENDMSG (5.3), like sendmsg(2): bytes sent or -errno. `msg` and everything it
/// points to must stay valid until the await ends.
struct [[nodiscard]] Sendmsg : Op<Sendmsg> {
    /// The opcode submitted: IORING_OP_SENDMSG.
    static constexpr std::uint8_t opcode = uring::compat::opcode::sendmsg;
    /// Keeps the arguments for prepare(); op::sendmsg() makes one.
    Sendmsg(FileRef fd, const msghdr* msg, unsigned flags) noexcept : fd_(fd), msg_(msg), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_sendmsg(s, fd_.raw(), msg_, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    const msghdr* msg_;
    unsigned flags_;
    ///@}
};
inline Sendmsg sendmsg(FileRef fd, const msghdr* msg, unsigned flags = 0) noexcept { return {fd, msg, flags}; }

/// IORING_OP_RECV (5.6), like recv(2): bytes received (0 at orderly shutdown) or -errno.
struct [[nodiscard]] Recv : Op<Recv> {
    /// The opcode submitted: IORING_OP_RECV.
    static constexpr std::uint8_t opcode = uring::compat::opcode::recv;
    /// Keeps the arguments for prepare(); op::recv() makes one.
    Recv(FileRef fd, void* buf, std::size_t len, int flags) noexcept : fd_(fd), buf_(buf), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_recv(s, fd_.raw(), buf_, len_, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    void* buf_;
    std::size_t len_;
    int flags_;
    ///@}
};
inline Recv recv(FileRef fd, void* buf, std::size_t len, int flags = 0) noexcept { return {fd, buf, len, flags}; }

/// IORING_OP_RECV with a provided buffer (5.7): the kernel picks a buffer of group `g`;
/// `buffer_id(op.result_flags())` names it. -ENOBUFS when the group is empty.
struct [[nodiscard]] RecvSelect : Op<RecvSelect> {
    /// The opcode submitted: IORING_OP_RECV.
    static constexpr std::uint8_t opcode = uring::compat::opcode::recv;
    /// Keeps the arguments for prepare(); op::recv() makes one.
    RecvSelect(FileRef fd, BufferGroup g, std::size_t len, int flags) noexcept
        : fd_(fd), g_(g), len_(len), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_recv(s, fd_.raw(), nullptr, len_, flags_);
        raw::select_buffer(s, g_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    BufferGroup g_;
    std::size_t len_;
    int flags_;
    ///@}
};
inline RecvSelect recv(FileRef fd, BufferGroup g, std::size_t len, int flags = 0) noexcept {
    return {fd, g, len, flags};
}

/// IORING_OP_RECVMSG (5.3), like recvmsg(2): bytes received or -errno; fills `*msg`.
struct [[nodiscard]] Recvmsg : Op<Recvmsg> {
    /// The opcode submitted: IORING_OP_RECVMSG.
    static constexpr std::uint8_t opcode = uring::compat::opcode::recvmsg;
    /// Keeps the arguments for prepare(); op::recvmsg() makes one.
    Recvmsg(FileRef fd, msghdr* msg, unsigned flags) noexcept : fd_(fd), msg_(msg), flags_(flags) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_recvmsg(s, fd_.raw(), msg_, flags_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    msghdr* msg_;
    unsigned flags_;
    ///@}
};
inline Recvmsg recvmsg(FileRef fd, msghdr* msg, unsigned flags = 0) noexcept { return {fd, msg, flags}; }

/// IORING_OP_SHUTDOWN (5.11), like shutdown(2): 0 or -errno.
struct [[nodiscard]] Shutdown : Op<Shutdown> {
    /// The opcode submitted: IORING_OP_SHUTDOWN.
    static constexpr std::uint8_t opcode = uring::compat::opcode::shutdown;
    /// Keeps the arguments for prepare(); op::shutdown() makes one.
    Shutdown(FileRef fd, int how) noexcept : fd_(fd), how_(how) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        io_uring_prep_shutdown(s, fd_.raw(), how_);
        fd_.apply(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    int how_;
    ///@}
};
inline Shutdown shutdown(FileRef fd, int how) noexcept { return {fd, how}; }

} // namespace ringo::op
