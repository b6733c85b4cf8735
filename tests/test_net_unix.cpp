// net/unix.hpp: UnixListener and UnixStream. A round trip over a path and over an abstract
// name, pair(), the errors a program meets (a path that exists, a missing path, a socket file
// nobody listens on, a peer that closes, a non-Unix address), and cancelled accepts and reads
// that leave no descriptor open.
#include <ringo/net/unix.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "helpers.hpp"
#include "net_helpers.hpp"

using ringo::Result;
using ringo::Task;
using ringo::net::SocketAddr;
using ringo::net::UnixAccepted;
using ringo::net::UnixListener;
using ringo::net::UnixStream;

namespace {

using ringo_test::echo_one;
using ringo_test::open_fds;
using ringo_test::run;
using ringo_test::TempDir;

// An abstract name no other test process uses at the same time.
SocketAddr abstract_name(std::string_view what) {
    return *SocketAddr::unix_abstract("ringo-test-" + std::string(what) + "-" + std::to_string(::getpid()));
}

// Binds `where`, connects to it, sends a line and reads it back.
Task<std::string> round_trip(SocketAddr where) {
    Result<UnixListener> l = co_await UnixListener::bind(where, 8);
    if (!l)
        co_return "bind: " + l.message();
    Result<SocketAddr> at = l->local_addr();
    EXPECT_TRUE(at.ok());
    EXPECT_EQ(*at, where);
    SocketAddr peer;
    auto server = ringo::spawn(echo_one(*l, &peer));
    Result<UnixStream> s = co_await UnixStream::connect(where);
    if (!s)
        co_return "connect: " + s.message();
    EXPECT_EQ(s->peer_addr().value_or(SocketAddr()), where);
    Result<void> w = co_await s->write_all(std::string_view("over a unix socket"));
    EXPECT_TRUE(w.ok()) << w.message();
    std::string back(18, '\0');
    Result<void> r = co_await s->read_exact(back.data(), back.size());
    EXPECT_TRUE(r.ok()) << r.message();
    Result<void> sh = co_await s->shutdown(SHUT_WR);
    EXPECT_TRUE(sh.ok());
    char c;
    Result<std::size_t> eof = co_await s->read(&c, 1); // the server ends: end of stream
    EXPECT_EQ(eof.value_or(99), 0u);
    co_await server;
    EXPECT_TRUE(peer.is_unix());
    EXPECT_EQ(peer.to_string(), "(unnamed)"); // the client did not bind
    co_return back;
}

TEST(Unix, RoundTripOverAPath) {
    TempDir dir;
    SocketAddr where = *SocketAddr::unix_path(dir.file("s.sock"));
    EXPECT_EQ(run(round_trip(where)), "over a unix socket");
    EXPECT_EQ(::access(dir.file("s.sock").c_str(), F_OK), 0); // the socket file stays
}

TEST(Unix, RoundTripOverAnAbstractName) {
    SocketAddr where = abstract_name("rt");
    EXPECT_EQ(where.to_string().front(), '@');
    EXPECT_EQ(run(round_trip(where)), "over a unix socket");
}

Task<void> bind_where_a_path_exists(std::string file) {
    Result<UnixListener> a = co_await UnixListener::bind(*SocketAddr::unix_path(file));
    EXPECT_EQ(a.error(), std::errc::address_in_use) << a.message();
    std::string sock = file + ".sock";
    Result<UnixListener> b = co_await UnixListener::bind(*SocketAddr::unix_path(sock));
    EXPECT_TRUE(b.ok()) << b.message();
    Result<UnixListener> c = co_await UnixListener::bind(*SocketAddr::unix_path(sock));
    EXPECT_EQ(c.error(), std::errc::address_in_use);
    Result<UnixListener> d = co_await UnixListener::bind(abstract_name("twice"));
    EXPECT_TRUE(d.ok());
    Result<UnixListener> e = co_await UnixListener::bind(abstract_name("twice"));
    EXPECT_EQ(e.error(), std::errc::address_in_use);
    Result<UnixListener> f = co_await UnixListener::bind(*SocketAddr::unix_path(file + "/no/such/dir.sock"));
    EXPECT_FALSE(f.ok());
}

TEST(Unix, BindWhereAPathExistsIsAddressInUse) {
    TempDir dir;
    std::string file = dir.file("plain");
    int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
    int before = open_fds();
    run(bind_where_a_path_exists(file));
    EXPECT_EQ(open_fds(), before);
}

Task<void> connect_to_nobody(std::string dir) {
    Result<UnixStream> a = co_await UnixStream::connect(*SocketAddr::unix_path(dir + "/missing.sock"));
    EXPECT_EQ(a.error(), std::errc::no_such_file_or_directory) << a.message();
    SocketAddr stale = *SocketAddr::unix_path(dir + "/stale.sock");
    {
        Result<UnixListener> l = co_await UnixListener::bind(stale);
        EXPECT_TRUE(l.ok());
        Result<void> c = co_await l->close();
        EXPECT_TRUE(c.ok());
    }
    Result<UnixStream> b = co_await UnixStream::connect(stale); // the file is there, nobody listens
    EXPECT_EQ(b.error(), std::errc::connection_refused) << b.message();
    Result<UnixStream> c = co_await UnixStream::connect(abstract_name("nobody"));
    EXPECT_EQ(c.error(), std::errc::connection_refused) << c.message();
}

TEST(Unix, ConnectToAMissingPathOrNoListener) {
    TempDir dir;
    int before = open_fds();
    run(connect_to_nobody(dir.path().string()));
    EXPECT_EQ(open_fds(), before);
}

Task<void> not_unix_addresses() {
    Result<UnixListener> l = co_await UnixListener::bind(SocketAddr::v4_loopback(0));
    EXPECT_EQ(l.error(), std::errc::address_family_not_supported);
    Result<UnixStream> s = co_await UnixStream::connect(SocketAddr::v6_loopback(80));
    EXPECT_EQ(s.error(), std::errc::address_family_not_supported);
    Result<UnixStream> e = co_await UnixStream::connect(SocketAddr());
    EXPECT_EQ(e.error(), std::errc::address_family_not_supported);
}

TEST(Unix, NotAUnixAddress) { run(not_unix_addresses()); }

Task<void> pair_and_peer_close() {
    Result<std::pair<UnixStream, UnixStream>> p = UnixStream::pair();
    EXPECT_TRUE(p.ok()) << p.message();
    auto& [a, b] = *p;
    EXPECT_EQ(a.local_addr()->to_string(), "(unnamed)");
    Result<void> w = co_await a.write_all(std::string_view("paired"));
    EXPECT_TRUE(w.ok());
    char buf[6];
    Result<void> r = co_await b.read_exact(buf, sizeof buf);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(std::string(buf, sizeof buf), "paired");
    Result<std::size_t> w2 = co_await b.write(std::string_view("xy"));
    EXPECT_EQ(w2.value_or(0), 2u);
    Result<void> cl = co_await b.close(); // with "xy" read by nobody yet
    EXPECT_TRUE(cl.ok());
    Result<std::size_t> n = co_await a.read(buf, sizeof buf); // what was sent first still arrives
    EXPECT_EQ(n.value_or(0), 2u);
    Result<std::size_t> eof = co_await a.read(buf, sizeof buf);
    EXPECT_EQ(eof.value_or(99), 0u);
    Result<void> again = co_await a.read_exact(buf, 1);
    EXPECT_EQ(again.error(), ringo::net::Error::unexpected_eof);
    Result<std::size_t> w3 = co_await a.write(std::string_view("x")); // MSG_NOSIGNAL: no SIGPIPE
    EXPECT_EQ(w3.error(), std::errc::broken_pipe) << w3.message();
    Result<void> w4 = co_await a.write_all(std::string_view("x"));
    EXPECT_EQ(w4.error(), std::errc::broken_pipe);
}

TEST(Unix, PairAndPeerClose) {
    int before = open_fds();
    run(pair_and_peer_close());
    EXPECT_EQ(open_fds(), before);
}

Task<bool> accept_until_cancelled(UnixListener& l) {
    Result<UnixAccepted> a = co_await l.accept();
    co_return a.error() == std::errc::operation_canceled;
}

Task<bool> read_until_cancelled(UnixStream& s) {
    char c;
    Result<std::size_t> n = co_await s.read(&c, 1);
    co_return n.error() == std::errc::operation_canceled;
}

Task<void> connect_and_wait(SocketAddr at, bool* connected) {
    Result<UnixStream> s = co_await UnixStream::connect(at);
    if (!s)
        co_return;
    *connected = true;
    char c;
    Result<std::size_t> n = co_await s->read(&c, 1); // nothing comes: cancelled here
    (void)n;
}

Task<void> cancel_accepts_and_reads() {
    SocketAddr where = abstract_name("cancel");
    Result<UnixListener> l = co_await UnixListener::bind(where);
    EXPECT_TRUE(l.ok());
    auto h = ringo::spawn(accept_until_cancelled(*l));
    co_await ringo::yield();
    h.cancel();
    bool cancelled = co_await h;
    EXPECT_TRUE(cancelled);
    Result<std::pair<UnixStream, UnixStream>> p = UnixStream::pair();
    auto r = ringo::spawn(read_until_cancelled(p->first));
    co_await ringo::yield();
    r.cancel();
    cancelled = co_await r;
    EXPECT_TRUE(cancelled);
    for (int i = 0; i < 3; ++i) { // a client cancelled in read after the server accepted it
        bool connected = false;
        auto c = ringo::spawn(connect_and_wait(where, &connected));
        Result<UnixAccepted> a = co_await l->accept();
        EXPECT_TRUE(a.ok());
        for (int spins = 0; !connected && spins < 1000; ++spins)
            co_await ringo::yield();
        co_await ringo::yield();
        c.cancel();
        co_await c;
    }
}

TEST(Unix, CancelledAcceptAndReadLeaveNoDescriptorOpen) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(cancel_accepts_and_reads());
    }
    EXPECT_EQ(open_fds(), before);
}

} // namespace
