// Part of test_compat: ringo/uring/compat.hpp next to a newer liburing.
//
// No newer liburing can be installed where this runs, so this translation unit stands in for
// one: before it includes compat.hpp it defines what liburing 2.12's io_uring.h (kernel 6.18
// uapi) defines for the opcodes, flags and SQE fields ringo spells itself - the macros exactly
// as liburing spells them, `enum io_uring_op` with every opcode up to IORING_OP_URING_CMD128,
// and the newer `struct io_uring_sqe` with its named fields (nop_flags, optlen, optval ...).
// It proves three things at compile time (and the recipe results at run time):
//   1. compat.hpp builds after a liburing that already defines all of them (nothing collides:
//      compat.hpp defines no macro and no global name);
//   2. every such opcode and flag has the same value in compat.hpp (compat_check.hpp, with
//      counts, so the check is not vacuous);
//   3. compat::sqe_field's recipes, written against liburing 2.3's field names, write exactly
//      the fields the newer liburing names.
// The types live in namespace `newer` so they do not clash (ODR) with the installed liburing's
// types in test_compat.cpp; macros are per translation unit anyway. This file must not include
// <liburing.h> or <linux/io_uring.h>.
#include <cstddef>
#include <cstdint>

// ----------------------------------------------------------- the newer io_uring.h's macros
#define IOSQE_FIXED_FILE (1U << 0)
#define IOSQE_IO_DRAIN (1U << 1)
#define IOSQE_IO_LINK (1U << 2)
#define IOSQE_IO_HARDLINK (1U << 3)
#define IOSQE_ASYNC (1U << 4)
#define IOSQE_BUFFER_SELECT (1U << 5)
#define IOSQE_CQE_SKIP_SUCCESS (1U << 6)

#define IORING_FILE_INDEX_ALLOC (~0U)

#define IORING_SETUP_IOPOLL (1U << 0)
#define IORING_SETUP_SQPOLL (1U << 1)
#define IORING_SETUP_SQ_AFF (1U << 2)
#define IORING_SETUP_CQSIZE (1U << 3)
#define IORING_SETUP_CLAMP (1U << 4)
#define IORING_SETUP_ATTACH_WQ (1U << 5)
#define IORING_SETUP_R_DISABLED (1U << 6)
#define IORING_SETUP_SUBMIT_ALL (1U << 7)
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#define IORING_SETUP_TASKRUN_FLAG (1U << 9)
#define IORING_SETUP_SQE128 (1U << 10)
#define IORING_SETUP_CQE32 (1U << 11)
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#define IORING_SETUP_NO_MMAP (1U << 14)
#define IORING_SETUP_REGISTERED_FD_ONLY (1U << 15)
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#define IORING_SETUP_HYBRID_IOPOLL (1U << 17)
#define IORING_SETUP_CQE_MIXED (1U << 18)
#define IORING_SETUP_SQE_MIXED (1U << 19)

#define IORING_URING_CMD_FIXED (1U << 0)
#define IORING_URING_CMD_MASK IORING_URING_CMD_FIXED
#define IORING_FSYNC_DATASYNC (1U << 0)
#define IORING_TIMEOUT_ABS (1U << 0)
#define IORING_TIMEOUT_UPDATE (1U << 1)
#define IORING_TIMEOUT_BOOTTIME (1U << 2)
#define IORING_TIMEOUT_REALTIME (1U << 3)
#define IORING_LINK_TIMEOUT_UPDATE (1U << 4)
#define IORING_TIMEOUT_ETIME_SUCCESS (1U << 5)
#define IORING_TIMEOUT_MULTISHOT (1U << 6)
#define SPLICE_F_FD_IN_FIXED (1U << 31)
#define IORING_POLL_ADD_MULTI (1U << 0)
#define IORING_POLL_UPDATE_EVENTS (1U << 1)
#define IORING_POLL_UPDATE_USER_DATA (1U << 2)
#define IORING_POLL_ADD_LEVEL (1U << 3)
#define IORING_ASYNC_CANCEL_ALL (1U << 0)
#define IORING_ASYNC_CANCEL_FD (1U << 1)
#define IORING_ASYNC_CANCEL_ANY (1U << 2)
#define IORING_ASYNC_CANCEL_FD_FIXED (1U << 3)
#define IORING_ASYNC_CANCEL_USERDATA (1U << 4)
#define IORING_ASYNC_CANCEL_OP (1U << 5)
#define IORING_RECVSEND_POLL_FIRST (1U << 0)
#define IORING_RECV_MULTISHOT (1U << 1)
#define IORING_RECVSEND_FIXED_BUF (1U << 2)
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#define IORING_RECVSEND_BUNDLE (1U << 4)
#define IORING_SEND_VECTORIZED (1U << 5)
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#define IORING_ACCEPT_MULTISHOT (1U << 0)
#define IORING_ACCEPT_DONTWAIT (1U << 1)
#define IORING_ACCEPT_POLL_FIRST (1U << 2)
#define IORING_MSG_RING_CQE_SKIP (1U << 0)
#define IORING_MSG_RING_FLAGS_PASS (1U << 1)
#define IORING_FIXED_FD_NO_CLOEXEC (1U << 0)
#define IORING_NOP_INJECT_RESULT (1U << 0)
#define IORING_CQE_F_BUFFER (1U << 0)
#define IORING_CQE_F_MORE (1U << 1)
#define IORING_CQE_F_SOCK_NONEMPTY (1U << 2)
#define IORING_CQE_F_NOTIF (1U << 3)
#define IORING_CQE_F_BUF_MORE (1U << 4)
#define IORING_SQ_NEED_WAKEUP (1U << 0)
#define IORING_SQ_CQ_OVERFLOW (1U << 1)
#define IORING_SQ_TASKRUN (1U << 2)
#define IORING_ENTER_GETEVENTS (1U << 0)
#define IORING_ENTER_SQ_WAKEUP (1U << 1)
#define IORING_ENTER_SQ_WAIT (1U << 2)
#define IORING_ENTER_EXT_ARG (1U << 3)
#define IORING_ENTER_REGISTERED_RING (1U << 4)
#define IORING_ENTER_ABS_TIMER (1U << 5)
#define IORING_ENTER_EXT_ARG_REG (1U << 6)
#define IORING_ENTER_NO_IOWAIT (1U << 7)
#define IORING_FEAT_SINGLE_MMAP (1U << 0)
#define IORING_FEAT_NODROP (1U << 1)
#define IORING_FEAT_SUBMIT_STABLE (1U << 2)
#define IORING_FEAT_RW_CUR_POS (1U << 3)
#define IORING_FEAT_CUR_PERSONALITY (1U << 4)
#define IORING_FEAT_FAST_POLL (1U << 5)
#define IORING_FEAT_POLL_32BITS (1U << 6)
#define IORING_FEAT_SQPOLL_NONFIXED (1U << 7)
#define IORING_FEAT_EXT_ARG (1U << 8)
#define IORING_FEAT_NATIVE_WORKERS (1U << 9)
#define IORING_FEAT_RSRC_TAGS (1U << 10)
#define IORING_FEAT_CQE_SKIP (1U << 11)
#define IORING_FEAT_LINKED_FILE (1U << 12)
#define IORING_FEAT_REG_REG_RING (1U << 13)
#define IORING_FEAT_RECVSEND_BUNDLE (1U << 14)
#define IORING_FEAT_MIN_TIMEOUT (1U << 15)
#define IORING_FEAT_RW_ATTR (1U << 16)
#define IORING_FEAT_NO_IOWAIT (1U << 17)
#define IORING_REGISTER_FILES_SKIP (-2)
#define IO_URING_OP_SUPPORTED (1U << 0)
// liburing.h's own helper macros of that release
#define LIBURING_HAVE_DATA64
#define IO_URING_CHECK_VERSION(major, minor) (major > 2 || (major == 2 && minor > 12))
#define IOURINGINLINE static inline

// ----------------------------------------------------------- the newer io_uring.h's types
namespace newer {

using __u8 = std::uint8_t;
using __u16 = std::uint16_t;
using __u32 = std::uint32_t;
using __u64 = std::uint64_t;
using __s32 = std::int32_t;
using __kernel_rwf_t = int;

struct io_uring_sqe {
    __u8 opcode;
    __u8 flags;
    __u16 ioprio;
    __s32 fd;
    union {
        __u64 off;
        __u64 addr2;
        struct {
            __u32 cmd_op;
            __u32 __pad1;
        };
    };
    union {
        __u64 addr;
        __u64 splice_off_in;
        struct {
            __u32 level;
            __u32 optname;
        };
    };
    __u32 len;
    union {
        __kernel_rwf_t rw_flags;
        __u32 fsync_flags;
        __u16 poll_events;
        __u32 poll32_events;
        __u32 sync_range_flags;
        __u32 msg_flags;
        __u32 timeout_flags;
        __u32 accept_flags;
        __u32 cancel_flags;
        __u32 open_flags;
        __u32 statx_flags;
        __u32 fadvise_advice;
        __u32 splice_flags;
        __u32 rename_flags;
        __u32 unlink_flags;
        __u32 hardlink_flags;
        __u32 xattr_flags;
        __u32 msg_ring_flags;
        __u32 uring_cmd_flags;
        __u32 waitid_flags;
        __u32 futex_flags;
        __u32 install_fd_flags;
        __u32 nop_flags;
        __u32 pipe_flags;
    };
    __u64 user_data;
    union {
        __u16 buf_index;
        __u16 buf_group;
    } __attribute__((packed));
    __u16 personality;
    union {
        __s32 splice_fd_in;
        __u32 file_index;
        __u32 zcrx_ifq_idx;
        __u32 optlen;
        struct {
            __u16 addr_len;
            __u16 __pad3[1];
        };
        struct {
            __u8 write_stream;
            __u8 __pad4[3];
        };
    };
    union {
        struct {
            __u64 addr3;
            __u64 __pad2[1];
        };
        struct {
            __u64 attr_ptr;
            __u64 attr_type_mask;
        };
        __u64 optval;
        __u8 cmd[0];
    };
};

enum io_uring_op {
    IORING_OP_NOP,
    IORING_OP_READV,
    IORING_OP_WRITEV,
    IORING_OP_FSYNC,
    IORING_OP_READ_FIXED,
    IORING_OP_WRITE_FIXED,
    IORING_OP_POLL_ADD,
    IORING_OP_POLL_REMOVE,
    IORING_OP_SYNC_FILE_RANGE,
    IORING_OP_SENDMSG,
    IORING_OP_RECVMSG,
    IORING_OP_TIMEOUT,
    IORING_OP_TIMEOUT_REMOVE,
    IORING_OP_ACCEPT,
    IORING_OP_ASYNC_CANCEL,
    IORING_OP_LINK_TIMEOUT,
    IORING_OP_CONNECT,
    IORING_OP_FALLOCATE,
    IORING_OP_OPENAT,
    IORING_OP_CLOSE,
    IORING_OP_FILES_UPDATE,
    IORING_OP_STATX,
    IORING_OP_READ,
    IORING_OP_WRITE,
    IORING_OP_FADVISE,
    IORING_OP_MADVISE,
    IORING_OP_SEND,
    IORING_OP_RECV,
    IORING_OP_OPENAT2,
    IORING_OP_EPOLL_CTL,
    IORING_OP_SPLICE,
    IORING_OP_PROVIDE_BUFFERS,
    IORING_OP_REMOVE_BUFFERS,
    IORING_OP_TEE,
    IORING_OP_SHUTDOWN,
    IORING_OP_RENAMEAT,
    IORING_OP_UNLINKAT,
    IORING_OP_MKDIRAT,
    IORING_OP_SYMLINKAT,
    IORING_OP_LINKAT,
    IORING_OP_MSG_RING,
    IORING_OP_FSETXATTR,
    IORING_OP_SETXATTR,
    IORING_OP_FGETXATTR,
    IORING_OP_GETXATTR,
    IORING_OP_SOCKET,
    IORING_OP_URING_CMD,
    IORING_OP_SEND_ZC,
    IORING_OP_SENDMSG_ZC,
    IORING_OP_READ_MULTISHOT,
    IORING_OP_WAITID,
    IORING_OP_FUTEX_WAIT,
    IORING_OP_FUTEX_WAKE,
    IORING_OP_FUTEX_WAITV,
    IORING_OP_FIXED_FD_INSTALL,
    IORING_OP_FTRUNCATE,
    IORING_OP_BIND,
    IORING_OP_LISTEN,
    IORING_OP_RECV_ZC,
    IORING_OP_EPOLL_WAIT,
    IORING_OP_READV_FIXED,
    IORING_OP_WRITEV_FIXED,
    IORING_OP_PIPE,
    IORING_OP_NOP128,
    IORING_OP_URING_CMD128,

    /* this goes last, obviously */
    IORING_OP_LAST,
};

enum io_uring_msg_ring_flags {
    IORING_MSG_DATA,
    IORING_MSG_SEND_FD,
};

enum {
    IORING_CQE_BUFFER_SHIFT = 16,
};

enum io_uring_register_op {
    IORING_REGISTER_BUFFERS = 0,
    IORING_REGISTER_PROBE = 8,
    IORING_REGISTER_ENABLE_RINGS = 12,
    IORING_REGISTER_RING_FDS = 20,
    IORING_REGISTER_SEND_MSG_RING = 31,
};

} // namespace newer

// ----------------------------------------------------------- compat.hpp after all of that
#include <ringo/uring/compat.hpp>

namespace newer {
#include "compat_check.hpp"

// The stand-in has the kernel's layout (the offsets are ABI; test_compat.cpp checks the same
// offsets in the installed liburing's struct).
static_assert(sizeof(io_uring_sqe) == 64);
static_assert(offsetof(io_uring_sqe, level) == 16 && offsetof(io_uring_sqe, optname) == 20);
static_assert(offsetof(io_uring_sqe, nop_flags) == 28);
static_assert(offsetof(io_uring_sqe, optlen) == 44 && offsetof(io_uring_sqe, file_index) == 44);
static_assert(offsetof(io_uring_sqe, optval) == 48 && offsetof(io_uring_sqe, addr3) == 48);

// Every opcode of this io_uring.h was checked by name, and every flag macro compat_check.hpp
// knows (all 88 RINGO_SAME lines) was defined here and agreed.
static_assert(ringo_compat_check::opcodes_checked == ringo::uring::compat::opcode::known_last);
static_assert(ringo_compat_check::macros_checked == 88);
static_assert(ringo::uring::compat::reg::send_msg_ring == IORING_REGISTER_SEND_MSG_RING);
} // namespace newer

namespace ringo_compat_newer {

int opcodes_checked() { return newer::ringo_compat_check::opcodes_checked; }
int macros_checked() { return newer::ringo_compat_check::macros_checked; }

// compat::sqe_field's recipes on the newer struct (the stand-in names every field they write).
const char* sqe_recipe_mismatch() { return newer::ringo_compat_check::sqe_recipe_mismatch_on<newer::io_uring_sqe>(); }

} // namespace ringo_compat_newer
