// tests/fuzz/diff_engines_child.cpp - a child of the differential fuzzer: runs a case on one
// engine, then reports every SQE's CQEs and what the case left behind (buffers, files, the state
// of each descriptor) to the parent.

#include "diff_engines_impl.hpp"

#include <ringo/core/options.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace diffeng {

namespace {

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

} // namespace

std::string read_small(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

namespace {

std::string fdinfo_fields(int fd, std::initializer_list<const char*> keys) {
    std::istringstream in(read_small("/proc/self/fdinfo/" + std::to_string(fd)));
    std::string line, out;
    std::vector<std::string> lines;
    while (std::getline(in, line))
        for (const char* k : keys)
            if (line.rfind(k, 0) == 0) {
                // epoll's "tfd:" lines name an inode and a position too: keep what the caller set
                std::string keep = line;
                if (auto ino = keep.find(" ino:"); ino != std::string::npos)
                    keep.erase(ino);
                lines.push_back(keep);
            }
    // (In a sorted order: epoll lists its registrations by the address of their file.)
    std::sort(lines.begin(), lines.end());
    for (const std::string& l : lines)
        out += l + ";";
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

// The extended attributes of a file (not followed), each name with its value's hash.
std::string xattrs(const char* path) {
    char names[4096];
    const ssize_t n = ::llistxattr(path, names, sizeof names);
    if (n < 0)
        return errno == ERANGE ? " x=(too many)" : "";
    std::string s;
    for (ssize_t at = 0; at < n; at += static_cast<ssize_t>(std::strlen(names + at)) + 1) {
        char value[512];
        const ssize_t len = ::lgetxattr(path, names + at, value, sizeof value);
        s += " x:" + escape(names + at) + "=" +
             (len < 0 ? errno_text(-errno) : hex(fnv(value, static_cast<std::size_t>(len))));
    }
    return s;
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
        v += xattrs(path.c_str());
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
        if (q.opcode == opc::waitid && q.f[f_off].kind == Val::Kind::obj)
            role[q.f[f_off].name] = "siginfo";
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
        else if (role[o.name] == "siginfo" && b.size() >= 20)
            std::memset(b.data() + 16, 0, 4); // si_pid: the child's, which differs between sides
        out.emplace_back("obj:" + o.name, hex(fnv(b.data(), b.size())));
    }
    // The page "edge" points into, unless a call writes there what differs between the
    // children: a peer's address (its port), a statx (inode numbers, times).
    bool address_at_edge = false;
    auto at_edge = [](const Val& v) { return v.kind == Val::Kind::ptr && v.name == "edge"; };
    for (const Sqe& q : c.sqes) {
        if ((q.opcode == opc::accept && at_edge(q.f[f_addr])) ||
            ((q.opcode == opc::statx || q.opcode == opc::waitid) && at_edge(q.f[f_off])))
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

} // namespace

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
    if (std::any_of(c.sqes.begin(), c.sqes.end(), [](const Sqe& q) { return q.opcode == opc::waitid; }))
        fork_kids();
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
    end_kids();
    // No destructors: a call the epoll engine could not cancel may still hold a pool thread,
    // which the engine's destructor would wait for.
    ::_exit(0);
}

} // namespace diffeng
