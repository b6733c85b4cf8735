#include <ringo/core/detail/inbox.hpp>
#include <ringo/core/runtime.hpp>

#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace ringo::detail {

Inbox::Inbox(Runtime& owner) : rt_(owner) {
    wake_.fn = &Inbox::on_wake;
    wake_.in = this;
    ring_wake_.fn = &Inbox::on_ring_wake;
    ring_wake_.in = this;
    ring_wake_sent_.fn = &Inbox::on_ring_wake_sent;
    ring_wake_sent_.in = this;
    posted_.reserve(64);
    taken_.reserve(64);
}

Inbox::~Inbox() {
    std::lock_guard lk(m_); // no poster is still writing the eventfd
    if (wake_fd_ >= 0)
        ::close(wake_fd_);
}

void Inbox::start() {
    // A ring-less MSG_RING (6.13) posts a CQE into the ring from any thread, with nothing
    // pending here. Older kernels: an eventfd whose read stays armed in the ring
    // (IOSQE_IO_DRAIN then also waits for it).
    if (send_wake_msg(0) == 0) {
        msg_wake_ = true;
        return;
    }
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0)
        throw std::system_error(errno, std::generic_category(), "ringo: eventfd for cross-thread wake-ups");
    rt_.engine_.ring.private_user_data(user_data_of(wake_)); // (the epoll engine's drains do not wait for it)
    arm_read();
}

int Inbox::send_wake_msg(std::uint64_t user_data) noexcept {
    io_uring_sqe sqe;
    std::memset(&sqe, 0, sizeof sqe);
    sqe.opcode = uring::compat::opcode::msg_ring;
    sqe.fd = rt_.ring_fd();
    sqe.off = user_data; // the target CQE's user_data; res = len = 0
    long r = ::syscall(__NR_io_uring_register, -1, uring::compat::reg::send_msg_ring, &sqe, 1);
    return r < 0 ? -errno : static_cast<int>(r);
}

void Inbox::arm_read() {
    io_uring_sqe* sqe = rt_.engine_.get_sqe();
    io_uring_prep_read(sqe, wake_fd_, &wake_buf_, sizeof wake_buf_, 0);
    sqe->user_data = user_data_of(wake_);
    wake_armed_ = true;
}

void Inbox::on_wake(Completion* c, int res, std::uint32_t) {
    Inbox* in = static_cast<Wake*>(c)->in;
    in->rt_.drain_remote();
    if (in->msg_wake_)
        return;
    in->wake_armed_ = false;
    if (res != -ECANCELED && !in->rt_.discard_)
        in->arm_read();
}

void Inbox::on_ring_wake(Completion* c, int, std::uint32_t) { static_cast<Wake*>(c)->in->rt_.drain_remote(); }

void Inbox::on_ring_wake_sent(Completion* c, int res, std::uint32_t) {
    // Runs on the sender; `c` belongs to the target.
    Runtime* sender = t_current;
    if (sender && !(sender->features() & uring::compat::feat::cqe_skip)) {
        --sender->engine_.in_flight;
        --sender->inbox_.outgoing_wakes_;
    }
    // The message did not arrive (-EOVERFLOW, ...): wake the target another way, unless the
    // sender is being destroyed (its pool has stopped every runtime already).
    if (res < 0 && !(sender && sender->discard_)) [[unlikely]]
        static_cast<Wake*>(c)->in->wake_by_syscall();
}

bool Inbox::queue_ring_wake(Inbox& target) noexcept {
    if (!rt_.supports(uring::compat::opcode::msg_ring))
        return false;
    io_uring_sqe* sqe;
    try {
        sqe = rt_.engine_.get_sqe();
    } catch (...) {
        return false;
    }
    std::memset(sqe, 0, sizeof *sqe);
    sqe->opcode = uring::compat::opcode::msg_ring;
    sqe->fd = target.rt_.ring_fd();
    sqe->off = target.user_data_of(target.ring_wake_);            // the CQE posted on the target
    sqe->user_data = target.user_data_of(target.ring_wake_sent_); // this ring's own CQE of the message
    if (rt_.features() & uring::compat::feat::cqe_skip) {
        // No CQE here unless it fails: the sender's next wait is not cut short by its own
        // message. The kernel takes its reference to the target ring when the SQE is
        // submitted, so a pool only has to submit before any runtime closes its ring.
        sqe->flags |= uring::compat::sqe_flag::cqe_skip_success;
    } else {
        ++rt_.engine_.in_flight;
        ++outgoing_wakes_;
    }
    return true;
}

void Inbox::wake_by_syscall() noexcept {
    if (msg_wake_) {
        send_wake_msg(user_data_of(wake_));
    } else {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
    }
}

void Inbox::post(Item item) {
    // From a runtime of the same pool the wake-up is an IORING_OP_MSG_RING SQE on the
    // sender's own ring, submitted with its other SQEs (the pool keeps every runtime alive
    // until all of them have stopped and sent their last message).
    Runtime* sender = t_current;
    bool by_ring = sender && sender != &rt_ && rt_.registry_.pool_link() &&
                   sender->registry_.pool_link() == rt_.registry_.pool_link() && !sender->discard_ &&
                   !sender->inbox_.drain_used_;
    {
        // Otherwise the wake-up is written under the lock: once the item is visible the target
        // may run it, finish, and start destroying itself, and its destructor takes this lock
        // before it closes the eventfd.
        std::lock_guard lk(m_);
        posted_.push_back(item);
        if (wake_pending_)
            return;
        wake_pending_ = true;
        wakeups_.fetch_add(1, std::memory_order_relaxed);
        if (!by_ring) {
            wake_by_syscall();
            return;
        }
    }
    if (sender->inbox_.queue_ring_wake(*this))
        wakeups_by_sqe_.fetch_add(1, std::memory_order_relaxed);
    else
        wake_by_syscall();
}

std::vector<Inbox::Item>& Inbox::take() {
    {
        std::lock_guard lk(m_);
        wake_pending_ = false;
        taken_.clear(); // the previous batch, walked by the caller
        taken_.swap(posted_);
    }
    items_.fetch_add(taken_.size(), std::memory_order_relaxed);
    return taken_;
}

} // namespace ringo::detail
