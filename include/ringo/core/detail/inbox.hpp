// ringo/core/detail/inbox.hpp - what other threads hand a runtime, and how they wake it.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include <ringo/core/detail/completion.hpp>
#include <ringo/core/detail/std_parts.hpp>

namespace ringo {

class Runtime;

namespace detail {

/// The part of a Runtime that other threads talk to. They post items (a coroutine to resume,
/// a spawned task, a task moving in with switch_to, a cancellation request) under a lock; the
/// first item of a batch wakes the runtime, and its loop takes the whole batch at once.
///
/// The wake-up: a ring-less IORING_OP_MSG_RING (IORING_REGISTER_SEND_MSG_RING, 6.13) that
/// posts a CQE into the ring from any thread, or on older kernels an eventfd whose read stays
/// armed in the ring. Between runtimes of one RuntimePool it is instead an IORING_OP_MSG_RING
/// SQE on the sender's own ring, submitted with its other SQEs (no system call of its own);
/// when that message fails, the target is woken by system call.
class Inbox {
public:
    /// One posted item: `addr` is the coroutine to resume (null: a cancellation request);
    /// `spawn`, when set, the task it starts (bit 0 set: a task moving in).
    struct Item {
        void* addr;
        PromiseBase* spawn;
    };

    explicit Inbox(Runtime& owner);
    ~Inbox();
    Inbox(const Inbox&) = delete;
    Inbox& operator=(const Inbox&) = delete;

    /// Chooses the wake-up (MSG_RING or the eventfd, whose read it queues on the owner's
    /// ring). Owner thread, from the Runtime's constructor. Throws when no eventfd can be made.
    void start();
    /// Posts one item; wakes the owner if this is the first since it last looked. Any thread.
    void post(Item item);
    /// The items posted since the last call (owner thread). The vector stays the inbox's and
    /// is valid until the next call.
    std::vector<Item>& take();

    /// The eventfd's read is still in the ring (it must be cancelled before the ring goes).
    [[nodiscard]] bool read_armed() const noexcept { return wake_armed_; }
    /// MSG_RING wake-ups the owner sent whose own CQE it has not seen yet.
    [[nodiscard]] std::uint32_t outgoing() const noexcept { return outgoing_wakes_; }
    /// IOSQE_IO_DRAIN was used on the owner's ring: a drained SQE holds back every later one,
    /// so from then on it wakes other runtimes by system call, not by MSG_RING SQE.
    void note_drain_used() noexcept { drain_used_ = true; }

    [[nodiscard]] std::uint64_t items() const noexcept { return items_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t wakeups() const noexcept { return wakeups_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t wakeups_by_sqe() const noexcept {
        return wakeups_by_sqe_.load(std::memory_order_relaxed);
    }

private:
    struct Wake : Completion {
        Inbox* in = nullptr;
    };
    static void on_wake(Completion* c, int res, std::uint32_t flags);
    static void on_ring_wake(Completion* c, int res, std::uint32_t flags);
    static void on_ring_wake_sent(Completion* c, int res, std::uint32_t flags);
    [[nodiscard]] std::uint64_t user_data_of(Wake& w) const noexcept {
        return reinterpret_cast<std::uint64_t>(static_cast<Completion*>(&w)) | tag_completion;
    }
    void arm_read();
    int send_wake_msg(std::uint64_t user_data) noexcept;
    bool queue_ring_wake(Inbox& target) noexcept; // on the sender (this), its owner's thread
    void wake_by_syscall() noexcept;

    Runtime& rt_;
    std::mutex m_;
    std::vector<Item> posted_;   // guarded by m_
    std::vector<Item> taken_;    // owner thread
    bool wake_pending_ = false;  // guarded by m_: a wake-up is on its way
    bool msg_wake_ = false;      // wake-ups by ring-less MSG_RING instead of the eventfd
    int wake_fd_ = -1;           // the eventfd, when used
    std::uint64_t wake_buf_ = 0; // where its read lands
    bool wake_armed_ = false;    // its read is in the ring
    std::uint32_t outgoing_wakes_ = 0;
    bool drain_used_ = false;
    Wake wake_{};           // the eventfd read's CQE, or a MSG_RING sent by system call
    Wake ring_wake_{};      // target side: the CQE a MSG_RING SQE posts here
    Wake ring_wake_sent_{}; // sender side: the sender's own CQE of that MSG_RING (failure: resend)
    std::atomic<std::uint64_t> items_{0};
    std::atomic<std::uint64_t> wakeups_{0};
    std::atomic<std::uint64_t> wakeups_by_sqe_{0};
};

} // namespace detail
} // namespace ringo
