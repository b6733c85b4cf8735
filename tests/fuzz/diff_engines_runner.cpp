// tests/fuzz/diff_engines_runner.cpp - the parent's side of the differential fuzzer's children:
// forks a child per engine, reads its report, kills it at the hard deadline; runs a case on both
// engines and judges it (again with more time, shrunk when a side crashes or hangs).

#include "diff_engines_impl.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

namespace diffeng {

namespace {

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

} // namespace

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

std::pair<Side, Side> Runner::run_both(const Case& c, int quiet_ms) {
    Side u = run_side(c, EngineKind::io_uring, o, quiet_ms);
    Side e = run_side(c, EngineKind::epoll, o, quiet_ms);
    runs += 2;
    for (const Side* s : {&u, &e})
        if (s->end == Side::End::setup)
            throw std::runtime_error(std::string("setup of the ") + (s == &u ? "io_uring" : "epoll") +
                                     " side failed: " + s->log);
    return {std::move(u), std::move(e)};
}

Verdict Runner::judge(Case& c, std::pair<Side, Side>* sides) {
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
    const bool died = std::any_of(v.diffs.begin(), v.diffs.end(),
                                  [](const Diff& d) { return d.kind == DiffKind::crash || d.kind == DiffKind::hang; });
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

Case Runner::without(const Case& c, std::size_t k) {
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

void Runner::shrink(Case& c, const Diff& d) {
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

} // namespace diffeng
