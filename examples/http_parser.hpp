// http_parser.hpp - the request side of HTTP/1.0 and HTTP/1.1 for examples/http_file_server:
// a request head parsed from the bytes received so far, the request target decoded to a path
// under the served folder, and a file's media type from its name. No I/O and no allocation:
// every function works on the caller's bytes, so the parser is fuzzed on its own
// (tests/fuzz/fuzz_http_parser.cpp).
//
// What it accepts (RFC 9112, "HTTP/1.1", sections 2-3 and 5), strictly where leniency would
// let two readers of one message disagree:
//   - a request line `METHOD SP target SP HTTP/1.x` (one space each), then header lines
//     `name: value`, then an empty line; lines end with CRLF or a bare LF;
//   - no white space before a header's colon, no line folding, no NUL or other control
//     characters, no Transfer-Encoding (a body this server would have to decode), one
//     Content-Length at most, made of digits only;
//   - HTTP/1.1 needs a Host header; another major version is 505.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace http {

/// What parse_request found.
enum class Parse {
    complete,   // a whole head: Request is filled in
    incomplete, // no empty line yet: receive more (unless the buffer is full: head_too_large)
    error,      // a malformed request: answer Request::status (400, 431, 501, 505), then close
};

enum class Method { get, head, other };

struct Request {
    Method method = Method::other;
    std::string_view method_name; // as sent: the 405 answer names what it refuses
    std::string_view target;      // as sent (origin form: path and query)
    int minor = 1;                // HTTP/1.<minor>
    bool keep_alive = false;      // the connection stays open after the answer
    std::uint64_t content_length = 0;
    std::size_t head_size = 0; // bytes of the request line, headers and empty line
    int status = 0;            // with Parse::error: the status to answer
};

namespace detail {

// Token characters (RFC 9110, 5.6.2), one entry per byte value: a lookup per character of
// every method and header name instead of a search of the symbol list.
inline constexpr std::array<bool, 256> tchar_table = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c)
        t[static_cast<std::size_t>(c)] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    for (char c : std::string_view("!#$%&'*+-.^_`|~"))
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();

constexpr bool is_tchar(unsigned char c) noexcept { return tchar_table[c]; }

constexpr unsigned char lower(unsigned char c) noexcept { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

constexpr std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

/// Whether the comma-separated list `value` has `token` (case-insensitive), as in
/// `Connection: keep-alive, Upgrade`.
constexpr bool has_token(std::string_view value, std::string_view token) noexcept {
    while (!value.empty()) {
        std::size_t comma = value.find(',');
        if (iequals(trim(value.substr(0, comma)), token))
            return true;
        if (comma == std::string_view::npos)
            break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

/// The next line of `rest` without its ending (CRLF or LF), or false when no ending has come.
constexpr bool next_line(std::string_view& rest, std::string_view& line) noexcept {
    std::size_t lf = rest.find('\n');
    if (lf == std::string_view::npos)
        return false;
    line = rest.substr(0, lf);
    if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
    rest.remove_prefix(lf + 1);
    return true;
}

constexpr bool has_control(std::string_view s) noexcept {
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return true;
    }
    return false;
}

} // namespace detail

/// Parses the request head at the start of `buf` (the bytes received so far). `max_head` is
/// the most the caller can hold: a head not complete within it is 431 (or 414 while the
/// request line itself has not ended).
constexpr Parse parse_request(std::string_view buf, std::size_t max_head, Request& req) noexcept {
    using namespace detail;
    req = Request{};
    auto fail = [&req](int status) {
        req.status = status;
        return Parse::error;
    };
    // The head's end first: nothing is judged on a part of it (a line cut short could pass).
    std::size_t end = buf.find("\n\r\n");
    std::size_t end_lf = buf.find("\n\n");
    std::size_t head = std::string_view::npos;
    if (end != std::string_view::npos)
        head = end + 3;
    if (end_lf != std::string_view::npos && (head == std::string_view::npos || end_lf + 2 < head))
        head = end_lf + 2;
    if (head == std::string_view::npos) {
        if (buf.size() >= max_head)
            return fail(buf.substr(0, max_head).find('\n') == std::string_view::npos ? 414 : 431);
        return Parse::incomplete;
    }
    if (head > max_head)
        return fail(431);
    req.head_size = head;
    std::string_view rest = buf.substr(0, head), line;
    next_line(rest, line);
    if (line.empty())     // a blank line before the request line (RFC 9112, 2.2 allows ignoring
        return fail(400); // it; this server refuses it rather than let clients send nothing)

    // The request line.
    std::size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 == 0)
        return fail(400);
    req.method_name = line.substr(0, sp1);
    for (char c : req.method_name)
        if (!is_tchar(static_cast<unsigned char>(c)))
            return fail(400);
    std::size_t sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || sp2 == sp1 + 1)
        return fail(400);
    req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string_view version = line.substr(sp2 + 1);
    if (has_control(req.target) || req.target.find('\t') != std::string_view::npos)
        return fail(400);
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
        version[5] > '9' || version[7] < '0' || version[7] > '9')
        return fail(400);
    if (version[5] != '1')
        return fail(505);
    req.minor = version[7] - '0';
    if (req.method_name == "GET")
        req.method = Method::get;
    else if (req.method_name == "HEAD")
        req.method = Method::head;

    // The headers.
    bool host = false, length_seen = false, close = false, keep_alive = false;
    int count = 0;
    while (next_line(rest, line) && !line.empty()) {
        if (++count > 100)
            return fail(431);
        if (line.front() == ' ' || line.front() == '\t') // obsolete line folding
            return fail(400);
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0)
            return fail(400);
        std::string_view name = line.substr(0, colon);
        for (char c : name)
            if (!is_tchar(static_cast<unsigned char>(c))) // white space before the colon too
                return fail(400);
        std::string_view value = trim(line.substr(colon + 1));
        if (has_control(value))
            return fail(400);
        if (iequals(name, "host")) {
            if (host) // two Host headers
                return fail(400);
            host = true;
        } else if (iequals(name, "connection")) {
            close = close || has_token(value, "close");
            keep_alive = keep_alive || has_token(value, "keep-alive");
        } else if (iequals(name, "content-length")) {
            if (length_seen || value.empty() || value.size() > 15)
                return fail(400);
            length_seen = true;
            std::uint64_t n = 0;
            for (char c : value) {
                if (c < '0' || c > '9')
                    return fail(400);
                n = n * 10 + static_cast<std::uint64_t>(c - '0');
            }
            req.content_length = n;
        } else if (iequals(name, "transfer-encoding")) {
            return fail(501);
        }
    }
    if (req.minor >= 1 && !host)
        return fail(400);
    req.keep_alive = req.minor >= 1 ? !close : keep_alive && !close;
    return Parse::complete;
}

/// Decodes a request target to a path relative to the served folder, written to `out`
/// (`cap` bytes, NUL-terminated): the query is dropped, %XX escapes are decoded, "/" and any
/// path ending in "/" get "index.html". Returns the length, or -1 for a target that is not an
/// absolute path, has a bad escape, a NUL, a "." or ".." segment or an empty one (such as
/// "//"), or does not fit.
constexpr long decode_path(std::string_view target, char* out, std::size_t cap) noexcept {
    std::size_t q = target.find_first_of("?#");
    if (q != std::string_view::npos)
        target = target.substr(0, q);
    if (target.empty() || target.front() != '/' || cap == 0)
        return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    };
    std::size_t n = 0;
    std::size_t segment = 0; // where the current segment starts in out
    auto end_segment = [&]() -> bool {
        std::string_view s(out + segment, n - segment);
        return !(s == "." || s == "..");
    };
    for (std::size_t i = 1; i < target.size(); ++i) { // the leading '/' is not written
        char c = target[i];
        if (c == '\0')
            return -1;
        if (c == '%') {
            if (i + 2 >= target.size())
                return -1;
            int hi = hex(target[i + 1]), lo = hex(target[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = static_cast<char>(hi * 16 + lo);
            i += 2;
            if (c == '\0' || c == '/') // an encoded slash would hide a segment from the check
                return -1;
        } else if (c == '/') {
            if (n == segment || !end_segment()) // "//", "/./", "/../"
                return -1;
            if (n + 1 >= cap)
                return -1;
            out[n++] = '/';
            segment = n;
            continue;
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    if (n == segment) { // "/" or ".../": the folder's index
        constexpr std::string_view index = "index.html";
        if (n + index.size() + 1 > cap)
            return -1;
        for (char c : index)
            out[n++] = c;
    } else if (!end_segment()) {
        return -1;
    }
    out[n] = '\0';
    return static_cast<long>(n);
}

/// The media type of a file from its name's extension (application/octet-stream otherwise).
constexpr std::string_view content_type(std::string_view path) noexcept {
    std::size_t dot = path.rfind('.');
    std::size_t slash = path.rfind('/');
    if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash))
        return "application/octet-stream";
    std::string_view ext = path.substr(dot + 1);
    struct Type {
        std::string_view ext, type;
    };
    constexpr Type types[] = {
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"txt", "text/plain; charset=utf-8"},
        {"css", "text/css"},
        {"js", "text/javascript"},
        {"json", "application/json"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"ico", "image/x-icon"},
        {"pdf", "application/pdf"},
        {"wasm", "application/wasm"},
    };
    for (const Type& t : types)
        if (detail::iequals(ext, t.ext))
            return t.type;
    return "application/octet-stream";
}

/// The reason phrase of the statuses the server answers.
constexpr std::string_view reason(int status) noexcept {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

} // namespace http
