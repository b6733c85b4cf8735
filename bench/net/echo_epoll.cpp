// echo_epoll: single-threaded TCP echo server on 127.0.0.1 using level-triggered epoll and
// nonblocking read/write. Runs until SIGTERM/SIGINT, then prints one JSON summary line.
#include <memory>
#include <unordered_set>

#include "common.hpp"

namespace {

const char* kUsage =
    "usage: echo_epoll --port P [--cpu C] [--buf BYTES]\n"
    "  Single-threaded epoll echo server on 127.0.0.1:P; runs until SIGTERM or SIGINT,\n"
    "  then prints one JSON line (bench \"echo_server\") on stdout.\n"
    "  --port P      TCP port to listen on (1..65535)\n"
    "  --cpu C       pin the server thread to CPU C (default: not pinned)\n"
    "  --buf BYTES   per-connection buffer size (default 16384)\n";

struct Conn {
  int fd;
  std::unique_ptr<unsigned char[]> buf;
  size_t off = 0;  // pending output [off, len) while waiting for EPOLLOUT
  size_t len = 0;
};

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage, {{"port", true}, {"cpu", true}, {"buf", true}});
  int port = static_cast<int>(args.need_int("port", 1, 65535));
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  size_t bufsz = static_cast<size_t>(args.get_int("buf", 16384, 1, 1 << 24));

  if (!nb::pin_cpu(cpu)) return 1;
  int sfd = nb::termination_signalfd();
  int lfd = nb::listen_loopback(port, true);
  if (sfd < 0 || lfd < 0) return 1;
  int ep = epoll_create1(EPOLL_CLOEXEC);
  // Tags for the two special descriptors; connections carry their Conn*.
  static char listener_tag, signal_tag;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &listener_tag;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.ptr = &signal_tag;
  epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
  std::fprintf(stderr, "echo_epoll: listening on 127.0.0.1:%d\n", port);

  uint64_t accepted = 0, bytes = 0, reads = 0, errors = 0;
  std::unordered_set<Conn*> live;
  auto close_conn = [&](Conn* c) {
    nb::sys::close(c->fd);
    live.erase(c);
    delete c;
  };
  // Writes c->buf[off, len); returns false if the connection failed.
  auto flush = [&](Conn* c) -> bool {
    while (c->off < c->len) {
      ssize_t w = nb::sys::write(c->fd, c->buf.get() + c->off, c->len - c->off);
      if (w > 0) {
        c->off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EAGAIN) return true;
      if (w < 0 && errno != ECONNRESET && errno != EPIPE) ++errors;
      return false;
    }
    return true;
  };

  const int kMaxEv = 512;
  epoll_event evs[kMaxEv];
  bool stop = false;
  while (!stop) {
    int n = nb::sys::epoll_wait(ep, evs, kMaxEv, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::perror("epoll_wait");
      ++errors;
      break;
    }
    for (int i = 0; i < n; ++i) {
      void* tag = evs[i].data.ptr;
      if (tag == &signal_tag) {
        stop = true;
        continue;
      }
      if (tag == &listener_tag) {
        for (;;) {
          int fd = nb::sys::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
              std::perror("accept4");
              ++errors;
            }
            break;
          }
          nb::set_nodelay(fd);
          auto* c = new Conn{fd, std::make_unique<unsigned char[]>(bufsz)};
          live.insert(c);
          ++accepted;
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.ptr = c;
          nb::sys::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
        }
        continue;
      }
      auto* c = static_cast<Conn*>(tag);
      if (c->off < c->len) {
        // Waiting for EPOLLOUT with output pending.
        if (!flush(c)) {
          close_conn(c);
          continue;
        }
        if (c->off == c->len) {
          c->off = c->len = 0;
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.ptr = c;
          nb::sys::epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &cev);
        }
        continue;
      }
      ssize_t r = nb::sys::read(c->fd, c->buf.get(), bufsz);
      if (r > 0) {
        ++reads;
        bytes += static_cast<uint64_t>(r);
        c->off = 0;
        c->len = static_cast<size_t>(r);
        if (!flush(c)) {
          close_conn(c);
          continue;
        }
        if (c->off < c->len) {
          epoll_event cev{};
          cev.events = EPOLLOUT;
          cev.data.ptr = c;
          nb::sys::epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &cev);
        } else {
          c->off = c->len = 0;
        }
      } else if (r == 0) {
        close_conn(c);
      } else if (errno != EAGAIN && errno != EINTR) {
        if (errno != ECONNRESET) ++errors;
        close_conn(c);
      }
    }
  }

  for (Conn* c : std::unordered_set<Conn*>(live)) close_conn(c);
  nb::Json j;
  j.add("bench", "echo_server")
      .add("server", "epoll")
      .add("port", port)
      .add("conns", accepted)
      .add("bytes", bytes)
      .add("reads", reads)
      .add("cpu_ns", nb::process_cpu_ns())
      .add("syscalls_total", nb::g_sys.total())
      .add("loop_syscalls", nb::g_sys.loop)
      .add("errors", errors)
      .add("ok", errors == 0);
  j.print();
  return errors == 0 ? 0 : 1;
}
