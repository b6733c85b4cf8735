// ringo/io/detail/fail_note.hpp - what an awaitable of the I/O layer says failed, made into
// an ErrorNote only when it fails.
#pragma once

#include <ringo/io/result.hpp>

namespace ringo::detail {

/// The note of a socket operation that failed: `with_peer` and the address of the peer of
/// `fd` ("read from 10.0.0.2:5000", looked up with getpeername(2) now), or `what` alone when
/// `fd` is not a connected socket (or a registered file's slot: fd < 0). Defined with
/// SocketAddr (src/address.cpp).
ErrorNote peer_note(const char* what, const char* with_peer, int fd) noexcept;

/// The same with the socket's own address ("accept on 0.0.0.0:7000", getsockname(2)).
ErrorNote local_note(const char* what, const char* with_local, int fd) noexcept;

/// What an awaitable that moves bytes says when it fails, as a type: its operation's name
/// (`What`: "read") and, for a socket, how to name the peer (`WithPeer`: "read from", the
/// peer of the descriptor the failed step named). The awaitable stores nothing for it; the
/// note is made only on failure. FailNote<> says nothing.
template <const char* What = nullptr, const char* WithPeer = nullptr>
struct FailNote {
    /// The note of a failed step `step` (an op:: operation on the socket: its `fd_`).
    template <class Step>
    [[nodiscard]] static ErrorNote make(const Step& step) noexcept {
        return peer_note(What, WithPeer, step.fd_.fixed() ? -1 : step.fd_.raw());
    }
};
/// No peer to name: `What` alone. (A specialization rather than a test of WithPeer, which
/// GCC 12 does not take as a constant expression under -fsanitize=undefined.)
template <const char* What>
struct FailNote<What, nullptr> {
    template <class Step>
    [[nodiscard]] static ErrorNote make(const Step&) noexcept {
        return ErrorNote(What);
    }
};

} // namespace ringo::detail
