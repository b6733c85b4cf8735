// ringo/op/cmd.hpp - IORING_OP_URING_CMD: commands a file's driver interprets (sockets,
// block devices, NVMe character devices, ublk ...).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <ringo/op/base.hpp>

namespace ringo::op {

namespace raw {
/// The fields every uring_cmd has: the file, the driver's command number (sqe->cmd_op),
/// and the rest cleared. The command's own fields are the driver's to define.
inline void prep_uring_cmd(io_uring_sqe* s, FileRef fd, std::uint32_t cmd_op) noexcept {
    prep_raw(s, uring::compat::opcode::uring_cmd, fd.raw(), 0, 0, 0);
    s->cmd_op = cmd_op;
    fd.apply(s);
}
} // namespace raw

/// IORING_OP_URING_CMD (5.19) with a user-supplied command: `fill(io_uring_sqe*)` runs after
/// the common fields are set and writes the driver's own fields (addr, len, addr3 and the
/// 16-byte command area at sqe->cmd on a 64-byte SQE ring). The result is the driver's.
/// -EOPNOTSUPP when the file has no uring_cmd handler (regular files, pipes); an unknown
/// `cmd_op` is the driver's to refuse (sockets: -EOPNOTSUPP, block devices: -EINVAL).
template <class Fill>
struct [[nodiscard]] UringCmd : Op<UringCmd<Fill>> {
    /// The opcode submitted: IORING_OP_URING_CMD.
    static constexpr std::uint8_t opcode = uring::compat::opcode::uring_cmd;
    /// Keeps the arguments for prepare(); op::uring_cmd() makes one.
    UringCmd(FileRef fd, std::uint32_t cmd_op, Fill fill) : fd_(fd), cmd_op_(cmd_op), fill_(std::move(fill)) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) {
        raw::prep_uring_cmd(s, fd_, cmd_op_);
        fill_(s);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    std::uint32_t cmd_op_;
    Fill fill_;
    ///@}
};
/// The `fill` of a command with no fields of its own: uring_cmd(fd, cmd_op).
struct NoCmdFields {
    /// Writes nothing.
    void operator()(io_uring_sqe*) const noexcept {}
};
template <class Fill>
UringCmd<std::decay_t<Fill>> uring_cmd(FileRef fd, std::uint32_t cmd_op, Fill&& fill) {
    return {fd, cmd_op, std::forward<Fill>(fill)};
}
inline UringCmd<NoCmdFields> uring_cmd(FileRef fd, std::uint32_t cmd_op) noexcept {
    return {fd, cmd_op, NoCmdFields{}};
}

/// IORING_OP_URING_CMD socket command (SOCKET_URING_OP_*, 6.7): `cmd_op` is one of
/// uring::compat::socket_cmd; level/optname/optval/optlen as for getsockopt(2). On a file
/// that is not a socket SIOCINQ/SIOCOUTQ are -EOPNOTSUPP; an unknown `cmd_op` too.
///
/// Fallback (see Op): getsockopt and setsockopt that come back -EOPNOTSUPP, from the probe
/// (no IORING_OP_URING_CMD, before 5.19) or from the kernel (no socket commands before 6.7,
/// getsockopt at a level other than SOL_SOCKET, a file that is not a socket), are made again
/// with getsockopt(2) / setsockopt(2), synchronously, and yield that call's result: so they
/// work on every kernel and at every level, and a non-socket is -ENOTSOCK. A registered file
/// has no plain descriptor for that and stays -EOPNOTSUPP; SIOCINQ/SIOCOUTQ do not fall back.
struct [[nodiscard]] CmdSock : Op<CmdSock> {
    /// The opcode submitted: IORING_OP_URING_CMD.
    static constexpr std::uint8_t opcode = uring::compat::opcode::uring_cmd;
    /// Keeps the arguments for prepare(); op::cmd_sock() makes one.
    CmdSock(FileRef fd, std::uint32_t cmd_op, int level, int optname, void* optval, int optlen) noexcept
        : fd_(fd), cmd_op_(cmd_op), level_(level), optname_(optname), optval_(optval), optlen_(optlen) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        raw::prep_uring_cmd(s, fd_, cmd_op_);
        uring::compat::sqe_field::sock_level_optname(s, static_cast<std::uint32_t>(level_),
                                                     static_cast<std::uint32_t>(optname_));
        uring::compat::sqe_field::sock_optval(s, reinterpret_cast<std::uint64_t>(optval_),
                                              static_cast<std::uint32_t>(optlen_));
    }
    /// Whether result `res` (or the probe's -EOPNOTSUPP) means the kernel cannot: then
    /// fallback() runs.
    bool fallback_on(int res) const noexcept {
        return res == -EOPNOTSUPP &&
               (cmd_op_ == uring::compat::socket_cmd::getsockopt || cmd_op_ == uring::compat::socket_cmd::setsockopt);
    }
    /// The call made as a plain system call when the kernel cannot (see Op, Fallback).
    int fallback() const noexcept {
        if (fd_.fixed())
            return -EOPNOTSUPP;
        if (cmd_op_ == uring::compat::socket_cmd::setsockopt)
            return detail::syscall_result(
                ::setsockopt(fd_.raw(), level_, optname_, optval_, static_cast<socklen_t>(optlen_)));
        auto len = static_cast<socklen_t>(optlen_);
        int r = ::getsockopt(fd_.raw(), level_, optname_, optval_, &len);
        return r < 0 ? -errno : static_cast<int>(len); // the option's length, as the CQE
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    std::uint32_t cmd_op_;
    int level_, optname_;
    void* optval_;
    int optlen_;
    ///@}
};
inline CmdSock cmd_sock(FileRef fd, std::uint32_t cmd_op, int level = 0, int optname = 0, void* optval = nullptr,
                        int optlen = 0) noexcept {
    return {fd, cmd_op, level, optname, optval, optlen};
}
/// Bytes waiting to be read on a socket (SIOCINQ as a uring_cmd, 6.7): for TCP the unread
/// bytes, for UDP the size of the next datagram; or -errno (-EINVAL on a listening TCP
/// socket; -EOPNOTSUPP for a protocol without an ioctl handler, e.g. AF_UNIX).
inline CmdSock siocinq(FileRef fd) noexcept { return cmd_sock(fd, uring::compat::socket_cmd::siocinq); }
/// Bytes not yet sent or not yet acknowledged (SIOCOUTQ as a uring_cmd, 6.7), or -errno
/// (as siocinq).
inline CmdSock siocoutq(FileRef fd) noexcept { return cmd_sock(fd, uring::compat::socket_cmd::siocoutq); }
/// getsockopt(2) as a uring_cmd (6.7): the option's length on success (at most `optlen`;
/// the value is copied to `optval`), or -errno (-EFAULT: bad `optval`, -EINVAL: negative
/// `optlen`, -ENOPROTOOPT: unknown option, -ENOTSOCK: not a socket). The kernel's command
/// supports level SOL_SOCKET only; other levels, and kernels without the command, fall back
/// to getsockopt(2) (see CmdSock).
inline CmdSock getsockopt(FileRef fd, int level, int optname, void* optval, int optlen) noexcept {
    return cmd_sock(fd, uring::compat::socket_cmd::getsockopt, level, optname, optval, optlen);
}
/// setsockopt(2) as a uring_cmd (6.7), any level (SOL_SOCKET, IPPROTO_TCP, ...): 0 or -errno
/// (-EFAULT: bad `optval`, -EINVAL: `optlen` too short, -ENOPROTOOPT: unknown option,
/// -ENOTSOCK: not a socket). Kernels without the command fall back to setsockopt(2) (see
/// CmdSock).
inline CmdSock setsockopt(FileRef fd, int level, int optname, const void* optval, int optlen) noexcept {
    return cmd_sock(fd, uring::compat::socket_cmd::setsockopt, level, optname, const_cast<void*>(optval), optlen);
}

/// BLOCK_URING_CMD_DISCARD (6.12): discards [offset, offset+nbytes) of a block device opened
/// for writing; reads of the range then return zeros on devices that zero discarded blocks
/// (loop devices do). 0 or -errno: -EINVAL when offset or length is not a multiple of the
/// logical block size or the range passes the device's end; -EBADF when not open for
/// writing; -EOPNOTSUPP when the device cannot discard, when `fd` is not a block device
/// (regular file, socket), and on kernels before 6.12 (the probe cannot tell these apart:
/// on 6.12+ a read-only descriptor gives -EBADF instead).
struct [[nodiscard]] CmdDiscard : Op<CmdDiscard> {
    /// The opcode submitted: IORING_OP_URING_CMD.
    static constexpr std::uint8_t opcode = uring::compat::opcode::uring_cmd;
    /// Keeps the arguments for prepare(); op::cmd_discard() makes one.
    CmdDiscard(FileRef fd, std::uint64_t off, std::uint64_t n) noexcept : fd_(fd), off_(off), n_(n) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        raw::prep_uring_cmd(s, fd_, uring::compat::block_uring_cmd_discard);
        s->addr = off_;
        s->addr3 = n_;
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    FileRef fd_;
    std::uint64_t off_, n_;
    ///@}
};
inline CmdDiscard cmd_discard(FileRef fd, std::uint64_t offset, std::uint64_t nbytes) noexcept {
    return {fd, offset, nbytes};
}

} // namespace ringo::op
