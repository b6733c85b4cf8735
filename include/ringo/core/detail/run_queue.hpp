// ringo/core/detail/run_queue.hpp - the run queue of a Runtime: ready coroutines, FIFO.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ringo::detail {

/// A FIFO of coroutine handles: a power-of-two ring buffer that grows.
class RunQueue {
public:
    RunQueue() {
        buf_ = static_cast<void**>(std::malloc(sizeof(void*) * 1024));
        mask_ = 1023;
        if (!buf_)
            throw std::bad_alloc();
    }
    ~RunQueue() { std::free(buf_); }
    RunQueue(const RunQueue&) = delete;
    RunQueue& operator=(const RunQueue&) = delete;
    bool empty() const noexcept { return head_ == tail_; }
    std::size_t size() const noexcept { return tail_ - head_; }
    // One slot always stays free (push grows before the ring fills), so rotate() can write
    // before it reads.
    void push(std::coroutine_handle<> h) {
        if (tail_ - head_ >= mask_) [[unlikely]]
            grow();
        buf_[tail_++ & mask_] = h.address();
    }
    /// push() when it needs no growth; false (nothing queued) otherwise.
    [[nodiscard]] bool try_push(std::coroutine_handle<> h) noexcept {
        if (tail_ - head_ >= mask_) [[unlikely]]
            return false;
        buf_[tail_++ & mask_] = h.address();
        return true;
    }
    std::coroutine_handle<> pop() noexcept { return std::coroutine_handle<>::from_address(buf_[head_++ & mask_]); }
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
    /// Pushes `h` at the back and pops the front: the next task, or `h` itself when the
    /// queue was empty. Never grows.
    std::coroutine_handle<> rotate(std::coroutine_handle<> h) noexcept {
        void** b = buf_;
        std::size_t m = mask_, t = tail_, hd = head_;
        b[t & m] = h.address();
        tail_ = t + 1;
        head_ = hd + 1;
        return std::coroutine_handle<>::from_address(b[hd & m]);
    }

private:
    void grow();
    void** buf_;
    std::size_t mask_;
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
    std::size_t turn_start_ = 0; // head_ when the turn began
    std::size_t turn_end_ = 0;   // head_ at which the turn is over; 0 outside a turn
};

} // namespace ringo::detail
