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

/// What an awaitable that moves bytes says when it fails: its operation's name, and, for a
/// socket, how to name the peer. Three words in the awaitable; the note itself is made only
/// on failure.
struct FailNote {
    const char* what = nullptr;      // "read"
    const char* with_peer = nullptr; // "read from", for a socket (then fd >= 0)
    int fd = -1;
    [[nodiscard]] ErrorNote make() const noexcept {
        return with_peer ? peer_note(what, with_peer, fd) : ErrorNote(what);
    }
};

} // namespace ringo::detail
