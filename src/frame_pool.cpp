// The frame pool's slow paths (include/ringo/core/detail/frame_pool.hpp): carving frames off chunks,
// mapping chunks, and the process-wide depot that ending threads leave their frames in.
#include <ringo/core/detail/frame_pool.hpp>

#include <dirent.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace ringo::detail {

constinit thread_local FramePool t_frame_pool{};
constinit thread_local std::uint64_t t_frames_allocated = 0;

#if RINGO_FRAME_POOL
namespace {

std::atomic<std::size_t> g_mapped_bytes{0};

constexpr std::size_t first_chunk = std::size_t{64} * 1024;
constexpr std::size_t huge_chunk = std::size_t{2} * 1024 * 1024; // the x86-64 huge page

// What ended threads left: their free lists (whole lists, one entry each) and the unused
// rest of their chunks. Chunks are never unmapped, so a frame stays valid wherever it goes.
struct Depot {
    std::mutex m;
    std::vector<FramePool::Node*> lists[FramePool::classes];
    struct Region {
        char* begin;
        char* end;
    };
    std::vector<Region> regions;
};
Depot& depot() {
    static Depot* d = new Depot; // never destroyed: threads may end after static destructors run
    return *d;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14; older kernels refuse it (EINVAL) and fault on touch
#endif

// True when a virtio balloon with free page reporting (feature bit 5,
// VIRTIO_BALLOON_F_REPORTING) is bound: the host then takes back the guest's large free
// blocks, which are what a fresh huge page is made of.
bool host_takes_back_free_memory() noexcept {
    const char* dir_path = "/sys/bus/virtio/drivers/virtio_balloon";
    DIR* dir = ::opendir(dir_path);
    if (!dir)
        return false;
    bool reporting = false;
    while (const dirent* e = ::readdir(dir)) {
        if (std::strncmp(e->d_name, "virtio", 6) != 0)
            continue;
        char path[320];
        std::snprintf(path, sizeof path, "%s/%s/features", dir_path, e->d_name);
        if (std::FILE* f = std::fopen(path, "re")) {
            char bits[8] = {};
            if (std::fread(bits, 1, 6, f) == 6 && bits[5] == '1')
                reporting = true;
            std::fclose(f);
        }
    }
    ::closedir(dir);
    return reporting;
}

// Whether 2 MiB chunks still ask for huge pages (below). Decided at the first such chunk.
std::atomic<int> g_huge_pages{-1}; // -1 undecided, 0 no, 1 yes

std::int64_t monotonic_ns() noexcept {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

// A new chunk of `bytes` (64 KiB .. 2 MiB). A 2 MiB chunk is 2 MiB aligned, marked for
// transparent huge pages and populated at once (one fault-in for the chunk instead of one per
// 4 KiB page as frames are carved). A huge page usually comes in ~0.1 ns a byte; but on a
// virtual machine whose host takes back the guest's free memory (free page reporting hands
// it the large free blocks a huge page is made of), the host backs it again page by page on
// first touch, ~4 ns a byte: a million tasks then spend 0.4 s in the kernel. So the populate
// is timed, and once a huge page has come slower than 4 KiB pages would (~0.4 ns a byte: 1 ms
// for the chunk), later chunks are populated with 4 KiB pages (drawn from memory the guest
// still holds) for the rest of the process. Where the machine says outright that its host
// takes free memory back (a virtio balloon with free page reporting), no huge page is tried.
// A chunk of 4 KiB pages is populated a step (256 KiB) at a time, as frames reach it
// (`stepwise`), so a program with a few thousand tasks does not fault in 2 MiB.
constexpr std::size_t populate_step = std::size_t{256} * 1024;
char* map_chunk(std::size_t bytes, bool& stepwise) {
    stepwise = false;
    std::size_t len = bytes == huge_chunk ? 2 * huge_chunk : bytes;
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        throw std::bad_alloc();
    char* p = static_cast<char*>(m);
    if (bytes == huge_chunk) {
        auto a = reinterpret_cast<std::uintptr_t>(p);
        auto aligned = (a + huge_chunk - 1) & ~(huge_chunk - 1);
        std::size_t head = aligned - a;
        if (head)
            ::munmap(p, head);
        if (std::size_t tail = len - head - huge_chunk)
            ::munmap(reinterpret_cast<char*>(aligned) + huge_chunk, tail);
        p = reinterpret_cast<char*>(aligned);
        // Hints: refused or ignored is fine (the chunk is then faulted in as it is carved).
        int huge = g_huge_pages.load(std::memory_order_relaxed);
        if (huge < 0) {
            huge = host_takes_back_free_memory() ? 0 : 1;
            g_huge_pages.store(huge, std::memory_order_relaxed);
        }
        if (huge) {
            (void)::madvise(p, huge_chunk, MADV_HUGEPAGE);
            const std::int64_t t0 = monotonic_ns();
            (void)::madvise(p, huge_chunk, MADV_POPULATE_WRITE);
            if (monotonic_ns() - t0 > 1000000)
                g_huge_pages.store(0, std::memory_order_relaxed);
        } else {
            stepwise = true;
        }
    }
    g_mapped_bytes.fetch_add(bytes, std::memory_order_relaxed);
    return p;
}

// Returns this thread's spare frames to the depot when the thread ends.
struct FramePoolCleanup {
    ~FramePoolCleanup() {
        FramePool& p = t_frame_pool;
        Depot& d = depot();
        std::lock_guard lk(d.m);
        for (std::size_t c = 0; c < FramePool::classes; ++c) {
            if (p.heads[c])
                d.lists[c].push_back(p.heads[c]);
            p.heads[c] = nullptr;
        }
        if (p.chunk_end - p.bump >= static_cast<std::ptrdiff_t>(FramePool::classes * FramePool::granule))
            d.regions.push_back({p.bump, p.chunk_end}); // what is not populated faults in on touch
        p.bump = p.bump_end = p.chunk_end = nullptr;
        p.cleanup_registered = false;
    }
};

} // namespace

std::size_t frame_pool_mapped_bytes() noexcept { return g_mapped_bytes.load(std::memory_order_relaxed); }

void frame_pool_register_cleanup() noexcept {
    static thread_local FramePoolCleanup cleanup;
    (void)&cleanup;
    t_frame_pool.cleanup_registered = true;
}

namespace {
// Populates the next step of a chunk of 4 KiB pages, [bump_end, chunk_end), and moves
// bump_end past it.
void populate_next_step(FramePool& p) noexcept {
    char* e = p.chunk_end - p.bump_end > static_cast<std::ptrdiff_t>(populate_step) ? p.bump_end + populate_step
                                                                                    : p.chunk_end;
    (void)::madvise(p.bump_end, static_cast<std::size_t>(e - p.bump_end), MADV_POPULATE_WRITE); // a hint
    p.bump_end = e;
}
} // namespace

void* allocate_frame_slow(std::size_t c) {
    FramePool& p = t_frame_pool;
    if (!p.cleanup_registered) [[unlikely]]
        frame_pool_register_cleanup();
    const std::size_t size = (c + 1) * FramePool::granule;
    if (static_cast<std::size_t>(p.bump_end - p.bump) < size && p.bump_end != p.chunk_end)
        populate_next_step(p); // the populated part of a chunk of 4 KiB pages is used up
    if (static_cast<std::size_t>(p.bump_end - p.bump) < size) {
        // The current chunk is used up (its last < 1 KiB is left): frames other threads
        // left in the depot first, then a region they left, then a new chunk.
        {
            Depot& d = depot();
            std::lock_guard lk(d.m);
            if (!d.lists[c].empty()) {
                FramePool::Node* f = d.lists[c].back();
                d.lists[c].pop_back();
                p.heads[c] = f->next;
                return f;
            }
            if (!d.regions.empty()) {
                p.bump = d.regions.back().begin;
                p.bump_end = p.chunk_end = d.regions.back().end;
                d.regions.pop_back();
            }
        }
        if (static_cast<std::size_t>(p.bump_end - p.bump) < size) {
            std::size_t bytes = p.next_chunk ? p.next_chunk : first_chunk;
            bool stepwise = false;
            p.bump = map_chunk(bytes, stepwise);
            p.chunk_end = p.bump + bytes;
            p.bump_end = p.chunk_end;
            if (stepwise) {
                p.bump_end = p.bump;
                populate_next_step(p);
            }
            // 64 KiB, 256 KiB, then 2 MiB huge pages: a program with more than a few
            // thousand tasks alive reaches them soon, instead of faulting in another 1.7 MiB
            // by the 4 KiB page first.
            p.next_chunk = bytes == first_chunk ? 4 * first_chunk : huge_chunk;
        }
    }
    void* f = p.bump;
    p.bump += size;
    return f;
}
#else
std::size_t frame_pool_mapped_bytes() noexcept { return 0; }
void frame_pool_register_cleanup() noexcept {}
void* allocate_frame_slow(std::size_t c) { return ::operator new((c + 1) * FramePool::granule); }
#endif

} // namespace ringo::detail
