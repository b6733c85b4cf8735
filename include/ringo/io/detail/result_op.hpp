// ringo/io/detail/result_op.hpp - an operation awaited as it is, yielding a Result.
#pragma once

#include <coroutine>
#include <utility>

#include <ringo/io/detail/fail_note.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/base.hpp>

namespace ringo::detail {

/// An operation awaited as it is: the part ResultOp, SocketResultOp and PathResultOp share
/// (each turns the int result into a Result its way).
template <class O>
class AwaitsOp {
public:
    template <class... A>
    explicit AwaitsOp(A&&... a) noexcept : op_(std::forward<A>(a)...) {}
    bool await_ready() const noexcept { return false; }
    template <class P>
    [[gnu::always_inline]] bool await_suspend(std::coroutine_handle<P> h) {
        return op_.await_suspend(h);
    }

protected:
    O op_;
};

/// Operation `O` awaited as it is (same SQE, same await path: nothing is added but the
/// conversion of its result), its int result turned into Result<T> by result_of (the count
/// for T = std::size_t, success for void), an error noted as `What` ("fsync": the
/// operation's name, for the message of Result::value()'s exception). It holds the operation
/// rather than deriving from it, so the composition layer treats it as an awaitable yielding
/// a Result (when_all runs it as a branch) rather than as a bare operation yielding an int.
/// Shared by fs:: and net::.
template <class O, class T, const char* What = nullptr>
class [[nodiscard]] ResultOp : public AwaitsOp<O> {
public:
    using AwaitsOp<O>::AwaitsOp;
    Result<T> await_resume() noexcept { return result_of<T>(this->op_.await_resume(), What); }
};

/// The Result<T> of a socket operation that failed: its error, noted with the peer of `fd`
/// (see peer_note). Out of line and cold: the success path of SocketResultOp holds the
/// count alone.
template <class T>
[[nodiscard, gnu::cold, gnu::noinline]] Result<T> failed_socket_result(int r, const char* what, const char* with_peer,
                                                                       op::FileRef fd) noexcept {
    return Result<T>(errno_code(r), peer_note(what, with_peer, fd.fixed() ? -1 : fd.raw()));
}

/// ResultOp of an operation on a socket whose first argument is the socket: an error is
/// noted with the peer's address, looked up then ("read from 10.0.0.2:5000"; `What` alone
/// when there is none, or for a registered file's slot). The socket is the one the
/// operation holds: nothing more is kept for the note.
template <class O, class T, const char* What, const char* WithPeer>
class [[nodiscard]] SocketResultOp : public AwaitsOp<O> {
public:
    using AwaitsOp<O>::AwaitsOp;
    Result<T> await_resume() noexcept {
        const int r = this->op_.await_resume();
        if (r < 0) [[unlikely]]
            return failed_socket_result<T>(r, What, WithPeer, this->op_.fd_);
        return result_of<T>(r);
    }
};

/// ResultOp of an operation on a path (its arguments: a directory descriptor, the path, the
/// rest): an error is noted with the path ("remove /tmp/x"). The path is not copied: it is
/// valid until the await ends, as the operation needs it.
template <class O, class T, const char* What>
class [[nodiscard]] PathResultOp : public AwaitsOp<O> {
public:
    template <class... A>
    PathResultOp(int dfd, const char* path, A&&... a) noexcept
        : AwaitsOp<O>(dfd, path, std::forward<A>(a)...), path_(path) {}
    Result<T> await_resume() noexcept {
        const int r = this->op_.await_resume();
        if (r < 0) [[unlikely]]
            return Result<T>(errno_code(r), ErrorNote::made(What, path_));
        return result_of<T>(r);
    }

private:
    const char* path_;
};

/// The names errors are noted with.
namespace what {
inline constexpr char read[] = "read";
inline constexpr char write[] = "write";
inline constexpr char read_from[] = "read from";
inline constexpr char write_to[] = "write to";
inline constexpr char recv[] = "recv";
inline constexpr char send[] = "send";
inline constexpr char recv_from[] = "recv from";
inline constexpr char send_to[] = "send to";
inline constexpr char shutdown[] = "shutdown";
inline constexpr char shutdown_of[] = "shutdown of connection to";
inline constexpr char fsync[] = "fsync";
inline constexpr char fallocate[] = "fallocate";
inline constexpr char truncate[] = "truncate";
inline constexpr char close[] = "close";
inline constexpr char accept[] = "accept";
inline constexpr char accept_on[] = "accept on";
inline constexpr char remove[] = "remove";
inline constexpr char remove_dir[] = "remove directory";
inline constexpr char rename[] = "rename";
inline constexpr char create_dir[] = "create directory";
inline constexpr char stat[] = "stat";
inline constexpr char open[] = "open";
} // namespace what

} // namespace ringo::detail
