// net::accept_loop and the rule for accept's errors (classify_accept_error): connections are
// handed over in order, a cancelled loop ends with no error, running out of descriptors does
// not stop it (it backs off and serves the connection once descriptors are free), and a
// socket that cannot accept ends it with that socket's error.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <system_error>
#include <vector>

#include "helpers.hpp"
#include "net_helpers.hpp"

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::AcceptFailure;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;

namespace {

using ringo_test::open_fds;
using ringo_test::run;

static_assert(ringo::net::classify_accept_error(EMFILE) == AcceptFailure::back_off);
static_assert(ringo::net::classify_accept_error(ENFILE) == AcceptFailure::back_off);
static_assert(ringo::net::classify_accept_error(ENOBUFS) == AcceptFailure::back_off);
static_assert(ringo::net::classify_accept_error(ENOMEM) == AcceptFailure::back_off);
static_assert(ringo::net::classify_accept_error(ECONNABORTED) == AcceptFailure::next);
static_assert(ringo::net::classify_accept_error(EPERM) == AcceptFailure::next);
static_assert(ringo::net::classify_accept_error(EBADF) == AcceptFailure::stop);
static_assert(ringo::net::classify_accept_error(EINVAL) == AcceptFailure::stop);
static_assert(ringo::net::accept_back_off(0) == 10ms);
static_assert(ringo::net::accept_back_off(1) == 20ms);
static_assert(ringo::net::accept_back_off(6) == 640ms);
static_assert(ringo::net::accept_back_off(7) == 1000ms);
static_assert(ringo::net::accept_back_off(1000) == 1000ms);

int connect_plain(const SocketAddr& to) {
    int fd = ::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::connect(fd, to.data(), to.size()), 0) << std::strerror(errno);
    return fd;
}

// Three connections are handed over; cancelling the loop ends it with no error.
Task<int> serves_then_stops_cleanly() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    std::vector<TcpStream> got;
    auto keep = [&](TcpStream s) { got.push_back(std::move(s)); };
    auto loop = ringo::spawn(ringo::net::accept_loop(*l, keep));
    std::vector<int> clients;
    for (int i = 0; i < 3; ++i)
        clients.push_back(connect_plain(*l->local_addr()));
    for (int i = 0; i < 200 && got.size() < 3; ++i)
        co_await ringo::sleep_for(5ms);
    EXPECT_EQ(got.size(), 3u);
    loop.cancel();
    std::error_code e = co_await loop;
    EXPECT_FALSE(e) << e.message(); // a clean stop
    for (int fd : clients)
        ::close(fd);
    co_return static_cast<int>(got.size());
}

TEST(AcceptLoop, ServesThenStopsCleanlyWhenCancelled) {
    int before = open_fds();
    EXPECT_EQ(run(serves_then_stops_cleanly()), 3);
    EXPECT_EQ(open_fds(), before);
}

// With no descriptor free, accept fails with EMFILE: the loop waits and tries again instead
// of ending, and serves the waiting client once the limit is raised.
Task<void> out_of_descriptors_keeps_serving() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    int client = connect_plain(*l->local_addr());
    int lowest = ::fcntl(client, F_DUPFD_CLOEXEC, 0); // the lowest free number
    ::close(lowest);
    rlimit old{};
    ::getrlimit(RLIMIT_NOFILE, &old);
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(lowest);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    int served = 0;
    auto count = [&](TcpStream) { ++served; };
    auto loop = ringo::spawn(ringo::net::accept_loop(*l, count));
    co_await ringo::sleep_for(120ms); // several EMFILE and back-offs (10, 20, 40 ms ...)
    EXPECT_FALSE(loop.is_finished()); // still serving
    EXPECT_EQ(served, 0);
    ::setrlimit(RLIMIT_NOFILE, &old);
    for (int i = 0; i < 400 && served == 0; ++i) // the next try (at most 1 s away) takes it
        co_await ringo::sleep_for(5ms);
    EXPECT_EQ(served, 1);
    loop.cancel();
    std::error_code e = co_await loop;
    EXPECT_FALSE(e) << e.message();
    ::close(client);
}

TEST(AcceptLoop, OutOfDescriptorsBacksOffAndGoesOn) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "sanitizer runtimes open descriptors of their own";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    GTEST_SKIP() << "sanitizer runtimes open descriptors of their own";
#endif
#endif
    int before = open_fds();
    run(out_of_descriptors_keeps_serving());
    EXPECT_EQ(open_fds(), before);
}

// A listening socket shut down for reading accepts nothing more (EINVAL): the loop ends and
// yields that error.
Task<std::error_code> unusable_socket() {
    Result<TcpListener> l = co_await TcpListener::bind(SocketAddr::v4_loopback(0));
    EXPECT_EQ(::shutdown(l->fd().get(), SHUT_RD), 0);
    int served = 0;
    auto count = [&](TcpStream) { ++served; };
    std::error_code e = co_await ringo::net::accept_loop(*l, count);
    EXPECT_EQ(served, 0);
    co_return e;
}

TEST(AcceptLoop, AnUnusableSocketEndsItWithItsError) {
    std::error_code e = run(unusable_socket());
    EXPECT_EQ(e, std::errc::invalid_argument) << e.message();
}

} // namespace
