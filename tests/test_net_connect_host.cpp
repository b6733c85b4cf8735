// net/tcp.hpp: TcpStream::connect to a host and port, or a "host:port" text: numeric hosts,
// "localhost" through the resolver with each of its addresses tried in turn, bracketed IPv6,
// texts that are refused before any lookup, the last address's error, an unknown name, one
// deadline for the whole attempt, a text whose storage is gone before the Task runs, and a
// cancelled task. No test needs a network beyond loopback.
#include <ringo/net/resolve.hpp>
#include <ringo/net/tcp.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net_helpers.hpp"

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;

namespace {

using ringo_test::run;

// Connects with `connect` (given the listener's port), accepts, and checks that a byte goes
// through: the stream is connected to this listener.
template <class Connect>
Task<void> connects_to_listener(SocketAddr where, Connect connect) {
    Result<TcpListener> l = co_await TcpListener::bind(where);
    EXPECT_TRUE(l.ok()) << l.message();
    if (!l)
        co_return;
    const std::uint16_t port = l->local_addr()->port();
    Result<TcpStream> s = co_await connect(port);
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s)
        co_return;
    auto c = co_await l->accept();
    EXPECT_TRUE(c.ok()) << c.message();
    if (!c)
        co_return;
    Result<void> w = co_await s->write_all(std::string_view("x"));
    EXPECT_TRUE(w.ok()) << w.message();
    char b = 0;
    Result<void> r = co_await c->stream.read_exact(&b, 1);
    EXPECT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(b, 'x');
}

TEST(TcpConnectHost, NumericHostAndPort) {
    run(connects_to_listener(SocketAddr::v4_loopback(0),
                             [](std::uint16_t port) { return TcpStream::connect(std::string("127.0.0.1"), port); }));
}

TEST(TcpConnectHost, HostPortText) {
    run(connects_to_listener(SocketAddr::v4_loopback(0), [](std::uint16_t port) {
        return TcpStream::connect("127.0.0.1:" + std::to_string(port));
    }));
}

TEST(TcpConnectHost, BracketedIPv6Text) {
    if (!ringo_test::have_ipv6_loopback())
        GTEST_SKIP() << "no IPv6 loopback here";
    run(connects_to_listener(SocketAddr::v6_loopback(0),
                             [](std::uint16_t port) { return TcpStream::connect("[::1]:" + std::to_string(port)); }));
}

// A listener on 127.0.0.1 only: where "localhost" also names ::1 (most /etc/hosts), the
// address that refuses is passed over for the next one, in whichever order they come.
TEST(TcpConnectHost, ANameTriesEachOfItsAddresses) {
    Result<std::vector<SocketAddr>> addrs = run(ringo::net::resolve("localhost", 1));
    ASSERT_TRUE(addrs.ok()) << addrs.message();
    bool has_v4 = false;
    for (const SocketAddr& a : *addrs)
        has_v4 |= a.is_v4();
    if (!has_v4)
        GTEST_SKIP() << "localhost has no IPv4 address here";
    std::printf("localhost: %zu addresses, first %s\n", addrs->size(), addrs->front().ip_string().c_str());
    run(connects_to_listener(SocketAddr::v4_loopback(0),
                             [](std::uint16_t port) { return TcpStream::connect("localhost", port); }));
    run(connects_to_listener(SocketAddr::v4_loopback(0), [](std::uint16_t port) {
        return TcpStream::connect("localhost:" + std::to_string(port), 5s);
    }));
}

// Each address in turn: one that refuses (a closed port) is passed over for the next.
TEST(TcpConnectHost, EachAddressInTurn) {
    run([]() -> Task<void> {
        SocketAddr closed = co_await ringo_test::refusing_address();
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        // (The lists are made before the co_await: GCC 12 rejects a braced list inside one.)
        std::vector<SocketAddr> refused_then_listening{closed, *l->local_addr()};
        Result<TcpStream> s = co_await TcpStream::connect(std::move(refused_then_listening));
        EXPECT_TRUE(s.ok()) << s.message();
        auto c = co_await l->accept();
        EXPECT_TRUE(c.ok()) << c.message();
        if (s && c) {
            EXPECT_EQ(*s->local_addr(), c->peer); // the stream accepted is this one
        }
        std::vector<SocketAddr> both_refuse{closed, closed};
        Result<TcpStream> none = co_await TcpStream::connect(std::move(both_refuse));
        EXPECT_EQ(none.error(), std::errc::connection_refused) << none.message();
        std::vector<SocketAddr> no_address;
        Result<TcpStream> empty = co_await TcpStream::connect(std::move(no_address));
        EXPECT_EQ(empty.error(), std::errc::invalid_argument) << empty.message();
    }());
}

TEST(TcpConnectHost, MalformedTextsAreRefusedWithoutALookup) {
    const std::uint64_t jobs = ringo::blocking_pool_stats().jobs_done;
    for (std::string_view bad : {"localhost", "localhost:", ":80", "::1:80", "[::1]80", "[::1]:", "[]:80", "[::1",
                                 "localhost:65536", "localhost:8x", "localhost:-1", "localhost:123456", ""}) {
        Result<TcpStream> s = run(TcpStream::connect(bad));
        EXPECT_EQ(s.error(), std::errc::invalid_argument) << "'" << bad << "': " << s.message();
        Result<TcpStream> t = run(TcpStream::connect(bad, 1s));
        EXPECT_EQ(t.error(), std::errc::invalid_argument) << "'" << bad << "': " << t.message();
    }
    EXPECT_EQ(ringo::blocking_pool_stats().jobs_done, jobs); // no name was looked up
}

// The text is read when connect is called: the Task may run after its storage is gone.
TEST(TcpConnectHost, TheTextMayGoBeforeTheTaskRuns) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        Task<Result<TcpStream>> t;
        {
            std::string text = "127.0.0.1:" + std::to_string(l->local_addr()->port());
            t = TcpStream::connect(std::string_view(text));
            text.assign(text.size(), 'z'); // what the view saw is overwritten, then freed
        }
        Result<TcpStream> s = co_await std::move(t);
        EXPECT_TRUE(s.ok()) << s.message();
    }());
}

TEST(TcpConnectHost, RefusedIsTheLastAddresssError) {
    run([]() -> Task<void> {
        SocketAddr gone = co_await ringo_test::refusing_address();
        const std::uint16_t port = gone.port();
        Result<TcpStream> s = co_await TcpStream::connect(std::string("127.0.0.1"), port);
        EXPECT_EQ(s.error(), std::errc::connection_refused) << s.message();
        Result<TcpStream> t = co_await TcpStream::connect("127.0.0.1:" + std::to_string(port), 5s);
        EXPECT_EQ(t.error(), std::errc::connection_refused) << t.message();
    }());
}

TEST(TcpConnectHost, AnUnknownNameIsTheResolversError) {
    Result<TcpStream> s = run(TcpStream::connect("no-such-host.invalid", 80));
    ASSERT_FALSE(s.ok());
    // No such name, or no resolver to ask (this sandbox may have no DNS): getaddrinfo's own
    // error either way, or its errno for EAI_SYSTEM.
    EXPECT_TRUE(s.error().category() == ringo::net::resolve_category() ||
                s.error().category() == std::system_category())
        << s.message();
}

// One deadline for the whole attempt: a listener whose accept queue is full drops new SYNs,
// so the connect hangs until the deadline, which then ends the whole call.
TEST(TcpConnectHost, OneDeadlineForTheWholeAttempt) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0), {.backlog = 0});
        EXPECT_TRUE(l.ok());
        const std::uint16_t port = l->local_addr()->port();
        std::vector<TcpStream> queued;
        for (int i = 0; i < 8; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            Result<TcpStream> s = co_await TcpStream::connect("127.0.0.1:" + std::to_string(port), 50ms);
            if (!s) {
                EXPECT_EQ(s.error(), std::errc::timed_out) << s.message();
                auto took = std::chrono::steady_clock::now() - t0;
                EXPECT_GE(took, 45ms);
                EXPECT_LT(took, 5s);
                co_return;
            }
            queued.push_back(std::move(*s));
        }
        ADD_FAILURE() << "every connect went through";
    }());
    Result<TcpStream> z = run(TcpStream::connect(std::string("127.0.0.1"), 9, 0ms));
    EXPECT_EQ(z.error(), std::errc::timed_out) << z.message();
}

TEST(TcpConnectHost, ACancelledTaskConnectsNowhere) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        const std::uint16_t port = l->local_addr()->port();
        auto h = ringo::spawn([](std::uint16_t p) -> Task<Result<TcpStream>> {
            co_return co_await TcpStream::connect(std::string("localhost"), p);
        }(port));
        h.cancel(); // before it first runs
        Result<TcpStream> s = co_await h;
        EXPECT_EQ(s.error(), std::errc::operation_canceled) << s.message();
    }());
}

} // namespace
