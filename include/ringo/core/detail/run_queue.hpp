// ringo/core/detail/run_queue.hpp - the run queue of a Runtime: ready coroutines, FIFO.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#ifndef RINGO_SHUFFLE_RUN_QUEUE
#define RINGO_SHUFFLE_RUN_QUEUE 0
#endif

namespace ringo::detail {

/// True in builds made with RINGO_SHUFFLE_RUN_QUEUE (a debug mode, CMake option of the same
/// name): each coroutine queued to run trades places with a ready one picked at random, so
/// the order in which ready coroutines run is scrambled and code that leans on FIFO order
/// (in ringo or in its users) fails in a test instead of in production. The sequence is
/// fixed by RINGO_SHUFFLE_SEED (environment, default 1), so a failure can be replayed.
inline constexpr bool shuffles_run_queue = RINGO_SHUFFLE_RUN_QUEUE != 0;
/// The shuffle's seed for the next run queue: RINGO_SHUFFLE_SEED mixed with a count of the
/// queues made so far (each runtime scrambles differently, the same on every run).
std::uint64_t next_shuffle_seed() noexcept;

/// A FIFO of coroutine handles: a power-of-two ring buffer that grows.
class RunQueue {
public:
    RunQueue() {
        buf_ = static_cast<void**>(std::malloc(sizeof(void*) * 1024));
        mask_ = 1023;
        if (!buf_)
            throw std::bad_alloc();
#if RINGO_SHUFFLE_RUN_QUEUE
        rng_ = next_shuffle_seed();
#endif
    }
    /// The queue of no runtime (detail::no_runtime_queue): no buffer, never in a turn, so
    /// yield() on it returns at once.
    struct NoRuntime {};
    constexpr explicit RunQueue(NoRuntime) noexcept : buf_(nullptr), mask_(0) {}
    ~RunQueue() { std::free(buf_); }
    RunQueue(const RunQueue&) = delete;
    RunQueue& operator=(const RunQueue&) = delete;
    bool empty() const noexcept { return len_ == 0; }
    std::size_t size() const noexcept { return len_; }
    // One slot always stays free (push grows before the ring fills), so rotate() can write
    // before it reads.
    void push(std::coroutine_handle<> h) {
        if (len_ >= mask_) [[unlikely]]
            grow();
        buf_[(head_ + len_++) & mask_] = h.address();
#if RINGO_SHUFFLE_RUN_QUEUE
        shuffle_back();
#endif
    }
    /// Makes room for `extra` more push() calls that then cannot fail (std::bad_alloc here
    /// instead, with nothing queued or lost).
    void reserve(std::size_t extra) {
        while (len_ + extra >= mask_)
            grow();
    }
    /// push() when it needs no growth; false (nothing queued) otherwise.
    [[nodiscard]] bool try_push(std::coroutine_handle<> h) noexcept {
        if (len_ >= mask_) [[unlikely]]
            return false;
        buf_[(head_ + len_++) & mask_] = h.address();
#if RINGO_SHUFFLE_RUN_QUEUE
        shuffle_back();
#endif
        return true;
    }
    std::coroutine_handle<> pop() noexcept {
        --len_;
        return std::coroutine_handle<>::from_address(buf_[head_++ & mask_]);
    }
    /// A turn of the run loop: at most `n` pops (pop or rotate) until turn_over() says so.
    /// Outside a turn, turn_over() is true.
    void begin_turn(std::size_t n) noexcept {
        turn_start_ = head_;
        turn_end_ = head_ + n;
    }
    [[nodiscard]] bool turn_over() const noexcept { return head_ >= turn_end_; }
    /// Pops so far in the turn under way (0 outside one).
    [[nodiscard]] std::size_t popped_in_turn() const noexcept { return turn_end_ ? head_ - turn_start_ : 0; }
    /// Ends the turn; returns how many it popped.
    std::size_t end_turn() noexcept {
        std::size_t n = popped_in_turn();
        turn_start_ = turn_end_ = 0;
        return n;
    }
    /// What a yield of coroutine `h` resumes: the next ready coroutine (rotate), or, when the
    /// turn is over, none (`h` queued; std::noop_coroutine(), back to the run loop). On the
    /// queue of no runtime, `h` itself.
    std::coroutine_handle<> yield(std::coroutine_handle<> h) {
        if (turn_over()) [[unlikely]]
            return yield_at_turn_end(h);
        return rotate(h); // a pop of the turn: counted in the runtime's resumptions when it ends
    }
    /// A yield that needs no suspension: the coroutine is alone in the queue and the turn
    /// goes on, so rotate() would hand it back to itself. Counts the pop; false (nothing
    /// done) otherwise.
    [[nodiscard]] bool try_yield_alone() noexcept {
        if (len_ != 0 || head_ >= turn_end_)
            return false;
        ++head_;
        return true;
    }
    /// Pushes `h` at the back and pops the front: the next task, or `h` itself when the
    /// queue was empty. Never grows.
    std::coroutine_handle<> rotate(std::coroutine_handle<> h) noexcept {
        void** b = buf_;
        std::size_t m = mask_, hd = head_;
        b[(hd + len_) & m] = h.address();
#if RINGO_SHUFFLE_RUN_QUEUE
        ++len_; // h counts among the queued while it trades places
        shuffle_back();
        --len_;
#endif
        head_ = hd + 1;
        return std::coroutine_handle<>::from_address(b[hd & m]);
    }

private:
    void grow();
#if RINGO_SHUFFLE_RUN_QUEUE
    // Shuffle mode: the handle just queued at the back trades places with one picked at
    // random among the queued ones (itself included), so every order is possible.
    void shuffle_back() noexcept {
        rng_ ^= rng_ << 13; // xorshift64
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        std::size_t back = (head_ + len_ - 1) & mask_;
        std::size_t pick = (head_ + rng_ % len_) & mask_;
        void* t = buf_[back];
        buf_[back] = buf_[pick];
        buf_[pick] = t;
    }
#endif
    std::coroutine_handle<> yield_at_turn_end(std::coroutine_handle<> h) {
        if (!buf_) // no runtime
            return h;
        push(h);
        return std::noop_coroutine();
    }
    void** buf_;
    std::size_t mask_;
    std::size_t head_ = 0;       // index of the front (masked on use)
    std::size_t len_ = 0;        // handles queued, from head_ on
    std::size_t turn_end_ = 0;   // head_ at which the turn is over; 0 outside a turn
    std::size_t turn_start_ = 0; // head_ when the turn began
#if RINGO_SHUFFLE_RUN_QUEUE
    std::uint64_t rng_ = 1; // shuffle mode's generator state
#endif
};

/// The run queue of no runtime: where t_ready points on a thread that runs none.
extern constinit RunQueue no_runtime_queue;
/// The run queue of the runtime running on this thread (Runtime::current()), or
/// no_runtime_queue: what a yield needs, one load away, with no null check.
extern constinit thread_local RunQueue* t_ready;

} // namespace ringo::detail
