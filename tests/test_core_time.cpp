// sleep_for and sleep_until (core/time.hpp).
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "compose_helpers.hpp"

namespace {

// ---------------------------------------------------------------- sleep

TEST(Sleep, SleepsAtLeastTheDuration) {
    auto t0 = std::chrono::steady_clock::now();
    int r = run([]() -> Task<int> { co_return co_await ringo::sleep_for(15ms); });
    EXPECT_EQ(r, 0);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 15ms);
}

TEST(Sleep, NonPositiveDurationReturnsAtOnce) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await ringo::sleep_for(-5ms) + co_await ringo::sleep_for(0ms); }),
              0);
}

TEST(Sleep, ManySleepersWakeInDeadlineOrder) {
    RINGO_FIFO_ONLY("sleepers whose deadlines pass in the same turn are queued in deadline order");
    auto order = run([]() -> Task<std::string> {
        std::string s;
        std::vector<ringo::JoinHandle<void>> hs;
        for (int i : {3, 1, 2}) {
            hs.push_back(ringo::spawn([](std::string& out, int k) -> Task<void> {
                co_await ringo::sleep_for(std::chrono::milliseconds(5 * k));
                out += char('0' + k);
            }(s, i)));
        }
        for (auto& h : hs)
            co_await h;
        co_return s;
    });
    EXPECT_EQ(order, "123");
}

TEST(Sleep, SleepUntil) {
    auto deadline = std::chrono::steady_clock::now() + 10ms;
    run([&]() -> Task<void> { EXPECT_EQ(co_await ringo::sleep_until(deadline), 0); });
    EXPECT_GE(std::chrono::steady_clock::now(), deadline);
}

} // namespace
