// http_parser.hpp - the request side of HTTP/1.0 and HTTP/1.1 for examples/http_file_server:
// a request head parsed from the bytes received so far, the request target decoded to a path
// under the served folder, a Range header's byte range, and a file's media type from its
// name. No I/O and no allocation:
// every function works on the caller's bytes, so the parser is fuzzed on its own
// (tests/fuzz/fuzz_http_parser.cpp).
//
// What it accepts (RFC 9112, "HTTP/1.1", sections 2-3 and 5), strictly where leniency would
// let two readers of one message disagree:
//   - a request line `METHOD SP target SP HTTP/1.x` (one space each), then header lines
//     `name: value`, then an empty line; lines end with CRLF or a bare LF;
//   - a target in origin form (`/path?query`) or absolute form (`http://host/path`, which
//     RFC 9112, 3.2.2 requires servers to accept: it is reduced to its path and query; with
//     an empty host or user information it stays as sent, and decode_path refuses it);
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
    std::string_view target;      // origin form: path and query (of an absolute form, its path)
    int minor = 1;                // HTTP/1.<minor>
    bool keep_alive = false;      // the connection stays open after the answer
    std::uint64_t content_length = 0;
    std::size_t head_size = 0; // bytes of the request line, headers and empty line
    int status = 0;            // with Parse::error: the status to answer
    std::string_view range;    // the Range header's value (empty without one, or with two)
    bool if_range = false;     // an If-Range header came (see byte_range)
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

/// Reduces an absolute-form target (`http://host:port/path?query`, scheme case-insensitive,
/// http or https) to its path and query, as RFC 9112, 3.2.2 has a server do; "/" when the
/// path is empty (RFC 9112, 3.2.1). False, `target` unchanged, for anything else (no such
/// scheme, an empty host, user information before the host: RFC 9110, 4.2.1 and 4.2.4; the
/// server then refuses the target as it refuses any that is not a path). The Host header is still
/// required of HTTP/1.1 (RFC 9112, 3.2), and the one in the target wins (nothing here depends
/// on the host).
constexpr bool origin_form(std::string_view& target) noexcept {
    std::string_view rest;
    if (target.size() > 7 && iequals(target.substr(0, 7), "http://"))
        rest = target.substr(7);
    else if (target.size() > 8 && iequals(target.substr(0, 8), "https://"))
        rest = target.substr(8);
    else
        return false;
    std::size_t path = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, path);
    if (authority.empty() || authority.find('@') != std::string_view::npos)
        return false;
    if (path == std::string_view::npos || rest[path] != '/')
        target = "/"; // no path (a query without one is dropped: no file depends on it)
    else
        target = rest.substr(path);
    return true;
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
    if (req.target.front() != '/')     // absolute form to origin form; any other form is left to
        (void)origin_form(req.target); // the server (405 for OPTIONS *, 400 from decode_path)
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
    int count = 0, ranges = 0;
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
        } else if (iequals(name, "range")) {
            if (++ranges == 1)
                req.range = value;
        } else if (iequals(name, "if-range")) {
            req.if_range = true;
        }
    }
    if (req.minor >= 1 && !host)
        return fail(400);
    if (ranges > 1) // two Range headers: neither is trusted, the whole file is sent
        req.range = {};
    req.keep_alive = req.minor >= 1 ? !close : keep_alive && !close;
    return Parse::complete;
}

/// What decode_path returns for a target it refuses (400), and for one whose path does not fit
/// (414, URI Too Long).
inline constexpr long path_invalid = -1;
inline constexpr long path_too_long = -2;

/// Decodes a request target to a path relative to the served folder, written to `out`
/// (`cap` bytes, NUL-terminated): the query is dropped, %XX escapes are decoded, "/" and any
/// path ending in "/" get "index.html". Returns the length; path_invalid for a target that is
/// not an absolute path, has a bad escape, a NUL, a "." or ".." segment or an empty one (such
/// as "//"); path_too_long when the decoded path does not fit.
constexpr long decode_path(std::string_view target, char* out, std::size_t cap) noexcept {
    std::size_t q = target.find_first_of("?#");
    if (q != std::string_view::npos)
        target = target.substr(0, q);
    if (target.empty() || target.front() != '/')
        return path_invalid;
    if (cap == 0)
        return path_too_long;
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
            return path_invalid;
        if (c == '%') {
            if (i + 2 >= target.size())
                return path_invalid;
            int hi = hex(target[i + 1]), lo = hex(target[i + 2]);
            if (hi < 0 || lo < 0)
                return path_invalid;
            c = static_cast<char>(hi * 16 + lo);
            i += 2;
            if (c == '\0' || c == '/') // an encoded slash would hide a segment from the check
                return path_invalid;
        } else if (c == '/') {
            if (n == segment || !end_segment()) // "//", "/./", "/../"
                return path_invalid;
            if (n + 1 >= cap)
                return path_too_long;
            out[n++] = '/';
            segment = n;
            continue;
        }
        if (n + 1 >= cap)
            return path_too_long;
        out[n++] = c;
    }
    if (n == segment) { // "/" or ".../": the folder's index
        constexpr std::string_view index = "index.html";
        if (n + index.size() + 1 > cap)
            return path_too_long;
        for (char c : index)
            out[n++] = c;
    } else if (!end_segment()) {
        return path_invalid;
    }
    out[n] = '\0';
    return static_cast<long>(n);
}

/// A range of bytes, both ends included.
struct ByteRange {
    std::uint64_t first = 0, last = 0;
};

/// What a Range header asks of a file (RFC 9110, 14.1-14.2).
enum class Range {
    whole,         // send the whole file (200): no Range, or one this server ignores
    part,          // send the ByteRange (206)
    unsatisfiable, // 416, with Content-Range: bytes */SIZE
};

/// The byte range that the Range header value `value` asks of a file of `size` bytes. One
/// range is served: `bytes=a-b`, `bytes=a-` and `bytes=-n` (the last n bytes), the unit
/// case-insensitive; `b` beyond the end means the end, numbers too large for 64 bits are
/// taken as the largest one. It is unsatisfiable when `a` is at or past the end, for `-0`,
/// and for any range of an empty file. Everything else is ignored, as RFC 9110, 14.2 lets a
/// server do: several ranges, another unit, a malformed value (`b` below `a`, signs, white
/// space anywhere but around the value).
constexpr Range byte_range(std::string_view value, std::uint64_t size, ByteRange& out) noexcept {
    using namespace detail;
    value = trim(value);
    std::size_t eq = value.find('=');
    if (eq == std::string_view::npos || !iequals(value.substr(0, eq), "bytes"))
        return Range::whole;
    std::string_view spec = value.substr(eq + 1);
    std::size_t dash = spec.find('-');
    if (spec.find(',') != std::string_view::npos || dash == std::string_view::npos)
        return Range::whole;
    // Decimal digits, saturating; false for none or anything else.
    auto number = [](std::string_view digits, std::uint64_t& n) {
        if (digits.empty())
            return false;
        n = 0;
        for (char c : digits) {
            if (c < '0' || c > '9')
                return false;
            auto d = static_cast<std::uint64_t>(c - '0');
            n = n > (~std::uint64_t{0} - d) / 10 ? ~std::uint64_t{0} : n * 10 + d;
        }
        return true;
    };
    std::uint64_t first = 0, last = 0;
    std::string_view a = spec.substr(0, dash), b = spec.substr(dash + 1);
    if (a.empty()) { // the last b bytes
        if (!number(b, last))
            return Range::whole;
        if (last == 0 || size == 0)
            return Range::unsatisfiable;
        out = {size - (last < size ? last : size), size - 1};
        return Range::part;
    }
    if (!number(a, first))
        return Range::whole;
    if (b.empty())
        last = ~std::uint64_t{0};
    else if (!number(b, last) || last < first)
        return Range::whole;
    if (first >= size)
        return Range::unsatisfiable;
    out = {first, last < size - 1 ? last : size - 1};
    return Range::part;
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
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

} // namespace http
