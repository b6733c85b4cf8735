// Graceful Ctrl-C for a RuntimePool: the main thread blocks SIGINT and SIGTERM before the
// pool's threads start (they inherit the mask, so no thread takes the signal the ordinary
// way), waits for one of them, then shuts the pool down: its tasks are asked to stop and get
// a grace period; what still runs after it is cancelled.
//   ctrl_c_pool [THREADS [GRACE_MS]]   or   ctrl_c_pool [--threads THREADS] [--grace-ms GRACE_MS]
// Exit status 0 after a signal, 1 when the pool or the signal wait could not be set up, 2 for
// bad arguments.
#include "args.hpp"

#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <system_error>

using namespace std::chrono_literals;

namespace {

// Works in small steps until the pool asks it to stop.
ringo::Task<void> worker(const std::atomic<bool>& stopping, std::atomic<int>& stopped) {
    while (!stopping.load(std::memory_order_acquire))
        co_await ringo::sleep_for(10ms);
    stopped.fetch_add(1);
}

// Waits for something that does not come (an idle connection, say): only cancellation ends it.
ringo::Task<void> stuck(std::atomic<int>& cancelled) {
    int r = co_await ringo::sleep_for(24h);
    if (r == -ECANCELED)
        cancelled.fetch_add(1);
}

// Runs the pool until SIGINT or SIGTERM, then shuts it down with `grace`. Throws what setting
// up the pool or the signal wait throws (std::system_error: no io_uring, out of descriptors ...).
int run(std::size_t threads, std::chrono::milliseconds grace) {
    std::atomic<bool> stopping{false}; // before the pool: its tasks and hook use them
    std::atomic<int> stopped{0}, cancelled{0};
    ringo::RuntimePool pool{threads};
    int sig = 0;
    int workers = static_cast<int>(2 * threads);
    try {
        pool.add_shutdown_hook([&] { stopping.store(true, std::memory_order_release); });
        for (int i = 0; i < workers; ++i)
            pool.spawn(worker(stopping, stopped)).detach();
        pool.spawn(stuck(cancelled)).detach();
        std::printf("%d workers on %zu runtimes, press Ctrl-C\n", workers, pool.size());
        std::fflush(stdout);

        // The main thread waits for the signal through a runtime of its own.
        sig = ringo::block_on(ringo::wait_signal({SIGINT, SIGTERM}));
    } catch (...) {
        pool.shutdown_now(); // `stuck` ends only when cancelled: a graceful shutdown would wait for it
        throw;
    }
    if (sig < 0)
        std::fprintf(stderr, "ctrl_c_pool: waiting for a signal: %s\n", std::strerror(-sig));
    else
        std::printf("got %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");

    bool clean = pool.shutdown_for(grace); // graceful for `grace`, then shutdown_now()
    if (clean)
        std::printf("%d workers stopped when asked, all within %lld ms\n", stopped.load(),
                    static_cast<long long>(grace.count()));
    else
        std::printf("%d workers stopped when asked, %d task(s) cancelled after %lld ms\n", stopped.load(),
                    cancelled.load(), static_cast<long long>(grace.count()));
    return sig < 0 ? 1 : 0;
}

constexpr const char* usage_text = "usage: ctrl_c_pool [THREADS [GRACE_MS]]\n"
                                   "       ctrl_c_pool [--threads THREADS] [--grace-ms GRACE_MS]\n"
                                   "  THREADS   runtimes (threads) in the pool, 1 to 256 (default 2)\n"
                                   "  GRACE_MS  how long the tasks may go on after the signal, 0 to 3600000\n"
                                   "            milliseconds (default 2000)\n";

constexpr std::uint64_t max_threads = 256;
constexpr std::uint64_t max_grace_ms = 3'600'000; // an hour

} // namespace

int main(int argc, char** argv) {
    args::Parser p("ctrl_c_pool", usage_text, argc, argv);
    args::Slot slots[] = {{"--threads", "THREADS", 1, max_threads}, {"--grace-ms", "GRACE_MS", 0, max_grace_ms}};
    while (std::optional<std::string_view> a = p.next()) {
        if (!p.take(*a, slots))
            p.unknown(*a);
    }
    std::size_t threads = slots[0].value.value_or(2);
    std::chrono::milliseconds grace(slots[1].value.value_or(2000));

    ringo::block_signals({SIGINT, SIGTERM}); // first: every thread started from here inherits it
    return args::report_setup_errors("ctrl_c_pool", [&] { return run(threads, grace); });
}
