// echo_asio: single-threaded TCP echo server on 127.0.0.1 written with Asio (standalone, as
// packaged by Debian: libasio-dev 1.22) and C++20 coroutines: one coroutine per connection
// started with co_spawn, all on one io_context run by one thread. Runs until SIGTERM/SIGINT
// (asio::signal_set), then prints one JSON summary line.
#include <asio.hpp>

#include <memory>

#include "common.hpp"

namespace {

const char* kUsage =
    "usage: echo_asio --port P [--cpu C] [--buf BYTES]\n"
    "  Single-threaded Asio (C++20 coroutines) echo server on 127.0.0.1:P; runs until SIGTERM\n"
    "  or SIGINT, then prints one JSON line (bench \"echo_server\") on stdout.\n"
    "  --port P      TCP port to listen on (1..65535)\n"
    "  --cpu C       pin the server thread to CPU C (default: not pinned)\n"
    "  --buf BYTES   per-connection buffer size (default 16384)\n";

using asio::ip::tcp;

struct Stats {
  uint64_t accepted = 0, bytes = 0, reads = 0, errors = 0;
};

bool benign(const std::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::operation_aborted;
}

asio::awaitable<void> session(tcp::socket sock, size_t bufsz, Stats& st) {
  auto buf = std::make_unique<unsigned char[]>(bufsz);
  try {
    for (;;) {
      size_t n = co_await sock.async_read_some(asio::buffer(buf.get(), bufsz), asio::use_awaitable);
      ++st.reads;
      st.bytes += n;
      co_await asio::async_write(sock, asio::buffer(buf.get(), n), asio::use_awaitable);
    }
  } catch (const std::system_error& e) {
    if (!benign(e.code())) {
      std::fprintf(stderr, "echo_asio: session: %s\n", e.what());
      ++st.errors;
    }
  }
}

asio::awaitable<void> listener(tcp::acceptor& acc, size_t bufsz, Stats& st) {
  for (;;) {
    try {
      tcp::socket s = co_await acc.async_accept(asio::use_awaitable);
      s.set_option(tcp::no_delay(true));
      ++st.accepted;
      asio::co_spawn(acc.get_executor(), session(std::move(s), bufsz, st), asio::detached);
    } catch (const std::system_error& e) {
      if (e.code() == asio::error::operation_aborted) co_return;
      if (e.code() != asio::error::connection_aborted) {
        std::fprintf(stderr, "echo_asio: accept: %s\n", e.what());
        ++st.errors;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  nb::Args args(argc, argv, kUsage, {{"port", true}, {"cpu", true}, {"buf", true}});
  int port = static_cast<int>(args.need_int("port", 1, 65535));
  int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
  size_t bufsz = static_cast<size_t>(args.get_int("buf", 16384, 1, 1 << 24));

  if (!nb::pin_cpu(cpu)) return 1;
  ::signal(SIGPIPE, SIG_IGN);

  Stats st;
  {
    asio::io_context ctx(1);
    tcp::acceptor acc(ctx);
    try {
      tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
      acc.open(ep.protocol());
      acc.set_option(asio::socket_base::reuse_address(true));
      acc.bind(ep);
      acc.listen(1024);
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "echo_asio: listen on 127.0.0.1:%d: %s\n", port, e.what());
      return 1;
    }
    asio::signal_set sigs(ctx, SIGTERM, SIGINT);
    sigs.async_wait([&](const std::error_code&, int) { ctx.stop(); });
    asio::co_spawn(ctx, listener(acc, bufsz, st), asio::detached);
    std::fprintf(stderr, "echo_asio: listening on 127.0.0.1:%d\n", port);
    try {
      ctx.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "echo_asio: %s\n", e.what());
      ++st.errors;
    }
  }  // destroys the remaining session coroutines and closes their sockets

  nb::Json j;
  j.add("bench", "echo_server")
      .add("server", "asio")
      .add("port", port)
      .add("conns", st.accepted)
      .add("bytes", st.bytes)
      .add("reads", st.reads)
      .add("cpu_ns", nb::process_cpu_ns())
      // No syscalls_total / loop_syscalls: Asio makes its own system calls (they are not
      // wrapped like the other servers'), and counting them in-process with a perf tracepoint
      // costs ~150-200 ns per call here, which would slow this baseline down. Left out, the
      // report shows "–".
      .add("errors", st.errors)
      .add("ok", st.errors == 0);
  j.print();
  return st.errors == 0 ? 0 : 1;
}
