// tests/fuzz/diff_engines.hpp - the model shared by the differential fuzzer of the epoll
// engine (tests/fuzz/diff_engines*.cpp, its files listed in diff_engines_impl.hpp) and its list
// of known differences (tests/fuzz/diff_engines_known.cpp).
//
// A case is a few raw SQEs and the memory objects they point at, kept symbolic: a descriptor
// is named by what it is in the test environment ("fd:PIPE_R"), a pointer by the object it
// points into ("@b0+16") or by what is wrong with it ("unmapped"), a user_data by the SQE that
// carries it ("ud:1"). Each child process resolves the names in its own fresh environment, so
// the same text means the same thing on both engines and survives changes to the generator.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace diffeng {

/// One field value. `num` is a plain number (negative numbers are kept as their 64-bit two's
/// complement and truncated to the field's width when the SQE is filled).
struct Val {
    enum class Kind : std::uint8_t {
        num, ///< the number itself
        fd,  ///< a descriptor of the environment by name (see env_fd_names), or NEW0..NEW3, CLOSED
        obj, ///< the address of object `name`, plus `num`
        ptr, ///< a bad pointer: unmapped, protnone, noncanon, edge (the last 64 bytes before protnone)
        ud,  ///< the user_data of SQE `ud` of the case (-1: one no SQE carries)
    };
    Kind kind = Kind::num;
    std::uint64_t num = 0;
    std::string name;
    int ud = -1;

    static Val n(std::uint64_t v) { return Val{Kind::num, v, {}, -1}; }
    static Val i(std::int64_t v) { return Val{Kind::num, static_cast<std::uint64_t>(v), {}, -1}; }
    static Val fd(std::string env) { return Val{Kind::fd, 0, std::move(env), -1}; }
    static Val obj(std::string o, std::uint64_t plus = 0) { return Val{Kind::obj, plus, std::move(o), -1}; }
    static Val ptr(std::string what) { return Val{Kind::ptr, 0, std::move(what), -1}; }
    static Val user(int sqe) { return Val{Kind::ud, 0, {}, sqe}; }
    [[nodiscard]] bool is_num(std::uint64_t v) const { return kind == Kind::num && num == v; }
    /// A pointer the kernel cannot use: null, or one of the bad pointers.
    [[nodiscard]] bool bad_pointer() const { return kind == Kind::ptr || (kind == Kind::num && num == 0); }
};

/// A memory object of a case: laid out in an arena mapped at the same address in every child.
/// Kinds and their fields (missing fields are 0):
///   buf  size, fill (the byte it starts filled with, default 0xCC), pat (1: "ABC..." instead),
///        align (its address a multiple of this power of two, e.g. a page; default 64)
///   iov  elements (base:len each)
///   msg  name, namelen, iov, iovlen, control, controllen, flags (a struct msghdr)
///   str  text (a NUL-terminated path or symlink target)
///   ts   sec, nsec (a __kernel_timespec)
///   sa   text: listen, udp, refused, any, unix, badfam, out (a sockaddr, 128 bytes)
///   how  flags, mode, resolve, tail (a struct open_how; tail: 8 non-zero bytes after it)
///   epev events, data (a struct epoll_event)
///   u32  v
struct Obj {
    std::string name;
    std::string kind;
    std::vector<std::pair<std::string, Val>> fields;
    std::vector<std::pair<Val, std::uint64_t>> iov;
    std::string text;

    [[nodiscard]] const Val* field(const std::string& key) const {
        for (const auto& [k, v] : fields)
            if (k == key)
                return &v;
        return nullptr;
    }
    [[nodiscard]] std::uint64_t num(const std::string& key, std::uint64_t dflt = 0) const {
        const Val* v = field(key);
        return v && v->kind == Val::Kind::num ? v->num : dflt;
    }
};

/// The SQE fields a case sets, by their place in the 64-byte SQE (user_data is the harness's:
/// 0x1000 + the SQE's index).
enum Field : int {
    f_flags,   ///< u8 at 1: IOSQE_*
    f_ioprio,  ///< u16 at 2
    f_fd,      ///< s32 at 4
    f_off,     ///< u64 at 8 (addr2)
    f_addr,    ///< u64 at 16 (splice_off_in)
    f_len,     ///< u32 at 24
    f_opflags, ///< u32 at 28: rw_flags, msg_flags, open_flags, timeout_flags, ...
    f_bufidx,  ///< u16 at 40 (buf_index, buf_group)
    f_pers,    ///< u16 at 42 (personality)
    f_fi,      ///< u32 at 44 (file_index, splice_fd_in, addr_len)
    f_addr3,   ///< u64 at 48
    f_count,
};
/// The text form's names of the fields, by Field.
extern const char* const field_names[f_count];

struct Sqe {
    std::uint8_t opcode = 0;
    Val f[f_count];
};

struct Case {
    std::string origin; ///< "seed:index", or the file it was read from
    std::vector<Obj> objs;
    std::vector<Sqe> sqes;

    [[nodiscard]] const Obj* obj(const Val& v) const {
        if (v.kind != Val::Kind::obj)
            return nullptr;
        for (const Obj& o : objs)
            if (o.name == v.name)
                return &o;
        return nullptr;
    }
};

/// The opcode's name in the text form ("read", "poll_add"), or its number.
std::string opcode_name(std::uint8_t op);

/// How the two sides' outcomes differ, for one SQE or the case.
enum class DiffKind : std::uint8_t {
    crash,            ///< a child died of a signal or exited non-zero (an ASan or UBSan report)
    hang,             ///< a child outlived the hard deadline and was killed
    pending,          ///< one side completed the SQE, the other had not before the cancel (or never)
    success_vs_error, ///< one side succeeded, the other failed
    value,            ///< both succeeded with different results
    errno_only,       ///< both failed with different errnos
    flags,            ///< CQE flags differ (past the mask of flags that may differ)
    cqe_count,        ///< a different number of CQEs (multishot, CQE_SKIP_SUCCESS)
    effect,           ///< what is left after the case differs: buffer bytes, files, descriptor state
};
const char* diff_kind_name(DiffKind k);

/// A result no CQE gave (Diff::all_uring, Diff::all_epoll).
inline constexpr int no_result = -1'000'000;

struct Diff {
    DiffKind kind = DiffKind::value;
    int sqe = -1;           ///< the SQE it concerns (-1: none known)
    bool epoll_side = true; ///< crash and hang: which child
    int res_uring = 0;      ///< final results of SQE `sqe`
    int res_epoll = 0;
    int phase_uring = 0; ///< 0: no final CQE at all, 1: before the cancel, 2: after the cancel
    int phase_epoll = 0;
    std::string key;                  ///< effect: what differs ("fd:REG", "obj:b0", "fs", ...)
    std::string val_uring, val_epoll; ///< effect: the two values
    /// Every SQE's final result on each side (no_result: none), for context.
    std::vector<int> all_uring, all_epoll;
    std::string what; ///< the readable detail
    std::string log;  ///< crash: the end of the child's stderr
};

/// A class of differences the epoll engine is known to have, so that a run can tell what is
/// new. Each entry names the defect by opcode and argument class, and says why in one line.
struct Known {
    const char* name;
    const char* reason;
    bool (*match)(const Case&, const Diff&);
};
/// The list (tests/fuzz/diff_engines_known.cpp): shrink it as the engine's fixes land.
const std::vector<Known>& known_differences();
/// The classes of the link timeouts and zero-copy sends (diff_engines_known_more.cpp).
const std::vector<Known>& more_known_differences();

// Helpers the classifiers use.
/// The SQE a difference concerns, or nullptr.
const Sqe* sqe_of(const Case& c, const Diff& d);
/// True when the SQE makes descriptors (openat, openat2, socket, accept, pipe).
bool makes_fd(const Sqe& q);
/// True when any SQE of the case has opcode `op`.
bool has_opcode(const Case& c, std::uint8_t op);
/// True when the value names a descriptor of the environment called `env`.
bool is_fd(const Val& v, const char* env);
/// True when the value is a descriptor number no environment descriptor has: negative, closed,
/// or huge.
bool is_bad_fd(const Val& v);
/// True when an iovec array value is a bad pointer, or one of its elements is (with a non-zero
/// length), or when `count` is more than IOV_MAX.
bool bad_iovec(const Case& c, const Val& arr, std::uint64_t count);
/// The pipe, connection or listener descriptor `v` belongs to (both ends count as one); empty
/// for an argument that is no descriptor.
std::string connection(const Val& v);

} // namespace diffeng
