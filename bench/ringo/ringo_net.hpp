// Shared pieces of ringo's network and pipe benchmarks (echo_ringo, pingpong_ringo,
// pipes_ringo). Argument parsing, the JSON line, counted syscalls and clocks come from the
// baselines' bench/net/common.hpp; this adds what only the ringo programs need:
//
// - ring_setup(): the io_uring set-up in force, in the baselines' "ring_setup" spelling
//   (e.g. "single_issuer+defer_taskrun+submit_all+registered_ring");
// - Watchdog (nb::Watchdog, bench/net/common.hpp): bounds a run's wall time from a helper
//   thread, so the measured event loop carries no timer at all.
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

// The run bound every program of the suite uses (bench/net/common.hpp).
using nb::Watchdog;

}  // namespace rb
