// libFuzzer target: examples/http_parser.hpp on arbitrary bytes, as a request head, as a
// request target and as a Range header. Checks what the server relies on: a complete head
// lies within the bytes and the limit, its target is a path when it came in absolute form,
// an error carries a status the server answers, a decoded path stays beneath the served
// folder (no "." or ".." segment, no empty segment, no leading '/', no NUL) and fits its
// buffer, and a byte range lies within the file.
#include "http_parser.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

void require(bool ok) {
    if (!ok)
        std::abort();
}

bool within(std::string_view part, std::string_view whole) {
    return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void check_path(std::string_view target) {
    char out[256];
    long n = http::decode_path(target, out, sizeof out);
    require(n >= 0 || n == http::path_invalid || n == http::path_too_long);
    if (n < 0)
        return;
    require(static_cast<std::size_t>(n) < sizeof out && out[n] == '\0');
    std::string_view p(out, static_cast<std::size_t>(n));
    require(!p.empty() && p.front() != '/' && p.find('\0') == std::string_view::npos);
    while (!p.empty()) {
        std::size_t slash = p.find('/');
        std::string_view seg = p.substr(0, slash);
        require(!seg.empty() && seg != "." && seg != "..");
        if (slash == std::string_view::npos)
            break;
        p.remove_prefix(slash + 1);
        require(!p.empty()); // a path ending in '/' got index.html
    }
}

// A range served lies within the file: first <= last < size; an empty file has none.
void check_range(std::string_view value) {
    constexpr std::uint64_t max = ~std::uint64_t{0};
    for (std::uint64_t size : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4096}, max / 2, max}) {
        http::ByteRange r{7, 3}; // left alone unless a range is served
        http::Range got = http::byte_range(value, size, r);
        if (got == http::Range::part)
            require(size > 0 && r.first <= r.last && r.last < size);
        else
            require(r.first == 7 && r.last == 3);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    for (std::size_t limit : {std::size_t{64}, std::size_t{8192}}) {
        http::Request req;
        http::Parse p = http::parse_request(bytes, limit, req);
        switch (p) {
        case http::Parse::complete: {
            require(req.head_size > 0 && req.head_size <= bytes.size() && req.head_size <= limit);
            // The target as sent, or, from an absolute form, its path: "/" when it had none.
            require((within(req.target, bytes.substr(0, req.head_size)) || req.target == "/") && !req.target.empty());
            require(within(req.range, bytes.substr(0, req.head_size)));
            std::string_view t = req.target; // an absolute form the server could serve was reduced
            require(t.front() == '/' || !http::detail::origin_form(t));
            require(within(req.method_name, bytes.substr(0, req.head_size)) && !req.method_name.empty());
            require(req.minor >= 0 && req.minor <= 9 && req.status == 0);
            require((req.method == http::Method::get) == (req.method_name == "GET"));
            check_path(req.target);
            break;
        }
        case http::Parse::incomplete: require(bytes.size() < limit); break;
        case http::Parse::error:
            require(req.status == 400 || req.status == 414 || req.status == 431 || req.status == 501 ||
                    req.status == 505);
            break;
        }
    }
    check_path(bytes);
    check_range(bytes);
    require(!http::content_type(bytes).empty());
    return 0;
}
