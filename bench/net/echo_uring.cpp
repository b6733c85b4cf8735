// echo_uring / echo_uring_fixed: single-threaded TCP echo server on 127.0.0.1 written against
// raw liburing. One accept SQE is kept armed; each connection alternates one recv and one send
// (re-sending the rest after a short send). With --fixed (the default of echo_uring_fixed) every
// accepted socket is placed in a registered file table and recv/send use IOSQE_FIXED_FILE.
// With --multishot each connection keeps one multishot recv (IORING_RECV_MULTISHOT) armed
// into a provided-buffer ring shared by all connections (IORING_REGISTER_PBUF_RING,
// --ring-entries buffers of --buf bytes); received buffers queue per connection, each is sent
// back from the ring's memory and then returned to the ring. A multishot ended by -ENOBUFS
// (ring dry) is re-armed when a buffer comes back. This is ringo's `echo_ringo --multishot`
// written with plain liburing.
// Runs until SIGTERM/SIGINT (a read on a signalfd through the ring), then prints one JSON line.
#include <sys/signalfd.h>

#include <sys/mman.h>

#include <algorithm>
#include <deque>
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
    "usage: echo_uring --port P [--cpu C] [--buf BYTES] [--fixed] [--multishot] [--ring-entries N]\n"
    "                  [--max-conns N]\n"
    "  Single-threaded raw-liburing echo server on 127.0.0.1:P; runs until SIGTERM or SIGINT,\n"
    "  then prints one JSON line (bench \"echo_server\") on stdout.\n"
    "  --port P        TCP port to listen on (1..65535)\n"
    "  --cpu C         pin the server thread to CPU C (default: not pinned)\n"
    "  --buf BYTES     per-connection buffer size (default 16384)\n"
    "  --fixed         registered files: sockets go into a registered table, ops use\n"
    "                  IOSQE_FIXED_FILE\n"
    "  --multishot     one multishot recv per connection into a shared provided-buffer ring of\n"
    "                  --buf-byte buffers; each buffer is sent back from the ring, then recycled\n"
    "  --ring-entries N  buffers in the ring with --multishot (power of two, default 512)\n"
    "  --max-conns N   size of the registered file table with --fixed (default 4096)\n";
#endif

enum Tag : uint64_t { kRecv = 0, kSend = 1, kAccept = 2, kSignal = 3, kIgnore = 4 };

struct alignas(8) Conn {
  int fd;  // socket fd, or registered-table slot with --fixed
  std::unique_ptr<unsigned char[]> buf;  // not with --multishot
  size_t off = 0, len = 0;
  // --multishot: received buffers waiting to be echoed (ids linked through BufRing::next),
  // the one being sent is the head.
  int head = -1, tail = -1;
  bool recv_armed = false, send_inflight = false, closing = false, parked = false;
};

// --multishot: the provided-buffer ring. The descriptor ring and the buffers are one
// anonymous mapping (page aligned, as the kernel wants; liburing 2.3 has no
// io_uring_setup_buf_ring).
struct BufRing {
  io_uring_buf_ring* br = nullptr;
  unsigned char* data = nullptr;
  void* map = nullptr;
  size_t map_bytes = 0;
  unsigned entries = 0;
  size_t size = 0;
  unsigned lent = 0;
  std::vector<uint16_t> next;  // per-buffer link of a connection's queue
  std::vector<uint32_t> len;   // per-buffer received length
  static constexpr uint16_t kGroup = 0;

  int setup(io_uring* ring, unsigned n, size_t bufsz) {
    entries = n;
    size = bufsz;
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t ring_bytes = (n * sizeof(io_uring_buf) + page - 1) / page * page;
    map_bytes = ring_bytes + n * bufsz;
    map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
      map = nullptr;
      return -errno;
    }
    br = static_cast<io_uring_buf_ring*>(map);
    data = static_cast<unsigned char*>(map) + ring_bytes;
    next.assign(n, 0);
    len.assign(n, 0);
    io_uring_buf_ring_init(br);
    for (unsigned i = 0; i < n; ++i)
      io_uring_buf_ring_add(br, data + i * bufsz, static_cast<unsigned>(bufsz), static_cast<unsigned short>(i),
                            io_uring_buf_ring_mask(n), static_cast<int>(i));
    io_uring_buf_ring_advance(br, static_cast<int>(n));
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(br);
    reg.ring_entries = n;
    reg.bgid = kGroup;
    ++nb::g_sys.ctl;
    return io_uring_register_buf_ring(ring, &reg, 0);
  }
  void give_back(uint16_t bid) {
    io_uring_buf_ring_add(br, data + bid * size, static_cast<unsigned>(size), bid, io_uring_buf_ring_mask(entries), 0);
    io_uring_buf_ring_advance(br, 1);
    --lent;
  }
  ~BufRing() {
    if (map) munmap(map, map_bytes);
  }
};

uint64_t encode(Conn* c, Tag t) { return reinterpret_cast<uint64_t>(c) | t; }

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage,
                {{"port", true}, {"cpu", true}, {"buf", true}, {"fixed", false}, {"multishot", false},
                 {"ring-entries", true}, {"max-conns", true}});
  int port = static_cast<int>(args.need_int("port", 1, 65535));
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  size_t bufsz = static_cast<size_t>(args.get_int("buf", 16384, 1, 1 << 24));
  bool fixed = NB_FIXED_DEFAULT || args.has("fixed");
  unsigned max_conns = static_cast<unsigned>(args.get_int("max-conns", 4096, 1, 1 << 20));
  bool multishot = args.has("multishot");
  unsigned ring_entries = static_cast<unsigned>(args.get_int("ring-entries", 512, 1, 32768));
  if (ring_entries & (ring_entries - 1)) args.fail("option '--ring-entries': expected a power of two");

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
  BufRing bufs;
  if (multishot) {
    if (int r = bufs.setup(ring.raw(), ring_entries, bufsz); r < 0) {
      std::fprintf(stderr, "io_uring_register_buf_ring(%u x %zu bytes): %s\n", ring_entries, bufsz,
                   std::strerror(-r));
      return 1;
    }
  }
  std::fprintf(stderr, "echo_uring%s%s: listening on 127.0.0.1:%d (ring: %s)\n", fixed ? " (fixed files)" : "",
               multishot ? " (multishot + buffer ring)" : "", port, ring.setup().c_str());

  uint64_t accepted = 0, bytes = 0, reads = 0, errors = 0;
  std::unordered_set<Conn*> live;
  std::deque<Conn*> parked;  // --multishot: connections whose multishot ended with -ENOBUFS
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
  // --multishot.
  auto prep_recv_multishot = [&](Conn* c) {
    io_uring_sqe* s = ring.sqe();
    io_uring_prep_recv_multishot(s, c->fd, nullptr, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BufRing::kGroup;
    if (fixed) s->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(s, encode(c, kRecv));
    c->recv_armed = true;
  };
  auto prep_send_head = [&](Conn* c) {
    io_uring_sqe* s = ring.sqe();
    const uint16_t bid = static_cast<uint16_t>(c->head);
    io_uring_prep_send(s, c->fd, bufs.data + bid * bufsz + c->off, bufs.len[bid] - c->off, MSG_NOSIGNAL);
    if (fixed) s->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(s, encode(c, kSend));
    c->send_inflight = true;
  };
  // A buffer came back: the oldest parked connection re-arms.
  auto buffer_back = [&](uint16_t bid) {
    bufs.give_back(bid);
    if (!parked.empty()) {
      Conn* p = parked.front();
      parked.pop_front();
      p->parked = false;
      prep_recv_multishot(p);
    }
  };
  auto cancel_recv = [&](Conn* c) {
    io_uring_sqe* s = ring.sqe();
    io_uring_prep_cancel64(s, encode(c, kRecv), 0);
    io_uring_sqe_set_data64(s, kIgnore);
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
    if (c->parked) parked.erase(std::find(parked.begin(), parked.end(), c));
    while (c->head >= 0) {  // --multishot: queued buffers go back (and may re-arm others)
      uint16_t bid = static_cast<uint16_t>(c->head);
      c->head = bid == c->tail ? -1 : bufs.next[bid];
      buffer_back(bid);
    }
    delete c;
  };
  // --multishot: ends the connection once neither its recv nor a send is in flight.
  auto finish_conn = [&](Conn* c) {
    c->closing = true;
    if (c->recv_armed)
      cancel_recv(c);
    else if (!c->send_inflight)
      close_conn(c);
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
            auto* nc = new Conn{fd, multishot ? nullptr : std::make_unique<unsigned char[]>(bufsz)};
            live.insert(nc);
            ++accepted;
            if (multishot)
              prep_recv_multishot(nc);
            else
              prep_recv(nc);
          } else if (res != -ECONNABORTED && res != -EINTR && res != -EAGAIN) {
            std::fprintf(stderr, "accept: %s\n", std::strerror(-res));
            ++errors;
          }
          prep_accept();
          break;
        case kIgnore:
          break;
        case kRecv:
          if (multishot) {
            if (cqe->flags & IORING_CQE_F_BUFFER) {
              const uint16_t bid = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
              ++bufs.lent;
              if (res > 0 && !c->closing) {
                ++reads;
                bytes += static_cast<uint64_t>(res);
                bufs.len[bid] = static_cast<uint32_t>(res);
                if (c->tail >= 0)
                  bufs.next[c->tail] = bid;
                else
                  c->head = bid;
                c->tail = bid;
                if (!c->send_inflight) {
                  c->off = 0;
                  prep_send_head(c);
                }
              } else {
                buffer_back(bid);
              }
            }
            if (cqe->flags & IORING_CQE_F_MORE) break;
            c->recv_armed = false;  // the multishot is over
            if (c->closing) {
              if (!c->send_inflight) close_conn(c);
            } else if (res > 0 || res == -ENOBUFS) {
              if (bufs.lent < bufs.entries) {  // stopped with buffers free: re-arm now
                prep_recv_multishot(c);
              } else {
                c->parked = true;
                parked.push_back(c);
              }
            } else {
              if (res < 0 && res != -ECONNRESET) {
                std::fprintf(stderr, "recv multishot: %s\n", std::strerror(-res));
                ++errors;
              }
              finish_conn(c);
            }
            break;
          }
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
          if (multishot) {
            c->send_inflight = false;
            if (res > 0) {
              const uint16_t bid = static_cast<uint16_t>(c->head);
              c->off += static_cast<size_t>(res);
              if (c->off < bufs.len[bid]) {
                prep_send_head(c);
                break;
              }
              c->head = bid == c->tail ? -1 : bufs.next[bid];
              if (c->head < 0) c->tail = -1;
              buffer_back(bid);
              if (c->head >= 0 && !c->closing) {
                c->off = 0;
                prep_send_head(c);
              } else if (c->closing && !c->recv_armed) {
                close_conn(c);
              }
            } else if (res == -EINTR || res == -EAGAIN) {
              prep_send_head(c);
            } else {
              if (res != -ECONNRESET && res != -EPIPE) {
                std::fprintf(stderr, "send: %s\n", res < 0 ? std::strerror(-res) : "returned 0");
                ++errors;
              }
              finish_conn(c);
            }
            break;
          }
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
      .add("server", std::string(fixed ? "uring_fixed" : "uring") + (multishot ? "_multishot" : ""))
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
