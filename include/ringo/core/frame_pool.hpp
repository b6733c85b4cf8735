// ringo/core/frame_pool.hpp - a per-thread cache of coroutine frames.
//
// Spawning a task costs one frame. glibc's malloc/free for it costs about 100 instructions;
// this cache hands back a recently freed frame of the same size class in a handful. Frames
// up to 1 KiB are cached, at most `max_cached` per size class and thread; a frame freed on
// another thread joins that thread's cache. Sanitizer builds bypass the cache so that
// use-after-free of a frame is still caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace ringo::detail {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGO_FRAME_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define RINGO_FRAME_POOL 0
#endif
#endif
#ifndef RINGO_FRAME_POOL
#define RINGO_FRAME_POOL 1
#endif

inline constexpr bool frame_pool_enabled = RINGO_FRAME_POOL != 0;

struct FramePool {
    static constexpr std::size_t granule = 64;
    static constexpr std::size_t classes = 16; // frames up to 1 KiB
    static constexpr unsigned max_cached = 256;
    struct Node {
        Node* next;
    };
    Node* heads[classes];
    unsigned counts[classes];
    bool cleanup_registered;
};

extern constinit thread_local FramePool t_frame_pool;
/// Frames handed out (pooled or not) on this thread; for benchmarks and tests.
extern constinit thread_local std::uint64_t t_frames_allocated;

void frame_pool_register_cleanup() noexcept;

inline void* allocate_frame(std::size_t n) {
    ++t_frames_allocated;
#if RINGO_FRAME_POOL
    std::size_t c = (n - 1) / FramePool::granule;
    if (c < FramePool::classes) {
        FramePool& p = t_frame_pool;
        if (FramePool::Node* f = p.heads[c]) [[likely]] {
            p.heads[c] = f->next;
            --p.counts[c];
            return f;
        }
        return ::operator new((c + 1) * FramePool::granule);
    }
#endif
    return ::operator new(n);
}

inline void free_frame(void* ptr, [[maybe_unused]] std::size_t n) noexcept {
#if RINGO_FRAME_POOL
    std::size_t c = (n - 1) / FramePool::granule;
    if (c < FramePool::classes) {
        FramePool& p = t_frame_pool;
        if (p.counts[c] < FramePool::max_cached) [[likely]] {
            if (!p.cleanup_registered) [[unlikely]]
                frame_pool_register_cleanup();
            auto* f = static_cast<FramePool::Node*>(ptr);
            f->next = p.heads[c];
            p.heads[c] = f;
            ++p.counts[c];
            return;
        }
        ::operator delete(ptr);
        return;
    }
#endif
    ::operator delete(ptr);
}

} // namespace ringo::detail
