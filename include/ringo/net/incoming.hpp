// ringo/net/incoming.hpp - a listener's connections as a stream: one multishot accept
// (IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT, 5.19) that stays armed, consumed with
// `co_await in.next()`; single accepts on kernels without it.
#pragma once

#include <cstdint>

#include <ringo/core/runtime.hpp>
#include <ringo/net/detail/incoming.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/stream.hpp>

namespace ringo::net {

/// A listener's connections as a stream (TcpListener::incoming, UnixListener::incoming):
///
///     auto in = listener.incoming();
///     for (;;) {
///         ringo::Result<ringo::net::TcpStream> c = co_await in.next();
///         if (!c)
///             break;  // or: sleep and go on after EMFILE, see below
///         ringo::spawn(serve(std::move(*c))).detach();
///     }
///
/// One IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT (Linux 5.19) stays armed and posts one
/// CQE per connection; the stream queues them (in the order the kernel accepted them) until
/// next() takes them. The multishot is armed at the first next(). Costs: the stream's state
/// comes from a per-thread pool (the first stream of a thread allocates it); next() is
/// awaited directly (no frame) and allocates nothing, unless more than 16 connections wait
/// at once (the queue doubles, once per stream). With 64 queued the
/// multishot pauses (ASYNC_CANCEL: later connections wait in the kernel's backlog) and goes on
/// once the reader has taken all but 16. Multishot accept gives no peer address: take it with
/// the stream's peer_addr() (getpeername).
///
/// Errors: an error the kernel ends the multishot with comes out of next() once, in order
/// (EMFILE/ENFILE: out of descriptors, ENOMEM, ECONNABORTED ...); the next next() arms the
/// multishot again, so a server can wait a little and go on. EBADF, EINVAL (the socket is
/// not listening), ENOTSOCK end the stream: every next() yields that error from then on.
///
/// Cancelling the task that waits in next() makes next() yield ECANCELED and leaves the
/// multishot armed (the stream can be awaited again). Destroying the stream while armed
/// cancels the multishot (ASYNC_CANCEL) and closes every connection accepted and not yet
/// taken, also those the kernel still posts before the cancellation ends it; nothing leaks.
/// cancel() stops it for good: what was queued still comes out, then ECANCELED.
///
/// On a kernel without multishot accept (the runtime's probe lacks IORING_OP_SOCKET, from
/// the same release) each next() that waits arms one IORING_OP_ACCEPT: the same results
/// (a connection accepted for a cancelled reader waits for the next next()). multishot()
/// tells which.
///
/// Owner thread of the runtime it was made on (incoming() called elsewhere: next() yields
/// ENXIO); one reader at a time (EBUSY for a second). The listener must outlive the stream; close the listener only
/// after the stream is gone or cancel()led (the multishot holds a reference to the socket until it ends).
template <class Stream>
class Incoming : public op::MultishotStream<detail::AcceptNode<Stream>> {
    using Node = detail::AcceptNode<Stream>;
    using Base = op::MultishotStream<Node>;

public:
    /// An empty stream: next() yields EBADF.
    Incoming() noexcept = default;
    /// The connections of listening socket `listener` (armed at the first next()), for the
    /// runtime of the calling thread.
    explicit Incoming(op::FileRef listener) : Base(Node::make(Runtime::current(), listener)) {}

    // next(): Result<Stream>, the next connection (SOCK_CLOEXEC) or an error (see the class).
    // EBADF for an empty (moved-from) stream, EBUSY when another coroutine already waits in
    // next(), ENXIO outside the stream's runtime, ECANCELED in a cancelled task.
    // cancel(): stops accepting; what was queued still comes out, then ECANCELED.
    // armed(), done(): while the accept is in the kernel; ended and nothing left to take.

    /// False on a kernel without multishot accept (single accepts instead).
    [[nodiscard]] bool multishot() const noexcept { return this->n_ && !this->n_->single; }
    /// Times the multishot was armed (1 + re-arms after an error, a pause or a CQ overflow).
    [[nodiscard]] std::uint64_t arms() const noexcept { return this->n_ ? this->n_->arms : 0; }
    /// Connections (and errors) accepted and not yet taken by next().
    [[nodiscard]] unsigned queued() const noexcept { return this->n_ ? this->n_->count : 0; }
};

} // namespace ringo::net
