// net::resolve: a host name's socket addresses, from getaddrinfo(3) on the blocking pool; and
// the category of its errors.
#include <ringo/net/resolve.hpp>

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
#include <utility>
#include <vector>

#include <ringo/core/blocking.hpp>

namespace ringo::net {

namespace {

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

// getaddrinfo on the calling thread (it blocks): each address of `host` once, in the
// resolver's order, with `port`.
Result<std::vector<SocketAddr>> lookup_host(const std::string& host, std::uint16_t port, int family) {
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

} // namespace

const std::error_category& resolve_category() noexcept {
    static const ResolveCategory c;
    return c;
}

Task<Result<std::vector<SocketAddr>>> resolve(std::string host, std::uint16_t port, int family) {
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
    auto lookup = [host = std::move(host), port, family] { return lookup_host(host, port, family); };
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
