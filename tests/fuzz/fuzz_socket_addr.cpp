// libFuzzer target: net::SocketAddr (ringo/net/address.hpp) on arbitrary bytes, through every
// way in: parse (text), parse_ip (text and a port), unix_path, unix_abstract (bytes) and
// from (the bytes as a sockaddr of their length). Checks, besides what ASan and UBSan see:
//   - each result agrees with a reference built here on inet_pton, if_nametoindex and the
//     documented rules (port 1-5 digits up to 65535, brackets for IPv6, a scope of digits or
//     an interface name, Unix names up to 107 bytes): same success, family, address, port,
//     scope id, and the bytes and length of a Unix address;
//   - size() fits the family (sockaddr_in, sockaddr_in6, the Unix path and its NUL or the
//     abstract name) and port(), scope_id(), ip_string() answer as the family says;
//   - printing and parsing again gives an equal address whose text is the same (IP:
//     parse(to_string()), parse_ip(ip_string(), port()); Unix: unix_path(to_string()) or
//     unix_abstract of what follows '@'), and from(data(), size()) is an equal copy;
//   - equal addresses hash alike.
#include <ringo/net/address.hpp>

#include <arpa/inet.h>
#include <net/if.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

using ringo::net::SocketAddr;

namespace {

void require(bool ok, const char* what) {
    if (ok)
        return;
    std::fprintf(stderr, "socket_addr: %s\n", what);
    std::abort();
}

constexpr std::size_t path_offset = offsetof(sockaddr_un, sun_path);
constexpr std::size_t max_unix_name = sizeof(sockaddr_un::sun_path) - 1; // 107

// What an IP address should come out as.
struct Ip {
    int family = AF_UNSPEC;
    unsigned char addr[16] = {};
    std::uint16_t port = 0;
    std::uint32_t scope = 0;
};

// inet_pton over `s` as a C string; false when `s` holds a NUL (the C string would end early).
bool pton(int family, std::string_view s, void* out) {
    if (s.find('\0') != std::string_view::npos)
        return false;
    std::string z(s);
    return ::inet_pton(family, z.c_str(), out) == 1;
}

// The documented port: 1 to 5 decimal digits, at most 65535.
bool ref_port(std::string_view s, std::uint16_t& port) {
    if (s.empty() || s.size() > 5 || s[0] < '0' || s[0] > '9')
        return false;
    unsigned v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v > 65535)
        return false;
    port = static_cast<std::uint16_t>(v);
    return true;
}

// "addr" or "addr%scope": the scope a number (at most 10 digits, within 32 bits) or the name
// of an interface of this machine.
bool ref_v6(std::string_view s, Ip& ip) {
    std::size_t pct = s.find('%');
    if (!pton(AF_INET6, s.substr(0, pct), ip.addr))
        return false;
    ip.family = AF_INET6;
    if (pct == std::string_view::npos)
        return true;
    std::string_view sc = s.substr(pct + 1);
    if (sc.empty())
        return false;
    if (sc.find_first_not_of("0123456789") == std::string_view::npos) {
        auto [end, ec] = std::from_chars(sc.data(), sc.data() + sc.size(), ip.scope);
        return sc.size() <= 10 && ec == std::errc{} && end == sc.data() + sc.size();
    }
    if (sc.size() >= IF_NAMESIZE || sc.find('\0') != std::string_view::npos)
        return false;
    ip.scope = ::if_nametoindex(std::string(sc).c_str());
    return ip.scope != 0;
}

bool ref_v4(std::string_view s, Ip& ip) {
    ip.family = AF_INET;
    return pton(AF_INET, s, ip.addr);
}

// What parse(text) should give: "[v6]:port" or "v4:port" (the port after the last ':').
std::optional<Ip> ref_parse(std::string_view text) {
    std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
        return std::nullopt;
    Ip ip;
    if (!ref_port(text.substr(colon + 1), ip.port))
        return std::nullopt;
    std::string_view host = text.substr(0, colon);
    if (!host.empty() && host.front() == '[') {
        if (host.size() < 2 || host.back() != ']')
            return std::nullopt;
        host = host.substr(1, host.size() - 2);
        if (host.find(']') != std::string_view::npos || !ref_v6(host, ip))
            return std::nullopt;
        return ip;
    }
    if (host.find(':') != std::string_view::npos || !ref_v4(host, ip))
        return std::nullopt;
    return ip;
}

// What parse_ip(text, port) should give: IPv6 when there is a ':', else IPv4.
std::optional<Ip> ref_parse_ip(std::string_view text, std::uint16_t port) {
    Ip ip;
    ip.port = port;
    bool ok = text.find(':') != std::string_view::npos ? ref_v6(text, ip) : ref_v4(text, ip);
    return ok ? std::optional<Ip>(ip) : std::nullopt;
}

void same_ip(const SocketAddr& a, const Ip& ip) {
    require(a.family() == ip.family, "family");
    require(a.port() == ip.port, "port");
    if (ip.family == AF_INET) {
        sockaddr_in in;
        std::memcpy(&in, a.data(), sizeof in);
        require(in.sin_family == AF_INET && std::memcmp(&in.sin_addr, ip.addr, 4) == 0, "IPv4 address");
        require(ntohs(in.sin_port) == ip.port, "IPv4 port in network order");
    } else {
        sockaddr_in6 in6;
        std::memcpy(&in6, a.data(), sizeof in6);
        require(in6.sin6_family == AF_INET6 && std::memcmp(&in6.sin6_addr, ip.addr, 16) == 0, "IPv6 address");
        require(ntohs(in6.sin6_port) == ip.port && in6.sin6_flowinfo == 0, "IPv6 port or flow info");
        require(in6.sin6_scope_id == ip.scope && a.scope_id() == ip.scope, "scope id");
    }
}

// The Unix address should hold `name` (a path, or for an abstract name '\0' and the name).
void same_unix(const SocketAddr& a, std::string_view name, bool abstract) {
    require(a.is_unix(), "a Unix address");
    std::size_t want = path_offset + name.size() + 1; // a path's NUL, or an abstract name's leading '\0'
    require(a.size() == want, "the length of a Unix address");
    const char* p = reinterpret_cast<const sockaddr_un*>(a.data())->sun_path;
    if (abstract)
        require(p[0] == '\0' && std::memcmp(p + 1, name.data(), name.size()) == 0, "an abstract name");
    else
        require(std::memcmp(p, name.data(), name.size()) == 0 && p[name.size()] == '\0', "a path and its NUL");
}

void equal_and_hash(const SocketAddr& a, const SocketAddr& b, const char* what) {
    require(a == b && !(a != b), what);
    require(a.hash() == b.hash() && std::hash<SocketAddr>{}(a) == a.hash(), "equal addresses with different hashes");
}

// What holds for any address made by one of the ways in.
void check(const SocketAddr& a) {
    equal_and_hash(a, a, "an address unequal to itself");
    SocketAddr copy = a;
    equal_and_hash(copy, a, "a copy unequal");
    std::optional<SocketAddr> again = SocketAddr::from(a.data(), a.size());
    require(again && again->size() == a.size(), "from(data(), size()) refused or resized");
    equal_and_hash(*again, a, "from(data(), size()) unequal");
    require(a.data()->sa_family == a.family(), "family() is not the stored family");
    require(a.size() <= SocketAddr::capacity(), "size() past the storage");

    std::string text = a.to_string();
    switch (a.family()) {
    case AF_INET:
    case AF_INET6: {
        bool v6 = a.is_v6();
        require(a.is_v4() == !v6 && !a.is_unix(), "is_v4/is_v6/is_unix");
        require(a.size() == (v6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in)), "the length of an IP address");
        require(v6 || a.scope_id() == 0, "a scope id on IPv4");
        // The printed forms agree with inet_pton.
        std::string ip = a.ip_string();
        unsigned char bytes[16];
        std::string_view bare = std::string_view(ip).substr(0, ip.find('%'));
        require(pton(a.family(), bare, bytes), "ip_string() that inet_pton refuses");
        const void* stored = v6 ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a.data())->sin6_addr)
                                : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a.data())->sin_addr);
        require(std::memcmp(bytes, stored, v6 ? 16 : 4) == 0, "ip_string() names another address");
        require((ip.find('%') != std::string::npos) == (a.scope_id() != 0), "a scope printed without a scope id");
        require(text == (v6 ? "[" + ip + "]:" : ip + ":") + std::to_string(a.port()), "to_string() of an IP address");
        // Round trips; the text has no flow info, so compare with the address without it.
        SocketAddr plain = a;
        if (v6) {
            std::uint32_t zero = 0;
            std::memcpy(reinterpret_cast<char*>(plain.data()) + offsetof(sockaddr_in6, sin6_flowinfo), &zero,
                        sizeof zero);
        }
        std::optional<SocketAddr> b = SocketAddr::parse(text);
        require(b && b->size() == a.size(), "parse(to_string()) refused");
        equal_and_hash(*b, plain, "parse(to_string()) unequal");
        require(b->to_string() == text, "to_string() of the reparsed address differs");
        std::optional<SocketAddr> c = SocketAddr::parse_ip(ip, a.port());
        require(c.has_value(), "parse_ip(ip_string(), port()) refused");
        equal_and_hash(*c, plain, "parse_ip(ip_string(), port()) unequal");
        break;
    }
    case AF_UNIX: {
        require(!a.is_v4() && !a.is_v6() && a.port() == 0 && a.scope_id() == 0 && a.ip_string().empty(),
                "IP answers from a Unix address");
        require(a.size() >= path_offset, "a Unix address shorter than its family field");
        const char* p = reinterpret_cast<const sockaddr_un*>(a.data())->sun_path;
        if (a.size() == path_offset) {
            require(text == "(unnamed)", "an unnamed Unix address printed");
        } else if (p[0] == '\0') {
            require(text.size() == a.size() - path_offset && text[0] == '@', "an abstract name printed");
            std::string_view name = std::string_view(text).substr(1);
            require(std::memcmp(p + 1, name.data(), name.size()) == 0, "an abstract name printed otherwise");
            if (name.size() <= max_unix_name) {
                std::optional<SocketAddr> b = SocketAddr::unix_abstract(name);
                require(b.has_value(), "unix_abstract(printed name) refused");
                equal_and_hash(*b, a, "unix_abstract(printed name) unequal");
            }
        } else {
            require(!text.empty() && text.size() <= a.size() - path_offset && text.find('\0') == std::string::npos &&
                        std::memcmp(p, text.data(), text.size()) == 0,
                    "a path printed");
            if (text.size() <= max_unix_name) {
                std::optional<SocketAddr> b = SocketAddr::unix_path(text);
                require(b.has_value(), "unix_path(printed path) refused");
                equal_and_hash(*b, a, "unix_path(printed path) unequal");
            }
        }
        break;
    }
    default: require(false, "a family other than AF_INET, AF_INET6 or AF_UNIX");
    }
}

// from() over `bytes` as a sockaddr of that length (its own allocation: ASan sees a read past it).
void check_from(std::string_view bytes) {
    std::size_t len = bytes.size();
    auto* raw = new unsigned char[len ? len : 1];
    if (len)
        std::memcpy(raw, bytes.data(), len);
    std::optional<SocketAddr> a = SocketAddr::from(reinterpret_cast<const sockaddr*>(raw), static_cast<socklen_t>(len));
    sa_family_t family = 0;
    if (len >= sizeof family)
        std::memcpy(&family, raw, sizeof family);
    bool fits = len >= sizeof family && len <= sizeof(sockaddr_storage) &&
                ((family == AF_INET && len >= sizeof(sockaddr_in)) ||
                 (family == AF_INET6 && len >= sizeof(sockaddr_in6)) || family == AF_UNIX);
    require(a.has_value() == fits, "from() took or refused against its rules");
    require(!SocketAddr::from(nullptr, static_cast<socklen_t>(len)), "from(nullptr) taken");
    if (a) {
        require(a->family() == family, "from(): another family");
        if (family == AF_INET) {
            require(a->size() == sizeof(sockaddr_in) && std::memcmp(a->data(), raw, 8) == 0, "from(): IPv4");
        } else if (family == AF_INET6) {
            require(a->size() == sizeof(sockaddr_in6) && std::memcmp(a->data(), raw, sizeof(sockaddr_in6)) == 0,
                    "from(): IPv6");
        } else {
            // A path is cut after its NUL; an abstract name (or no name) keeps the length.
            std::size_t want = len;
            if (len > path_offset && raw[path_offset] != 0) {
                const void* nul = std::memchr(raw + path_offset, 0, len - path_offset);
                if (nul)
                    want = static_cast<std::size_t>(static_cast<const unsigned char*>(nul) - raw) + 1;
            }
            require(a->size() == want && std::memcmp(a->data(), raw, want) == 0, "from(): Unix");
        }
        check(*a);
    }
    delete[] raw;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // libFuzzer's copy has exactly `size` bytes: a read past the text is an ASan report.
    std::string_view text(reinterpret_cast<const char*>(data), size);

    std::optional<SocketAddr> a = SocketAddr::parse(text);
    std::optional<Ip> want = ref_parse(text);
    require(a.has_value() == want.has_value(),
            want ? "parse() refused a valid address" : "parse() took an invalid one");
    if (a) {
        same_ip(*a, *want);
        check(*a);
    }

    std::uint16_t port = static_cast<std::uint16_t>(size * 2654435761u >> 7);
    std::optional<SocketAddr> b = SocketAddr::parse_ip(text, port);
    std::optional<Ip> want_b = ref_parse_ip(text, port);
    require(b.has_value() == want_b.has_value(),
            want_b ? "parse_ip() refused a valid IP" : "parse_ip() took an invalid one");
    if (b) {
        same_ip(*b, *want_b);
        check(*b);
        if (a) // the same text cannot be both "ip:port" and a bare IP
            require(false, "parse() and parse_ip() both took one text");
    }

    // unix_path: a path (1 to 107 bytes, no NUL), or '\0' and an abstract name.
    std::optional<SocketAddr> u = SocketAddr::unix_path(text);
    bool abstract = !text.empty() && text[0] == '\0';
    bool path_ok = abstract
                       ? text.size() - 1 <= max_unix_name
                       : !text.empty() && text.size() <= max_unix_name && text.find('\0') == std::string_view::npos;
    require(u.has_value() == path_ok, "unix_path() took or refused against its rules");
    if (u) {
        same_unix(*u, abstract ? text.substr(1) : text, abstract);
        check(*u);
    }
    std::optional<SocketAddr> n = SocketAddr::unix_abstract(text);
    require(n.has_value() == (text.size() <= max_unix_name), "unix_abstract() took or refused against its rules");
    if (n) {
        same_unix(*n, text, true);
        check(*n);
        if (u && abstract)
            require(*u == *SocketAddr::unix_abstract(text.substr(1)),
                    "unix_path(\"\\0name\") is not unix_abstract(name)");
    }

    check_from(text);
    return 0;
}
