// net/resolve.hpp: numeric hosts without a lookup, "localhost" from /etc/hosts through the
// blocking pool, an unknown name as an error of the resolve category, bad input, the
// category's messages and conditions, and cancelled tasks. No test needs a network.
#include <ringo/net/resolve.hpp>
#include <ringo/net/tcp.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::ResolveError;
using ringo::net::SocketAddr;
using Addrs = std::vector<SocketAddr>;

namespace {

Result<Addrs> resolve_now(std::string host, std::uint16_t port, int family = AF_UNSPEC) {
    ringo::Runtime rt;
    return rt.block_on(ringo::net::resolve(std::move(host), port, family));
}

bool is_loopback(const SocketAddr& a) { return a.ip_string() == "127.0.0.1" || a.ip_string() == "::1"; }

TEST(Resolve, NumericHostsNeedNoLookup) {
    std::uint64_t jobs = ringo::blocking_pool_stats().jobs_done;
    Result<Addrs> v4 = resolve_now("127.0.0.1", 80);
    ASSERT_TRUE(v4.ok()) << v4.message();
    EXPECT_EQ(*v4, Addrs{SocketAddr::v4_loopback(80)});
    Result<Addrs> v6 = resolve_now("::1", 443);
    ASSERT_TRUE(v6.ok()) << v6.message();
    EXPECT_EQ(*v6, Addrs{SocketAddr::v6_loopback(443)});
    Result<Addrs> bracketed = resolve_now("[::1]", 443);
    EXPECT_EQ(bracketed.value_or(Addrs{}), Addrs{SocketAddr::v6_loopback(443)});
    Result<Addrs> narrowed = resolve_now("10.1.2.3", 9, AF_INET);
    EXPECT_EQ(narrowed.value_or(Addrs{}), Addrs{*SocketAddr::parse("10.1.2.3:9")});
    EXPECT_EQ(ringo::blocking_pool_stats().jobs_done, jobs); // nothing ran on the pool
}

TEST(Resolve, LocalhostComesFromTheHostsFile) {
    std::uint64_t jobs = ringo::blocking_pool_stats().jobs_done;
    Result<Addrs> any = resolve_now("localhost", 8080);
    ASSERT_TRUE(any.ok()) << any.message();
    ASSERT_FALSE(any->empty());
    for (const SocketAddr& a : *any) {
        EXPECT_TRUE(is_loopback(a)) << a;
        EXPECT_EQ(a.port(), 8080);
    }
    for (std::size_t i = 0; i < any->size(); ++i) // each address once
        for (std::size_t j = i + 1; j < any->size(); ++j)
            EXPECT_NE((*any)[i], (*any)[j]);
    Result<Addrs> v4 = resolve_now("localhost", 1, AF_INET);
    ASSERT_TRUE(v4.ok()) << v4.message();
    for (const SocketAddr& a : *v4)
        EXPECT_TRUE(a.is_v4()) << a;
    EXPECT_EQ(ringo::blocking_pool_stats().jobs_done, jobs + 2); // one job per name
}

TEST(Resolve, AnUnknownNameIsAnError) {
    Result<Addrs> r = resolve_now("no-such-host.invalid", 80);
    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(r.message().empty());
    std::printf("no-such-host.invalid: %s (%s %d)\n", r.message().c_str(), r.error().category().name(),
                r.error().value());
    if (r.error().category() == ringo::net::resolve_category()) {
        // No such name, or no resolver to ask (this sandbox may have no DNS at all).
        EXPECT_TRUE(r.error() == ResolveError::not_found || r.error() == ResolveError::try_again ||
                    r.error() == ResolveError::no_address || r.error() == ResolveError::failed)
            << r.message();
    } else {
        EXPECT_EQ(r.error().category(), std::system_category()) << r.message(); // EAI_SYSTEM's errno
    }
}

TEST(Resolve, BadInput) {
    EXPECT_EQ(resolve_now("", 80).error(), std::errc::invalid_argument);
    EXPECT_EQ(resolve_now(std::string("local\0host", 10), 80).error(), std::errc::invalid_argument);
    EXPECT_EQ(resolve_now("localhost", 80, AF_UNIX).error(), std::errc::address_family_not_supported);
    EXPECT_EQ(resolve_now("127.0.0.1", 80, AF_INET6).error(), ResolveError::no_address);
}

TEST(Resolve, TheCategorySaysWhatGetaddrinfoSays) {
    std::error_code e = ResolveError::not_found; // an error code enum
    EXPECT_STREQ(e.category().name(), "resolve");
    EXPECT_EQ(e.message(), ::gai_strerror(EAI_NONAME));
    EXPECT_EQ(make_error_code(ResolveError::try_again), std::errc::resource_unavailable_try_again);
    EXPECT_EQ(make_error_code(ResolveError::memory), std::errc::not_enough_memory);
    EXPECT_NE(make_error_code(ResolveError::not_found), std::errc::io_error);
    std::error_code sys = ringo::net::resolve_error(EAI_SYSTEM, EMFILE);
    EXPECT_EQ(sys, std::errc::too_many_files_open);
    EXPECT_EQ(ringo::net::resolve_error(EAI_FAIL, 0), ResolveError::failed);
}

Task<void> cancelled_then_resolve(Result<Addrs>* out) {
    co_await ringo::sleep_for(1h); // cancelled here
    *out = co_await ringo::net::resolve("localhost", 80);
}

// Spawns `t`, lets it run `spins` rounds, then cancels it and waits for its end.
Task<void> cancel_after(Task<void> t, int spins) {
    auto h = ringo::spawn(std::move(t));
    for (int k = 0; k < spins; ++k)
        co_await ringo::yield();
    h.cancel();
    co_await h;
}

TEST(Resolve, ACancelledTaskLooksNothingUp) {
    std::uint64_t jobs = ringo::blocking_pool_stats().jobs_done;
    Result<Addrs> r = std::make_error_code(std::errc::io_error);
    ringo::Runtime rt;
    rt.block_on(cancel_after(cancelled_then_resolve(&r), 1));
    EXPECT_EQ(r.error(), std::errc::operation_canceled);
    EXPECT_EQ(ringo::blocking_pool_stats().jobs_done, jobs);
}

Task<void> resolve_into(Result<Addrs>* out) { *out = co_await ringo::net::resolve("localhost", 80); }

// Cancelled while getaddrinfo runs (or before it starts): the task ends either way, with the
// lookup's answer or ECANCELED.
TEST(Resolve, CancelledWhileLookingUp) {
    ringo::Runtime rt;
    for (int i = 0; i < 20; ++i) {
        Result<Addrs> r = std::make_error_code(std::errc::io_error);
        rt.block_on(cancel_after(resolve_into(&r), i % 3));
        EXPECT_TRUE(r.ok() || r.error() == std::errc::operation_canceled) << r.message();
    }
}

Task<int> many_at_once() {
    std::vector<ringo::JoinHandle<Result<Addrs>>> hs;
    for (int i = 0; i < 8; ++i)
        hs.push_back(ringo::spawn(ringo::net::resolve("localhost", static_cast<std::uint16_t>(1000 + i))));
    int ok = 0;
    for (int i = 0; i < 8; ++i) {
        Result<Addrs> r = co_await hs[static_cast<std::size_t>(i)];
        if (r && !r->empty() && r->front().port() == 1000 + i)
            ++ok;
    }
    co_return ok;
}

TEST(Resolve, ManyLookupsAtOnce) {
    ringo::Runtime rt;
    EXPECT_EQ(rt.block_on(many_at_once()), 8);
}

// --- docs/net.md, "Resolving names": the example as it stands there ----------------------
namespace docs_example {
// Connects to the first address of `host` that answers.
ringo::Task<ringo::Result<ringo::net::TcpStream>> connect_to(std::string host, std::uint16_t port) {
    auto addrs = co_await ringo::net::resolve(std::move(host), port);
    if (!addrs)
        co_return addrs.error(); // "Name or service not known", ...
    std::error_code last = std::make_error_code(std::errc::host_unreachable);
    for (const ringo::net::SocketAddr& a : *addrs) {
        auto s = co_await ringo::net::TcpStream::connect(a, std::chrono::seconds(5));
        if (s)
            co_return s;
        last = s.error(); // try the next address
    }
    co_return last;
}
} // namespace docs_example

Task<void> connect_by_name() {
    Result<ringo::net::TcpListener> l = co_await ringo::net::TcpListener::bind(SocketAddr::v4_loopback(0));
    EXPECT_TRUE(l.ok());
    std::uint16_t port = l->local_addr()->port();
    Result<ringo::net::TcpStream> s = co_await docs_example::connect_to("localhost", port);
    EXPECT_TRUE(s.ok()) << s.message();
    Result<ringo::net::TcpStream> none = co_await docs_example::connect_to("no-such-host.invalid", port);
    EXPECT_FALSE(none.ok());
}

TEST(ResolveDocs, ExampleRuns) {
    ringo::Runtime rt;
    rt.block_on(connect_by_name());
}

} // namespace
