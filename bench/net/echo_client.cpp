// bench_echo_client: strict closed-loop load generator for the echo servers.
//
// One thread, one epoll instance, N TCP connections to 127.0.0.1:P. Each connection has exactly
// one message in flight: it sends M bytes, reads until all M bytes came back (reassembling
// partial reads), compares them with what it sent, records the round-trip time, and only then
// sends the next message. Every message differs (its sequence number is stamped into it).
// Prints one JSON line on stdout.
//
// --mode uring (what the echo figure uses) does the same with raw liburing instead of epoll, to cost
// the client as little CPU as possible: the sockets are registered files, each message is one SEND
// and one RECV (both MSG_WAITALL, submitted together), every loop turn submits everything it
// prepared and waits in one io_uring_enter, and the clock is read once per loop turn.
#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "common.hpp"
#include "uring_ring.hpp"

namespace {

const char* kUsage =
    "usage: bench_echo_client --port P --conns N --msg BYTES --seconds S [--cpu C]\n"
    "                         [--warmup S] [--connect-timeout S] [--mode epoll|uring]\n"
    "  Closed-loop echo client on 127.0.0.1:P; prints one JSON line (bench \"echo\").\n"
    "  --port P             server port (1..65535)\n"
    "  --conns N            connections, one message in flight on each (1..10000)\n"
    "  --msg BYTES          message size (16..1048576; the benchmark uses 1024)\n"
    "  --seconds S          measured duration in seconds (0.05..3600, may be fractional)\n"
    "  --cpu C              pin the client thread to CPU C (default: not pinned)\n"
    "  --warmup S           unmeasured load before the measured window (default 0)\n"
    "  --connect-timeout S  keep retrying refused connects for up to S seconds (default 5)\n"
    "  --mode epoll|uring   epoll + read/write (default) or io_uring (registered files, batched\n"
    "                       submissions, one enter per loop turn: the cheaper client)\n";

struct Conn {
  int fd = -1;
  uint64_t seq = 0;
  std::unique_ptr<unsigned char[]> out, in;
  size_t sent = 0, got = 0;
  uint64_t t0 = 0;
  bool active = false;     // a message is in flight
  bool want_out = false;   // EPOLLOUT registered (partial send)
};

int connect_loopback(int port, double timeout_s) {
  uint64_t deadline = nb::now_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      std::fprintf(stderr, "socket: %s\n", std::strerror(errno));
      return -1;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    int e = errno;
    ::close(fd);
    if ((e != ECONNREFUSED && e != EINTR && e != EAGAIN) || nb::now_ns() >= deadline) {
      std::fprintf(stderr, "connect 127.0.0.1:%d: %s\n", port, std::strerror(e));
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

uint64_t percentile(std::vector<uint64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage,
                {{"port", true},
                 {"conns", true},
                 {"msg", true},
                 {"seconds", true},
                 {"cpu", true},
                 {"warmup", true},
                 {"connect-timeout", true},
                 {"mode", true}});
  int port = static_cast<int>(args.need_int("port", 1, 65535));
  int nconns = static_cast<int>(args.need_int("conns", 1, 10000));
  size_t msg = static_cast<size_t>(args.need_int("msg", 16, 1 << 20));
  double seconds = args.need_double("seconds", 0.05, 3600);
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  double warmup = args.get_double("warmup", 0, 0, 3600);
  double conn_timeout = args.get_double("connect-timeout", 5, 0, 600);
  const bool use_uring = args.get_choice("mode", "epoll", {"epoll", "uring"}) == "uring";

  ::signal(SIGPIPE, SIG_IGN);
  nb::raise_nofile();
  if (!nb::pin_cpu(cpu)) return 1;

  uint64_t errors = 0;
  auto fail_json = [&](const char* why) {
    std::fprintf(stderr, "bench_echo_client: %s\n", why);
    nb::Json j;
    j.add("bench", "echo").add("client", use_uring ? "uring" : "epoll").add("conns", nconns).add("msg", msg).add("msgs", 0).add("bytes", 0)
        .add("seconds", 0.0).add("msgs_per_sec", 0.0).add("p50_ns", 0).add("p99_ns", 0)
        .add("errors", errors == 0 ? 1 : errors).add("ok", false).add("error", why);
    j.print();
    return 1;
  };

  int ep = use_uring ? -1 : epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<size_t>(nconns));
  for (int i = 0; i < nconns; ++i) {
    Conn& c = conns[static_cast<size_t>(i)];
    c.fd = connect_loopback(port, conn_timeout);
    if (c.fd < 0) return fail_json("connect failed");
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c.out = std::make_unique<unsigned char[]>(msg);
    c.in = std::make_unique<unsigned char[]>(msg);
    nb::fill_pattern(c.out.get(), msg, static_cast<uint64_t>(i) + 1);
    if (use_uring) continue;  // blocking sockets: io_uring does the waiting
    nb::set_nonblock(c.fd, true);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &c;
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  }

  std::vector<uint64_t> lat;
  lat.reserve(1 << 20);

  // Sends what is left of the current message; registers EPOLLOUT while incomplete.
  auto push = [&](Conn& c) -> bool {
    while (c.sent < msg) {
      ssize_t w = nb::sys::write(c.fd, c.out.get() + c.sent, msg - c.sent);
      if (w > 0) {
        c.sent += static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else if (w < 0 && errno == EAGAIN) {
        break;
      } else {
        std::fprintf(stderr, "write: %s\n", w < 0 ? std::strerror(errno) : "returned 0");
        return false;
      }
    }
    bool want = c.sent < msg;
    if (want != c.want_out) {
      epoll_event ev{};
      ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
      ev.data.ptr = &c;
      nb::sys::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_out = want;
    }
    return true;
  };
  size_t in_flight = 0;
  auto start_msg = [&](Conn& c, uint64_t now) -> bool {
    ++c.seq;
    std::memcpy(c.out.get(), &c.seq, sizeof c.seq);
    std::memcpy(c.out.get() + msg - sizeof c.seq, &c.seq, sizeof c.seq);
    c.sent = c.got = 0;
    c.t0 = now;
    c.active = true;
    ++in_flight;
    return push(c);
  };
  auto drop = [&](Conn& c) {
    if (c.active) --in_flight;
    c.active = false;
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
  };

  const uint64_t t_begin = nb::now_ns();
  const uint64_t t_meas = t_begin + static_cast<uint64_t>(warmup * 1e9);
  const uint64_t t_end = t_meas + static_cast<uint64_t>(seconds * 1e9);
  const uint64_t t_drain = t_end + 2000000000ull;  // in-flight echoes must arrive within 2 s
  uint64_t msgs = 0;
  bool measuring = warmup <= 0;
  nb::SysCounters sys0 = nb::g_sys;
  uint64_t cpu0 = nb::process_cpu_ns();
  nb::SysCounters sys1{};
  uint64_t cpu1 = 0;
  bool ended = false;

  if (use_uring) {
    // ---- io_uring client. user_data = connection index * 2 + (0 send, 1 recv).
    nb::Ring ring;
    nb::RingOptions ro;
    ro.entries = 64;
    while (ro.entries < 2u * static_cast<unsigned>(nconns) && ro.entries < 32768) ro.entries *= 2;
    if (int r = ring.init(ro); r < 0) return fail_json("io_uring_queue_init failed");
    std::vector<int> fds;
    for (Conn& c : conns) fds.push_back(c.fd);
    if (ring.register_files(fds.data(), static_cast<unsigned>(fds.size())) < 0)
      return fail_json("io_uring_register_files failed");
    sys0 = nb::g_sys;  // set-up is not counted
    auto prep_send = [&](Conn& c) {
      io_uring_sqe* q = ring.sqe();
      io_uring_prep_send(q, static_cast<int>(&c - conns.data()), c.out.get() + c.sent, msg - c.sent,
                         MSG_NOSIGNAL | MSG_WAITALL);
      q->flags |= IOSQE_FIXED_FILE;
      io_uring_sqe_set_data64(q, static_cast<uint64_t>(&c - conns.data()) * 2);
    };
    auto prep_recv = [&](Conn& c) {
      io_uring_sqe* q = ring.sqe();
      io_uring_prep_recv(q, static_cast<int>(&c - conns.data()), c.in.get() + c.got, msg - c.got, MSG_WAITALL);
      q->flags |= IOSQE_FIXED_FILE;
      io_uring_sqe_set_data64(q, static_cast<uint64_t>(&c - conns.data()) * 2 + 1);
    };
    // Both ops of a failed connection may still be pending: count it once, never restart it.
    std::vector<unsigned char> dead(conns.size(), 0);
    auto kill = [&](Conn& c, const char* what, int res) {
      size_t k = static_cast<size_t>(&c - conns.data());
      if (dead[k]) return;
      std::fprintf(stderr, "bench_echo_client: %s: %s\n", what, res < 0 ? std::strerror(-res) : "connection closed");
      dead[k] = 1;
      ++errors;
      if (c.active) --in_flight;
      c.active = false;
    };
    auto start = [&](Conn& c, uint64_t now) {
      ++c.seq;
      std::memcpy(c.out.get(), &c.seq, sizeof c.seq);
      std::memcpy(c.out.get() + msg - sizeof c.seq, &c.seq, sizeof c.seq);
      c.sent = c.got = 0;
      c.t0 = now;
      c.active = true;
      ++in_flight;
      prep_recv(c);
      prep_send(c);
    };
    for (Conn& c : conns) start(c, t_begin);
    for (;;) {
      uint64_t now = nb::now_ns();  // one clock read per loop turn
      if (!measuring && now >= t_meas) {
        measuring = true;
        sys0 = nb::g_sys;
        cpu0 = nb::process_cpu_ns();
      }
      if (!ended && now >= t_end) {
        ended = true;
        sys1 = nb::g_sys;
        cpu1 = nb::process_cpu_ns();
      }
      if (ended && in_flight == 0) break;
      if (now >= t_drain) {
        std::fprintf(stderr, "bench_echo_client: %zu echoes did not come back within 2 s\n", in_flight);
        errors += in_flight;
        break;
      }
      ring.reap([&](io_uring_cqe* cqe) {
        uint64_t ud = cqe->user_data;
        Conn& c = conns[ud / 2];
        int res = cqe->res;
        if (dead[ud / 2] || !c.active) return;
        if ((ud & 1) == 0) {  // send
          if (res <= 0) return kill(c, "send", res);
          c.sent += static_cast<size_t>(res);
          if (c.sent < msg) return prep_send(c);  // short send: the rest
        } else {              // recv
          if (res <= 0) return kill(c, "recv", res);
          c.got += static_cast<size_t>(res);
          if (c.got < msg) return prep_recv(c);   // short recv: the rest
        }
        if (c.sent < msg || c.got < msg) return;  // the other half is still pending
        if (std::memcmp(c.in.get(), c.out.get(), msg) != 0) {
          std::fprintf(stderr, "bench_echo_client: echoed bytes differ (conn %td, msg %" PRIu64 ")\n",
                       &c - conns.data(), c.seq);
          return kill(c, "check", 0);
        }
        --in_flight;
        c.active = false;
        if (now >= t_meas && now <= t_end) {
          ++msgs;
          lat.push_back(now - c.t0);
        }
        if (now < t_end) start(c, now);
      });
      uint64_t next = !measuring ? t_meas : !ended ? t_end : t_drain;
      int timeout_ms = static_cast<int>(std::min<uint64_t>((next - now) / 1000000 + 1, 100));
      int r = ring.submit_and_wait(1, timeout_ms);
      if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
        std::fprintf(stderr, "io_uring_enter: %s\n", std::strerror(-r));
        ++errors;
        break;
      }
    }
  } else {
  for (Conn& c : conns)
    if (!start_msg(c, t_begin)) {
      ++errors;
      drop(c);
    }

  const int kMaxEv = 256;
  epoll_event evs[kMaxEv];
  for (;;) {
    uint64_t now = nb::now_ns();
    if (!measuring && now >= t_meas) {
      measuring = true;
      sys0 = nb::g_sys;
      cpu0 = nb::process_cpu_ns();
    }
    if (!ended && now >= t_end) {
      ended = true;
      sys1 = nb::g_sys;
      cpu1 = nb::process_cpu_ns();
    }
    if (ended && in_flight == 0) break;
    if (now >= t_drain) {
      std::fprintf(stderr, "bench_echo_client: %zu echoes did not come back within 2 s\n", in_flight);
      errors += in_flight;
      break;
    }
    uint64_t next = !measuring ? t_meas : !ended ? t_end : t_drain;
    int timeout_ms = static_cast<int>(std::min<uint64_t>((next - now) / 1000000 + 1, 100));
    int n = nb::sys::epoll_wait(ep, evs, kMaxEv, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::perror("epoll_wait");
      ++errors;
      break;
    }
    for (int i = 0; i < n; ++i) {
      Conn& c = *static_cast<Conn*>(evs[i].data.ptr);
      if (!c.active) continue;
      if ((evs[i].events & EPOLLOUT) && c.sent < msg) {
        if (!push(c)) {
          ++errors;
          drop(c);
          continue;
        }
      }
      if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      ssize_t r = nb::sys::read(c.fd, c.in.get() + c.got, msg - c.got);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r <= 0) {
        std::fprintf(stderr, "read: %s\n", r < 0 ? std::strerror(errno) : "server closed the connection");
        ++errors;
        drop(c);
        continue;
      }
      c.got += static_cast<size_t>(r);
      if (c.got < msg) continue;
      if (c.sent < msg) {  // more bytes came back than were sent
        std::fprintf(stderr, "bench_echo_client: echo ahead of the request\n");
        ++errors;
        drop(c);
        continue;
      }
      uint64_t t = nb::now_ns();
      if (std::memcmp(c.in.get(), c.out.get(), msg) != 0) {
        std::fprintf(stderr, "bench_echo_client: echoed bytes differ (conn %td, msg %" PRIu64 ")\n",
                     &c - conns.data(), c.seq);
        ++errors;
        drop(c);
        continue;
      }
      --in_flight;
      c.active = false;
      if (t >= t_meas && t <= t_end) {
        ++msgs;
        lat.push_back(t - c.t0);
      }
      if (t < t_end && !start_msg(c, t)) {
        ++errors;
        drop(c);
      }
    }
  }
  }
  if (!ended) {  // stopped early by an error
    sys1 = nb::g_sys;
    cpu1 = nb::process_cpu_ns();
  }
  for (Conn& c : conns) ::close(c.fd);

  double secs = seconds;
  uint64_t sum = 0, mx = 0;
  for (uint64_t v : lat) {
    sum += v;
    mx = std::max(mx, v);
  }
  double mean = lat.empty() ? 0.0 : static_cast<double>(sum) / static_cast<double>(lat.size());
  uint64_t p50 = percentile(lat, 0.50), p99 = percentile(lat, 0.99), p999 = percentile(lat, 0.999);
  nb::SysCounters sc = sys1 - sys0;
  double per = msgs ? 1.0 / static_cast<double>(msgs) : 0.0;
  bool ok = errors == 0 && msgs > 0;
  nb::Json j;
  j.add("bench", "echo")
      .add("client", use_uring ? "uring" : "epoll")
      .add("conns", nconns)
      .add("msg", msg)
      .add("msgs", msgs)
      .add("bytes", msgs * msg)
      .add("seconds", secs, 3)
      .add("msgs_per_sec", static_cast<double>(msgs) / secs, 1)
      .add("mean_ns", mean, 0)
      .add("p50_ns", p50)
      .add("p99_ns", p99)
      .add("p999_ns", p999)
      .add("max_ns", mx)
      .add("client_cpu_ns_per_msg", static_cast<double>(cpu1 - cpu0) * per, 1)
      .add("client_syscalls_per_msg", static_cast<double>(sc.total()) * per, 3)
      .add("errors", errors)
      .add("ok", ok);
  j.print();
  return ok ? 0 : 1;
}
