// ringo/net/address.hpp - a socket address as a value: IPv4, IPv6, Unix-domain.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace ringo::net {

/// A socket address held by value: a `sockaddr_storage` and its length, for an IPv4 address
/// and port, an IPv6 address, port and scope id, or a Unix-domain socket (a path, a Linux
/// abstract name, or unnamed). Copyable, comparable, hashable; nothing in it allocates except
/// the `std::string`s that ip_string() and to_string() return, and nothing throws.
///
///     auto a = ringo::net::SocketAddr::parse("127.0.0.1:8080");    // std::optional
///     auto b = ringo::net::SocketAddr::v6_loopback(8080);          // [::1]:8080
///     co_await ringo::op::bind(fd, a->data(), a->size());
///
///     ringo::net::SocketAddr peer;                                  // out-parameter
///     int c = co_await ringo::op::accept(fd, peer.data(), peer.out_size());
///     std::cout << peer << '\n';                                    // 127.0.0.1:41822
///
/// The text forms (parse, to_string) are IP socket addresses only: "1.2.3.4:80",
/// "[::1]:80", "[fe80::1%2]:80". Unix-domain addresses come from unix_path / unix_abstract
/// or from the kernel, and print as the path, "@name" (abstract) or "(unnamed)".
class SocketAddr {
public:
    /// An empty address: family AF_UNSPEC, size() 0. What an out-parameter starts as.
    SocketAddr() noexcept {
        std::memset(&ss_, 0, sizeof ss_);
        len_ = 0;
    }

    // --- construction -----------------------------------------------------------------------

    /// Parses an IP socket address: "a.b.c.d:port" (dotted decimal, four parts), or
    /// "[ipv6]:port" with an optional scope after '%' inside the brackets: an interface name
    /// ("[fe80::1%eth0]:80", looked up now with if_nametoindex) or a number ("[fe80::1%2]:80").
    /// The port is 1 to 5 decimal digits, at most 65535. std::nullopt for anything else:
    /// empty text, no port, an empty or signed port, an IPv6 address without brackets,
    /// brackets around an IPv4 address, an unknown interface, spaces, trailing characters.
    [[nodiscard]] static std::optional<SocketAddr> parse(std::string_view text) noexcept;
    /// An IP address without brackets or port ("10.0.0.1", "::1", "fe80::1%lo") and a port;
    /// std::nullopt when `ip` is not one (same rules as parse).
    [[nodiscard]] static std::optional<SocketAddr> parse_ip(std::string_view ip, std::uint16_t port) noexcept;

    /// IPv4 address `host_order_addr` (host byte order, e.g. INADDR_LOOPBACK) and `port`.
    [[nodiscard]] static SocketAddr v4(std::uint32_t host_order_addr, std::uint16_t port) noexcept;
    /// 0.0.0.0:port (every IPv4 interface).
    [[nodiscard]] static SocketAddr v4_any(std::uint16_t port) noexcept { return v4(INADDR_ANY, port); }
    /// 127.0.0.1:port.
    [[nodiscard]] static SocketAddr v4_loopback(std::uint16_t port) noexcept { return v4(INADDR_LOOPBACK, port); }
    /// IPv6 address `addr` (network byte order, as in in6_addr), `port` and scope id.
    [[nodiscard]] static SocketAddr v6(const in6_addr& addr, std::uint16_t port, std::uint32_t scope_id = 0) noexcept;
    /// The address `[::]:port` (every IPv6 interface, and IPv4 too unless IPV6_V6ONLY is set).
    [[nodiscard]] static SocketAddr v6_any(std::uint16_t port) noexcept { return v6(in6addr_any, port); }
    /// The address `[::1]:port`.
    [[nodiscard]] static SocketAddr v6_loopback(std::uint16_t port) noexcept { return v6(in6addr_loopback, port); }

    /// A Unix-domain socket address for a file-system path (at most 107 bytes, no NUL byte,
    /// not empty). A path that starts with '\0' is a Linux abstract name instead (the bytes
    /// after it, at most 107, any value), as with unix_abstract. std::nullopt when it does
    /// not fit or is empty. '@' has no meaning here: "@x" is a file named "@x".
    [[nodiscard]] static std::optional<SocketAddr> unix_path(std::string_view path) noexcept;
    /// A Linux abstract Unix-domain name (no file; it disappears with its last socket):
    /// `name` without the leading '\0', at most 107 bytes of any value. Printed as "@name".
    [[nodiscard]] static std::optional<SocketAddr> unix_abstract(std::string_view name) noexcept;

    /// A copy of the address at `sa` of `len` bytes (as bind, connect or a kernel's
    /// getsockname/accept/recvfrom deal in). std::nullopt when `sa` is null, the family is
    /// not AF_INET, AF_INET6 or AF_UNIX, or `len` is shorter than that family's sockaddr
    /// (sockaddr_in, sockaddr_in6, the sun_family field) or longer than sockaddr_storage.
    /// A Unix path's size is cut to its NUL terminator (as the kernel reports it).
    [[nodiscard]] static std::optional<SocketAddr> from(const sockaddr* sa, socklen_t len) noexcept;

    // --- the raw form, for system calls and operations ------------------------------------

    /// The address, for bind/connect/sendto (with size()).
    [[nodiscard]] const sockaddr* data() const noexcept { return reinterpret_cast<const sockaddr*>(&ss_); }
    /// The address, writable: for the kernel to fill (accept, recvfrom, getsockname; with
    /// out_size()).
    [[nodiscard]] sockaddr* data() noexcept { return reinterpret_cast<sockaddr*>(&ss_); }
    /// Its length in bytes: sizeof(sockaddr_in) / sizeof(sockaddr_in6), for Unix-domain the
    /// sun_family field plus the path and its NUL (or '\0' and the abstract name); 0 when empty.
    [[nodiscard]] socklen_t size() const noexcept { return len_; }
    /// The most the kernel may write: sizeof(sockaddr_storage).
    [[nodiscard]] static constexpr socklen_t capacity() noexcept { return sizeof(sockaddr_storage); }
    /// The length field itself, for a call that writes the length back.
    [[nodiscard]] socklen_t* size_ptr() noexcept { return &len_; }
    /// Empties the address, sets its size to capacity() and returns size_ptr(): pass
    /// `data(), out_size()` as the (address, length) out-parameters of accept, recvfrom or
    /// getsockname, which then store the address and its real length. Call it again before
    /// each such call (a shorter address from the previous one would cut the next).
    [[nodiscard]] socklen_t* out_size() noexcept {
        std::memset(&ss_, 0, sizeof ss_);
        len_ = capacity();
        return &len_;
    }

    // --- what it is -------------------------------------------------------------------------

    /// AF_INET, AF_INET6, AF_UNIX, or AF_UNSPEC when empty.
    [[nodiscard]] int family() const noexcept { return len_ ? ss_.ss_family : AF_UNSPEC; }
    /// True for an IPv4 address.
    [[nodiscard]] bool is_v4() const noexcept { return family() == AF_INET; }
    /// True for an IPv6 address.
    [[nodiscard]] bool is_v6() const noexcept { return family() == AF_INET6; }
    /// True for a Unix-domain address.
    [[nodiscard]] bool is_unix() const noexcept { return family() == AF_UNIX; }
    /// The port (host byte order) of an IP address; 0 for any other family.
    [[nodiscard]] std::uint16_t port() const noexcept;
    /// Sets the port of an IP address; does nothing for any other family.
    void set_port(std::uint16_t port) noexcept;
    /// The scope id of an IPv6 address (an interface index); 0 for any other family.
    [[nodiscard]] std::uint32_t scope_id() const noexcept { return is_v6() ? v6_().sin6_scope_id : 0; }

    /// The IP address as text, without port or brackets: "127.0.0.1", "::1", "fe80::1%2"
    /// (scope id as a number); "" for any other family.
    [[nodiscard]] std::string ip_string() const;
    /// "1.2.3.4:80", "[::1]:80", "[fe80::1%2]:80"; a Unix path as it is, an abstract name as
    /// "@name", an unnamed Unix socket as "(unnamed)"; "(unspecified)" when empty and
    /// "(family N)" for another family. parse(to_string()) gives back an IP address.
    [[nodiscard]] std::string to_string() const;

    /// Same family and same address: port and address for IPv4; port, address, flow info and
    /// scope id for IPv6; the path or abstract name for Unix-domain (bytes past the path's
    /// NUL and the IPv4 padding do not count).
    friend bool operator==(const SocketAddr& a, const SocketAddr& b) noexcept;
    /// Not operator==.
    friend bool operator!=(const SocketAddr& a, const SocketAddr& b) noexcept { return !(a == b); }
    /// A hash of what operator== compares.
    [[nodiscard]] std::size_t hash() const noexcept;

private:
    [[nodiscard]] const sockaddr_in& v4_() const noexcept { return reinterpret_cast<const sockaddr_in&>(ss_); }
    [[nodiscard]] const sockaddr_in6& v6_() const noexcept { return reinterpret_cast<const sockaddr_in6&>(ss_); }
    // size(), but never past the storage (size_ptr() lets anyone write the length).
    [[nodiscard]] std::size_t used() const noexcept { return len_ < sizeof ss_ ? len_ : sizeof ss_; }
    // The bytes operator== and hash() compare (a view into a buffer of the caller's).
    [[nodiscard]] std::string_view key(char (&buf)[sizeof(sockaddr_storage) + 8]) const noexcept;

    sockaddr_storage ss_;
    socklen_t len_;
};

/// Writes to_string().
std::ostream& operator<<(std::ostream& os, const SocketAddr& a);

} // namespace ringo::net

/// SocketAddr as a key of unordered containers: SocketAddr::hash().
template <>
struct std::hash<ringo::net::SocketAddr> {
    /// a.hash().
    std::size_t operator()(const ringo::net::SocketAddr& a) const noexcept { return a.hash(); }
};
