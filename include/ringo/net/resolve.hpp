// ringo/net/resolve.hpp - resolve(host, port): a host name's socket addresses, looked up with
// getaddrinfo(3) on the blocking pool.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <ringo/core/blocking.hpp>
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

namespace detail {
class ResolveCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "resolve"; }
    std::string message(int e) const override { return ::gai_strerror(e); }
    // What std::errc says for the codes it has a word for (EAI_AGAIN: try again, ...).
    std::error_condition default_error_condition(int e) const noexcept override {
        switch (e) {
        case EAI_AGAIN: return std::make_error_condition(std::errc::resource_unavailable_try_again);
        case EAI_MEMORY: return std::make_error_condition(std::errc::not_enough_memory);
        case EAI_FAMILY: return std::make_error_condition(std::errc::address_family_not_supported);
        case EAI_BADFLAGS: return std::make_error_condition(std::errc::invalid_argument);
        default: return {e, *this};
        }
    }
};
} // namespace detail

/// The category of getaddrinfo's errors (one object in the program), named "resolve".
[[nodiscard]] inline const std::error_category& resolve_category() noexcept {
    static const detail::ResolveCategory c;
    return c;
}

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

namespace detail {
/// getaddrinfo on the calling thread (it blocks): each address of `host` once, in the
/// resolver's order, with `port`.
inline Result<std::vector<SocketAddr>> lookup_host(const std::string& host, std::uint16_t port, int family) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM; // one entry per address, not one per socket type
    hints.ai_flags = AI_NUMERICSERV;
    char service[8];
    std::snprintf(service, sizeof service, "%u", static_cast<unsigned>(port));
    addrinfo* res = nullptr;
    errno = 0;
    int rc = ::getaddrinfo(host.c_str(), service, &hints, &res);
    if (rc != 0)
        return resolve_error(rc, errno);
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(res, &::freeaddrinfo);
    std::vector<SocketAddr> out;
    for (const addrinfo* a = res; a; a = a->ai_next) {
        std::optional<SocketAddr> s = SocketAddr::from(a->ai_addr, a->ai_addrlen);
        if (s && std::find(out.begin(), out.end(), *s) == out.end())
            out.push_back(*s);
    }
    if (out.empty())
        return make_error_code(ResolveError::no_address);
    return out;
}
} // namespace detail

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
inline Task<Result<std::vector<SocketAddr>>> resolve(std::string host, std::uint16_t port, int family = AF_UNSPEC) {
    if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
        co_return std::make_error_code(std::errc::address_family_not_supported);
    if (host.empty() || host.find('\0') != std::string::npos)
        co_return std::make_error_code(std::errc::invalid_argument);
    std::string_view ip = host;
    if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']')
        ip = ip.substr(1, ip.size() - 2);
    if (std::optional<SocketAddr> a = SocketAddr::parse_ip(ip, port)) {
        if (family == AF_UNSPEC || a->family() == family)
            co_return std::vector<SocketAddr>{*a};
        co_return make_error_code(ResolveError::no_address);
    }
    auto lookup = [host = std::move(host), port, family] { return detail::lookup_host(host, port, family); };
    try {
        Result<std::vector<SocketAddr>> r = co_await ringo::spawn_blocking(std::move(lookup));
        co_return r;
    } catch (const std::system_error& e) { // refused in a cancelled task (ECANCELED), or no thread could start
        co_return e.code();
    } catch (const std::logic_error&) { // no runtime, or an IOPOLL runtime: nothing can wait for the pool
        co_return std::make_error_code(std::errc::operation_not_supported);
    }
}

} // namespace ringo::net

template <>
struct std::is_error_code_enum<ringo::net::ResolveError> : std::true_type {};
