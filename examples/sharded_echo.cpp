// A TCP echo server on every core: one runtime per thread, one SO_REUSEPORT listening socket
// per runtime. Stops gracefully on SIGINT/SIGTERM (open connections get 2 s to finish, then
// they are cancelled). Out of descriptors, each runtime's accept loop waits and accepts again.
//   sharded_echo [PORT [THREADS]]   or   sharded_echo [--port PORT] [--threads THREADS] [--host ADDR]
// The first line of output is "listening on port <P>"; exit status 0 after a signal, 1 when
// the pool or the listener could not be set up, 2 for bad arguments.
#include "args.hpp"

#include <ringo/ringo.hpp>

#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

namespace {

// One connection: echoes what it receives until the peer closes. The stream closes its
// descriptor when the task ends, however it ends (cancelled by the shutdown included).
ringo::Task<void> echo(ringo::net::TcpStream s) {
    char buf[4096];
    for (;;) {
        auto n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0)
            break;
        auto w = co_await s.write_all(buf, *n);
        if (!w)
            break;
    }
}

// Serves on `addr` until SIGINT or SIGTERM. Throws what setting up the pool or the listener
// throws (std::system_error: the port is taken, no io_uring, ...).
int run(ringo::net::SocketAddr addr, std::size_t threads, const sigset_t& stop) {
    ringo::RuntimePool pool{threads, ringo::PoolOptions{}.pin_threads()};
    ringo::net::ShardedListener server{pool, addr, &echo};
    std::printf("listening on port %u\n%zu runtime(s)\n", server.port(), pool.size());
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    bool clean = pool.shutdown_for(std::chrono::seconds(2));
    for (std::size_t i = 0; i < server.shards(); ++i)
        std::printf("runtime %zu accepted %llu connections\n", i, static_cast<unsigned long long>(server.accepted(i)));
    std::printf("%s\n", clean ? "all connections finished" : "open connections were cancelled");
    return 0;
}

constexpr const char* usage_text = "usage: sharded_echo [PORT [THREADS]]\n"
                                   "       sharded_echo [--port PORT] [--threads THREADS] [--host ADDR]\n"
                                   "  PORT     TCP port, 0 to 65535 (0: any free one; default 7000)\n"
                                   "  THREADS  runtimes (threads), 0 to 256 (0, the default: one per CPU)\n"
                                   "  ADDR     IPv4 or IPv6 address to listen on (default 0.0.0.0)\n";

constexpr std::uint64_t max_threads = 256;

} // namespace

int main(int argc, char** argv) {
    args::Parser p("sharded_echo", usage_text, argc, argv);
    args::Slot slots[] = {{"--port", "PORT", 0, 65535}, {"--threads", "THREADS", 0, max_threads}};
    std::string_view host = "0.0.0.0";
    while (std::optional<std::string_view> a = p.next()) {
        if (*a == "--host")
            host = p.value(*a);
        else if (!p.take(*a, slots))
            p.unknown(*a);
    }
    ringo::net::SocketAddr addr = p.address("--host", host, static_cast<std::uint16_t>(slots[0].value.value_or(7000)));
    std::size_t n = slots[1].value.value_or(0);
    if (n == 0)
        n = std::thread::hardware_concurrency() ? std::thread::hardware_concurrency() : 1;

    // Block the stop signals before the pool's threads exist (they inherit the mask), and
    // wait for them here.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    return args::report_setup_errors("sharded_echo", [&] { return run(addr, n, stop); });
}
