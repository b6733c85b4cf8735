// libFuzzer target: examples/http_parser.hpp on arbitrary bytes, as a request head and as a
// request target. Checks what the server relies on: a complete head lies within the bytes
// and the limit, an error carries a status the server answers, and a decoded path stays
// beneath the served folder (no "." or ".." segment, no empty segment, no leading '/', no
// NUL) and fits its buffer.
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

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    for (std::size_t limit : {std::size_t{64}, std::size_t{8192}}) {
        http::Request req;
        http::Parse p = http::parse_request(bytes, limit, req);
        switch (p) {
        case http::Parse::complete:
            require(req.head_size > 0 && req.head_size <= bytes.size() && req.head_size <= limit);
            require(within(req.target, bytes.substr(0, req.head_size)) && !req.target.empty());
            require(within(req.method_name, bytes.substr(0, req.head_size)) && !req.method_name.empty());
            require(req.minor >= 0 && req.minor <= 9 && req.status == 0);
            require((req.method == http::Method::get) == (req.method_name == "GET"));
            check_path(req.target);
            break;
        case http::Parse::incomplete: require(bytes.size() < limit); break;
        case http::Parse::error:
            require(req.status == 400 || req.status == 414 || req.status == 431 || req.status == 501 ||
                    req.status == 505);
            break;
        }
    }
    check_path(bytes);
    require(!http::content_type(bytes).empty());
    return 0;
}
