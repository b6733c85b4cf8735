// A thin io_uring wrapper for the raw-liburing baselines in bench/net/.
//
// liburing (2.3) prepares SQEs and sets the ring up; submission and waiting are done here with
// one explicit io_uring_enter per call, so every enter is counted (nb::g_sys.loop) and the
// baseline's syscalls per operation are exact. The logic is the usual one: publish the SQ tail,
// then enter with the number of new SQEs and, when waiting, GETEVENTS; with SQPOLL the enter is
// skipped unless the SQ thread sleeps or the CQ has fewer completions than asked for. The enter
// is issued inline in the caller's loop, as ringo issues its own (uring_enter.hpp says why), so
// submit_and_wait() is always inlined.
//
// Setup degrades like ringo's default: SINGLE_ISSUER|DEFER_TASKRUN, on EINVAL COOP_TASKRUN,
// then no flags. The ring fd is registered (IORING_ENTER_REGISTERED_RING) when the kernel allows.
#pragma once

#include <liburing.h>
#include <signal.h>

#include <string>

#include "common.hpp"
#include "uring_enter.hpp"

namespace nb {

struct RingOptions {
  unsigned entries = 1024;     // SQ size
  unsigned cq_entries = 0;     // 0: 4 x entries
  bool sqpoll = false;         // IORING_SETUP_SQPOLL (no DEFER_TASKRUN then)
  unsigned sq_idle_ms = 1000;  // SQPOLL thread idle time before it sleeps
  int sq_cpu = -1;             // SQPOLL thread CPU (IORING_SETUP_SQ_AFF), -1: not pinned
  bool register_ring_fd = true;
};

class Ring {
 public:
  Ring() = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring() { exit(); }

  // Tears the ring down (cancels what is in flight). Safe to call twice.
  void exit() {
    if (inited_) io_uring_queue_exit(&ring_);
    inited_ = false;
  }

  // Returns 0 or a negative errno. setup() describes the flags in force.
  int init(const RingOptions& o) {
    struct Try {
      unsigned flags;
      const char* name;
    };
    const Try plain_tries[] = {
        {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "single_issuer+defer_taskrun"},
        {IORING_SETUP_COOP_TASKRUN, "coop_taskrun"},
        {0, "none"},
    };
    const Try sq_tries[] = {
        {IORING_SETUP_SQPOLL, "sqpoll"},
    };
    const Try* tries = o.sqpoll ? sq_tries : plain_tries;
    size_t n = o.sqpoll ? 1 : 3;
    int ret = -EINVAL;
    for (size_t i = 0; i < n; ++i) {
      io_uring_params p{};
      p.flags = tries[i].flags | IORING_SETUP_CQSIZE;
      p.cq_entries = o.cq_entries ? o.cq_entries : 4 * o.entries;
      if (o.sqpoll) {
        p.sq_thread_idle = o.sq_idle_ms;
        if (o.sq_cpu >= 0) {
          p.flags |= IORING_SETUP_SQ_AFF;
          p.sq_thread_cpu = static_cast<unsigned>(o.sq_cpu);
        }
      }
      ret = io_uring_queue_init_params(o.entries, &ring_, &p);
      if (ret == 0) {
        setup_ = tries[i].name;
        sqpoll_ = o.sqpoll;
        ext_arg_ = (p.features & IORING_FEAT_EXT_ARG) != 0;
        inited_ = true;
        break;
      }
      if (ret != -EINVAL) break;
    }
    if (ret != 0) return ret;
    if (o.register_ring_fd && io_uring_register_ring_fd(&ring_) == 1) {
      reg_fd_ = true;
      setup_ += "+registered_ring";
    }
    return 0;
  }

  io_uring* raw() { return &ring_; }
  const std::string& setup() const { return setup_; }

  // A free SQE; when the SQ is full, submits what is queued first (one counted enter). The
  // rings are sized so this never fails; if the kernel refuses submissions for good, the
  // program stops with a message (exit 1) rather than dereferencing a null SQE.
  io_uring_sqe* sqe() {
    for (int tries = 0;; ++tries) {
      if (io_uring_sqe* s = io_uring_get_sqe(&ring_)) return s;
      int r = submit_and_wait(0);
      if ((r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) || tries > 1000000) {
        std::fprintf(stderr, "io_uring: submission queue stuck (%s)\n", r < 0 ? std::strerror(-r) : "full");
        std::exit(1);
      }
    }
  }

  // Publishes queued SQEs and waits for at least wait_nr CQEs to be ready (0: do not wait).
  // timeout_ms >= 0 bounds the wait (returns -ETIME when it expires). Makes at most one
  // io_uring_enter, none when nothing needs the kernel. Returns the enter result (>= 0) or a
  // negative errno (-EINTR, -ETIME, -EBUSY, -EAGAIN: the caller reaps CQEs and calls again).
  [[gnu::always_inline]] int submit_and_wait(unsigned wait_nr, int timeout_ms = -1) {
    unsigned to_submit = flush();
    unsigned flags = 0;
    bool need = false;
    if (wait_nr && io_uring_cq_ready(&ring_) >= wait_nr) wait_nr = 0;  // already there
    if (sqpoll_) {
      io_uring_smp_mb();  // order the tail store before reading the wakeup flag
      unsigned kf = IO_URING_READ_ONCE(*ring_.sq.kflags);
      if (to_submit && (kf & IORING_SQ_NEED_WAKEUP)) {
        flags |= IORING_ENTER_SQ_WAKEUP;
        need = true;
      }
      if (kf & IORING_SQ_CQ_OVERFLOW) {
        flags |= IORING_ENTER_GETEVENTS;
        need = true;
      }
    } else if (to_submit) {
      need = true;
    }
    if (wait_nr) {
      flags |= IORING_ENTER_GETEVENTS;
      need = true;
    } else if (need && (ring_.flags & IORING_SETUP_DEFER_TASKRUN)) {
      flags |= IORING_ENTER_GETEVENTS;  // run deferred task work while we are in the kernel
    }
    if (!need) return 0;
    int fd = ring_.ring_fd;
    if (reg_fd_) {
      fd = ring_.enter_ring_fd;
      flags |= IORING_ENTER_REGISTERED_RING;
    }
    ++g_sys.loop;
    if (wait_nr && timeout_ms >= 0 && ext_arg_) {
      __kernel_timespec ts{};
      ts.tv_sec = timeout_ms / 1000;
      ts.tv_nsec = static_cast<long long>(timeout_ms % 1000) * 1000000;
      io_uring_getevents_arg arg{};
      arg.ts = reinterpret_cast<uint64_t>(&ts);
      return enter_inline(static_cast<unsigned>(fd), sqpoll_ ? 0 : to_submit, wait_nr, flags | IORING_ENTER_EXT_ARG,
                          &arg, sizeof arg);
    }
    return enter_inline(static_cast<unsigned>(fd), sqpoll_ ? 0 : to_submit, wait_nr, flags);
  }

  // Calls f(cqe) for every ready CQE and marks them seen. Returns how many.
  template <class F>
  unsigned reap(F&& f) {
    unsigned head;
    unsigned n = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      f(cqe);
      ++n;
    }
    io_uring_cq_advance(&ring_, n);
    return n;
  }

  // Counted io_uring_register helpers.
  int register_files(const int* fds, unsigned n) {
    ++g_sys.ctl;
    return io_uring_register_files(&ring_, fds, n);
  }
  int register_files_sparse(unsigned n) {
    ++g_sys.ctl;
    return io_uring_register_files_sparse(&ring_, n);
  }
  int update_file(unsigned slot, int fd) {
    ++g_sys.ctl;
    return io_uring_register_files_update(&ring_, slot, &fd, 1);
  }

 private:
  // Moves prepared SQEs into the kernel-visible tail. Returns SQEs not yet consumed.
  unsigned flush() {
    io_uring_sq* sq = &ring_.sq;
    unsigned tail = sq->sqe_tail;
    if (sq->sqe_head != tail) {
      sq->sqe_head = tail;
      if (sqpoll_)
        io_uring_smp_store_release(sq->ktail, tail);
      else
        IO_URING_WRITE_ONCE(*sq->ktail, tail);
    }
    unsigned head = sqpoll_ ? io_uring_smp_load_acquire(sq->khead) : IO_URING_READ_ONCE(*sq->khead);
    return tail - head;
  }

  io_uring ring_{};
  bool inited_ = false;
  bool sqpoll_ = false;
  bool reg_fd_ = false;
  bool ext_arg_ = false;
  std::string setup_;
};

}  // namespace nb
