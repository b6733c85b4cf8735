// net/address.hpp: SocketAddr. Parsing and printing (round trips, every malformed form we
// could think of), from() with short lengths and foreign families, comparison and hashing,
// and the addresses real sockets report: IPv4 and IPv6 loopback, a Unix path in a temporary
// directory, a Linux abstract name, a UDP sender seen by recvfrom, an accepted peer.
#include <gtest/gtest.h>

#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_set>

#include <ringo/net/address.hpp>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
using ringo::net::SocketAddr;
namespace op = ringo::op;
using namespace ringo_test;

namespace {

static_assert(std::is_trivially_copyable_v<SocketAddr>);
static_assert(SocketAddr::capacity() == sizeof(sockaddr_storage));

constexpr std::size_t path_offset = offsetof(sockaddr_un, sun_path);

std::string round_trip(std::string_view text) {
    auto a = SocketAddr::parse(text);
    return a ? a->to_string() : "(nullopt)";
}

// --- parse ----------------------------------------------------------------------------------

TEST(SocketAddr, ParseRoundTrips) {
    for (const char* s :
         {"1.2.3.4:80", "0.0.0.0:0", "255.255.255.255:65535", "127.0.0.1:8080", "[::1]:8080", "[::]:0",
          "[2001:db8::1]:443", "[::ffff:1.2.3.4]:80", "[fe80::1%2]:80", "[fe80::abcd:1%4294967295]:65535"})
        EXPECT_EQ(round_trip(s), s);
}

TEST(SocketAddr, ParseFields) {
    auto a = SocketAddr::parse("10.1.2.3:443");
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->is_v4());
    EXPECT_EQ(a->family(), AF_INET);
    EXPECT_EQ(a->size(), sizeof(sockaddr_in));
    EXPECT_EQ(a->port(), 443);
    EXPECT_EQ(a->ip_string(), "10.1.2.3");
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->data());
    EXPECT_EQ(in->sin_addr.s_addr, htonl(0x0a010203));
    EXPECT_EQ(in->sin_port, htons(443));

    auto b = SocketAddr::parse("[fe80::1%7]:80");
    ASSERT_TRUE(b);
    EXPECT_TRUE(b->is_v6());
    EXPECT_EQ(b->size(), sizeof(sockaddr_in6));
    EXPECT_EQ(b->scope_id(), 7u);
    EXPECT_EQ(b->port(), 80);
    EXPECT_EQ(b->ip_string(), "fe80::1%7");
    EXPECT_EQ(reinterpret_cast<const sockaddr_in6*>(b->data())->sin6_scope_id, 7u);
}

TEST(SocketAddr, ParseNormalises) {
    EXPECT_EQ(round_trip("[2001:DB8:0:0::1]:80"), "[2001:db8::1]:80");
    EXPECT_EQ(round_trip("1.2.3.4:00080"), "1.2.3.4:80");
    EXPECT_EQ(round_trip("[::1%0]:80"), "[::1]:80"); // scope 0 is no scope
}

TEST(SocketAddr, ParseScopeByInterfaceName) {
    unsigned lo = ::if_nametoindex("lo");
    if (lo == 0)
        GTEST_SKIP() << "no interface named lo";
    auto a = SocketAddr::parse("[fe80::1%lo]:80");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->scope_id(), lo);
    EXPECT_EQ(a->to_string(), "[fe80::1%" + std::to_string(lo) + "]:80");
    auto b = SocketAddr::parse_ip("fe80::2%lo", 9);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->scope_id(), lo);
}

TEST(SocketAddr, ParseRejectsMalformed) {
    const std::string too_long(1000, '1');
    for (std::string_view s : {"",
                               ":",
                               ":80",
                               "80",
                               "1.2.3.4",
                               "1.2.3.4:",
                               "1.2.3.4:65536",
                               "1.2.3.4:99999",
                               "1.2.3.4:123456",
                               "1.2.3.4:-1",
                               "1.2.3.4:+80",
                               "1.2.3.4: 80",
                               " 1.2.3.4:80",
                               "1.2.3.4:80 ",
                               "1.2.3.4 :80",
                               "1.2.3.4:8a",
                               "1.2.3.4:0x50",
                               "1.2.3:80",
                               "1.2.3.4.5:80",
                               "256.1.1.1:80",
                               "1.2.3.-4:80",
                               "a.b.c.d:80",
                               "localhost:80",
                               "1.2.3.4:80:80",
                               "1.2.3.4%lo:80",
                               "1.2.3.4%1:80",
                               "::1:80",
                               "::1",
                               "[::1]",
                               "[::1]:",
                               "[::1]80",
                               "[::1:80",
                               "::1]:80",
                               "[1.2.3.4]:80",
                               "[]:80",
                               "[::1%]:80",
                               "[::1%no-such-if0]:80",
                               "[::1%4294967296]:80",
                               "[::1%99999999999]:80",
                               "[::1%lo x]:80",
                               "[::1]:80:80",
                               "[[::1]]:80",
                               "[::1]]:80",
                               "[::g]:80",
                               "[1::2::3]:80",
                               "[:::1]:80",
                               "[::1]:65536",
                               "[::1]:",
                               "[ ::1]:80",
                               "[::1] :80",
                               "[::1]:8 0",
                               "[::1%1%2]:80",
                               "*:80",
                               "0:80",
                               "[*]:80"})
        EXPECT_FALSE(SocketAddr::parse(s)) << "'" << s << "'";
    // NUL bytes would end the text early for the C parsers.
    EXPECT_FALSE(SocketAddr::parse(std::string_view("1.2.3.4\0:80", 11)));
    EXPECT_FALSE(SocketAddr::parse(std::string_view("1.2.3.4:80\0", 11)));
    EXPECT_FALSE(SocketAddr::parse(std::string_view("[::1\0]:80", 9)));
    EXPECT_FALSE(SocketAddr::parse(std::string_view("[::1%lo\0x]:80", 13)));
    // Long inputs.
    EXPECT_FALSE(SocketAddr::parse(too_long + ":80"));
    EXPECT_FALSE(SocketAddr::parse("[" + std::string(200, ':') + "]:80"));
    EXPECT_FALSE(SocketAddr::parse("[::1%" + std::string(100, 'x') + "]:80"));
    EXPECT_FALSE(SocketAddr::parse("1.2.3.4:" + too_long));
}

TEST(SocketAddr, ParseIp) {
    auto a = SocketAddr::parse_ip("10.0.0.1", 7);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->to_string(), "10.0.0.1:7");
    auto b = SocketAddr::parse_ip("::1", 9);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->to_string(), "[::1]:9");
    auto c = SocketAddr::parse_ip("fe80::1%3", 65535);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->to_string(), "[fe80::1%3]:65535");
    for (std::string_view s : {"", "1.2.3.4:80", "[::1]", "[::1]:80", "::1 ", " ::1", "fe80::1%", "1.2.3.4%1", "1.2.3",
                               "example.com", "::1%%1", "1.2.3.4/24"})
        EXPECT_FALSE(SocketAddr::parse_ip(s, 1)) << "'" << s << "'";
    EXPECT_FALSE(SocketAddr::parse_ip(std::string_view("::1\0", 4), 1));
}

// --- factories, fields ----------------------------------------------------------------------

TEST(SocketAddr, Factories) {
    EXPECT_EQ(SocketAddr::v4(INADDR_LOOPBACK, 80).to_string(), "127.0.0.1:80");
    EXPECT_EQ(SocketAddr::v4(0x01020304, 5).to_string(), "1.2.3.4:5");
    EXPECT_EQ(SocketAddr::v4_any(0).to_string(), "0.0.0.0:0");
    EXPECT_EQ(SocketAddr::v4_loopback(65535).to_string(), "127.0.0.1:65535");
    EXPECT_EQ(SocketAddr::v6_any(5).to_string(), "[::]:5");
    EXPECT_EQ(SocketAddr::v6_loopback(6).to_string(), "[::1]:6");
    EXPECT_EQ(SocketAddr::v6(in6addr_loopback, 6, 3).to_string(), "[::1%3]:6");
    EXPECT_EQ(SocketAddr::v6_loopback(0).size(), sizeof(sockaddr_in6));
    EXPECT_EQ(SocketAddr::v4_any(0).size(), sizeof(sockaddr_in));
}

TEST(SocketAddr, EmptyAddress) {
    SocketAddr e;
    EXPECT_EQ(e.family(), AF_UNSPEC);
    EXPECT_EQ(e.size(), 0u);
    EXPECT_FALSE(e.is_v4() || e.is_v6() || e.is_unix());
    EXPECT_EQ(e.port(), 0);
    EXPECT_EQ(e.ip_string(), "");
    EXPECT_EQ(e.to_string(), "(unspecified)");
    e.set_port(80); // nothing to set
    EXPECT_EQ(e.port(), 0);
    EXPECT_EQ(e, SocketAddr());
    EXPECT_NE(e, SocketAddr::v4_any(0));
}

TEST(SocketAddr, SetPort) {
    auto a = SocketAddr::v4_loopback(1);
    a.set_port(65535);
    EXPECT_EQ(a.port(), 65535);
    EXPECT_EQ(a.to_string(), "127.0.0.1:65535");
    auto b = SocketAddr::v6_loopback(1);
    b.set_port(2);
    EXPECT_EQ(b.to_string(), "[::1]:2");
    auto u = *SocketAddr::unix_path("/x");
    u.set_port(9);
    EXPECT_EQ(u.port(), 0);
    EXPECT_EQ(u.to_string(), "/x");
}

TEST(SocketAddr, UnixPaths) {
    auto a = SocketAddr::unix_path("/tmp/a.sock");
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->is_unix());
    EXPECT_EQ(a->size(), path_offset + 12);
    EXPECT_EQ(a->to_string(), "/tmp/a.sock");
    EXPECT_EQ(a->ip_string(), "");
    EXPECT_EQ(a->port(), 0);
    EXPECT_EQ(SocketAddr::unix_path("@x")->to_string(), "@x"); // a file named "@x"
    EXPECT_NE(*SocketAddr::unix_path("@x"), *SocketAddr::unix_abstract("x"));
    const std::string longest(sizeof(sockaddr_un::sun_path) - 1, 'p');
    ASSERT_TRUE(SocketAddr::unix_path(longest));
    EXPECT_EQ(SocketAddr::unix_path(longest)->to_string(), longest);
    EXPECT_EQ(SocketAddr::unix_path(longest)->size(), sizeof(sockaddr_un));
    EXPECT_FALSE(SocketAddr::unix_path(longest + "p"));
    EXPECT_FALSE(SocketAddr::unix_path(""));
    EXPECT_FALSE(SocketAddr::unix_path(std::string_view("a\0b", 3)));
}

TEST(SocketAddr, UnixAbstractNames) {
    auto a = SocketAddr::unix_abstract("ringo");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->size(), path_offset + 1 + 5);
    EXPECT_EQ(a->to_string(), "@ringo");
    EXPECT_EQ(reinterpret_cast<const sockaddr_un*>(a->data())->sun_path[0], '\0');
    // A leading NUL in unix_path means the same.
    EXPECT_EQ(*SocketAddr::unix_path(std::string_view("\0ringo", 6)), *a);
    // Any bytes, up to 107 of them; the empty name too.
    auto nul = SocketAddr::unix_abstract(std::string_view("a\0b", 3));
    ASSERT_TRUE(nul);
    EXPECT_EQ(nul->to_string(), std::string("@a\0b", 4));
    EXPECT_NE(*nul, *SocketAddr::unix_abstract("a"));
    EXPECT_EQ(SocketAddr::unix_abstract("")->to_string(), "@");
    const std::string longest(sizeof(sockaddr_un::sun_path) - 1, 'n');
    EXPECT_TRUE(SocketAddr::unix_abstract(longest));
    EXPECT_FALSE(SocketAddr::unix_abstract(longest + "n"));
}

// --- from -------------------------------------------------------------------------------------

TEST(SocketAddr, FromChecksFamilyAndLength) {
    sockaddr_storage ss{};
    auto* sa = reinterpret_cast<sockaddr*>(&ss);
    EXPECT_FALSE(SocketAddr::from(nullptr, sizeof ss));
    ss.ss_family = AF_INET;
    EXPECT_FALSE(SocketAddr::from(sa, 0));
    EXPECT_FALSE(SocketAddr::from(sa, 1));
    EXPECT_FALSE(SocketAddr::from(sa, sizeof(sockaddr_in) - 1));
    ASSERT_TRUE(SocketAddr::from(sa, sizeof(sockaddr_in)));
    auto big = SocketAddr::from(sa, sizeof ss); // longer than sockaddr_in: kept at its size
    ASSERT_TRUE(big);
    EXPECT_EQ(big->size(), sizeof(sockaddr_in));
    EXPECT_FALSE(SocketAddr::from(sa, sizeof ss + 1));
    ss.ss_family = AF_INET6;
    EXPECT_FALSE(SocketAddr::from(sa, sizeof(sockaddr_in)));
    EXPECT_FALSE(SocketAddr::from(sa, sizeof(sockaddr_in6) - 1));
    EXPECT_TRUE(SocketAddr::from(sa, sizeof(sockaddr_in6)));
    for (int f : {AF_UNSPEC, AF_PACKET, AF_NETLINK, AF_BLUETOOTH, 0xffff}) {
        ss.ss_family = static_cast<sa_family_t>(f);
        EXPECT_FALSE(SocketAddr::from(sa, sizeof ss)) << "family " << f;
    }
    ss.ss_family = AF_UNIX;
    EXPECT_FALSE(SocketAddr::from(sa, 1));
    auto unnamed = SocketAddr::from(sa, sizeof(sa_family_t));
    ASSERT_TRUE(unnamed);
    EXPECT_EQ(unnamed->to_string(), "(unnamed)");
}

TEST(SocketAddr, FromCopiesAndNormalises) {
    // IPv4 padding does not count.
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(99);
    in.sin_addr.s_addr = htonl(0x7f000002);
    std::memset(in.sin_zero, 0xab, sizeof in.sin_zero);
    auto a = SocketAddr::from(reinterpret_cast<sockaddr*>(&in), sizeof in);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->to_string(), "127.0.0.2:99");
    EXPECT_EQ(*a, SocketAddr::v4(0x7f000002, 99));
    EXPECT_EQ(std::hash<SocketAddr>{}(*a), std::hash<SocketAddr>{}(SocketAddr::v4(0x7f000002, 99)));
    // A Unix path given with the whole sockaddr_un: cut to its NUL, bytes after it ignored.
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::memset(un.sun_path, 'z', sizeof un.sun_path);
    std::memcpy(un.sun_path, "/run/x", 7);
    auto u = SocketAddr::from(reinterpret_cast<sockaddr*>(&un), sizeof un);
    ASSERT_TRUE(u);
    EXPECT_EQ(u->size(), path_offset + 7);
    EXPECT_EQ(u->to_string(), "/run/x");
    EXPECT_EQ(*u, *SocketAddr::unix_path("/run/x"));
    // A path without its NUL keeps the length given.
    auto v = SocketAddr::from(reinterpret_cast<sockaddr*>(&un), static_cast<socklen_t>(path_offset + 4));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->size(), path_offset + 4);
    EXPECT_EQ(v->to_string(), "/run");
    EXPECT_EQ(*v, *SocketAddr::unix_path("/run"));
    // An abstract name is all of its bytes.
    std::memset(un.sun_path, 0, sizeof un.sun_path);
    std::memcpy(un.sun_path + 1, "ab", 2);
    auto w = SocketAddr::from(reinterpret_cast<sockaddr*>(&un), static_cast<socklen_t>(path_offset + 4));
    ASSERT_TRUE(w);
    EXPECT_EQ(w->to_string(), std::string("@ab\0", 4));
}

// --- comparison -----------------------------------------------------------------------------

TEST(SocketAddr, EqualityAndHash) {
    EXPECT_EQ(*SocketAddr::parse("1.2.3.4:80"), SocketAddr::v4(0x01020304, 80));
    EXPECT_NE(*SocketAddr::parse("1.2.3.4:80"), SocketAddr::v4(0x01020304, 81));
    EXPECT_NE(*SocketAddr::parse("1.2.3.4:80"), SocketAddr::v4(0x01020305, 80));
    EXPECT_NE(*SocketAddr::parse("1.2.3.4:80"), *SocketAddr::parse("[::ffff:1.2.3.4]:80"));
    EXPECT_NE(*SocketAddr::parse("[fe80::1%1]:80"), *SocketAddr::parse("[fe80::1%2]:80"));
    EXPECT_EQ(*SocketAddr::parse("[::1]:80"), SocketAddr::v6_loopback(80));
    EXPECT_NE(*SocketAddr::unix_path("/a"), *SocketAddr::unix_path("/b"));
    std::unordered_set<SocketAddr> set;
    set.insert(*SocketAddr::parse("1.2.3.4:80"));
    set.insert(SocketAddr::v4(0x01020304, 80));
    set.insert(SocketAddr::v6_loopback(80));
    set.insert(*SocketAddr::unix_abstract("x"));
    set.insert(*SocketAddr::unix_path(std::string_view("\0x", 2)));
    EXPECT_EQ(set.size(), 3u);
    EXPECT_EQ(set.count(*SocketAddr::parse("[::1]:80")), 1u);
}

TEST(SocketAddr, Streams) {
    std::ostringstream os;
    os << SocketAddr::v6_loopback(80) << ' ' << *SocketAddr::unix_abstract("n") << ' ' << SocketAddr();
    EXPECT_EQ(os.str(), "[::1]:80 @n (unspecified)");
}

// --- real sockets ---------------------------------------------------------------------------

SocketAddr local_name(int fd) {
    SocketAddr a;
    if (::getsockname(fd, a.data(), a.out_size()) != 0)
        return {};
    return a;
}
SocketAddr peer_name(int fd) {
    SocketAddr a;
    if (::getpeername(fd, a.data(), a.out_size()) != 0)
        return {};
    return a;
}

TEST(SocketAddr, BindV4LoopbackPortZero) {
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    auto want = SocketAddr::v4_loopback(0);
    ASSERT_EQ(::bind(s, want.data(), want.size()), 0);
    SocketAddr got = local_name(s);
    EXPECT_TRUE(got.is_v4());
    EXPECT_EQ(got.size(), sizeof(sockaddr_in));
    EXPECT_NE(got.port(), 0);
    EXPECT_EQ(got.ip_string(), "127.0.0.1");
    EXPECT_EQ(got.to_string(), "127.0.0.1:" + std::to_string(got.port()));
    EXPECT_EQ(*SocketAddr::parse(got.to_string()), got);
    got.set_port(0);
    EXPECT_EQ(got, want);
}

// The addresses go through ringo's own operations: bind, listen, connect, and accept filling
// a SocketAddr out-parameter.
Task<void> accept_and_compare(const SocketAddr& where, int domain) {
    Fd srv(::socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(co_await op::bind(srv, where.data(), where.size()), 0);
    EXPECT_EQ(co_await op::listen(srv, 4), 0);
    SocketAddr bound = local_name(srv);
    if (where.is_unix())
        EXPECT_EQ(bound, where);
    else
        EXPECT_NE(bound.port(), 0);
    Fd cli(::socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(co_await op::connect(cli, bound.data(), bound.size()), 0);
    SocketAddr peer;
    Fd conn(co_await op::accept(srv, peer.data(), peer.out_size(), SOCK_CLOEXEC));
    EXPECT_GE(conn.get(), 0);
    EXPECT_EQ(peer, local_name(cli)) << peer << " vs " << local_name(cli);
    EXPECT_EQ(peer_name(cli), bound);
    EXPECT_EQ(peer_name(conn), peer);
}

TEST(SocketAddr, V4ConnectionThroughOperations) {
    Runtime rt;
    rt.block_on(accept_and_compare(SocketAddr::v4_loopback(0), AF_INET));
}

TEST(SocketAddr, V6LoopbackConnection) {
    Fd probe(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
    auto lo = SocketAddr::v6_loopback(0);
    if (probe < 0 || ::bind(probe, lo.data(), lo.size()) != 0)
        GTEST_SKIP() << "no IPv6 loopback here (" << std::strerror(errno) << ")";
    EXPECT_EQ(local_name(probe).ip_string(), "::1");
    EXPECT_EQ(local_name(probe).to_string(), "[::1]:" + std::to_string(local_name(probe).port()));
    Runtime rt;
    rt.block_on(accept_and_compare(lo, AF_INET6));
}

TEST(SocketAddr, UnixPathConnection) {
    TempDir dir;
    std::string path = dir.file("s.sock");
    auto where = SocketAddr::unix_path(path);
    ASSERT_TRUE(where);
    Runtime rt;
    rt.block_on(accept_and_compare(*where, AF_UNIX));
    // The client was not bound: the server saw it unnamed.
    Fd c(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(local_name(c).to_string(), "(unnamed)");
    EXPECT_EQ(local_name(c).size(), sizeof(sa_family_t));
}

TEST(SocketAddr, UnixAbstractConnection) {
    std::string name = "ringo-test-address-" + std::to_string(::getpid());
    auto where = SocketAddr::unix_abstract(name);
    ASSERT_TRUE(where);
    Runtime rt;
    rt.block_on(accept_and_compare(*where, AF_UNIX));
    Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::bind(s, where->data(), where->size()), 0);
    EXPECT_EQ(local_name(s).to_string(), "@" + name);
}

// docs/net.md's example, as it is there.
ringo::Task<std::string> accept_one() {
    SocketAddr where = SocketAddr::v4_loopback(0);
    ringo::Fd srv(co_await ringo::op::socket(where.family(), SOCK_STREAM | SOCK_CLOEXEC));
    int r = co_await ringo::op::bind(srv, where.data(), where.size());
    if (r == 0)
        r = co_await ringo::op::listen(srv, 16);
    if (r < 0 || ::getsockname(srv.get(), where.data(), where.out_size()) != 0)
        co_return ""; // where.port() is now the chosen port
    ringo::Fd cli(co_await ringo::op::socket(where.family(), SOCK_STREAM | SOCK_CLOEXEC));
    if (co_await ringo::op::connect(cli, where.data(), where.size()) < 0)
        co_return "";
    SocketAddr peer; // empty: an out-parameter
    ringo::Fd conn(co_await ringo::op::accept(srv, peer.data(), peer.out_size()));
    co_return conn ? peer.to_string() : ""; // "127.0.0.1:40532"
}

TEST(SocketAddr, DocExample) {
    Runtime rt;
    std::string peer = rt.block_on(accept_one());
    ASSERT_EQ(peer.rfind("127.0.0.1:", 0), 0u) << peer;
    auto p = SocketAddr::parse(peer);
    ASSERT_TRUE(p);
    EXPECT_NE(p->port(), 0);
}

TEST(SocketAddr, RecvfromSender) {
    UdpSocket rx;
    Fd tx(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    auto lo = SocketAddr::v4_loopback(0);
    ASSERT_EQ(::bind(tx, lo.data(), lo.size()), 0);
    auto to = SocketAddr::from(rx.sa(), sizeof rx.addr);
    ASSERT_TRUE(to);
    ASSERT_EQ(::sendto(tx, "hi", 2, 0, to->data(), to->size()), 2);
    SocketAddr from;
    char buf[4];
    ASSERT_EQ(::recvfrom(rx.fd, buf, sizeof buf, 0, from.data(), from.out_size()), 2);
    EXPECT_EQ(from, local_name(tx));
    EXPECT_EQ(from.ip_string(), "127.0.0.1");
}

} // namespace
