// What the stress suites share: their sizes (short form by default, the full sizes with
// RINGO_STRESS_LONG=1, smaller under the sanitizers), the seed of their random choices, a
// watchdog that ends a stuck run with a message instead of a hang, and the counters of a
// process's descriptors and memory that the leak checks compare.
#pragma once

#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGO_STRESS_UNDER_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define RINGO_STRESS_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(RINGO_STRESS_UNDER_TSAN)
#define RINGO_STRESS_UNDER_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(RINGO_STRESS_UNDER_ASAN)
#define RINGO_STRESS_UNDER_ASAN 1
#endif
#if defined(RINGO_STRESS_UNDER_TSAN) || defined(RINGO_STRESS_UNDER_ASAN)
#define RINGO_STRESS_SANITIZED 1
// The sanitizer runtimes' count of live heap bytes (sanitizer/allocator_interface.h, which
// GCC's packages do not always install).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace ringo_stress {

/// True when RINGO_STRESS_LONG is set to anything but "" or "0": the full sizes.
inline bool long_form() {
    const char* e = std::getenv("RINGO_STRESS_LONG");
    return e && *e && std::strcmp(e, "0") != 0;
}

inline constexpr bool under_tsan =
#ifdef RINGO_STRESS_UNDER_TSAN
    true;
#else
    false;
#endif
inline constexpr bool sanitized =
#ifdef RINGO_STRESS_SANITIZED
    true;
#else
    false;
#endif

/// A size: `full` in the long form; otherwise `short_size`, or `tsan_size` under
/// ThreadSanitizer (which runs threaded code 5-15 times slower), `asan_size` under
/// AddressSanitizer (`short_size` when not given).
inline std::size_t sized(std::size_t short_size, std::size_t full, std::size_t tsan_size, std::size_t asan_size = 0) {
    if (long_form())
        return full;
    if (under_tsan)
        return tsan_size;
    if (sanitized && asan_size != 0)
        return asan_size;
    return short_size;
}

/// The seed of a suite's random choices: RINGO_STRESS_SEED when set (to replay a failure),
/// otherwise a fresh one. Printed either way, so a failing run can be replayed.
inline std::uint64_t seed(const char* suite) {
    std::uint64_t s;
    if (const char* e = std::getenv("RINGO_STRESS_SEED"); e && *e)
        s = std::strtoull(e, nullptr, 0);
    else
        s = std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32);
    std::printf("[%s] seed %llu (replay with RINGO_STRESS_SEED=%llu), %s form%s\n", suite,
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s), long_form() ? "long" : "short",
                under_tsan ? ", ThreadSanitizer sizes" : "");
    std::fflush(stdout);
    return s;
}

/// Ends the process with a message when the run makes no progress for `stall` (each
/// progress() call restarts the count): a stuck run fails with what it was doing, not with a
/// hang that only the ctest timeout ends. Its thread stops when it goes.
class Watchdog {
public:
    Watchdog(const char* suite, std::chrono::seconds stall, std::function<std::string()> state)
        : suite_(suite), stall_(stall), state_(std::move(state)), thread_([this] { watch(); }) {}
    ~Watchdog() {
        {
            std::lock_guard lk(m_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    void progress() noexcept { last_.store(now(), std::memory_order_relaxed); }

private:
    static std::int64_t now() noexcept {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    void watch() {
        std::unique_lock lk(m_);
        while (!cv_.wait_for(lk, std::chrono::milliseconds(200), [this] { return done_; })) {
            auto since = now() - last_.load(std::memory_order_relaxed);
            if (since > std::chrono::duration_cast<std::chrono::milliseconds>(stall_).count()) {
                std::string s = state_ ? state_() : std::string();
                std::fprintf(stderr, "[%s] FAILED: no progress for %lld s, the run is stuck: %s\n", suite_,
                             static_cast<long long>(since / 1000), s.c_str());
                std::fflush(stderr);
                std::fflush(stdout);
                std::_Exit(3);
            }
        }
    }
    const char* suite_;
    std::chrono::seconds stall_;
    std::function<std::string()> state_;
    std::atomic<std::int64_t> last_{now()};
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_; // last: starts once the rest is set
};

/// The descriptors open in process `pid` ("self" for this one): the entries of
/// /proc/<pid>/fd. -1 when the directory cannot be read.
inline int open_fds(const std::string& pid = "self") {
    DIR* d = ::opendir(("/proc/" + pid + "/fd").c_str());
    if (!d)
        return -1;
    int n = 0;
    while (dirent* e = ::readdir(d))
        if (e->d_name[0] != '.')
            ++n;
    ::closedir(d);
    return n - (pid == "self" ? 1 : 0); // this process's count includes the directory's own descriptor
}

/// The resident set of process `pid` in bytes (the second field of /proc/<pid>/statm), or
/// 0 when it cannot be read.
inline std::int64_t rss_bytes(const std::string& pid = "self") {
    std::FILE* f = std::fopen(("/proc/" + pid + "/statm").c_str(), "r");
    if (!f)
        return 0;
    long size = 0, resident = 0;
    int got = std::fscanf(f, "%ld %ld", &size, &resident);
    std::fclose(f);
    return got == 2 ? static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : 0;
}

/// The bytes this process's heap hands out now: the sanitizer allocator's count in sanitizer
/// builds (its quarantine excluded), glibc's in-use bytes (arena and mmap'd blocks) otherwise.
inline std::int64_t heap_in_use() {
#ifdef RINGO_STRESS_SANITIZED
    return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes());
#else
    struct mallinfo2 mi = ::mallinfo2();
    return static_cast<std::int64_t>(mi.uordblks + mi.hblkhd);
#endif
}

inline constexpr std::int64_t MiB = 1024 * 1024;

inline double mib(std::int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(MiB); }

} // namespace ringo_stress
