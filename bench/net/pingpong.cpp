// bench_pingpong: one thread, N connected stream-socket pairs (a, b), K round trips of a 4-byte
// message on each: a sends message k, b reads it, checks it and sends it back, a reads the echo,
// checks it and sends message k+1. All N pairs run concurrently. The modes differ only in how
// the I/O is driven (see kUsage). Every system call the program makes in the measured region
// goes through a counter; event-loop calls (epoll_wait, io_uring_enter, io_submit, io_getevents)
// are also reported apart.
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <sys/syscall.h>

#include <memory>
#include <vector>

#include "uring_ring.hpp"

namespace {

const char* kUsage =
    "usage: bench_pingpong --mode M --conns N --msgs K [--transport unix|tcp] [--cpu C]\n"
    "                      [--sq-cpu C] [--timeout S]\n"
    "  One thread bounces a 4-byte message K times over each of N socket pairs; prints one\n"
    "  JSON line (bench \"pingpong\").\n"
    "  --mode M        epoll        epoll_wait + read/write system calls (nonblocking sockets)\n"
    "                  epoll-splice like epoll; side b echoes with splice(2) socket->pipe, then\n"
    "                               pipe->socket (side a: read/write, checks content)\n"
    "                  aio          Linux AIO IOCB_CMD_POLL (io_submit/io_getevents, one-shot,\n"
    "                               re-armed) + recv/send system calls\n"
    "                  aio-splice   like aio; side b echoes with splice(2) (side a: recv/send)\n"
    "                  uring-poll   io_uring POLL_ADD (one-shot, re-armed) + read/write syscalls\n"
    "                  uring-poll-splice\n"
    "                               like uring-poll; side b echoes with splice(2) (side a:\n"
    "                               read/write)\n"
    "                  uring        io_uring RECV/SEND\n"
    "                  uring-fixed  io_uring RECV/SEND on registered files (IOSQE_FIXED_FILE)\n"
    "                  uring-sqpoll io_uring RECV/SEND with IORING_SETUP_SQPOLL\n"
    "                  splice       side b echoes with io_uring SPLICE socket->pipe, then\n"
    "                               pipe->socket (side a: io_uring RECV/SEND, checks content)\n"
    "                  splice-link  like splice, both SPLICEs submitted together, joined by\n"
    "                               IOSQE_IO_HARDLINK\n"
    "  --conns N       socket pairs, all active at once (1..20000)\n"
    "  --msgs K        round trips per pair (1..100000000)\n"
    "  --transport T   unix: AF_UNIX SOCK_STREAM socketpair() (default)\n"
    "                  tcp:  TCP pairs over 127.0.0.1 (connect + accept), TCP_NODELAY\n"
    "  --cpu C         pin the thread to CPU C (after ring setup; default: not pinned)\n"
    "  --sq-cpu C      uring-sqpoll: pin the SQPOLL kernel thread to CPU C (default: not pinned)\n"
    "  --timeout S     give up (ok=false) after S seconds (default 120)\n";

enum class Mode {
  epoll,
  epoll_splice,
  aio,
  aio_splice,
  uring_poll,
  uring_poll_splice,
  uring,
  uring_fixed,
  uring_sqpoll,
  splice,
  splice_link
};

enum Op : uint64_t { kARecv, kASend, kBRecv, kBSend, kBSpliceIn, kBSpliceOut, kPollA, kPollB };

struct Pair {
  int a = -1, b = -1;              // socket fds (or fixed-table indexes 2i, 2i+1 in uring-fixed)
  int pr = -1, pw = -1;            // splice: pipe read / write end
  uint32_t k = 0;                  // round trips completed
  unsigned char ain[4], bin[4];    // receive buffers
  unsigned char aout[4], bout[4];  // send buffers
  unsigned agot = 0, bgot = 0;     // bytes received of the current message
  unsigned asent = 0, bsent = 0;   // bytes sent of the current message
  unsigned pipe_bytes = 0;         // splice modes: bytes sitting in the pipe
  unsigned b_ops = 0;              // splice: b-side operations in flight
  bool done = false;
};

inline uint32_t message(size_t i, uint32_t k) {
  return (k + 1u) * 2654435761u ^ (static_cast<uint32_t>(i) * 40503u + 0x5bd1e995u);
}

// Counted system calls this program alone makes (the others are nb::sys in common.hpp).
ssize_t counted_splice(int in, int out, size_t len, unsigned flags) {
  ++nb::g_sys.io;
  return ::splice(in, nullptr, out, nullptr, len, flags);
}
// Linux AIO, raw system calls (no libaio): io_submit and io_getevents are event-loop calls.
long counted_io_submit(aio_context_t ctx, long n, iocb** v) {
  ++nb::g_sys.loop;
  return ::syscall(SYS_io_submit, ctx, n, v);
}
long counted_io_getevents(aio_context_t ctx, long min_nr, long nr, io_event* ev) {
  ++nb::g_sys.loop;
  return ::syscall(SYS_io_getevents, ctx, min_nr, nr, ev, nullptr);  // no timeout
}

int tcp_pair(int lfd, int sv[2]) {
  sockaddr_in a{};
  socklen_t al = sizeof a;
  if (getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &al) != 0) return -1;
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0) return -1;
  if (::connect(c, reinterpret_cast<sockaddr*>(&a), al) != 0) {
    ::close(c);
    return -1;
  }
  int s = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  if (s < 0) {
    ::close(c);
    return -1;
  }
  int one = 1;
  ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sv[0] = c;
  sv[1] = s;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage,
                {{"mode", true},
                 {"conns", true},
                 {"msgs", true},
                 {"transport", true},
                 {"cpu", true},
                 {"sq-cpu", true},
                 {"timeout", true}});
  std::string mode_s =
      args.need_choice("mode", {"epoll", "epoll-splice", "aio", "aio-splice", "uring-poll", "uring-poll-splice", "uring",
                                "uring-fixed", "uring-sqpoll", "splice", "splice-link"});
  size_t nconns = static_cast<size_t>(args.need_int("conns", 1, 20000));
  uint32_t kmsgs = static_cast<uint32_t>(args.need_int("msgs", 1, 100000000));
  std::string transport = args.get_choice("transport", "unix", {"unix", "tcp"});
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  int sq_cpu = static_cast<int>(args.get_int("sq-cpu", -1, 0, CPU_SETSIZE - 1));
  double timeout_s = args.get_double("timeout", 120, 0.1, 86400);

  Mode mode = mode_s == "epoll"               ? Mode::epoll
              : mode_s == "epoll-splice"      ? Mode::epoll_splice
              : mode_s == "aio"               ? Mode::aio
              : mode_s == "aio-splice"        ? Mode::aio_splice
              : mode_s == "uring-poll"        ? Mode::uring_poll
              : mode_s == "uring-poll-splice" ? Mode::uring_poll_splice
              : mode_s == "uring"             ? Mode::uring
              : mode_s == "uring-fixed"       ? Mode::uring_fixed
              : mode_s == "uring-sqpoll"      ? Mode::uring_sqpoll
              : mode_s == "splice"            ? Mode::splice
                                              : Mode::splice_link;
  const bool uses_epoll = mode == Mode::epoll || mode == Mode::epoll_splice;
  const bool uses_aio = mode == Mode::aio || mode == Mode::aio_splice;
  const bool uses_uring = !uses_epoll && !uses_aio;
  // Readiness modes: wait for POLLIN, then move the bytes with system calls (nonblocking sockets).
  const bool readiness = uses_epoll || uses_aio || mode == Mode::uring_poll || mode == Mode::uring_poll_splice;
  const bool nonblocking = readiness;
  // Side b of a readiness mode echoes with splice(2) system calls.
  const bool sys_splice = mode == Mode::epoll_splice || mode == Mode::aio_splice || mode == Mode::uring_poll_splice;
  const bool splicing = mode == Mode::splice || mode == Mode::splice_link || sys_splice;
  const bool use_recv = uses_aio;  // recv/send instead of read/write
  const bool fixed = mode == Mode::uring_fixed;

  ::signal(SIGPIPE, SIG_IGN);
  nb::raise_nofile();
  uint64_t errors = 0;
  std::string ring_setup = "-";

  auto fail_json = [&](const std::string& why) {
    std::fprintf(stderr, "bench_pingpong: %s\n", why.c_str());
    nb::Json j;
    j.add("bench", "pingpong").add("mode", mode_s).add("transport", transport).add("conns", nconns)
        .add("msgs", kmsgs).add("seconds", 0.0).add("ns_per_roundtrip", 0.0).add("syscalls_total", 0)
        .add("syscalls_per_rt", 0.0).add("loop_syscalls_per_rt", 0.0).add("errors", errors ? errors : 1)
        .add("ok", false).add("error", why);
    j.print();
    return 1;
  };

  // ---- set-up (not measured)
  std::vector<Pair> pairs(nconns);
  int lfd = -1;
  if (transport == "tcp") {
    lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 128) != 0)
      return fail_json(std::string("tcp listener: ") + std::strerror(errno));
  }
  for (size_t i = 0; i < nconns; ++i) {
    Pair& p = pairs[i];
    int sv[2];
    int r = transport == "unix" ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) : tcp_pair(lfd, sv);
    if (r != 0) return fail_json(std::string("creating socket pair: ") + std::strerror(errno));
    p.a = sv[0];
    p.b = sv[1];
    if (nonblocking) {
      nb::set_nonblock(p.a, true);
      nb::set_nonblock(p.b, true);
    }
    if (splicing) {
      int pp[2];
      if (::pipe2(pp, O_CLOEXEC) != 0) return fail_json(std::string("pipe2: ") + std::strerror(errno));
      p.pr = pp[0];
      p.pw = pp[1];
    }
  }
  if (lfd >= 0) ::close(lfd);

  nb::Ring ring;
  int ep = -1;
  aio_context_t aio_ctx = 0;
  std::vector<iocb> aio_polls;  // aio: 2i = poll of side a of pair i, 2i+1 = side b
  if (uses_uring) {
    nb::RingOptions ro;
    // Enough CQ space for every operation that can be in flight (at most 4 per pair).
    unsigned want = 64;
    while (want < 4 * nconns && want < 32768) want *= 2;
    ro.entries = want;
    ro.cq_entries = 2 * want;
    ro.sqpoll = mode == Mode::uring_sqpoll;
    ro.sq_cpu = sq_cpu;
    if (int r = ring.init(ro); r < 0) return fail_json(std::string("io_uring setup: ") + std::strerror(-r));
    ring_setup = ring.setup();
    if (fixed) {
      std::vector<int> fds;
      for (auto& p : pairs) {
        fds.push_back(p.a);
        fds.push_back(p.b);
      }
      if (int r = ring.register_files(fds.data(), static_cast<unsigned>(fds.size())); r < 0)
        return fail_json(std::string("io_uring_register_files: ") + std::strerror(-r));
      ring_setup += "+fixed_files";
    }
  } else if (uses_aio) {
    // Room for every poll that can be in flight (two per pair).
    if (::syscall(SYS_io_setup, static_cast<unsigned>(2 * nconns), &aio_ctx) != 0)
      return fail_json(std::string("io_setup: ") + std::strerror(errno) +
                       (errno == EAGAIN ? " (fs.aio-max-nr too small for --conns)" : ""));
    aio_polls.resize(2 * nconns);
    for (size_t i = 0; i < 2 * nconns; ++i) {
      iocb& cb = aio_polls[i];
      cb = iocb{};
      cb.aio_data = i;
      cb.aio_lio_opcode = IOCB_CMD_POLL;
      cb.aio_fildes = static_cast<uint32_t>(i & 1 ? pairs[i >> 1].b : pairs[i >> 1].a);
      cb.aio_buf = POLLIN;  // the event mask; offset, nbytes and rw_flags must be 0
    }
  } else {
    ep = epoll_create1(EPOLL_CLOEXEC);
    for (size_t i = 0; i < nconns; ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i << 1;
      epoll_ctl(ep, EPOLL_CTL_ADD, pairs[i].a, &ev);
      ev.data.u64 = (i << 1) | 1;
      epoll_ctl(ep, EPOLL_CTL_ADD, pairs[i].b, &ev);
    }
  }
  if (!nb::pin_cpu(cpu)) return fail_json("cannot pin to --cpu");

  // ---- helpers
  size_t finished = 0;
  auto finish = [&](Pair& p, bool error) {
    if (p.done) return;
    p.done = true;
    ++finished;
    if (error) ++errors;
  };
  auto report = [&](size_t i, const char* what, long v) {
    if (errors < 10) std::fprintf(stderr, "bench_pingpong: pair %zu round %u: %s (%ld)\n", i, pairs[i].k, what, v);
  };
  auto fd_a = [&](size_t i) { return fixed ? static_cast<int>(2 * i) : pairs[i].a; };
  auto fd_b = [&](size_t i) { return fixed ? static_cast<int>(2 * i + 1) : pairs[i].b; };
  auto sqe_for = [&](size_t i, Op op) {
    io_uring_sqe* s = ring.sqe();
    io_uring_sqe_set_data64(s, (static_cast<uint64_t>(i) << 4) | op);
    return s;
  };
  auto set_fixed = [&](io_uring_sqe* s) {
    if (fixed) s->flags |= IOSQE_FIXED_FILE;
  };
  auto prep_a_send = [&](size_t i) {
    Pair& p = pairs[i];
    io_uring_sqe* s = sqe_for(i, kASend);
    io_uring_prep_send(s, fd_a(i), p.aout + p.asent, 4 - p.asent, MSG_NOSIGNAL);
    set_fixed(s);
  };
  auto prep_a_recv = [&](size_t i) {
    Pair& p = pairs[i];
    io_uring_sqe* s = sqe_for(i, kARecv);
    io_uring_prep_recv(s, fd_a(i), p.ain + p.agot, 4 - p.agot, 0);
    set_fixed(s);
  };
  auto prep_b_send = [&](size_t i) {
    Pair& p = pairs[i];
    io_uring_sqe* s = sqe_for(i, kBSend);
    io_uring_prep_send(s, fd_b(i), p.bout + p.bsent, 4 - p.bsent, MSG_NOSIGNAL);
    set_fixed(s);
  };
  auto prep_b_recv = [&](size_t i) {
    Pair& p = pairs[i];
    io_uring_sqe* s = sqe_for(i, kBRecv);
    io_uring_prep_recv(s, fd_b(i), p.bin + p.bgot, 4 - p.bgot, 0);
    set_fixed(s);
  };
  // Splice: socket b -> pipe (blocking, runs in io-wq), pipe -> socket b (nonblocking on the pipe
  // so a link whose first half failed cannot wait on an empty pipe forever).
  auto prep_splice_in = [&](size_t i, bool link) {
    Pair& p = pairs[i];
    io_uring_sqe* s = sqe_for(i, kBSpliceIn);
    io_uring_prep_splice(s, p.b, -1, p.pw, -1, 4, 0);
    if (link) s->flags |= IOSQE_IO_HARDLINK;
    ++p.b_ops;
  };
  auto prep_splice_out = [&](size_t i, unsigned len) {
    Pair& p = pairs[i];
    io_uring_sqe* s = sqe_for(i, kBSpliceOut);
    io_uring_prep_splice(s, p.pr, -1, p.b, -1, len, SPLICE_F_NONBLOCK);
    ++p.b_ops;
  };
  auto arm_b = [&](size_t i) {
    if (mode == Mode::splice) {
      prep_splice_in(i, false);
    } else if (mode == Mode::splice_link) {
      prep_splice_in(i, true);
      prep_splice_out(i, 4);
    } else {
      prep_b_recv(i);
    }
  };
  auto prep_poll = [&](size_t i, bool side_b) {
    io_uring_sqe* s = sqe_for(i, side_b ? kPollB : kPollA);
    io_uring_prep_poll_add(s, side_b ? pairs[i].b : pairs[i].a, POLLIN);
  };
  auto load_a = [&](size_t i) {
    uint32_t m = message(i, pairs[i].k);
    std::memcpy(pairs[i].aout, &m, 4);
    pairs[i].asent = 0;
  };
  auto matches = [&](size_t i, const unsigned char* got) {
    uint32_t m = message(i, pairs[i].k);
    return std::memcmp(got, &m, 4) == 0;
  };
  // Blocking-style write of a whole 4-byte message with plain syscalls (the readiness modes:
  // write, or send in the aio modes).
  auto write_msg = [&](int fd, const unsigned char* buf) -> bool {
    unsigned off = 0;
    while (off < 4) {
      ssize_t w = use_recv ? nb::sys::send(fd, buf + off, 4 - off, MSG_NOSIGNAL) : nb::sys::write(fd, buf + off, 4 - off);
      if (w > 0)
        off += static_cast<unsigned>(w);
      else if (!(w < 0 && errno == EINTR))
        return false;  // EAGAIN cannot happen with 4 bytes in flight: an error here
    }
    return true;
  };
  // Side b of the *-splice readiness modes, socket b readable: splice(2) socket -> pipe, then
  // pipe -> socket until the pipe is empty (b never sees the bytes; side a checks them).
  // Returns false when the pair is finished.
  auto splice_echo = [&](size_t i) -> bool {
    Pair& p = pairs[i];
    ssize_t r = counted_splice(p.b, p.pw, 4, SPLICE_F_NONBLOCK);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (r <= 0) {
      report(i, r == 0 ? "unexpected EOF" : "splice socket->pipe failed", r < 0 ? errno : 0);
      finish(p, true);
      return false;
    }
    p.pipe_bytes += static_cast<unsigned>(r);
    while (p.pipe_bytes) {
      ssize_t w = counted_splice(p.pr, p.b, p.pipe_bytes, SPLICE_F_NONBLOCK);
      if (w > 0) {
        p.pipe_bytes -= static_cast<unsigned>(w);
      } else if (!(w < 0 && errno == EINTR)) {
        // EAGAIN cannot happen with 4 bytes in flight: an error here
        report(i, "splice pipe->socket failed", w < 0 ? errno : 0);
        finish(p, true);
        return false;
      }
    }
    return true;
  };
  // Readiness path shared by epoll, aio and uring-poll (and their -splice forms): fd of side a
  // or b of pair i is readable. Returns false when the pair is finished (no re-arm).
  auto on_readable = [&](size_t i, bool side_b) -> bool {
    Pair& p = pairs[i];
    if (p.done) return false;
    if (side_b && sys_splice) return splice_echo(i);
    unsigned char* buf = side_b ? p.bin : p.ain;
    unsigned& got = side_b ? p.bgot : p.agot;
    int fd = side_b ? p.b : p.a;
    ssize_t r = use_recv ? nb::sys::recv(fd, buf + got, 4 - got, 0) : nb::sys::read(fd, buf + got, 4 - got);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (r <= 0) {
      report(i, r == 0 ? "unexpected EOF" : "read failed", r < 0 ? errno : 0);
      finish(p, true);
      return false;
    }
    got += static_cast<unsigned>(r);
    if (got < 4) return true;
    got = 0;
    if (!matches(i, buf)) {
      report(i, side_b ? "b received wrong bytes" : "a received wrong echo", 0);
      finish(p, true);
      return false;
    }
    if (side_b) {
      std::memcpy(p.bout, buf, 4);
      if (!write_msg(p.b, p.bout)) {
        report(i, "write b failed", errno);
        finish(p, true);
        return false;
      }
      return true;
    }
    if (++p.k == kmsgs) {
      finish(p, false);
      return false;
    }
    load_a(i);
    if (!write_msg(p.a, p.aout)) {
      report(i, "write a failed", errno);
      finish(p, true);
      return false;
    }
    return true;
  };

  // Completion dispatch for the io_uring modes.
  auto on_cqe = [&](io_uring_cqe* cqe) {
    size_t i = static_cast<size_t>(cqe->user_data >> 4);
    Op op = static_cast<Op>(cqe->user_data & 15);
    int res = cqe->res;
    Pair& p = pairs[i];
    if (p.done) return;
    switch (op) {
      case kPollA:
      case kPollB:
        if (res < 0) {
          report(i, "poll failed", res);
          finish(p, true);
        } else if (on_readable(i, op == kPollB)) {
          prep_poll(i, op == kPollB);
        }
        break;
      case kASend:
        if (res <= 0) {
          report(i, "send a failed", res);
          finish(p, true);
        } else if ((p.asent += static_cast<unsigned>(res)) < 4) {
          prep_a_send(i);
        }
        break;
      case kBSend:
        if (res <= 0) {
          report(i, "send b failed", res);
          finish(p, true);
        } else if ((p.bsent += static_cast<unsigned>(res)) < 4) {
          prep_b_send(i);
        }
        break;
      case kBRecv:
        if (res <= 0) {
          report(i, "recv b failed", res);
          finish(p, true);
          break;
        }
        if ((p.bgot += static_cast<unsigned>(res)) < 4) {
          prep_b_recv(i);
          break;
        }
        p.bgot = 0;
        if (!matches(i, p.bin)) {
          report(i, "b received wrong bytes", 0);
          finish(p, true);
          break;
        }
        std::memcpy(p.bout, p.bin, 4);
        p.bsent = 0;
        prep_b_send(i);
        prep_b_recv(i);
        break;
      case kARecv:
        if (res <= 0) {
          report(i, "recv a failed", res);
          finish(p, true);
          break;
        }
        if ((p.agot += static_cast<unsigned>(res)) < 4) {
          prep_a_recv(i);
          break;
        }
        p.agot = 0;
        if (!matches(i, p.ain)) {
          report(i, "a received wrong echo", 0);
          finish(p, true);
          break;
        }
        if (++p.k == kmsgs) {
          finish(p, false);
          break;
        }
        load_a(i);
        prep_a_send(i);
        prep_a_recv(i);
        break;
      case kBSpliceIn:
      case kBSpliceOut:
        --p.b_ops;
        if (res > 0) {
          if (op == kBSpliceIn)
            p.pipe_bytes += static_cast<unsigned>(res);
          else
            p.pipe_bytes -= static_cast<unsigned>(res);
        } else if (!(op == kBSpliceOut && res == -EAGAIN && mode == Mode::splice_link)) {
          // splice-link: the second half finding an empty pipe is only legal when the first
          // half failed, which is reported by its own CQE.
          report(i, op == kBSpliceIn ? "splice socket->pipe failed" : "splice pipe->socket failed", res);
          finish(p, true);
          break;
        }
        if (p.b_ops) break;  // the other half of a link is still in flight
        if (p.pipe_bytes)
          prep_splice_out(i, p.pipe_bytes);
        else
          arm_b(i);
        break;
    }
  };

  // ---- measured region
  // The bound, as in the ringo programs: no timeout on any wait of the loop; at the deadline
  // the watchdog shuts every socket down (each pending wait then completes) and the loop,
  // seeing fired(), stops; if it has not 3 s later, the run fails hard.
  nb::Watchdog wd;
  wd.start(
      timeout_s,
      [&] {
        for (auto& p : pairs) {
          ::shutdown(p.a, SHUT_RDWR);
          ::shutdown(p.b, SHUT_RDWR);
        }
      },
      [&] {
        fail_json("timed out and did not stop");
        std::_Exit(1);
      });
  nb::SysCounters sys0 = nb::g_sys;
  uint64_t cpu0 = nb::process_cpu_ns();
  uint64_t t0 = nb::now_ns();
  bool timed_out = false;

  if (uses_epoll) {
    for (size_t i = 0; i < nconns; ++i) {
      load_a(i);
      if (!write_msg(pairs[i].a, pairs[i].aout)) {
        report(i, "write a failed", errno);
        finish(pairs[i], true);
      }
    }
    std::vector<epoll_event> evs(std::min<size_t>(2 * nconns, 1024));
    while (finished < nconns) {
      int n = nb::sys::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), -1);
      if (n < 0 && errno != EINTR) {
        std::perror("epoll_wait");
        ++errors;
        break;
      }
      for (int e = 0; e < n; ++e) {
        size_t i = static_cast<size_t>(evs[static_cast<size_t>(e)].data.u64 >> 1);
        on_readable(i, evs[static_cast<size_t>(e)].data.u64 & 1);
      }
      if (wd.fired()) {
        timed_out = true;
        break;
      }
    }
  } else if (uses_aio) {
    // One-shot IOCB_CMD_POLLs: a poll that fired is re-armed by putting its iocb back on the
    // list submitted (one io_submit) before the next io_getevents.
    std::vector<iocb*> to_submit;
    to_submit.reserve(2 * nconns);
    for (size_t i = 0; i < nconns; ++i) {
      load_a(i);
      if (!write_msg(pairs[i].a, pairs[i].aout)) {
        report(i, "write a failed", errno);
        finish(pairs[i], true);
        continue;
      }
      to_submit.push_back(&aio_polls[2 * i + 1]);
      to_submit.push_back(&aio_polls[2 * i]);
    }
    std::vector<io_event> evs(std::min<size_t>(2 * nconns, 1024));
    while (finished < nconns) {
      size_t off = 0;
      while (off < to_submit.size()) {
        long r = counted_io_submit(aio_ctx, static_cast<long>(to_submit.size() - off), to_submit.data() + off);
        if (r > 0)
          off += static_cast<size_t>(r);
        else if (!(r < 0 && errno == EINTR))
          break;
      }
      if (off < to_submit.size()) {
        std::perror("io_submit");
        ++errors;
        break;
      }
      to_submit.clear();
      long n = counted_io_getevents(aio_ctx, 1, static_cast<long>(evs.size()), evs.data());
      if (n < 0 && errno != EINTR) {
        std::perror("io_getevents");
        ++errors;
        break;
      }
      for (long e = 0; e < n; ++e) {
        const io_event& ev = evs[static_cast<size_t>(e)];
        size_t slot = static_cast<size_t>(ev.data);
        size_t i = slot >> 1;
        if (pairs[i].done) continue;
        if (ev.res < 0) {
          report(i, "poll failed", static_cast<long>(ev.res));
          finish(pairs[i], true);
        } else if (on_readable(i, slot & 1)) {
          to_submit.push_back(&aio_polls[slot]);
        }
      }
      if (wd.fired()) {
        timed_out = true;
        break;
      }
    }
  } else {
    for (size_t i = 0; i < nconns; ++i) {
      load_a(i);
      if (readiness) {
        if (!write_msg(pairs[i].a, pairs[i].aout)) {
          report(i, "write a failed", errno);
          finish(pairs[i], true);
          continue;
        }
        prep_poll(i, true);
        prep_poll(i, false);
      } else {
        arm_b(i);
        prep_a_recv(i);
        prep_a_send(i);
      }
    }
    while (finished < nconns) {
      int r = ring.submit_and_wait(1);
      if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
        std::fprintf(stderr, "io_uring_enter: %s\n", std::strerror(-r));
        ++errors;
        break;
      }
      ring.reap(on_cqe);
      if (wd.fired()) {
        timed_out = true;
        break;
      }
    }
  }
  uint64_t t1 = nb::now_ns();
  uint64_t cpu1 = nb::process_cpu_ns();
  nb::SysCounters sc = nb::g_sys - sys0;
  wd.stop();
  if (timed_out) {
    std::fprintf(stderr, "bench_pingpong: timed out after %.1f s with %zu of %zu pairs finished\n", timeout_s,
                 finished, nconns);
    errors += nconns - finished;
  }

  // ---- tear-down: the ring or AIO context first (cancels blocked splices / pending recvs and
  // polls), then the fds.
  ring.exit();
  if (aio_ctx) ::syscall(SYS_io_destroy, aio_ctx);
  for (auto& p : pairs) {
    ::close(p.a);
    ::close(p.b);
    if (p.pr >= 0) ::close(p.pr);
    if (p.pw >= 0) ::close(p.pw);
  }

  uint64_t rts = 0;
  for (auto& p : pairs) rts += p.k;
  double secs = static_cast<double>(t1 - t0) / 1e9;
  double per = rts ? 1.0 / static_cast<double>(rts) : 0.0;
  bool ok = errors == 0 && rts == static_cast<uint64_t>(nconns) * kmsgs;
  nb::Json j;
  j.add("bench", "pingpong")
      .add("mode", mode_s)
      .add("transport", transport)
      .add("conns", nconns)
      .add("msgs", kmsgs)
      .add("roundtrips", rts)
      .add("seconds", secs, 6)
      .add("ns_per_roundtrip", static_cast<double>(t1 - t0) * per, 1)
      .add("cpu_ns_per_roundtrip", static_cast<double>(cpu1 - cpu0) * per, 1)
      .add("syscalls_total", sc.total())
      .add("syscalls_per_rt", static_cast<double>(sc.total()) * per, 4)
      .add("loop_syscalls_per_rt", static_cast<double>(sc.loop) * per, 4)
      .add("io_syscalls_per_rt", static_cast<double>(sc.io) * per, 4)
      .add("ring_setup", ring_setup)
      .add("errors", errors)
      .add("ok", ok);
  j.print();
  return ok ? 0 : 1;
}
