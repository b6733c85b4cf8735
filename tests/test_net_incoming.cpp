// TcpListener::incoming and UnixListener::incoming: connections as a stream from one multishot
// accept. Many connections come out in order, a reader cancelled in next() leaves the stream
// usable, a stream dropped while armed (or with its task cancelled) leaves nothing open,
// EMFILE comes out once and the stream goes on, cancel(), a socket that is not listening,
// nothing allocated per connection, and the single-accept fallback of kernels without
// multishot accept.
#include <ringo/net/tcp.hpp>
#include <ringo/net/unix.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "alloc_counter.hpp" // replaces operator new: include it in one file of a program
#include "helpers.hpp"
#include "net_helpers.hpp"

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::Incoming;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;
using ringo::net::UnixListener;
using ringo::net::UnixStream;

namespace {

using ringo_test::open_fds;
using ringo_test::run;

// A client connected with plain system calls (the connection waits in the listener's
// backlog until accepted), which sends its number.
int connect_client(const SocketAddr& to, std::uint32_t number) {
    int fd = ::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::connect(fd, to.data(), to.size()), 0) << std::strerror(errno);
    EXPECT_EQ(::send(fd, &number, sizeof number, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof number));
    return fd;
}

void close_all(std::vector<int>& fds) {
    for (int fd : fds)
        ::close(fd);
    fds.clear();
}

// The number the client of `s` sent.
template <class Stream>
Task<std::uint32_t> number_of(Stream& s) {
    std::uint32_t n = 0;
    Result<void> r = co_await s.read_exact(&n, sizeof n);
    EXPECT_TRUE(r.ok()) << r.message();
    co_return n;
}

template <class Listener>
Task<void> many_in_order(Listener& l, int count) {
    SocketAddr at = *l.local_addr();
    auto in = l.incoming();
    std::vector<int> clients;
    for (int i = 0; i < count; ++i)
        clients.push_back(connect_client(at, static_cast<std::uint32_t>(i)));
    for (int i = 0; i < count; ++i) {
        auto c = co_await in.next();
        EXPECT_TRUE(c.ok()) << c.message();
        if (!c)
            break;
        std::uint32_t n = co_await number_of(*c);
        EXPECT_EQ(n, static_cast<std::uint32_t>(i));
        if (at.is_v4()) {
            SocketAddr client;
            ::getsockname(clients[i], client.data(), client.out_size());
            EXPECT_EQ(*c->peer_addr(), client);
        }
    }
    EXPECT_TRUE(in.multishot());
    EXPECT_TRUE(in.armed());
    EXPECT_GE(in.arms(), 1u);
    EXPECT_LE(in.arms(), 1u + count / 16); // re-armed only after pauses (64 queued)
    if (count >= 2 * 64) {                 // all were waiting when it was armed: it paused at 64 queued, and went on
        EXPECT_GE(in.arms(), 2u);
    }
    EXPECT_EQ(in.queued(), 0u);
    close_all(clients);
}

Task<void> tcp_many_in_order(int count) {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    EXPECT_TRUE(l.ok());
    co_await many_in_order(*l, count);
}

TEST(Incoming, ManyTcpConnectionsInOrder) {
    int before = open_fds();
    run(tcp_many_in_order(200));
    EXPECT_EQ(open_fds(), before);
}

Task<void> unix_many_in_order() {
    SocketAddr name = *SocketAddr::unix_abstract("ringo-incoming-" + std::to_string(::getpid()));
    Result<UnixListener> l = co_await UnixListener::bind(name);
    EXPECT_TRUE(l.ok());
    co_await many_in_order(*l, 20);
}

TEST(Incoming, ManyUnixConnectionsInOrder) {
    int before = open_fds();
    run(unix_many_in_order());
    EXPECT_EQ(open_fds(), before);
}

// Waits in next() until its task is cancelled: true when next() said so.
Task<bool> next_until_cancelled(Incoming<TcpStream>& in) {
    Result<TcpStream> c = co_await in.next();
    co_return c.error() == std::errc::operation_canceled;
}

// A reader waits in next() before the connection comes.
Task<void> connect_later(SocketAddr at, std::vector<int>* clients) {
    co_await ringo::yield();
    co_await ringo::yield();
    clients->push_back(connect_client(at, 42));
}

Task<void> cancel_the_reader_then_go_on() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    auto in = l->incoming();
    auto h = ringo::spawn(next_until_cancelled(in));
    co_await ringo_test::let_others_run();
    EXPECT_TRUE(in.armed());
    h.cancel();
    bool cancelled = co_await h;
    EXPECT_TRUE(cancelled);
    EXPECT_TRUE(in.armed()); // still armed: the stream goes on
    std::vector<int> clients;
    auto later = ringo::spawn(connect_later(*l->local_addr(), &clients));
    Result<TcpStream> c = co_await in.next();
    EXPECT_TRUE(c.ok()) << c.message();
    std::uint32_t n = co_await number_of(*c);
    EXPECT_EQ(n, 42u);
    co_await later;
    EXPECT_EQ(in.arms(), 1u);
    close_all(clients);
}

TEST(Incoming, ACancelledReaderLeavesTheStreamArmed) { run(cancel_the_reader_then_go_on()); }

Task<void> drop_while_armed() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    SocketAddr at = *l->local_addr();
    std::vector<int> clients;
    {
        auto in = l->incoming();
        clients.push_back(connect_client(at, 0));
        Result<TcpStream> c = co_await in.next();
        EXPECT_TRUE(c.ok());
        for (std::uint32_t i = 1; i < 6; ++i) // accepted by the armed multishot, queued
            clients.push_back(connect_client(at, i));
        co_await ringo::sleep_for(20ms); // the loop waits in the kernel, which accepts them
        EXPECT_TRUE(in.armed());
        EXPECT_GT(in.queued(), 0u);
    } // dropped armed, with connections queued: they are closed, the multishot cancelled
    co_await ringo::sleep_for(20ms);
    for (std::size_t i = 1; i < clients.size(); ++i) { // each accepted one was closed
        char b;
        ssize_t r = ::recv(clients[i], &b, 1, MSG_DONTWAIT); // 0, or a reset (its bytes were unread)
        EXPECT_TRUE(r == 0 || (r < 0 && errno == ECONNRESET)) << "client " << i << ": " << std::strerror(errno);
    }
    // The listener still works with a single accept.
    clients.push_back(connect_client(at, 7));
    Result<ringo::net::Accepted> a = co_await l->accept();
    EXPECT_TRUE(a.ok());
    std::uint32_t n = co_await number_of(a->stream);
    EXPECT_EQ(n, 7u);
    close_all(clients);
}

TEST(Incoming, DroppedWhileArmedLeavesNothingOpen) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(drop_while_armed());
    }
    EXPECT_EQ(open_fds(), before);
}

// The stream lives in the frame of a task that is cancelled while it waits in next().
Task<int> serve_until_cancelled(TcpListener& l) {
    auto in = l.incoming();
    int served = 0;
    for (;;) {
        Result<TcpStream> c = co_await in.next();
        if (!c)
            break;
        ++served;
    }
    co_return served;
}

Task<void> cancel_the_task() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    std::vector<int> clients;
    auto h = ringo::spawn(serve_until_cancelled(*l));
    for (std::uint32_t i = 0; i < 3; ++i)
        clients.push_back(connect_client(*l->local_addr(), i));
    co_await ringo::sleep_for(20ms);
    h.cancel();
    int served = co_await h;
    EXPECT_EQ(served, 3);
    close_all(clients);
}

TEST(Incoming, CancelledTaskLeavesNothingOpen) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.block_on(cancel_the_task());
    }
    EXPECT_EQ(open_fds(), before);
}

// The runtime goes while the stream is armed and kept outside it: the runtime cancels the
// multishot and delivers its end; the stream, dropped later, frees what is left.
Task<void> arm_and_keep(TcpListener& l, Incoming<TcpStream>& in, std::vector<int>& clients) {
    in = l.incoming();
    clients.push_back(connect_client(*l.local_addr(), 0));
    Result<TcpStream> c = co_await in.next();
    EXPECT_TRUE(c.ok());
    clients.push_back(connect_client(*l.local_addr(), 1));
    co_await ringo::sleep_for(20ms);
    EXPECT_TRUE(in.armed());
    EXPECT_EQ(in.queued(), 1u);
}

Task<TcpListener> listener_on_loopback() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    co_return l ? std::move(*l) : TcpListener();
}

TEST(Incoming, TheRuntimeGoesFirst) {
    int before = open_fds();
    std::vector<int> clients;
    {
        TcpListener l;
        Incoming<TcpStream> in;
        {
            ringo::Runtime rt;
            l = rt.block_on(listener_on_loopback());
            rt.block_on(arm_and_keep(l, in, clients));
        }
        EXPECT_FALSE(in.armed());
        EXPECT_EQ(in.queued(), 1u); // closed when `in` goes
    }
    close_all(clients);
    EXPECT_EQ(open_fds(), before);
}

Task<void> cancel_the_stream() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    auto in = l->incoming();
    std::vector<int> clients{connect_client(*l->local_addr(), 0)};
    Result<TcpStream> first = co_await in.next();
    EXPECT_TRUE(first.ok());
    clients.push_back(connect_client(*l->local_addr(), 1));
    co_await ringo::sleep_for(20ms);
    EXPECT_EQ(in.queued(), 1u);
    in.cancel();
    Result<TcpStream> queued = co_await in.next(); // what was queued still comes out
    EXPECT_TRUE(queued.ok()) << queued.message();
    Result<TcpStream> end = co_await in.next();
    EXPECT_EQ(end.error(), std::errc::operation_canceled);
    Result<TcpStream> again = co_await in.next();
    EXPECT_EQ(again.error(), std::errc::operation_canceled);
    EXPECT_TRUE(in.done());
    EXPECT_FALSE(in.armed());
    Incoming<TcpStream> empty;
    Result<TcpStream> none = co_await empty.next();
    EXPECT_EQ(none.error(), std::errc::bad_file_descriptor);
    close_all(clients);
}

TEST(Incoming, CancelEndsTheStreamAfterWhatIsQueued) { run(cancel_the_stream()); }

Task<void> not_listening() {
    Result<TcpStream> bound = co_await TcpStream::connect(SocketAddr::v4_loopback(1)); // refused
    EXPECT_FALSE(bound.ok());
    TcpListener l(ringo::Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))); // never listened
    auto in = l.incoming();
    Result<TcpStream> c = co_await in.next();
    EXPECT_EQ(c.error(), std::errc::invalid_argument) << c.message();
    Result<TcpStream> c2 = co_await in.next();
    EXPECT_EQ(c2.error(), std::errc::invalid_argument);
    TcpListener closed; // owns no descriptor
    auto none = closed.incoming();
    Result<TcpStream> c3 = co_await none.next();
    EXPECT_EQ(c3.error(), std::errc::bad_file_descriptor) << c3.message();
    EXPECT_TRUE(none.done());
}

TEST(Incoming, ASocketThatIsNotListening) { run(not_listening()); }

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGO_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define RINGO_TEST_SANITIZED 1
#endif
#endif

// The lowest descriptor number free now: what the next accept would get.
int lowest_free_fd(int open_fd) {
    int fd = ::fcntl(open_fd, F_DUPFD_CLOEXEC, 0);
    ::close(fd);
    return fd;
}

// The kernel reads the descriptor limit when the accept is prepared: the multishot is armed
// (at the first next()) under a limit that leaves no descriptor free, and re-armed after it
// is raised again.
Task<void> out_of_descriptors_then_ok() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    SocketAddr at = *l->local_addr();
    auto in = l->incoming();
    std::vector<int> clients{connect_client(at, 1)};
    rlimit old{};
    ::getrlimit(RLIMIT_NOFILE, &old);
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(lowest_free_fd(l->fd().get()));
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    Result<TcpStream> failed = co_await in.next();
    ::setrlimit(RLIMIT_NOFILE, &old);
    EXPECT_EQ(failed.error(), std::errc::too_many_files_open) << failed.message();
    EXPECT_FALSE(in.armed()); // the kernel ended the multishot
    EXPECT_FALSE(in.done());
    Result<TcpStream> then = co_await in.next(); // re-armed: the connection waited in the backlog
    EXPECT_TRUE(then.ok()) << then.message();
    if (then) {
        std::uint32_t n = co_await number_of(*then);
        EXPECT_EQ(n, 1u);
    }
    EXPECT_EQ(in.arms(), 2u);
    close_all(clients);
}

TEST(Incoming, OutOfDescriptorsThenGoesOn) {
#ifdef RINGO_TEST_SANITIZED
    GTEST_SKIP() << "sanitizer runtimes open descriptors of their own";
#endif
    int before = open_fds();
    run(out_of_descriptors_then_ok());
    EXPECT_EQ(open_fds(), before);
}

struct Counts {
    long heap = -1;
    std::uint64_t frames = 1;
};

Task<Counts> count_allocations() {
    Counts k;
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    SocketAddr at = *l->local_addr();
    auto in = l->incoming();
    std::vector<int> clients;
    clients.reserve(60);
    clients.push_back(connect_client(at, 0));
    Result<TcpStream> warm = co_await in.next();
    EXPECT_TRUE(warm.ok());
    long h0 = g_allocs.load();
    std::uint64_t f0 = ringo::detail::t_frames_allocated;
    for (std::uint32_t i = 1; i < 51; ++i) {
        clients.push_back(connect_client(at, i));
        Result<TcpStream> c = co_await in.next();
        EXPECT_TRUE(c.ok());
    }
    k.heap = g_allocs.load() - h0;
    k.frames = ringo::detail::t_frames_allocated - f0;
    close_all(clients);
    co_return k;
}

// next() allocates nothing per connection: no frame, no heap.
TEST(Incoming, NoAllocationPerConnection) {
#ifdef RINGO_TEST_NO_NEW_COUNT
    GTEST_SKIP() << "operator new is not counted under TSan";
#endif
    Counts k = run(count_allocations());
    EXPECT_EQ(k.heap, 0);
    EXPECT_EQ(k.frames, 0u);
}

Task<void> single_accepts() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    SocketAddr at = *l->local_addr();
    auto in = l->incoming();
    std::vector<int> clients;
    for (std::uint32_t i = 0; i < 5; ++i)
        clients.push_back(connect_client(at, i));
    for (std::uint32_t i = 0; i < 5; ++i) {
        Result<TcpStream> c = co_await in.next();
        EXPECT_TRUE(c.ok()) << c.message();
        if (!c)
            break;
        std::uint32_t n = co_await number_of(*c);
        EXPECT_EQ(n, i);
    }
    EXPECT_FALSE(in.multishot());
    EXPECT_EQ(in.arms(), 0u);
    auto h = ringo::spawn(next_until_cancelled(in));
    co_await ringo::yield();
    h.cancel();
    bool cancelled = co_await h;
    EXPECT_TRUE(cancelled);
    close_all(clients);
}

// A kernel without multishot accept: the probe without IORING_OP_SOCKET (the same release).
TEST(Incoming, SingleAcceptsWithoutMultishot) {
    int before = open_fds();
    {
        ringo::Runtime rt;
        rt.probe().set_supported(ringo::uring::compat::opcode::socket, false);
        rt.block_on(single_accepts());
    }
    EXPECT_EQ(open_fds(), before);
}

// --- docs/net.md, "Accepting as a stream": serve_all, as it stands there --------------------
namespace docs_example {
// Answers one connection's bytes with the same bytes (the TCP section's echo, shorter).
Task<void> echo(TcpStream s) {
    char buf[64];
    Result<std::size_t> n = co_await s.read(buf, sizeof buf);
    if (n && *n > 0) {
        Result<void> w = co_await s.write_all(buf, *n);
        (void)w;
    }
}

Task<void> serve_all(TcpListener& l) {
    auto in = l.incoming(); // armed at the first next()
    for (;;) {
        Result<TcpStream> c = co_await in.next();
        if (!c) {
            if (c.error() == std::errc::too_many_files_open) {
                co_await ringo::sleep_for(10ms); // the next next() arms it again
                continue;
            }
            break; // cancelled, or the listener is unusable
        }
        ringo::spawn(echo(std::move(*c))).detach();
    }
}
} // namespace docs_example

Task<int> ask_serve_all() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    auto server = ringo::spawn(docs_example::serve_all(*l));
    int answered = 0;
    for (int i = 0; i < 3; ++i) {
        Result<TcpStream> s = co_await TcpStream::connect(*l->local_addr());
        Result<void> w = co_await s->write_all(std::string_view("hi"));
        char buf[2];
        Result<void> r = co_await s->read_exact(buf, sizeof buf);
        if (w && r && std::string(buf, 2) == "hi")
            ++answered;
    }
    server.cancel();
    co_await server;
    co_return answered;
}

TEST(IncomingDocs, ServeAllExampleRuns) {
    int before = open_fds();
    EXPECT_EQ(run(ask_serve_all()), 3);
    EXPECT_EQ(open_fds(), before);
}

} // namespace
