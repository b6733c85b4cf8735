// Shared pieces of the ringo::net test suites.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/tcp.hpp>

namespace ringo_test {

/// Whether a socket can be bound to the IPv6 loopback here (some containers have none).
inline bool have_ipv6_loopback() {
    int s = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ringo::net::SocketAddr a = ringo::net::SocketAddr::v6_loopback(0);
    bool ok = s >= 0 && ::bind(s, a.data(), a.size()) == 0;
    if (s >= 0)
        ::close(s);
    return ok;
}

/// A loopback address nothing listens on: a listener's, bound and closed again (a connect
/// there is refused).
inline ringo::Task<ringo::net::SocketAddr> refusing_address() {
    ringo::Result<ringo::net::TcpListener> l =
        co_await ringo::net::TcpListener::bind(ringo::net::SocketAddr::v4_loopback(0));
    ringo::net::SocketAddr where = *l->local_addr();
    ringo::Result<void> c = co_await l->close();
    (void)c;
    co_return where;
}

/// Runs `t` on a runtime of its own and returns its value.
template <class T>
T run(ringo::Task<T> t) {
    ringo::Runtime rt;
    return rt.block_on(std::move(t));
}

/// Accepts one connection on `l` (a TcpListener or UnixListener) and echoes it until the peer
/// shuts down its side; the peer's address goes to `*peer` when given.
template <class Listener>
ringo::Task<void> echo_one(Listener& l, ringo::net::SocketAddr* peer = nullptr) {
    auto c = co_await l.accept();
    if (!c)
        co_return;
    if (peer)
        *peer = c->peer;
    auto s = std::move(c->stream);
    char buf[4096];
    for (;;) {
        ringo::Result<std::size_t> n = co_await s.read(buf, sizeof buf);
        if (!n || *n == 0)
            break;
        ringo::Result<void> w = co_await s.write_all(buf, *n);
        if (!w)
            break;
    }
}

} // namespace ringo_test
