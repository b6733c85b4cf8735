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
    std::coroutine_handle<> pop() noexcept { return std::coroutine_handle<>::from_address(buf_[head_++ & mask_]); }
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
};

} // namespace ringo::detail
