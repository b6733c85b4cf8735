// Shared pieces of ringo's network and pipe benchmarks (echo_ringo, pingpong_ringo,
// pipes_ringo). Argument parsing, the JSON line, counted syscalls and clocks come from the
// baselines' bench/net/common.hpp; this adds what only the ringo programs need:
//
// - ring_setup(): the io_uring set-up in force, in the baselines' "ring_setup" spelling
//   (e.g. "single_issuer+defer_taskrun+submit_all+registered_ring");
// - Watchdog: bounds a run's wall time from a helper thread, so the measured event loop carries
//   no timer at all (an armed ringo timer makes every loop iteration read the clock and wait
//   through the timeout path). At the deadline it runs a "give up" action (which must make the
//   runtime's pending operations complete, e.g. shutdown(2) of the sockets); if the program
//   still has not finished after a grace period it runs a last action that prints a failed
//   JSON line and _exit()s.
#pragma once

#include <ringo/ringo.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "../net/common.hpp"

namespace rb {

// The set-up flags of rt's ring, lower case, '+'-joined, like the raw-liburing baselines.
inline std::string ring_setup(const ringo::Runtime& rt) {
    namespace s = ringo::uring::compat::setup;
    const std::uint32_t f = rt.setup_flags();
    struct Name {
        std::uint32_t bit;
        const char* name;
    };
    const Name names[] = {
        {s::sqpoll, "sqpoll"},
        {s::iopoll, "iopoll"},
        {s::single_issuer, "single_issuer"},
        {s::defer_taskrun, "defer_taskrun"},
        {s::coop_taskrun, "coop_taskrun"},
        {s::taskrun_flag, "taskrun_flag"},
        {s::submit_all, "submit_all"},
    };
    std::string out;
    for (const Name& n : names) {
        if (f & n.bit) {
            if (!out.empty())
                out += '+';
            out += n.name;
        }
    }
    if (out.empty())
        out = "none";
    if (rt.ring_fd_registered())
        out += "+registered_ring";
    return out;
}

class Watchdog {
public:
    Watchdog() = default;
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    ~Watchdog() { stop(); }

    // After `seconds`, unless stop() came first: sets fired(), runs give_up() (on the watchdog
    // thread), waits `grace` more seconds and, if stop() still has not come, runs last_resort()
    // (expected not to return: print a failed JSON line and _exit).
    void start(double seconds, std::function<void()> give_up, std::function<void()> last_resort,
               double grace = 3.0) {
        give_up_ = std::move(give_up);
        last_resort_ = std::move(last_resort);
        th_ = std::thread([this, seconds, grace] {
            std::unique_lock lk(m_);
            auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
            if (cv_.wait_until(lk, until, [this] { return stopping_; }))
                return;
            fired_.store(true, std::memory_order_release);
            lk.unlock();
            if (give_up_)
                give_up_();
            lk.lock();
            until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
            if (cv_.wait_until(lk, until, [this] { return stopping_; }))
                return;
            if (last_resort_)
                last_resort_();
        });
    }

    // Ends the watchdog (joins its thread). Idempotent.
    void stop() {
        {
            std::lock_guard lk(m_);
            stopping_ = true;
        }
        cv_.notify_all();
        if (th_.joinable())
            th_.join();
    }

    [[nodiscard]] bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }

private:
    std::thread th_;
    std::mutex m_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::atomic<bool> fired_{false};
    std::function<void()> give_up_;
    std::function<void()> last_resort_;
};

}  // namespace rb
