// Graceful Ctrl-C for a RuntimePool: the main thread blocks SIGINT and SIGTERM before the
// pool's threads start (they inherit the mask, so no thread takes the signal the ordinary
// way), waits for one of them, then shuts the pool down: its tasks are asked to stop and get
// a grace period; what still runs after it is cancelled.
//   ctrl_c_pool [threads] [grace_ms]
#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace std::chrono_literals;

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

int main(int argc, char** argv) {
    std::size_t threads = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2;
    std::chrono::milliseconds grace(argc > 2 ? std::atoi(argv[2]) : 2000);

    ringo::block_signals({SIGINT, SIGTERM}); // first: every thread started from here inherits it

    ringo::RuntimePool pool{threads};
    std::atomic<bool> stopping{false};
    std::atomic<int> stopped{0}, cancelled{0};
    pool.add_shutdown_hook([&] { stopping.store(true, std::memory_order_release); });
    int workers = static_cast<int>(2 * threads);
    for (int i = 0; i < workers; ++i)
        pool.spawn(worker(stopping, stopped)).detach();
    pool.spawn(stuck(cancelled)).detach();
    std::printf("%d workers on %zu runtimes, press Ctrl-C\n", workers, pool.size());
    std::fflush(stdout);

    // The main thread waits for the signal through a runtime of its own.
    int sig = ringo::block_on(ringo::wait_signal({SIGINT, SIGTERM}));
    if (sig < 0)
        std::fprintf(stderr, "waiting for a signal: %s\n", std::strerror(-sig));
    else
        std::printf("got %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");

    bool clean = pool.shutdown_for(grace); // graceful for `grace`, then shutdown_now()
    if (clean)
        std::printf("%d workers stopped when asked, all within %lld ms\n", stopped.load(),
                    static_cast<long long>(grace.count()));
    else
        std::printf("%d workers stopped when asked, %d task(s) cancelled after %lld ms\n", stopped.load(),
                    cancelled.load(), static_cast<long long>(grace.count()));
    return 0;
}
