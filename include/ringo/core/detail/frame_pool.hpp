// ringo/core/detail/frame_pool.hpp - where coroutine frames come from.
//
// Spawning a task costs one frame. Frames up to 1 KiB come from a per-thread pool instead of
// the heap: a free list per 16-byte size class (a freed frame is handed back by the next
// allocation of its class in a handful of instructions), refilled by carving fresh frames off
// memory chunks the pool maps itself (64 KiB, 256 KiB, then 2 MiB; 2 MiB chunks are aligned
// and asked for transparent huge pages, so a million live tasks take ~140 page faults, not ~27 000,
// and no malloc header; on a virtual machine whose host reclaims free guest memory, a fresh
// huge page can instead cost the host's faults: the pool then falls back to populated 4 KiB
// pages, src/frame_pool.cpp says how).
// Frames are not returned to the operating system: a thread keeps the
// frames its tasks freed (a frame freed on another thread joins that thread's lists), and a
// thread that ends hands its spare frames and chunk to a process-wide depot that other
// threads draw from. Frame memory therefore stays at the peak of frames alive at once.
// Sanitizer builds bypass the pool (plain operator new/delete), so use-after-free of a frame
// is still caught.
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
    static constexpr std::size_t granule = 16;
    static constexpr std::size_t classes = 64; // frames up to 1 KiB
    struct Node {
        Node* next;
    };
    Node* heads[classes];
    char* bump; // the unused rest of the current chunk, as far as it is populated
    char* bump_end;
    char* chunk_end;        // [bump_end, chunk_end): the rest of a chunk populated a step at a time
    std::size_t next_chunk; // bytes of the next chunk to map
    bool cleanup_registered;
};

extern constinit thread_local FramePool t_frame_pool;
/// Frames handed out (pooled or not) on this thread; for benchmarks and tests.
extern constinit thread_local std::uint64_t t_frames_allocated;

/// Bytes of frame chunks mapped so far by all threads (never unmapped); for tests and
/// benchmarks. 0 in builds without the pool.
std::size_t frame_pool_mapped_bytes() noexcept;

/// Makes this thread hand its spare frames to the depot when it ends.
void frame_pool_register_cleanup() noexcept;

/// A frame of size class `c` when the class's free list is empty: carved off the current
/// chunk, or taken from the depot, or from a new chunk. Throws std::bad_alloc.
void* allocate_frame_slow(std::size_t c);

inline void* allocate_frame(std::size_t n) {
    ++t_frames_allocated;
#if RINGO_FRAME_POOL
    std::size_t c = (n - 1) / FramePool::granule;
    if (c < FramePool::classes) [[likely]] {
        FramePool& p = t_frame_pool;
        if (FramePool::Node* f = p.heads[c]) [[likely]] {
            p.heads[c] = f->next;
            return f;
        }
        // No freed frame of this class: carve one off the current chunk (many tasks alive
        // at once take this path for every spawn), or go out of line for a new chunk.
        const std::size_t size = (c + 1) * FramePool::granule;
        if (static_cast<std::size_t>(p.bump_end - p.bump) >= size && p.cleanup_registered) [[likely]] {
            void* f = p.bump;
            p.bump += size;
            return f;
        }
        return allocate_frame_slow(c);
    }
#endif
    return ::operator new(n);
}

[[gnu::always_inline]] inline void free_frame(void* ptr, [[maybe_unused]] std::size_t n) noexcept {
#if RINGO_FRAME_POOL
    std::size_t c = (n - 1) / FramePool::granule;
    if (c < FramePool::classes) [[likely]] {
        FramePool& p = t_frame_pool;
        if (!p.cleanup_registered) [[unlikely]]
            frame_pool_register_cleanup();
        auto* f = static_cast<FramePool::Node*>(ptr);
        f->next = p.heads[c];
        p.heads[c] = f;
        return;
    }
#endif
    ::operator delete(ptr);
}

} // namespace ringo::detail
