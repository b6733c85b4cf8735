// Differential fuzzer of the epoll engine against io_uring (docs/ops.md, "Differential fuzzer").
// Each case is a few raw SQEs with good and bad arguments; it runs twice, in two forked
// children that each set up the same fresh environment (files in a scratch directory, pipes,
// sockets, eventfd, timerfd, memfd, ... at the same descriptor numbers): once on a Ring served
// by io_uring, once on a Ring served by the epoll engine. The children report every SQE's CQEs
// and what the case left behind (the bytes of its buffers, the files, the state of each
// descriptor); the parent compares the reports. A crash or hang of either child, or any
// difference but in the errno of two failures, is a failure; a difference of errnos is counted
// apart. Differences the engine is known to have are classified by
// tests/fuzz/diff_engines_known.cpp; with --ci the exit status is 0 only when every one found
// is known.
//
//   diff_engines [--seconds N] [--seed S]   random cases for N seconds (default 10)
//   diff_engines --case SEED:INDEX|FILE     one case, with both sides' CQEs
//   diff_engines --replay DIR|FILE          every *.case file of DIR (the corpus)
//   diff_engines --print SEED:INDEX         a generated case's text form
//   options: --save DIR (each new kind of difference, shrunk, as a .case file), --ci,
//            --strict-errno (--ci fails on unknown errno differences too), --sqes N (SQEs per
//            case at most, default 4), --quiet-ms N (how long a side waits without a CQE
//            before it cancels what is left; default 30), --deadline-ms N (a child's hard
//            deadline, default 5000), --max-cases N, --verbose
#include "diff_engines.hpp"

#include <ringo/core/options.hpp>
#include <ringo/uring/compat.hpp>
#include <ringo/uring/ring.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

// In the AddressSanitizer build: an allocation of gigabytes (a table sized by a huge descriptor
// number) fails at once instead of touching the memory; the child then dies with ASan's report,
// counted as a crash. (Elsewhere the children's address space is limited: see child_main.)
#if defined(__SANITIZE_ADDRESS__)
#define DIFF_ENGINES_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DIFF_ENGINES_ASAN 1
#endif
#endif
#ifdef DIFF_ENGINES_ASAN
extern "C" const char* __asan_default_options() { return "max_allocation_size_mb=2048:allocator_may_return_null=0"; }
#endif

namespace diffeng {

namespace opc = ringo::uring::compat::opcode;
using ringo::uring::EngineKind;

// ------------------------------------------------------------------ names

namespace {

struct OpName {
    std::uint8_t op;
    const char* name;
};
// Every opcode the epoll engine serves (its table `ways[]` in src/epoll/op_table.hpp).
constexpr OpName op_names[] = {
    {opc::nop, "nop"},
    {opc::readv, "readv"},
    {opc::writev, "writev"},
    {opc::fsync, "fsync"},
    {opc::poll_add, "poll_add"},
    {opc::poll_remove, "poll_remove"},
    {opc::sync_file_range, "sync_file_range"},
    {opc::sendmsg, "sendmsg"},
    {opc::recvmsg, "recvmsg"},
    {opc::timeout, "timeout"},
    {opc::timeout_remove, "timeout_remove"},
    {opc::accept, "accept"},
    {opc::async_cancel, "async_cancel"},
    {opc::connect, "connect"},
    {opc::fallocate, "fallocate"},
    {opc::openat, "openat"},
    {opc::close, "close"},
    {opc::statx, "statx"},
    {opc::read, "read"},
    {opc::write, "write"},
    {opc::fadvise, "fadvise"},
    {opc::send, "send"},
    {opc::recv, "recv"},
    {opc::openat2, "openat2"},
    {opc::epoll_ctl, "epoll_ctl"},
    {opc::shutdown, "shutdown"},
    {opc::renameat, "renameat"},
    {opc::unlinkat, "unlinkat"},
    {opc::mkdirat, "mkdirat"},
    {opc::symlinkat, "symlinkat"},
    {opc::linkat, "linkat"},
    {opc::socket, "socket"},
    {opc::ftruncate, "ftruncate"},
    {opc::bind, "bind"},
    {opc::listen, "listen"},
    {opc::splice, "splice"},
    {opc::tee, "tee"},
};
constexpr std::size_t op_count = sizeof op_names / sizeof op_names[0];

// The environment's descriptors, in the order each child makes them; descriptor i is number
// fd_base + i in both children.
const char* const env_fd_names[] = {
    "REG",          // regular file "data" (8192 bytes), O_RDWR
    "RO",           // regular file "ro" (100 bytes), O_RDONLY
    "DIRECT",       // regular file "direct" (8192 bytes), O_RDWR | O_DIRECT
    "DIR",          // the scratch directory, O_RDONLY | O_DIRECTORY
    "PIPE_R",       // read end of a pipe holding 20 bytes
    "PIPE_W",       // its write end
    "PIPE_R_EMPTY", // read end of an empty pipe (a read waits)
    "PIPE_W_EMPTY", // its write end
    "PIPE_R_FULL",  // read end of a full pipe (4096 bytes, its capacity)
    "PIPE_W_FULL",  // its write end (a write waits)
    "PIPE_R_NB",    // read end of an empty O_NONBLOCK pipe
    "PIPE_W_NB",    // its write end
    "UNIX_A",       // AF_UNIX stream socketpair end with 16 bytes queued
    "UNIX_B",       // the other end, nothing queued
    "TCP_C",        // loopback TCP client, connected and accepted, 15 bytes queued
    "TCP_S",        // the accepted server side, nothing queued
    "TCP_P",        // loopback TCP client connected, still in LISTEN's backlog
    "LISTEN",       // listening TCP socket (127.0.0.1, one connection pending)
    "TCP_NEW",      // fresh TCP socket, neither bound nor connected
    "UDP",          // UDP socket bound and connected to itself, one datagram queued
    "EVENTFD",      // eventfd with counter 5
    "TIMERFD",      // timerfd that expired once
    "TIMERFD_IDLE", // timerfd never armed (a read waits)
    "MEMFD",        // memfd of 5000 bytes
    "DEVNULL",      // /dev/null, O_RDWR
    "EPOLL",        // an epoll instance
};
constexpr int env_count = sizeof env_fd_names / sizeof env_fd_names[0];
constexpr int fd_base = 64;     // the first environment descriptor
constexpr int closed_fd = 300;  // a number no descriptor has
constexpr int report_fd = 1000; // a child's report pipe
constexpr std::uint64_t ud_base = 0x1000;
constexpr std::uint64_t ud_unknown = 0xdead0000;
constexpr std::uint64_t ud_cancel_all = 0xCA11CA11;

int env_index(const std::string& name) {
    for (int i = 0; i < env_count; ++i)
        if (name == env_fd_names[i])
            return i;
    return -1;
}

} // namespace

const char* const field_names[f_count] = {"flags",   "ioprio", "fd",   "off", "addr", "len",
                                          "opflags", "bufidx", "pers", "fi",  "addr3"};

std::string opcode_name(std::uint8_t op) {
    for (const OpName& o : op_names)
        if (o.op == op)
            return o.name;
    return std::to_string(op);
}

const char* diff_kind_name(DiffKind k) {
    switch (k) {
    case DiffKind::crash: return "crash";
    case DiffKind::hang: return "hang";
    case DiffKind::pending: return "pending";
    case DiffKind::success_vs_error: return "success-vs-error";
    case DiffKind::value: return "value";
    case DiffKind::errno_only: return "errno";
    case DiffKind::flags: return "flags";
    case DiffKind::cqe_count: return "cqe-count";
    case DiffKind::effect: return "effect";
    }
    return "?";
}

// ------------------------------------------------------------------ helpers for classifiers

const Sqe* sqe_of(const Case& c, const Diff& d) {
    return d.sqe >= 0 && static_cast<std::size_t>(d.sqe) < c.sqes.size() ? &c.sqes[static_cast<std::size_t>(d.sqe)]
                                                                         : nullptr;
}

bool has_opcode(const Case& c, std::uint8_t op) {
    return std::any_of(c.sqes.begin(), c.sqes.end(), [op](const Sqe& s) { return s.opcode == op; });
}

bool is_fd(const Val& v, const char* env) { return v.kind == Val::Kind::fd && v.name == env; }

bool is_bad_fd(const Val& v) {
    if (v.kind == Val::Kind::fd)
        return v.name == "CLOSED";
    if (v.kind != Val::Kind::num)
        return true;
    const auto n = static_cast<std::int32_t>(v.num);
    return n < 0 || n >= closed_fd;
}

namespace {
// The elements an iov object expands to (rep=N: N elements, each `len` on from the last).
std::vector<std::pair<Val, std::uint64_t>> iov_elements(const Obj& o) {
    std::vector<std::pair<Val, std::uint64_t>> out;
    const std::uint64_t rep = o.num("rep", 1);
    if (o.iov.empty())
        return out;
    if (rep <= 1)
        return o.iov;
    const auto& [base, len] = o.iov.front();
    for (std::uint64_t k = 0; k < rep; ++k) {
        Val b = base;
        if (b.kind == Val::Kind::obj)
            b.num += k * len;
        out.emplace_back(b, len);
    }
    return out;
}
} // namespace

bool bad_iovec(const Case& c, const Val& arr, std::uint64_t count) {
    if (count > 1024)
        return true;
    if (count == 0)
        return false;
    if (arr.bad_pointer())
        return true;
    const Obj* o = c.obj(arr);
    if (!o || o->kind != "iov")
        return false;
    auto els = iov_elements(*o);
    if (els.size() < count)
        return true; // the kernel reads past the array
    for (std::uint64_t k = 0; k < count; ++k)
        if (els[k].second != 0 && els[k].first.bad_pointer())
            return true;
    return false;
}

// ------------------------------------------------------------------ text form

namespace {

std::string val_text(const Val& v) {
    switch (v.kind) {
    case Val::Kind::num: {
        const auto s = static_cast<std::int64_t>(v.num);
        if (s >= -1'000'000 && s <= 1'000'000)
            return std::to_string(s);
        char b[32];
        std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v.num));
        return b;
    }
    case Val::Kind::fd: return "fd:" + v.name;
    case Val::Kind::obj: return "@" + v.name + (v.num ? "+" + std::to_string(v.num) : "");
    case Val::Kind::ptr: return v.name;
    case Val::Kind::ud: return v.ud < 0 ? "ud:-" : "ud:" + std::to_string(v.ud);
    }
    return "?";
}

Val parse_val(const std::string& t) {
    if (t.rfind("fd:", 0) == 0)
        return Val::fd(t.substr(3));
    if (t.rfind("ud:", 0) == 0)
        return Val::user(t == "ud:-" ? -1 : std::stoi(t.substr(3)));
    if (!t.empty() && t[0] == '@') {
        auto plus = t.find('+');
        if (plus == std::string::npos)
            return Val::obj(t.substr(1));
        return Val::obj(t.substr(1, plus - 1), std::stoull(t.substr(plus + 1), nullptr, 0));
    }
    if (t == "unmapped" || t == "protnone" || t == "noncanon" || t == "edge")
        return Val::ptr(t);
    if (t == "null")
        return Val::n(0);
    if (!t.empty() && t[0] == '-')
        return Val::i(std::stoll(t, nullptr, 0));
    if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0])))
        throw std::invalid_argument("not a value: '" + t + "'");
    return Val::n(std::stoull(t, nullptr, 0));
}

// Strings in the text form: anything but letters, digits and . / _ - is %XX.
std::string escape(const std::string& s) {
    std::string out;
    for (unsigned char ch : s) {
        if (std::isalnum(ch) || ch == '.' || ch == '/' || ch == '_' || ch == '-') {
            out += static_cast<char>(ch);
        } else {
            char b[4];
            std::snprintf(b, sizeof b, "%%%02X", ch);
            out += b;
        }
    }
    return out;
}
std::string unescape(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::string obj_text(const Obj& o) {
    std::string s = "obj " + o.name + " " + o.kind;
    if (!o.text.empty() || o.kind == "str" || o.kind == "sa")
        s += " text=" + (o.text.empty() ? std::string("%00") : escape(o.text));
    for (const auto& [k, v] : o.fields)
        s += " " + k + "=" + val_text(v);
    for (const auto& [b, l] : o.iov)
        s += " e=" + val_text(b) + "," + std::to_string(l);
    return s;
}

std::string sqe_text(const Sqe& q) {
    std::string s = "sqe " + opcode_name(q.opcode);
    for (int f = 0; f < f_count; ++f)
        if (!q.f[f].is_num(0))
            s += std::string(" ") + field_names[f] + "=" + val_text(q.f[f]);
    return s;
}

std::string case_text(const Case& c) {
    std::string s;
    for (const Obj& o : c.objs)
        s += obj_text(o) + "\n";
    for (const Sqe& q : c.sqes)
        s += sqe_text(q) + "\n";
    return s;
}

Case parse_case(const std::string& text, const std::string& origin) {
    Case c;
    c.origin = origin;
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        try {
            std::istringstream ls(line);
            std::string word;
            if (!(ls >> word) || word[0] == '#')
                continue;
            if (word == "obj") {
                Obj o;
                ls >> o.name >> o.kind;
                std::string tok;
                while (ls >> tok) {
                    auto eq = tok.find('=');
                    if (eq == std::string::npos)
                        throw std::invalid_argument("expected key=value: " + tok);
                    std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
                    if (k == "text") {
                        o.text = v == "%00" ? std::string() : unescape(v);
                    } else if (k == "e") {
                        auto comma = v.rfind(',');
                        if (comma == std::string::npos)
                            throw std::invalid_argument("iov element needs base,len: " + v);
                        o.iov.emplace_back(parse_val(v.substr(0, comma)), std::stoull(v.substr(comma + 1), nullptr, 0));
                    } else {
                        o.fields.emplace_back(k, parse_val(v));
                    }
                }
                c.objs.push_back(std::move(o));
            } else if (word == "sqe") {
                Sqe q;
                std::string op;
                ls >> op;
                bool found = false;
                for (const OpName& n : op_names)
                    if (op == n.name) {
                        q.opcode = n.op;
                        found = true;
                    }
                if (!found)
                    q.opcode = static_cast<std::uint8_t>(std::stoul(op, nullptr, 0));
                std::string tok;
                while (ls >> tok) {
                    auto eq = tok.find('=');
                    if (eq == std::string::npos)
                        throw std::invalid_argument("expected field=value: " + tok);
                    std::string k = tok.substr(0, eq);
                    int f = 0;
                    while (f < f_count && k != field_names[f])
                        ++f;
                    if (f == f_count)
                        throw std::invalid_argument("unknown SQE field " + k);
                    q.f[f] = parse_val(tok.substr(eq + 1));
                }
                c.sqes.push_back(q);
            } else {
                throw std::invalid_argument("unknown line kind " + word);
            }
        } catch (const std::exception& e) {
            throw std::runtime_error(origin + ":" + std::to_string(lineno) + ": " + e.what());
        }
    }
    if (c.sqes.empty())
        throw std::runtime_error(origin + ": no sqe line");
    return c;
}

// ------------------------------------------------------------------ generator

struct Rng {
    std::uint64_t s;
    std::uint64_t next() { // splitmix64
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
    bool pct(unsigned p) { return below(100) < p; }
    template <class T>
    T pick(std::initializer_list<T> l) {
        return *(l.begin() + below(l.size()));
    }
};

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
const std::initializer_list<const char*> send_fds = {"UNIX_A", "UNIX_B", "TCP_C", "TCP_S", "UDP", "TCP_NEW", "TCP_P"};
const std::initializer_list<const char*> paths = {"data",        "ro",       "empty",       "sub",     "sub/inner",
                                                  "link",        "dangling", "nonexistent", "newfile", "newdir",
                                                  "sub/newfile", "",         "data/x",      "direct"};

class Gen {
public:
    Gen(std::uint64_t seed, std::uint64_t index, unsigned max_sqes) : max(max_sqes) {
        r.s = seed * 0x2545F4914F6CDD1Dull + index;
        (void)r.next();
        r.s ^= index * 0x9E3779B97F4A7C15ull;
        c.origin = std::to_string(seed) + ":" + std::to_string(index);
    }

    Case make() {
        const unsigned n = std::min(max, static_cast<unsigned>(r.pct(30) ? 1 : r.pct(50) ? 2 : r.pct(55) ? 3 : 4));
        nsqe = static_cast<int>(n);
        for (cur = 0; cur < nsqe; ++cur) {
            Sqe q;
            q.opcode = op_names[r.below(op_count)].op;
            fill(q);
            sqe_flags(q);
            c.sqes.push_back(q);
        }
        return c;
    }

private:
    Rng r;
    Case c;
    unsigned max;
    int nobj = 0;
    int cur = 0;
    int nsqe = 0;

    std::string add(std::string kind, std::vector<std::pair<std::string, Val>> fields = {}, std::string text = {}) {
        Obj o;
        o.name = std::string(1, kind == "str" ? 's' : kind[0]) + std::to_string(nobj++);
        o.kind = std::move(kind);
        o.fields = std::move(fields);
        o.text = std::move(text);
        c.objs.push_back(std::move(o));
        return c.objs.back().name;
    }

    Val bad_ptr() { return r.pct(30) ? Val::n(0) : Val::ptr(r.pick({"unmapped", "protnone", "noncanon", "edge"})); }
    Val bad_fd() {
        switch (r.below(6)) {
        case 0: return Val::i(-1);
        case 1: return Val::fd("CLOSED");
        case 2: return Val::i(1'000'000);
        case 3: return Val::i(INT_MAX);
        case 4: return Val::i(AT_FDCWD);
        default: return Val::fd("NEW0");
        }
    }
    Val fd_from(std::initializer_list<const char*> good) {
        const auto x = r.below(100);
        if (x < 72)
            return Val::fd(r.pick(good));
        if (x < 90)
            return Val::fd(env_fd_names[r.below(env_count)]);
        return bad_fd();
    }
    Val dirfd() {
        const auto x = r.below(100);
        if (x < 45)
            return Val::fd("DIR");
        if (x < 85)
            return Val::i(AT_FDCWD);
        if (x < 92)
            return Val::fd(r.pick({"REG", "PIPE_R", "UNIX_A"}));
        return bad_fd();
    }
    Val path(bool may_create = true) {
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
    std::uint32_t length(std::uint32_t good) {
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
    Val buffer(std::uint64_t len, bool source) {
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
    Val offset() {
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
    Val rw_flags() {
        if (r.pct(75))
            return Val::n(0);
        return Val::n(r.pick<std::uint64_t>(
            {RWF_NOWAIT, RWF_HIPRI, RWF_DSYNC, RWF_SYNC, RWF_APPEND, 0x20 /*NOAPPEND*/, 0x100000 /*unknown*/}));
    }
    Val ioprio_rw() {
        if (r.pct(90))
            return Val::n(0);
        return Val::n(r.pick<std::uint64_t>({(2u << 13) | 4u, (7u << 13)}));
    }
    // An iovec array of `count` elements over buffers of `each` bytes (or bad in places).
    Val iovec(std::uint64_t count, std::uint64_t each, bool source) {
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
    std::uint64_t iov_count() {
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
    Val ud_target() {
        if (r.pct(25) || nsqe == 1)
            return Val::user(-1);
        int k = static_cast<int>(r.below(static_cast<std::uint64_t>(nsqe)));
        if (k == cur)
            k = (k + 1) % nsqe;
        return Val::user(k);
    }
    Val timespec() {
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
    Val sockaddr(std::initializer_list<const char*> kinds) {
        if (r.pct(8))
            return bad_ptr();
        return Val::obj(add("sa", {}, r.pick(kinds)));
    }
    Val msg_flags(bool send) {
        if (r.pct(60))
            return Val::n(0);
        if (send)
            return Val::n(r.pick<std::uint64_t>({MSG_DONTWAIT, MSG_NOSIGNAL, MSG_MORE, MSG_OOB, MSG_WAITALL,
                                                 MSG_DONTWAIT | MSG_NOSIGNAL, 0x80000000u}));
        return Val::n(r.pick<std::uint64_t>(
            {MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL, MSG_TRUNC, MSG_OOB, MSG_ERRQUEUE, MSG_CMSG_CLOEXEC}));
    }
    Val msghdr(bool send) {
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
    Val open_flags() {
        return Val::n(
            r.pick<std::uint64_t>({O_RDONLY, O_RDWR, O_RDWR | O_CREAT, O_WRONLY | O_CREAT | O_EXCL, O_DIRECTORY, O_PATH,
                                   O_RDONLY | O_NONBLOCK, O_RDWR | O_TRUNC, O_TMPFILE | O_RDWR, O_RDWR | O_DIRECT,
                                   O_RDONLY | O_CLOEXEC, O_RDWR | O_CREAT | O_APPEND, 0x7ff00000u}));
    }
    Val file_index() { return Val::n(r.pct(94) ? 0 : r.pick<std::uint64_t>({1, 0xffffffffu})); }

    void fill(Sqe& q) {
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
            f[f_opflags] = Val::n(r.pick<std::uint64_t>({POLLIN, POLLIN, POLLOUT, POLLIN | POLLOUT, POLLPRI, POLLRDHUP,
                                                         0, EPOLLET | POLLIN, EPOLLONESHOT | POLLIN, 0xffffffffu}));
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
        case opc::timeout_remove:
            f[f_addr] = ud_target();
            if (r.pct(35)) {
                f[f_opflags] = Val::n(r.pick<std::uint64_t>({2, 2, 0x400}));
                f[f_off] = timespec();
            }
            break;
        case opc::accept: {
            f[f_fd] = fd_from({"LISTEN", "LISTEN", "LISTEN", "TCP_NEW", "TCP_C", "UNIX_A", "UDP", "REG"});
            const auto x = r.below(100);
            if (x < 55) {
                f[f_addr] = sockaddr({"out"});
                f[f_off] = r.pct(90)
                               ? Val::obj(add("u32", {{"v", Val::n(r.pick<std::uint64_t>({128, 128, 16, 0, 1000}))}}))
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
                f[f_opflags] = Val::n(
                    r.pct(60) ? 0
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
            f[f_len] =
                Val::n(r.pick<std::uint64_t>({EPOLL_CTL_ADD, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, 0, 9}));
            f[f_off] = r.pct(90) ? Val::fd(env_fd_names[r.below(env_count)]) : bad_fd();
            f[f_addr] =
                r.pct(88)
                    ? Val::obj(add("epev",
                                   {{"events", Val::n(r.pick<std::uint64_t>({EPOLLIN, EPOLLOUT, EPOLLIN | EPOLLET,
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
            f[f_off] =
                Val::n(r.pct(80) ? (std::strcmp(k, "unix") == 0 ? 110 : 16) : r.pick<std::uint64_t>({0, 4, 1000}));
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
        default: break;
        }
        // Now and then a non-zero reserved or unused field, which io_uring refuses.
        if (r.pct(3)) {
            const int which = static_cast<int>(r.below(3));
            q.f[which == 0 ? f_bufidx : which == 1 ? f_pers : f_addr3] = Val::n(1);
        }
    }

    void sqe_flags(Sqe& q) {
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
};

// Case INDEX of SEED: its SQEs (at most max_sqes) and their objects.
Case generate(std::uint64_t seed, std::uint64_t index, unsigned max_sqes = 4) {
    return Gen(seed, index, max_sqes).make();
}

// ------------------------------------------------------------------ options

struct Opts {
    double seconds = 10;
    std::uint64_t seed = 1;
    std::uint64_t max_cases = ~std::uint64_t{0};
    unsigned max_sqes = 4; // SQEs per case at most (1: every difference is one SQE's own)
    std::string replay, save, one_case, scratch;
    bool ci = false, verbose = false, strict_errno = false;
    int quiet_ms = 30;       // a side waits this long without a CQE, then cancels what is left
    int long_quiet_ms = 200; // the same when a difference of completion is checked again
    int cancel_ms = 250;     // how long a side waits for what the cancel ends
    int total_ms = 2000;     // a side's whole wait for CQEs before it cancels
    int deadline_ms = 5000;  // a child still running after this is killed: a hang
    int max_rss_mb = 1024;   // a child resident in more memory than this is killed: a crash
};

// ------------------------------------------------------------------ the arena

// The memory every case's objects live in, mapped once by the parent so that it has the same
// address in every child: pointers stored in objects (an iovec's base, a msghdr's name) are
// then the same bytes on both sides. After it: a PROT_NONE page and an unmapped page.
struct Arena {
    char* base = nullptr;
    std::size_t size = 8u << 20;
    char* protnone = nullptr;
    char* unmapped = nullptr;
};
Arena g_arena;

void map_arena() {
    const std::size_t page = 4096;
    void* m = ::mmap(nullptr, g_arena.size + 2 * page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        throw std::runtime_error(std::string("mmap of the arena: ") + std::strerror(errno));
    g_arena.base = static_cast<char*>(m);
    g_arena.protnone = g_arena.base + g_arena.size;
    g_arena.unmapped = g_arena.protnone + page;
    if (::mprotect(g_arena.protnone, page, PROT_NONE) != 0 || ::munmap(g_arena.unmapped, page) != 0)
        throw std::runtime_error(std::string("guard pages of the arena: ") + std::strerror(errno));
}

// ------------------------------------------------------------------ the child

std::uint64_t now_ns() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// A 64-bit hash of bytes, eight at a time (the sanitizer builds are unoptimised, and a case
// may leave megabytes to hash).
std::uint64_t fnv(const void* p, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ull) {
    const auto* b = static_cast<const unsigned char*>(p);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; ++i)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ n;
}

std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
    return b;
}

[[noreturn]] void fail_setup(const std::string& what) {
    const std::string line = "S " + what + ": " + std::strerror(errno) + "\n";
    (void)!::write(report_fd, line.data(), line.size());
    ::_exit(3);
}
void need(bool ok, const char* what) {
    if (!ok)
        fail_setup(what);
}

int remove_entry(const char* path, const struct stat*, int, FTW*) { return ::remove(path); }
void remove_tree(const std::string& dir) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) == 0)
        ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void write_file(const char* name, std::size_t n, char first) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>(first + static_cast<char>(i % 26));
    int fd = ::open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    need(fd >= 0, name);
    need(::write(fd, s.data(), n) == static_cast<ssize_t>(n), name);
    ::close(fd);
}

// What the environment's sockets are bound to (ports differ from child to child).
struct EnvInfo {
    sockaddr_in listen{};
    sockaddr_in udp{};
};

// Moves descriptor `fd` to its place, fd_base + i.
void place(int fd, int i) {
    need(fd >= 0, env_fd_names[i]);
    const int target = fd_base + i;
    if (fd == target)
        return;
    need(::dup2(fd, target) == target, "dup2");
    ::close(fd);
}

void send_all(int fd, const char* s) {
    need(::send(fd, s, std::strlen(s), 0) == static_cast<ssize_t>(std::strlen(s)), "send");
}

// The scratch directory and every environment descriptor, made afresh and in the same order
// in each child.
EnvInfo make_env(const std::string& work) {
    remove_tree(work);
    need(::mkdir(work.c_str(), 0755) == 0, "mkdir scratch");
    need(::chdir(work.c_str()) == 0, "chdir scratch");
    write_file("data", 8192, 'a');
    write_file("ro", 100, 'A');
    write_file("direct", 8192, 'k');
    write_file("empty", 0, 'a');
    need(::mkdir("sub", 0755) == 0, "mkdir sub");
    write_file("sub/inner", 10, 'x');
    need(::symlink("data", "link") == 0, "symlink");
    need(::symlink("nowhere", "dangling") == 0, "symlink");

    EnvInfo info;
    int i = 0;
    place(::open("data", O_RDWR), i++);
    place(::open("ro", O_RDONLY), i++);
    int direct = ::open("direct", O_RDWR | O_DIRECT);
    place(direct >= 0 ? direct : ::open("direct", O_RDWR), i++);
    place(::open(".", O_RDONLY | O_DIRECTORY), i++);
    int p[2];
    need(::pipe(p) == 0, "pipe");
    need(::write(p[1], "pipe-data-0123456789", 20) == 20, "pipe write");
    place(p[0], i++);
    place(p[1], i++);
    need(::pipe(p) == 0, "pipe");
    place(p[0], i++);
    place(p[1], i++);
    need(::pipe(p) == 0, "pipe");
    need(::fcntl(p[1], F_SETPIPE_SZ, 4096) >= 0, "F_SETPIPE_SZ");
    {
        const int cap = ::fcntl(p[1], F_GETPIPE_SZ);
        std::string fill(static_cast<std::size_t>(cap), 'F');
        need(::write(p[1], fill.data(), fill.size()) == cap, "fill pipe");
    }
    place(p[0], i++);
    place(p[1], i++);
    need(::pipe2(p, O_NONBLOCK) == 0, "pipe2");
    place(p[0], i++);
    place(p[1], i++);
    int sp[2];
    need(::socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
    send_all(sp[1], "unix-stream-data");
    place(sp[0], i++);
    place(sp[1], i++);
    // TCP on loopback: the listener takes two connections, accepts the first.
    int lis = ::socket(AF_INET, SOCK_STREAM, 0);
    need(lis >= 0, "socket");
    int one = 1;
    ::setsockopt(lis, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    need(::bind(lis, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "bind");
    need(::listen(lis, 16) == 0, "listen");
    socklen_t al = sizeof info.listen;
    need(::getsockname(lis, reinterpret_cast<sockaddr*>(&info.listen), &al) == 0, "getsockname");
    int cl = ::socket(AF_INET, SOCK_STREAM, 0);
    need(cl >= 0 && ::connect(cl, reinterpret_cast<sockaddr*>(&info.listen), sizeof info.listen) == 0, "connect");
    int sv = ::accept(lis, nullptr, nullptr);
    need(sv >= 0, "accept");
    send_all(sv, "tcp-server-data");
    int pend = ::socket(AF_INET, SOCK_STREAM, 0);
    need(pend >= 0 && ::connect(pend, reinterpret_cast<sockaddr*>(&info.listen), sizeof info.listen) == 0, "connect");
    place(cl, i++);
    place(sv, i++);
    place(pend, i++);
    place(lis, i++);
    place(::socket(AF_INET, SOCK_STREAM, 0), i++);
    int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
    need(udp >= 0 && ::bind(udp, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "udp bind");
    al = sizeof info.udp;
    need(::getsockname(udp, reinterpret_cast<sockaddr*>(&info.udp), &al) == 0, "getsockname");
    need(::connect(udp, reinterpret_cast<sockaddr*>(&info.udp), sizeof info.udp) == 0, "udp connect");
    send_all(udp, "udp-datagram");
    place(udp, i++);
    place(::eventfd(5, 0), i++);
    int tfd = ::timerfd_create(CLOCK_MONOTONIC, 0);
    need(tfd >= 0, "timerfd");
    itimerspec its{};
    its.it_value.tv_nsec = 1;
    need(::timerfd_settime(tfd, 0, &its, nullptr) == 0, "timerfd_settime");
    pollfd pf{tfd, POLLIN, 0};
    need(::poll(&pf, 1, 1000) == 1, "timerfd expiry");
    place(tfd, i++);
    place(::timerfd_create(CLOCK_MONOTONIC, 0), i++);
    int mfd = ::memfd_create("diff-engines", 0);
    need(mfd >= 0, "memfd_create");
    {
        std::string s(5000, 'm');
        need(::write(mfd, s.data(), s.size()) == 5000, "memfd write");
    }
    place(mfd, i++);
    place(::open("/dev/null", O_RDWR), i++);
    place(::epoll_create1(0), i++);
    if (i != env_count)
        fail_setup("environment table and setup disagree");
    return info;
}

// Where each object of a case lies in the arena.
struct Layout {
    std::map<std::string, std::pair<std::size_t, std::size_t>> at; // name -> offset, size
    std::size_t end = 0;
};

std::size_t obj_size(const Obj& o) {
    if (o.kind == "buf")
        return std::min<std::size_t>(std::max<std::size_t>(o.num("size", 64), 1), 4u << 20);
    if (o.kind == "iov")
        return 16 * std::max<std::size_t>(iov_elements(o).size(), 1);
    if (o.kind == "msg")
        return sizeof(msghdr);
    if (o.kind == "str")
        return o.text.size() + 1;
    if (o.kind == "ts")
        return 16;
    if (o.kind == "sa")
        return 128;
    if (o.kind == "how")
        return 32;
    if (o.kind == "epev")
        return 16;
    if (o.kind == "u32")
        return 4;
    throw std::runtime_error("unknown object kind " + o.kind);
}

Layout lay_out(const Case& c) {
    Layout l;
    std::size_t at = 0;
    for (const Obj& o : c.objs) {
        const std::size_t n = obj_size(o);
        l.at[o.name] = {at, n};
        at = (at + n + 63) & ~std::size_t{63};
    }
    l.end = at;
    if (l.end + 4096 > g_arena.size)
        throw std::runtime_error(c.origin + ": the case's objects do not fit the arena");
    return l;
}

std::uint64_t resolve(const Val& v, const Layout& l) {
    switch (v.kind) {
    case Val::Kind::num: return v.num;
    case Val::Kind::fd: {
        int n;
        if (v.name == "CLOSED")
            n = closed_fd;
        else if (v.name.rfind("NEW", 0) == 0)
            n = fd_base + env_count + std::stoi(v.name.substr(3));
        else if (int i = env_index(v.name); i >= 0)
            n = fd_base + i;
        else
            throw std::runtime_error("unknown descriptor name " + v.name);
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(n));
    }
    case Val::Kind::obj: {
        auto it = l.at.find(v.name);
        if (it == l.at.end())
            throw std::runtime_error("unknown object " + v.name);
        return reinterpret_cast<std::uintptr_t>(g_arena.base + it->second.first) + v.num;
    }
    case Val::Kind::ptr:
        if (v.name == "unmapped")
            return reinterpret_cast<std::uintptr_t>(g_arena.unmapped);
        if (v.name == "protnone")
            return reinterpret_cast<std::uintptr_t>(g_arena.protnone);
        if (v.name == "edge")
            return reinterpret_cast<std::uintptr_t>(g_arena.protnone - 64);
        return 0xdead000000000000ull; // noncanon
    case Val::Kind::ud: return v.ud < 0 ? ud_unknown : ud_base + static_cast<std::uint64_t>(v.ud);
    }
    return 0;
}

// Writes the objects into the arena (which the child has to itself, copy-on-write).
void materialize(const Case& c, const Layout& l, const EnvInfo& env) {
    std::memset(g_arena.base, 0xCC, l.end);
    std::memset(g_arena.protnone - 4096, 0xCC, 4096); // the page "edge" points into
    for (const Obj& o : c.objs) {
        char* p = g_arena.base + l.at.at(o.name).first;
        const std::size_t n = l.at.at(o.name).second;
        auto num = [&](const char* k) {
            const Val* v = o.field(k);
            return v ? resolve(*v, l) : 0;
        };
        if (o.kind == "buf") {
            std::memset(p, static_cast<int>(o.num("fill", 0xCC)), n);
            if (o.num("pat"))
                for (std::size_t i = 0; i < n; ++i)
                    p[i] = static_cast<char>('A' + i % 26);
        } else if (o.kind == "iov") {
            auto els = iov_elements(o);
            for (std::size_t k = 0; k < els.size(); ++k) {
                ::iovec v{reinterpret_cast<void*>(static_cast<std::uintptr_t>(resolve(els[k].first, l))),
                          static_cast<std::size_t>(els[k].second)};
                std::memcpy(p + 16 * k, &v, sizeof v);
            }
        } else if (o.kind == "msg") {
            ::msghdr m{};
            m.msg_name = reinterpret_cast<void*>(static_cast<std::uintptr_t>(num("name")));
            m.msg_namelen = static_cast<socklen_t>(num("namelen"));
            m.msg_iov = reinterpret_cast<::iovec*>(static_cast<std::uintptr_t>(num("iov")));
            m.msg_iovlen = static_cast<std::size_t>(num("iovlen"));
            m.msg_control = reinterpret_cast<void*>(static_cast<std::uintptr_t>(num("control")));
            m.msg_controllen = static_cast<std::size_t>(num("controllen"));
            m.msg_flags = static_cast<int>(num("flags"));
            std::memcpy(p, &m, sizeof m);
        } else if (o.kind == "str") {
            std::memcpy(p, o.text.c_str(), o.text.size() + 1);
        } else if (o.kind == "ts") {
            const auto sec = static_cast<std::int64_t>(num("sec")), nsec = static_cast<std::int64_t>(num("nsec"));
            std::memcpy(p, &sec, 8);
            std::memcpy(p + 8, &nsec, 8);
        } else if (o.kind == "sa") {
            std::memset(p, 0, n);
            if (o.text == "listen" || o.text == "udp") {
                std::memcpy(p, o.text == "listen" ? &env.listen : &env.udp, sizeof(sockaddr_in));
            } else if (o.text == "refused" || o.text == "any") {
                sockaddr_in a{};
                a.sin_family = AF_INET;
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                a.sin_port = htons(o.text == "refused" ? 1 : 0);
                std::memcpy(p, &a, sizeof a);
            } else if (o.text == "unix") {
                sockaddr_un u{};
                u.sun_family = AF_UNIX;
                std::strcpy(u.sun_path, "sock");
                std::memcpy(p, &u, sizeof u);
            } else if (o.text == "badfam") {
                const std::uint16_t fam = 0x7777;
                std::memcpy(p, &fam, 2);
            } else {
                std::memset(p, 0xCC, n); // "out": written by the call
            }
        } else if (o.kind == "how") {
            ::open_how h{};
            h.flags = num("flags");
            h.mode = num("mode");
            h.resolve = num("resolve");
            std::memset(p, 0, n);
            std::memcpy(p, &h, sizeof h);
            if (num("tail"))
                std::memset(p + sizeof h, 0x11, 8);
        } else if (o.kind == "epev") {
            ::epoll_event e{};
            e.events = static_cast<std::uint32_t>(num("events"));
            e.data.u64 = num("data");
            std::memcpy(p, &e, sizeof e);
        } else if (o.kind == "u32") {
            const auto v = static_cast<std::uint32_t>(num("v"));
            std::memcpy(p, &v, 4);
        }
    }
}

// Every field at its place in the 64-byte SQE (by offset, so that liburing 2.3's names for
// the unions do not matter).
void fill_sqe(io_uring_sqe* s, const Sqe& q, const Layout& l, std::uint64_t user_data) {
    auto* b = reinterpret_cast<unsigned char*>(s);
    std::memset(b, 0, sizeof *s);
    auto put = [&](std::size_t at, std::uint64_t v, std::size_t width) { std::memcpy(b + at, &v, width); };
    b[0] = q.opcode;
    put(1, resolve(q.f[f_flags], l), 1);
    put(2, resolve(q.f[f_ioprio], l), 2);
    put(4, resolve(q.f[f_fd], l), 4);
    put(8, resolve(q.f[f_off], l), 8);
    put(16, resolve(q.f[f_addr], l), 8);
    put(24, resolve(q.f[f_len], l), 4);
    put(28, resolve(q.f[f_opflags], l), 4);
    put(32, user_data, 8);
    put(40, resolve(q.f[f_bufidx], l), 2);
    put(42, resolve(q.f[f_pers], l), 2);
    put(44, resolve(q.f[f_fi], l), 4);
    put(48, resolve(q.f[f_addr3], l), 8);
}

struct Track {
    int phase = 0; // 0: no final CQE, 1: before the cancel, 2: after it
    unsigned n = 0;
    std::vector<std::pair<int, std::uint32_t>> cqes;
};

// ---- what a case leaves behind

void mask_port(std::string& b) {
    if (b.size() < 4)
        return;
    std::uint16_t fam;
    std::memcpy(&fam, b.data(), 2);
    if (fam == AF_INET || fam == AF_INET6)
        b[2] = b[3] = 0;
}

// statx fields that differ between two fresh environments: the inode number, the times, the
// mount id.
void mask_statx(std::string& b) {
    auto zero = [&](std::size_t from, std::size_t to) {
        for (std::size_t i = from; i < to && i < b.size(); ++i)
            b[i] = 0;
    };
    zero(32, 40);   // stx_ino
    zero(64, 128);  // stx_atime, stx_btime, stx_ctime, stx_mtime
    zero(144, 152); // stx_mnt_id
}

std::string read_small(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string fdinfo_fields(int fd, std::initializer_list<const char*> keys) {
    std::istringstream in(read_small("/proc/self/fdinfo/" + std::to_string(fd)));
    std::string line, out;
    while (std::getline(in, line))
        for (const char* k : keys)
            if (line.rfind(k, 0) == 0) {
                // epoll's "tfd:" lines name an inode and a position too: keep what the caller set
                std::string keep = line;
                if (auto ino = keep.find(" ino:"); ino != std::string::npos)
                    keep.erase(ino);
                out += keep + ";";
            }
    for (char& ch : out)
        if (ch == ' ' || ch == '\t')
            ch = '_';
    return out;
}

std::string describe_fd(int fd) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0)
        return "closed";
    struct stat st {};
    ::fstat(fd, &st);
    std::string s = "t=" + hex(st.st_mode >> 12) + " fl=" + hex(static_cast<unsigned>(fl)) +
                    " cx=" + std::to_string(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
    const off_t pos = ::lseek(fd, 0, SEEK_CUR);
    s += " pos=" + std::to_string(pos < 0 ? -errno : pos);
    if (S_ISREG(st.st_mode))
        s += " size=" + std::to_string(st.st_size);
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
        int n = 0;
        s += " nread=" + std::to_string(::ioctl(fd, FIONREAD, &n) == 0 ? n : -errno);
    }
    pollfd pf{fd, POLLIN | POLLOUT | POLLPRI | POLLRDHUP, 0};
    ::poll(&pf, 1, 0);
    s += " ev=" + hex(static_cast<unsigned short>(pf.revents));
    if (S_ISSOCK(st.st_mode)) {
        int v = 0;
        socklen_t vl = sizeof v;
        ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl);
        s += " acc=" + std::to_string(v);
        v = 0;
        vl = sizeof v;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &vl);
        s += " soerr=" + std::to_string(v);
        sockaddr_storage ss{};
        socklen_t sl = sizeof ss;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) == 0) {
            std::string b(reinterpret_cast<const char*>(&ss), sl);
            mask_port(b);
            s += " name=" + hex(fnv(b.data(), b.size()));
        }
        sl = sizeof ss;
        s += " peer=" + std::to_string(::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &sl) == 0 ? 0 : errno);
    } else if (!S_ISFIFO(st.st_mode)) {
        char target[512];
        const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
        std::string t = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
        if (t.find("[eventfd") != std::string::npos)
            s += " " + fdinfo_fields(fd, {"eventfd-count:"});
        else if (t.find("[timerfd") != std::string::npos)
            s += " " + fdinfo_fields(fd, {"ticks:"});
        else if (t.find("[eventpoll") != std::string::npos)
            s += " " + fdinfo_fields(fd, {"tfd:"});
        // An O_TMPFILE's name carries its inode number ("/#12345 (deleted)").
        if (auto hash = t.find("/#"); hash != std::string::npos) {
            auto end = t.find_first_not_of("0123456789", hash + 2);
            t.replace(hash + 2, (end == std::string::npos ? t.size() : end) - hash - 2, "N");
        }
        for (char& ch : t)
            if (ch == ' ')
                ch = '_';
        s += " path=" + t;
    }
    return s;
}

// A file's content: its first MiB and last 64 KiB (a write at a huge offset lands there).
std::string hash_file(const char* path, off_t size) {
    int fd = ::open(path, O_RDONLY);
    if (fd < 0)
        return "unreadable";
    static char b[1u << 20]; // (static: no megabyte to clear per file)
    std::uint64_t h = 0xcbf29ce484222325ull;
    ssize_t n = ::pread(fd, b, sizeof b, 0);
    if (n > 0)
        h = fnv(b, static_cast<std::size_t>(n), h);
    if (size > (1 << 20)) {
        n = ::pread(fd, b, 65536, size - 65536);
        if (n > 0)
            h = fnv(b, static_cast<std::size_t>(n), h);
    }
    ::close(fd);
    return hex(h);
}

void walk(const std::string& dir, std::vector<std::pair<std::string, std::string>>& out, int depth) {
    DIR* d = ::opendir(dir.c_str());
    if (!d)
        return;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        const std::string path = dir == "." ? name : dir + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0)
            continue;
        std::string v = "t=" + hex(st.st_mode >> 12) + " m=" + hex(st.st_mode & 07777) +
                        " n=" + std::to_string(S_ISDIR(st.st_mode) ? 0 : st.st_nlink);
        if (S_ISREG(st.st_mode)) {
            v += " size=" + std::to_string(st.st_size) + " h=" + hash_file(path.c_str(), st.st_size);
        } else if (S_ISLNK(st.st_mode)) {
            char t[512];
            const ssize_t n = ::readlink(path.c_str(), t, sizeof t - 1);
            v += " ->" + escape(n > 0 ? std::string(t, static_cast<std::size_t>(n)) : "");
        }
        std::string key = escape(path);
        if (key.size() > 60)
            key = key.substr(0, 40) + "..." + hex(fnv(key.data(), key.size()));
        out.emplace_back("fs:" + key, v);
        if (S_ISDIR(st.st_mode) && depth < 4)
            walk(path, out, depth + 1);
    }
}

std::vector<std::pair<std::string, std::string>> effects(const Case& c, const Layout& l) {
    std::vector<std::pair<std::string, std::string>> out;
    // The roles of objects the kernel writes what differs between environments into.
    std::map<std::string, std::string> role;
    for (const Obj& o : c.objs)
        if (o.kind == "sa")
            role[o.name] = "sockaddr";
    for (const Sqe& q : c.sqes) {
        if (q.opcode == opc::statx && q.f[f_off].kind == Val::Kind::obj)
            role[q.f[f_off].name] = "statx";
        if (q.opcode == opc::accept && q.f[f_addr].kind == Val::Kind::obj)
            role[q.f[f_addr].name] = "sockaddr";
        if (q.opcode == opc::recvmsg)
            if (const Obj* m = c.obj(q.f[f_addr]); m && m->kind == "msg")
                if (const Val* name = m->field("name"); name && name->kind == Val::Kind::obj)
                    role[name->name] = "sockaddr";
    }
    for (const Obj& o : c.objs) {
        const auto [at, n] = l.at.at(o.name);
        std::string b(g_arena.base + at, n);
        if (role[o.name] == "sockaddr")
            mask_port(b);
        else if (role[o.name] == "statx")
            mask_statx(b);
        out.emplace_back("obj:" + o.name, hex(fnv(b.data(), b.size())));
    }
    // The page "edge" points into, unless a call writes there what differs between the
    // children: a peer's address (its port), a statx (inode numbers, times).
    bool address_at_edge = false;
    auto at_edge = [](const Val& v) { return v.kind == Val::Kind::ptr && v.name == "edge"; };
    for (const Sqe& q : c.sqes) {
        if ((q.opcode == opc::accept && at_edge(q.f[f_addr])) || (q.opcode == opc::statx && at_edge(q.f[f_off])))
            address_at_edge = true;
        if (q.opcode == opc::recvmsg)
            if (const Obj* m = c.obj(q.f[f_addr]); m && m->kind == "msg")
                if (const Val* name = m->field("name"); name && name->kind == Val::Kind::ptr && name->name == "edge")
                    address_at_edge = true;
    }
    out.emplace_back("edge", address_at_edge ? std::string("(not compared)") : hex(fnv(g_arena.protnone - 4096, 4096)));
    for (int i = 0; i < env_count + 4; ++i) {
        const std::string name = i < env_count ? env_fd_names[i] : "NEW" + std::to_string(i - env_count);
        out.emplace_back("fd:" + name, describe_fd(fd_base + i));
    }
    walk(".", out, 0);
    return out;
}

// Runs the case on one engine and writes the report to report_fd. Never returns.
[[noreturn]] void child_main(const Case& c, EngineKind kind, const Opts& o, int quiet_ms, const std::string& work) {
    ::signal(SIGPIPE, SIG_IGN); // both sides alike: a write to a pipe without reader gives -EPIPE
#ifndef DIFF_ENGINES_ASAN
    // A descriptor number near INT_MAX makes the epoll engine size a table by it: a bound on
    // the address space turns that into an allocation failure instead of gigabytes touched.
    // (Under ASan the shadow memory needs terabytes of address space; there the allocator's
    // own limit does it, see __asan_default_options.)
    rlimit as{4ull << 30, 4ull << 30};
    ::setrlimit(RLIMIT_AS, &as);
#endif
    const std::uint64_t t_begin = now_ns();
    const EnvInfo env = make_env(work);
    const std::uint64_t t_env = now_ns();
    // The ring after the environment: its descriptors take low numbers, below fd_base.
    ringo::uring::RingParams params = ringo::RuntimeOptions{}.engine(kind).ring_params();
    params.sq_entries = 16;
    std::unique_ptr<ringo::uring::Ring> ring;
    try {
        ring = std::make_unique<ringo::uring::Ring>(params);
    } catch (const std::exception& e) {
        errno = 0;
        fail_setup(std::string("ring: ") + e.what());
    }
    // Every free number below the first the case may create is taken, so that descriptors
    // the case makes get the same numbers on both sides (the two engines hold different
    // numbers of descriptors of their own).
    {
        int null_fd = -1;
        for (int fd = 3; fd < fd_base + env_count; ++fd) {
            if (::fcntl(fd, F_GETFD) >= 0)
                continue;
            if (null_fd < 0) {
                null_fd = ::open("/dev/null", O_RDONLY);
                need(null_fd == fd, "filling descriptor numbers");
            } else {
                need(::dup2(null_fd, fd) == fd, "filling descriptor numbers");
            }
        }
    }
    Layout l;
    try {
        l = lay_out(c);
        materialize(c, l, env);
    } catch (const std::exception& e) {
        errno = 0;
        fail_setup(e.what());
    }

    const std::size_t n = c.sqes.size();
    std::vector<Track> t(n);
    for (std::size_t i = 0; i < n; ++i) {
        io_uring_sqe* s = ring->get_sqe();
        if (!s) {
            errno = 0;
            fail_setup("SQ full");
        }
        fill_sqe(s, c.sqes[i], l, ud_base + i);
    }
    bool cancel_sent = false;
    int cancel_res = INT_MIN;
    unsigned stray = 0;
    auto reap = [&] {
        return ring->reap([&](std::uint64_t ud, int res, std::uint32_t fl) {
            if (ud == ud_cancel_all) {
                cancel_res = res;
                return;
            }
            if (ud < ud_base || ud >= ud_base + n) {
                ++stray;
                return;
            }
            Track& k = t[ud - ud_base];
            ++k.n;
            if (k.cqes.size() < 8)
                k.cqes.emplace_back(res, fl);
            if (!(fl & ringo::uring::compat::cqe_f_more))
                k.phase = cancel_sent ? 2 : 1;
        });
    };
    auto all_done = [&] { return std::all_of(t.begin(), t.end(), [](const Track& k) { return k.phase != 0; }); };
    // Waits up to `ns` for at least one CQE; the number reaped (0: none came in that time).
    auto wait_some = [&](std::uint64_t ns) {
        const std::uint64_t until = now_ns() + ns;
        unsigned got = reap();
        while (got == 0) {
            const std::uint64_t now = now_ns();
            if (now >= until)
                break;
            (void)ring->submit_and_wait_timeout(1, until - now);
            got += reap();
        }
        return got;
    };
    const std::uint64_t quiet = static_cast<std::uint64_t>(quiet_ms) * 1'000'000u;
    const std::uint64_t start = now_ns();
    (void)ring->submit(0, false);
    // Until every SQE has its final CQE, or none came for `quiet` (what is left waits for
    // something that does not come), or the whole wait took total_ms (a multishot storm).
    while (!all_done() && wait_some(quiet) != 0 &&
           now_ns() - start < static_cast<std::uint64_t>(o.total_ms) * 1'000'000u) {
    }
    if (!all_done()) {
        // Cancel whatever is left (IORING_ASYNC_CANCEL_ANY) and take what that ends, in
        // rounds: a call held behind another by IOSQE_IO_DRAIN starts only when that one is
        // cancelled, and may wait in its turn. The cancel is an SQE on both engines, so a drain
        // holds it back on both (io_uring's synchronous cancel would not wait for it).
        cancel_sent = true;
        const std::uint64_t cstart = now_ns();
        const std::uint64_t window = static_cast<std::uint64_t>(o.cancel_ms) * 1'000'000u;
        for (int round = 0; round < 3 && !all_done(); ++round) {
            if (io_uring_sqe* s = ring->get_sqe()) {
                std::memset(s, 0, sizeof *s);
                s->opcode = opc::async_cancel;
                s->fd = -1;
                const std::uint32_t any = ringo::uring::compat::async_cancel_any;
                std::memcpy(reinterpret_cast<char*>(s) + 28, &any, 4);
                s->user_data = ud_cancel_all;
                (void)ring->submit(0, false);
            }
            const unsigned before =
                std::accumulate(t.begin(), t.end(), 0u, [](unsigned a, const Track& k) { return a + k.n; });
            while (!all_done() && wait_some(quiet) != 0 && now_ns() - cstart < window) {
            }
            const unsigned after =
                std::accumulate(t.begin(), t.end(), 0u, [](unsigned a, const Track& k) { return a + k.n; });
            if (after == before)
                break; // the cancel ended nothing: another round would not either
        }
    }
    const std::uint64_t spent_ms = (now_ns() - start) / 1'000'000u;
    const std::uint64_t t_run = now_ns();

    std::string rep;
    for (std::size_t i = 0; i < n; ++i) {
        rep += "R " + std::to_string(i) + " " + std::to_string(t[i].phase) + " " + std::to_string(t[i].n);
        for (const auto& [res, fl] : t[i].cqes)
            rep += " " + std::to_string(res) + ":" + std::to_string(fl);
        rep += "\n";
    }
    for (const auto& [k, v] : effects(c, l))
        rep += "E " + k + " " + v + "\n";
    const std::uint64_t t_eff = now_ns();
    rep += "H cancel=" + (cancel_sent ? std::to_string(cancel_res) : std::string("-")) +
           " stray=" + std::to_string(stray) + " wait_ms=" + std::to_string(spent_ms) +
           " us(env,ring+run,effects)=" + std::to_string((t_env - t_begin) / 1000) + "," +
           std::to_string((t_run - t_env) / 1000) + "," + std::to_string((t_eff - t_run) / 1000) + "\n";
    std::size_t off = 0;
    while (off < rep.size()) {
        const ssize_t w = ::write(report_fd, rep.data() + off, rep.size() - off);
        if (w <= 0)
            break;
        off += static_cast<std::size_t>(w);
    }
    // No destructors: a call the epoll engine could not cancel may still hold a pool thread,
    // which the engine's destructor would wait for.
    ::_exit(0);
}

// ------------------------------------------------------------------ the parent

struct SqeOut {
    int phase = 0;
    unsigned n = 0;
    std::vector<std::pair<int, std::uint32_t>> cqes;
    [[nodiscard]] bool has_final() const { return phase != 0 && !cqes.empty(); }
    [[nodiscard]] int final_res() const { return cqes.empty() ? 0 : cqes.back().first; }
};

struct Side {
    enum class End { ok, crash, hang, setup } end = End::ok;
    int status = 0;
    std::string log; // the end of the child's stderr
    std::vector<SqeOut> out;
    std::map<std::string, std::string> eff;
    std::string harness;
};

std::string errno_text(int res) {
    if (res >= 0)
        return std::to_string(res);
    const char* n = ::strerrorname_np(-res);
    return n ? std::string("-") + n : std::to_string(res);
}

Side parse_report(const std::string& text, std::size_t nsqe) {
    Side s;
    s.out.resize(nsqe);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() < 2)
            continue;
        if (line[0] == 'R') {
            std::istringstream ls(line.substr(2));
            std::size_t i;
            SqeOut o;
            ls >> i >> o.phase >> o.n;
            std::string tok;
            while (ls >> tok) {
                auto colon = tok.find(':');
                o.cqes.emplace_back(std::stoi(tok.substr(0, colon)),
                                    static_cast<std::uint32_t>(std::stoul(tok.substr(colon + 1))));
            }
            if (i < nsqe)
                s.out[i] = o;
        } else if (line[0] == 'E') {
            auto sp = line.find(' ', 2);
            s.eff[line.substr(2, sp - 2)] = sp == std::string::npos ? "" : line.substr(sp + 1);
        } else if (line[0] == 'H') {
            s.harness = line.substr(2);
        } else if (line[0] == 'S') {
            s.end = Side::End::setup;
            s.log = line.substr(2);
        }
    }
    return s;
}

// Runs the case on one engine in a child; kills it at the hard deadline.
Side run_side(const Case& c, EngineKind kind, const Opts& o, int quiet_ms) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe2");
    int err = ::memfd_create("diff-engines-stderr", MFD_CLOEXEC);
    if (err < 0)
        throw std::runtime_error("memfd_create");
    std::fflush(stdout);
    std::fflush(stderr);
    const std::string work = o.scratch + "/w";
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error("fork");
    if (pid == 0) {
        ::setpgid(0, 0);
        ::dup2(err, 2);
        ::dup2(p[1], report_fd);
        ::close(p[0]);
        ::close(p[1]);
        ::close(err);
        child_main(c, kind, o, quiet_ms, work);
    }
    ::setpgid(pid, pid); // (also done by the child: whichever comes first)
    ::close(p[1]);
    std::string text;
    const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(o.deadline_ms) * 1'000'000u;
    bool hung = false, bloated = false;
    const std::string statm = "/proc/" + std::to_string(pid) + "/statm";
    for (;;) {
        const std::uint64_t now = now_ns();
        if (now >= deadline) {
            hung = true;
            break;
        }
        // Every 20 ms at most: the child's resident memory, so that a call that allocates
        // without end (an overflow list that grows in a loop) is stopped well before the
        // machine runs out (under ASan no address-space limit can do it).
        pollfd pf{p[0], POLLIN, 0};
        const int ms = static_cast<int>(std::min<std::uint64_t>((deadline - now) / 1'000'000u + 1, 20));
        const int ready = ::poll(&pf, 1, ms);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready <= 0) {
            unsigned long size = 0, resident = 0;
            std::ifstream in(statm);
            if (in >> size >> resident && resident * 4096ul > (static_cast<unsigned long>(o.max_rss_mb) << 20)) {
                bloated = hung = true;
                break;
            }
            continue;
        }
        char buf[65536];
        const ssize_t n = ::read(p[0], buf, sizeof buf);
        if (n == 0)
            break; // the child is gone (or closed its end by exiting)
        if (n > 0)
            text.append(buf, static_cast<std::size_t>(n));
        else if (errno != EINTR && errno != EAGAIN)
            break;
    }
    int status = 0;
    if (hung) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    } else {
        // The report's end is the child's exit, nearly: wait for it within the deadline too.
        for (;;) {
            const pid_t w = ::waitpid(pid, &status, WNOHANG);
            if (w == pid)
                break;
            if (now_ns() >= deadline) {
                hung = true;
                ::kill(-pid, SIGKILL);
                ::kill(pid, SIGKILL);
                ::waitpid(pid, &status, 0);
                break;
            }
            ::usleep(1000);
        }
    }
    ::close(p[0]);
    Side s = parse_report(text, c.sqes.size());
    s.status = status;
    {
        std::string log;
        char buf[65536];
        ssize_t n;
        off_t at = 0;
        while ((n = ::pread(err, buf, sizeof buf, at)) > 0) {
            log.append(buf, static_cast<std::size_t>(n));
            at += n;
        }
        ::close(err);
        if (log.size() > 6000)
            log = "...\n" + log.substr(log.size() - 6000);
        if (s.end != Side::End::setup)
            s.log = log;
    }
    if (s.end == Side::End::setup)
        return s;
    if (bloated) {
        s.end = Side::End::crash;
        s.log = "killed by the harness: more than " + std::to_string(o.max_rss_mb) + " MiB resident\n" + s.log;
    } else if (hung) {
        s.end = Side::End::hang;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        s.end = Side::End::crash;
    else if (text.find("\nH ") == std::string::npos && text.rfind("H ", 0) != 0)
        s.end = Side::End::crash; // exited 0 without its report
    return s;
}

// CQE flags that may differ between the engines: IORING_CQE_F_SOCK_NONEMPTY, a hint io_uring
// gives after a receive and the epoll engine never does.
constexpr std::uint32_t flags_compared = ~std::uint32_t{ringo::uring::compat::cqe_f_sock_nonempty};

std::string outcome_text(const SqeOut& o) {
    std::string s;
    if (o.cqes.empty())
        return "no CQE";
    for (std::size_t i = 0; i < o.cqes.size(); ++i) {
        if (i)
            s += ",";
        s += errno_text(o.cqes[i].first);
        if (o.cqes[i].second)
            s += "[f" + hex(o.cqes[i].second) + "]";
    }
    if (o.n > o.cqes.size())
        s += ",...(" + std::to_string(o.n) + " CQEs)";
    if (o.phase == 0)
        s += " (no final CQE)";
    else if (o.phase == 2)
        s += " (after the cancel)";
    return s;
}

std::vector<Diff> compare(const Case& c, const Side& u, const Side& e) {
    std::vector<Diff> ds;
    for (const Side* s : {&u, &e}) {
        if (s->end == Side::End::crash || s->end == Side::End::hang) {
            Diff d;
            d.kind = s->end == Side::End::crash ? DiffKind::crash : DiffKind::hang;
            d.epoll_side = s == &e;
            d.what = std::string(d.epoll_side ? "epoll" : "io_uring") +
                     (d.kind == DiffKind::crash
                          ? (WIFSIGNALED(s->status) ? " killed by signal " + std::to_string(WTERMSIG(s->status))
                                                    : " exited with " + std::to_string(WEXITSTATUS(s->status)))
                          : " still running at the deadline");
            d.log = s->log;
            d.sqe = c.sqes.size() == 1 ? 0 : -1;
            ds.push_back(d);
        }
    }
    if (!ds.empty())
        return ds;
    std::vector<int> all_u, all_e;
    for (std::size_t i = 0; i < c.sqes.size(); ++i) {
        all_u.push_back(u.out[i].has_final() ? u.out[i].final_res() : no_result);
        all_e.push_back(e.out[i].has_final() ? e.out[i].final_res() : no_result);
    }
    for (std::size_t i = 0; i < c.sqes.size(); ++i) {
        const SqeOut& a = u.out[i];
        const SqeOut& b = e.out[i];
        Diff d;
        d.sqe = static_cast<int>(i);
        d.res_uring = a.final_res();
        d.res_epoll = b.final_res();
        d.phase_uring = a.phase;
        d.phase_epoll = b.phase;
        d.what = "io_uring " + outcome_text(a) + " | epoll " + outcome_text(b);
        if ((a.phase == 1) != (b.phase == 1) || (a.phase == 0) != (b.phase == 0)) {
            d.kind = DiffKind::pending;
            ds.push_back(d);
            continue;
        }
        if (a.has_final() && b.has_final()) {
            const int x = a.final_res(), y = b.final_res();
            if ((x < 0) != (y < 0)) {
                d.kind = DiffKind::success_vs_error;
                ds.push_back(d);
                continue;
            }
            if (x != y) {
                d.kind = x < 0 ? DiffKind::errno_only : DiffKind::value;
                ds.push_back(d);
                continue;
            }
        }
        const bool many = a.n >= 64 && b.n >= 64; // a storm on both sides: its length is timing
        if (a.n != b.n && !many) {
            d.kind = DiffKind::cqe_count;
            ds.push_back(d);
            continue;
        }
        for (std::size_t k = 0; k < std::min(a.cqes.size(), b.cqes.size()); ++k) {
            if (a.cqes[k].first != b.cqes[k].first) {
                d.kind = DiffKind::value;
                ds.push_back(d);
                break;
            }
            if ((a.cqes[k].second & flags_compared) != (b.cqes[k].second & flags_compared)) {
                d.kind = DiffKind::flags;
                ds.push_back(d);
                break;
            }
        }
    }
    std::set<std::string> keys;
    for (const auto& [k, v] : u.eff)
        keys.insert(k);
    for (const auto& [k, v] : e.eff)
        keys.insert(k);
    for (const std::string& k : keys) {
        auto x = u.eff.find(k), y = e.eff.find(k);
        const std::string vx = x == u.eff.end() ? "(absent)" : x->second;
        const std::string vy = y == e.eff.end() ? "(absent)" : y->second;
        if (vx == vy)
            continue;
        Diff d;
        d.kind = DiffKind::effect;
        d.key = k;
        d.what = k + ": io_uring " + vx + " | epoll " + vy;
        d.val_uring = vx;
        d.val_epoll = vy;
        // The SQE it comes from, when exactly one SQE names the descriptor or object.
        int who = -1, count = 0;
        for (std::size_t i = 0; i < c.sqes.size(); ++i) {
            bool names = false;
            for (const Val& v : c.sqes[i].f) {
                if (k.rfind("fd:", 0) == 0 && v.kind == Val::Kind::fd && "fd:" + v.name == k)
                    names = true;
                if (k.rfind("obj:", 0) == 0 && v.kind == Val::Kind::obj && "obj:" + v.name == k)
                    names = true;
            }
            if (k.rfind("fs:", 0) == 0 && c.sqes[i].f[f_addr].kind == Val::Kind::obj && c.obj(c.sqes[i].f[f_addr]) &&
                c.obj(c.sqes[i].f[f_addr])->kind == "str")
                names = true;
            if (names) {
                who = static_cast<int>(i);
                ++count;
            }
        }
        d.sqe = count == 1 ? who : -1;
        ds.push_back(d);
    }
    for (Diff& d : ds) {
        d.all_uring = all_u;
        d.all_epoll = all_e;
    }
    return ds;
}

struct Verdict {
    std::vector<Diff> diffs;
    std::vector<std::string> cls; // per diff: a known class, "(follows)", "(unstable)", or "" (unknown)
    bool unknown_failure = false;
    bool unknown_errno = false;
    bool timing = false;   // differed at first, not when checked again with more time
    bool unstable = false; // an unexplained difference that did not come again
    [[nodiscard]] bool same() const { return diffs.empty(); }
};

// A difference that follows from another one: the next SQE of a link whose member differs,
// a cancel (or poll/timeout removal) whose target differs, a counted timeout when anything
// else differs, an effect when a result differs.
// `v.cls` holds the classes found so far: a difference follows from one that has a class, or
// from an unexplained one of an earlier SQE (two unexplained differences never explain each
// other away).
bool follows(const Case& c, const Verdict& v, std::size_t at) {
    const std::vector<Diff>& ds = v.diffs;
    const Diff& d = ds[at];
    auto differs = [&](int i) {
        for (std::size_t j = 0; j < ds.size(); ++j)
            if (j != at && ds[j].sqe == i && ds[j].kind != DiffKind::effect &&
                ((!v.cls[j].empty() && v.cls[j] != "(follows)") || (v.cls[j].empty() && i < d.sqe)))
                return true;
        return false;
    };
    const bool any_result = std::any_of(ds.begin(), ds.end(), [](const Diff& x) { return x.kind != DiffKind::effect; });
    if (d.kind == DiffKind::effect)
        return any_result;
    if (d.sqe < 0)
        return false;
    const Sqe& q = c.sqes[static_cast<std::size_t>(d.sqe)];
    for (int i = d.sqe - 1; i >= 0; --i) {
        const Sqe& prev = c.sqes[static_cast<std::size_t>(i)];
        if (!(prev.f[f_flags].num &
              (ringo::uring::compat::sqe_flag::io_link | ringo::uring::compat::sqe_flag::io_hardlink)) ||
            prev.f[f_flags].kind != Val::Kind::num)
            break;
        if (differs(i))
            return true;
    }
    // The target of a cancel (or poll or timeout removal) that differs.
    for (std::size_t k = 0; k < c.sqes.size(); ++k) {
        const Sqe& p = c.sqes[k];
        const bool cancels =
            p.opcode == opc::async_cancel || p.opcode == opc::poll_remove || p.opcode == opc::timeout_remove;
        if (cancels && static_cast<int>(k) != d.sqe &&
            ((p.f[f_addr].kind == Val::Kind::ud && p.f[f_addr].ud == d.sqe) ||
             (p.opcode == opc::async_cancel && (p.f[f_opflags].num & 7) != 0)) &&
            differs(static_cast<int>(k)))
            return true;
    }
    if (q.opcode == opc::async_cancel || q.opcode == opc::poll_remove || q.opcode == opc::timeout_remove) {
        if (q.f[f_addr].kind == Val::Kind::ud && q.f[f_addr].ud >= 0 && differs(q.f[f_addr].ud))
            return true;
        if (q.opcode == opc::async_cancel && (q.f[f_opflags].num & 7) != 0)
            for (std::size_t i = 0; i < c.sqes.size(); ++i)
                if (static_cast<int>(i) != d.sqe && differs(static_cast<int>(i)))
                    return true;
    }
    // A descriptor the case makes (NEWn) or its number: what names it, or gets a number after it,
    // follows from a difference of an SQE that makes one.
    auto makes_fd = [](const Sqe& s) {
        return s.opcode == opc::openat || s.opcode == opc::openat2 || s.opcode == opc::socket ||
               s.opcode == opc::accept;
    };
    const bool names_new = std::any_of(std::begin(q.f), std::end(q.f), [](const Val& v) {
        return v.kind == Val::Kind::fd && v.name.rfind("NEW", 0) == 0;
    });
    if (names_new || (makes_fd(q) && d.kind == DiffKind::value))
        for (std::size_t i = 0; i < c.sqes.size(); ++i)
            if (static_cast<int>(i) != d.sqe && makes_fd(c.sqes[i]) && differs(static_cast<int>(i)))
                return true;
    // What an earlier SQE that differs did to the same pipe, connection or file (both ends
    // count) changes what a later one finds.
    if (const std::string mine = connection(q.f[f_fd]); !mine.empty())
        for (int k = 0; k < d.sqe; ++k) {
            const Sqe& p = c.sqes[static_cast<std::size_t>(k)];
            if ((connection(p.f[f_fd]) == mine || connection(p.f[f_fi]) == mine) && differs(k))
                return true;
        }
    if (q.opcode == opc::timeout && !q.f[f_off].is_num(0))
        for (std::size_t i = 0; i < c.sqes.size(); ++i)
            if (static_cast<int>(i) != d.sqe && differs(static_cast<int>(i)))
                return true;
    return false;
}

void classify(const Case& c, Verdict& v) {
    v.cls.assign(v.diffs.size(), "");
    const bool any_result =
        std::any_of(v.diffs.begin(), v.diffs.end(), [](const Diff& x) { return x.kind != DiffKind::effect; });
    // First what each difference is by itself (an effect that comes with a different result
    // follows from it), then whether one without a class follows from another.
    for (std::size_t i = 0; i < v.diffs.size(); ++i) {
        if (v.diffs[i].kind == DiffKind::effect && any_result) {
            v.cls[i] = "(follows)";
            continue;
        }
        for (const Known& k : known_differences())
            if (k.match(c, v.diffs[i])) {
                v.cls[i] = k.name;
                break;
            }
    }
    for (std::size_t i = 0; i < v.diffs.size(); ++i)
        if (v.cls[i].empty() && follows(c, v, i))
            v.cls[i] = "(follows)";
    for (std::size_t i = 0; i < v.diffs.size(); ++i) {
        if (!v.cls[i].empty())
            continue;
        if (v.diffs[i].kind == DiffKind::errno_only)
            v.unknown_errno = true;
        else
            v.unknown_failure = true;
    }
}

std::string signature(const Case& c, const Diff& d);
// The signatures of a verdict's unexplained differences, sorted.
std::vector<std::string> unknown_signatures(const Case& c, const Verdict& v) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.diffs.size(); ++i)
        if (v.cls[i].empty())
            out.push_back(signature(c, v.diffs[i]));
    std::sort(out.begin(), out.end());
    return out;
}

struct Runner {
    Opts o;
    std::uint64_t runs = 0;

    std::pair<Side, Side> run_both(const Case& c, int quiet_ms) {
        Side u = run_side(c, EngineKind::io_uring, o, quiet_ms);
        Side e = run_side(c, EngineKind::epoll, o, quiet_ms);
        runs += 2;
        for (const Side* s : {&u, &e})
            if (s->end == Side::End::setup)
                throw std::runtime_error(std::string("setup of the ") + (s == &u ? "io_uring" : "epoll") +
                                         " side failed: " + s->log);
        return {std::move(u), std::move(e)};
    }

    // Runs a case and judges it: a difference of completion is checked again with a longer
    // wait (a call may just have been slow), and a crash or hang of a case of several SQEs is
    // shrunk to the SQEs it needs.
    Verdict judge(Case& c, std::pair<Side, Side>* sides = nullptr) {
        auto [u, e] = run_both(c, o.quiet_ms);
        Verdict v;
        v.diffs = compare(c, u, e);
        const bool slow = std::any_of(v.diffs.begin(), v.diffs.end(), [](const Diff& d) {
            return d.kind == DiffKind::pending || d.kind == DiffKind::cqe_count;
        });
        if (slow) {
            auto again = run_both(c, o.long_quiet_ms);
            u = std::move(again.first);
            e = std::move(again.second);
            v.diffs = compare(c, u, e);
            v.timing = v.diffs.empty();
        }
        if (c.sqes.size() > 1 && v.diffs.size() == 1 &&
            (v.diffs[0].kind == DiffKind::crash || v.diffs[0].kind == DiffKind::hang)) {
            shrink(c, v.diffs[0]);
            v.diffs[0].sqe = c.sqes.size() == 1 ? 0 : -1;
        }
        classify(c, v);
        const bool died = std::any_of(v.diffs.begin(), v.diffs.end(), [](const Diff& d) {
            return d.kind == DiffKind::crash || d.kind == DiffKind::hang;
        });
        if ((v.unknown_failure || v.unknown_errno) && !died) {
            // An unexplained difference counts when it comes again: two calls racing for the
            // same name on io-wq or on the pool may end either way on either engine.
            auto again = run_both(c, o.long_quiet_ms);
            Verdict w;
            w.diffs = compare(c, again.first, again.second);
            classify(c, w);
            if (unknown_signatures(c, v) != unknown_signatures(c, w)) {
                for (std::string& k : v.cls)
                    if (k.empty())
                        k = "(unstable)";
                v.unknown_failure = v.unknown_errno = false;
                v.unstable = true;
            }
        }
        if (sides) {
            if (u.out.size() != c.sqes.size()) // shrunk: the sides of what is left
                std::tie(u, e) = run_both(c, o.quiet_ms);
            *sides = {std::move(u), std::move(e)};
        }
        return v;
    }

    static Case without(const Case& c, std::size_t k) {
        Case out = c;
        out.sqes.erase(out.sqes.begin() + static_cast<std::ptrdiff_t>(k));
        auto fix = [k](Val& v) {
            if (v.kind != Val::Kind::ud || v.ud < 0)
                return;
            if (static_cast<std::size_t>(v.ud) == k)
                v.ud = -1;
            else if (static_cast<std::size_t>(v.ud) > k)
                --v.ud;
        };
        for (Sqe& q : out.sqes)
            for (Val& v : q.f)
                fix(v);
        // Objects no SQE reaches any more go too.
        std::set<std::string> used;
        std::vector<std::string> todo;
        for (const Sqe& q : out.sqes)
            for (const Val& v : q.f)
                if (v.kind == Val::Kind::obj)
                    todo.push_back(v.name);
        while (!todo.empty()) {
            std::string n = todo.back();
            todo.pop_back();
            if (!used.insert(n).second)
                continue;
            for (const Obj& ob : out.objs)
                if (ob.name == n) {
                    for (const auto& [key, v] : ob.fields)
                        if (v.kind == Val::Kind::obj)
                            todo.push_back(v.name);
                    for (const auto& [b, len] : ob.iov)
                        if (b.kind == Val::Kind::obj)
                            todo.push_back(b.name);
                }
        }
        out.objs.erase(
            std::remove_if(out.objs.begin(), out.objs.end(), [&](const Obj& ob) { return !used.count(ob.name); }),
            out.objs.end());
        return out;
    }

    // Drops SQEs one at a time while the same side still crashes (or hangs).
    void shrink(Case& c, const Diff& d) {
        const EngineKind side = d.epoll_side ? EngineKind::epoll : EngineKind::io_uring;
        const Side::End want = d.kind == DiffKind::crash ? Side::End::crash : Side::End::hang;
        bool progress = true;
        while (progress && c.sqes.size() > 1) {
            progress = false;
            for (std::size_t k = 0; k < c.sqes.size() && c.sqes.size() > 1; ++k) {
                Case smaller = without(c, k);
                ++runs;
                if (run_side(smaller, side, o, o.quiet_ms).end == want) {
                    smaller.origin = c.origin;
                    c = std::move(smaller);
                    progress = true;
                    break;
                }
            }
        }
    }
};

// ------------------------------------------------------------------ reporting

std::string signature(const Case& c, const Diff& d) {
    std::string s = diff_kind_name(d.kind);
    if (d.kind == DiffKind::crash || d.kind == DiffKind::hang)
        s += d.epoll_side ? " epoll" : " io_uring";
    if (const Sqe* q = sqe_of(c, d))
        s += " " + opcode_name(q->opcode);
    if (d.kind == DiffKind::effect) {
        s += " " + d.key.substr(0, d.key.find(':') + 1);
    } else if (d.kind != DiffKind::crash && d.kind != DiffKind::hang) {
        auto res = [](int phase, int r) { return phase == 0 ? std::string("none") : errno_text(r); };
        s += " io_uring=" + res(d.phase_uring, d.res_uring) + " epoll=" + res(d.phase_epoll, d.res_epoll);
    }
    return s;
}

void print_case(const Case& c, const char* indent) {
    std::istringstream in(case_text(c));
    std::string line;
    while (std::getline(in, line))
        std::printf("%s%s\n", indent, line.c_str());
}

void print_verdict(const Case& c, const Verdict& v, bool full) {
    std::string kinds;
    for (std::size_t i = 0; i < v.diffs.size(); ++i) {
        if (v.cls[i] == "(follows)")
            continue;
        if (!kinds.empty())
            kinds += "; ";
        kinds += signature(c, v.diffs[i]) + (v.cls[i].empty() ? "" : " [" + v.cls[i] + "]");
    }
    const char* head = v.unknown_failure ? "FAILURE"
                       : v.unknown_errno ? "ERRNO-DIFF"
                       : v.unstable      ? "UNSTABLE"
                                         : "known";
    std::printf("%s %s: %s\n", head, c.origin.c_str(), kinds.c_str());
    if (!full)
        return;
    print_case(c, "    | ");
    for (std::size_t i = 0; i < v.diffs.size(); ++i) {
        const Diff& d = v.diffs[i];
        std::printf("    - %s%s sqe %d: %s%s\n", diff_kind_name(d.kind), d.epoll_side ? "" : "", d.sqe, d.what.c_str(),
                    v.cls[i].empty() ? " [UNKNOWN]" : (" [" + v.cls[i] + "]").c_str());
        if (!d.log.empty()) {
            std::istringstream in(d.log);
            std::string line;
            int lines = 0;
            while (std::getline(in, line) && lines++ < 40)
                std::printf("      ! %s\n", line.c_str());
        }
    }
}

// The names a verdict's own differences are saved and tallied under: their known class, or
// "unknown-" and their signature.
std::vector<std::string> stems(const Case& c, const Verdict& v) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.diffs.size(); ++i)
        if (v.cls[i] != "(follows)" && v.cls[i] != "(unstable)")
            out.push_back(v.cls[i].empty() ? "unknown-" + signature(c, v.diffs[i]) : v.cls[i]);
    return out;
}

void save_case(const std::string& dir, const Case& c, const Verdict& v, const std::string& stem) {
    std::string name = stem;
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_')
            ch = '_';
    const std::string path = dir + "/" + name + ".case";
    std::ofstream f(path);
    f << "# diff_engines case (replay: diff_engines --case " << path << ")\n";
    f << "# generated as " << c.origin << ", shrunk to the SQEs the difference needs\n";
    for (std::size_t i = 0; i < v.diffs.size(); ++i)
        if (v.cls[i] != "(follows)")
            f << "# " << signature(c, v.diffs[i]) << (v.cls[i].empty() ? " [unknown]" : " [" + v.cls[i] + "]") << "\n";
    f << "# expect: " << stem << "\n";
    f << case_text(c);
    std::printf("    saved %s\n", path.c_str());
}

struct Tally {
    std::uint64_t cases = 0, same = 0, known_only = 0, failures = 0, errnos = 0, timing = 0, unstable = 0;
    std::map<std::string, std::pair<std::uint64_t, std::string>> known;   // class -> count, example
    std::map<std::string, std::pair<std::uint64_t, std::string>> unknown; // signature -> count, example
    std::set<std::string> saved;

    void add(const Case& c, const Verdict& v) {
        ++cases;
        if (v.timing)
            ++timing;
        if (v.unstable)
            ++unstable;
        if (v.same())
            ++same;
        else if (v.unknown_failure)
            ++failures;
        else if (v.unknown_errno)
            ++errnos;
        else
            ++known_only;
        for (std::size_t i = 0; i < v.diffs.size(); ++i) {
            if (v.cls[i] == "(follows)" || v.cls[i] == "(unstable)")
                continue;
            auto& slot = v.cls[i].empty() ? unknown[signature(c, v.diffs[i])] : known[v.cls[i]];
            if (slot.first++ == 0)
                slot.second = c.origin;
        }
    }
    void print() const {
        std::printf("\n== %llu cases: %llu identical, %llu with known differences only, %llu with unknown failures, "
                    "%llu with unknown errno differences only (%llu differed only in timing at first, %llu with an "
                    "unexplained difference that did not come again)\n",
                    static_cast<unsigned long long>(cases), static_cast<unsigned long long>(same),
                    static_cast<unsigned long long>(known_only), static_cast<unsigned long long>(failures),
                    static_cast<unsigned long long>(errnos), static_cast<unsigned long long>(timing),
                    static_cast<unsigned long long>(unstable));
        if (!known.empty()) {
            std::printf("== known differences seen (class: count, first case)\n");
            for (const auto& [k, v] : known)
                std::printf("   %-40s %6llu  %s\n", k.c_str(), static_cast<unsigned long long>(v.first),
                            v.second.c_str());
        }
        if (!unknown.empty()) {
            std::printf("== UNKNOWN differences (kind opcode results: count, first case)\n");
            for (const auto& [k, v] : unknown)
                std::printf("   %-70s %6llu  %s\n", k.c_str(), static_cast<unsigned long long>(v.first),
                            v.second.c_str());
        }
    }
};

Verdict handle(Runner& run, Tally& tally, Case c, bool verbose, const Opts& o) {
    Verdict v = run.judge(c);
    tally.add(c, v);
    if (v.same()) {
        if (verbose)
            std::printf("same %s\n", c.origin.c_str());
        return v;
    }
    const bool unknown = v.unknown_failure || v.unknown_errno || v.unstable;
    print_verdict(c, v, verbose || unknown);
    if (!o.save.empty()) {
        // One file per new kind of difference (an unknown signature, or a known class not yet
        // in the directory), its case shrunk to the SQEs that difference needs.
        for (const std::string& stem : stems(c, v)) {
            struct stat st;
            if (!tally.saved.insert(stem).second || ::stat((o.save + "/" + stem + ".case").c_str(), &st) == 0)
                continue;
            Case small = c;
            Verdict sv = v;
            bool progress = true;
            while (progress && small.sqes.size() > 1) {
                progress = false;
                for (std::size_t k = 0; k < small.sqes.size(); ++k) {
                    Case t = Runner::without(small, k);
                    Verdict tv = run.judge(t);
                    const auto ts = stems(t, tv);
                    if (std::find(ts.begin(), ts.end(), stem) != ts.end()) {
                        t.origin = small.origin;
                        small = std::move(t);
                        sv = std::move(tv);
                        progress = true;
                        break;
                    }
                }
            }
            save_case(o.save, small, sv, stem);
        }
    }
    return v;
}

// The classes a corpus file was saved for ("# expect: NAME" lines; "identical" for the case of
// a class that was fixed, kept to catch it coming back).
std::vector<std::string> expected_stems(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    const std::string tag = "# expect: ";
    while (std::getline(in, line))
        if (line.rfind(tag, 0) == 0)
            out.push_back(line.substr(tag.size(), line.find(' ', tag.size()) - tag.size()));
    return out;
}

int usage() {
    std::fprintf(stderr, "usage: diff_engines [--seconds N] [--seed S] [--case SEED:INDEX|FILE] [--replay DIR|FILE]\n"
                         "                    [--print SEED:INDEX] [--save DIR] [--ci] [--strict-errno] [--sqes N]\n"
                         "                    [--verbose] [--max-cases N] [--quiet-ms N] [--deadline-ms N]\n");
    return 2;
}

} // namespace

} // namespace diffeng

int main(int argc, char** argv) {
    using namespace diffeng;
    Opts o;
    std::string print_only;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        try {
            if (a == "--seconds")
                o.seconds = std::stod(next());
            else if (a == "--seed")
                o.seed = std::stoull(next(), nullptr, 0);
            else if (a == "--case")
                o.one_case = next();
            else if (a == "--print")
                print_only = next();
            else if (a == "--replay")
                o.replay = next();
            else if (a == "--save")
                o.save = next();
            else if (a == "--ci")
                o.ci = true;
            else if (a == "--strict-errno")
                o.strict_errno = true;
            else if (a == "--verbose" || a == "-v")
                o.verbose = true;
            else if (a == "--sqes")
                o.max_sqes = static_cast<unsigned>(std::stoul(next()));
            else if (a == "--max-cases")
                o.max_cases = std::stoull(next());
            else if (a == "--quiet-ms")
                o.quiet_ms = std::stoi(next());
            else if (a == "--deadline-ms")
                o.deadline_ms = std::stoi(next());
            else
                return usage();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "diff_engines: %s\n", e.what());
            return usage();
        }
    }
    auto seed_index = [](const std::string& s) {
        const auto colon = s.find(':');
        if (colon == std::string::npos)
            throw std::invalid_argument("expected SEED:INDEX, got " + s);
        return std::make_pair(std::stoull(s.substr(0, colon), nullptr, 0),
                              std::stoull(s.substr(colon + 1), nullptr, 0));
    };
    if (!print_only.empty()) {
        auto [s, i] = seed_index(print_only);
        std::printf("%s", case_text(generate(s, i, o.max_sqes)).c_str());
        return 0;
    }
    // The children choose their engine themselves: neither the environment's engine (the
    // epoll leg of CI runs every test with RINGO_ENGINE=epoll; it only overrides an automatic
    // engine, but no test should depend on that) nor injected faults apply.
    ::unsetenv("RINGO_ENGINE");
    ::unsetenv("RINGO_FAULTS");
    // One scratch directory for the process; each child makes its "w" inside afresh.
    {
        const char* base = std::getenv("RINGO_DIFF_TMPDIR");
        struct stat st;
        std::string dir = base ? base : ::stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
        dir += "/ringo-diff-" + std::to_string(::getpid());
        if (::mkdir(dir.c_str(), 0700) != 0) {
            std::fprintf(stderr, "diff_engines: mkdir %s: %s\n", dir.c_str(), std::strerror(errno));
            return 1;
        }
        o.scratch = dir;
    }
    int rc = 0;
    try {
        map_arena();
        Runner run{o};
        Tally tally;
        if (!o.one_case.empty()) {
            Case c;
            if (o.one_case.find(':') == std::string::npos || o.one_case.find('/') != std::string::npos) {
                c = parse_case(read_small(o.one_case), o.one_case); // a .case file
            } else {
                auto [s, i] = seed_index(o.one_case);
                c = generate(s, i, o.max_sqes);
            }
            std::printf("case %s:\n", c.origin.c_str());
            print_case(c, "    | ");
            std::pair<Side, Side> sides;
            Verdict v = run.judge(c, &sides);
            for (const Side* sd : {&sides.first, &sides.second}) {
                std::printf("%s:%s\n", sd == &sides.first ? "io_uring" : "epoll",
                            sd->end == Side::End::ok      ? ""
                            : sd->end == Side::End::crash ? " CRASH"
                                                          : " HANG");
                for (std::size_t k = 0; k < sd->out.size(); ++k)
                    std::printf("    sqe %zu %s: %s\n", k, opcode_name(c.sqes[k].opcode).c_str(),
                                outcome_text(sd->out[k]).c_str());
                std::printf("    harness: %s\n", sd->harness.c_str());
            }
            tally.add(c, v);
            if (v.same())
                std::printf("same\n");
            else
                print_verdict(c, v, true);
        } else if (!o.replay.empty()) {
            std::vector<std::string> files;
            struct stat st;
            if (::stat(o.replay.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
                if (DIR* d = ::opendir(o.replay.c_str())) {
                    while (dirent* e = ::readdir(d)) {
                        const std::string n = e->d_name;
                        if (n.size() > 5 && n.compare(n.size() - 5, 5, ".case") == 0)
                            files.push_back(o.replay + "/" + n);
                    }
                    ::closedir(d);
                }
                std::sort(files.begin(), files.end());
            } else {
                files.push_back(o.replay);
            }
            if (files.empty())
                throw std::runtime_error("no .case file in " + o.replay);
            std::vector<std::string> gone;
            for (const std::string& f : files) {
                const std::string text = read_small(f);
                Case c = parse_case(text, f);
                const Verdict v = handle(run, tally, c, o.verbose, o);
                const auto now = stems(c, v);
                for (const std::string& want : expected_stems(text)) {
#ifndef DIFF_ENGINES_ASAN
                    if (want.rfind("crash-", 0) == 0)
                        continue; // the crashes the sanitizers report: this build has none
#endif
                    if (want != "identical" && std::find(now.begin(), now.end(), want) == now.end())
                        gone.push_back(f + ": " + want);
                }
            }
            // A case saved for a class that it no longer shows: the engine was fixed (or
            // changed), and the class may go from the list (diff_engines_known.cpp).
            for (const std::string& g : gone)
                std::printf("NO LONGER SEEN %s\n", g.c_str());
        } else {
            const auto t0 = std::chrono::steady_clock::now();
            std::printf("diff_engines: seed %llu, %.0f s (replay one case: diff_engines --case %llu:INDEX)\n",
                        static_cast<unsigned long long>(o.seed), o.seconds, static_cast<unsigned long long>(o.seed));
            for (std::uint64_t i = 0; i < o.max_cases; ++i) {
                const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (spent >= o.seconds)
                    break;
                (void)handle(run, tally, generate(o.seed, i, o.max_sqes), o.verbose, o);
            }
            const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("== %.1f s, %.1f cases/s, %llu child runs\n", spent, static_cast<double>(tally.cases) / spent,
                        static_cast<unsigned long long>(run.runs));
        }
        tally.print();
        if (tally.failures || (o.strict_errno && tally.errnos))
            rc = o.ci ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "diff_engines: %s\n", e.what());
        rc = 1;
    }
    remove_tree(o.scratch);
    return rc;
}
