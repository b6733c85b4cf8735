// net/udp.hpp and UnixDatagram (net/unix.hpp): datagrams over IPv4 and IPv6 loopback with the
// sender's address checked, connected sockets, a datagram longer than the buffer, a connected
// socket whose peer has gone (ECONNREFUSED), a cancelled receive that leaves nothing open, no
// allocation per send or receive, and Unix-domain datagrams (pair, path, abstract names).
#include <ringo/net/udp.hpp>
#include <ringo/net/unix.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "alloc_counter.hpp" // replaces operator new: include it in one file of a program
#include "helpers.hpp"
#include "net_helpers.hpp"

using ringo::Result;
using ringo::Task;
using ringo::net::Datagram;
using ringo::net::SocketAddr;
using ringo::net::UdpSocket;
using ringo::net::UnixDatagram;

namespace {

using ringo_test::have_ipv6_loopback;
using ringo_test::open_fds;
using ringo_test::run;

// a sends to b, b answers to the address it saw: both sides check the other's address.
Task<void> round_trip(SocketAddr loopback) {
    Result<UdpSocket> a = co_await UdpSocket::bind(loopback);
    Result<UdpSocket> b = co_await UdpSocket::bind(loopback);
    EXPECT_TRUE(a.ok() && b.ok()) << a.message() << " " << b.message();
    SocketAddr at_a = *a->local_addr(), at_b = *b->local_addr();
    EXPECT_NE(at_a.port(), 0);
    EXPECT_EQ(at_a.family(), loopback.family());
    Result<std::size_t> s = co_await a->send_to(std::string_view("ping"), at_b);
    EXPECT_EQ(s.value_or(0), 4u) << s.message();
    char buf[64];
    Result<Datagram> d = co_await b->recv_from(buf, sizeof buf);
    EXPECT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d->size, 4u);
    EXPECT_FALSE(d->truncated);
    EXPECT_EQ(std::string(buf, d->size), "ping");
    EXPECT_EQ(d->peer, at_a);
    Result<std::size_t> s2 = co_await b->send_to(std::string_view("pong!"), d->peer);
    EXPECT_EQ(s2.value_or(0), 5u);
    Result<Datagram> d2 = co_await a->recv_from(buf, sizeof buf);
    EXPECT_EQ(d2->size, 5u);
    EXPECT_EQ(std::string(buf, d2->size), "pong!");
    EXPECT_EQ(d2->peer, at_b);
    EXPECT_EQ(a->peer_addr().error(), std::errc::not_connected);
}

TEST(Udp, RoundTripIPv4) { run(round_trip(SocketAddr::v4_loopback(0))); }

TEST(Udp, RoundTripIPv6) {
    if (!have_ipv6_loopback())
        GTEST_SKIP() << "no IPv6 loopback here";
    run(round_trip(SocketAddr::v6_loopback(0)));
}

Task<void> connected_pair() {
    Result<UdpSocket> a = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> b = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<void> ca = co_await a->connect(*b->local_addr());
    Result<void> cb = co_await b->connect(*a->local_addr());
    EXPECT_TRUE(ca.ok() && cb.ok());
    EXPECT_EQ(*a->peer_addr(), *b->local_addr());
    Result<std::size_t> s = co_await a->send(std::string_view("one"));
    EXPECT_EQ(s.value_or(0), 3u);
    Result<std::size_t> s2 = co_await a->send(std::string_view("two!"));
    EXPECT_EQ(s2.value_or(0), 4u);
    char buf[16];
    Result<std::size_t> r = co_await b->recv(buf, sizeof buf); // datagram boundaries stay
    EXPECT_EQ(r.value_or(0), 3u);
    Result<std::size_t> r2 = co_await b->recv(buf, sizeof buf);
    EXPECT_EQ(r2.value_or(0), 4u);
    EXPECT_EQ(std::string(buf, 4), "two!");
    // A socket connected elsewhere does not take datagrams from other senders.
    Result<UdpSocket> c = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<std::size_t> stray = co_await c->send_to(std::string_view("stray"), *b->local_addr());
    EXPECT_EQ(stray.value_or(0), 5u);
    Result<std::size_t> s3 = co_await a->send(std::string_view("three"));
    EXPECT_EQ(s3.value_or(0), 5u);
    Result<Datagram> d = co_await b->recv_from(buf, sizeof buf);
    EXPECT_EQ(std::string(buf, d->size), "three");
    EXPECT_EQ(d->peer, *a->local_addr());
    Result<std::size_t> none = co_await c->send(std::string_view("x")); // not connected
    EXPECT_EQ(none.error(), std::errc::destination_address_required);
}

TEST(Udp, ConnectedSendAndRecv) { run(connected_pair()); }

Task<void> truncated() {
    Result<UdpSocket> a = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> b = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    std::string big(1000, 'x');
    for (std::size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>('a' + i % 26);
    for (int i = 0; i < 3; ++i) {
        Result<std::size_t> s = co_await a->send_to(big, *b->local_addr());
        EXPECT_EQ(s.value_or(0), big.size());
    }
    char small[10];
    Result<Datagram> d = co_await b->recv_from(small, sizeof small);
    EXPECT_TRUE(d.ok());
    EXPECT_TRUE(d->truncated);
    EXPECT_EQ(d->size, sizeof small);
    EXPECT_EQ(std::string(small, sizeof small), big.substr(0, 10));
    EXPECT_EQ(d->peer, *a->local_addr());
    Result<std::size_t> r = co_await b->recv(small, sizeof small); // cut without a sign
    EXPECT_EQ(r.value_or(0), sizeof small);
    std::string whole(2000, '\0');
    Result<Datagram> d2 = co_await b->recv_from(whole.data(), whole.size()); // the next one is whole
    EXPECT_FALSE(d2->truncated);
    EXPECT_EQ(whole.substr(0, d2->size), big);
    std::string huge(70000, 'h'); // more than one UDP datagram holds
    Result<std::size_t> too_big = co_await a->send_to(huge, *b->local_addr());
    EXPECT_EQ(too_big.error(), std::errc::message_size);
}

TEST(Udp, ADatagramLongerThanTheBuffer) { run(truncated()); }

Task<void> peer_gone() {
    SocketAddr gone;
    {
        Result<UdpSocket> p = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
        gone = *p->local_addr();
    } // closed: nothing listens on that port now
    Result<UdpSocket> a = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<void> c = co_await a->connect(gone);
    EXPECT_TRUE(c.ok());
    Result<std::size_t> s = co_await a->send(std::string_view("anyone?"));
    EXPECT_EQ(s.value_or(0), 7u); // the datagram leaves; the ICMP answer comes back
    char buf[8];
    Result<std::size_t> r = co_await a->recv(buf, sizeof buf);
    EXPECT_EQ(r.error(), std::errc::connection_refused) << r.message();
}

TEST(Udp, ConnectedToAPortNobodyListensOn) { run(peer_gone()); }

Task<void> not_ip() {
    Result<UdpSocket> a = co_await UdpSocket::bind(*SocketAddr::unix_abstract("ringo-udp"));
    EXPECT_EQ(a.error(), std::errc::address_family_not_supported);
    Result<UdpSocket> b = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> c = co_await UdpSocket::bind(*b->local_addr());
    EXPECT_EQ(c.error(), std::errc::address_in_use);
    Result<UdpSocket> d = co_await UdpSocket::bind(SocketAddr::v4_loopback(0), {.reuse_port = true});
    Result<UdpSocket> e = co_await UdpSocket::bind(*d->local_addr(), {.reuse_port = true});
    EXPECT_TRUE(e.ok()) << e.message();
    EXPECT_EQ(b->broadcast().value_or(true), false);
    EXPECT_TRUE(b->set_broadcast(true).ok());
    EXPECT_EQ(b->broadcast().value_or(false), true);
    UdpSocket none;
    EXPECT_EQ(none.set_broadcast(true).error(), std::errc::bad_file_descriptor);
    Result<std::size_t> s = co_await none.send_to(std::string_view("x"), SocketAddr::v4_loopback(9));
    EXPECT_EQ(s.error(), std::errc::bad_file_descriptor);
}

TEST(Udp, BindErrorsAndOptions) { run(not_ip()); }

Task<bool> recv_until_cancelled(UdpSocket& s) {
    char buf[16];
    Result<Datagram> d = co_await s.recv_from(buf, sizeof buf);
    co_return d.error() == std::errc::operation_canceled;
}

Task<bool> recv_connected_until_cancelled(UdpSocket& s) {
    char buf[16];
    Result<std::size_t> n = co_await s.recv(buf, sizeof buf);
    co_return n.error() == std::errc::operation_canceled;
}

Task<void> cancel_receives() {
    Result<UdpSocket> a = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    auto h = ringo::spawn(recv_until_cancelled(*a));
    co_await ringo::yield();
    h.cancel();
    bool cancelled = co_await h;
    EXPECT_TRUE(cancelled);
    auto h2 = ringo::spawn(recv_connected_until_cancelled(*a));
    co_await ringo::yield();
    h2.cancel();
    cancelled = co_await h2;
    EXPECT_TRUE(cancelled);
}

TEST(Udp, CancelledReceiveLeavesNothingOpen) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(cancel_receives());
    }
    EXPECT_EQ(open_fds(), before);
}

struct Counts {
    long heap = -1;
    std::uint64_t frames = 1;
};

Task<Counts> count_allocations() {
    Counts c;
    Result<UdpSocket> a = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> b = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    SocketAddr to = *b->local_addr();
    Result<void> cn = co_await a->connect(to);
    EXPECT_TRUE(cn.ok());
    char buf[64] = {};
    { // warm up
        Result<std::size_t> s = co_await a->send_to(buf, 16, to);
        Result<Datagram> d = co_await b->recv_from(buf, sizeof buf);
        EXPECT_TRUE(s.ok() && d.ok());
    }
    long h0 = g_allocs.load();
    std::uint64_t f0 = ringo::detail::t_frames_allocated;
    for (int i = 0; i < 200; ++i) {
        Result<std::size_t> s = co_await a->send_to(buf, 16, to);
        Result<Datagram> d = co_await b->recv_from(buf, sizeof buf);
        EXPECT_EQ(s.value_or(0), 16u);
        EXPECT_EQ(d->size, 16u);
        Result<std::size_t> s2 = co_await a->send(buf, 8);
        Result<std::size_t> r2 = co_await b->recv(buf, sizeof buf);
        EXPECT_EQ(s2.value_or(0), 8u);
        EXPECT_EQ(r2.value_or(0), 8u);
    }
    c.heap = g_allocs.load() - h0;
    c.frames = ringo::detail::t_frames_allocated - f0;
    co_return c;
}

// send, recv, send_to and recv_from allocate nothing: no frame, no heap.
TEST(Udp, NoAllocationPerSendOrReceive) {
#ifdef RINGO_TEST_NO_NEW_COUNT
    GTEST_SKIP() << "operator new is not counted under TSan";
#endif
    Counts c = run(count_allocations());
    EXPECT_EQ(c.heap, 0);
    EXPECT_EQ(c.frames, 0u);
}

// --- UnixDatagram ----------------------------------------------------------------------------

SocketAddr abstract_name(std::string_view what) {
    return *SocketAddr::unix_abstract("ringo-dgram-" + std::string(what) + "-" + std::to_string(::getpid()));
}

Task<void> unix_datagrams(std::string dir) {
    Result<std::pair<UnixDatagram, UnixDatagram>> p = UnixDatagram::pair();
    EXPECT_TRUE(p.ok());
    Result<std::size_t> s = co_await p->first.send(std::string_view("paired"));
    EXPECT_EQ(s.value_or(0), 6u);
    char buf[32];
    Result<std::size_t> r = co_await p->second.recv(buf, sizeof buf);
    EXPECT_EQ(std::string(buf, r.value_or(0)), "paired");

    // A bound receiver and an unbound sender: the sender has no address (the kernel reports
    // none: an empty SocketAddr).
    SocketAddr path = *SocketAddr::unix_path(dir + "/d.sock");
    Result<UnixDatagram> rx = co_await UnixDatagram::bind(path);
    EXPECT_TRUE(rx.ok()) << rx.message();
    Result<UnixDatagram> tx = UnixDatagram::unbound();
    EXPECT_TRUE(tx.ok());
    Result<std::size_t> s2 = co_await tx->send_to(std::string_view("to a path, cut here"), path);
    EXPECT_EQ(s2.value_or(0), 19u);
    Result<Datagram> d = co_await rx->recv_from(buf, 9);
    EXPECT_TRUE(d.ok()) << d.message();
    EXPECT_TRUE(d->truncated);
    EXPECT_EQ(std::string(buf, d->size), "to a path");
    EXPECT_EQ(d->peer.family(), AF_UNSPEC);
    EXPECT_EQ(d->peer.size(), 0u);
    Result<UnixDatagram> again = co_await UnixDatagram::bind(path);
    EXPECT_EQ(again.error(), std::errc::address_in_use);

    // Two abstract names answer each other.
    Result<UnixDatagram> a = co_await UnixDatagram::bind(abstract_name("a"));
    Result<UnixDatagram> b = co_await UnixDatagram::bind(abstract_name("b"));
    Result<std::size_t> s3 = co_await a->send_to(std::string_view("hi b"), abstract_name("b"));
    EXPECT_EQ(s3.value_or(0), 4u);
    Result<Datagram> d2 = co_await b->recv_from(buf, sizeof buf);
    EXPECT_EQ(d2->peer, abstract_name("a"));
    Result<std::size_t> s4 = co_await b->send_to(std::string_view("hi a"), d2->peer);
    EXPECT_EQ(s4.value_or(0), 4u);
    Result<Datagram> d3 = co_await a->recv_from(buf, sizeof buf);
    EXPECT_EQ(std::string(buf, d3->size), "hi a");
    EXPECT_EQ(d3->peer, abstract_name("b"));
    Result<void> c = co_await a->connect(abstract_name("nobody"));
    EXPECT_EQ(c.error(), std::errc::connection_refused) << c.message();
    Result<UnixDatagram> ip = co_await UnixDatagram::bind(SocketAddr::v4_loopback(0));
    EXPECT_EQ(ip.error(), std::errc::address_family_not_supported);
}

TEST(UnixDatagram, PairPathAndAbstractNames) {
    ringo_test::TempDir dir;
    int before = open_fds();
    run(unix_datagrams(dir.path().string()));
    EXPECT_EQ(open_fds(), before);
}

// --- docs/net.md, "Datagrams": the echo, as it stands there ---------------------------------
namespace docs_example {
// Answers every datagram with the same bytes, to whoever sent it.
Task<void> udp_echo(UdpSocket& s) {
    char buf[1500];
    for (;;) {
        Result<Datagram> d = co_await s.recv_from(buf, sizeof buf);
        if (!d)
            break; // cancelled, or the socket was closed
        if (d->truncated)
            continue; // longer than buf: the rest is lost
        Result<std::size_t> w = co_await s.send_to(buf, d->size, d->peer);
        (void)w;
    }
}
} // namespace docs_example

Task<std::string> ask_udp_echo() {
    Result<UdpSocket> server = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> client = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    auto h = ringo::spawn(docs_example::udp_echo(*server));
    std::string big(2000, 'b'); // dropped by the echo: longer than its buffer
    Result<std::size_t> s1 = co_await client->send_to(big, *server->local_addr());
    Result<std::size_t> s2 = co_await client->send_to(std::string_view("echo me"), *server->local_addr());
    EXPECT_TRUE(s1.ok() && s2.ok());
    char buf[64];
    Result<Datagram> d = co_await client->recv_from(buf, sizeof buf);
    h.cancel();
    co_await h;
    co_return d ? std::string(buf, d->size) : d.message();
}

TEST(UdpDocs, EchoExampleRuns) { EXPECT_EQ(run(ask_udp_echo()), "echo me"); }

} // namespace

namespace {

// Two senders, three datagrams: the stream yields each one whole, with its sender's address;
// dropping the stream cancels the multishot receive.
Task<void> datagram_stream(ringo::buf::BufferRing& ring) {
    Result<UdpSocket> rx = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> a = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    Result<UdpSocket> b = co_await UdpSocket::bind(SocketAddr::v4_loopback(0));
    EXPECT_TRUE(rx && a && b);
    SocketAddr to = *rx->local_addr();
    auto in = rx->recv_stream(ring);
    (void)co_await a->send_to(std::string_view("one"), to);
    (void)co_await b->send_to(std::string_view("two!"), to);
    (void)co_await a->send_to(std::string_view("three"), to);
    const char* want[] = {"one", "two!", "three"};
    SocketAddr from[] = {*a->local_addr(), *b->local_addr(), *a->local_addr()};
    for (int i = 0; i < 3; ++i) {
        ringo::buf::Message m = co_await in.next();
        EXPECT_TRUE(m) << "datagram " << i << ": " << m.result();
        if (!m)
            co_return;
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.payload().data()), m.size()), want[i]);
        EXPECT_FALSE(m.truncated());
        std::optional<SocketAddr> peer = SocketAddr::from(m.name(), m.name_len());
        EXPECT_TRUE(peer && *peer == from[i]) << i;
    }
}

TEST(Udp, ReceiveStreamYieldsEachDatagramWithItsSender) {
    ringo::Runtime rt;
    ringo::buf::BufferRing ring(rt, ringo::op::BufferGroup{3}, 8, 256);
    int before = open_fds();
    rt.block_on(datagram_stream(ring));
    EXPECT_EQ(open_fds(), before);
}

} // namespace
