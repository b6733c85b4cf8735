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
}
#ifndef RINGO_TEST_NO_NEW_COUNT
void* operator new(std::size_t n) {
    ++g_allocs;
    if (void* p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete" // free() of what this operator new took from malloc
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif
