// net/tcp.hpp: TcpListener and TcpStream on loopback. An echo round trip over IPv4 and IPv6,
// 1 MiB each way with read_exact/write_all, the errors a program meets (refused, address in
// use, a peer that resets, a connect that times out, end of stream too early), accept's peer
// address, close and shutdown, send flags (MSG_MORE), a task cancelled in read and a
// connection handler cancelled at each of its awaits (no descriptor stays open), bind_sync,
// and the echo server and client of docs/net.md.
#include <ringo/net/tcp.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "helpers.hpp"
#include "net_helpers.hpp"

#include "alloc_counter.hpp" // replaces operator new: include it in one file of a program

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::Accepted;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;

namespace {

using ringo_test::echo_one;
using ringo_test::open_fds;
using ringo_test::run;

Task<std::string> echo_round_trip(SocketAddr where) {
    Result<TcpListener> l = co_await TcpListener::bind(where);
    if (!l)
        co_return "bind: " + l.message();
    Result<SocketAddr> at = l->local_addr();
    EXPECT_TRUE(at.ok());
    EXPECT_NE(at->port(), 0);
    auto server = ringo::spawn(echo_one(*l));
    Result<TcpStream> s = co_await TcpStream::connect(*at);
    if (!s)
        co_return "connect: " + s.message();
    Result<void> w = co_await s->write_all(std::string_view("hello, ringo"));
    EXPECT_TRUE(w.ok()) << w.message();
    char buf[12];
    Result<void> r = co_await s->read_exact(buf, sizeof buf);
    EXPECT_TRUE(r.ok()) << r.message();
    Result<void> sh = co_await s->shutdown(SHUT_WR);
    EXPECT_TRUE(sh.ok());
    Result<std::size_t> eof = co_await s->read(buf, sizeof buf); // the server ends: end of stream
    EXPECT_TRUE(eof.ok());
    EXPECT_EQ(eof.value_or(99), 0u);
    co_await server;
    co_return std::string(buf, sizeof buf);
}

TEST(Tcp, EchoRoundTripIPv4) {
    std::string got = run(echo_round_trip(SocketAddr::v4_loopback(0)));
    EXPECT_EQ(got, "hello, ringo");
}

TEST(Tcp, EchoRoundTripIPv6) {
    if (!ringo_test::have_ipv6_loopback())
        GTEST_SKIP() << "no IPv6 loopback here";
    std::string got = run(echo_round_trip(SocketAddr::v6_loopback(0)));
    EXPECT_EQ(got, "hello, ringo");
}

TEST(Tcp, AcceptYieldsThePeerAddress) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0), {.backlog = 4});
        EXPECT_TRUE(l.ok());
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr());
        EXPECT_TRUE(c.ok());
        Result<Accepted> a = co_await l->accept();
        EXPECT_TRUE(a.ok()) << a.message();
        auto [stream, peer] = std::move(*a);
        EXPECT_EQ(peer, *c->local_addr());
        EXPECT_EQ(*stream.peer_addr(), *c->local_addr());
        EXPECT_EQ(*stream.local_addr(), *l->local_addr());
        EXPECT_EQ(*c->peer_addr(), *l->local_addr());
        EXPECT_TRUE(peer.is_v4());
        EXPECT_EQ(peer.ip_string(), "127.0.0.1");
    }());
}

TEST(Tcp, OneMiBEachWay) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        constexpr std::size_t size = 1 << 20;
        std::vector<std::byte> out(size), back(size);
        for (std::size_t i = 0; i < size; ++i)
            out[i] = static_cast<std::byte>((i * 131) ^ (i >> 11));
        auto server = ringo::spawn([](TcpListener& l) -> Task<bool> {
            Result<Accepted> c = co_await l.accept();
            if (!c)
                co_return false;
            std::vector<std::byte> buf(size);
            Result<void> r = co_await c->stream.read_exact(buf);
            if (!r)
                co_return false;
            Result<void> w = co_await c->stream.write_all(buf);
            co_return w.ok();
        }(*l));
        Result<TcpStream> s = co_await TcpStream::connect(*l->local_addr());
        EXPECT_TRUE(s.ok());
        Result<void> w = co_await s->write_all(out);
        EXPECT_TRUE(w.ok()) << w.message();
        Result<void> r = co_await s->read_exact(back);
        EXPECT_TRUE(r.ok()) << r.message();
        bool served = co_await server;
        EXPECT_TRUE(served);
        EXPECT_TRUE(out == back);
    }());
}

TEST(Tcp, ReadExactMeetsTheEndOfStream) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr());
        Result<Accepted> a = co_await l->accept();
        EXPECT_TRUE(a.ok());
        Result<void> w = co_await c->write_all(std::string("abc")); // a temporary lives through the await
        EXPECT_TRUE(w.ok());
        const SocketAddr from = *c->local_addr();
        Result<void> cl = co_await c->close();
        EXPECT_TRUE(cl.ok());
        char buf[8];
        Result<void> r = co_await a->stream.read_exact(buf, sizeof buf);
        EXPECT_EQ(r.error(), ringo::net::Error::unexpected_eof);
        EXPECT_EQ(r.error(), std::errc::io_error);
        EXPECT_EQ(std::string(buf, 3), "abc");
        // The note names the peer of the socket the last receive was on.
        EXPECT_EQ(std::string(r.context()), "read from " + from.to_string());
    }());
}

TEST(Tcp, ConnectionRefused) {
    run([]() -> Task<void> {
        SocketAddr where = co_await ringo_test::refusing_address();
        Result<TcpStream> s = co_await TcpStream::connect(where);
        EXPECT_EQ(s.error(), std::errc::connection_refused);
    }());
}

// An error says what failed and where: value()'s exception and describe() name the call
// and the address (a connected socket's peer, looked up when the error comes).
TEST(Tcp, ErrorsNameTheCallAndTheAddress) {
    run([]() -> Task<void> {
        SocketAddr where = co_await ringo_test::refusing_address();
        Result<TcpStream> s = co_await TcpStream::connect(where);
        EXPECT_EQ(std::string(s.context()), "connect to " + where.to_string());
        try {
            (void)s.value();
            ADD_FAILURE() << "no exception";
        } catch (const std::system_error& e) {
            EXPECT_EQ(std::string(e.what()), "connect to " + where.to_string() + ": " + s.message());
        }
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        const SocketAddr at = *l->local_addr();
        Result<TcpListener> again = co_await TcpListener::bind(at, {.reuse_addr = false});
        EXPECT_EQ(again.error(), std::errc::address_in_use);
        EXPECT_EQ(std::string(again.context()), "bind " + at.to_string());
        Result<TcpStream> c = co_await TcpStream::connect(at);
        EXPECT_TRUE(c.ok()) << c.message();
        // A send from an address that is not mapped fails (EFAULT) while the socket is
        // connected: the note names the peer.
        Result<std::size_t> w = co_await c->write(reinterpret_cast<const void*>(std::uintptr_t{8}), 16);
        EXPECT_EQ(w.error(), std::errc::bad_address);
        EXPECT_EQ(std::string(w.context()), "write to " + at.to_string());
        Result<void> wa = co_await c->write_all(reinterpret_cast<const void*>(std::uintptr_t{8}), 16);
        EXPECT_EQ(wa.error(), std::errc::bad_address);
        EXPECT_EQ(std::string(wa.context()), "write to " + at.to_string());
        // A closed stream has no peer to name: the call alone.
        Result<void> closed = co_await c->close();
        EXPECT_TRUE(closed.ok());
        Result<std::size_t> r = co_await c->read(&where, 1);
        EXPECT_EQ(r.error(), std::errc::bad_file_descriptor);
        EXPECT_EQ(std::string(r.context()), "read");
    }());
}

TEST(Tcp, AddressInUse) {
    run([]() -> Task<void> {
        Result<TcpListener> a = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        EXPECT_TRUE(a.ok());
        Result<TcpListener> b = co_await TcpListener::bind(*a->local_addr());
        EXPECT_EQ(b.error(), std::errc::address_in_use);
        // Both with reuse_port: they share it.
        Result<TcpListener> c = co_await TcpListener::bind(SocketAddr::v4_loopback(0), {.reuse_port = true});
        EXPECT_TRUE(c.ok());
        Result<TcpListener> d = co_await TcpListener::bind(*c->local_addr(), {.reuse_port = true});
        EXPECT_TRUE(d.ok()) << d.message();
    }());
}

TEST(Tcp, BindSyncOutsideARuntimeThenAcceptInOne) {
    // Plain system calls: no runtime on this thread.
    Result<TcpListener> l = TcpListener::bind_sync(SocketAddr::v4_loopback(0), {.backlog = 8});
    ASSERT_TRUE(l.ok()) << l.message();
    const std::uint16_t port = l->local_addr()->port();
    EXPECT_NE(port, 0);
    EXPECT_TRUE(::fcntl(l->fd().get(), F_GETFD) & FD_CLOEXEC);
    // The same errors as bind: a port taken (neither side with reuse_port), not an IP address.
    EXPECT_EQ(TcpListener::bind_sync(*l->local_addr()).error(), std::errc::address_in_use);
    EXPECT_EQ(TcpListener::bind_sync(SocketAddr()).error(), std::errc::address_family_not_supported);
    Result<TcpListener> a = TcpListener::bind_sync(SocketAddr::v4_loopback(0), {.reuse_port = true});
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(TcpListener::bind_sync(*a->local_addr(), {.reuse_port = true}).ok());
    // Used on a runtime afterwards: accepts a connection.
    run([](TcpListener& lst, std::uint16_t p) -> Task<void> {
        auto client = [](std::uint16_t p) -> Task<Result<TcpStream>> {
            co_return co_await TcpStream::connect(SocketAddr::v4_loopback(p));
        };
        auto c = ringo::spawn(client(p));
        Result<Accepted> in = co_await lst.accept();
        EXPECT_TRUE(in.ok()) << in.message();
        Result<TcpStream> out = co_await c;
        EXPECT_TRUE(out.ok()) << out.message();
    }(*l, port));
}

TEST(Tcp, NotAnIpAddress) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr());
        EXPECT_EQ(l.error(), std::errc::address_family_not_supported);
        Result<TcpStream> s = co_await TcpStream::connect(*SocketAddr::unix_abstract("ringo-tcp-test"));
        EXPECT_EQ(s.error(), std::errc::address_family_not_supported);
    }());
}

TEST(Tcp, PeerResetMidTransfer) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr());
        Result<Accepted> a = co_await l->accept();
        EXPECT_TRUE(a.ok());
        std::vector<std::byte> chunk(64 * 1024, std::byte{7});
        Result<void> w = co_await c->write_all(chunk);
        EXPECT_TRUE(w.ok());
        char buf[1024];
        Result<void> r = co_await a->stream.read_exact(buf, sizeof buf);
        EXPECT_TRUE(r.ok());
        linger lg{1, 0}; // close sends a reset
        EXPECT_EQ(::setsockopt(a->stream.fd().get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
        Result<void> cl = co_await a->stream.close();
        EXPECT_TRUE(cl.ok());
        Result<std::size_t> n = co_await c->read(buf, sizeof buf);
        EXPECT_EQ(n.error(), std::errc::connection_reset) << n.message();
        // Writing now: EPIPE (MSG_NOSIGNAL: no SIGPIPE kills the test) or ECONNRESET.
        Result<void> w2 = co_await c->write_all(chunk);
        EXPECT_TRUE(w2.error() == std::errc::broken_pipe || w2.error() == std::errc::connection_reset) << w2.message();
        Result<std::size_t> w3 = co_await c->write(std::string_view("x"));
        EXPECT_TRUE(w3.error() == std::errc::broken_pipe || w3.error() == std::errc::connection_reset) << w3.message();
    }());
}

TEST(Tcp, ConnectTimesOut) {
    Result<TcpStream> s = run(TcpStream::connect(*SocketAddr::parse("10.255.255.1:81"), 50ms));
    if (s.ok() || s.error() != std::errc::timed_out)
        GTEST_SKIP() << "the network answered: " << s.message();
    EXPECT_EQ(s.error(), std::errc::timed_out);
}

// A listener whose accept queue is full drops new SYNs: the next connect hangs until its
// deadline (the same on any network).
TEST(Tcp, ConnectTimesOutOnAFullAcceptQueue) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0), {.backlog = 0});
        EXPECT_TRUE(l.ok());
        std::vector<TcpStream> queued;
        for (int i = 0; i < 8; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            Result<TcpStream> s = co_await TcpStream::connect(*l->local_addr(), 50ms);
            if (!s) {
                EXPECT_EQ(s.error(), std::errc::timed_out) << s.message();
                EXPECT_GE(std::chrono::steady_clock::now() - t0, 45ms);
                EXPECT_GE(i, 1); // the queue held one at least
                co_return;
            }
            queued.push_back(std::move(*s));
        }
        ADD_FAILURE() << "every connect went through";
    }());
}

TEST(Tcp, ConnectWithTimeInHandSucceeds) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr(), 5s);
        EXPECT_TRUE(c.ok()) << c.message();
        Result<TcpStream> z = co_await TcpStream::connect(*l->local_addr(), 0ms);
        EXPECT_EQ(z.error(), std::errc::timed_out);
    }());
}

Task<void> connect_and_read(SocketAddr at, bool* reached) {
    Result<TcpStream> s = co_await TcpStream::connect(at);
    if (!s)
        co_return;
    char c;
    *reached = true;
    Result<std::size_t> n = co_await s->read(&c, 1); // nothing ever comes
    (void)n;
}

// One round: a client task blocked in read is cancelled once the server has accepted it.
// (A named function, not a lambda: Clang 14 crashed splitting the lambda form of it.)
Task<void> cancel_a_blocked_read(TcpListener& l) {
    bool reached = false;
    Result<SocketAddr> where = l.local_addr();
    auto h = ringo::spawn(connect_and_read(*where, &reached));
    Result<Accepted> a = co_await l.accept();
    EXPECT_TRUE(a.ok());
    for (int spins = 0; !reached && spins < 1000; ++spins)
        co_await ringo::yield();
    co_await ringo::yield();
    h.cancel();
    co_await h;
}

Task<void> cancel_blocked_reads() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    EXPECT_TRUE(l.ok());
    for (int i = 0; i < 4; ++i)
        co_await cancel_a_blocked_read(*l);
}

TEST(Tcp, CancelledReadLeavesNoDescriptorOpen) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(cancel_blocked_reads());
    }
    EXPECT_EQ(open_fds(), before);
}

// A connection handler cancelled at each of its awaits. The handler, written with the front
// door's types as a small proxy would be: it accepts a client, reads its request line, opens a
// file, connects upstream, forwards the line, waits for the upstream's answer, reads the file,
// sends the client 8 MiB, sleeps, shuts its sending side down and closes the upstream. Before
// each await it says which one it is at (HandlerProbe::step). Two ways to be cancelled at each:
// just before it (the await is refused; close, a release operation, still closes), and, at
// the awaits that wait for the peer or the clock, while suspended there. No descriptor may be
// left open on any path.
constexpr int handler_awaits = 11;
constexpr int handler_done = handler_awaits + 1;

struct HandlerProbe {
    int at = 0;                       // the await the handler is at (1..11)
    int cancel_at = 0;                // it cancels itself just before this await (0: never)
    int ended_at = 0;                 // the await whose failure ended it; handler_done: it finished
    std::chrono::milliseconds nap{1}; // its sleep (await 9)
    ringo::JoinHandle<void>* self = nullptr;
    void step(int k) {
        at = k;
        if (k == cancel_at)
            self->cancel(); // from its own runtime: the flag is set, nothing is in flight
    }
    void end(int k) { ended_at = k; }
};

const std::string& eight_mib() {
    static const std::string s(8 << 20, 'p');
    return s;
}

Task<void> proxy_handler(TcpListener& l, SocketAddr upstream, std::string path, HandlerProbe& p) {
    p.step(1);
    Result<Accepted> a = co_await l.accept();
    if (!a)
        co_return p.end(1);
    ringo::BufReader<TcpStream> client(std::move(a->stream));
    std::string line;
    p.step(2);
    Result<bool> got = co_await client.read_line(line);
    if (!got || !*got)
        co_return p.end(2);
    p.step(3);
    Result<ringo::fs::File> f = co_await ringo::fs::File::open(path);
    if (!f)
        co_return p.end(3);
    p.step(4);
    Result<TcpStream> up = co_await TcpStream::connect(upstream);
    if (!up)
        co_return p.end(4);
    p.step(5);
    Result<void> fwd = co_await up->write_all(line);
    if (!fwd)
        co_return p.end(5);
    char answer = 0;
    p.step(6);
    Result<std::size_t> ans = co_await up->read(&answer, 1);
    if (!ans || *ans != 1)
        co_return p.end(6);
    char head[4];
    p.step(7);
    Result<std::size_t> r = co_await f->read_at(head, sizeof head, 0);
    if (!r)
        co_return p.end(7);
    p.step(8);
    Result<void> big = co_await client.get().write_all(eight_mib());
    if (!big)
        co_return p.end(8);
    p.step(9);
    int slept = co_await ringo::sleep_for(p.nap);
    if (slept != 0)
        co_return p.end(9);
    p.step(10);
    Result<void> sh = co_await client.get().shutdown(SHUT_WR);
    if (!sh)
        co_return p.end(10);
    p.step(11);
    Result<void> closed = co_await up->close();
    if (!closed)
        co_return p.end(11);
    p.end(handler_done);
}

// One round on a runtime of its own: plays the client and the upstream, moving the handler on
// from each await that waits for them, and cancels it as `p` says (cancel_while_at: once it
// waits there). This task runs only while the handler is suspended, so `p.at == k` means it
// waits at await k.
Task<void> handler_round(TcpListener& l, TcpListener& ul, std::string path, HandlerProbe& p, int cancel_while_at) {
    auto h = ringo::spawn(proxy_handler(l, *ul.local_addr(), path, p));
    p.self = &h;
    std::optional<TcpStream> client, upstream_side;
    std::string sink(8 << 20, '\0');
    int advanced = 0; // the last await moved on from
    for (int spins = 0; !h.is_finished() && spins < 5000; ++spins) {
        if (cancel_while_at && p.at == cancel_while_at) {
            h.cancel();
            break;
        }
        if (p.at != advanced) {
            advanced = p.at;
            if (p.at == 1) {
                Result<TcpStream> c = co_await TcpStream::connect(*l.local_addr());
                EXPECT_TRUE(c.ok()) << c.message();
                client = std::move(*c);
            } else if (p.at == 2) {
                EXPECT_TRUE((co_await client->write_all(std::string_view("GET /x\n"))).ok());
            } else if (p.at == 6) {
                Result<Accepted> u = co_await ul.accept();
                EXPECT_TRUE(u.ok()) << u.message();
                upstream_side = std::move(u->stream);
                EXPECT_TRUE((co_await upstream_side->write_all(std::string_view("!"))).ok());
            } else if (p.at == 8) {
                EXPECT_TRUE((co_await client->read_exact(sink.data(), sink.size())).ok());
            }
        }
        co_await ringo::sleep_for(1ms);
    }
    co_await h;
}

TEST(Tcp, AHandlerCancelledAtEachAwaitLeavesNoDescriptorOpen) {
    ringo_test::TempDir dir;
    const std::string path = dir.file("served");
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("file", f);
        std::fclose(f);
    }
    // Each round: its own listeners (client and upstream), set up outside any runtime, and a
    // runtime of its own; everything the handler opened must be closed when they are gone.
    auto round = [&](int cancel_at, int cancel_while_at) {
        HandlerProbe p;
        p.cancel_at = cancel_at;
        if (cancel_while_at == 9)
            p.nap = std::chrono::hours(1); // only cancellation ends it
        const int before = open_fds();
        {
            Result<TcpListener> l = TcpListener::bind_sync(SocketAddr::v4_loopback(0));
            Result<TcpListener> ul = TcpListener::bind_sync(SocketAddr::v4_loopback(0));
            EXPECT_TRUE(l.ok() && ul.ok());
            ringo::Runtime rt;
            rt.block_on(handler_round(*l, *ul, path, p, cancel_while_at));
        }
        EXPECT_EQ(open_fds(), before) << "cancelled before await " << cancel_at << " / while at " << cancel_while_at;
        return p.ended_at;
    };
    // Not cancelled: it runs to the end (the round plays its part at every await).
    EXPECT_EQ(round(0, 0), handler_done);
    // Cancelled just before each await: that await fails and ends it; close still closes.
    for (int k = 1; k <= handler_awaits; ++k)
        EXPECT_EQ(round(k, 0), k == 11 ? handler_done : k) << "cancelled before await " << k;
    // Cancelled while suspended at each await that waits: accept, the line, the upstream's
    // answer, 8 MiB to a client that does not read, the sleep.
    for (int k : {1, 2, 6, 8, 9})
        EXPECT_EQ(round(0, k), k) << "cancelled while at await " << k;
}

TEST(Tcp, CloseReportsAndWorksInACancelledTask) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr());
        int fd = c->fd().get();
        EXPECT_TRUE(c->is_open());
        auto h = ringo::spawn([](TcpStream& s) -> Task<bool> {
            co_await ringo::sleep_for(1h); // cancelled here
            Result<void> r = co_await s.close();
            co_return r.ok();
        }(*c));
        co_await ringo::yield();
        h.cancel();
        bool closed = co_await h;
        EXPECT_TRUE(closed);
        EXPECT_FALSE(c->is_open());
        EXPECT_LT(::fcntl(fd, F_GETFD), 0);
        Result<void> again = co_await c->close();
        EXPECT_EQ(again.error(), std::errc::bad_file_descriptor);
        Result<std::size_t> n = co_await c->write(std::string_view("x"));
        EXPECT_EQ(n.error(), std::errc::bad_file_descriptor);
        Result<void> lc = co_await l->close();
        EXPECT_TRUE(lc.ok());
    }());
}

TEST(Tcp, NoDelay) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr());
        EXPECT_EQ(c->nodelay().value_or(true), false);
        EXPECT_TRUE(c->set_nodelay(true).ok());
        EXPECT_EQ(c->nodelay().value_or(false), true);
        EXPECT_TRUE(c->set_nodelay(false).ok());
        EXPECT_EQ(c->nodelay().value_or(true), false);
        TcpStream none;
        EXPECT_EQ(none.set_nodelay(true).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ(none.peer_addr().error(), std::errc::bad_file_descriptor);
    }());
}

// Bytes the kernel holds in a socket's send queue without having sent them.
int unsent(const TcpStream& s) {
    int n = -1;
    EXPECT_EQ(::ioctl(s.fd().get(), SIOCOUTQNSD, &n), 0);
    return n;
}

// write and write_all pass extra send flags: with MSG_MORE the kernel holds a partial
// segment back until a send without it, which then carries everything.
TEST(Tcp, MsgMoreHoldsBytesBackUntilASendWithoutIt) {
    run([]() -> Task<void> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        Result<TcpStream> c = co_await TcpStream::connect(*l->local_addr());
        Result<Accepted> a = co_await l->accept();
        EXPECT_TRUE(c->set_nodelay(true).ok()); // without MSG_MORE, even 3 bytes leave at once
        EXPECT_EQ((co_await c->write(std::string_view("abc"))).value_or(0), 3u);
        EXPECT_EQ(unsent(*c), 0);
        char in[16];
        EXPECT_EQ((co_await a->stream.read_exact(in, 3)).ok(), true);
        // The kernel lets held bytes go after ~200 ms anyway: a check that came later than
        // that (a very slow machine) says nothing, and is left out.
        auto t0 = std::chrono::steady_clock::now();
        auto in_time = [t0] { return std::chrono::steady_clock::now() - t0 < 150ms; };
        EXPECT_EQ((co_await c->write("head:", 5, MSG_MORE)).value_or(0), 5u);
        int held = unsent(*c);
        if (in_time()) {
            EXPECT_EQ(held, 5);
        }
        EXPECT_TRUE((co_await c->write_all("more", 4, MSG_MORE)).ok());
        held = unsent(*c);
        if (in_time()) {
            EXPECT_EQ(held, 9);
        }
        EXPECT_TRUE((co_await c->write_all(std::string_view("body"))).ok());
        EXPECT_EQ(unsent(*c), 0);
        EXPECT_TRUE((co_await a->stream.read_exact(in, 13)).ok());
        EXPECT_EQ(std::string_view(in, 13), "head:morebody");
    }());
}

TEST(Tcp, CancelledAcceptAndClosedListener) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on([]() -> Task<void> {
            Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
            auto h = ringo::spawn([](TcpListener& l) -> Task<bool> {
                Result<Accepted> a = co_await l.accept();
                co_return a.error() == std::errc::operation_canceled;
            }(*l));
            co_await ringo::yield();
            h.cancel();
            bool cancelled = co_await h;
            EXPECT_TRUE(cancelled);
        }());
    }
    EXPECT_EQ(open_fds(), before);
}

// What each call allocates: read, write and accept nothing at all (no frame, no heap); the
// looping calls one frame from ringo's frame pool each (no heap allocation once it is warm).
TEST(Tcp, AllocationsPerCall) {
#ifdef RINGO_TEST_NO_NEW_COUNT
    GTEST_SKIP() << "operator new is not counted under TSan";
#endif
    struct Counts {
        long single_heap = -1, accept_heap = -1, loop_heap = -1;
        std::uint64_t single_frames = 1, accept_frames = 1, loop_frames = 0;
    };
    Counts c = run([]() -> Task<Counts> {
        Counts c;
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        SocketAddr at = *l->local_addr();
        Result<TcpStream> a = co_await TcpStream::connect(at);
        Result<Accepted> b = co_await l->accept();
        char buf[64] = {};
        Result<void> warm = co_await a->write_all(buf, 16); // warm up the pool
        EXPECT_TRUE(warm.ok());
        warm = co_await b->stream.read_exact(buf, 16);
        EXPECT_TRUE(warm.ok());
        long h0 = g_allocs.load();
        std::uint64_t f0 = ringo::detail::t_frames_allocated;
        for (int i = 0; i < 200; ++i) {
            Result<std::size_t> w = co_await a->write(buf, 16);
            Result<std::size_t> r = co_await b->stream.read(buf, sizeof buf);
            EXPECT_EQ(w.value_or(0), 16u);
            EXPECT_EQ(r.value_or(0), 16u);
        }
        c.single_heap = g_allocs.load() - h0;
        c.single_frames = ringo::detail::t_frames_allocated - f0;
        int raw[50];
        for (int& fd : raw) { // queued connections, made with plain system calls
            fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            EXPECT_EQ(::connect(fd, at.data(), at.size()), 0);
        }
        h0 = g_allocs.load();
        f0 = ringo::detail::t_frames_allocated;
        for (int i = 0; i < 50; ++i) {
            Result<Accepted> x = co_await l->accept();
            EXPECT_TRUE(x.ok());
        }
        c.accept_heap = g_allocs.load() - h0;
        c.accept_frames = ringo::detail::t_frames_allocated - f0;
        for (int fd : raw)
            ::close(fd);
        h0 = g_allocs.load();
        f0 = ringo::detail::t_frames_allocated;
        for (int i = 0; i < 200; ++i) {
            Result<void> w = co_await a->write_all(buf, 16);
            Result<void> r = co_await b->stream.read_exact(buf, 16);
            EXPECT_TRUE(w.ok() && r.ok());
        }
        c.loop_heap = g_allocs.load() - h0;
        c.loop_frames = ringo::detail::t_frames_allocated - f0;
        co_return c;
    }());
    EXPECT_EQ(c.single_heap, 0);
    EXPECT_EQ(c.single_frames, 0u);
    EXPECT_EQ(c.accept_heap, 0);
    EXPECT_EQ(c.accept_frames, 0u);
    EXPECT_EQ(c.loop_frames, 0u); // write_all and read_exact are awaited directly, no frame
    EXPECT_EQ(c.loop_heap, 0);
}

// --- docs/net.md, "TCP": the echo server and client, as they stand there -------------------
namespace docs_example {
using ringo::net::Accepted;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;

// Echoes one connection until the peer shuts down its side.
Task<void> echo(TcpStream conn) {
    char buf[4096];
    for (;;) {
        Result<std::size_t> n = co_await conn.read(buf, sizeof buf);
        if (!n || *n == 0) // an error, or the end of the stream
            break;
        Result<void> w = co_await conn.write_all(buf, *n);
        if (!w)
            break;
    }
} // conn is closed here

// Accepts until its task is cancelled: one task per connection. Out of descriptors
// (EMFILE) it waits and goes on; see "A server's accept loop" below.
Task<void> serve(TcpListener& listener) {
    auto start = [](TcpStream s) { ringo::spawn(echo(std::move(s))).detach(); };
    std::error_code e = co_await ringo::net::accept_loop(listener, start);
    if (e)
        std::fprintf(stderr, "the listening socket failed: %s\n", e.message().c_str());
}

// Sends `msg` and reads as many bytes back.
Task<Result<std::string>> ask(SocketAddr server, std::string_view msg) {
    Result<TcpStream> s = co_await TcpStream::connect(server, 5s); // std::errc::timed_out after 5 s
    if (!s)
        co_return s.error();
    Result<void> w = co_await s->write_all(msg);
    if (!w)
        co_return w.error();
    std::string reply(msg.size(), '\0');
    Result<void> r = co_await s->read_exact(reply.data(), reply.size());
    if (!r)
        co_return r.error(); // net::Error::unexpected_eof: the server hung up
    co_return reply;
}

// int main() { ringo::Runtime rt; return rt.block_on(demo()); }
Task<int> demo() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0)); // port 0: any free port
    if (!l) {
        std::fprintf(stderr, "bind: %s\n", l.message().c_str());
        co_return 1;
    }
    SocketAddr at = l->local_addr().value(); // 127.0.0.1 and the port the kernel chose
    auto server = ringo::spawn(serve(*l));
    Result<std::string> reply = co_await ask(at, "hello");
    std::printf("%s\n", reply ? reply->c_str() : reply.message().c_str());
    server.cancel(); // stops accepting; the listener closes with l
    co_await server;
    co_return reply ? 0 : 1;
}

} // namespace docs_example

TEST(TcpDocs, EchoExampleRuns) {
    ringo::Runtime rt;
    int rc = rt.block_on(docs_example::demo());
    EXPECT_EQ(rc, 0);
    Result<std::string> r = rt.block_on([]() -> Task<Result<std::string>> {
        Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
        auto server = ringo::spawn(docs_example::serve(*l));
        Result<std::string> reply = co_await docs_example::ask(*l->local_addr(), "ringo over tcp");
        server.cancel();
        co_await server;
        co_return reply;
    }());
    EXPECT_EQ(r.value_or("(error)"), "ringo over tcp");
}

} // namespace

namespace {

// A connection's bytes through recv_stream: what arrives in buffers of the ring, in order, then
// the end of the stream (result 0) when the peer shuts down its side.
Task<std::string> receive_all(TcpListener& l, ringo::buf::BufferRing& ring, bool bundle, int* end) {
    auto c = co_await l.accept();
    if (!c)
        co_return "accept failed";
    auto in = c->stream.recv_stream(ring, bundle);
    std::string got;
    for (;;) {
        ringo::buf::Buffer b = co_await in.next();
        if (!b)
            break;
        got.append(reinterpret_cast<const char*>(b.data()), b.size());
    }
    *end = in.result();
    co_return got;
}

Task<void> send_chunks(SocketAddr to, std::string data) {
    auto s = co_await TcpStream::connect(to);
    if (!s)
        co_return;
    for (std::size_t off = 0; off < data.size(); off += 1000) {
        auto w = co_await s->write_all(data.data() + off, std::min<std::size_t>(1000, data.size() - off));
        if (!w)
            co_return;
        co_await ringo::sleep_for(1ms);
    }
    auto sh = co_await s->shutdown(SHUT_WR);
    (void)sh;
}

Task<void> stream_through_ring(ringo::buf::BufferRing& ring, bool bundle) {
    auto l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    EXPECT_TRUE(l);
    std::string data;
    for (int i = 0; i < 20000; ++i)
        data.push_back(static_cast<char>('a' + i % 26));
    int end = -1;
    auto rx = ringo::spawn(receive_all(*l, ring, bundle, &end));
    co_await send_chunks(*l->local_addr(), data);
    std::string got = co_await rx;
    EXPECT_EQ(got.size(), data.size());
    EXPECT_TRUE(got == data);
    EXPECT_EQ(end, 0);
}

TEST(Tcp, RecvStreamDeliversTheBytesInOrderThroughARing) {
    for (bool bundle : {false, true}) {
        ringo::Runtime rt;
        ringo::buf::BufferRing ring(rt, ringo::op::BufferGroup{5}, 8, 512); // smaller than a chunk
        int before = ringo_test::open_fds();
        rt.block_on(stream_through_ring(ring, bundle));
        EXPECT_EQ(ringo_test::open_fds(), before) << "bundle " << bundle;
    }
}

// A spawned task that owns a stream and ends closes it as it ends, while its JoinHandle is
// still held (the peer reads the end of the stream at once), as docs/guide.md promises.
Task<void> owns_and_ends(TcpStream) { co_return; }

Task<bool> ended_task_closes_its_stream() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    Result<TcpStream> client = co_await TcpStream::connect(*l->local_addr());
    Result<Accepted> c = co_await l->accept();
    auto handle = ringo::spawn(owns_and_ends(std::move(c->stream))); // held, not joined
    char b;
    auto n = co_await ringo::with_timeout(client->read(&b, 1), 2s);
    bool eof = !n.timed_out() && n->ok() && **n == 0;
    EXPECT_TRUE(handle.is_finished());
    co_await handle;
    co_return eof;
}

TEST(Tcp, AnEndedTaskClosesTheStreamItOwnsWhileItsHandleIsHeld) {
    int before = open_fds();
    EXPECT_TRUE(run(ended_task_closes_its_stream()));
    EXPECT_EQ(open_fds(), before);
}

} // namespace
