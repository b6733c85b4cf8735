#include <ringo/net/listener.hpp>
#include <ringo/ringo.hpp>

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using ringo::RuntimePool;
using ringo::Task;
using ringo::net::ShardedListener;

namespace {

// Connects to 127.0.0.1:port, sends one byte, returns the byte the server answers (-1: error).
int ask(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    int res = -1;
    unsigned char c = 'x';
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::send(fd, &c, 1, 0) == 1 &&
        ::recv(fd, &c, 1, MSG_WAITALL) == 1)
        res = c;
    ::close(fd);
    return res;
}

int connect_errno(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    int r = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
    ::close(fd);
    return r;
}

// Answers one byte: the index of the runtime that serves the connection.
auto which_runtime(RuntimePool& pool) {
    return [&pool](int fd) -> Task<void> {
        char c;
        if (co_await ringo::op::recv(fd, &c, 1) == 1) {
            auto idx = static_cast<unsigned char>(pool.current_index());
            co_await ringo::op::send(fd, &idx, 1);
        }
        co_await ringo::op::close(fd);
    };
}

// A handler that carries state: an object with a call operator, copied once into the
// listener, whose counter every connection of every shard adds to (no global).
struct CountingEcho {
    std::shared_ptr<std::atomic<int>> served = std::make_shared<std::atomic<int>>(0);
    Task<void> operator()(ringo::net::TcpStream s) const {
        char c;
        auto n = co_await s.read(&c, 1);
        if (n && *n == 1) {
            served->fetch_add(1);
            auto w = co_await s.write_all(&c, 1);
            (void)w;
        }
    }
};

TEST(ShardedListener, AHandlerCarriesState) {
    RuntimePool pool(2);
    CountingEcho handler;
    std::shared_ptr<std::atomic<int>> served = handler.served;
    {
        ShardedListener lst(pool, INADDR_LOOPBACK, 0, handler);
        for (int i = 0; i < 16; ++i)
            ASSERT_EQ(ask(lst.port()), 'x') << "connection " << i;
        EXPECT_EQ(lst.accepted(0) + lst.accepted(1), 16u);
        EXPECT_THROW((void)lst.accepted(2), std::out_of_range);
        EXPECT_FALSE(lst.error());
    }
    EXPECT_EQ(served->load(), 16);
    pool.shutdown();
}

TEST(ShardedListener, ConnectionsAreServedByMoreThanOneRuntime) {
    RuntimePool pool(2);
    ShardedListener lst(pool, INADDR_LOOPBACK, 0, which_runtime(pool));
    ASSERT_NE(lst.port(), 0);
    EXPECT_EQ(lst.shards(), 2u);
    std::vector<int> served(2, 0);
    constexpr int n = 64;
    for (int i = 0; i < n; ++i) {
        int r = ask(lst.port());
        ASSERT_GE(r, 0) << "connection " << i;
        ASSERT_LT(r, 2);
        ++served[static_cast<std::size_t>(r)];
    }
    // SO_REUSEPORT hashes each connection's source port: with 64 connections both shards
    // get some unless the hash put all of them on one (probability 2^-63).
    EXPECT_GT(served[0], 0);
    EXPECT_GT(served[1], 0);
    EXPECT_EQ(lst.accepted(0) + lst.accepted(1), std::uint64_t(n));
    EXPECT_EQ(lst.accepted(0), std::uint64_t(served[0]));
    lst.stop();
    EXPECT_FALSE(lst.error()) << lst.error().message();
    EXPECT_EQ(connect_errno(lst.port()), ECONNREFUSED); // every shard's socket is closed
    pool.shutdown();
}

TEST(ShardedListener, PoolShutdownStopsTheAcceptLoops) {
    std::uint16_t port = 0;
    std::atomic<int> handled{0};
    {
        RuntimePool pool(2);
        ShardedListener lst(pool, INADDR_LOOPBACK, 0, [&handled](int fd) -> Task<void> {
            char c;
            co_await ringo::op::recv(fd, &c, 1);
            co_await ringo::op::send(fd, &c, 1);
            co_await ringo::op::close(fd);
            handled.fetch_add(1);
        });
        port = lst.port();
        EXPECT_EQ(ask(port), 'x');
        auto t0 = std::chrono::steady_clock::now();
        pool.shutdown(); // graceful: the hook stops the accept loops, nothing else runs
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
        EXPECT_EQ(pool.live_tasks(), 0);
    } // the listener (destroyed first) closes its sockets after the pool stopped its loops
    EXPECT_EQ(handled.load(), 1);
    EXPECT_EQ(connect_errno(port), ECONNREFUSED);
}

TEST(ShardedListener, GracefulShutdownWaitsForOpenConnections) {
    RuntimePool pool(2);
    std::atomic<bool> finished{false};
    ShardedListener lst(pool, INADDR_LOOPBACK, 0, [&finished](int fd) -> Task<void> {
        char c;
        co_await ringo::op::recv(fd, &c, 1); // ends when the client closes
        co_await ringo::op::close(fd);
        finished.store(true);
    });
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(lst.port());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    while (lst.accepted(0) + lst.accepted(1) == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread closer([fd] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        ::close(fd);
    });
    pool.shutdown(); // returns once the connection's task has seen the close
    EXPECT_TRUE(finished.load());
    closer.join();
}

TEST(ShardedListener, BadAddressAndBusyPortThrow) {
    RuntimePool pool(2);
    sockaddr bad{};
    bad.sa_family = AF_UNIX;
    auto noop = [](int fd) -> Task<void> { co_await ringo::op::close(fd); };
    EXPECT_THROW(ShardedListener(pool, &bad, sizeof bad, noop), std::invalid_argument);
    // A port held by a socket without SO_REUSEPORT cannot be shared.
    int plain = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(plain, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(plain, 4), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(::getsockname(plain, reinterpret_cast<sockaddr*>(&a), &len), 0);
    try {
        ShardedListener lst(pool, INADDR_LOOPBACK, ntohs(a.sin_port), noop);
        ADD_FAILURE() << "bound a port another socket holds";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EADDRINUSE) << e.what();
    }
    ::close(plain);
}

// A client bound to 127.0.0.1 on a port of its own: connects to `port`, sends `c`, returns
// the answer (the peer port the server saw, as two bytes) or -1; `local` gets its own port.
int ask_peer_port(std::uint16_t port, std::uint16_t& local) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in me{};
    me.sin_family = AF_INET;
    me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof me;
    sockaddr_in a = me;
    a.sin_port = htons(port);
    int res = -1;
    unsigned char got[2];
    char c = 'p';
    if (::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::send(fd, &c, 1, 0) == 1 &&
        ::recv(fd, got, 2, MSG_WAITALL) == 2)
        res = got[0] << 8 | got[1];
    local = ntohs(me.sin_port);
    ::close(fd);
    return res;
}

// Answers with the peer's port as the handler was given it.
Task<void> tell_peer_port(ringo::net::TcpStream s, ringo::net::SocketAddr peer) {
    char c;
    auto r = co_await s.read(&c, 1);
    if (r && *r == 1 && peer.is_v4()) {
        unsigned char p[2] = {static_cast<unsigned char>(peer.port() >> 8), static_cast<unsigned char>(peer.port())};
        auto w = co_await s.write_all(p, 2);
        (void)w;
    }
}

TEST(ShardedListener, StreamHandlerGetsThePeerAddress) {
    RuntimePool pool(2);
    ShardedListener lst(pool, *ringo::net::SocketAddr::parse("127.0.0.1:0"), &tell_peer_port);
    for (int i = 0; i < 8; ++i) {
        std::uint16_t local = 0;
        int seen = ask_peer_port(lst.port(), local);
        ASSERT_GT(local, 0);
        EXPECT_EQ(seen, local) << "connection " << i;
    }
    lst.stop();
    pool.shutdown();
}

// Reads one byte, then ends as `how` says without closing anything itself: 0 returns,
// 1 throws, 2 waits for a byte that never comes (cancelled by shutdown_now).
Task<void> leave_without_closing(ringo::net::TcpStream s, int how) {
    char c;
    auto r = co_await s.read(&c, 1);
    (void)r;
    if (how == 1)
        throw std::runtime_error("handler failed");
    if (how == 2) {
        auto r2 = co_await s.read(&c, 1);
        (void)r2;
    }
}

TEST(ShardedListener, StreamHandlerClosesTheConnectionOnEveryPath) {
    int before = ringo_test::open_fds();
    for (int how = 0; how < 3; ++how) {
        RuntimePool pool(2);
        std::atomic<int> started{0};
        ShardedListener lst(pool, *ringo::net::SocketAddr::parse("127.0.0.1:0"),
                            [how, &started](ringo::net::TcpStream s) {
                                started.fetch_add(1);
                                return leave_without_closing(std::move(s), how);
                            });
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(lst.port());
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        timeval tv{5, 0}; // a server that kept the connection open fails the test, not hangs it
        ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
        char c = 'x';
        ASSERT_EQ(::send(fd, &c, 1, 0), 1);
        if (how < 2) { // the server side closes: the client sees the end of the stream
            EXPECT_EQ(::recv(fd, &c, 1, 0), 0) << "how " << how;
        } else {
            while (started.load() == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        lst.stop();
        if (how == 2)
            pool.shutdown_now();
        else
            pool.shutdown();
        ::close(fd);
    }
    EXPECT_EQ(ringo_test::open_fds(), before);
}

} // namespace
