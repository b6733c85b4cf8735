// Trap 1 of docs/guide.md ("GCC 12: three patterns to avoid"): co_await inside the condition
// of an if or a while, in a coroutine whose body declares no local variable. GCC before 13.1
// lays the coroutine's frame out wrong (GCC Bugzilla PR 106188): a task cancelled in such a
// sleep_for crashes or is never resumed. Clang and GCC 13.1 run it right; the documented form
// (the result taken into a variable first) runs right on every compiler.
#include <ringo/ringo.hpp>

#include <cerrno>
#include <chrono>

#include "traps.hpp"

namespace {

using namespace std::chrono_literals;

// The trap, as a newcomer writes it: no local variable in the body.
ringo::Task<int> sleep_in_if() {
    if (co_await ringo::sleep_for(1h) == -ECANCELED)
        co_return 1;
    co_return 2;
}

ringo::Task<int> sleep_in_while() {
    while (co_await ringo::sleep_for(1h) == 0) {
    }
    co_return 1;
}

// The documented form: the result first, then the condition.
ringo::Task<int> result_first() {
    int r = co_await ringo::sleep_for(1h);
    if (r == -ECANCELED)
        co_return 1;
    co_return 2;
}

/// Spawns `slow`, cancels it while it sleeps, and expects it to end with 1.
template <ringo::Task<int> (*Slow)()>
int cancelled_in_its_sleep() {
    int r = ringo::block_on([]() -> ringo::Task<int> {
        auto h = ringo::spawn(Slow());
        co_await ringo::sleep_for(5ms);
        h.cancel();
        co_return co_await h;
    }());
    return r == 1 ? 0 : 3;
}

} // namespace

int main() {
    auto o = traps::run_children({&cancelled_in_its_sleep<&sleep_in_if>, &cancelled_in_its_sleep<&sleep_in_while>,
                                  &cancelled_in_its_sleep<&result_first>},
                                 2000);
    traps::Verdict v;
    v.trap("if (co_await sleep_for(1h) == -ECANCELED) in a cancelled task", o[0], "GCC Bugzilla PR 106188");
    v.trap("while (co_await sleep_for(1h) == 0) in a cancelled task", o[1], "GCC Bugzilla PR 106188");
    v.rule("int r = co_await sleep_for(1h); if (r == -ECANCELED) in a cancelled task", o[2]);
    return v.exit_status();
}
