// http_beast: the http figure's C++ coroutine server written with Boost.Beast on Boost.Asio (as
// Debian packages them: libboost-dev 1.74), the way Beast's own examples serve files: one
// io_context run by one thread, one C++20 coroutine per connection (co_spawn, use_awaitable),
// http::async_read of each request into a flat_buffer, and http::async_write of a
// response<string_body> for the in-memory answer or a response<file_body> for a file (Beast
// reads the file and writes it through user space; it has no sendfile). Keep-alive as the
// request asks; TCP_NODELAY on; 404 for a missing file, a folder or a target with "..".
// Prints "listening on port P"; ends at SIGINT or SIGTERM.
#include <utility> // before Boost 1.74's asio/awaitable.hpp, which uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

const char* kUsage =
    "usage: http_beast --root DIR --port P [--inline /PATH:TEXT]\n"
    "  Single-threaded Boost.Beast (C++20 coroutines) HTTP/1.1 server on 127.0.0.1:P serving\n"
    "  the files of DIR (GET and HEAD) and TEXT at PATH; runs until SIGINT or SIGTERM.\n";

struct Config {
    std::string root;
    std::string inline_path, inline_text;
};

// The Date header's value, formatted once a second (nginx and the ringo server send one too).
std::string_view http_date() {
    static char text[64];
    static std::size_t len = 0;
    static std::time_t last = -1;
    std::time_t now = std::time(nullptr);
    if (now != last) {
        std::tm tm{};
        ::gmtime_r(&now, &tm);
        len = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        last = now;
    }
    return {text, len};
}

template <class Body>
void set_common(http::response<Body>& res, const http::request<http::empty_body>& req, std::string_view type) {
    res.set(http::field::server, "beast");
    std::string_view date = http_date();
    res.set(http::field::date, beast::string_view(date.data(), date.size()));
    res.set(http::field::content_type, beast::string_view(type.data(), type.size()));
    res.keep_alive(req.keep_alive());
}

// Answers `req` with `text` as a string_body (only its length for HEAD).
asio::awaitable<void> send_text(tcp::socket& sock, const http::request<http::empty_body>& req, http::status status,
                                std::string_view text, beast::error_code& ec) {
    http::response<http::string_body> res{status, req.version()};
    set_common(res, req, "text/plain");
    if (req.method() != http::verb::head)
        res.body() = std::string(text);
    res.content_length(text.size()); // (for HEAD too: the body is left out)
    co_await http::async_write(sock, res, asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> session(tcp::socket sock, const Config& cfg) {
    beast::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    beast::flat_buffer buf;
    for (;;) {
        http::request<http::empty_body> req;
        co_await http::async_read(sock, buf, req, asio::redirect_error(asio::use_awaitable, ec));
        if (ec)
            break; // the client closed, or a request this server does not take
        const std::string_view target(req.target().data(), req.target().size());
        bool ok_method = req.method() == http::verb::get || req.method() == http::verb::head;
        if (ok_method && target == cfg.inline_path) {
            co_await send_text(sock, req, http::status::ok, cfg.inline_text, ec);
        } else {
            http::file_body::value_type body;
            if (ok_method && !target.empty() && target.front() == '/' && target.find("..") == std::string_view::npos)
                body.open((cfg.root + std::string(target)).c_str(), beast::file_mode::scan, ec);
            else
                ec = http::error::bad_target;
            struct stat st{};
            if (!ec && (::fstat(body.file().native_handle(), &st) != 0 || !S_ISREG(st.st_mode)))
                ec = http::error::bad_target; // a folder: not served
            if (ec) {
                co_await send_text(sock, req, http::status::not_found, "not found\n", ec);
            } else {
                auto size = body.size();
                http::response<http::file_body> res{std::piecewise_construct, std::make_tuple(std::move(body)),
                                                    std::make_tuple(http::status::ok, req.version())};
                set_common(res, req, "application/octet-stream");
                res.content_length(size);
                if (req.method() == http::verb::head) {
                    http::response_serializer<http::file_body> sr{res};
                    sr.split(true);
                    co_await http::async_write_header(sock, sr, asio::redirect_error(asio::use_awaitable, ec));
                } else {
                    co_await http::async_write(sock, res, asio::redirect_error(asio::use_awaitable, ec));
                }
            }
        }
        if (ec || !req.keep_alive())
            break;
    }
    sock.shutdown(tcp::socket::shutdown_send, ec);
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, const Config& cfg) {
    for (;;) {
        beast::error_code ec;
        tcp::socket sock = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::operation_aborted)
            co_return;
        if (ec)
            continue; // out of descriptors for a moment, a connection reset before it was accepted
        asio::co_spawn(acceptor.get_executor(), session(std::move(sock), cfg), asio::detached);
    }
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "http_beast: %s\n%s", why, kUsage);
    std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
    Config cfg;
    long port = -1;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (i + 1 >= argc)
            usage("every option takes a value");
        std::string_view v = argv[++i];
        if (a == "--root") {
            cfg.root = std::string(v);
        } else if (a == "--port") {
            char* end = nullptr;
            port = std::strtol(argv[i], &end, 10);
            if (!end || *end || port < 0 || port > 65535)
                usage("--port takes 0..65535");
        } else if (a == "--inline") {
            std::size_t colon = v.find(':');
            if (colon == std::string_view::npos || v.front() != '/')
                usage("--inline takes /PATH:TEXT");
            cfg.inline_path = std::string(v.substr(0, colon));
            cfg.inline_text = std::string(v.substr(colon + 1));
        } else {
            usage("unknown option");
        }
    }
    if (cfg.root.empty() || port < 0)
        usage("--root and --port are required");
    while (cfg.root.size() > 1 && cfg.root.back() == '/')
        cfg.root.pop_back();
    std::signal(SIGPIPE, SIG_IGN);
    try {
        asio::io_context ioc{1};
        asio::signal_set signals{ioc, SIGINT, SIGTERM}; // before "listening": a stop may follow it at once
        signals.async_wait([&](const beast::error_code&, int) { ioc.stop(); });
        tcp::acceptor acceptor{ioc};
        tcp::endpoint ep{asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)};
        acceptor.open(ep.protocol());
        acceptor.set_option(tcp::acceptor::reuse_address(true));
        acceptor.bind(ep);
        acceptor.listen(4096);
        std::printf("listening on port %u\n", acceptor.local_endpoint().port());
        std::fflush(stdout);
        asio::co_spawn(ioc, accept_loop(acceptor, cfg), asio::detached);
        ioc.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "http_beast: %s\n", e.what());
        return 1;
    }
    return 0;
}
