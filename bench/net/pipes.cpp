// bench_pipes: P pipes, R rounds; in every round each pipe gets one write of S bytes and one
// read of S bytes, in one thread. One run per invocation (the driver repeats it and drops the
// first run). Every byte read is compared with what was written. Prints one JSON line.
#include <memory>
#include <vector>

#include "uring_ring.hpp"

namespace {

const char* kUsage =
    "usage: bench_pipes --mode uring|epoll|blocking --pipes P --rounds R [--prefill 0|1]\n"
    "                   [--size BYTES] [--cpu C] [--timeout S]\n"
    "  One run of: R rounds, each writing S bytes to and reading S bytes from each of P pipes.\n"
    "  Prints one JSON line (bench \"pipes\").\n"
    "  --mode uring     per round, all reads and writes go through io_uring (READ/WRITE):\n"
    "                   prefill 0: the P reads are submitted first (pipes empty), then the P\n"
    "                   writes, then wait for all 2P completions;\n"
    "                   prefill 1: P writes then P reads submitted in one batch (data is in the\n"
    "                   pipe when each read is issued), then wait\n"
    "  --mode epoll     nonblocking pipes, read ends in an epoll set: write all P, epoll_wait and\n"
    "                   read each pipe as it is reported ready; prefill 0 first tries each read\n"
    "                   on the empty pipe (EAGAIN), prefill 1 does not\n"
    "  --mode blocking  blocking pipes: write then read, pipe by pipe (prefill has no effect)\n"
    "  --pipes P        number of pipes (1..4096; the benchmark uses 128)\n"
    "  --rounds R       rounds (1..10000000; the benchmark uses 256)\n"
    "  --prefill 0|1    0 (default): reads are issued on empty pipes; 1: data already there\n"
    "  --size BYTES     bytes per write/read (1..4096, default 64)\n"
    "  --cpu C          pin the thread to CPU C (default: not pinned)\n"
    "  --timeout S      give up (ok=false) after S seconds (default 60)\n";

enum Op : uint64_t { kRead = 0, kWrite = 1 };

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage,
                {{"mode", true},
                 {"pipes", true},
                 {"rounds", true},
                 {"prefill", true},
                 {"size", true},
                 {"cpu", true},
                 {"timeout", true}});
  std::string mode = args.need_choice("mode", {"uring", "epoll", "blocking"});
  size_t npipes = static_cast<size_t>(args.need_int("pipes", 1, 4096));
  uint32_t rounds = static_cast<uint32_t>(args.need_int("rounds", 1, 10000000));
  bool prefill = args.get_int("prefill", 0, 0, 1) == 1;
  size_t size = static_cast<size_t>(args.get_int("size", 64, 1, 4096));
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  double timeout_s = args.get_double("timeout", 60, 0.1, 86400);

  ::signal(SIGPIPE, SIG_IGN);
  nb::raise_nofile();
  uint64_t errors = 0;
  std::string ring_setup = "-";
  auto fail_json = [&](const std::string& why) {
    std::fprintf(stderr, "bench_pipes: %s\n", why.c_str());
    nb::Json j;
    j.add("bench", "pipes").add("mode", mode).add("pipes", npipes).add("rounds", rounds)
        .add("prefill", prefill ? 1 : 0).add("size", size).add("ms", 0.0).add("errors", errors ? errors : 1)
        .add("ok", false).add("error", why);
    j.print();
    return 1;
  };

  // ---- set-up
  const bool nonblock = mode == "epoll";
  std::vector<int> rfd(npipes), wfd(npipes);
  for (size_t i = 0; i < npipes; ++i) {
    int pp[2];
    if (::pipe2(pp, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0)) != 0)
      return fail_json(std::string("pipe2: ") + std::strerror(errno));
    rfd[i] = pp[0];
    wfd[i] = pp[1];
  }
  // out: what pipe i carries (its first 8 bytes are restamped each round); in: read buffers.
  std::vector<std::unique_ptr<unsigned char[]>> out(npipes), in(npipes);
  std::vector<size_t> got(npipes);
  for (size_t i = 0; i < npipes; ++i) {
    out[i] = std::make_unique<unsigned char[]>(size);
    in[i] = std::make_unique<unsigned char[]>(size);
    nb::fill_pattern(out[i].get(), size, i + 77);
  }
  auto stamp = [&](size_t i, uint32_t r) {
    uint64_t v = (static_cast<uint64_t>(r) << 32) | i;
    std::memcpy(out[i].get(), &v, std::min(size, sizeof v));
  };
  auto check = [&](size_t i, uint32_t r) {
    if (std::memcmp(in[i].get(), out[i].get(), size) != 0) {
      if (errors < 10) std::fprintf(stderr, "bench_pipes: pipe %zu round %u: data differs\n", i, r);
      ++errors;
    }
  };

  nb::Ring ring;
  int ep = -1;
  if (mode == "uring") {
    nb::RingOptions ro;
    unsigned want = 64;
    while (want < 2 * npipes) want *= 2;
    ro.entries = want;
    ro.cq_entries = 2 * want;
    if (int r = ring.init(ro); r < 0) return fail_json(std::string("io_uring setup: ") + std::strerror(-r));
    ring_setup = ring.setup();
  } else if (mode == "epoll") {
    ep = epoll_create1(EPOLL_CLOEXEC);
    for (size_t i = 0; i < npipes; ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      epoll_ctl(ep, EPOLL_CTL_ADD, rfd[i], &ev);
    }
  }
  if (!nb::pin_cpu(cpu)) return fail_json("cannot pin to --cpu");

  // ---- measured run
  // The bound, as in the ringo program: no timeout on any wait of the loop; at the deadline
  // the watchdog writes a byte into every pipe (each pending read or wait then completes) and
  // the loop, seeing fired(), stops; if it has not 3 s later, the run fails hard.
  nb::Watchdog wd;
  wd.start(
      timeout_s,
      [&] {
        for (size_t i = 0; i < npipes; ++i) (void)!::write(wfd[i], "!", 1);
      },
      [&] {
        fail_json("timed out and did not stop");
        std::_Exit(1);
      });
  bool timed_out = false;
  nb::SysCounters sys0 = nb::g_sys;
  uint64_t cpu0 = nb::process_cpu_ns();
  uint64_t t0 = nb::now_ns();
  uint32_t r = 0;

  if (mode == "uring") {
    size_t pending = 0;
    auto prep_read = [&](size_t i) {
      io_uring_sqe* s = ring.sqe();
      io_uring_prep_read(s, rfd[i], in[i].get() + got[i], static_cast<unsigned>(size - got[i]), ~0ull);
      io_uring_sqe_set_data64(s, (static_cast<uint64_t>(i) << 1) | kRead);
      ++pending;
    };
    auto prep_write = [&](size_t i) {
      io_uring_sqe* s = ring.sqe();
      io_uring_prep_write(s, wfd[i], out[i].get(), static_cast<unsigned>(size), ~0ull);
      io_uring_sqe_set_data64(s, (static_cast<uint64_t>(i) << 1) | kWrite);
      ++pending;
    };
    for (; r < rounds && !timed_out && errors == 0; ++r) {
      for (size_t i = 0; i < npipes; ++i) {
        stamp(i, r);
        got[i] = 0;
      }
      if (prefill) {
        for (size_t i = 0; i < npipes; ++i) prep_write(i);
        for (size_t i = 0; i < npipes; ++i) prep_read(i);
      } else {
        for (size_t i = 0; i < npipes; ++i) prep_read(i);
        ring.submit_and_wait(0);  // the reads find empty pipes
        for (size_t i = 0; i < npipes; ++i) prep_write(i);
      }
      while (pending > 0) {
        int e = ring.submit_and_wait(static_cast<unsigned>(pending));
        if (e < 0 && e != -EINTR && e != -EAGAIN && e != -EBUSY) {
          std::fprintf(stderr, "io_uring_enter: %s\n", std::strerror(-e));
          ++errors;
          break;
        }
        ring.reap([&](io_uring_cqe* cqe) {
          --pending;
          size_t i = static_cast<size_t>(cqe->user_data >> 1);
          bool is_read = (cqe->user_data & 1) == kRead;
          if (cqe->res <= 0 || (!is_read && static_cast<size_t>(cqe->res) != size)) {
            if (errors < 10)
              std::fprintf(stderr, "bench_pipes: pipe %zu round %u: %s returned %d\n", i, r, is_read ? "read" : "write",
                           cqe->res);
            ++errors;
            return;
          }
          if (!is_read) return;
          got[i] += static_cast<size_t>(cqe->res);
          if (got[i] < size)
            prep_read(i);  // short read: read the rest
          else
            check(i, r);
        });
        if (wd.fired()) {
          timed_out = true;
          break;
        }
      }
    }
  } else if (mode == "epoll") {
    std::vector<epoll_event> evs(npipes);
    size_t remaining = 0;
    // Reads what pipe i has; returns false on a hard error.
    auto read_some = [&](size_t i) -> bool {
      ssize_t n = nb::sys::read(rfd[i], in[i].get() + got[i], size - got[i]);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
      if (n <= 0) {
        if (errors < 10) std::fprintf(stderr, "bench_pipes: pipe %zu round %u: read: %s\n", i, r,
                                      n < 0 ? std::strerror(errno) : "EOF");
        ++errors;
        return false;
      }
      got[i] += static_cast<size_t>(n);
      if (got[i] == size) {
        check(i, r);
        --remaining;
      }
      return true;
    };
    for (; r < rounds && !timed_out && errors == 0; ++r) {
      for (size_t i = 0; i < npipes; ++i) {
        stamp(i, r);
        got[i] = 0;
      }
      remaining = npipes;
      if (!prefill)
        for (size_t i = 0; i < npipes; ++i)
          if (!read_some(i)) break;  // expected: EAGAIN on the empty pipe
      for (size_t i = 0; i < npipes; ++i) {
        ssize_t w = nb::sys::write(wfd[i], out[i].get(), size);
        if (w != static_cast<ssize_t>(size)) {
          if (errors < 10) std::fprintf(stderr, "bench_pipes: pipe %zu round %u: write returned %zd\n", i, r, w);
          ++errors;
        }
      }
      while (remaining > 0 && errors == 0) {
        int n = nb::sys::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), -1);
        if (n < 0 && errno != EINTR) {
          std::perror("epoll_wait");
          ++errors;
          break;
        }
        for (int e = 0; e < n; ++e) {
          size_t i = static_cast<size_t>(evs[static_cast<size_t>(e)].data.u64);
          if (got[i] < size && !read_some(i)) break;
        }
        if (wd.fired()) {
          timed_out = true;
          break;
        }
      }
    }
  } else {  // blocking
    for (; r < rounds && errors == 0; ++r) {
      for (size_t i = 0; i < npipes; ++i) {
        stamp(i, r);
        ssize_t w = nb::sys::write(wfd[i], out[i].get(), size);
        if (w != static_cast<ssize_t>(size)) {
          if (errors < 10) std::fprintf(stderr, "bench_pipes: pipe %zu round %u: write returned %zd\n", i, r, w);
          ++errors;
          break;
        }
        size_t g = 0;
        while (g < size) {  // data is in the pipe: cannot block
          ssize_t n = nb::sys::read(rfd[i], in[i].get() + g, size - g);
          if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            ++errors;
            break;
          }
          g += static_cast<size_t>(n);
        }
        check(i, r);
      }
      if (r + 1 < rounds && wd.fired()) {
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
    std::fprintf(stderr, "bench_pipes: timed out after %.1f s (round %u of %u)\n", timeout_s, r, rounds);
    ++errors;
  }
  ring.exit();
  for (size_t i = 0; i < npipes; ++i) {
    ::close(rfd[i]);
    ::close(wfd[i]);
  }

  const double ops = static_cast<double>(rounds) * static_cast<double>(npipes);  // write+read pairs
  bool ok = errors == 0 && r == rounds;
  nb::Json j;
  j.add("bench", "pipes")
      .add("mode", mode)
      .add("pipes", npipes)
      .add("rounds", rounds)
      .add("prefill", prefill ? 1 : 0)
      .add("size", size)
      .add("ms", static_cast<double>(t1 - t0) / 1e6, 3)
      .add("cpu_ms", static_cast<double>(cpu1 - cpu0) / 1e6, 3)
      .add("ns_per_op", static_cast<double>(t1 - t0) / ops, 1)
      .add("syscalls_total", sc.total())
      .add("syscalls_per_op", static_cast<double>(sc.total()) / ops, 4)
      .add("loop_syscalls_per_round", static_cast<double>(sc.loop) / rounds, 3)
      .add("ring_setup", ring_setup)
      .add("errors", errors)
      .add("ok", ok);
  j.print();
  return ok ? 0 : 1;
}
