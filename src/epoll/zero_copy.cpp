// src/epoll/zero_copy.cpp - IORING_OP_SEND_ZC and IORING_OP_SENDMSG_ZC on the epoll engine:
// served as a send (or sendmsg) by readiness, whose bytes the kernel copies, followed by the
// notification io_uring posts once the buffer is free again. The two CQEs are io_uring's: the
// result with IORING_CQE_F_MORE (an error too, once the request was taken), then a CQE of the
// same user_data with IORING_CQE_F_NOTIF, whose result reports a copy
// (IORING_NOTIF_USAGE_ZC_COPIED) when the send asked for it (IORING_SEND_ZC_REPORT_USAGE).
// A send that could not be sent as zero-copy by the kernel is refused as the kernel refuses it:
// a socket that is not TCP or UDP over IPv4 or IPv6 is -EOPNOTSUPP.
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "engine.hpp"

namespace ringo::uring::epoll {

namespace {

namespace rs = compat::recvsend;
constexpr std::uint16_t send_vectorized = 1u << 5; // IORING_SEND_VECTORIZED (6.17): addr is an iovec array

// Whether the socket `fd` takes zero-copy sends (the kernel's SOCK_SUPPORT_ZC: TCP and UDP
// sockets of IPv4 and IPv6): 0, -EOPNOTSUPP, or the lookup's -EBADF or -ENOTSOCK.
int takes_zero_copy(int fd) noexcept {
    int domain = 0, protocol = 0;
    socklen_t len = sizeof protocol;
    if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0)
        return -errno;
    len = sizeof domain;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
        return -errno;
    const bool inet = domain == AF_INET || domain == AF_INET6;
    return inet && (protocol == IPPROTO_TCP || protocol == IPPROTO_UDP) ? 0 : -EOPNOTSUPP;
}

} // namespace

// The kernel's checks of a zero-copy send, in its order, then the SQE made a send or sendmsg
// (0), or the error to end it with. The fields it wants zero (addr3 and the pad after it) and
// IOSQE_CQE_SKIP_SUCCESS are refused with a single CQE; anything later has the notification
// too: unknown zero-copy flags, a sendmsg's destination or file index, a send's destination
// (longer than a sockaddr_storage, unreadable), the descriptor (not a socket, no zero-copy), a
// registered buffer (the engine has none: -EFAULT).
int Engine::zc_prepare(Pending* p) {
    io_uring_sqe& s = p->sqe;
    std::uint64_t pad = 0;
    std::memcpy(&pad, reinterpret_cast<const unsigned char*>(&s) + offsetof(io_uring_sqe, addr3) + sizeof s.addr3,
                sizeof pad);
    if (s.addr3 || pad || (s.flags & compat::sqe_flag::cqe_skip_success))
        return -EINVAL;
    p->notif = true;
    p->zc_opcode = s.opcode; // (what a cancel by opcode matches)
    p->notif_report = s.ioprio & rs::send_zc_report_usage;
    if (s.ioprio & ~(rs::poll_first | rs::fixed_buf | rs::send_zc_report_usage | send_vectorized))
        return -EINVAL;
    if (s.opcode == opc::sendmsg_zc && (s.off || s.file_index))
        return -EINVAL;
    if (s.opcode == opc::send_zc && s.off) { // (the destination is copied in before the socket is looked at)
        const std::uint16_t len = compat::sqe_field::addr_len(s);
        sockaddr_storage to;
        if (len > sizeof to)
            return -EINVAL;
        if (len && !read_user(&to, s.off, len))
            return -EFAULT;
    }
    if (const int r = takes_zero_copy(s.fd); r < 0)
        return r;
    if (s.ioprio & rs::fixed_buf)
        return -EFAULT; // (no registered buffer table)
    const bool vectorized = s.opcode == opc::send_zc && (s.ioprio & send_vectorized);
    s.ioprio = 0;
    s.msg_flags |= MSG_NOSIGNAL;
    if (s.opcode == opc::sendmsg_zc) {
        s.opcode = opc::sendmsg;
        return 0;
    }
    if (!vectorized) {
        s.opcode = opc::send; // (a destination in addr2, as a send's)
        return 0;
    }
    // An iovec array (addr, len entries) and a destination: a sendmsg of the record's msghdr.
    p->hdr = msghdr{};
    p->hdr.msg_iov = reinterpret_cast<iovec*>(static_cast<std::uintptr_t>(s.addr));
    p->hdr.msg_iovlen = s.len;
    p->hdr.msg_name = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.off));
    p->hdr.msg_namelen = s.off ? compat::sqe_field::addr_len(s) : 0;
    s.addr = reinterpret_cast<std::uintptr_t>(&p->hdr);
    s.len = 1;
    s.off = 0;
    s.opcode = opc::sendmsg;
    return 0;
}

} // namespace ringo::uring::epoll
