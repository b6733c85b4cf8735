// tests/fuzz/diff_engines_gen.cpp - the differential fuzzer's grammar of opcodes: which fields
// each opcode gets, and with which values (diff_engines_gen_values.cpp draws the values); the
// SQE flags; a case of a seed and an index (diff_engines_gen.hpp).

#include "diff_engines_gen.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace diffeng {

namespace {

// The descriptors each family of calls mostly gets (the rest of the time: any descriptor, or
// a bad number).
const std::initializer_list<const char*> read_fds = {
    "REG",   "RO",    "DIRECT", "PIPE_R",  "PIPE_R_EMPTY", "PIPE_R_FULL",  "PIPE_R_NB", "UNIX_A",  "UNIX_B",
    "TCP_C", "TCP_S", "UDP",    "EVENTFD", "TIMERFD",      "TIMERFD_IDLE", "MEMFD",     "DEVNULL", "DIR"};
const std::initializer_list<const char*> write_fds = {
    "REG",    "RO",    "DIRECT", "PIPE_W", "PIPE_W_EMPTY", "PIPE_W_FULL", "PIPE_W_NB", "UNIX_A",
    "UNIX_B", "TCP_C", "TCP_S",  "UDP",    "EVENTFD",      "MEMFD",       "DEVNULL",   "PIPE_R"};
const std::initializer_list<const char*> file_fds = {"REG",     "RO",     "DIRECT", "MEMFD",  "DIR",
                                                     "DEVNULL", "PIPE_R", "UNIX_A", "EVENTFD"};
const std::initializer_list<const char*> sock_fds = {"UNIX_A", "UNIX_B",  "TCP_C", "TCP_S",  "TCP_P",
                                                     "LISTEN", "TCP_NEW", "UDP",   "PIPE_R", "REG"};
const std::initializer_list<const char*> recv_fds = {"UNIX_A", "UNIX_B", "TCP_C", "TCP_S", "UDP", "TCP_NEW", "LISTEN"};
const std::initializer_list<const char*> zc_fds = {"UNIX_A", "UNIX_B",  "TCP_C",  "TCP_S", "UDP",
                                                   "UDP",    "TCP_NEW", "PIPE_W", "REG"};
const std::initializer_list<const char*> send_fds = {"UNIX_A", "UNIX_B", "TCP_C", "TCP_S", "UDP", "TCP_NEW", "TCP_P"};

} // namespace

Case Gen::make() {
    const unsigned n = std::min(max, static_cast<unsigned>(r.pct(30) ? 1 : r.pct(50) ? 2 : r.pct(55) ? 3 : 4));
    nsqe = static_cast<int>(n);
    for (cur = 0; cur < nsqe; ++cur) {
        Sqe q;
        // (A futex wait is followed by a wake more often than chance has it.)
        // (and an SQE with IOSQE_IO_LINK by a link timeout).
        const bool wake = waited && r.pct(60);
        const bool lt = !wake && linked && r.pct(40);
        q.opcode = wake ? opc::futex_wake : lt ? opc::link_timeout : op_names[r.below(op_count)].op;
        waited = q.opcode == opc::futex_wait || q.opcode == opc::futex_waitv;
        fill(q);
        sqe_flags(q);
        namespace sf = ringo::uring::compat::sqe_flag;
        linked = q.f[f_flags].is_num(sf::io_link) || q.f[f_flags].is_num(sf::io_hardlink);
        c.sqes.push_back(q);
    }
    return c;
}

void Gen::fill(Sqe& q) {
    Val* f = q.f;
    switch (q.opcode) {
    case opc::nop:
        if (r.pct(35)) {
            f[f_opflags] = Val::n(r.pick<std::uint64_t>({1, 2, 3, 0x100000}));
            f[f_len] = Val::n(r.pick<std::uint64_t>({0, 5, 0xfffffff2u}));
            f[f_fd] = fd_from({"REG", "PIPE_R"});
        }
        break;
    case opc::read:
    case opc::write: {
        const bool w = q.opcode == opc::write;
        f[f_fd] = fd_from(w ? write_fds : read_fds);
        const std::uint32_t len = length(r.pick<std::uint32_t>({8, 16, 100, 4096, 8192}));
        f[f_len] = Val::n(len);
        f[f_addr] = buffer(len, w);
        f[f_off] = offset();
        f[f_opflags] = rw_flags();
        f[f_ioprio] = ioprio_rw();
        break;
    }
    case opc::readv:
    case opc::writev: {
        const bool w = q.opcode == opc::writev;
        f[f_fd] = fd_from(w ? write_fds : read_fds);
        const std::uint64_t cnt = iov_count();
        f[f_len] = Val::n(cnt);
        f[f_addr] = iovec(cnt, r.pick<std::uint64_t>({8, 16, 100, 4096}), w);
        f[f_off] = offset();
        f[f_opflags] = rw_flags();
        f[f_ioprio] = ioprio_rw();
        break;
    }
    case opc::fsync:
        f[f_fd] = fd_from(file_fds);
        f[f_opflags] = Val::n(r.pct(75) ? 0 : r.pick<std::uint64_t>({1, 2}));
        if (r.pct(15)) {
            f[f_off] = Val::n(100);
            f[f_len] = Val::n(4096);
        }
        break;
    case opc::sync_file_range:
        f[f_fd] = fd_from(file_fds);
        f[f_off] = offset();
        f[f_len] = Val::n(r.pick<std::uint64_t>({0, 4096, 0xffffffffu}));
        f[f_opflags] = Val::n(r.pick<std::uint64_t>({0, 1, 2, 4, 7, 8}));
        break;
    case opc::poll_add:
        f[f_fd] = r.pct(88) ? Val::fd(env_fd_names[r.below(env_count)]) : bad_fd();
        f[f_opflags] = Val::n(r.pick<std::uint64_t>({POLLIN, POLLIN, POLLOUT, POLLIN | POLLOUT, POLLPRI, POLLRDHUP, 0,
                                                     EPOLLET | POLLIN, EPOLLONESHOT | POLLIN, 0xffffffffu}));
        f[f_len] = Val::n(r.pct(65) ? 0 : r.pick<std::uint64_t>({1, 8, 9, 0x100}));
        break;
    case opc::poll_remove:
        f[f_addr] = ud_target();
        if (r.pct(30)) {
            f[f_len] = Val::n(r.pick<std::uint64_t>({2, 4, 6, 0x100}));
            f[f_opflags] = Val::n(r.pick<std::uint64_t>({POLLIN, POLLOUT}));
            f[f_off] = Val::n(0x7777);
        }
        break;
    case opc::sendmsg:
    case opc::recvmsg: {
        const bool s = q.opcode == opc::sendmsg;
        f[f_fd] = fd_from(s ? send_fds : recv_fds);
        f[f_addr] = msghdr(s);
        f[f_opflags] = msg_flags(s);
        if (r.pct(10))
            f[f_ioprio] = Val::n(r.pick<std::uint64_t>({1, 2, 4, 16}));
        break;
    }
    case opc::timeout:
        f[f_addr] = timespec();
        f[f_len] = Val::n(r.pct(90) ? 1 : r.pick<std::uint64_t>({0, 2}));
        f[f_off] = Val::n(r.pct(80) ? 0 : r.pick<std::uint64_t>({1, 2}));
        f[f_opflags] = Val::n(r.pct(55) ? 0 : r.pick<std::uint64_t>({1, 4, 8, 32, 64, 9, 0x400}));
        break;
    case opc::link_timeout: // (the same timespec and flags as a timeout's; count and off unused)
        f[f_addr] = timespec();
        f[f_len] = Val::n(r.pct(90) ? 1 : r.pick<std::uint64_t>({0, 2}));
        if (r.pct(5))
            f[f_off] = Val::n(1);
        f[f_opflags] = Val::n(r.pct(55) ? 0 : r.pick<std::uint64_t>({1, 4, 8, 32, 9, 2, 0x400}));
        break;
    case opc::timeout_remove:
        f[f_addr] = ud_target();
        if (r.pct(35)) {
            // (0x12: IORING_TIMEOUT_UPDATE | IORING_LINK_TIMEOUT_UPDATE, which finds a link timeout)
            f[f_opflags] = Val::n(r.pick<std::uint64_t>({2, 2, 0x12, 0x12, 0x10, 0x13, 0x400}));
            f[f_off] = timespec();
        }
        break;
    case opc::accept: {
        f[f_fd] = fd_from({"LISTEN", "LISTEN", "LISTEN", "TCP_NEW", "TCP_C", "UNIX_A", "UDP", "REG"});
        const auto x = r.below(100);
        if (x < 55) {
            f[f_addr] = sockaddr({"out"});
            f[f_off] = r.pct(90) ? Val::obj(add("u32", {{"v", Val::n(r.pick<std::uint64_t>({128, 128, 16, 0, 1000}))}}))
                                 : bad_ptr();
        } else if (x < 90) {
            // no address asked for
        } else {
            f[f_addr] = bad_ptr();
            f[f_off] = r.pct(50) ? bad_ptr() : Val::obj(add("u32", {{"v", Val::n(128)}}));
        }
        f[f_opflags] = Val::n(r.pct(70) ? 0 : r.pick<std::uint64_t>({SOCK_NONBLOCK, SOCK_CLOEXEC, 1}));
        f[f_ioprio] = Val::n(r.pct(80) ? 0 : r.pick<std::uint64_t>({1, 2, 4}));
        f[f_fi] = file_index();
        break;
    }
    case opc::async_cancel:
        f[f_addr] = ud_target();
        f[f_opflags] = Val::n(r.pct(50) ? 0 : r.pick<std::uint64_t>({1, 2, 4, 3, 16, 32, 0x1000}));
        if (r.pct(40))
            f[f_fd] = fd_from({"PIPE_R_EMPTY", "UNIX_B", "TCP_S", "LISTEN"});
        break;
    case opc::connect: {
        f[f_fd] = fd_from({"TCP_NEW", "TCP_NEW", "TCP_NEW", "TCP_C", "UDP", "UNIX_B", "REG"});
        const char* k = r.pick({"listen", "listen", "refused", "udp", "unix", "badfam"});
        f[f_addr] = r.pct(90) ? Val::obj(add("sa", {}, k)) : bad_ptr();
        f[f_off] =
            Val::n(r.pct(80) ? (std::strcmp(k, "unix") == 0 ? 110 : 16) : r.pick<std::uint64_t>({0, 4, 128, 1000}));
        break;
    }
    case opc::fallocate:
        f[f_fd] = fd_from(file_fds);
        f[f_len] = Val::n(r.pct(70) ? 0 : r.pick<std::uint64_t>({1, 3, 0x100}));
        f[f_off] = Val::n(r.pick<std::uint64_t>({0, 100, static_cast<std::uint64_t>(-1)}));
        // (Lengths stay small: a memfd has no size limit, and fallocate really allocates.)
        f[f_addr] = Val::n(r.pick<std::uint64_t>({4096, 100, 0, static_cast<std::uint64_t>(-1), 1u << 20}));
        break;
    case opc::openat:
        f[f_fd] = dirfd();
        f[f_addr] = path();
        f[f_opflags] = open_flags();
        f[f_len] = Val::n(r.pick<std::uint64_t>({0644, 0644, 0, 0777, 0xffffffffu}));
        f[f_fi] = file_index();
        break;
    case opc::openat2: {
        f[f_fd] = dirfd();
        f[f_addr] = path();
        std::vector<std::pair<std::string, Val>> how{
            {"flags", open_flags()},
            {"mode", Val::n(r.pick<std::uint64_t>({0644, 0, 0, 0xffffffffu}))},
            {"resolve", Val::n(r.pct(65) ? 0 : r.pick<std::uint64_t>({1, 4, 8, 0x10, 0x20, 0x1000}))}};
        if (r.pct(5))
            how.emplace_back("tail", Val::n(1));
        f[f_off] = r.pct(92) ? Val::obj(add("how", how)) : bad_ptr();
        f[f_len] = Val::n(r.pct(85) ? 24 : r.pick<std::uint64_t>({0, 16, 32}));
        f[f_fi] = file_index();
        break;
    }
    case opc::close:
        f[f_fd] = r.pct(85) ? Val::fd(env_fd_names[r.below(env_count)]) : bad_fd();
        f[f_fi] = file_index();
        break;
    case opc::statx: {
        const bool empty = r.pct(30);
        if (empty) {
            f[f_fd] = fd_from({"REG", "DIRECT", "PIPE_R", "UNIX_A", "MEMFD", "DIR", "EVENTFD", "DEVNULL"});
            f[f_addr] = r.pct(90) ? Val::obj(add("str", {}, "")) : bad_ptr();
            f[f_opflags] = Val::n(r.pct(85) ? AT_EMPTY_PATH : AT_EMPTY_PATH | AT_STATX_FORCE_SYNC);
        } else {
            f[f_fd] = dirfd();
            f[f_addr] = r.pct(5) ? Val::obj(add("str", {}, "/")) : path(false);
            f[f_opflags] =
                Val::n(r.pct(60) ? 0
                                 : r.pick<std::uint64_t>({AT_SYMLINK_NOFOLLOW, AT_STATX_FORCE_SYNC, AT_STATX_DONT_SYNC,
                                                          AT_NO_AUTOMOUNT, AT_EMPTY_PATH, 0x80000000u}));
        }
        f[f_len] = Val::n(r.pct(75) ? 0x7ff : r.pick<std::uint64_t>({0xfff, 0, 0x80000000u}));
        f[f_off] = r.pct(90) ? Val::obj(add("buf", {{"size", Val::n(256)}})) : bad_ptr();
        break;
    }
    case opc::fadvise:
        f[f_fd] = fd_from(file_fds);
        f[f_off] = Val::n(r.pick<std::uint64_t>({0, 100, static_cast<std::uint64_t>(-1)}));
        f[f_len] = Val::n(r.pick<std::uint64_t>({0, 4096}));
        f[f_opflags] = Val::n(r.pick<std::uint64_t>({0, 1, 2, 3, 4, 5, 100}));
        break;
    case opc::send:
    case opc::recv: {
        const bool s = q.opcode == opc::send;
        f[f_fd] = fd_from(s ? send_fds : recv_fds);
        const std::uint32_t len = length(r.pick<std::uint32_t>({4, 16, 100, 4096}));
        f[f_len] = Val::n(len);
        f[f_addr] = buffer(len, s);
        f[f_opflags] = msg_flags(s);
        if (s && r.pct(15)) {
            f[f_off] = sockaddr({"udp", "refused", "listen", "badfam"});
            f[f_fi] = Val::n(r.pick<std::uint64_t>({16, 16, 0, 200}));
        }
        if (r.pct(12))
            f[f_ioprio] = Val::n(r.pick<std::uint64_t>({1, 2, 4, 16}));
        break;
    }
    case opc::epoll_ctl:
        f[f_fd] = r.pct(80) ? Val::fd("EPOLL") : fd_from({"REG", "PIPE_R"});
        f[f_len] = Val::n(r.pick<std::uint64_t>({EPOLL_CTL_ADD, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, 0, 9}));
        f[f_off] = r.pct(90) ? Val::fd(env_fd_names[r.below(env_count)]) : bad_fd();
        f[f_addr] =
            r.pct(88) ? Val::obj(add(
                            "epev", {{"events", Val::n(r.pick<std::uint64_t>({EPOLLIN, EPOLLOUT, EPOLLIN | EPOLLET,
                                                                              EPOLLEXCLUSIVE | EPOLLIN, 0xffffffffu}))},
                                     {"data", Val::n(7)}}))
                      : bad_ptr();
        break;
    case opc::shutdown:
        f[f_fd] = fd_from(sock_fds);
        f[f_len] = Val::n(r.pick<std::uint64_t>({SHUT_RD, SHUT_WR, SHUT_RDWR, 3, 99}));
        break;
    case opc::renameat:
    case opc::linkat:
        f[f_fd] = dirfd();
        f[f_addr] = path(false);
        f[f_len] = dirfd();
        f[f_off] = path();
        if (q.opcode == opc::renameat)
            f[f_opflags] = Val::n(r.pct(70) ? 0 : r.pick<std::uint64_t>({1, 2, 4, 8}));
        else
            f[f_opflags] = Val::n(r.pct(70) ? 0 : r.pick<std::uint64_t>({AT_SYMLINK_FOLLOW, AT_EMPTY_PATH, 1}));
        break;
    case opc::unlinkat:
        f[f_fd] = dirfd();
        f[f_addr] = path(false);
        f[f_opflags] = Val::n(r.pct(65) ? 0 : r.pick<std::uint64_t>({AT_REMOVEDIR, AT_REMOVEDIR, 1}));
        break;
    case opc::mkdirat:
        f[f_fd] = dirfd();
        f[f_addr] = path();
        f[f_len] = Val::n(r.pick<std::uint64_t>({0755, 0755, 0, 07777}));
        break;
    case opc::symlinkat:
        f[f_fd] = dirfd();
        f[f_addr] = r.pct(90) ? Val::obj(add("str", {}, r.pick({"data", "nowhere", "sub", ""}))) : bad_ptr();
        f[f_off] = path();
        break;
    case opc::socket:
        f[f_fd] = Val::i(r.pick<std::int64_t>({AF_INET, AF_INET, AF_UNIX, AF_INET6, 9999, -1}));
        f[f_off] = Val::n(r.pick<std::uint64_t>(
            {SOCK_STREAM, SOCK_STREAM, SOCK_DGRAM, SOCK_STREAM | SOCK_NONBLOCK, SOCK_STREAM | SOCK_CLOEXEC, 99}));
        f[f_len] = Val::n(r.pick<std::uint64_t>({0, 0, 6, 17, 255}));
        f[f_opflags] = Val::n(r.pct(95) ? 0 : 1);
        f[f_fi] = file_index();
        break;
    case opc::ftruncate:
        f[f_fd] = fd_from(file_fds);
        f[f_off] = Val::n(r.pick<std::uint64_t>({0, 100, 8192, static_cast<std::uint64_t>(-1), 1ull << 40}));
        break;
    case opc::bind: {
        f[f_fd] = fd_from({"TCP_NEW", "TCP_NEW", "UDP", "LISTEN", "UNIX_A", "REG"});
        const char* k = r.pick({"any", "any", "unix", "badfam", "listen"});
        f[f_addr] = r.pct(90) ? Val::obj(add("sa", {}, k)) : bad_ptr();
        f[f_off] = Val::n(r.pct(80) ? (std::strcmp(k, "unix") == 0 ? 110 : 16) : r.pick<std::uint64_t>({0, 4, 1000}));
        break;
    }
    case opc::listen:
        f[f_fd] = fd_from({"TCP_NEW", "TCP_NEW", "LISTEN", "UDP", "UNIX_A", "TCP_C", "REG"});
        f[f_len] = Val::n(r.pick<std::uint64_t>({0, 1, 128, 0xffffffffu}));
        break;
    case opc::splice:
    case opc::tee: {
        const bool tee = q.opcode == opc::tee;
        f[f_fi] = tee ? fd_from({"PIPE_R", "PIPE_R_EMPTY", "PIPE_R_FULL", "PIPE_R_NB", "REG"})
                      : fd_from({"PIPE_R", "PIPE_R_EMPTY", "PIPE_R_FULL", "REG", "MEMFD", "UNIX_A", "DEVNULL"});
        f[f_fd] = tee ? fd_from({"PIPE_W", "PIPE_W_EMPTY", "PIPE_W_FULL", "PIPE_W_NB", "DEVNULL"})
                      : fd_from({"PIPE_W", "PIPE_W_EMPTY", "PIPE_W_FULL", "REG", "DEVNULL", "UNIX_B"});
        if (!tee) {
            f[f_addr] = Val::n(r.pct(70) ? static_cast<std::uint64_t>(-1) : r.pick<std::uint64_t>({0, 100}));
            f[f_off] = Val::n(r.pct(70) ? static_cast<std::uint64_t>(-1) : r.pick<std::uint64_t>({0, 100}));
        }
        f[f_len] = Val::n(r.pick<std::uint64_t>({0, 16, 4096, 65536}));
        f[f_opflags] = Val::n(r.pct(65) ? 0 : r.pick<std::uint64_t>({1, 2, 0x80000000u, 0x100}));
        break;
    }
    case opc::madvise: {
        // A page-aligned buffer of the arena (lengths stay within the arena: advice such as
        // MADV_DONTNEED over the child's own heap would crash both sides alike).
        const auto x = r.below(100);
        if (x < 72)
            f[f_addr] = Val::obj(add("buf", {{"size", Val::n(8192)}, {"align", Val::n(4096)}, {"pat", Val::n(1)}}),
                                 r.pct(90) ? 0 : 100);
        else if (x < 80)
            f[f_addr] = Val::ptr("protnone");
        else
            f[f_addr] = bad_ptr();
        // (The length is in off, or in len when off is 0. The huge ones, in off, wrap around
        // from any address but null: -EINVAL; from null, 2^64-4096 would reach everything.)
        const std::uint64_t len = r.pick<std::uint64_t>(
            {4096, 8192, 8192, 100, 0, 12288, static_cast<std::uint64_t>(-1), 0xfffffffffffff000ull});
        const bool huge = len > 12288;
        f[huge || r.pct(70) ? f_off : f_len] = Val::n(len);
        if (huge && f[f_addr].is_num(0))
            f[f_addr] = Val::ptr("unmapped");
        f[f_opflags] = Val::n(r.pick<std::uint64_t>(
            {MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED, MADV_DONTNEED, MADV_COLD,
             MADV_PAGEOUT, MADV_POPULATE_READ, MADV_POPULATE_WRITE, MADV_DONTDUMP, MADV_REMOVE, 999}));
        if (r.pct(5))
            f[r.pct(50) ? f_fi : f_bufidx] = Val::n(1); // (splice_fd_in, buf_index: the kernel wants 0)
        break;
    }
    case opc::setxattr:
    case opc::getxattr:
    case opc::fsetxattr:
    case opc::fgetxattr: {
        const bool set = q.opcode == opc::setxattr || q.opcode == opc::fsetxattr;
        if (q.opcode == opc::fsetxattr || q.opcode == opc::fgetxattr)
            f[f_fd] = fd_from(file_fds);
        else
            f[f_addr3] = path(false);
        f[f_addr] = xattr_name();
        // The value (a size past XATTR_SIZE_MAX, 65536, is -E2BIG for a set).
        const std::uint32_t len = length(r.pick<std::uint32_t>({5, 16, 100, 65537}));
        f[f_len] = Val::n(len);
        f[f_off] = buffer(len, set);
        if (set)
            f[f_opflags] = Val::n(r.pct(60) ? 0 : r.pick<std::uint64_t>({XATTR_CREATE, XATTR_REPLACE, 3, 4, 0x100}));
        else if (r.pct(10))
            f[f_opflags] = Val::n(r.pick<std::uint64_t>({XATTR_CREATE, 0x100}));
        break;
    }
    case opc::epoll_wait: {
        const auto x = r.below(100);
        f[f_fd] = x < 55 ? Val::fd("EPOLL_READY") : x < 75 ? Val::fd("EPOLL") : fd_from({"REG", "PIPE_R", "EVENTFD"});
        // (EP_MAX_EVENTS is INT_MAX / 12: 0xAAAAAAA events are allowed, one more is not.)
        const std::uint64_t max = r.pct(80) ? r.pick<std::uint64_t>({1, 2, 4, 16})
                                            : r.pick<std::uint64_t>({0, 0xAAAAAAA, 0xAAAAAAB, 0xffffffffu});
        f[f_len] = Val::n(max);
        f[f_addr] = buffer(12 * std::min<std::uint64_t>(max, 16), false);
        if (r.pct(6))
            f[r.pick({f_off, f_opflags, f_bufidx, f_fi})] = Val::n(1); // (fields the kernel wants 0)
        break;
    }
    case opc::pipe:
        f[f_addr] = r.pct(88) ? Val::obj(add("buf", {{"size", Val::n(8)}})) : bad_ptr();
        f[f_opflags] =
            Val::n(r.pct(60) ? 0
                             : r.pick<std::uint64_t>({O_CLOEXEC, O_NONBLOCK, O_NONBLOCK | O_CLOEXEC, O_DIRECT,
                                                      O_EXCL /*O_NOTIFICATION_PIPE*/, O_RDWR, 0x80000000u}));
        f[f_fi] = file_index();
        if (r.pct(6))
            f[r.pct(50) ? f_fd : f_off] = Val::n(1); // (fields the kernel wants 0)
        break;
    case opc::futex_wait:
    case opc::futex_wake: {
        f[f_fd] = futex_flags(); // (not a descriptor: the futex2 flags)
        f[f_addr] = futex_addr();
        if (q.opcode == opc::futex_wake)
            f[f_off] = Val::n(r.pct(85) ? r.pick<std::uint64_t>({1, 1, 2, 0x7fffffff})
                                        : r.pick<std::uint64_t>({0, 0xffffffffu, 1ull << 32}));
        else // (a value the word holds waits: until a wake of the case, or the harness's cancel)
            f[f_off] = Val::n(r.pct(75) ? futex_value : r.pick<std::uint64_t>({futex_value + 1, 1ull << 32}));
        f[f_addr3] = Val::n(r.pct(75) ? ringo::uring::compat::futex2::bitset_match_any
                                      : r.pick<std::uint64_t>({1, 2, 0, 1ull << 32}));
        if (r.pct(5))
            f[r.pick({f_len, f_opflags, f_bufidx, f_fi})] = Val::n(1); // (fields the kernel wants 0)
        break;
    }
    case opc::send_zc:
    case opc::sendmsg_zc: {
        f[f_fd] = fd_from(zc_fds);
        f[f_ioprio] = zc_flags();
        f[f_opflags] = msg_flags(true);
        if (q.opcode == opc::sendmsg_zc) {
            f[f_addr] = msghdr(true);
        } else if (f[f_ioprio].num & (1u << 5)) { // IORING_SEND_VECTORIZED: addr is an iovec array
            const std::uint64_t cnt = r.pct(80) ? r.pick<std::uint64_t>({1, 2, 3}) : iov_count();
            f[f_len] = Val::n(cnt);
            f[f_addr] = iovec(cnt, r.pick<std::uint64_t>({16, 100, 4096}), true);
        } else {
            const std::uint32_t len = length(r.pick<std::uint32_t>({4, 16, 100, 4096}));
            f[f_len] = Val::n(len);
            f[f_addr] = buffer(len, true);
        }
        if (q.opcode == opc::send_zc && r.pct(15)) {
            f[f_off] = sockaddr({"udp", "refused", "listen", "badfam"});
            f[f_fi] = Val::n(r.pick<std::uint64_t>({16, 16, 0, 200}));
        } else if (r.pct(4)) {
            f[r.pct(50) ? f_off : f_fi] = Val::n(1); // (sendmsg_zc wants both 0)
        }
        if (r.pct(4))
            f[f_addr3] = Val::n(1);
        break;
    }
    case opc::waitid: {
        // (len: the id type, fd: the id, file_index: the options, addr2: the siginfo_t)
        const auto x = r.below(100);
        if (x < 70) {
            f[f_len] = Val::n(P_PID);
            f[f_fd] =
                r.pct(90) ? Val::fd(r.pick({"KID", "KID", "KID_LIVE"})) : Val::i(r.pick<std::int64_t>({0, -1, 999999}));
        } else if (x < 82) {
            f[f_len] = Val::n(P_ALL);
        } else if (x < 88) {
            f[f_len] = Val::n(P_PGID); // (0: the caller's group, which its children are in)
        } else {
            f[f_len] = Val::n(r.pick<std::uint64_t>({P_PIDFD, 7, 0xffffffffu}));
            f[f_fd] = r.pct(50) ? Val::fd("KID") : fd_from({"REG", "PIPE_R"});
        }
        f[f_fi] = waitid_options();
        f[f_off] = r.pct(85)   ? Val::obj(add("buf", {{"size", Val::n(128)}, {"siginfo", Val::n(1)}}))
                   : r.pct(50) ? Val::n(0)
                               : bad_ptr();
        if (r.pct(5))
            f[r.pick({f_addr, f_opflags, f_bufidx})] = Val::n(1); // (fields the kernel wants 0)
        break;
    }
    case opc::futex_waitv: {
        const std::uint64_t n = r.pct(90) ? 1 + r.below(4) : r.pick<std::uint64_t>({0, 129});
        f[f_len] = Val::n(n);
        f[f_addr] = r.pct(92) ? futex_waitv(n) : bad_ptr();
        if (r.pct(6))
            f[r.pick({f_fd, f_off, f_opflags, f_fi})] = Val::n(1); // (fields the kernel wants 0)
        break;
    }
    default: break;
    }
    // Now and then a non-zero reserved or unused field, which io_uring refuses.
    if (r.pct(3)) {
        const int which = static_cast<int>(r.below(3));
        q.f[which == 0 ? f_bufidx : which == 1 ? f_pers : f_addr3] = Val::n(1);
    }
}

void Gen::sqe_flags(Sqe& q) {
    const auto x = r.below(100);
    std::uint64_t fl = 0;
    if (x < 68)
        fl = 0;
    else if (x < 84)
        fl = ringo::uring::compat::sqe_flag::io_link;
    else if (x < 87)
        fl = ringo::uring::compat::sqe_flag::io_hardlink;
    else if (x < 90)
        fl = ringo::uring::compat::sqe_flag::async;
    else if (x < 92)
        fl = ringo::uring::compat::sqe_flag::io_drain;
    else if (x < 95)
        fl = ringo::uring::compat::sqe_flag::cqe_skip_success;
    else if (x < 97)
        fl = ringo::uring::compat::sqe_flag::fixed_file;
    else if (x < 99)
        fl = ringo::uring::compat::sqe_flag::buffer_select;
    else
        fl = 0x80; // no such flag
    q.f[f_flags] = Val::n(fl);
}

// Case INDEX of SEED: its SQEs (at most max_sqes) and their objects.
Case generate(std::uint64_t seed, std::uint64_t index, unsigned max_sqes) { return Gen(seed, index, max_sqes).make(); }

} // namespace diffeng
