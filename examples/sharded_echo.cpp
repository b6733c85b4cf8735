// A TCP echo server on every core: one runtime per thread, one SO_REUSEPORT listening socket
// per runtime. Stops gracefully on SIGINT/SIGTERM (open connections get 2 s to finish, then
// they are cancelled).
//   sharded_echo [port] [threads]      (port 0: pick one; threads 0: one per CPU)
#include <ringo/ringo.hpp>

#include <netinet/in.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

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
    ringo::net::ShardedListener server{pool, INADDR_ANY, port, [](int fd) -> ringo::Task<void> {
                                           char buf[4096];
                                           for (;;) {
                                               int n = co_await ringo::op::recv(fd, buf, sizeof buf);
                                               if (n <= 0)
                                                   break;
                                               int sent = 0;
                                               while (sent < n) {
                                                   int w = co_await ringo::op::send(fd, buf + sent,
                                                                                    static_cast<std::size_t>(n - sent));
                                                   if (w <= 0)
                                                       break;
                                                   sent += w;
                                               }
                                               if (sent < n)
                                                   break;
                                           }
                                           co_await ringo::op::close(fd);
                                       }};
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
