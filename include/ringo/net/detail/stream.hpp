// ringo/net/detail/stream.hpp - the awaitables of net/stream.hpp's stream and listener sockets:
// shutdown, and accept with its peer address.
#pragma once

#include <sys/socket.h>

#include <coroutine>

#include <ringo/io/fd.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/detail/socket.hpp>
#include <ringo/op/socket.hpp>

namespace ringo::net {

template <class Stream>
struct BasicAccepted; // net/stream.hpp

namespace detail {

using ShutdownAwait = SocketResultOp<op::Shutdown, void, what::shutdown, what::shutdown_of>;

/// One IORING_OP_ACCEPT (SOCK_CLOEXEC) whose peer address lives in the awaitable (in the
/// awaiting frame: no allocation), yielding the connection as a Stream. The kernel writes
/// into it, so it is not copied, and moved only before it is awaited (as with_timeout,
/// when_all and when_any do): the operation is pointed at the address in await_suspend, not
/// before.
template <class Stream>
class [[nodiscard]] AcceptAwait {
public:
    explicit AcceptAwait(op::FileRef fd) noexcept : fd_(fd), op_(fd, nullptr, nullptr, SOCK_CLOEXEC) {}
    AcceptAwait(AcceptAwait&&) noexcept = default;
    AcceptAwait(const AcceptAwait&) = delete;
    AcceptAwait& operator=(const AcceptAwait&) = delete;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        op_.addr_ = peer_.data();
        op_.len_ = peer_.out_size();
        return op_.await_suspend(h);
    }
    Result<BasicAccepted<Stream>> await_resume() noexcept {
        int r = op_.await_resume();
        if (r < 0) [[unlikely]]
            return Result<BasicAccepted<Stream>>(
                errno_code(r), ringo::detail::local_note(what::accept, what::accept_on, fd_.fixed() ? -1 : fd_.raw()));
        return BasicAccepted<Stream>{Stream(Fd(r)), peer_};
    }

private:
    op::FileRef fd_; // the listener (for an error's note)
    SocketAddr peer_;
    op::Accept op_;
};

} // namespace detail
} // namespace ringo::net
