// src/report.hpp - running a clean-up that must not throw (a destructor's), reporting a failure.
#pragma once

#include <cstdio>
#include <exception>

namespace ringo::detail {

/// Runs `f`; an exception it throws is reported on stderr as "ringo: <what> (<message>)<then>"
/// and goes no further. For destructors, which must not throw.
template <class F>
void run_reporting_failure(const char* what, const char* then, F&& f) noexcept {
    try {
        f();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ringo: %s (%s)%s\n", what, e.what(), then);
    } catch (...) {
        std::fprintf(stderr, "ringo: %s%s\n", what, then);
    }
}

} // namespace ringo::detail
