// ringo/uring/compat.hpp - io_uring ABI constants newer than the installed liburing.
//
// Debian 12 ships liburing 2.3 with kernel headers from 6.1; the kernels ringo runs on
// (6.18 here) know many more opcodes and flags. These numbers are kernel ABI and never
// change, so ringo names them in its own namespace: a newer liburing's own definitions
// do not collide, and code that uses these names builds against either.
#pragma once

#include <cstdint>

namespace ringo::uring::compat {

// Opcodes (enum io_uring_op), by kernel ABI number.
namespace opcode {
inline constexpr std::uint8_t nop = 0;
inline constexpr std::uint8_t readv = 1;
inline constexpr std::uint8_t writev = 2;
inline constexpr std::uint8_t fsync = 3;
inline constexpr std::uint8_t read_fixed = 4;
inline constexpr std::uint8_t write_fixed = 5;
inline constexpr std::uint8_t poll_add = 6;
inline constexpr std::uint8_t poll_remove = 7;
inline constexpr std::uint8_t sync_file_range = 8;
inline constexpr std::uint8_t sendmsg = 9;
inline constexpr std::uint8_t recvmsg = 10;
inline constexpr std::uint8_t timeout = 11;
inline constexpr std::uint8_t timeout_remove = 12;
inline constexpr std::uint8_t accept = 13;
inline constexpr std::uint8_t async_cancel = 14;
inline constexpr std::uint8_t link_timeout = 15;
inline constexpr std::uint8_t connect = 16;
inline constexpr std::uint8_t fallocate = 17;
inline constexpr std::uint8_t openat = 18;
inline constexpr std::uint8_t close = 19;
inline constexpr std::uint8_t files_update = 20;
inline constexpr std::uint8_t statx = 21;
inline constexpr std::uint8_t read = 22;
inline constexpr std::uint8_t write = 23;
inline constexpr std::uint8_t fadvise = 24;
inline constexpr std::uint8_t madvise = 25;
inline constexpr std::uint8_t send = 26;
inline constexpr std::uint8_t recv = 27;
inline constexpr std::uint8_t openat2 = 28;
inline constexpr std::uint8_t epoll_ctl = 29;
inline constexpr std::uint8_t splice = 30;
inline constexpr std::uint8_t provide_buffers = 31;
inline constexpr std::uint8_t remove_buffers = 32;
inline constexpr std::uint8_t tee = 33;
inline constexpr std::uint8_t shutdown = 34;
inline constexpr std::uint8_t renameat = 35;
inline constexpr std::uint8_t unlinkat = 36;
inline constexpr std::uint8_t mkdirat = 37;
inline constexpr std::uint8_t symlinkat = 38;
inline constexpr std::uint8_t linkat = 39;
inline constexpr std::uint8_t msg_ring = 40;
inline constexpr std::uint8_t fsetxattr = 41;
inline constexpr std::uint8_t setxattr = 42;
inline constexpr std::uint8_t fgetxattr = 43;
inline constexpr std::uint8_t getxattr = 44;
inline constexpr std::uint8_t socket = 45;
inline constexpr std::uint8_t uring_cmd = 46;
inline constexpr std::uint8_t send_zc = 47;
inline constexpr std::uint8_t sendmsg_zc = 48;
inline constexpr std::uint8_t read_multishot = 49;   // 6.7
inline constexpr std::uint8_t waitid = 50;           // 6.7
inline constexpr std::uint8_t futex_wait = 51;       // 6.7
inline constexpr std::uint8_t futex_wake = 52;       // 6.7
inline constexpr std::uint8_t futex_waitv = 53;      // 6.7
inline constexpr std::uint8_t fixed_fd_install = 54; // 6.8
inline constexpr std::uint8_t ftruncate = 55;        // 6.9
inline constexpr std::uint8_t bind = 56;             // 6.11
inline constexpr std::uint8_t listen = 57;           // 6.11
inline constexpr std::uint8_t recv_zc = 58;          // 6.15
inline constexpr std::uint8_t epoll_wait = 59;       // 6.15
inline constexpr std::uint8_t readv_fixed = 60;      // 6.15
inline constexpr std::uint8_t writev_fixed = 61;     // 6.15
inline constexpr std::uint8_t pipe = 62;             // 6.16
inline constexpr std::uint8_t nop128 = 63;           // 6.18
inline constexpr std::uint8_t uring_cmd128 = 64;     // 6.18
/// One past the highest opcode ringo knows; the probe table is sized by it.
inline constexpr std::uint8_t known_last = 65;
} // namespace opcode

// io_uring_setup() flags (IORING_SETUP_*).
namespace setup {
inline constexpr std::uint32_t iopoll = 1u << 0;
inline constexpr std::uint32_t sqpoll = 1u << 1;
inline constexpr std::uint32_t sq_aff = 1u << 2;
inline constexpr std::uint32_t cqsize = 1u << 3;
inline constexpr std::uint32_t clamp = 1u << 4;
inline constexpr std::uint32_t attach_wq = 1u << 5;
inline constexpr std::uint32_t r_disabled = 1u << 6;
inline constexpr std::uint32_t submit_all = 1u << 7;
inline constexpr std::uint32_t coop_taskrun = 1u << 8;
inline constexpr std::uint32_t taskrun_flag = 1u << 9;
inline constexpr std::uint32_t sqe128 = 1u << 10;
inline constexpr std::uint32_t cqe32 = 1u << 11;
inline constexpr std::uint32_t single_issuer = 1u << 12;
inline constexpr std::uint32_t defer_taskrun = 1u << 13;
inline constexpr std::uint32_t no_mmap = 1u << 14;        // 6.5
inline constexpr std::uint32_t registered_fd_only = 1u << 15; // 6.5
inline constexpr std::uint32_t no_sqarray = 1u << 16;     // 6.6
inline constexpr std::uint32_t hybrid_iopoll = 1u << 17;  // 6.13
} // namespace setup

// Feature bits reported in io_uring_params::features (IORING_FEAT_*).
namespace feat {
inline constexpr std::uint32_t single_mmap = 1u << 0;
inline constexpr std::uint32_t nodrop = 1u << 1;
inline constexpr std::uint32_t submit_stable = 1u << 2;
inline constexpr std::uint32_t rw_cur_pos = 1u << 3;
inline constexpr std::uint32_t cur_personality = 1u << 4;
inline constexpr std::uint32_t fast_poll = 1u << 5;
inline constexpr std::uint32_t poll_32bits = 1u << 6;
inline constexpr std::uint32_t sqpoll_nonfixed = 1u << 7;
inline constexpr std::uint32_t ext_arg = 1u << 8;
inline constexpr std::uint32_t native_workers = 1u << 9;
inline constexpr std::uint32_t rsrc_tags = 1u << 10;
inline constexpr std::uint32_t cqe_skip = 1u << 11;
inline constexpr std::uint32_t linked_file = 1u << 12;
inline constexpr std::uint32_t reg_reg_ring = 1u << 13;   // 6.3
inline constexpr std::uint32_t recvsend_bundle = 1u << 14; // 6.10
inline constexpr std::uint32_t min_timeout = 1u << 15;    // 6.12
inline constexpr std::uint32_t rw_attr = 1u << 16;        // 6.14
inline constexpr std::uint32_t no_iowait = 1u << 17;      // 6.15
} // namespace feat

// io_uring_enter() flags.
namespace enter {
inline constexpr std::uint32_t getevents = 1u << 0;
inline constexpr std::uint32_t sq_wakeup = 1u << 1;
inline constexpr std::uint32_t sq_wait = 1u << 2;
inline constexpr std::uint32_t ext_arg = 1u << 3;
inline constexpr std::uint32_t registered_ring = 1u << 4;
} // namespace enter

// SQ ring flags (*sq.kflags).
inline constexpr std::uint32_t sq_need_wakeup = 1u << 0;
inline constexpr std::uint32_t sq_cq_overflow = 1u << 1;
inline constexpr std::uint32_t sq_taskrun = 1u << 2;

// io_uring_register() opcodes newer than liburing 2.3's wrappers.
namespace reg {
inline constexpr unsigned probe = 8;
inline constexpr unsigned enable_rings = 12;
inline constexpr unsigned register_ring_fds = 20;
inline constexpr unsigned send_msg_ring = 31; // 6.13, ring-less MSG_RING
} // namespace reg

// Flags of individual operations.
inline constexpr std::uint32_t async_cancel_all = 1u << 0;
inline constexpr std::uint32_t async_cancel_fd = 1u << 1;
inline constexpr std::uint32_t async_cancel_any = 1u << 2;
inline constexpr std::uint32_t async_cancel_fd_fixed = 1u << 3;
inline constexpr std::uint32_t timeout_abs = 1u << 0;
inline constexpr std::uint32_t timeout_boottime = 1u << 2;
inline constexpr std::uint32_t timeout_realtime = 1u << 3;
inline constexpr std::uint32_t timeout_etime_success = 1u << 5;
inline constexpr std::uint32_t timeout_multishot = 1u << 6;
inline constexpr std::uint32_t file_index_alloc = ~0u;
inline constexpr std::uint32_t cqe_f_buffer = 1u << 0;
inline constexpr std::uint32_t cqe_f_more = 1u << 1;
inline constexpr std::uint32_t cqe_f_sock_nonempty = 1u << 2;
inline constexpr std::uint32_t cqe_f_notif = 1u << 3;

// SQE flags (IOSQE_*).
namespace sqe_flag {
inline constexpr std::uint8_t fixed_file = 1u << 0;
inline constexpr std::uint8_t io_drain = 1u << 1;
inline constexpr std::uint8_t io_link = 1u << 2;
inline constexpr std::uint8_t io_hardlink = 1u << 3;
inline constexpr std::uint8_t async = 1u << 4;
inline constexpr std::uint8_t buffer_select = 1u << 5;
inline constexpr std::uint8_t cqe_skip_success = 1u << 6;
} // namespace sqe_flag

} // namespace ringo::uring::compat
