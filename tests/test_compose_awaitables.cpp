// with_timeout, when_all and when_any over the awaitables that ringo::net, ringo::fs and the I/O
// layer return (docs/compose.md: with_timeout "works on any awaitable"). Several of them keep
// what the kernel reads or writes (an address, a msghdr, a struct statx, a pipe's descriptors)
// inside the awaitable, and the combinators take their arguments by value: each must move
// into the combinator before it is awaited. Every one is awaited here for real, on sockets,
// files and pipes, and its result checked: a deadline that passes, a value that comes in
// time, the winner of a race, nothing left open afterwards.
#include <ringo/compose/timeout.hpp>
#include <ringo/compose/when.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/core/time.hpp>
#include <ringo/fs/file.hpp>
#include <ringo/fs/path.hpp>
#include <ringo/io/buffered.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/pipe.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/tcp.hpp>
#include <ringo/net/udp.hpp>
#include <ringo/net/unix.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "helpers.hpp"
#include "net_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::when_all;
using ringo::when_any;
using ringo::with_timeout;
using ringo::net::Datagram;
using ringo::net::SocketAddr;
using ringo_test::open_fds;
using ringo_test::run;
using ringo_test::TempDir;

// ------------------------------------------------------------------ the types

// Every awaitable type of net::, fs:: and the I/O layer moves (before it is awaited): what
// the combinators need to take it. The tests below await each of them.
template <class... A>
constexpr bool all_movable = (std::is_move_constructible_v<A> && ...);

using Tcp = ringo::net::TcpListener;
using Unix = ringo::net::UnixListener;
using Udp = ringo::net::UdpSocket;
using UnixDgram = ringo::net::UnixDatagram;
using Stream = ringo::net::TcpStream;
using File = ringo::fs::File;

static_assert(all_movable<decltype(std::declval<Tcp&>().accept()), decltype(std::declval<Unix&>().accept())>);
static_assert(all_movable<decltype(std::declval<Udp&>().recv_from(nullptr, 0)),
                          decltype(std::declval<Udp&>().send_to(nullptr, 0, SocketAddr())),
                          decltype(std::declval<Udp&>().connect(SocketAddr())),
                          decltype(std::declval<UnixDgram&>().recv_from(nullptr, 0)),
                          decltype(std::declval<UnixDgram&>().send_to(nullptr, 0, SocketAddr())),
                          decltype(std::declval<UnixDgram&>().connect(SocketAddr())),
                          decltype(std::declval<Udp&>().send(nullptr, 0)),
                          decltype(std::declval<Udp&>().recv(nullptr, 0)), decltype(std::declval<Udp&>().close())>);
static_assert(
    all_movable<decltype(std::declval<Stream&>().read(nullptr, 0)), decltype(std::declval<Stream&>().write(nullptr, 0)),
                decltype(std::declval<Stream&>().read_exact(nullptr, 0)),
                decltype(std::declval<Stream&>().write_all(nullptr, 0)),
                decltype(std::declval<Stream&>().shutdown(SHUT_WR)), decltype(std::declval<Stream&>().close()),
                decltype(Stream::connect(SocketAddr())), decltype(Tcp::bind(SocketAddr()))>);
static_assert(
    all_movable<decltype(ringo::pipe()), decltype(std::declval<ringo::PipeReader&>().read(nullptr, 0)),
                decltype(std::declval<ringo::PipeReader&>().read_exact(nullptr, 0)),
                decltype(std::declval<ringo::PipeWriter&>().write(nullptr, 0)),
                decltype(std::declval<ringo::PipeWriter&>().write_all(nullptr, 0)),
                decltype(std::declval<ringo::PipeWriter&>().close()), decltype(std::declval<ringo::Fd&>().close())>);
static_assert(
    all_movable<
        decltype(std::declval<File&>().metadata()), decltype(std::declval<File&>().size()),
        decltype(ringo::fs::metadata("")), decltype(ringo::fs::symlink_metadata("")), decltype(ringo::fs::exists("")),
        decltype(File::open("")), decltype(std::declval<File&>().read_at(nullptr, 0, 0)),
        decltype(std::declval<File&>().write_at(nullptr, 0, 0)),
        decltype(std::declval<File&>().read_at_fixed({}, 0, 0)),
        decltype(std::declval<File&>().write_at_fixed({}, 0, 0)), decltype(std::declval<File&>().read_exact_at({}, 0)),
        decltype(std::declval<File&>().write_all_at(std::span<const std::byte>(), 0)),
        decltype(std::declval<File&>().sync()), decltype(std::declval<File&>().allocate(0, 0)),
        decltype(std::declval<File&>().truncate(0)), decltype(std::declval<File&>().close()),
        decltype(ringo::fs::remove("")), decltype(ringo::fs::rename("", "")), decltype(ringo::fs::create_dir(""))>);

// ------------------------------------------------------------------ helpers

// The other side of a when_any: yields an error `d` from now, or at once when cancelled
// (then it has lost, and its value is dropped).
template <class T>
Task<T> error_after(std::chrono::milliseconds d) {
    co_await ringo::sleep_for(d);
    co_return T(std::make_error_code(std::errc::timed_out));
}
// ... that never wins against something that finishes.
template <class T>
Task<T> never() {
    return error_after<T>(1h);
}

// A blocking socket of `a`'s family connected to `a` (the listener's backlog takes it at
// once): a client that is there before the accept is awaited.
ringo::Fd connected_client(const SocketAddr& a) {
    ringo::Fd c(::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(c.valid());
    EXPECT_EQ(::connect(c.get(), a.data(), a.size()), 0);
    return c;
}

SocketAddr local_of(int fd) {
    SocketAddr a;
    EXPECT_EQ(::getsockname(fd, a.data(), a.out_size()), 0);
    return a;
}

std::string unique_name(std::string_view what) {
    return "ringo-test-awaitables-" + std::string(what) + "-" + std::to_string(::getpid());
}

bool canceled(const std::error_code& e) { return e == std::errc::operation_canceled; }

// ------------------------------------------------------------------ accept

// with_timeout, when_all and when_any over accept() of `L` (TcpListener, UnixListener) whose
// connections are `S`s, bound to `addr`.
template <class L, class S>
Task<void> accept_cases(SocketAddr addr) {
    Result<L> bound = co_await L::bind(addr);
    EXPECT_TRUE(bound.ok()) << bound.message();
    L l = std::move(*bound);
    SocketAddr at = *l.local_addr();

    // Nobody connects: the deadline passes, the accept is cancelled.
    auto none = co_await with_timeout(l.accept(), 50ms);
    EXPECT_TRUE(none.timed_out());
    EXPECT_TRUE(canceled(none->error())) << none->message();

    // A client waits in the backlog: the accept yields its stream, in time.
    ringo::Fd c1 = connected_client(at);
    auto one = co_await with_timeout(l.accept(), 5s);
    EXPECT_FALSE(one.timed_out());
    EXPECT_TRUE(one->ok()) << one->message();
    if (one->ok()) {
        EXPECT_EQ((*one)->peer, local_of(c1.get()));
        EXPECT_EQ(::write(c1.get(), "hi", 2), 2);
        char buf[2];
        Result<void> got = co_await (*one)->stream.read_exact(buf, 2);
        EXPECT_TRUE(got.ok()) << got.message();
        EXPECT_EQ(std::string(buf, 2), "hi");
    }

    // Made now and awaited later: the accept lives in the with_timeout task meanwhile.
    auto later = with_timeout(l.accept(), 5s);
    ringo::Fd c2 = connected_client(at);
    auto two = co_await std::move(later);
    EXPECT_FALSE(two.timed_out());
    EXPECT_TRUE(two->ok() && (*two)->peer == local_of(c2.get())) << two->message();

    // when_all: the accept and the connect that it takes.
    auto [acc, conn] = co_await when_all(l.accept(), S::connect(at));
    EXPECT_TRUE(acc.ok() && conn.ok()) << acc.message() << " " << conn.message();
    if (acc.ok() && conn.ok()) {
        EXPECT_EQ(acc->peer, *conn->local_addr());
    }

    // when_any: a client is there, so the accept wins...
    ringo::Fd c3 = connected_client(at);
    auto [i, won] = co_await when_any(l.accept(), never<Result<ringo::net::BasicAccepted<S>>>());
    EXPECT_EQ(i, 0u);
    EXPECT_TRUE(won.ok() && won->peer == local_of(c3.get())) << won.message();
    // ... and nobody is: the other side wins, and the accept is cancelled without taking a
    // connection (the next client is still there for the next accept).
    auto [j, lost] = co_await when_any(l.accept(), error_after<Result<ringo::net::BasicAccepted<S>>>(20ms));
    EXPECT_EQ(j, 1u);
    EXPECT_EQ(lost.error(), std::errc::timed_out);
    ringo::Fd c4 = connected_client(at);
    auto next = co_await with_timeout(l.accept(), 5s);
    EXPECT_TRUE(next->ok() && (*next)->peer == local_of(c4.get())) << next->message();
}

TEST(ComposeAwaitables, TcpAccept) {
    int fds = open_fds();
    run(accept_cases<Tcp, Stream>(SocketAddr::v4_loopback(0)));
    EXPECT_EQ(open_fds(), fds);
}

TEST(ComposeAwaitables, UnixAccept) {
    int fds = open_fds();
    run(accept_cases<Unix, ringo::net::UnixStream>(*SocketAddr::unix_abstract(unique_name("accept"))));
    EXPECT_EQ(open_fds(), fds);
}

// ------------------------------------------------------------------ datagrams

// with_timeout, when_all and when_any over recv_from, send_to and connect of `D` (UdpSocket,
// UnixDatagram): a, b and c bound to `addr(0)`, `addr(1)` and `addr(2)`.
template <class D, class Addr>
Task<void> datagram_cases(Addr addr) {
    Result<D> ra = co_await D::bind(addr(0));
    Result<D> rb = co_await D::bind(addr(1));
    Result<D> rc = co_await D::bind(addr(2));
    EXPECT_TRUE(ra.ok() && rb.ok() && rc.ok()) << ra.message() << rb.message() << rc.message();
    D a = std::move(*ra), b = std::move(*rb), c = std::move(*rc);
    SocketAddr at_a = *a.local_addr(), at_b = *b.local_addr(), at_c = *c.local_addr();
    char buf[64];

    // Nothing comes: the deadline passes.
    auto none = co_await with_timeout(b.recv_from(buf, sizeof buf), 50ms);
    EXPECT_TRUE(none.timed_out());
    EXPECT_TRUE(canceled(none->error())) << none->message();

    // send_to and recv_from, each under a deadline that does not pass.
    auto sent = co_await with_timeout(a.send_to(std::string_view("ping"), at_b), 5s);
    EXPECT_FALSE(sent.timed_out());
    EXPECT_EQ(sent->value_or(0), 4u) << sent->message();
    auto got = co_await with_timeout(b.recv_from(buf, sizeof buf), 5s);
    EXPECT_FALSE(got.timed_out());
    EXPECT_TRUE(got->ok()) << got->message();
    if (got->ok()) {
        EXPECT_EQ(std::string(buf, (*got)->size), "ping");
        EXPECT_EQ((*got)->peer, at_a);
        EXPECT_FALSE((*got)->truncated);
    }

    // when_all: a receive and the send it waits for; two sends.
    char buf2[64];
    auto [r1, s1] = co_await when_all(b.recv_from(buf2, sizeof buf2), c.send_to(std::string_view("pong!"), at_b));
    EXPECT_EQ(s1.value_or(0), 5u) << s1.message();
    EXPECT_TRUE(r1.ok() && r1->size == 5 && r1->peer == at_c) << r1.message();
    EXPECT_EQ(std::string(buf2, r1.ok() ? r1->size : 0), "pong!");
    auto [s2, s3] = co_await when_all(a.send_to(std::string_view("x"), at_c), b.send_to(std::string_view("yy"), at_c));
    EXPECT_EQ(s2.value_or(0), 1u);
    EXPECT_EQ(s3.value_or(0), 2u);
    std::size_t total = 0;
    for (int k = 0; k < 2; ++k) {
        auto d = co_await with_timeout(c.recv_from(buf, sizeof buf), 5s);
        EXPECT_TRUE(d->ok()) << d->message();
        total += d->ok() ? (*d)->size : 0;
    }
    EXPECT_EQ(total, 3u);

    // when_any: of two receives the one that has a datagram wins (the other is cancelled);
    // a send wins against a sibling that does not finish.
    auto sent2 = co_await a.send_to(std::string_view("to-b"), at_b);
    EXPECT_EQ(sent2.value_or(0), 4u);
    char ba[64], bb[64];
    auto [i, d] = co_await when_any(a.recv_from(ba, sizeof ba), b.recv_from(bb, sizeof bb));
    EXPECT_EQ(i, 1u);
    EXPECT_TRUE(d.ok() && d->peer == at_a && std::string(bb, d->size) == "to-b") << d.message();
    auto [j, s4] = co_await when_any(c.send_to(std::string_view("abc"), at_a), never<Result<std::size_t>>());
    EXPECT_EQ(j, 0u);
    EXPECT_EQ(s4.value_or(0), 3u);
    auto d4 = co_await with_timeout(a.recv_from(buf, sizeof buf), 5s);
    EXPECT_TRUE(d4->ok() && (*d4)->peer == at_c && std::string(buf, (*d4)->size) == "abc") << d4->message();

    // connect, in each combinator, then a plain send to the connected peer. (A Unix-domain
    // datagram socket connects only to one that is unconnected or connected to it: c to a
    // first, then a and b to each other.)
    auto con = co_await with_timeout(c.connect(at_a), 5s);
    EXPECT_FALSE(con.timed_out());
    EXPECT_TRUE(con->ok()) << con->message();
    EXPECT_EQ(c.peer_addr().value_or(SocketAddr()), at_a);
    auto [ca, cb] = co_await when_all(a.connect(at_b), b.connect(at_a));
    EXPECT_TRUE(ca.ok() && cb.ok()) << ca.message() << " " << cb.message();
    auto [k, again] = co_await when_any(a.connect(at_b), never<Result<void>>());
    EXPECT_EQ(k, 0u);
    EXPECT_TRUE(again.ok()) << again.message();
    EXPECT_EQ(a.peer_addr().value_or(SocketAddr()), at_b);
    EXPECT_EQ(b.peer_addr().value_or(SocketAddr()), at_a);
    auto s5 = co_await a.send(std::string_view("via connect"));
    EXPECT_EQ(s5.value_or(0), 11u);
    auto d5 = co_await with_timeout(b.recv_from(buf, sizeof buf), 5s);
    EXPECT_TRUE(d5->ok() && (*d5)->peer == at_a && std::string(buf, (*d5)->size) == "via connect") << d5->message();
}

TEST(ComposeAwaitables, UdpDatagrams) {
    int fds = open_fds();
    run(datagram_cases<Udp>([](int) { return SocketAddr::v4_loopback(0); }));
    EXPECT_EQ(open_fds(), fds);
}

TEST(ComposeAwaitables, UnixDatagrams) {
    int fds = open_fds();
    run(datagram_cases<UnixDgram>(
        [](int n) { return *SocketAddr::unix_abstract(unique_name("dgram-" + std::to_string(n))); }));
    EXPECT_EQ(open_fds(), fds);
}

// ------------------------------------------------------------------ pipes

// Writes `text` into `p`'s write end and reads it back from its read end.
Task<bool> carries(ringo::PipeEnds& p, std::string_view text) {
    Result<void> w = co_await p.writer.write_all(text);
    std::string back(text.size(), '\0');
    Result<void> r = co_await p.reader.read_exact(back.data(), back.size());
    co_return w.ok() && r.ok() && back == text;
}

TEST(ComposeAwaitables, Pipe) {
    int fds = open_fds();
    run([]() -> Task<void> {
        auto p = co_await with_timeout(ringo::pipe(), 5s);
        EXPECT_FALSE(p.timed_out());
        EXPECT_TRUE(p->ok()) << p->message();
        if (p->ok()) {
            bool carried = co_await carries(**p, "through with_timeout");
            EXPECT_TRUE(carried);
        }

        auto later = when_all(ringo::pipe(), ringo::pipe()); // awaited after it was made
        auto [p1, p2] = co_await std::move(later);
        EXPECT_TRUE(p1.ok() && p2.ok()) << p1.message() << " " << p2.message();
        if (p1.ok() && p2.ok()) {
            EXPECT_NE(p1->reader.fd().get(), p2->reader.fd().get());
            bool first = co_await carries(*p1, "first");
            bool second = co_await carries(*p2, "second");
            EXPECT_TRUE(first && second);
        }

        auto [i, p3] = co_await when_any(ringo::pipe(), never<Result<ringo::PipeEnds>>());
        EXPECT_EQ(i, 0u);
        EXPECT_TRUE(p3.ok()) << p3.message();
        if (p3.ok()) {
            bool carried = co_await carries(*p3, "through when_any");
            EXPECT_TRUE(carried);
        }
        // Two pipes race: the loser's pipe, made or not, is not left open (checked below).
        auto [j, p4] = co_await when_any(ringo::pipe(), ringo::pipe());
        EXPECT_LT(j, 2u);
        EXPECT_TRUE(p4.ok()) << p4.message();
    }());
    EXPECT_EQ(open_fds(), fds);
}

// ------------------------------------------------------------------ metadata

TEST(ComposeAwaitables, FileAndPathMetadata) {
    TempDir dir;
    std::string path = dir.file("data"), link = dir.file("link"), missing = dir.file("missing");
    std::string content(12345, 'r');
    {
        ringo::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        ASSERT_EQ(::write(fd.get(), content.data(), content.size()), static_cast<ssize_t>(content.size()));
    }
    ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
    int fds = open_fds();
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(path);
        EXPECT_TRUE(f.ok()) << f.message();
        if (!f)
            co_return;

        auto size = co_await with_timeout(f->size(), 5s);
        EXPECT_FALSE(size.timed_out());
        EXPECT_EQ(size->value_or(0), 12345u) << size->message();
        auto meta = co_await with_timeout(f->metadata(), 5s);
        EXPECT_TRUE(meta->ok() && (*meta)->size == 12345u && (*meta)->is_file()) << meta->message();
        auto by_path = co_await with_timeout(ringo::fs::metadata(path), 5s);
        EXPECT_TRUE(by_path->ok() && (*by_path)->size == 12345u && (*by_path)->ino == (*meta)->ino);
        auto there = co_await with_timeout(ringo::fs::exists(path), 5s);
        EXPECT_TRUE(there->value_or(false));
        auto link_itself = co_await with_timeout(ringo::fs::symlink_metadata(link), 5s);
        EXPECT_TRUE(link_itself->ok() && (*link_itself)->is_symlink());

        auto [s, m, pm, lm, yes, no] =
            co_await when_all(f->size(), f->metadata(), ringo::fs::metadata(link), ringo::fs::symlink_metadata(link),
                              ringo::fs::exists(link), ringo::fs::exists(missing));
        EXPECT_EQ(s.value_or(0), 12345u);
        EXPECT_TRUE(m.ok() && m->size == 12345u);
        EXPECT_TRUE(pm.ok() && pm->is_file() && pm->size == 12345u); // followed the link
        EXPECT_TRUE(lm.ok() && lm->is_symlink() && lm->size == path.size());
        EXPECT_TRUE(yes.value_or(false));
        EXPECT_TRUE(no.ok() && !*no) << no.message();

        auto [i, s2] = co_await when_any(f->size(), never<Result<std::uint64_t>>());
        EXPECT_EQ(i, 0u);
        EXPECT_EQ(s2.value_or(0), 12345u);
        auto [j, m2] =
            co_await when_any(ringo::fs::metadata(missing), f->metadata(), ringo::fs::symlink_metadata(link));
        EXPECT_LT(j, 3u);
        if (j == 0) {
            EXPECT_EQ(m2.error(), std::errc::no_such_file_or_directory);
        } else {
            EXPECT_TRUE(m2.ok() && m2->size == (j == 1 ? 12345u : path.size()));
        }
        auto [k, e] = co_await when_any(ringo::fs::exists(missing), never<Result<bool>>());
        EXPECT_EQ(k, 0u);
        EXPECT_TRUE(e.ok() && !*e);
    }());
    EXPECT_EQ(open_fds(), fds);
}

// ------------------------------------------------------------------ the others

// The awaitables that already moved (one operation yielding a Result, read_exact/write_all,
// buffered reads and writes, Tasks): each through the three combinators too.
TEST(ComposeAwaitables, StreamsFilesAndDescriptors) {
    TempDir dir;
    std::string a = dir.file("a"), b = dir.file("b"), sub = dir.file("sub");
    int fds = open_fds();
    run([&]() -> Task<void> {
        // A TCP connection.
        Result<Tcp> l = co_await Tcp::bind(SocketAddr::v4_loopback(0));
        EXPECT_TRUE(l.ok());
        if (!l)
            co_return;
        auto [acc, conn] = co_await when_all(l->accept(), Stream::connect(*l->local_addr()));
        EXPECT_TRUE(acc.ok() && conn.ok());
        if (!acc || !conn)
            co_return;
        Stream& x = acc->stream;
        Stream& y = *conn;
        char buf[16];
        auto r0 = co_await with_timeout(x.read(buf, sizeof buf), 50ms);
        EXPECT_TRUE(r0.timed_out() && canceled(r0->error()));
        auto [w1, w2] = co_await when_all(y.write(std::string_view("abc")), y.write_all(std::string_view("def")));
        EXPECT_EQ(w1.value_or(0), 3u);
        EXPECT_TRUE(w2.ok());
        auto r1 = co_await with_timeout(x.read_exact(buf, 6), 5s);
        EXPECT_TRUE(r1->ok()) << r1->message();
        std::string both(buf, 6); // the two sends ran concurrently: either order
        EXPECT_TRUE(both == "abcdef" || both == "defabc") << both;
        auto [i, sh] = co_await when_any(y.shutdown(SHUT_WR), never<Result<void>>());
        EXPECT_TRUE(i == 0 && sh.ok());
        auto eof = co_await with_timeout(x.read(buf, sizeof buf), 5s);
        EXPECT_EQ(eof->value_or(1), 0u);
        auto [c1, c2] = co_await when_all(x.close(), y.close());
        EXPECT_TRUE(c1.ok() && c2.ok());

        // A buffered reader over a pipe.
        Result<ringo::PipeEnds> p = co_await ringo::pipe();
        EXPECT_TRUE(p.ok());
        if (!p)
            co_return;
        ringo::BufReader<ringo::PipeReader&> in(p->reader);
        auto pw = co_await with_timeout(p->writer.write(std::string_view("one\ntwo\n")), 5s);
        EXPECT_EQ(pw->value_or(0), 8u);
        std::string line;
        auto l1 = co_await with_timeout(in.read_line(line), 5s);
        EXPECT_TRUE(l1->value_or(false) && line == "one");
        auto [k, l2] = co_await when_any(in.read_line(line), never<Result<bool>>());
        EXPECT_TRUE(k == 0 && l2.value_or(false) && line == "two");
        auto [pc, rc] = co_await when_all(p->writer.close(), p->reader.close());
        EXPECT_TRUE(pc.ok() && rc.ok());

        // Files and paths.
        auto created = co_await with_timeout(File::create(a), 5s); // then opened again, to read too
        EXPECT_TRUE(created->ok()) << created->message();
        auto [oi, opened] = co_await when_any(File::open(a, {.read = true, .write = true}), never<Result<File>>());
        EXPECT_TRUE(oi == 0 && opened.ok()) << opened.message();
        if (!opened)
            co_return;
        File& f = *opened;
        auto [wa, wb] =
            co_await when_all(f.write_at(std::string_view("0123"), 0), f.write_all_at(std::string_view("456789"), 4));
        EXPECT_TRUE(wa.value_or(0) == 4 && wb.ok()) << wa.message() << " " << wb.message();
        std::byte r4[4], r6[6];
        auto [ra, rx] = co_await when_all(f.read_at(r4, 0), f.read_exact_at(r6, 4));
        EXPECT_EQ(ra.value_or(0), 4u);
        EXPECT_TRUE(rx.ok());
        EXPECT_EQ(std::string(reinterpret_cast<char*>(r4), 4) + std::string(reinterpret_cast<char*>(r6), 6),
                  "0123456789");
        auto [sy, ds] = co_await when_all(f.sync(), f.datasync());
        EXPECT_TRUE(sy.ok() && ds.ok()) << sy.message() << " " << ds.message();
        auto al = co_await with_timeout(f.allocate(0, 16), 5s);
        EXPECT_TRUE(al->ok() || al->error() == std::errc::operation_not_supported) << al->message();
        auto [ti, tr] = co_await when_any(f.truncate(10), never<Result<void>>());
        EXPECT_TRUE(ti == 0 && tr.ok()) << tr.message();
        auto [fi, fc] = co_await when_any(f.close(), never<Result<void>>());
        EXPECT_TRUE(fi == 0 && fc.ok());
        auto text = co_await with_timeout(ringo::fs::read_file(a), 5s);
        EXPECT_EQ(text->value_or(""), "0123456789");
        auto [mv, mk] = co_await when_all(ringo::fs::rename(a, b), ringo::fs::create_dir(sub));
        EXPECT_TRUE(mv.ok() && mk.ok());
        auto [ri, rm] = co_await when_any(ringo::fs::remove(b), never<Result<void>>());
        EXPECT_TRUE(ri == 0 && rm.ok());
        auto rd = co_await with_timeout(ringo::fs::remove_dir(sub), 5s);
        EXPECT_TRUE(rd->ok());

        // A bare descriptor's close is errno-style: with_timeout yields its int.
        ringo::Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        int closed = co_await with_timeout(fd.close(), 5s);
        EXPECT_EQ(closed, 0);
    }());
    EXPECT_EQ(open_fds(), fds);
}

} // namespace
