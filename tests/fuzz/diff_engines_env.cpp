// tests/fuzz/diff_engines_env.cpp - a child's world: the arena the case's objects live in, the
// environment of descriptors and files each child makes afresh, and the case's objects and SQEs
// resolved in it.

#include "diff_engines_impl.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace diffeng {

// ------------------------------------------------------------------ the arena

// The memory every case's objects live in, mapped once by the parent so that it has the same
// address in every child: pointers stored in objects (an iovec's base, a msghdr's name) are
// then the same bytes on both sides. After it: a PROT_NONE page and an unmapped page.
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

std::uint64_t now_ns() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// A 64-bit hash of bytes, eight at a time (the sanitizer builds are unoptimised, and a case
// may leave megabytes to hash).
std::uint64_t fnv(const void* p, std::size_t n, std::uint64_t h) {
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

namespace {

int remove_entry(const char* path, const struct stat*, int, FTW*) { return ::remove(path); }

} // namespace
void remove_tree(const std::string& dir) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) == 0)
        ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

namespace {

void write_file(const char* name, std::size_t n, char first) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>(first + static_cast<char>(i % 26));
    int fd = ::open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    need(fd >= 0, name);
    need(::write(fd, s.data(), n) == static_cast<ssize_t>(n), name);
    ::close(fd);
}

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

} // namespace

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
    // An extended attribute to read (where the file system has none, both sides lack it).
    (void)::setxattr("data", "user.pre", "value", 5, 0);
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
    // An epoll instance with events waiting (PIPE_R readable, data 1; UNIX_B writable, data 2)
    // and one registration that is not ready (PIPE_R_EMPTY, data 3).
    {
        const int ep = ::epoll_create1(0);
        need(ep >= 0, "epoll_create1");
        const std::pair<int, std::uint32_t> regs[] = {
            {env_index("PIPE_R"), EPOLLIN}, {env_index("UNIX_B"), EPOLLOUT}, {env_index("PIPE_R_EMPTY"), EPOLLIN}};
        std::uint64_t data = 1;
        for (const auto& [k, events] : regs) {
            epoll_event e{};
            e.events = events;
            e.data.u64 = data++;
            need(::epoll_ctl(ep, EPOLL_CTL_ADD, fd_base + k, &e) == 0, "epoll_ctl");
        }
        place(ep, i++);
    }
    if (i != env_count)
        fail_setup("environment table and setup disagree");
    return info;
}

namespace {

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
    if (o.kind == "waitv")
        return 24 * std::max<std::size_t>(o.num("n"), 1);
    throw std::runtime_error("unknown object kind " + o.kind);
}

} // namespace

int g_kid_pids[2] = {0, 0};

// Two children of the side's process: one that has exited (waited for with WNOWAIT, so that it
// is a zombie before the case starts), one that waits for its end (a signal; and the death of
// its parent, should the side be killed).
void fork_kids() {
    for (int k = 0; k < 2; ++k) {
        const pid_t pid = ::fork();
        need(pid >= 0, "fork");
        if (pid == 0) {
            if (k == 0)
                ::_exit(3);
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                ::pause();
        }
        g_kid_pids[k] = pid;
    }
    siginfo_t si{};
    need(::waitid(P_PID, static_cast<id_t>(g_kid_pids[0]), &si, WEXITED | WNOWAIT) == 0, "waitid");
}

// Ends and reaps them (those the case did not reap).
void end_kids() {
    if (g_kid_pids[1])
        ::kill(g_kid_pids[1], SIGKILL);
    for (const int pid : g_kid_pids)
        if (pid)
            ::waitpid(pid, nullptr, 0);
}

Layout lay_out(const Case& c) {
    Layout l;
    std::size_t at = 0;
    for (const Obj& o : c.objs) {
        const std::size_t n = obj_size(o);
        if (const std::size_t align = o.num("align"); align > 64) // (a power of two: a page)
            at = (at + align - 1) & ~(align - 1);
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
        else if (v.name == "KID" || v.name == "KID_LIVE")
            n = g_kid_pids[v.name == "KID" ? 0 : 1];
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
        } else if (o.kind == "waitv") { // struct futex_waitv: u64 val, u64 uaddr, u32 flags, u32 reserved
            std::memset(p, 0, n);
            for (std::size_t k = 0; k < o.num("n"); ++k) {
                const std::string i = std::to_string(k);
                const std::uint64_t e[3] = {num(("v" + i).c_str()), num(("a" + i).c_str()),
                                            num(("f" + i).c_str()) | (num(("r" + i).c_str()) << 32)};
                std::memcpy(p + 24 * k, e, sizeof e);
            }
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

} // namespace diffeng
