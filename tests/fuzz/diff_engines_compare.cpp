// tests/fuzz/diff_engines_compare.cpp - the differential fuzzer's comparison of the two sides'
// reports, and the verdict: each difference classified as known (diff_engines_known.cpp),
// following from another one, or unknown.

#include "diff_engines_impl.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace diffeng {

std::string errno_text(int res) {
    if (res >= 0 || res < -4095) // (no errno: a count, or a sentinel such as INT_MIN)
        return std::to_string(res);
    const char* n = ::strerrorname_np(-res);
    return n ? std::string("-") + n : std::to_string(res);
}

namespace {

// CQE flags that may differ between the engines: IORING_CQE_F_SOCK_NONEMPTY, a hint io_uring
// gives after a receive and the epoll engine never does.
constexpr std::uint32_t flags_compared = ~std::uint32_t{ringo::uring::compat::cqe_f_sock_nonempty};

} // namespace

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

namespace {

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
    // A futex wait and a wake of the same word: what one did, the other found.
    auto futex = [](const Sqe& s) { return s.opcode == opc::futex_wait || s.opcode == opc::futex_wake; };
    auto same = [](const Val& a, const Val& b) { return a.kind == b.kind && a.num == b.num && a.name == b.name; };
    if (futex(q))
        for (std::size_t k = 0; k < c.sqes.size(); ++k)
            if (static_cast<int>(k) != d.sqe && futex(c.sqes[k]) && c.sqes[k].opcode != q.opcode &&
                same(c.sqes[k].f[f_addr], q.f[f_addr]) && differs(static_cast<int>(k)))
                return true;
    if (q.opcode == opc::timeout && !q.f[f_off].is_num(0))
        for (std::size_t i = 0; i < c.sqes.size(); ++i)
            if (static_cast<int>(i) != d.sqe && differs(static_cast<int>(i)))
                return true;
    return false;
}

} // namespace

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

// The signatures of a verdict's unexplained differences, sorted.
std::vector<std::string> unknown_signatures(const Case& c, const Verdict& v) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.diffs.size(); ++i)
        if (v.cls[i].empty())
            out.push_back(signature(c, v.diffs[i]));
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace diffeng
