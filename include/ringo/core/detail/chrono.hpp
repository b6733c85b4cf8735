// ringo/core/detail/chrono.hpp - the part of <chrono> ringo's headers use: durations, time
// points, the clocks and the duration literals (std::chrono_literals).
#pragma once

// libstdc++ keeps these in <bits/chrono.h>, which its <thread>, <mutex> and <condition_variable>
// include; its <chrono> adds, in C++20, the calendar, the time zones and the stream
// output of durations, through <sstream> (with GCC 12, about 0.06 s of the compiler's time in
// every file, a tenth of what net/tcp.hpp costs). A program that prints a duration includes
// <chrono> itself. With another standard library, <chrono>. (<version> defines __GLIBCXX__ and nothing else.)
#include <version>
#if defined(__GLIBCXX__) && __has_include(<bits/chrono.h>)
#include <bits/chrono.h>
#else
#include <chrono>
#endif
