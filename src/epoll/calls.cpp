// src/epoll/calls.cpp - the calls of readiness operations, made without waiting: sockets, pipes, provided buffers,
// MSG_WAITALL.
#include "engine.hpp"

#include <climits>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

namespace ringo::uring::epoll {

namespace {
// accept4 or connect (`call`) on socket `fd` without waiting: a socket in blocking mode
// has O_NONBLOCK for the call alone, as io_uring makes it without changing the caller's
// file flags (accept4 and connect have no MSG_DONTWAIT).
template <class Call>
int without_waiting(int fd, Call call) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK))
        return call();
    (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    const int r = call();
    (void)::fcntl(fd, F_SETFL, fl);
    return r;
}
} // namespace

void Engine::take_sigpipe() noexcept {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    timespec zero{0, 0};
    while (::sigtimedwait(&s, nullptr, &zero) == SIGPIPE) {
    }
}

int Engine::try_call_once(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    const int fd = s.fd;
    void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));
    // (A socket in blocking mode honours RWF_NOWAIT too: no read or write here ever waits.)
    const bool nowait = fd_state(fd).kind == Kind::nowait || fd_state(fd).kind == Kind::socket;
    switch (s.opcode) {
    case opc::recv:
    case opc::recvmsg:
        if (s.flags & compat::sqe_flag::buffer_select)
            return recv_selected(p);
        return socket_call_now(s);
    case opc::send:
    case opc::sendmsg: return socket_call_now(s);
    case opc::accept: {
        auto call = [&] {
            return sys(::accept4(fd, static_cast<sockaddr*>(addr),
                                 reinterpret_cast<socklen_t*>(static_cast<std::uintptr_t>(s.off)),
                                 static_cast<int>(s.accept_flags)));
        };
        if (const FdState& st = fd_state(fd); st.owned || st.adopted) {
            // A listener of ringo's own (made by the engine, or owned by a ringo::Fd)
            // becomes non-blocking for good: several runtimes may accept on it at once,
            // and a mode set for one call alone could be set back under another's call.
            const int fl = ::fcntl(fd, F_GETFL);
            if (fl >= 0 && !(fl & O_NONBLOCK))
                (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
            return call();
        }
        return without_waiting(fd, call);
    }
    case opc::connect: {
        if (p->connecting) {
            int err = 0;
            socklen_t len = sizeof err;
            if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                return -errno;
            if (err == 0) {
                // Writable with no error can also mean "not yet": ask the socket.
                sockaddr_storage peer;
                socklen_t pl = sizeof peer;
                if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) < 0)
                    return errno == ENOTCONN ? -EAGAIN : -errno;
            }
            return -err;
        }
        int r = without_waiting(
            fd, [&] { return sys(::connect(fd, static_cast<const sockaddr*>(addr), static_cast<socklen_t>(s.off))); });
        if (r == -EINPROGRESS || r == -EAGAIN) {
            p->connecting = true;
            return -EAGAIN;
        }
        return r;
    }
    case opc::read:
        if (s.flags & compat::sqe_flag::buffer_select)
            return recv_selected(p);
        if (nowait || s.rw_flags) { // (the caller's RWF_* flags: the kernel answers what it lacks)
            iovec v{addr, s.len};
            return sys(::preadv2(fd, &v, 1, -1, static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
        }
        return sys(::read(fd, addr, s.len));
    case opc::write:
        if (nowait || s.rw_flags) {
            iovec v{addr, s.len};
            return sys(::pwritev2(fd, &v, 1, -1, static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
        }
        return sys(::write(fd, addr, s.len));
    case opc::readv:
        return sys(::preadv2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), -1,
                             static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
    case opc::writev:
        return sys(::pwritev2(fd, static_cast<const iovec*>(addr), static_cast<int>(s.len), -1,
                              static_cast<int>(s.rw_flags) | (nowait ? RWF_NOWAIT : 0)));
    case opc::poll_add: {
        pollfd pf{fd, static_cast<short>(s.poll32_events & 0xffff), 0};
        int r = ::poll(&pf, 1, 0);
        if (r < 0)
            return -errno;
        return r == 0 ? -EAGAIN : (pf.revents & (pf.events | POLLERR | POLLHUP | POLLNVAL));
    }
    case opc::epoll_wait: { // (what is ready now; none: wait for the descriptor's readiness)
        const int r = sys(::epoll_wait(fd, static_cast<epoll_event*>(addr), static_cast<int>(s.len), 0));
        return r == 0 ? -EAGAIN : r;
    }
    default: return -EOPNOTSUPP;
    }
}

// A recv or send with MSG_WAITALL on a stream socket: it goes on until all `len` bytes
// moved (done_io counts them across waits), and ends with what moved at the stream's end
// or an error, as the kernel's request does.
int Engine::waitall_call(Pending* p) {
    io_uring_sqe part = p->sqe;
    for (;;) {
        part.addr = p->sqe.addr + p->done_io;
        part.len = p->sqe.len - p->done_io;
        const int r = after_try(part, socket_call_now(part));
        if (r > 0) {
            p->done_io += static_cast<std::uint32_t>(r);
            if (p->done_io < p->sqe.len)
                continue;
            return static_cast<int>(p->done_io);
        }
        if (r == -EAGAIN)
            return r;
        return p->done_io ? static_cast<int>(p->done_io) : r;
    }
}

bool Engine::waits_for_all(const io_uring_sqe& s) noexcept {
    if ((s.opcode != opc::recv && s.opcode != opc::send) || !(s.msg_flags & MSG_WAITALL) ||
        (s.flags & compat::sqe_flag::buffer_select) || (s.ioprio & compat::recvsend::recv_multishot))
        return false;
    int type = 0;
    socklen_t len = sizeof type;
    return ::getsockopt(s.fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && (type == SOCK_STREAM || type == SOCK_SEQPACKET);
}

// recv into a buffer of the SQE's group, taken from the ring's head as the kernel takes
// it (a buffer is used only when bytes arrive).
int Engine::recv_selected(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    const bool read = s.opcode == opc::read;
    p->cflags = 0;
    if (s.buf_group >= groups.size() || !groups[s.buf_group].br)
        return -ENOBUFS;
    BufGroup& g = groups[s.buf_group];
    const std::uint16_t tail = __atomic_load_n(&g.br->tail, __ATOMIC_ACQUIRE);
    if (tail == g.head)
        return -ENOBUFS;
    const io_uring_buf& b = g.br->bufs[g.head & g.mask];
    const std::uint32_t len = s.len && s.len < b.len ? s.len : b.len;
    void* to = reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.addr));
    int r;
    if (s.opcode == opc::recvmsg && multishot(s)) {
        r = recvmsg_into(s, p->hdr, static_cast<char*>(to), b.len, p->empty);
    } else if (s.opcode == opc::recvmsg) {
        // Single-shot: the caller's msghdr receives the name, the control data and the
        // flags as from a recvmsg(2) whose one iovec is the buffer.
        msghdr m = p->hdr;
        // (An iovec of length 0 takes the whole buffer, as the kernel's.)
        iovec v{to, p->hdr.msg_iovlen && p->hdr_iov.iov_len && p->hdr_iov.iov_len < b.len ? p->hdr_iov.iov_len : b.len};
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        r = sys(::recvmsg(s.fd, &m, static_cast<int>(s.msg_flags) | MSG_DONTWAIT));
        if (r >= 0) {
            // Written back as the kernel writes it (a msghdr it cannot write: -EFAULT): the
            // name's length when there is a name, the control length and the flags.
            static_assert(offsetof(msghdr, msg_flags) == offsetof(msghdr, msg_controllen) + sizeof(m.msg_controllen));
            struct {
                decltype(m.msg_controllen) controllen;
                decltype(m.msg_flags) flags;
            } tail{m.msg_controllen, m.msg_flags};
            if ((p->hdr.msg_name &&
                 !copy_out(s.addr + offsetof(msghdr, msg_namelen), &m.msg_namelen, sizeof m.msg_namelen)) ||
                !copy_out(s.addr + offsetof(msghdr, msg_controllen), &tail, sizeof tail.controllen + sizeof tail.flags))
                r = -EFAULT;
        }
    } else if (!read) {
        r = sys(::recv(s.fd, to, len, static_cast<int>(s.msg_flags) | MSG_DONTWAIT));
    } else if (fd_state(s.fd).kind == Kind::nowait || fd_state(s.fd).kind == Kind::socket) {
        iovec v{to, len};
        r = sys(::preadv2(s.fd, &v, 1, -1, RWF_NOWAIT));
    } else {
        r = sys(::read(s.fd, to, len));
    }
    if (r > 0) {
        ++g.head;
        p->cflags = compat::cqe_f_buffer | (static_cast<std::uint32_t>(b.bid) << compat::cqe_buffer_shift);
    }
    return r;
}

// The msghdr of a recvmsg into a provided buffer, read into its record as the kernel reads
// it before the call: -EFAULT for one it cannot read; for a multishot one, -EOVERFLOW when
// the header, name and control data it asks room for do not add up within an int; for a
// single-shot one, -EINVAL for more than one iovec (the buffer takes the place of the
// one, whose length bounds it).
int Engine::read_msghdr(Pending* p) {
    const io_uring_sqe& s = p->sqe;
    if (!read_user(&p->hdr, s.addr, sizeof p->hdr))
        return -EFAULT;
    if (multishot(s)) {
        const unsigned long long room =
            sizeof(io_uring_recvmsg_out) + static_cast<unsigned long long>(p->hdr.msg_namelen);
        if (p->hdr.msg_controllen > INT_MAX || room + p->hdr.msg_controllen > INT_MAX)
            return -EOVERFLOW;
        return 0;
    }
    if (p->hdr.msg_iovlen > 1)
        return -EINVAL;
    p->hdr_iov = iovec{};
    if (p->hdr.msg_iovlen == 1 &&
        !read_user(&p->hdr_iov, reinterpret_cast<std::uintptr_t>(p->hdr.msg_iov), sizeof p->hdr_iov))
        return -EFAULT;
    p->hdr.msg_iov = &p->hdr_iov;
    return 0;
}

// A recvmsg into a provided buffer lays it out as the kernel does: an io_uring_recvmsg_out
// header, the room the SQE's msghdr asks for the name and the control data, then the
// payload; the result counts all of it.
int Engine::recvmsg_into(const io_uring_sqe& s, const msghdr& user, char* buf, std::uint32_t cap,
                         bool& empty) noexcept {
    const std::size_t nl = user.msg_namelen, cl = user.msg_controllen; // (their sum checked at start)
    const std::size_t head = sizeof(io_uring_recvmsg_out) + nl + cl;
    if (cap < head)
        return -EFAULT;
    msghdr m{};
    m.msg_name = nl ? buf + sizeof(io_uring_recvmsg_out) : nullptr;
    m.msg_namelen = static_cast<socklen_t>(nl);
    m.msg_control = cl ? buf + sizeof(io_uring_recvmsg_out) + nl : nullptr;
    m.msg_controllen = cl;
    iovec v{buf + head, cap - head};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    int r = sys(::recvmsg(s.fd, &m, static_cast<int>(s.msg_flags) | MSG_DONTWAIT | MSG_TRUNC));
    if (r < 0)
        return r;
    empty = r == 0; // the kernel ends a multishot recvmsg there
    io_uring_recvmsg_out out{};
    out.namelen = m.msg_namelen;
    out.controllen = static_cast<std::uint32_t>(m.msg_controllen);
    out.payloadlen = static_cast<std::uint32_t>(r);
    out.flags = static_cast<std::uint32_t>(m.msg_flags);
    std::memcpy(buf, &out, sizeof out);
    const std::size_t got = static_cast<std::size_t>(r) < cap - head ? static_cast<std::size_t>(r) : cap - head;
    return static_cast<int>(head + got);
}

} // namespace ringo::uring::epoll
