// The run queue's growth (include/ringo/core/detail/run_queue.hpp).
#include <ringo/core/detail/run_queue.hpp>

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ringo::detail {

namespace {

// Queues of 2 MiB and more (256 Ki handles: a program with a great many tasks alive) live in
// their own 2 MiB-aligned mapping marked for transparent huge pages, so a million queued
// tasks fault their queue in with ~4 faults instead of ~2 000. Smaller ones come from malloc.
constexpr std::size_t huge_page = std::size_t{2} << 20;

bool mapped(std::size_t cap) noexcept { return sizeof(void*) * cap >= huge_page; }

void** allocate_slots(std::size_t cap) {
    if (!mapped(cap)) {
        auto* p = static_cast<void**>(std::malloc(sizeof(void*) * cap));
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    std::size_t bytes = sizeof(void*) * cap; // a multiple of huge_page: cap is a power of two
    void* m = ::mmap(nullptr, bytes + huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        throw std::bad_alloc();
    auto a = reinterpret_cast<std::uintptr_t>(m);
    auto aligned = (a + huge_page - 1) & ~(huge_page - 1);
    if (std::size_t head = aligned - a)
        ::munmap(m, head);
    if (std::size_t tail = huge_page - (aligned - a))
        ::munmap(reinterpret_cast<char*>(aligned) + bytes, tail);
    (void)::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE); // a hint
    return reinterpret_cast<void**>(aligned);
}

void free_slots(void** p, std::size_t cap) noexcept {
    if (mapped(cap))
        ::munmap(p, sizeof(void*) * cap);
    else
        std::free(p);
}

} // namespace

RunQueue::~RunQueue() { free_slots(buf_, mask_ + 1); }

void RunQueue::grow() {
    // Doubles: small queues in place with realloc; from 2 MiB on, into a new mapping (one
    // copy of the handles, cheaper than the faults it saves). Then moves the part that had
    // wrapped round to the front of the old ring behind the rest.
    std::size_t cap = mask_ + 1;
    std::size_t n = tail_ - head_;
    void** nb;
    if (!mapped(cap * 2)) {
        nb = static_cast<void**>(std::realloc(buf_, sizeof(void*) * cap * 2));
        if (!nb)
            throw std::bad_alloc();
    } else {
        nb = allocate_slots(cap * 2);
        std::memcpy(nb, buf_, sizeof(void*) * cap);
        free_slots(buf_, cap);
    }
    std::size_t h = head_ & mask_;
    std::size_t wrapped = h + n > cap ? h + n - cap : 0; // handles at nb[0, wrapped)
    if (wrapped)
        std::memcpy(nb + cap, nb, sizeof(void*) * wrapped);
    buf_ = nb;
    if (turn_end_) { // a turn under way keeps its place: indices move down with head_
        turn_start_ -= head_ - h;
        turn_end_ -= head_ - h;
    }
    head_ = h;
    tail_ = h + n;
    mask_ = cap * 2 - 1;
}

} // namespace ringo::detail
