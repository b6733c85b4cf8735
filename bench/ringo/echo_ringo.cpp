// echo_ringo: ringo's version of bench/net's echo_uring (same command line, same summary JSON
// line; see bench/net/README.md). Single-threaded TCP echo server on 127.0.0.1: an accept-loop
// task and one task per connection (recv, then send until the whole chunk went back, again).
// With --fixed every accepted socket is put into a registered file table (op::FileTable,
// sparse) and the connection's recv/send use op::Fixed{slot}. With --multishot a connection
// keeps one multishot recv armed (buf::recv_multishot) into a buffer ring shared by every
// connection (buf::BufferRing, --ring-entries buffers of --buf bytes), sends each received
// buffer back from the ring's memory, and the buffer returns to the ring when sent. With
// --stream the server is written with the high-level types instead of op::, as a user of
// ringo::net would write it: net::TcpListener::accept, and per connection a net::TcpStream's
// read and write_all (the descriptor closes through the ring when the stream goes).
// Runs until SIGTERM/SIGINT (a read of a signalfd through the ring), then prints one JSON line.
#include <sys/signalfd.h>

#include <exception>
#include <memory>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/op/file_table.hpp>
#include <ringo/buf/recv_stream.hpp>
#include <ringo/net/tcp.hpp>

#include "ringo_net.hpp"

namespace {

const char* kUsage =
    "usage: echo_ringo --port P [--cpu C] [--buf BYTES] [--fixed | --multishot | --stream] [--ring-entries N]\n"
    "                  [--max-conns N]\n"
    "  Single-threaded ringo echo server on 127.0.0.1:P (an accept task, one task per\n"
    "  connection); runs until SIGTERM or SIGINT, then prints one JSON line\n"
    "  (bench \"echo_server\") on stdout.\n"
    "  --port P        TCP port to listen on (1..65535)\n"
    "  --cpu C         pin the server thread to CPU C (default: not pinned)\n"
    "  --buf BYTES     per-connection buffer size; with --multishot the size of each ring buffer\n"
    "                  (default 16384)\n"
    "  --fixed         registered files: accepted sockets go into a registered table, recv/send\n"
    "                  use op::Fixed slots\n"
    "  --multishot     one multishot recv per connection into a shared provided-buffer ring;\n"
    "                  each buffer is sent back from the ring and then recycled\n"
    "  --stream        the high-level types: net::TcpListener::accept, and per connection a\n"
    "                  net::TcpStream's read and write_all (Result values, no op::)\n"
    "  --ring-entries N  buffers in the ring with --multishot (power of two, default 512)\n"
    "  --max-conns N   size of the registered file table with --fixed (default 4096)\n";

struct Server {
    ringo::op::FileTable* table = nullptr;  // --fixed
    ringo::buf::BufferRing* ring = nullptr;  // --multishot
    std::vector<unsigned> free_slots;        // --fixed
    int lfd = -1;
    size_t bufsz = 0;
    unsigned max_conns = 0;
    uint64_t accepted = 0, bytes = 0, reads = 0, errors = 0;
    bool stopping = false;
};

// Releases a connection's socket when its task ends, and also when the runtime destroys the
// frame of a task still waiting at shutdown (then uncounted: the summary is taken before).
struct ConnGuard {
    Server& s;
    int fd;     // plain socket, or -1
    int slot;   // registered slot, or -1
    ~ConnGuard() {
        if (fd >= 0) {
            if (s.stopping)
                ::close(fd);
            else
                nb::sys::close(fd);
        }
        if (slot >= 0 && !s.stopping) {
            int none = -1;
            ++nb::g_sys.ctl;
            if (int r = s.table->update(static_cast<unsigned>(slot), {&none, 1}); r < 0) {
                std::fprintf(stderr, "echo_ringo: emptying slot %d: %s\n", slot, std::strerror(-r));
                ++s.errors;
            }
            s.free_slots.push_back(static_cast<unsigned>(slot));
        }
    }
};

ringo::Task<void> serve(Server& s, int fd, int slot) {
    ConnGuard guard{s, fd, slot};
    const ringo::op::FileRef f = slot >= 0 ? ringo::op::FileRef(ringo::op::Fixed{static_cast<unsigned>(slot)})
                                           : ringo::op::FileRef(fd);
    auto buf = std::make_unique<unsigned char[]>(s.bufsz);
    for (;;) {
        int r = co_await ringo::op::recv(f, buf.get(), s.bufsz, 0);
        if (r <= 0) {
            if (r == -EINTR || r == -EAGAIN)
                continue;
            if (r < 0 && r != -ECONNRESET) {
                std::fprintf(stderr, "echo_ringo: recv: %s\n", std::strerror(-r));
                ++s.errors;
            }
            co_return;  // EOF or reset
        }
        ++s.reads;
        s.bytes += static_cast<uint64_t>(r);
        const size_t len = static_cast<size_t>(r);
        for (size_t off = 0; off < len;) {
            int w = co_await ringo::op::send(f, buf.get() + off, len - off, MSG_NOSIGNAL);
            if (w > 0) {
                off += static_cast<size_t>(w);
            } else if (w != -EINTR && w != -EAGAIN) {
                if (w != -ECONNRESET && w != -EPIPE) {
                    std::fprintf(stderr, "echo_ringo: send: %s\n", w < 0 ? std::strerror(-w) : "returned 0");
                    ++s.errors;
                }
                co_return;
            }
        }
    }
}

// --multishot: one multishot recv stream; each received buffer is echoed from the ring's
// memory and goes back to the ring at the end of the loop body.
ringo::Task<void> serve_multishot(Server& s, int fd, int slot) {
    ConnGuard guard{s, fd, slot};
    const ringo::op::FileRef f = slot >= 0 ? ringo::op::FileRef(ringo::op::Fixed{static_cast<unsigned>(slot)})
                                           : ringo::op::FileRef(fd);
    auto stream = ringo::buf::recv_multishot(f, *s.ring);
    for (;;) {
        ringo::buf::Buffer b = co_await stream.next();
        if (!b) {
            int r = b.result();
            if (r < 0 && r != -ECONNRESET && !(r == -ECANCELED && s.stopping)) {
                std::fprintf(stderr, "echo_ringo: recv_multishot: %s\n", std::strerror(-r));
                ++s.errors;
            }
            co_return;  // EOF, reset or error
        }
        ++s.reads;
        s.bytes += b.size();
        // The send loop of serve(), written out here too: a helper coroutine would cost a
        // frame per message.
        for (size_t off = 0; off < b.size();) {
            int w = co_await ringo::op::send(f, b.data() + off, b.size() - off, MSG_NOSIGNAL);
            if (w > 0) {
                off += static_cast<size_t>(w);
            } else if (w != -EINTR && w != -EAGAIN) {
                if (w != -ECONNRESET && w != -EPIPE) {
                    std::fprintf(stderr, "echo_ringo: send: %s\n", w < 0 ? std::strerror(-w) : "returned 0");
                    ++s.errors;
                }
                co_return;
            }
        }
    }
}

// --stream: serve() written with net::TcpStream. The stream closes the socket when the task
// ends (through the ring), or synchronously when the runtime destroys a waiting frame.
ringo::Task<void> serve_stream(Server& s, ringo::net::TcpStream c) {
    auto buf = std::make_unique<unsigned char[]>(s.bufsz);
    for (;;) {
        auto r = co_await c.read(buf.get(), s.bufsz);
        if (!r || *r == 0) {
            if (!r && r.error() != std::errc::connection_reset && !(s.stopping && r.error() == std::errc::operation_canceled)) {
                std::fprintf(stderr, "echo_ringo: read: %s\n", r.error().message().c_str());
                ++s.errors;
            }
            co_return; // EOF or reset
        }
        ++s.reads;
        s.bytes += *r;
        auto w = co_await c.write_all(buf.get(), *r);
        if (!w) {
            if (w.error() != std::errc::connection_reset && w.error() != std::errc::broken_pipe) {
                std::fprintf(stderr, "echo_ringo: write_all: %s\n", w.error().message().c_str());
                ++s.errors;
            }
            co_return;
        }
    }
}

// --stream: the accept loop on a net::TcpListener, which owns the listening socket.
ringo::Task<void> accept_loop_stream(Server& s) {
    ringo::net::TcpListener l{ringo::Fd(std::exchange(s.lfd, -1))};
    for (;;) {
        auto c = co_await l.accept();
        if (!c) {
            const std::error_code e = c.error();
            if (e == std::errc::connection_aborted || e == std::errc::interrupted ||
                e == std::errc::resource_unavailable_try_again)
                continue;
            std::fprintf(stderr, "echo_ringo: accept: %s\n", e.message().c_str());
            ++s.errors;
            if (e == std::errc::too_many_files_open || e == std::errc::too_many_files_open_in_system ||
                e == std::errc::no_buffer_space || e == std::errc::not_enough_memory)
                continue;
            co_return;
        }
        auto set = c->stream.set_nodelay(true);
        (void)set;
        ++s.accepted;
        ringo::spawn(serve_stream(s, std::move(c->stream))).detach();
    }
}

ringo::Task<void> accept_loop(Server& s) {
    for (;;) {
        int fd = co_await ringo::op::accept(s.lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (fd == -ECONNABORTED || fd == -EINTR || fd == -EAGAIN)
                continue;
            std::fprintf(stderr, "echo_ringo: accept: %s\n", std::strerror(-fd));
            ++s.errors;
            if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS || fd == -ENOMEM)
                continue;  // may pass when connections close
            co_return;     // the listener itself is broken: serve what is connected, until SIGTERM
        }
        nb::set_nodelay(fd);
        int slot = -1;
        if (s.table) {
            if (s.free_slots.empty()) {
                std::fprintf(stderr, "echo_ringo: more than %u connections\n", s.max_conns);
                ++s.errors;
                nb::sys::close(fd);
                continue;
            }
            slot = static_cast<int>(s.free_slots.back());
            s.free_slots.pop_back();
            ++nb::g_sys.ctl;
            if (int r = s.table->update(static_cast<unsigned>(slot), {&fd, 1}); r < 0) {
                std::fprintf(stderr, "echo_ringo: registering a socket: %s\n", std::strerror(-r));
                ++s.errors;
                s.free_slots.push_back(static_cast<unsigned>(slot));
                nb::sys::close(fd);
                continue;
            }
            nb::sys::close(fd);  // the table holds its own reference
            fd = -1;
        }
        ++s.accepted;
        if (s.ring)
            ringo::spawn(serve_multishot(s, fd, slot)).detach();
        else
            ringo::spawn(serve(s, fd, slot)).detach();
    }
}

// Runs until SIGTERM or SIGINT arrives on the signalfd.
ringo::Task<void> server_main(Server& s, int sfd, bool stream) {
    if (stream)
        ringo::spawn(accept_loop_stream(s)).detach();
    else
        ringo::spawn(accept_loop(s)).detach();
    signalfd_siginfo si;
    for (;;) {
        int r = co_await ringo::op::read(sfd, &si, sizeof si, 0);
        if (r == static_cast<int>(sizeof si))
            break;
        if (r != -EINTR && r != -EAGAIN) {
            std::fprintf(stderr, "echo_ringo: reading the signalfd: %s\n", r < 0 ? std::strerror(-r) : "short read");
            ++s.errors;
            break;
        }
    }
    s.stopping = true;
}

}  // namespace

int main(int argc, char** argv) {
    nb::Args args(argc, argv, kUsage,
                  {{"port", true}, {"cpu", true}, {"buf", true}, {"fixed", false}, {"multishot", false},
                   {"ring-entries", true}, {"max-conns", true}, {"stream", false}});
    const int port = static_cast<int>(args.need_int("port", 1, 65535));
    const int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
    const size_t bufsz = static_cast<size_t>(args.get_int("buf", 16384, 1, 1 << 24));
    const bool fixed = args.has("fixed");
    const unsigned max_conns = static_cast<unsigned>(args.get_int("max-conns", 4096, 1, 1 << 20));
    const bool multishot = args.has("multishot");
    const bool stream = args.has("stream");
    if (stream && (fixed || multishot))
        args.fail("option '--stream': not with --fixed or --multishot");
    const unsigned ring_entries = static_cast<unsigned>(args.get_int("ring-entries", 512, 1, 32768));
    if (ring_entries & (ring_entries - 1))
        args.fail("option '--ring-entries': expected a power of two");

    if (!nb::pin_cpu(cpu))
        return 1;
    const int sfd = nb::termination_signalfd();
    const int lfd = nb::listen_loopback(port, false);
    if (sfd < 0 || lfd < 0)
        return 1;

    Server s;
    s.lfd = lfd;
    s.bufsz = bufsz;
    s.max_conns = max_conns;
    std::unique_ptr<ringo::Runtime> rt;
    std::unique_ptr<ringo::op::FileTable> table;
    std::unique_ptr<ringo::buf::BufferRing> ring;
    try {
        rt = std::make_unique<ringo::Runtime>(ringo::RuntimeOptions{}.sq_entries(1024).cq_entries(8192));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "echo_ringo: runtime setup: %s\n", e.what());
        return 1;
    }
    if (fixed) {
        table = std::make_unique<ringo::op::FileTable>(*rt);
        ++nb::g_sys.ctl;
        if (int r = table->register_sparse(max_conns); r < 0) {
            std::fprintf(stderr, "echo_ringo: registering a sparse file table of %u: %s\n", max_conns, std::strerror(-r));
            return 1;
        }
        s.table = table.get();
        for (unsigned slot = max_conns; slot-- > 0;)
            s.free_slots.push_back(slot);
    }
    if (multishot) {
        try {
            ++nb::g_sys.ctl;
            ring = std::make_unique<ringo::buf::BufferRing>(*rt, ringo::op::BufferGroup{0}, ring_entries, bufsz);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "echo_ringo: %s\n", e.what());
            return 1;
        }
        s.ring = ring.get();
    }
    std::fprintf(stderr, "echo_ringo%s%s%s: listening on 127.0.0.1:%d (ring: %s)\n", fixed ? " (fixed files)" : "",
                 multishot ? " (multishot + buffer ring)" : "", stream ? " (net::TcpStream)" : "", port, rb::ring_setup(*rt).c_str());

    try {
        rt->block_on(server_main(s, sfd, stream));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "echo_ringo: %s\n", e.what());
        ++s.errors;
    }
    s.stopping = true;
    const uint64_t cpu_ns = nb::process_cpu_ns();
    // On the epoll engine the runtime's enter count leaves out the recv and send calls it makes
    // itself: the server's system calls are then not counted here (-1: the driver counts them in
    // an untimed run under strace).
    const bool on_epoll = rt->engine() == ringo::Engine::epoll;
    nb::SysCounters sc = nb::g_sys;
    sc.loop += rt->stats().enters;
    // The table goes first (it unregisters through the ring); then the runtime cancels the
    // operations still in flight and destroys the connection tasks' frames (their guards close
    // the plain sockets).
    table.reset();  // in-flight fixed-file operations keep their own file references
    ring.reset();   // the streams in the connection frames keep the buffer ring until they go
    rt.reset();
    if (s.lfd >= 0) // with --stream the listener took it (and closed it with its frame)
        ::close(lfd);
    ::close(sfd);

    nb::Json j;
    j.add("bench", "echo_server")
        .add("server", std::string(fixed ? "ringo-fixed" : "ringo") + (multishot ? "-multishot" : "") +
                           (stream ? "-stream" : ""))
        .add("port", port)
        .add("conns", s.accepted)
        .add("bytes", s.bytes)
        .add("reads", s.reads)
        .add("cpu_ns", cpu_ns)
        .add("engine", on_epoll ? "epoll" : "io_uring")
        .add("syscalls_total", on_epoll ? -1LL : static_cast<long long>(sc.total()))
        .add("loop_syscalls", sc.loop)
        .add("errors", s.errors)
        .add("ok", s.errors == 0);
    j.print();
    return s.errors == 0 ? 0 : 1;
}
