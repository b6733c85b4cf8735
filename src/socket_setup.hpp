// src/socket_setup.hpp - the Tasks that open, bind and connect a socket of ringo::net, shared
// by the socket types' set-up calls (src/sockets.cpp). Set-up is not on any hot path, so it is
// compiled here, once, rather than in every file that includes a socket header.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <system_error>
#include <utility>

#include <ringo/compose/timeout.hpp>
#include <ringo/core/task.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/detail/socket.hpp>
#include <ringo/net/socket.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net::detail {

/// A new socket (`type` | SOCK_CLOEXEC): IORING_OP_SOCKET, or socket(2) on a kernel before
/// 5.19. The descriptor or -errno.
Task<int> open_socket(int family, int type, int protocol);

/// The plain parts of setting up a socket (what follows `socket` when bind_as makes one).
struct BindSpec {
    int type;            // SOCK_STREAM, SOCK_DGRAM
    int protocol;        // IPPROTO_TCP, IPPROTO_UDP, 0
    ListenOptions opts;  // reuse_addr, reuse_port, backlog
    bool listen = false; // listen(opts.backlog) after bind
};

/// The socket options `spec` asks for (SO_REUSEADDR, SO_REUSEPORT) set on `s`: 0 or -errno.
inline int set_bind_options(int s, const BindSpec& spec) noexcept {
    int one = 1;
    if (spec.opts.reuse_addr && ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        return -errno;
    if (spec.opts.reuse_port && ::setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        return -errno;
    return 0;
}

/// A socket of `addr`'s family as `spec` says, bound to `addr` (and listening), as an S
/// (constructed from the Fd). EAFNOSUPPORT when `family_ok` is false. One frame per call.
template <class S>
Task<Result<S>> bind_as(SocketAddr addr, bool family_ok, BindSpec spec) {
    if (!family_ok)
        co_return std::make_error_code(std::errc::address_family_not_supported);
    int s = co_await open_socket(addr.family(), spec.type, spec.protocol);
    if (s < 0)
        co_return Result<S>(errno_code(s), addr_note("socket for", addr));
    Fd fd(s);
    if (int e = set_bind_options(s, spec); e < 0)
        co_return Result<S>(errno_code(e), addr_note("set options to bind", addr));
    int r = co_await op::bind(fd, addr.data(), addr.size());
    if (r < 0)
        co_return Result<S>(errno_code(r), addr_note("bind", addr));
    if (spec.listen)
        r = co_await op::listen(fd, spec.opts.backlog);
    if (r < 0)
        co_return Result<S>(errno_code(r), addr_note("listen on", addr));
    co_return S(std::move(fd));
}

/// bind_as with plain system calls (socket, setsockopt, bind, listen), for setting a socket
/// up where no runtime runs (a constructor, main before block_on).
template <class S>
Result<S> bind_sync_as(const SocketAddr& addr, bool family_ok, const BindSpec& spec) noexcept {
    if (!family_ok)
        return std::make_error_code(std::errc::address_family_not_supported);
    Fd fd(::socket(addr.family(), spec.type | SOCK_CLOEXEC, spec.protocol));
    if (!fd)
        return Result<S>(errno_code(errno), addr_note("socket for", addr));
    if (int e = set_bind_options(fd.get(), spec); e < 0)
        return Result<S>(errno_code(e), addr_note("set options to bind", addr));
    if (::bind(fd.get(), addr.data(), addr.size()) != 0)
        return Result<S>(errno_code(errno), addr_note("bind", addr));
    if (spec.listen && ::listen(fd.get(), spec.opts.backlog) != 0)
        return Result<S>(errno_code(errno), addr_note("listen on", addr));
    return S(std::move(fd));
}

/// A new socket of `addr`'s family and `type` connected to `addr` (IORING_OP_CONNECT), as an
/// S; with a `timeout`, the connect is cancelled after it (std::errc::timed_out). One frame
/// per call.
template <class S>
Task<Result<S>> connect_as(SocketAddr addr, bool family_ok, int type, int protocol,
                           std::optional<std::chrono::nanoseconds> timeout) {
    if (!family_ok)
        co_return std::make_error_code(std::errc::address_family_not_supported);
    int s = co_await open_socket(addr.family(), type, protocol);
    if (s < 0)
        co_return Result<S>(errno_code(s), addr_note("socket for", addr));
    Fd fd(s);
    int r;
    if (timeout) {
        r = co_await with_timeout(op::connect(fd, addr.data(), addr.size()), *timeout);
        if (r == -ETIME)
            co_return Result<S>(std::make_error_code(std::errc::timed_out), addr_note("connect to", addr));
    } else {
        r = co_await op::connect(fd, addr.data(), addr.size());
    }
    if (r < 0)
        co_return Result<S>(errno_code(r), addr_note("connect to", addr));
    co_return S(std::move(fd));
}

} // namespace ringo::net::detail
