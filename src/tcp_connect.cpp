// TcpStream::connect to a host name or a "host:port" text: resolve, then try each address in
// turn, under one deadline when one is given.
#include <ringo/compose/timeout.hpp>
#include <ringo/net/resolve.hpp>
#include <ringo/net/tcp.hpp>

#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ringo::net {
namespace {

struct HostPort {
    std::string host;
    std::uint16_t port = 0;
};

// "host:port", "[v6]:port" (the brackets stay: resolve takes "[::1]").
Result<HostPort> split_host_port(std::string_view text) {
    const auto invalid = std::make_error_code(std::errc::invalid_argument);
    std::string_view host;
    std::string_view port;
    if (!text.empty() && text.front() == '[') {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return invalid;
        host = text.substr(0, close + 1);
        port = text.substr(close + 2);
    } else {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos || text.find(':') != colon) // no port, or IPv6 without brackets
            return invalid;
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (host.empty() || host == "[]" || port.empty() || port.size() > 5)
        return invalid;
    unsigned value = 0;
    for (char c : port) {
        if (c < '0' || c > '9')
            return invalid;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535)
        return invalid;
    return HostPort{std::string(host), static_cast<std::uint16_t>(value)};
}

Task<Result<TcpStream>> connect_each(std::string host, std::uint16_t port) {
    Result<std::vector<SocketAddr>> addrs = co_await resolve(std::move(host), port);
    if (!addrs)
        co_return addrs.failure();
    co_return co_await TcpStream::connect(std::move(*addrs));
}

Task<Result<TcpStream>> connect_within(std::string host, std::uint16_t port, std::chrono::nanoseconds timeout) {
    Timed<Result<TcpStream>> r = co_await with_timeout(connect_each(std::move(host), port), timeout);
    if (r.timed_out() && !r.value()) // a connection made as the deadline passed is kept
        co_return std::make_error_code(std::errc::timed_out);
    co_return std::move(r).value();
}

Task<Result<TcpStream>> failed(std::error_code e) { co_return e; }

} // namespace

Task<Result<TcpStream>> TcpStream::connect(std::vector<SocketAddr> addrs) {
    std::error_code last = std::make_error_code(std::errc::invalid_argument);
    for (const SocketAddr& a : addrs) {
        Result<TcpStream> s = co_await TcpStream::connect(a);
        if (s)
            co_return s;
        last = s.error();
        if (last == std::errc::operation_canceled)
            break;
    }
    co_return last;
}

Task<Result<TcpStream>> TcpStream::connect(std::string host, std::uint16_t port) {
    return connect_each(std::move(host), port);
}

Task<Result<TcpStream>> TcpStream::connect(std::string host, std::uint16_t port, std::chrono::nanoseconds timeout) {
    return connect_within(std::move(host), port, timeout);
}

// The text is read at the call, not when the Task first runs: it may be a temporary.
Task<Result<TcpStream>> TcpStream::connect(std::string_view host_port) {
    Result<HostPort> hp = split_host_port(host_port);
    if (!hp)
        return failed(hp.error());
    return connect_each(std::move(hp->host), hp->port);
}

Task<Result<TcpStream>> TcpStream::connect(std::string_view host_port, std::chrono::nanoseconds timeout) {
    Result<HostPort> hp = split_host_port(host_port);
    if (!hp)
        return failed(hp.error());
    return connect_within(std::move(hp->host), hp->port, timeout);
}

} // namespace ringo::net
