// Trap 3 of docs/guide.md ("GCC 12: three patterns to avoid"): a capturing lambda made inside
// a co_await expression, converted to a std::function parameter or given to
// ringo::spawn_blocking. GCC before 13.1 keeps the temporary in the coroutine's frame and
// destroys it twice (GCC Bugzilla PR 100611, PR 101367): what the capture owns is freed twice.
// Clang and GCC 13.1 run it right; the documented form (the callable named first, then moved
// into the call) runs right on every compiler.
#include <ringo/ringo.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "traps.hpp"

namespace {

std::atomic<int> g_live{0}; // Probe objects alive (spawn_blocking destroys its copy on a pool thread)
struct Probe {
    Probe() { ++g_live; }
    Probe(const Probe&) { ++g_live; }
    Probe(Probe&&) noexcept { ++g_live; }
    ~Probe() { --g_live; }
};

ringo::Task<std::size_t> call(std::function<std::size_t()> f) { co_return f(); }

/// 0 when `n` is the captured string's length and, after the await, one Probe is alive (the
/// task's own) and the string is intact.
int check(std::size_t n, const std::string& s) { return n == 100 && g_live == 1 && s == std::string(100, 'x') ? 0 : 3; }

int function_made_in_co_await() {
    return ringo::block_on([]() -> ringo::Task<int> {
        std::string s(100, 'x'); // on the heap: freed twice, it aborts
        Probe p;
        std::size_t n = co_await call([s, p] { return s.size(); });
        co_return check(n, s);
    }());
}

int spawn_blocking_of_a_lambda_made_in_co_await() {
    return ringo::block_on([]() -> ringo::Task<int> {
        std::string s(100, 'x');
        Probe p;
        std::size_t n = co_await ringo::spawn_blocking([s, p] { return s.size(); });
        co_return check(n, s);
    }());
}

int named_first() {
    return ringo::block_on([]() -> ringo::Task<int> {
        std::string s(100, 'x');
        Probe p;
        std::size_t n = 0;
        std::size_t m = 0;
        {
            std::function<std::size_t()> f = [s, p] { return s.size(); };
            n = co_await call(std::move(f));
        }
        {
            auto g = [s, p] { return s.size(); };
            m = co_await ringo::spawn_blocking(std::move(g));
        }
        co_return m == n ? check(n, s) : 4;
    }());
}

} // namespace

int main() {
    auto o = traps::run_children(
        {&function_made_in_co_await, &spawn_blocking_of_a_lambda_made_in_co_await, &named_first}, 5000);
    traps::Verdict v;
    v.trap("co_await call([s, p] {...}) with a std::function parameter", o[0], "GCC Bugzilla PR 100611, PR 101367");
    v.trap("co_await ringo::spawn_blocking([s, p] {...})", o[1], "GCC Bugzilla PR 100611, PR 101367");
    v.rule("the callable named first, then co_await call(std::move(f)) and spawn_blocking(std::move(g))", o[2]);
    return v.exit_status();
}
