// A TCP echo server on every core: one runtime per thread, one SO_REUSEPORT listening socket
// per runtime. Stops gracefully on SIGINT/SIGTERM (open connections get 2 s to finish, then
// they are cancelled).
//   sharded_echo [port] [threads]      (port 0: pick one; threads 0: one per CPU)
#include <ringo/ringo.hpp>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

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

int main(int argc, char** argv) {
    auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 7000);
    std::size_t threads = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 0;
    if (threads == 0)
        threads = std::thread::hardware_concurrency() ? std::thread::hardware_concurrency() : 1;

    // Block the stop signals before the pool's threads exist (they inherit the mask), and
    // wait for them here.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);

    ringo::RuntimePool pool{threads, ringo::PoolOptions{}.pin_threads()};
    ringo::net::ShardedListener server{pool, ringo::net::SocketAddr::v4_any(port), &echo};
    std::printf("echo on port %u, %zu runtimes\n", server.port(), pool.size());
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    bool clean = pool.shutdown_for(std::chrono::seconds(2));
    for (std::size_t i = 0; i < server.shards(); ++i)
        std::printf("runtime %zu accepted %llu connections\n", i, static_cast<unsigned long long>(server.accepted(i)));
    std::printf("%s\n", clean ? "all connections finished" : "open connections were cancelled");
    return 0;
}
