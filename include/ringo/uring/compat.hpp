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
inline constexpr std::uint32_t no_mmap = 1u << 14;            // 6.5
inline constexpr std::uint32_t registered_fd_only = 1u << 15; // 6.5
inline constexpr std::uint32_t no_sqarray = 1u << 16;         // 6.6
inline constexpr std::uint32_t hybrid_iopoll = 1u << 17;      // 6.13
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
inline constexpr std::uint32_t reg_reg_ring = 1u << 13;    // 6.3
inline constexpr std::uint32_t recvsend_bundle = 1u << 14; // 6.10
inline constexpr std::uint32_t min_timeout = 1u << 15;     // 6.12
inline constexpr std::uint32_t rw_attr = 1u << 16;         // 6.14
inline constexpr std::uint32_t no_iowait = 1u << 17;       // 6.15
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
inline constexpr std::uint32_t cqe_f_buf_more = 1u << 4; // 6.12: an incremental ring's buffer is not used up

/// io_uring_buf_reg::flags (named `pad` in liburing 2.3): IOU_PBUF_RING_MMAP (6.4) and
/// IOU_PBUF_RING_INC (6.12: the kernel consumes a buffer in parts).
namespace pbuf_ring {
inline constexpr std::uint16_t mmap =
    1u << 0; ///< IOU_PBUF_RING_MMAP: the kernel allocates the ring, mapped by the caller
inline constexpr std::uint16_t inc = 1u << 1; ///< IOU_PBUF_RING_INC: incremental consumption
} // namespace pbuf_ring

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

// ---------------------------------------------------------------------------------------
// Operation flags and SQE-field recipes used by the op:: layer (kernel ABI; the names are
// the kernel's without the IORING_ prefix).

// SQE `ioprio` flags of send/recv (IORING_RECVSEND_*) and accept (IORING_ACCEPT_*).
namespace recvsend {
inline constexpr std::uint16_t poll_first = 1u << 0;
inline constexpr std::uint16_t recv_multishot = 1u << 1;
inline constexpr std::uint16_t fixed_buf = 1u << 2;
inline constexpr std::uint16_t send_zc_report_usage = 1u << 3; // 6.2
inline constexpr std::uint16_t bundle = 1u << 4;               // 6.10
} // namespace recvsend
namespace accept_flag {
inline constexpr std::uint16_t multishot = 1u << 0;
inline constexpr std::uint16_t dontwait = 1u << 1;   // 6.10
inline constexpr std::uint16_t poll_first = 1u << 2; // 6.10
} // namespace accept_flag

/// Set in a zero-copy notification's `res` when the kernel copied the data instead
/// (IORING_NOTIF_USAGE_ZC_COPIED; only with recvsend::send_zc_report_usage).
inline constexpr std::uint32_t notif_usage_zc_copied = 1u << 31;

// poll_add / poll_remove flags (IORING_POLL_*), passed in sqe->len.
namespace poll_flag {
inline constexpr std::uint32_t add_multi = 1u << 0;
inline constexpr std::uint32_t update_events = 1u << 1;
inline constexpr std::uint32_t update_user_data = 1u << 2;
inline constexpr std::uint32_t add_level = 1u << 3;
} // namespace poll_flag

// More timeout flags (IORING_TIMEOUT_UPDATE, IORING_LINK_TIMEOUT_UPDATE).
inline constexpr std::uint32_t timeout_update = 1u << 1;
inline constexpr std::uint32_t link_timeout_update = 1u << 4;

// More async-cancel flags.
inline constexpr std::uint32_t async_cancel_userdata = 1u << 4; // 6.6
inline constexpr std::uint32_t async_cancel_op = 1u << 5;       // 6.6

// IORING_OP_MSG_RING: the command in sqe->addr and the flags in sqe->msg_ring_flags.
namespace msg_ring {
inline constexpr std::uint64_t cmd_data = 0;         // IORING_MSG_DATA
inline constexpr std::uint64_t cmd_send_fd = 1;      // IORING_MSG_SEND_FD (6.0)
inline constexpr std::uint32_t cqe_skip = 1u << 0;   // IORING_MSG_RING_CQE_SKIP (6.0)
inline constexpr std::uint32_t flags_pass = 1u << 1; // IORING_MSG_RING_FLAGS_PASS (6.3)
} // namespace msg_ring

/// IORING_OP_FIXED_FD_INSTALL flag (sqe->install_fd_flags): leave O_CLOEXEC off.
inline constexpr std::uint32_t fixed_fd_no_cloexec = 1u << 0;

/// IORING_URING_CMD_FIXED: the command uses registered buffer sqe->buf_index.
inline constexpr std::uint32_t uring_cmd_fixed = 1u << 0;

/// SPLICE_F_FD_IN_FIXED: splice/tee's input fd is a registered-file index.
inline constexpr std::uint32_t splice_f_fd_in_fixed = 1u << 31;

/// IORING_FSYNC_DATASYNC (fsync_flags).
inline constexpr std::uint32_t fsync_datasync = 1u << 0;
/// IORING_NOP_INJECT_RESULT (nop_flags, 6.10: the NOP completes with its len as result).
inline constexpr std::uint32_t nop_inject_result = 1u << 0;

/// CQE flags: the provided-buffer id sits above this shift when cqe_f_buffer is set.
inline constexpr unsigned cqe_buffer_shift = 16;

/// IORING_REGISTER_FILES_SKIP: an fd value that leaves a table slot unchanged on update.
inline constexpr int register_files_skip = -2;

// Socket commands of IORING_OP_URING_CMD (SOCKET_URING_OP_*, 6.7).
namespace socket_cmd {
inline constexpr std::uint32_t siocinq = 0;
inline constexpr std::uint32_t siocoutq = 1;
inline constexpr std::uint32_t getsockopt = 2;
inline constexpr std::uint32_t setsockopt = 3;
} // namespace socket_cmd

/// BLOCK_URING_CMD_DISCARD, _IO(0x12, 0): discard a byte range of a block device (6.12).
inline constexpr std::uint32_t block_uring_cmd_discard = 0x1200;

// futex2 flags (FUTEX2_*, 6.7) for futex_wait / futex_wake / futex_waitv entries.
namespace futex2 {
inline constexpr std::uint32_t size_u8 = 0x00;
inline constexpr std::uint32_t size_u16 = 0x01;
inline constexpr std::uint32_t size_u32 = 0x02;
inline constexpr std::uint32_t size_u64 = 0x03;
inline constexpr std::uint32_t numa = 0x04;
/// FUTEX2_MPOL (6.16): with FUTEX2_NUMA, the node from the word's memory policy; a hint alone.
inline constexpr std::uint32_t mpol = 0x08;
inline constexpr std::uint32_t private_ = 128;
/// FUTEX_BITSET_MATCH_ANY: a mask that matches every waiter.
inline constexpr std::uint64_t bitset_match_any = 0xffffffffu;
} // namespace futex2

/// SQE fields that liburing 2.3's struct io_uring_sqe does not name. Each one shares its
/// bytes with a field 2.3 does name; these recipes write them by their kernel meaning.
/// (Templates, so this header stays free of <liburing.h>.)
namespace sqe_field {
/// The per-opcode 32-bit flag word (rw_flags in 2.3): waitid_flags, futex_flags,
/// install_fd_flags, nop_flags, pipe_flags.
template <class Sqe>
void op_flags(Sqe* s, std::uint32_t v) noexcept {
    s->rw_flags = static_cast<decltype(s->rw_flags)>(v);
}
/// Socket commands: `level` and `optname` overlay the two halves of `addr`.
template <class Sqe>
void sock_level_optname(Sqe* s, std::uint32_t level, std::uint32_t optname) noexcept {
    auto* p = reinterpret_cast<unsigned char*>(&s->addr);
    __builtin_memcpy(p, &level, sizeof level);
    __builtin_memcpy(p + sizeof level, &optname, sizeof optname);
}
/// Socket commands: `optval` is `addr3`, `optlen` is `file_index`.
template <class Sqe>
void sock_optval(Sqe* s, std::uint64_t optval, std::uint32_t optlen) noexcept {
    s->addr3 = optval;
    s->file_index = optlen;
}
/// Operations that create a direct descriptor: slot `index` is encoded as index + 1, and
/// file_index_alloc asks the kernel to pick a free slot. (liburing 2.3's helper turns
/// file_index_alloc into 0, which means "not direct"; this one does not.)
template <class Sqe>
void target_slot(Sqe* s, std::uint32_t index) noexcept {
    s->file_index = index == file_index_alloc ? file_index_alloc : index + 1;
}
/// Splice and tee: the descriptor read from (splice_fd_in), in the bytes of file_index.
template <class Sqe>
std::int32_t splice_fd_in(const Sqe& s) noexcept {
    std::int32_t v;
    __builtin_memcpy(&v, reinterpret_cast<const unsigned char*>(&s) + 44, sizeof v);
    return v;
}
/// Send to an address (IORING_OP_SEND with addr2): the address's length (addr_len), in the
/// first two bytes of file_index.
template <class Sqe>
std::uint16_t addr_len(const Sqe& s) noexcept {
    std::uint16_t v;
    __builtin_memcpy(&v, reinterpret_cast<const unsigned char*>(&s) + 44, sizeof v);
    return v;
}
} // namespace sqe_field

} // namespace ringo::uring::compat
