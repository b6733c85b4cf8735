// The harness of the compiler-trap programs (tests/traps): each pattern runs in a child
// process (a miscompiled coroutine may crash or never resume), with a deadline, and the
// verdict depends on the compiler:
//   - the pattern behaved: pass (exit 0);
//   - it did not, on GCC older than the release with the fix: skipped (exit 77, ctest's
//     SKIP_RETURN_CODE), naming the GCC bug;
//   - it did not, on any other compiler (Clang, GCC 13.1 or later): fail (exit 1).
// The form the documentation recommends instead must behave on every compiler (fail otherwise).
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef RINGO_GCC_COROUTINES_FIXED_MAJOR // from cmake/ringoCompilerCheck.cmake (13.1)
#error "tests/traps/CMakeLists.txt defines RINGO_GCC_COROUTINES_FIXED_MAJOR and _MINOR"
#endif

namespace traps {

/// Whether this compiler is a GCC older than the release that fixed the three bugs.
constexpr bool known_bad_gcc() {
#if defined(__GNUC__) && !defined(__clang__)
    return __GNUC__ < RINGO_GCC_COROUTINES_FIXED_MAJOR ||
           (__GNUC__ == RINGO_GCC_COROUTINES_FIXED_MAJOR && __GNUC_MINOR__ < RINGO_GCC_COROUTINES_FIXED_MINOR);
#else
    return false;
#endif
}

inline const char* compiler() {
#if defined(__clang__)
    return "Clang " __clang_version__;
#elif defined(__GNUC__)
    return "GCC " __VERSION__;
#else
    return "an unknown compiler";
#endif
}

struct Outcome {
    bool right = false;
    char what[128] = {};
};

inline void describe(Outcome& o, int status) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        o.right = true;
        std::snprintf(o.what, sizeof o.what, "behaved");
    } else if (WIFEXITED(status)) {
        std::snprintf(o.what, sizeof o.what, "went wrong (exit status %d)", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        std::snprintf(o.what, sizeof o.what, "crashed (%s)", ::strsignal(WTERMSIG(status)));
    }
}

/// Runs each pattern (returns 0 when it behaved) in a child process of its own, all at once,
/// and waits at most `deadline_ms` for them: a child still running then is killed and counted
/// as a coroutine that never resumed.
inline std::vector<Outcome> run_children(const std::vector<int (*)()>& patterns, int deadline_ms) {
    std::vector<Outcome> out(patterns.size());
    std::vector<pid_t> pids(patterns.size(), -1);
    std::fflush(nullptr);
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        pids[i] = ::fork();
        if (pids[i] == 0)
            ::_exit(patterns[i]()); // (no atexit handlers or leak checks in the child)
        if (pids[i] < 0)
            std::snprintf(out[i].what, sizeof out[i].what, "fork: %s", std::strerror(errno));
    }
    for (int waited = 0;; waited += 10) {
        bool running = false;
        for (std::size_t i = 0; i < pids.size(); ++i) {
            int status = 0;
            if (pids[i] > 0 && ::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                describe(out[i], status);
                pids[i] = -1;
            }
            running = running || pids[i] > 0;
        }
        if (!running)
            return out;
        if (waited >= deadline_ms)
            break;
        timespec ten_ms{0, 10 * 1000 * 1000};
        ::nanosleep(&ten_ms, nullptr);
    }
    for (std::size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] <= 0)
            continue;
        ::kill(pids[i], SIGKILL);
        int status = 0;
        ::waitpid(pids[i], &status, 0);
        std::snprintf(out[i].what, sizeof out[i].what, "did not end within %d ms (the coroutine never resumed)",
                      deadline_ms);
    }
    return out;
}

/// The verdict of the programs' checks, folded into one exit status.
class Verdict {
public:
    /// A pattern GCC < 13.1 mishandles (`bug` names the GCC Bugzilla PR).
    void trap(const char* name, const Outcome& o, const char* bug) {
        if (o.right) {
            std::printf("ok: %s: %s with %s\n", name, o.what, compiler());
        } else if (known_bad_gcc()) {
            std::printf("known GCC bug: %s: %s with %s (%s; fixed in GCC %d.%d)\n", name, o.what, compiler(), bug,
                        RINGO_GCC_COROUTINES_FIXED_MAJOR, RINGO_GCC_COROUTINES_FIXED_MINOR);
            skipped_ = true;
        } else {
            std::printf("FAIL: %s: %s with %s, which should have %s fixed\n", name, o.what, compiler(), bug);
            failed_ = true;
        }
    }
    /// The form the documentation recommends: right on every compiler.
    void rule(const char* name, const Outcome& o) {
        std::printf("%s: %s (the documented form): %s with %s\n", o.right ? "ok" : "FAIL", name, o.what, compiler());
        failed_ = failed_ || !o.right;
    }
    int exit_status() const {
        if (failed_)
            return 1;
        if (skipped_) {
            std::printf("SKIPPED: this compiler has the known bug(s) above (docs/guide.md, "
                        "\"GCC 12: three patterns to avoid\")\n");
            return 77;
        }
        return 0;
    }

private:
    bool failed_ = false;
    bool skipped_ = false;
};

} // namespace traps
