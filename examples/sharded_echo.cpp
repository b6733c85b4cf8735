// A TCP echo server on every core: one runtime per thread, one SO_REUSEPORT listening socket
// per runtime. Stops gracefully on SIGINT/SIGTERM (open connections get 2 s to finish, then
// they are cancelled). Out of descriptors, each runtime's accept loop waits and accepts again.
//   sharded_echo [PORT [THREADS]]   or   sharded_echo [--port PORT] [--threads THREADS] [--host ADDR]
// The first line of output is "listening on port <P>"; exit status 0 after a signal, 1 when
// the pool or the listener could not be set up, 2 for bad arguments.
#include <ringo/ringo.hpp>

#include <signal.h>

#include <charconv>
#include <cstdio>
#include <exception>
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

constexpr unsigned long max_threads = 256;

// A usage error: what is wrong, the usage, status 2.
int usage_error(const std::string& why) {
    std::fprintf(stderr, "sharded_echo: %s\n%s", why.c_str(), usage_text);
    return 2;
}

// A decimal number from 0 to `max`: digits only (no sign, space or base prefix), no wrap.
std::optional<unsigned long> parse_number(std::string_view s, unsigned long max) {
    unsigned long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v > max)
        return std::nullopt;
    return v;
}

} // namespace

int main(int argc, char** argv) {
    std::optional<unsigned long> port, threads;
    std::string host = "0.0.0.0";
    int positional = 0;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        std::string_view v = a;
        bool is_port = false;
        if (a == "--port" || a == "--threads" || a == "--host") {
            if (i + 1 >= argc)
                return usage_error(std::string(a) + " needs a value");
            v = argv[++i];
            if (a == "--host") {
                host = v;
                continue;
            }
            is_port = a == "--port";
        } else if (a.size() > 1 && a[0] == '-' && (a[1] < '0' || a[1] > '9')) {
            return usage_error("unknown option " + std::string(a));
        } else if (++positional > 2) {
            return usage_error("unexpected argument '" + std::string(a) + "'");
        } else {
            is_port = positional == 1;
        }
        std::optional<unsigned long>& slot = is_port ? port : threads;
        if (slot)
            return usage_error(is_port ? "the port is given twice" : "the thread count is given twice");
        slot = parse_number(v, is_port ? 65535 : max_threads);
        if (!slot)
            return usage_error(is_port
                                   ? "the port must be a number from 0 to 65535, not '" + std::string(v) + "'"
                                   : "the thread count must be a number from 0 to 256, not '" + std::string(v) + "'");
    }
    std::optional<ringo::net::SocketAddr> addr =
        ringo::net::SocketAddr::parse_ip(host, static_cast<std::uint16_t>(port.value_or(7000)));
    if (!addr)
        return usage_error("--host wants an IPv4 or IPv6 address, not '" + host + "'");
    std::size_t n = threads.value_or(0);
    if (n == 0)
        n = std::thread::hardware_concurrency() ? std::thread::hardware_concurrency() : 1;

    // Block the stop signals before the pool's threads exist (they inherit the mask), and
    // wait for them here.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    try {
        return run(*addr, n, stop);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sharded_echo: %s\n", e.what());
        return 1;
    }
}
