// ringo/net/accept_loop.hpp - a server's accept loop that keeps serving through a shortage of
// descriptors or memory, and the rule every accept loop of ringo follows for accept's errors.
#pragma once

#include <cerrno>
#include <system_error>
#include <type_traits>
#include <utility>

#include <ringo/compose/cancel.hpp>
#include <ringo/core/detail/chrono.hpp>
#include <ringo/core/task.hpp>
#include <ringo/core/time.hpp>
#include <ringo/io/result.hpp>

namespace ringo::net {

/// What a server does after accept(2) failed with errno `e`:
///   - `next`: the error concerned one connection, or none: accept the next one at once
///     (EINTR, EAGAIN, ECONNABORTED: the client reset it in the backlog, EPROTO, EPERM: a
///     firewall refused it);
///   - `back_off`: a shortage that the server's own connections will end as they close
///     (EMFILE: the process's descriptor limit, ENFILE: the system's, ENOBUFS, ENOMEM): wait
///     a little and accept again; the connection waits in the kernel's backlog meanwhile;
///   - `stop`: the listening socket itself is unusable (EBADF, EINVAL: not listening,
///     ENOTSOCK, EOPNOTSUPP, ...) or the accept was cancelled (ECANCELED).
/// As nginx, Tokio's and Asio's servers treat them: a remote client can cause only the first
/// two, so neither stops the server.
enum class AcceptFailure { next, back_off, stop };

[[nodiscard]] constexpr AcceptFailure classify_accept_error(int e) noexcept {
    switch (e) {
    case EINTR:
    case EAGAIN:
    case ECONNABORTED:
    case EPROTO:
    case EPERM: return AcceptFailure::next;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM: return AcceptFailure::back_off;
    default: return AcceptFailure::stop;
    }
}

/// How long an accept loop waits after its n-th shortage in a row (n from 0): 10 ms, doubled
/// each time up to 1 s, so a server out of descriptors neither spins nor stays deaf long
/// after one closes.
[[nodiscard]] constexpr std::chrono::milliseconds accept_back_off(unsigned n) noexcept {
    const long ms = 10L << (n < 7 ? n : 7);
    return std::chrono::milliseconds(ms < 1000 ? ms : 1000);
}

/// Accepts the connections of `listener` (a TcpListener or UnixListener, which must outlive
/// the loop) until the loop is cancelled, and hands each one to `on_accept(stream)`, which
/// usually starts a task to serve it and returns at once:
///
///     ringo::TaskScope conns;
///     auto serve_one = [&](ringo::net::TcpStream s) { conns.spawn(echo(std::move(s))); };
///     std::error_code e = co_await ringo::net::accept_loop(*listener, serve_one);
///
/// Errors follow classify_accept_error: one connection's error is skipped; out of
/// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the loop waits (accept_back_off:
/// 10 ms doubling to 1 s while the shortage lasts) and goes on, so a flood of clients cannot
/// stop the server; it ends only on an error of the listening socket itself, which it
/// yields, or on cancellation, when it yields an empty error_code (a clean stop, not a
/// failure: racing it against a stop signal with when_any is the usual way to end it).
/// on_accept's exceptions propagate (the stream it was given is closed). One multishot
/// accept (TcpListener::incoming) stays armed while the loop runs; no allocation per
/// connection.
template <class Listener, class OnAccept>
Task<std::error_code> accept_loop(Listener& listener, OnAccept on_accept) {
    auto in = listener.incoming();
    unsigned shortages = 0;
    for (;;) {
        auto c = co_await in.next();
        if (c) {
            shortages = 0;
            on_accept(std::move(*c));
            continue;
        }
        const std::error_code e = c.error();
        // (Not `co_await` in an if condition: GCC 12 mishandles it. The errno compared as a
        // number: comparing with std::errc is a virtual call, which UBSan checks by writing
        // to a pipe, and out of descriptors that check itself fails.)
        const bool cancelled = co_await cancellation_requested();
        if (cancelled || e.value() == ECANCELED)
            co_return std::error_code{};
        switch (classify_accept_error(e.value())) {
        case AcceptFailure::next: break;
        case AcceptFailure::back_off:
            (void)co_await sleep_for(accept_back_off(shortages));
            ++shortages;
            break;
        case AcceptFailure::stop: co_return e;
        }
    }
}

} // namespace ringo::net
