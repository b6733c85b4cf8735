// Compiled by check_misuse.cmake: with MISUSE undefined every call is right and the file
// compiles; with MISUSE=k the k-th mistake is made, which must fail to compile with a message
// that says what is wrong (the one line check_misuse.cmake looks for).
#include <ringo/compose/when.hpp>
#include <ringo/core/runtime_pool.hpp>
#include <ringo/net/listener.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/file.hpp>

#include <utility>
#include <vector>

ringo::Task<int> one() { co_return 1; }

ringo::Task<void> uses() {
    std::vector<ringo::Task<int>> tasks;
    tasks.push_back(one());
    std::vector<ringo::op::Nop> ops(2);
#if MISUSE == 1
    auto a = co_await ringo::when_all(tasks); // not moved
#else
    auto a = co_await ringo::when_all(std::move(tasks));
#endif
#if MISUSE == 2
    auto b = co_await ringo::when_all(ops); // not moved
#else
    auto b = co_await ringo::when_all(std::move(ops));
#endif
    std::vector<ringo::Task<int>> more;
    more.push_back(one());
#if MISUSE == 3
    auto c = co_await ringo::when_any(more); // not moved
#else
    auto c = co_await ringo::when_any(std::move(more));
#endif
    (void)a;
    (void)b;
    (void)c;
}

void listen(ringo::RuntimePool& pool) {
#if MISUSE == 4
    // A handler of no known form (a string is not a connection).
    ringo::net::ShardedListener l(pool, ringo::net::SocketAddr::v4_loopback(0),
                                  [](const char*) -> ringo::Task<void> { co_return; });
#else
    ringo::net::ShardedListener l(pool, ringo::net::SocketAddr::v4_loopback(0),
                                  [](ringo::net::TcpStream) -> ringo::Task<void> { co_return; });
#endif
}
