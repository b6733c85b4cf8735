// The run queue's growth (include/ringo/core/detail/run_queue.hpp).
#include <ringo/core/detail/run_queue.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ringo::detail {

std::uint64_t next_shuffle_seed() noexcept {
    static const std::uint64_t base = [] {
        const char* e = std::getenv("RINGO_SHUFFLE_SEED");
        std::uint64_t s = e ? std::strtoull(e, nullptr, 10) : 1;
        return s;
    }();
    static std::atomic<std::uint64_t> made{0};
    // splitmix64 of (seed, queue number): well spread, and never 0 (xorshift's fixed point).
    std::uint64_t z = base + 0x9E3779B97F4A7C15ull * (made.fetch_add(1, std::memory_order_relaxed) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z ? z : 1;
}

void RunQueue::grow() {
    // Doubles in place with realloc (large queues are mmap'd, which glibc grows with mremap:
    // the queued handles are neither copied nor faulted in again), then moves the part that
    // had wrapped round to the front of the old ring behind the rest.
    std::size_t cap = mask_ + 1;
    std::size_t n = len_;
    auto* nb = static_cast<void**>(std::realloc(buf_, sizeof(void*) * cap * 2));
    if (!nb)
        throw std::bad_alloc();
    std::size_t h = head_ & mask_;
    std::size_t wrapped = h + n > cap ? h + n - cap : 0; // handles at nb[0, wrapped)
    if (wrapped)
        std::memcpy(nb + cap, nb, sizeof(void*) * wrapped);
    buf_ = nb;
    // The front moves to slot h of the new ring, its index to h + 2 * cap: the same slot, and
    // never 0, so a turn under way (whose indices move with it) cannot end up at turn_end_
    // == 0, which means outside a turn.
    std::size_t new_head = h + cap * 2;
    if (turn_end_) {
        turn_start_ = turn_start_ - head_ + new_head;
        turn_end_ = turn_end_ - head_ + new_head;
    }
    head_ = new_head;
    mask_ = cap * 2 - 1;
}

} // namespace ringo::detail
