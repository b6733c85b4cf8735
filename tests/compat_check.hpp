// tests/compat_check.hpp - ringo/uring/compat.hpp against the io_uring.h in front of it.
//
// compat.hpp defines no macro and no global name: it spells the kernel ABI numbers newer than
// liburing 2.3 as constants in namespace ringo::uring::compat, so a newer liburing that defines
// the same opcodes and flags cannot collide with it (no #ifndef guard is needed, and there is
// none to get wrong). What could go wrong is a number. Included after <ringo/uring/compat.hpp>
// and after an io_uring.h (the installed <liburing.h> in test_compat.cpp, a stand-in for a newer
// liburing in compat_newer_liburing.cpp), this header checks at compile time that every opcode
// and flag that io_uring.h defines has ringo's value:
//   - opcodes are enumerators of `enum io_uring_op`: each is checked when that io_uring.h has it
//     (`E::NAME` in a requires-expression is a substitution failure when it does not), and
//     `opcodes_checked` counts them, so a misspelt name cannot hide;
//   - flags are macros: each is checked under #ifdef, and `macros_checked` counts them.
// It expects `io_uring_op` to be visible where it is included; it includes nothing itself.
#pragma once

// One table, laid out by hand: clang-format cannot lay out this X-macro list stably.
// clang-format off
#define RINGO_COMPAT_OPCODES(X)                                                                      \
    X(IORING_OP_NOP, nop) X(IORING_OP_READV, readv) X(IORING_OP_WRITEV, writev)                       \
    X(IORING_OP_FSYNC, fsync) X(IORING_OP_READ_FIXED, read_fixed) X(IORING_OP_WRITE_FIXED, write_fixed) \
    X(IORING_OP_POLL_ADD, poll_add) X(IORING_OP_POLL_REMOVE, poll_remove)                             \
    X(IORING_OP_SYNC_FILE_RANGE, sync_file_range) X(IORING_OP_SENDMSG, sendmsg)                       \
    X(IORING_OP_RECVMSG, recvmsg) X(IORING_OP_TIMEOUT, timeout) X(IORING_OP_TIMEOUT_REMOVE, timeout_remove) \
    X(IORING_OP_ACCEPT, accept) X(IORING_OP_ASYNC_CANCEL, async_cancel) X(IORING_OP_LINK_TIMEOUT, link_timeout) \
    X(IORING_OP_CONNECT, connect) X(IORING_OP_FALLOCATE, fallocate) X(IORING_OP_OPENAT, openat)       \
    X(IORING_OP_CLOSE, close) X(IORING_OP_FILES_UPDATE, files_update) X(IORING_OP_STATX, statx)       \
    X(IORING_OP_READ, read) X(IORING_OP_WRITE, write) X(IORING_OP_FADVISE, fadvise)                   \
    X(IORING_OP_MADVISE, madvise) X(IORING_OP_SEND, send) X(IORING_OP_RECV, recv)                     \
    X(IORING_OP_OPENAT2, openat2) X(IORING_OP_EPOLL_CTL, epoll_ctl) X(IORING_OP_SPLICE, splice)       \
    X(IORING_OP_PROVIDE_BUFFERS, provide_buffers) X(IORING_OP_REMOVE_BUFFERS, remove_buffers)         \
    X(IORING_OP_TEE, tee) X(IORING_OP_SHUTDOWN, shutdown) X(IORING_OP_RENAMEAT, renameat)             \
    X(IORING_OP_UNLINKAT, unlinkat) X(IORING_OP_MKDIRAT, mkdirat) X(IORING_OP_SYMLINKAT, symlinkat)   \
    X(IORING_OP_LINKAT, linkat) X(IORING_OP_MSG_RING, msg_ring) X(IORING_OP_FSETXATTR, fsetxattr)     \
    X(IORING_OP_SETXATTR, setxattr) X(IORING_OP_FGETXATTR, fgetxattr) X(IORING_OP_GETXATTR, getxattr) \
    X(IORING_OP_SOCKET, socket) X(IORING_OP_URING_CMD, uring_cmd) X(IORING_OP_SEND_ZC, send_zc)       \
    X(IORING_OP_SENDMSG_ZC, sendmsg_zc) X(IORING_OP_READ_MULTISHOT, read_multishot)                   \
    X(IORING_OP_WAITID, waitid) X(IORING_OP_FUTEX_WAIT, futex_wait) X(IORING_OP_FUTEX_WAKE, futex_wake) \
    X(IORING_OP_FUTEX_WAITV, futex_waitv) X(IORING_OP_FIXED_FD_INSTALL, fixed_fd_install)             \
    X(IORING_OP_FTRUNCATE, ftruncate) X(IORING_OP_BIND, bind) X(IORING_OP_LISTEN, listen)             \
    X(IORING_OP_RECV_ZC, recv_zc) X(IORING_OP_EPOLL_WAIT, epoll_wait) X(IORING_OP_READV_FIXED, readv_fixed) \
    X(IORING_OP_WRITEV_FIXED, writev_fixed) X(IORING_OP_PIPE, pipe) X(IORING_OP_NOP128, nop128)       \
    X(IORING_OP_URING_CMD128, uring_cmd128)
// clang-format on

namespace ringo_compat_check {

namespace c = ::ringo::uring::compat;

#define RINGO_COMPAT_CHECK_OPCODE(NAME, RINGO)                                                                         \
    template <class E>                                                                                                 \
    constexpr int check_##NAME() {                                                                                     \
        if constexpr (requires { E::NAME; }) {                                                                         \
            static_assert(static_cast<int>(E::NAME) == static_cast<int>(c::opcode::RINGO),                             \
                          #NAME " differs between io_uring.h and ringo/uring/compat.hpp");                             \
            return 1;                                                                                                  \
        } else {                                                                                                       \
            return 0;                                                                                                  \
        }                                                                                                              \
    }
RINGO_COMPAT_OPCODES(RINGO_COMPAT_CHECK_OPCODE)
#undef RINGO_COMPAT_CHECK_OPCODE

#define RINGO_COMPAT_COUNT_OPCODE(NAME, RINGO) +check_##NAME<io_uring_op>()
/// Opcodes of this io_uring.h whose value was compared with ringo's.
inline constexpr int opcodes_checked = 0 RINGO_COMPAT_OPCODES(RINGO_COMPAT_COUNT_OPCODE);
#undef RINGO_COMPAT_COUNT_OPCODE
/// Every opcode this io_uring.h knows, up to the last one ringo knows, was checked by name.
inline constexpr int opcodes_expected =
    static_cast<int>(IORING_OP_LAST) < c::opcode::known_last ? static_cast<int>(IORING_OP_LAST) : c::opcode::known_last;
static_assert(opcodes_checked == opcodes_expected,
              "an opcode of this io_uring.h is missing from RINGO_COMPAT_OPCODES (or misspelt there)");

// Flags: macros. Each check takes one __COUNTER__ value, so the checks that ran are counted.
inline constexpr int macros_base = __COUNTER__;
#define RINGO_SAME(RINGO, NAME)                                                                                        \
    static_assert(static_cast<long long>(RINGO) == static_cast<long long>(NAME),                                       \
                  #NAME " differs between io_uring.h and ringo/uring/compat.hpp");                                     \
    static_assert(__COUNTER__ >= 0);

// io_uring_setup() flags
#ifdef IORING_SETUP_IOPOLL
RINGO_SAME(c::setup::iopoll, IORING_SETUP_IOPOLL)
#endif
#ifdef IORING_SETUP_SQPOLL
RINGO_SAME(c::setup::sqpoll, IORING_SETUP_SQPOLL)
#endif
#ifdef IORING_SETUP_SQ_AFF
RINGO_SAME(c::setup::sq_aff, IORING_SETUP_SQ_AFF)
#endif
#ifdef IORING_SETUP_CQSIZE
RINGO_SAME(c::setup::cqsize, IORING_SETUP_CQSIZE)
#endif
#ifdef IORING_SETUP_CLAMP
RINGO_SAME(c::setup::clamp, IORING_SETUP_CLAMP)
#endif
#ifdef IORING_SETUP_ATTACH_WQ
RINGO_SAME(c::setup::attach_wq, IORING_SETUP_ATTACH_WQ)
#endif
#ifdef IORING_SETUP_R_DISABLED
RINGO_SAME(c::setup::r_disabled, IORING_SETUP_R_DISABLED)
#endif
#ifdef IORING_SETUP_SUBMIT_ALL
RINGO_SAME(c::setup::submit_all, IORING_SETUP_SUBMIT_ALL)
#endif
#ifdef IORING_SETUP_COOP_TASKRUN
RINGO_SAME(c::setup::coop_taskrun, IORING_SETUP_COOP_TASKRUN)
#endif
#ifdef IORING_SETUP_TASKRUN_FLAG
RINGO_SAME(c::setup::taskrun_flag, IORING_SETUP_TASKRUN_FLAG)
#endif
#ifdef IORING_SETUP_SQE128
RINGO_SAME(c::setup::sqe128, IORING_SETUP_SQE128)
#endif
#ifdef IORING_SETUP_CQE32
RINGO_SAME(c::setup::cqe32, IORING_SETUP_CQE32)
#endif
#ifdef IORING_SETUP_SINGLE_ISSUER
RINGO_SAME(c::setup::single_issuer, IORING_SETUP_SINGLE_ISSUER)
#endif
#ifdef IORING_SETUP_DEFER_TASKRUN
RINGO_SAME(c::setup::defer_taskrun, IORING_SETUP_DEFER_TASKRUN)
#endif
#ifdef IORING_SETUP_NO_MMAP
RINGO_SAME(c::setup::no_mmap, IORING_SETUP_NO_MMAP)
#endif
#ifdef IORING_SETUP_REGISTERED_FD_ONLY
RINGO_SAME(c::setup::registered_fd_only, IORING_SETUP_REGISTERED_FD_ONLY)
#endif
#ifdef IORING_SETUP_NO_SQARRAY
RINGO_SAME(c::setup::no_sqarray, IORING_SETUP_NO_SQARRAY)
#endif
#ifdef IORING_SETUP_HYBRID_IOPOLL
RINGO_SAME(c::setup::hybrid_iopoll, IORING_SETUP_HYBRID_IOPOLL)
#endif

// io_uring_params::features
#ifdef IORING_FEAT_SINGLE_MMAP
RINGO_SAME(c::feat::single_mmap, IORING_FEAT_SINGLE_MMAP)
#endif
#ifdef IORING_FEAT_NODROP
RINGO_SAME(c::feat::nodrop, IORING_FEAT_NODROP)
#endif
#ifdef IORING_FEAT_SUBMIT_STABLE
RINGO_SAME(c::feat::submit_stable, IORING_FEAT_SUBMIT_STABLE)
#endif
#ifdef IORING_FEAT_RW_CUR_POS
RINGO_SAME(c::feat::rw_cur_pos, IORING_FEAT_RW_CUR_POS)
#endif
#ifdef IORING_FEAT_CUR_PERSONALITY
RINGO_SAME(c::feat::cur_personality, IORING_FEAT_CUR_PERSONALITY)
#endif
#ifdef IORING_FEAT_FAST_POLL
RINGO_SAME(c::feat::fast_poll, IORING_FEAT_FAST_POLL)
#endif
#ifdef IORING_FEAT_POLL_32BITS
RINGO_SAME(c::feat::poll_32bits, IORING_FEAT_POLL_32BITS)
#endif
#ifdef IORING_FEAT_SQPOLL_NONFIXED
RINGO_SAME(c::feat::sqpoll_nonfixed, IORING_FEAT_SQPOLL_NONFIXED)
#endif
#ifdef IORING_FEAT_EXT_ARG
RINGO_SAME(c::feat::ext_arg, IORING_FEAT_EXT_ARG)
#endif
#ifdef IORING_FEAT_NATIVE_WORKERS
RINGO_SAME(c::feat::native_workers, IORING_FEAT_NATIVE_WORKERS)
#endif
#ifdef IORING_FEAT_RSRC_TAGS
RINGO_SAME(c::feat::rsrc_tags, IORING_FEAT_RSRC_TAGS)
#endif
#ifdef IORING_FEAT_CQE_SKIP
RINGO_SAME(c::feat::cqe_skip, IORING_FEAT_CQE_SKIP)
#endif
#ifdef IORING_FEAT_LINKED_FILE
RINGO_SAME(c::feat::linked_file, IORING_FEAT_LINKED_FILE)
#endif
#ifdef IORING_FEAT_REG_REG_RING
RINGO_SAME(c::feat::reg_reg_ring, IORING_FEAT_REG_REG_RING)
#endif
#ifdef IORING_FEAT_RECVSEND_BUNDLE
RINGO_SAME(c::feat::recvsend_bundle, IORING_FEAT_RECVSEND_BUNDLE)
#endif
#ifdef IORING_FEAT_MIN_TIMEOUT
RINGO_SAME(c::feat::min_timeout, IORING_FEAT_MIN_TIMEOUT)
#endif
#ifdef IORING_FEAT_RW_ATTR
RINGO_SAME(c::feat::rw_attr, IORING_FEAT_RW_ATTR)
#endif
#ifdef IORING_FEAT_NO_IOWAIT
RINGO_SAME(c::feat::no_iowait, IORING_FEAT_NO_IOWAIT)
#endif

// io_uring_enter() flags and SQ ring flags
#ifdef IORING_ENTER_GETEVENTS
RINGO_SAME(c::enter::getevents, IORING_ENTER_GETEVENTS)
#endif
#ifdef IORING_ENTER_SQ_WAKEUP
RINGO_SAME(c::enter::sq_wakeup, IORING_ENTER_SQ_WAKEUP)
#endif
#ifdef IORING_ENTER_SQ_WAIT
RINGO_SAME(c::enter::sq_wait, IORING_ENTER_SQ_WAIT)
#endif
#ifdef IORING_ENTER_EXT_ARG
RINGO_SAME(c::enter::ext_arg, IORING_ENTER_EXT_ARG)
#endif
#ifdef IORING_ENTER_REGISTERED_RING
RINGO_SAME(c::enter::registered_ring, IORING_ENTER_REGISTERED_RING)
#endif
#ifdef IORING_SQ_NEED_WAKEUP
RINGO_SAME(c::sq_need_wakeup, IORING_SQ_NEED_WAKEUP)
#endif
#ifdef IORING_SQ_CQ_OVERFLOW
RINGO_SAME(c::sq_cq_overflow, IORING_SQ_CQ_OVERFLOW)
#endif
#ifdef IORING_SQ_TASKRUN
RINGO_SAME(c::sq_taskrun, IORING_SQ_TASKRUN)
#endif

// SQE flags
#ifdef IOSQE_FIXED_FILE
RINGO_SAME(c::sqe_flag::fixed_file, IOSQE_FIXED_FILE)
#endif
#ifdef IOSQE_IO_DRAIN
RINGO_SAME(c::sqe_flag::io_drain, IOSQE_IO_DRAIN)
#endif
#ifdef IOSQE_IO_LINK
RINGO_SAME(c::sqe_flag::io_link, IOSQE_IO_LINK)
#endif
#ifdef IOSQE_IO_HARDLINK
RINGO_SAME(c::sqe_flag::io_hardlink, IOSQE_IO_HARDLINK)
#endif
#ifdef IOSQE_ASYNC
RINGO_SAME(c::sqe_flag::async, IOSQE_ASYNC)
#endif
#ifdef IOSQE_BUFFER_SELECT
RINGO_SAME(c::sqe_flag::buffer_select, IOSQE_BUFFER_SELECT)
#endif
#ifdef IOSQE_CQE_SKIP_SUCCESS
RINGO_SAME(c::sqe_flag::cqe_skip_success, IOSQE_CQE_SKIP_SUCCESS)
#endif

// Flags of individual operations
#ifdef IORING_ASYNC_CANCEL_ALL
RINGO_SAME(c::async_cancel_all, IORING_ASYNC_CANCEL_ALL)
#endif
#ifdef IORING_ASYNC_CANCEL_FD
RINGO_SAME(c::async_cancel_fd, IORING_ASYNC_CANCEL_FD)
#endif
#ifdef IORING_ASYNC_CANCEL_ANY
RINGO_SAME(c::async_cancel_any, IORING_ASYNC_CANCEL_ANY)
#endif
#ifdef IORING_ASYNC_CANCEL_FD_FIXED
RINGO_SAME(c::async_cancel_fd_fixed, IORING_ASYNC_CANCEL_FD_FIXED)
#endif
#ifdef IORING_ASYNC_CANCEL_USERDATA
RINGO_SAME(c::async_cancel_userdata, IORING_ASYNC_CANCEL_USERDATA)
#endif
#ifdef IORING_ASYNC_CANCEL_OP
RINGO_SAME(c::async_cancel_op, IORING_ASYNC_CANCEL_OP)
#endif
#ifdef IORING_TIMEOUT_ABS
RINGO_SAME(c::timeout_abs, IORING_TIMEOUT_ABS)
#endif
#ifdef IORING_TIMEOUT_UPDATE
RINGO_SAME(c::timeout_update, IORING_TIMEOUT_UPDATE)
#endif
#ifdef IORING_TIMEOUT_BOOTTIME
RINGO_SAME(c::timeout_boottime, IORING_TIMEOUT_BOOTTIME)
#endif
#ifdef IORING_TIMEOUT_REALTIME
RINGO_SAME(c::timeout_realtime, IORING_TIMEOUT_REALTIME)
#endif
#ifdef IORING_LINK_TIMEOUT_UPDATE
RINGO_SAME(c::link_timeout_update, IORING_LINK_TIMEOUT_UPDATE)
#endif
#ifdef IORING_TIMEOUT_ETIME_SUCCESS
RINGO_SAME(c::timeout_etime_success, IORING_TIMEOUT_ETIME_SUCCESS)
#endif
#ifdef IORING_TIMEOUT_MULTISHOT
RINGO_SAME(c::timeout_multishot, IORING_TIMEOUT_MULTISHOT)
#endif
#ifdef IORING_FILE_INDEX_ALLOC
RINGO_SAME(c::file_index_alloc, IORING_FILE_INDEX_ALLOC)
#endif
#ifdef IORING_CQE_F_BUFFER
RINGO_SAME(c::cqe_f_buffer, IORING_CQE_F_BUFFER)
#endif
#ifdef IORING_CQE_F_MORE
RINGO_SAME(c::cqe_f_more, IORING_CQE_F_MORE)
#endif
#ifdef IORING_CQE_F_SOCK_NONEMPTY
RINGO_SAME(c::cqe_f_sock_nonempty, IORING_CQE_F_SOCK_NONEMPTY)
#endif
#ifdef IORING_CQE_F_NOTIF
RINGO_SAME(c::cqe_f_notif, IORING_CQE_F_NOTIF)
#endif
#ifdef IORING_RECVSEND_POLL_FIRST
RINGO_SAME(c::recvsend::poll_first, IORING_RECVSEND_POLL_FIRST)
#endif
#ifdef IORING_RECV_MULTISHOT
RINGO_SAME(c::recvsend::recv_multishot, IORING_RECV_MULTISHOT)
#endif
#ifdef IORING_RECVSEND_FIXED_BUF
RINGO_SAME(c::recvsend::fixed_buf, IORING_RECVSEND_FIXED_BUF)
#endif
#ifdef IORING_SEND_ZC_REPORT_USAGE
RINGO_SAME(c::recvsend::send_zc_report_usage, IORING_SEND_ZC_REPORT_USAGE)
#endif
#ifdef IORING_RECVSEND_BUNDLE
RINGO_SAME(c::recvsend::bundle, IORING_RECVSEND_BUNDLE)
#endif
#ifdef IORING_NOTIF_USAGE_ZC_COPIED
RINGO_SAME(c::notif_usage_zc_copied, IORING_NOTIF_USAGE_ZC_COPIED)
#endif
#ifdef IORING_ACCEPT_MULTISHOT
RINGO_SAME(c::accept_flag::multishot, IORING_ACCEPT_MULTISHOT)
#endif
#ifdef IORING_ACCEPT_DONTWAIT
RINGO_SAME(c::accept_flag::dontwait, IORING_ACCEPT_DONTWAIT)
#endif
#ifdef IORING_ACCEPT_POLL_FIRST
RINGO_SAME(c::accept_flag::poll_first, IORING_ACCEPT_POLL_FIRST)
#endif
#ifdef IORING_POLL_ADD_MULTI
RINGO_SAME(c::poll_flag::add_multi, IORING_POLL_ADD_MULTI)
#endif
#ifdef IORING_POLL_UPDATE_EVENTS
RINGO_SAME(c::poll_flag::update_events, IORING_POLL_UPDATE_EVENTS)
#endif
#ifdef IORING_POLL_UPDATE_USER_DATA
RINGO_SAME(c::poll_flag::update_user_data, IORING_POLL_UPDATE_USER_DATA)
#endif
#ifdef IORING_POLL_ADD_LEVEL
RINGO_SAME(c::poll_flag::add_level, IORING_POLL_ADD_LEVEL)
#endif
#ifdef IORING_MSG_RING_CQE_SKIP
RINGO_SAME(c::msg_ring::cqe_skip, IORING_MSG_RING_CQE_SKIP)
#endif
#ifdef IORING_MSG_RING_FLAGS_PASS
RINGO_SAME(c::msg_ring::flags_pass, IORING_MSG_RING_FLAGS_PASS)
#endif
#ifdef IORING_FIXED_FD_NO_CLOEXEC
RINGO_SAME(c::fixed_fd_no_cloexec, IORING_FIXED_FD_NO_CLOEXEC)
#endif
#ifdef IORING_URING_CMD_FIXED
RINGO_SAME(c::uring_cmd_fixed, IORING_URING_CMD_FIXED)
#endif
#ifdef SPLICE_F_FD_IN_FIXED
RINGO_SAME(c::splice_f_fd_in_fixed, SPLICE_F_FD_IN_FIXED)
#endif
#ifdef IORING_REGISTER_FILES_SKIP
RINGO_SAME(c::register_files_skip, IORING_REGISTER_FILES_SKIP)
#endif

/// Flag macros of this io_uring.h whose value was compared with ringo's.
inline constexpr int macros_checked = __COUNTER__ - macros_base - 1;
#undef RINGO_SAME

// Enumerators of anonymous enums in liburing 2.3 (so they cannot be probed by name), present
// in 2.3 and every later release.
static_assert(c::cqe_buffer_shift == IORING_CQE_BUFFER_SHIFT);
static_assert(c::msg_ring::cmd_data == IORING_MSG_DATA);
static_assert(c::msg_ring::cmd_send_fd == IORING_MSG_SEND_FD);
static_assert(c::reg::probe == IORING_REGISTER_PROBE);
static_assert(c::reg::enable_rings == IORING_REGISTER_ENABLE_RINGS);
static_assert(c::reg::register_ring_fds == IORING_REGISTER_RING_FDS);

/// compat::sqe_field's recipes, written against liburing 2.3's field names, on this
/// io_uring.h's `Sqe`: each must land in the field this header names for it (where it names
/// one; a member it lacks is not checked). Returns the first recipe that does not, or nullptr.
template <class Sqe>
const char* sqe_recipe_mismatch_on() {
    namespace f = c::sqe_field;
    Sqe s{};
    const unsigned v = 0x8000'0005u;
    f::op_flags(&s, v);
    bool flags_ok = true;
    if constexpr (requires { s.nop_flags; })
        flags_ok = flags_ok && s.nop_flags == v;
    if constexpr (requires { s.pipe_flags; })
        flags_ok = flags_ok && s.pipe_flags == v;
    if constexpr (requires { s.waitid_flags; })
        flags_ok = flags_ok && s.waitid_flags == v;
    if constexpr (requires { s.futex_flags; })
        flags_ok = flags_ok && s.futex_flags == v;
    if constexpr (requires { s.install_fd_flags; })
        flags_ok = flags_ok && s.install_fd_flags == v;
    if (!flags_ok)
        return "op_flags (nop_flags, pipe_flags, waitid_flags, futex_flags, install_fd_flags)";
    f::sock_level_optname(&s, 6u, 0x1234'5678u);
    if constexpr (requires {
                      s.level;
                      s.optname;
                  }) {
        if (s.level != 6u || s.optname != 0x1234'5678u)
            return "sock_level_optname (level, optname)";
    }
    f::sock_optval(&s, 0x1122'3344'5566'7788u, 24u);
    if constexpr (requires {
                      s.optval;
                      s.optlen;
                  }) {
        if (s.optval != 0x1122'3344'5566'7788u || s.optlen != 24u)
            return "sock_optval (optval, optlen)";
    }
    f::target_slot(&s, 6u);
    if (s.file_index != 7u)
        return "target_slot (file_index = slot + 1)";
    f::target_slot(&s, c::file_index_alloc);
    if (s.file_index != IORING_FILE_INDEX_ALLOC)
        return "target_slot (IORING_FILE_INDEX_ALLOC)";
    return nullptr;
}

} // namespace ringo_compat_check
