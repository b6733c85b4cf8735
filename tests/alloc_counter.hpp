// Counts every global operator new of a test program (g_allocs), to check that an operation
// allocates nothing. It replaces the global operator new and delete: include it in one
// source file of a program only. Not under TSan, whose runtime defines its own
// (RINGO_TEST_NO_NEW_COUNT is defined then).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGO_TEST_NO_NEW_COUNT 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RINGO_TEST_NO_NEW_COUNT 1
#endif

namespace {
std::atomic<long> g_allocs{0};
#ifdef RINGO_TEST_NO_NEW_COUNT
[[maybe_unused]] constexpr bool counting_allocations = false;
#else
[[maybe_unused]] constexpr bool counting_allocations = true;
#endif
} // namespace
#ifndef RINGO_TEST_NO_NEW_COUNT
// GCC sees the replaced delete's free() inlined next to a `new` and calls it a mismatch; the
// pair is matched (both malloc-based). Out of line, so no call site folds a new/delete pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
[[gnu::noinline]] void* operator new(std::size_t n) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif
