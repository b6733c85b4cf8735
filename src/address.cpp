// net::SocketAddr: parsing, printing and comparing socket addresses (ringo/net/address.hpp).
#include <ringo/io/detail/fail_note.hpp>
#include <ringo/net/address.hpp>

#include <arpa/inet.h>
#include <net/if.h>

#include <ostream>

namespace ringo::net {

namespace {

constexpr std::size_t sun_path_offset = offsetof(sockaddr_un, sun_path);
constexpr std::size_t sun_path_size = sizeof(sockaddr_un::sun_path);

bool all_digits(std::string_view s) noexcept {
    for (char c : s)
        if (c < '0' || c > '9')
            return false;
    return !s.empty();
}

// 1 to 5 decimal digits, at most 65535.
bool parse_port(std::string_view s, std::uint16_t& port) noexcept {
    if (s.size() > 5 || !all_digits(s))
        return false;
    unsigned v = 0;
    for (char c : s)
        v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > 65535)
        return false;
    port = static_cast<std::uint16_t>(v);
    return true;
}

// A NUL-terminated copy of `s` in `buf` for the C parsers; false when it does not fit or
// holds a NUL byte (which would end the C string early: "1.2.3.4\0junk").
template <std::size_t N>
bool c_string(std::string_view s, char (&buf)[N]) noexcept {
    if (s.size() >= N || s.find('\0') != std::string_view::npos)
        return false;
    std::memcpy(buf, s.data(), s.size());
    buf[s.size()] = '\0';
    return true;
}

bool parse_v4(std::string_view s, in_addr& out) noexcept {
    char buf[INET_ADDRSTRLEN];
    return c_string(s, buf) && ::inet_pton(AF_INET, buf, &out) == 1;
}

// "addr" or "addr%scope" (an interface name or index).
bool parse_v6(std::string_view s, in6_addr& out, std::uint32_t& scope) noexcept {
    scope = 0;
    std::size_t pct = s.find('%');
    char buf[INET6_ADDRSTRLEN];
    if (!c_string(s.substr(0, pct), buf) || ::inet_pton(AF_INET6, buf, &out) != 1)
        return false;
    if (pct == std::string_view::npos)
        return true;
    std::string_view sc = s.substr(pct + 1);
    if (all_digits(sc)) {
        if (sc.size() > 10)
            return false;
        std::uint64_t v = 0;
        for (char c : sc)
            v = v * 10 + static_cast<unsigned>(c - '0');
        if (v > 0xffffffffu)
            return false;
        scope = static_cast<std::uint32_t>(v);
        return true;
    }
    char name[IF_NAMESIZE];
    if (!c_string(sc, name) || sc.empty())
        return false;
    scope = ::if_nametoindex(name);
    return scope != 0;
}

std::optional<SocketAddr> ip_and_port(std::string_view ip, std::uint16_t port, bool v4_ok, bool v6_ok) noexcept {
    if (ip.find(':') == std::string_view::npos) {
        in_addr a{};
        if (!v4_ok || !parse_v4(ip, a))
            return std::nullopt;
        return SocketAddr::v4(ntohl(a.s_addr), port);
    }
    in6_addr a{};
    std::uint32_t scope = 0;
    if (!v6_ok || !parse_v6(ip, a, scope))
        return std::nullopt;
    return SocketAddr::v6(a, port, scope);
}

} // namespace

std::optional<SocketAddr> SocketAddr::parse(std::string_view text) noexcept {
    std::uint16_t port = 0;
    if (!text.empty() && text.front() == '[') { // [ipv6]:port
        std::size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':' ||
            !parse_port(text.substr(close + 2), port))
            return std::nullopt;
        return ip_and_port(text.substr(1, close - 1), port, false, true);
    }
    std::size_t colon = text.find(':'); // ipv4:port, one colon only (a bare IPv6 has several)
    if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos ||
        !parse_port(text.substr(colon + 1), port))
        return std::nullopt;
    return ip_and_port(text.substr(0, colon), port, true, false);
}

std::optional<SocketAddr> SocketAddr::parse_ip(std::string_view ip, std::uint16_t port) noexcept {
    return ip_and_port(ip, port, true, true);
}

SocketAddr SocketAddr::v4(std::uint32_t host_order_addr, std::uint16_t port) noexcept {
    SocketAddr r;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(host_order_addr);
    std::memcpy(&r.ss_, &a, sizeof a);
    r.len_ = sizeof a;
    return r;
}

SocketAddr SocketAddr::v6(const in6_addr& addr, std::uint16_t port, std::uint32_t scope_id) noexcept {
    SocketAddr r;
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = addr;
    a.sin6_scope_id = scope_id;
    std::memcpy(&r.ss_, &a, sizeof a);
    r.len_ = sizeof a;
    return r;
}

std::optional<SocketAddr> SocketAddr::unix_path(std::string_view path) noexcept {
    if (!path.empty() && path.front() == '\0')
        return unix_abstract(path.substr(1));
    if (path.empty() || path.size() >= sun_path_size || path.find('\0') != std::string_view::npos)
        return std::nullopt;
    SocketAddr r;
    auto& un = reinterpret_cast<sockaddr_un&>(r.ss_);
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, path.data(), path.size()); // the NUL after it: already zero
    r.len_ = static_cast<socklen_t>(sun_path_offset + path.size() + 1);
    return r;
}

std::optional<SocketAddr> SocketAddr::unix_abstract(std::string_view name) noexcept {
    if (name.size() >= sun_path_size)
        return std::nullopt;
    SocketAddr r;
    auto& un = reinterpret_cast<sockaddr_un&>(r.ss_);
    un.sun_family = AF_UNIX;
    if (!name.empty())
        std::memcpy(un.sun_path + 1, name.data(), name.size());
    r.len_ = static_cast<socklen_t>(sun_path_offset + 1 + name.size());
    return r;
}

std::optional<SocketAddr> SocketAddr::from(const sockaddr* sa, socklen_t len) noexcept {
    if (!sa || len < sizeof(sa_family_t) || len > sizeof(sockaddr_storage))
        return std::nullopt;
    sa_family_t family;
    std::memcpy(&family, reinterpret_cast<const char*>(sa) + offsetof(sockaddr, sa_family), sizeof family);
    socklen_t keep;
    switch (family) {
    case AF_INET: keep = sizeof(sockaddr_in); break;
    case AF_INET6: keep = sizeof(sockaddr_in6); break;
    case AF_UNIX: keep = len; break;
    default: return std::nullopt;
    }
    if (len < keep)
        return std::nullopt;
    SocketAddr r;
    std::memcpy(&r.ss_, sa, keep);
    r.len_ = keep;
    if (family == AF_UNIX && len > sun_path_offset) {
        // A path counts up to its NUL (what the kernel reports); an abstract name is all of it.
        const char* p = reinterpret_cast<const sockaddr_un&>(r.ss_).sun_path;
        std::size_t avail = len - sun_path_offset;
        if (p[0] != '\0') {
            std::size_t n = ::strnlen(p, avail);
            if (n < avail)
                r.len_ = static_cast<socklen_t>(sun_path_offset + n + 1);
        }
    }
    return r;
}

std::uint16_t SocketAddr::port() const noexcept {
    switch (family()) {
    case AF_INET: return ntohs(v4_().sin_port);
    case AF_INET6: return ntohs(v6_().sin6_port);
    default: return 0;
    }
}

void SocketAddr::set_port(std::uint16_t port) noexcept {
    switch (family()) {
    case AF_INET: reinterpret_cast<sockaddr_in&>(ss_).sin_port = htons(port); break;
    case AF_INET6: reinterpret_cast<sockaddr_in6&>(ss_).sin6_port = htons(port); break;
    default: break;
    }
}

std::string SocketAddr::ip_string() const {
    char buf[INET6_ADDRSTRLEN];
    switch (family()) {
    case AF_INET: return ::inet_ntop(AF_INET, &v4_().sin_addr, buf, sizeof buf) ? std::string(buf) : std::string();
    case AF_INET6: {
        if (!::inet_ntop(AF_INET6, &v6_().sin6_addr, buf, sizeof buf))
            return {};
        std::string s(buf);
        if (std::uint32_t scope = v6_().sin6_scope_id) {
            s += '%';
            s += std::to_string(scope);
        }
        return s;
    }
    default: return {};
    }
}

std::string SocketAddr::to_string() const {
    switch (family()) {
    case AF_INET: return ip_string() + ':' + std::to_string(port());
    case AF_INET6: return '[' + ip_string() + "]:" + std::to_string(port());
    case AF_UNIX: {
        if (len_ <= sun_path_offset)
            return "(unnamed)";
        const char* p = reinterpret_cast<const sockaddr_un&>(ss_).sun_path;
        std::size_t n = used() - sun_path_offset;
        if (p[0] == '\0')
            return '@' + std::string(p + 1, n - 1);
        return std::string(p, ::strnlen(p, n));
    }
    case AF_UNSPEC: return "(unspecified)";
    default: return "(family " + std::to_string(family()) + ')';
    }
}

std::string_view SocketAddr::key(char (&buf)[sizeof(sockaddr_storage) + 8]) const noexcept {
    std::size_t n = 0;
    auto put = [&](const void* p, std::size_t k) {
        std::memcpy(buf + n, p, k);
        n += k;
    };
    sa_family_t f = static_cast<sa_family_t>(family());
    put(&f, sizeof f);
    switch (f) {
    case AF_UNSPEC: break;
    case AF_INET:
        put(&v4_().sin_port, sizeof v4_().sin_port);
        put(&v4_().sin_addr, sizeof v4_().sin_addr);
        break;
    case AF_INET6:
        put(&v6_().sin6_port, sizeof v6_().sin6_port);
        put(&v6_().sin6_flowinfo, sizeof v6_().sin6_flowinfo);
        put(&v6_().sin6_addr, sizeof v6_().sin6_addr);
        put(&v6_().sin6_scope_id, sizeof v6_().sin6_scope_id);
        break;
    case AF_UNIX:
        if (len_ > sun_path_offset) {
            const char* p = reinterpret_cast<const sockaddr_un&>(ss_).sun_path;
            std::size_t k = used() - sun_path_offset;
            put(p, p[0] == '\0' ? k : ::strnlen(p, k));
        }
        break;
    default: put(&ss_, used()); break;
    }
    return {buf, n};
}

bool operator==(const SocketAddr& a, const SocketAddr& b) noexcept {
    char ka[sizeof(sockaddr_storage) + 8], kb[sizeof(sockaddr_storage) + 8];
    return a.key(ka) == b.key(kb);
}

std::size_t SocketAddr::hash() const noexcept {
    char k[sizeof(sockaddr_storage) + 8];
    return std::hash<std::string_view>{}(key(k));
}

std::ostream& operator<<(std::ostream& os, const SocketAddr& a) { return os << a.to_string(); }

} // namespace ringo::net

namespace ringo::detail {

namespace {
ErrorNote sock_note(const char* what, const char* with, int fd, bool peer) noexcept {
    if (fd < 0)
        return ErrorNote(what);
    net::SocketAddr a;
    const int r = peer ? ::getpeername(fd, a.data(), a.out_size()) : ::getsockname(fd, a.data(), a.out_size());
    if (r != 0 || !(a.is_v4() || a.is_v6() || a.is_unix()))
        return ErrorNote(what);
    try {
        std::string text = a.to_string();
        if (a.is_unix() && text == "(unnamed)")
            return ErrorNote(what);
        return ErrorNote::made(with, text);
    } catch (...) { // no memory for the text
        return ErrorNote(what);
    }
}
} // namespace

ErrorNote peer_note(const char* what, const char* with_peer, int fd) noexcept {
    return sock_note(what, with_peer, fd, true);
}

ErrorNote local_note(const char* what, const char* with_local, int fd) noexcept {
    return sock_note(what, with_local, fd, false);
}

} // namespace ringo::detail
