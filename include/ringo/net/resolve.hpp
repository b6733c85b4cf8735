// ringo/net/resolve.hpp - resolve(host, port): a host name's socket addresses, looked up with
// getaddrinfo(3) on the blocking pool.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <ringo/core/task.hpp>
#include <ringo/io/result.hpp>
#include <ringo/net/address.hpp>

namespace ringo::net {

/// getaddrinfo(3)'s errors (its EAI_* codes), in resolve_category(): test with
/// `r.error() == net::ResolveError::not_found`. Their messages are gai_strerror's. An
/// EAI_SYSTEM failure is reported as its errno in std::system_category() instead.
enum class ResolveError : int {
    not_found = EAI_NONAME,   ///< "Name or service not known": no such host
    no_address = EAI_NODATA,  ///< "No address associated with hostname": the name has no address of the family asked
    try_again = EAI_AGAIN,    ///< "Temporary failure in name resolution": no answer from DNS now
    failed = EAI_FAIL,        ///< "Non-recoverable failure in name resolution"
    family = EAI_FAMILY,      ///< "ai_family not supported"
    memory = EAI_MEMORY,      ///< "Memory allocation failure"
    service = EAI_SERVICE,    ///< "Servname not supported for ai_socktype"
    bad_flags = EAI_BADFLAGS, ///< "Bad value for ai_flags"
};

/// The category of getaddrinfo's errors (one object in the program), named "resolve".
[[nodiscard]] const std::error_category& resolve_category() noexcept;

[[nodiscard]] inline std::error_code make_error_code(ResolveError e) noexcept {
    return {static_cast<int>(e), resolve_category()};
}

/// The error of getaddrinfo's result `rc` (non-zero): the EAI_* code in resolve_category(),
/// or for EAI_SYSTEM the errno `sys_errno` in std::system_category().
[[nodiscard]] inline std::error_code resolve_error(int rc, int sys_errno) noexcept {
    if (rc == EAI_SYSTEM)
        return {sys_errno ? sys_errno : EIO, std::system_category()};
    return {rc, resolve_category()};
}

/// The socket addresses of `host` with `port`: every address once, in the order the system's
/// resolver gives them (try them in turn with TcpStream::connect). `family` narrows them to
/// AF_INET or AF_INET6; AF_UNSPEC (the default) takes both.
///
/// A numeric host ("127.0.0.1", "::1", "fe80::1%lo"; also "[::1]") is parsed here and yields
/// its one address: no lookup, no thread. A name goes to getaddrinfo(3), run on the blocking
/// pool (ringo::spawn_blocking) so the runtime goes on meanwhile: /etc/hosts ("localhost"),
/// then DNS as /etc/nsswitch.conf says. Its errors are in resolve_category() (ResolveError:
/// not_found, try_again, ...); an empty host or one with a NUL byte is EINVAL, a family
/// other than those three EAFNOSUPPORT.
///
/// Cost: a Task (one pooled frame) and the vector; for a name, one spawn_blocking call too
/// (one heap node, two cross-thread wake-ups) and whatever getaddrinfo costs. In a cancelled
/// task a name is not looked up (ECANCELED). A lookup already running cannot be interrupted:
/// cancelling the task then does not end the await, which yields getaddrinfo's answer when it
/// comes (at worst after the resolver's own timeout); the task's next operation sees the
/// cancellation (docs/blocking.md).
///
///     auto addrs = co_await ringo::net::resolve("localhost", 8080);
///     if (!addrs) co_return addrs.failure();          // addrs.message(): "Name or service not known"
///     auto s = co_await ringo::net::TcpStream::connect(addrs->front());
Task<Result<std::vector<SocketAddr>>> resolve(std::string host, std::uint16_t port, int family = AF_UNSPEC);

} // namespace ringo::net

template <>
struct std::is_error_code_enum<ringo::net::ResolveError> : std::true_type {};
