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
//
// The files, by role: see diff_engines_impl.hpp.

#include "diff_engines_impl.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef DIFF_ENGINES_ASAN
extern "C" const char* __asan_default_options() { return "max_allocation_size_mb=2048:allocator_may_return_null=0"; }
#endif

namespace diffeng {

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

namespace {

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
