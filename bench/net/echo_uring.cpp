// echo_uring / echo_uring_fixed: single-threaded TCP echo server on 127.0.0.1 written against
// raw liburing. One accept SQE is kept armed; each connection alternates one recv and one send
// (re-sending the rest after a short send). With --fixed (the default of echo_uring_fixed) every
// accepted socket is placed in a registered file table and recv/send use IOSQE_FIXED_FILE.
// Runs until SIGTERM/SIGINT (a read on a signalfd through the ring), then prints one JSON line.
#include <sys/signalfd.h>

#include <memory>
#include <unordered_set>
#include <vector>

#include "uring_ring.hpp"

#ifndef NB_FIXED_DEFAULT
#define NB_FIXED_DEFAULT 0
#endif

namespace {

#if NB_FIXED_DEFAULT
const char* kUsage =
    "usage: echo_uring_fixed --port P [--cpu C] [--buf BYTES] [--max-conns N]\n"
    "  Single-threaded raw-liburing echo server on 127.0.0.1:P with registered files\n"
    "  (same program as 'echo_uring --fixed'); runs until SIGTERM or SIGINT, then prints one\n"
    "  JSON line (bench \"echo_server\") on stdout.\n"
    "  --port P        TCP port to listen on (1..65535)\n"
    "  --cpu C         pin the server thread to CPU C (default: not pinned)\n"
    "  --buf BYTES     per-connection buffer size (default 16384)\n"
    "  --max-conns N   size of the registered file table (default 4096)\n";
#else
const char* kUsage =
    "usage: echo_uring --port P [--cpu C] [--buf BYTES] [--fixed] [--max-conns N]\n"
    "  Single-threaded raw-liburing echo server on 127.0.0.1:P; runs until SIGTERM or SIGINT,\n"
    "  then prints one JSON line (bench \"echo_server\") on stdout.\n"
    "  --port P        TCP port to listen on (1..65535)\n"
    "  --cpu C         pin the server thread to CPU C (default: not pinned)\n"
    "  --buf BYTES     per-connection buffer size (default 16384)\n"
    "  --fixed         registered files: sockets go into a registered table, ops use\n"
    "                  IOSQE_FIXED_FILE\n"
    "  --max-conns N   size of the registered file table with --fixed (default 4096)\n";
#endif

enum Tag : uint64_t { kRecv = 0, kSend = 1, kAccept = 2, kSignal = 3 };

struct alignas(8) Conn {
  int fd;  // socket fd, or registered-table slot with --fixed
  std::unique_ptr<unsigned char[]> buf;
  size_t off = 0, len = 0;
};

uint64_t encode(Conn* c, Tag t) { return reinterpret_cast<uint64_t>(c) | t; }

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage,
                {{"port", true}, {"cpu", true}, {"buf", true}, {"fixed", false}, {"max-conns", true}});
  int port = static_cast<int>(args.need_int("port", 1, 65535));
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  size_t bufsz = static_cast<size_t>(args.get_int("buf", 16384, 1, 1 << 24));
  bool fixed = NB_FIXED_DEFAULT || args.has("fixed");
  unsigned max_conns = static_cast<unsigned>(args.get_int("max-conns", 4096, 1, 1 << 20));

  if (!nb::pin_cpu(cpu)) return 1;
  int sfd = nb::termination_signalfd();
  int lfd = nb::listen_loopback(port, false);
  if (sfd < 0 || lfd < 0) return 1;

  nb::Ring ring;
  nb::RingOptions ro;
  ro.entries = 1024;
  ro.cq_entries = 8192;
  if (int r = ring.init(ro); r < 0) {
    std::fprintf(stderr, "io_uring setup: %s\n", std::strerror(-r));
    return 1;
  }
  std::vector<unsigned> free_slots;
  if (fixed) {
    if (int r = ring.register_files_sparse(max_conns); r < 0) {
      std::fprintf(stderr, "io_uring_register_files_sparse(%u): %s\n", max_conns, std::strerror(-r));
      return 1;
    }
    for (unsigned s = max_conns; s-- > 0;) free_slots.push_back(s);
  }
  std::fprintf(stderr, "echo_uring%s: listening on 127.0.0.1:%d (ring: %s)\n", fixed ? " (fixed files)" : "",
               port, ring.setup().c_str());

  uint64_t accepted = 0, bytes = 0, reads = 0, errors = 0;
  std::unordered_set<Conn*> live;
  signalfd_siginfo siginfo;

  auto prep_recv = [&](Conn* c) {
    io_uring_sqe* s = ring.sqe();
    io_uring_prep_recv(s, c->fd, c->buf.get(), bufsz, 0);
    if (fixed) s->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(s, encode(c, kRecv));
  };
  auto prep_send = [&](Conn* c) {
    io_uring_sqe* s = ring.sqe();
    io_uring_prep_send(s, c->fd, c->buf.get() + c->off, c->len - c->off, MSG_NOSIGNAL);
    if (fixed) s->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(s, encode(c, kSend));
  };
  auto prep_accept = [&] {
    io_uring_sqe* s = ring.sqe();
    io_uring_prep_accept(s, lfd, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, kAccept);
  };
  // Only called when the connection has no operation in flight.
  auto close_conn = [&](Conn* c) {
    if (fixed) {
      ring.update_file(static_cast<unsigned>(c->fd), -1);
      free_slots.push_back(static_cast<unsigned>(c->fd));
    } else {
      nb::sys::close(c->fd);
    }
    live.erase(c);
    delete c;
  };

  prep_accept();
  {
    io_uring_sqe* s = ring.sqe();
    io_uring_prep_read(s, sfd, &siginfo, sizeof siginfo, 0);
    io_uring_sqe_set_data64(s, kSignal);
  }

  bool stop = false;
  while (!stop) {
    int r = ring.submit_and_wait(1);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
      std::fprintf(stderr, "io_uring_enter: %s\n", std::strerror(-r));
      ++errors;
      break;
    }
    ring.reap([&](io_uring_cqe* cqe) {
      uint64_t ud = cqe->user_data;
      Tag tag = static_cast<Tag>(ud & 7);
      Conn* c = reinterpret_cast<Conn*>(ud & ~uint64_t{7});
      int res = cqe->res;
      switch (tag) {
        case kSignal:
          stop = true;
          break;
        case kAccept:
          if (res >= 0) {
            nb::set_nodelay(res);
            int fd = res;
            if (fixed) {
              if (free_slots.empty()) {
                std::fprintf(stderr, "echo_uring: more than %u connections\n", max_conns);
                ++errors;
                nb::sys::close(res);
                prep_accept();
                break;
              }
              unsigned slot = free_slots.back();
              free_slots.pop_back();
              if (int u = ring.update_file(slot, res); u < 0) {
                std::fprintf(stderr, "io_uring_register_files_update: %s\n", std::strerror(-u));
                ++errors;
                free_slots.push_back(slot);
                nb::sys::close(res);
                prep_accept();
                break;
              }
              nb::sys::close(res);  // the table holds its own reference
              fd = static_cast<int>(slot);
            }
            auto* nc = new Conn{fd, std::make_unique<unsigned char[]>(bufsz)};
            live.insert(nc);
            ++accepted;
            prep_recv(nc);
          } else if (res != -ECONNABORTED && res != -EINTR && res != -EAGAIN) {
            std::fprintf(stderr, "accept: %s\n", std::strerror(-res));
            ++errors;
          }
          prep_accept();
          break;
        case kRecv:
          if (res > 0) {
            ++reads;
            bytes += static_cast<uint64_t>(res);
            c->off = 0;
            c->len = static_cast<size_t>(res);
            prep_send(c);
          } else if (res == -EINTR || res == -EAGAIN) {
            prep_recv(c);
          } else {
            if (res < 0 && res != -ECONNRESET) {
              std::fprintf(stderr, "recv: %s\n", std::strerror(-res));
              ++errors;
            }
            close_conn(c);
          }
          break;
        case kSend:
          if (res > 0) {
            c->off += static_cast<size_t>(res);
            if (c->off < c->len)
              prep_send(c);
            else
              prep_recv(c);
          } else if (res == -EINTR || res == -EAGAIN) {
            prep_send(c);
          } else {
            if (res != -ECONNRESET && res != -EPIPE) {
              std::fprintf(stderr, "send: %s\n", res < 0 ? std::strerror(-res) : "returned 0");
              ++errors;
            }
            close_conn(c);
          }
          break;
      }
    });
  }

  // In-flight recvs still reference the buffers: tear the ring down before freeing them.
  uint64_t cpu_ns = nb::process_cpu_ns();
  nb::SysCounters sc = nb::g_sys;
  ring.exit();
  for (Conn* c : live) {
    if (!fixed) ::close(c->fd);
    delete c;
  }
  nb::Json j;
  j.add("bench", "echo_server")
      .add("server", fixed ? "uring_fixed" : "uring")
      .add("port", port)
      .add("conns", accepted)
      .add("bytes", bytes)
      .add("reads", reads)
      .add("cpu_ns", cpu_ns)
      .add("syscalls_total", sc.total())
      .add("loop_syscalls", sc.loop)
      .add("errors", errors)
      .add("ok", errors == 0);
  j.print();
  return errors == 0 ? 0 : 1;
}
