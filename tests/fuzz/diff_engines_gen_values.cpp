// tests/fuzz/diff_engines_gen_values.cpp - the differential fuzzer's grammar of argument values:
// descriptors, paths, lengths, buffers, iovecs, offsets, flags, addresses, futex words, ...,
// each mostly good and now and then bad (null and bad pointers, bad descriptors, sizes past
// the limits), and the memory objects they point at.

#include "diff_engines_gen.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace diffeng {

namespace {

const std::initializer_list<const char*> paths = {"data",        "ro",       "empty",       "sub",     "sub/inner",
                                                  "link",        "dangling", "nonexistent", "newfile", "newdir",
                                                  "sub/newfile", "",         "data/x",      "direct"};

} // namespace

std::string Gen::add(std::string kind, std::vector<std::pair<std::string, Val>> fields, std::string text) {
    Obj o;
    o.name = std::string(1, kind == "str" ? 's' : kind[0]) + std::to_string(nobj++);
    o.kind = std::move(kind);
    o.fields = std::move(fields);
    o.text = std::move(text);
    c.objs.push_back(std::move(o));
    return c.objs.back().name;
}

Val Gen::bad_ptr() { return r.pct(30) ? Val::n(0) : Val::ptr(r.pick({"unmapped", "protnone", "noncanon", "edge"})); }

Val Gen::bad_fd() {
    switch (r.below(6)) {
    case 0: return Val::i(-1);
    case 1: return Val::fd("CLOSED");
    case 2: return Val::i(1'000'000);
    case 3: return Val::i(INT_MAX);
    case 4: return Val::i(AT_FDCWD);
    default: return Val::fd("NEW0");
    }
}

Val Gen::fd_from(std::initializer_list<const char*> good) {
    const auto x = r.below(100);
    if (x < 72)
        return Val::fd(r.pick(good));
    if (x < 90)
        return Val::fd(env_fd_names[r.below(env_count)]);
    return bad_fd();
}

Val Gen::dirfd() {
    const auto x = r.below(100);
    if (x < 45)
        return Val::fd("DIR");
    if (x < 85)
        return Val::i(AT_FDCWD);
    if (x < 92)
        return Val::fd(r.pick({"REG", "PIPE_R", "UNIX_A"}));
    return bad_fd();
}

Val Gen::path(bool may_create) {
    if (r.pct(8))
        return bad_ptr();
    std::string p;
    const auto x = r.below(100);
    if (x < 4)
        p = std::string(5000, 'a'); // longer than PATH_MAX
    else if (x < 7)
        p = std::string(300, 'b'); // a component longer than NAME_MAX
    else
        p = r.pick(paths);
    if (!may_create && (p == "newfile" || p == "newdir"))
        p = "data";
    return Val::obj(add("str", {}, p));
}

std::uint32_t Gen::length(std::uint32_t good) {
    const auto x = r.below(100);
    if (x < 62)
        return good;
    if (x < 72)
        return 0;
    if (x < 79)
        return 1;
    if (x < 86)
        return 4096;
    if (x < 91)
        return 1u << 20;
    if (x < 96)
        return 0x7fffffffu;
    return 0xffffffffu;
}

// A buffer of (about) `len` bytes: write sources hold a pattern, read targets start as 0xCC.
Val Gen::buffer(std::uint64_t len, bool source) {
    if (r.pct(10))
        return bad_ptr();
    std::uint64_t size = std::min<std::uint64_t>(std::max<std::uint64_t>(len, 1), 1u << 20);
    if (len > (1u << 20))
        size = 4096; // the call reaches past it, into the arena (and the guard page)
    std::vector<std::pair<std::string, Val>> f{{"size", Val::n(size)}};
    if (source)
        f.emplace_back("pat", Val::n(1));
    return Val::obj(add("buf", f));
}

Val Gen::offset() {
    switch (r.below(20)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4: return Val::i(-1);
    case 5:
    case 6:
    case 7:
    case 8:
    case 9:
    case 10: return Val::n(0);
    case 11:
    case 12: return Val::n(100);
    case 13: return Val::n(4096);
    case 14: return Val::n(8192);
    case 15: return Val::n(1ull << 40);
    case 16: return Val::i(-2);
    case 17: return Val::n(0x7fffffffffffffffull);
    default: return Val::n(r.below(9000));
    }
}

Val Gen::rw_flags() {
    if (r.pct(75))
        return Val::n(0);
    return Val::n(r.pick<std::uint64_t>(
        {RWF_NOWAIT, RWF_HIPRI, RWF_DSYNC, RWF_SYNC, RWF_APPEND, 0x20 /*NOAPPEND*/, 0x100000 /*unknown*/}));
}

Val Gen::ioprio_rw() {
    if (r.pct(90))
        return Val::n(0);
    return Val::n(r.pick<std::uint64_t>({(2u << 13) | 4u, (7u << 13)}));
}

// An iovec array of `count` elements over buffers of `each` bytes (or bad in places).
Val Gen::iovec(std::uint64_t count, std::uint64_t each, bool source) {
    if (r.pct(8))
        return bad_ptr();
    if (count == 1024 || count == 1025) {
        Val b = buffer(8 * count, source);
        const std::string name = add("iov", {{"rep", Val::n(count)}});
        c.objs.back().iov.emplace_back(b, 8);
        return Val::obj(name);
    }
    const std::uint64_t real = std::min<std::uint64_t>(count, 4);
    std::vector<std::pair<Val, std::uint64_t>> els;
    for (std::uint64_t k = 0; k < std::max<std::uint64_t>(real, 1); ++k) {
        std::uint64_t l = each;
        if (r.pct(5))
            l = r.pick<std::uint64_t>({0, 0x7fffffffffffffffull, 0xffffffffull});
        Val b = r.pct(8) ? bad_ptr() : buffer(std::min<std::uint64_t>(l, 1u << 20), source);
        els.emplace_back(b, l);
    }
    const std::string name = add("iov");
    c.objs.back().iov = els;
    return Val::obj(name);
}

std::uint64_t Gen::iov_count() {
    const auto x = r.below(100);
    if (x < 45)
        return 1;
    if (x < 65)
        return 2;
    if (x < 75)
        return 3;
    if (x < 81)
        return 0;
    if (x < 87)
        return 1024;
    if (x < 93)
        return 1025;
    return r.pick<std::uint64_t>({0x7fffffffu, 0xffffffffu});
}

Val Gen::ud_target() {
    if (r.pct(25) || nsqe == 1)
        return Val::user(-1);
    int k = static_cast<int>(r.below(static_cast<std::uint64_t>(nsqe)));
    if (k == cur)
        k = (k + 1) % nsqe;
    return Val::user(k);
}

Val Gen::timespec() {
    if (r.pct(8))
        return bad_ptr();
    std::int64_t sec = 0, nsec = 0;
    switch (r.below(6)) {
    case 0: break;
    case 1: nsec = 1'000'000; break;
    case 2:
    case 3: sec = 3600; break;
    case 4: sec = -1; break;
    default: nsec = 2'000'000'000; break;
    }
    return Val::obj(add("ts", {{"sec", Val::i(sec)}, {"nsec", Val::i(nsec)}}));
}

Val Gen::sockaddr(std::initializer_list<const char*> kinds) {
    if (r.pct(8))
        return bad_ptr();
    return Val::obj(add("sa", {}, r.pick(kinds)));
}

Val Gen::msg_flags(bool send) {
    if (r.pct(60))
        return Val::n(0);
    if (send)
        return Val::n(r.pick<std::uint64_t>(
            {MSG_DONTWAIT, MSG_NOSIGNAL, MSG_MORE, MSG_OOB, MSG_WAITALL, MSG_DONTWAIT | MSG_NOSIGNAL, 0x80000000u}));
    return Val::n(r.pick<std::uint64_t>(
        {MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL, MSG_TRUNC, MSG_OOB, MSG_ERRQUEUE, MSG_CMSG_CLOEXEC}));
}

Val Gen::msghdr(bool send) {
    if (r.pct(8))
        return bad_ptr();
    std::vector<std::pair<std::string, Val>> f;
    if (send) {
        if (r.pct(25)) {
            f.emplace_back("name", sockaddr({"udp", "refused", "badfam"}));
            f.emplace_back("namelen", Val::n(r.pick<std::uint64_t>({16, 16, 0, 200})));
        }
    } else if (r.pct(50)) {
        f.emplace_back("name", sockaddr({"out"}));
        f.emplace_back("namelen", Val::n(r.pick<std::uint64_t>({128, 128, 0, 4})));
    }
    const std::uint64_t cnt = r.pct(80) ? r.pick<std::uint64_t>({1, 1, 2}) : iov_count();
    f.emplace_back("iov", iovec(cnt, r.pick<std::uint64_t>({16, 64, 4096}), send));
    f.emplace_back("iovlen", Val::n(cnt));
    if (r.pct(25)) {
        f.emplace_back("control", r.pct(85) ? buffer(64, false) : bad_ptr());
        f.emplace_back("controllen", Val::n(r.pick<std::uint64_t>({64, 64, 8, 0xffffffffu})));
    }
    return Val::obj(add("msg", f));
}

Val Gen::open_flags() {
    return Val::n(
        r.pick<std::uint64_t>({O_RDONLY, O_RDWR, O_RDWR | O_CREAT, O_WRONLY | O_CREAT | O_EXCL, O_DIRECTORY, O_PATH,
                               O_RDONLY | O_NONBLOCK, O_RDWR | O_TRUNC, O_TMPFILE | O_RDWR, O_RDWR | O_DIRECT,
                               O_RDONLY | O_CLOEXEC, O_RDWR | O_CREAT | O_APPEND, 0x7ff00000u}));
}

Val Gen::file_index() { return Val::n(r.pct(94) ? 0 : r.pick<std::uint64_t>({1, 0xffffffffu})); }

Val Gen::xattr_name() {
    if (r.pct(8))
        return bad_ptr();
    if (r.pct(4))
        return Val::obj(add("str", {}, "user." + std::string(300, 'n'))); // longer than XATTR_NAME_MAX
    return Val::obj(add("str", {},
                        r.pick({"user.pre", "user.pre", "user.new", "user.new", "trusted.t", "security.s",
                                "system.posix_acl_access", "other.x", "user.", ""})));
}

// The word of a futex call: mostly the case's own word (so that a wake finds a wait),
// sometimes another word, a misaligned one or a bad pointer.
Val Gen::futex_addr() {
    const auto x = r.below(100);
    if (x < 80 && futex_word.empty()) {
        futex_value = r.pick<std::uint64_t>({0, 0, 5});
        futex_word = add("u32", {{"v", Val::n(futex_value)}});
    }
    if (x < 80)
        return Val::obj(futex_word);
    if (x < 86)
        return Val::obj(add("u32", {{"v", Val::n(0)}}));
    if (x < 92)
        return Val::obj(add("u32", {{"v", Val::n(0)}}), r.pick<std::uint64_t>({1, 2}));
    return bad_ptr();
}

Val Gen::futex_flags() {
    namespace f2 = ringo::uring::compat::futex2;
    if (r.pct(85))
        return Val::n(r.pick<std::uint64_t>({f2::size_u32 | f2::private_, f2::size_u32 | f2::private_, f2::size_u32}));
    return Val::n(r.pick<std::uint64_t>({f2::size_u8, f2::size_u16, f2::size_u64, f2::size_u32 | f2::numa,
                                         f2::size_u32 | 8 /*FUTEX2_MPOL*/, f2::size_u32 | 0x100, 0xffffffffu}));
}

// A futex_waitv array of n entries (at most 4 real ones: a count past them reads the arena
// after the object): mostly the case's own word with the value it holds.
Val Gen::futex_waitv(std::uint64_t n) {
    namespace f2 = ringo::uring::compat::futex2;
    std::vector<std::pair<std::string, Val>> fl{{"n", Val::n(std::min<std::uint64_t>(n, 4))}};
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(n, 4); ++k) {
        const std::string i = std::to_string(k);
        const Val a = futex_addr();
        const bool own = a.kind == Val::Kind::obj && a.name == futex_word;
        fl.emplace_back("v" + i, Val::n(r.pct(80) ? (own ? futex_value : 0) : r.pick<std::uint64_t>({7, 1ull << 32})));
        fl.emplace_back("a" + i, a);
        fl.emplace_back("f" + i, r.pct(88) ? Val::n(r.pick<std::uint64_t>({f2::size_u32 | f2::private_, f2::size_u32}))
                                           : futex_flags());
        if (r.pct(3))
            fl.emplace_back("r" + i, Val::n(1)); // (__reserved, which the kernel wants 0)
    }
    return Val::obj(add("waitv", fl));
}

// A zero-copy send's flags (ioprio): POLL_FIRST, FIXED_BUF (no buffer is registered),
// REPORT_USAGE, SEND_VECTORIZED, and ones it refuses (MULTISHOT, BUNDLE, unknown).
Val Gen::zc_flags() {
    if (r.pct(50))
        return Val::n(0);
    return Val::n(r.pick<std::uint64_t>({1, 8, 8, 0x20, 0x20, 0x28, 0x21, 4, 2, 0x10, 0x100}));
}

Val Gen::waitid_options() {
    if (r.pct(85))
        return Val::n(r.pick<std::uint64_t>({WEXITED, WEXITED, WEXITED | WNOHANG, WEXITED | WNOWAIT,
                                             WEXITED | WNOHANG | WNOWAIT, WSTOPPED | WNOHANG, WCONTINUED | WNOHANG}));
    return Val::n(r.pick<std::uint64_t>({0, WNOHANG, 0x80000000u, 0x1000, __WALL | WEXITED}));
}

} // namespace diffeng
