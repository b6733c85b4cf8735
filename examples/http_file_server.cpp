// A static file server over HTTP/1.1 and HTTP/1.0: keep-alive (HTTP/1.1's default, and
// HTTP/1.0 clients that ask for it), GET and HEAD, Content-Length from statx, a single byte
// Range (206, or 416 when it lies past the end), a folder named without its trailing slash
// redirected (301), targets in origin or absolute form (`GET http://host/path`),
// 400/403/404/405/414/431/505 answers, files opened beneath the served folder only (openat2
// with RESOLVE_BENEATH), small answers sent with their head in one send and large ones sent
// from the page cache by sendfile(2) on the non-blocking socket, waiting for room with an
// io_uring poll (or, with --body splice, read into a pipe by io_uring's splice and spliced
// from it to the socket the same way; neither copies through user space).
//
// Hostile clients: a connection that makes no progress for --idle-timeout seconds (60) is
// closed, whether it is waiting for a whole request head (a slow one sent a byte at a time
// included), idle between requests, or not taking the answer's bytes: a ringo::Watchdog per
// connection, fed by each request head and each byte sent. An idle connection holds no
// request buffers (they come from a per-thread list of spares when a request starts to
// arrive, and go back when none is under way), and no thread. Out of descriptors (EMFILE),
// net::accept_loop waits and accepts again, so the server keeps serving. Ctrl-C drains:
// the listener closes, answers being sent complete, idle connections end, and what is still
// open after the grace period is cancelled.
//
//   http_file_server --root DIR [--port P] [--threads N] [--idle-timeout S] [--grace-ms MS]
//                    [--inline /PATH:TEXT] [--body sendfile|splice]     (--help: the usage)
//
// One runtime by default; with --threads N, a RuntimePool with one listening socket per
// runtime (net::ShardedListener). Prints `listening on port P` first. Try it with
//   curl -v http://127.0.0.1:P/            wrk -c100 -d5s http://127.0.0.1:P/file
// The request parser is examples/http_parser.hpp (fuzzed by tests/fuzz/fuzz_http_parser.cpp).
#include "args.hpp"
#include "http_parser.hpp"

#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t head_cap = 8192;       // the largest request head (431 beyond it)
constexpr std::size_t small_file = 16384;    // answers with up to this many body bytes go out with their head
constexpr std::size_t answer_head_cap = 512; // an answer's head (a redirect's Location may take more: below)
constexpr std::size_t path_cap = 1024;       // a decoded path and its NUL (414 beyond it)
constexpr unsigned splice_chunk = 1u << 20;  // bytes per splice (the pipe is grown to this)

// The connections being served, so that a stop can end their reading: shutdown(SHUT_RD)
// makes a pending or later receive see the end of the stream, while an answer being sent
// goes on. Shared by the runtimes of a pool (connections register once, not per request).
class Connections {
public:
    struct Entry {
        int fd;
        Entry* prev = nullptr;
        Entry* next = nullptr;
    };
    // Registers `e`; false once stopping (the connection is to end at once).
    bool add(Entry& e) {
        std::lock_guard lock(m_);
        e.next = head_.next;
        e.prev = &head_;
        if (head_.next)
            head_.next->prev = &e;
        head_.next = &e;
        count_++;
        return !stopping_;
    }
    void remove(Entry& e) {
        std::lock_guard lock(m_);
        e.prev->next = e.next;
        if (e.next)
            e.next->prev = e.prev;
        count_--;
    }
    void stop() {
        std::lock_guard lock(m_);
        stopping_ = true;
        for (Entry* e = head_.next; e; e = e->next)
            ::shutdown(e->fd, SHUT_RD);
    }
    bool stopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }
    std::size_t open() {
        std::lock_guard lock(m_);
        return count_;
    }

private:
    std::mutex m_;
    Entry head_{-1};
    std::size_t count_ = 0;
    std::atomic<bool> stopping_{false};
};

struct Server {
    ringo::Fd root; // the served folder, opened once
    // --inline PATH:TEXT: an answer kept in memory for one target path (no file I/O), as a
    // web server's configured fixed response is.
    std::string inline_path, inline_body;
    bool splice = false;           // --body splice: large files through a pipe instead of sendfile(2)
    std::chrono::seconds idle{60}; // --idle-timeout
    Connections connections;
    std::atomic<std::uint64_t> requests{0};
};

// The Date header's value, formatted once a second per thread.
std::string_view http_date() {
    thread_local char text[64];
    thread_local std::size_t len = 0;
    thread_local std::time_t last = -1;
    std::time_t now = std::time(nullptr);
    if (now != last) {
        std::tm tm{};
        ::gmtime_r(&now, &tm);
        len = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        last = now;
    }
    return {text, len};
}

// Appends `s` at `p`; returns the end.
char* put(char* p, std::string_view s) noexcept {
    std::memcpy(p, s.data(), s.size());
    return p + s.size();
}

// Writes an answer's head into `out`: the status line, Server, Date, Content-Type,
// Content-Length, the Connection header that `keep_alive` and `minor` call for, then `extra`
// (whole header lines, each ending in CRLF, given in pieces), then the empty line. Returns
// its length: at most answer_head_cap plus the size of `extra`. Plain copies, no printf:
// this runs once per request.
std::size_t format_head(char* out, int status, std::string_view type, std::uint64_t length, bool keep_alive, int minor,
                        std::span<const std::string_view> extra = {}) {
    char* p = put(out, "HTTP/1.1 ");
    p = std::to_chars(p, p + 3, status).ptr;
    *p++ = ' ';
    p = put(p, http::reason(status));
    p = put(p, "\r\nServer: ringo\r\nDate: ");
    p = put(p, http_date());
    p = put(p, "\r\nContent-Type: ");
    p = put(p, type);
    p = put(p, "\r\nContent-Length: ");
    p = std::to_chars(p, p + 20, length).ptr;
    p = put(p, "\r\n");
    if (!keep_alive)
        p = put(p, "Connection: close\r\n");
    else if (minor == 0)
        p = put(p, "Connection: keep-alive\r\n");
    for (std::string_view e : extra)
        p = put(p, e);
    p = put(p, "\r\n");
    return static_cast<std::size_t>(p - out);
}

// The buffers of a request being read and answered: the request bytes received, the answer
// (head, and the body of a small one), the decoded target.
struct Buffers {
    char in[head_cap];
    char out[answer_head_cap + small_file];
    char path[path_cap];
};
// A redirect's Location is the request's target, so at most a request head long.
static_assert(answer_head_cap + head_cap <= sizeof(Buffers::out));

// A connection's Buffers while a request is under way. get() takes them from the thread's
// spares (or allocates them, not zero-filled) and release() gives them back, so an idle
// connection holds none: with its 25 KiB zero-filled at the accept, each idle connection
// held 26 KiB resident. Up to 64 spares per thread are kept for the next requests.
class BufferLease {
public:
    BufferLease() = default;
    BufferLease(const BufferLease&) = delete;
    BufferLease& operator=(const BufferLease&) = delete;
    ~BufferLease() { release(); }

    Buffers& get() {
        if (!b_)
            b_ = spares().take();
        return *b_;
    }
    void release() noexcept {
        if (b_)
            spares().give(std::move(b_));
    }

private:
    struct Spares {
        static constexpr std::size_t kept = 64;
        std::vector<std::unique_ptr<Buffers>> free;
        Spares() { free.reserve(kept); } // give() then never allocates
        std::unique_ptr<Buffers> take() {
            if (free.empty())
                return std::unique_ptr<Buffers>(new Buffers); // default-initialised: not zeroed
            auto b = std::move(free.back());
            free.pop_back();
            return b;
        }
        void give(std::unique_ptr<Buffers> b) noexcept {
            if (free.size() < kept)
                free.push_back(std::move(b));
        }
    };
    static Spares& spares() {
        thread_local Spares s;
        return s;
    }
    std::unique_ptr<Buffers> b_;
};

// A pipe for splicing large files, made at the first one a connection sends.
struct SplicePipe {
    std::optional<ringo::PipeEnds> ends;
};

// One connection: its socket, its watchdog (no progress for --idle-timeout cancels the
// connection's task), its buffers while a request is under way, its pipe for --body splice.
struct Conn {
    ringo::net::TcpStream& s;
    Server& srv;
    ringo::Watchdog dog;
    BufferLease buf;
    SplicePipe pipe;
};

// Bytes of a file that follow an answer's head.
struct Body {
    std::uint64_t offset = 0, length = 0;
};

// An answer with a short text body ("404 Not Found\n"; none for HEAD) and the header lines
// `extra`, written into b.out; returns its length. Whether the connection stays open is the
// caller's `keep_alive`.
std::size_t status_answer(Buffers& b, int status, bool keep_alive, int minor, bool head_only,
                          std::span<const std::string_view> extra = {}) {
    char body[64];
    int len = std::snprintf(body, sizeof body, "%d %.*s\n", status, static_cast<int>(http::reason(status).size()),
                            http::reason(status).data());
    std::size_t n = format_head(b.out, status, "text/plain; charset=utf-8", static_cast<std::size_t>(len), keep_alive,
                                minor, extra);
    if (!head_only) {
        std::memcpy(b.out + n, body, static_cast<std::size_t>(len));
        n += static_cast<std::size_t>(len);
    }
    return n;
}

// Whether the path of `target` ends with a slash (it names a folder: decode_path appended
// index.html to it).
bool names_folder(std::string_view target) {
    std::size_t end = std::min(target.find_first_of("?#"), target.size());
    return end > 0 && target[end - 1] == '/';
}

// 301 for a folder named without its trailing slash: Location is the target with a slash
// after its path (the query kept), relative to this server, as nginx answers.
std::size_t redirect_answer(Buffers& b, std::string_view target, bool keep_alive, int minor, bool head_only) {
    std::size_t q = target.find_first_of("?#");
    std::string_view query = q < target.size() && target[q] == '?' ? target.substr(q, target.find('#', q) - q) : "";
    const std::string_view location[] = {"Location: ", target.substr(0, q), "/", query, "\r\n"};
    return status_answer(b, 301, keep_alive, minor, head_only, location);
}

// The head of a file's answer, written into b.out: 200 and the whole file, or, for a GET
// with a satisfiable Range, 206 and that range; `body` says which bytes of the file follow
// (none for HEAD). An unsatisfiable Range gets a 416 answer instead, and no body. Range is
// ignored for HEAD (RFC 9110, 14.2: GET only), and with If-Range, whose validators this
// server never sends (so the condition cannot hold: the whole file, RFC 9110, 13.1.5).
std::size_t file_head(Buffers& b, const http::Request& req, std::uint64_t size, bool keep_alive, Body& body) {
    http::ByteRange r;
    http::Range asked = http::Range::whole;
    if (req.method == http::Method::get && !req.range.empty() && !req.if_range)
        asked = http::byte_range(req.range, size, r);
    char line[96]; // "Content-Range: bytes A-B/SIZE\r\n", three numbers of up to 20 digits
    char* p = put(line, "Content-Range: bytes ");
    body = {};
    if (asked == http::Range::unsatisfiable) {
        p = put(p, "*/");
        p = std::to_chars(p, p + 20, size).ptr;
        p = put(p, "\r\n");
        const std::string_view extra[] = {{line, static_cast<std::size_t>(p - line)}};
        return status_answer(b, 416, keep_alive, req.minor, false, extra);
    }
    const bool part = asked == http::Range::part;
    std::string_view extra[] = {"Accept-Ranges: bytes\r\n", {}}; // and Content-Range for a part
    std::uint64_t length = part ? r.last - r.first + 1 : size;
    if (part) {
        p = std::to_chars(p, p + 20, r.first).ptr;
        *p++ = '-';
        p = std::to_chars(p, p + 20, r.last).ptr;
        *p++ = '/';
        p = std::to_chars(p, p + 20, size).ptr;
        p = put(p, "\r\n");
        extra[1] = {line, static_cast<std::size_t>(p - line)};
    }
    if (req.method != http::Method::head)
        body = {part ? r.first : 0, length};
    return format_head(b.out, part ? 206 : 200, http::content_type(b.path), length, keep_alive, req.minor,
                       std::span(extra, part ? 2 : 1));
}

// The --inline answer, written into b.out; returns its length.
std::size_t inline_answer(const Server& srv, const http::Request& req, bool keep_alive, Buffers& b) {
    std::size_t n = format_head(b.out, 200, "text/plain", srv.inline_body.size(), keep_alive, req.minor);
    if (req.method != http::Method::head) {
        std::memcpy(b.out + n, srv.inline_body.data(), srv.inline_body.size());
        n += srv.inline_body.size();
    }
    return n;
}

// The socket non-blocking while this lives (back to blocking on every way out, a
// cancellation's included): sendfile(2) and splice(2) into it then return when it is full
// instead of waiting. io_uring's own operations on it do not depend on that.
struct NonBlocking {
    int fd, flags;
    explicit NonBlocking(int sock) : fd(sock), flags(::fcntl(sock, F_GETFL)) {
        if (flags >= 0 && !(flags & O_NONBLOCK) && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
            flags = -1;
    }
    NonBlocking(const NonBlocking&) = delete;
    NonBlocking& operator=(const NonBlocking&) = delete;
    ~NonBlocking() {
        if (flags >= 0 && !(flags & O_NONBLOCK))
            ::fcntl(fd, F_SETFL, flags);
    }
    bool ok() const noexcept { return flags >= 0; }
};

// Moves `count` bytes into the connection's (non-blocking) socket with `send_some(max)`, a
// sendfile(2) or splice(2) call that returns what it moved or -1 with errno: calls it again
// while it moves bytes, yielding between calls (a client that reads as fast as this sends,
// on loopback, could otherwise keep the thread for the whole file), and waits for room with
// an io_uring poll while the socket is full. Each call that moves bytes feeds the watchdog;
// a client that takes none for --idle-timeout has its poll cancelled, and the connection
// closes. No thread waits for the client.
template <class SendSome>
ringo::Task<bool> push(Conn& c, std::uint64_t count, SendSome send_some) {
    while (count > 0) {
        ssize_t n = send_some(count);
        if (n > 0) {
            c.dog.feed();
            count -= static_cast<std::uint64_t>(n);
            if (count > 0)
                co_await ringo::yield();
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || errno != EAGAIN) // the file shrank, or the client has gone (EPIPE, ECONNRESET)
            co_return false;
        int ready = co_await ringo::op::poll_add(c.s.fd().get(), POLLOUT);
        if (ready < 0) // cancelled: no progress for --idle-timeout, or a stop's grace ran out
            co_return false;
    }
    co_return true;
}

// Sends the body's bytes of `file` by sendfile(2) (page references, as splice makes), as
// nginx does: each call moves what the socket's buffer takes and returns. io_uring has no
// sendfile, and its splice always runs in an io-wq worker thread, where a splice into a full
// socket blocks that thread: with 1 000 clients that is up to 1 000 threads (and 0.85x
// nginx's requests per second at 1 MiB, against 1.14x this way). A file not in the page cache
// is read from the disk by sendfile itself, on this thread, as nginx does without aio
// threads; --body splice reads it in io-wq threads.
ringo::Task<bool> sendfile_body(Conn& c, ringo::fs::File& file, Body body) {
    int sock = c.s.fd().get();
    NonBlocking nb(sock);
    if (!nb.ok())
        co_return false;
    auto off = static_cast<off_t>(body.offset);
    auto send_some = [sock, &file, &off](std::uint64_t max) { return ::sendfile(sock, file.get(), &off, max); };
    co_return co_await push(c, body.length, send_some);
}

// Sends the body's bytes of `file` through the connection's pipe: io_uring's splice reads
// up to splice_chunk of the file into the (empty) pipe, in an io-wq worker (file reads, never
// waiting for the client), and splice(2) moves them to the non-blocking socket on this
// thread as push() does. Page references throughout, no copy. (Spliced to the socket by
// io_uring too, each client that stopped reading held an io-wq thread blocked in the splice
// for as long as its connection lived: 300 such clients, 302 threads.)
ringo::Task<bool> splice_body(Conn& c, ringo::fs::File& file, Body body) {
    int sock = c.s.fd().get();
    NonBlocking nb(sock);
    if (!nb.ok())
        co_return false;
    int pipe_r = c.pipe.ends->reader.fd().get(), pipe_w = c.pipe.ends->writer.fd().get();
    for (std::uint64_t off = body.offset, end = body.offset + body.length; off < end;) {
        auto want = static_cast<unsigned>(std::min<std::uint64_t>(end - off, splice_chunk));
        int in =
            co_await ringo::op::splice(file.get(), static_cast<std::int64_t>(off), pipe_w, -1, want, SPLICE_F_MOVE);
        if (in <= 0) // an error, or the file shrank: the answer cannot be completed
            co_return false;
        off += static_cast<unsigned>(in);
        unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | (off < end ? SPLICE_F_MORE : 0);
        auto send_some = [pipe_r, sock, flags](std::uint64_t max) {
            return ::splice(pipe_r, nullptr, sock, nullptr, max, flags);
        };
        bool sent = co_await push(c, static_cast<unsigned>(in), send_some);
        if (!sent) // (the pipe may hold bytes now: it goes with the connection)
            co_return false;
    }
    co_return true;
}

// The pipe for --body splice, made before an answer's head is sent so that a failure (out
// of descriptors) can still be a clean 503. False when it cannot be made.
ringo::Task<bool> make_pipe(SplicePipe& p) {
    if (p.ends)
        co_return true;
    auto made = co_await ringo::pipe();
    if (!made)
        co_return false;
    p.ends.emplace(std::move(*made));
    ::fcntl(p.ends->writer.fd().get(), F_SETPIPE_SZ, splice_chunk); // a smaller pipe still works
    co_return true;
}

// Opens the file a decoded path names, beneath the served folder only (".."; absolute
// symbolic links and links that leave the folder are refused by the kernel with EXDEV, as are
// /proc's magic links), and finds its size. Yields 200 with `file` and `size` set, 301 for a
// folder (the caller redirects a folder named without its trailing slash), or the status to
// answer. (A function of its own: its statx buffer then stays out of answer()'s frame, which
// ringo's frame pool serves while it is at most 1 KiB.)
ringo::Task<int> open_file(const Server& srv, const char* path, ringo::fs::File& file, std::uint64_t& size) {
    // O_NONBLOCK: a FIFO in the folder must not block the open in an io-wq worker until a
    // writer comes. Reads of regular files are the same with it (they wait for the disk).
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd = co_await ringo::op::openat2(srv.root.get(), path, &how);
    if (fd < 0)
        co_return fd == -EACCES || fd == -EPERM ? 403 : fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM ? 503 : 404;
    file = ringo::fs::File{ringo::Fd(fd)};
    auto md = co_await file.metadata();
    if (!md)
        co_return 500;
    if (!md->is_file()) // a folder, a device, a FIFO
        co_return md->is_dir() ? 301 : 403;
    size = md->size;
    co_return 200;
}

// Answers the request at the start of the connection's buffers: `complete` as parse_request
// found it, or malformed (then req.status is the answer, and the connection closes). False:
// the connection is to close (a send failed, or an answer could not be completed).
ringo::Task<bool> answer(Conn& c, const http::Request& req, bool complete, bool keep_alive) {
    Buffers& b = c.buf.get();
    const bool head_only = req.method == http::Method::head;
    ringo::fs::File file;
    Body body;
    bool ok = true; // false: close after this answer
    std::size_t n = 0;
    if (!complete) {
        n = status_answer(b, req.status, false, req.minor, head_only);
    } else if (req.method == http::Method::other) {
        const std::string_view allow[] = {"Allow: GET, HEAD\r\n"};
        n = status_answer(b, 405, keep_alive, req.minor, false, allow);
    } else if (!c.srv.inline_path.empty() && req.target == c.srv.inline_path) {
        n = inline_answer(c.srv, req, keep_alive, b);
    } else {
        long len = http::decode_path(req.target, b.path, sizeof b.path);
        int status = len == http::path_too_long ? 414 : 400;
        std::uint64_t size = 0;
        if (len >= 0) // (not in a ?: GCC 12 mistranslates co_await there)
            status = co_await open_file(c.srv, b.path, file, size);
        if (status == 301 && names_folder(req.target)) // "dir/": its index.html is a folder
            status = 404;
        if (status == 301)
            n = redirect_answer(b, req.target, keep_alive, req.minor, head_only);
        else if (status != 200)
            n = status_answer(b, status, keep_alive, req.minor, head_only);
        else
            n = file_head(b, req, size, keep_alive, body);
    }
    if (body.length > 0 && body.length <= small_file) { // read into the answer, after its head
        auto r = co_await file.read_exact_at(std::span<std::byte>(reinterpret_cast<std::byte*>(b.out + n), body.length),
                                             body.offset);
        if (r) {
            n += body.length;
        } else { // the file shrank or could not be read: nothing sent yet, so a clean 500
            n = status_answer(b, 500, false, req.minor, false);
            ok = false;
        }
        body = {};
    } else if (body.length > 0 && c.srv.splice) {
        bool piped = co_await make_pipe(c.pipe);
        if (!piped) {
            n = status_answer(b, 503, keep_alive, req.minor, false);
            body = {};
        }
    }
    // MSG_MORE before a large body: the head waits for the body's first bytes and leaves with
    // them, as nginx's tcp_nopush does, instead of in a packet of its own that the client
    // wakes up for alone. Each send that moves bytes is progress for the watchdog.
    const int more = body.length > 0 ? MSG_MORE : 0;
    for (std::size_t sent = 0; sent < n;) {
        auto w = co_await c.s.write(b.out + sent, n - sent, more);
        if (!w || *w == 0)
            co_return false;
        sent += *w;
        c.dog.feed();
    }
    if (body.length == 0)
        co_return ok;
    if (c.srv.splice) // (two statements: GCC 12 mistranslates co_await inside ?:)
        co_return co_await splice_body(c, file, body);
    co_return co_await sendfile_body(c, file, body);
}

// After the last answer on a connection that may still have unread bytes (a request with a
// body, a malformed one, a stop): ends the sending side and reads what comes for a moment,
// so that closing with unread bytes does not reset the connection before the client has read
// the answer (TCP resets a connection closed with data unread).
ringo::Task<void> linger(ringo::net::TcpStream& s, Buffers& b) {
    (void)co_await s.shutdown(SHUT_WR);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    for (std::size_t total = 0; total < (1u << 20);) {
        auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds(0))
            break;
        auto r = co_await ringo::with_timeout(s.read(b.in, sizeof b.in), left);
        if (!r || !*r || **r == 0) // timed out, failed, or the client closed
            break;
        total += **r;
    }
}

// Reads requests and answers them until the client closes, an answer fails, or the
// connection's watchdog cancels the task (no progress for --idle-timeout).
ringo::Task<void> session(Conn& c) {
    std::size_t have = 0; // request bytes received and not answered yet
    bool unread = false;  // bytes may be left unread when the connection closes
    for (;;) {
        if (have == 0) {
            // Nothing under way: the buffers go back, and the wait for the next request holds
            // none (a poll; the buffers are taken once its first bytes have come).
            c.buf.release();
            int ready = co_await ringo::op::poll_add(c.s.fd().get(), POLLIN);
            if (ready < 0) // cancelled: the watchdog, or a stop's grace
                break;
        }
        Buffers& b = c.buf.get();
        http::Request req;
        http::Parse p = http::parse_request({b.in, have}, sizeof b.in, req);
        if (p == http::Parse::incomplete) {
            auto n = co_await c.s.read(b.in + have, sizeof b.in - have);
            if (!n || *n == 0) // the client closed (or reset), or a stop ended the reading
                break;
            have += *n;
            continue;
        }
        // A whole request head is progress; its bytes one by one are not, so a head sent a
        // byte at a time (slowloris) still has --idle-timeout to arrive.
        c.dog.feed();
        c.srv.requests.fetch_add(1, std::memory_order_relaxed);
        const bool complete = p == http::Parse::complete;
        // A request body is not read (no method here takes one): the connection closes after
        // the answer instead, as after a stop.
        const bool keep_alive = complete && req.keep_alive && req.content_length == 0 && !c.srv.connections.stopping();
        bool ok = co_await answer(c, req, complete, keep_alive);
        if (!ok)
            break;
        if (!keep_alive) {
            unread = !complete || req.content_length > 0 || have > req.head_size;
            break;
        }
        std::memmove(b.in, b.in + req.head_size, have - req.head_size);
        have -= req.head_size;
    }
    if (unread)
        co_await linger(c.s, c.buf.get());
}

ringo::Task<void> serve(ringo::net::TcpStream s, Server& srv) {
    Connections::Entry entry{s.fd().get()};
    struct Unregister {
        Connections& c;
        Connections::Entry& e;
        ~Unregister() { c.remove(e); }
    } unregister{srv.connections, entry};
    if (!srv.connections.add(entry))
        co_return;
    (void)s.set_nodelay(true); // answers go out whole, no waiting for more
    Conn c{s, srv, ringo::Watchdog(srv.idle), {}, {}};
    (void)co_await c.dog.guard(session(c)); // timed out or not, the connection closes
}

struct Options {
    const char* root = nullptr;
    std::string_view inline_answer; // PATH:TEXT
    std::uint16_t port = 8080;
    std::size_t threads = 1;
    std::chrono::milliseconds grace{2000};
    std::chrono::seconds idle{60};
    std::string_view body = "sendfile"; // or "splice"
};

constexpr const char* usage_text =
    "usage: http_file_server --root DIR [options]\n"
    "  --root DIR              the folder to serve (required)\n"
    "  --port P                the TCP port, 0 for any free one (8080)\n"
    "  --threads N             runtimes, 1 to 256; more than 1: a RuntimePool, one listener each (1)\n"
    "  --idle-timeout S        close a connection that makes no progress for S seconds, 1 to 86400:\n"
    "                          no whole request head, or no byte of the answer taken (60)\n"
    "  --grace-ms MS           after Ctrl-C, how long open connections may take to finish,\n"
    "                          0 to 86400000 (2000)\n"
    "  --inline /PATH:TEXT     answer /PATH with TEXT (up to 16 KiB) from memory\n"
    "  --body sendfile|splice  how files over 16 KiB are sent (sendfile)\n"
    "  --help                  this text\n";

Options parse_options(int argc, char** argv) {
    args::Parser p("http_file_server", usage_text, argc, argv);
    Options o;
    while (std::optional<std::string_view> a = p.next()) {
        if (*a == "--root")
            o.root = p.value(*a).data(); // argv's own string: NUL-terminated
        else if (*a == "--inline")
            o.inline_answer = p.value(*a);
        else if (*a == "--body")
            o.body = p.value(*a);
        else if (*a == "--port")
            o.port = static_cast<std::uint16_t>(p.number(*a, 0, 65535));
        else if (*a == "--threads")
            o.threads = p.number(*a, 1, 256);
        else if (*a == "--grace-ms")
            o.grace = std::chrono::milliseconds(p.number(*a, 0, 86'400'000));
        else if (*a == "--idle-timeout")
            o.idle = std::chrono::seconds(p.number(*a, 1, 86'400));
        else
            p.unknown(*a);
    }
    if (!o.root)
        p.fail("--root is required");
    if (o.body != "sendfile" && o.body != "splice")
        p.fail("--body takes sendfile or splice, not '" + std::string(o.body) + "'");
    std::size_t colon = o.inline_answer.find(':');
    if (!o.inline_answer.empty() && (colon == std::string_view::npos || o.inline_answer.front() != '/' ||
                                     o.inline_answer.size() - colon - 1 > small_file))
        p.fail("--inline takes /PATH:TEXT (TEXT up to 16 KiB)");
    return o;
}

// net::accept_loop, each connection a task of `scope`; yields -errno when the listening
// socket fails (out of descriptors it waits and goes on; cancelled, it yields 0).
ringo::Task<int> accept_into(ringo::net::TcpListener& l, ringo::TaskScope& scope, Server& srv) {
    auto serve_one = [&scope, &srv](ringo::net::TcpStream s) { scope.spawn(serve(std::move(s), srv)); };
    std::error_code e = co_await ringo::net::accept_loop(l, serve_one);
    co_return -e.value();
}

// One runtime: a TcpListener's accept loop, a scope of connection tasks.
ringo::Task<int> serve_one_runtime(Server& srv, const Options& o) {
    ringo::SignalSet stop{SIGINT, SIGTERM};
    auto listener = co_await ringo::net::TcpListener::bind(ringo::net::SocketAddr::v4_any(o.port));
    if (!listener) {
        std::fprintf(stderr, "http_file_server: port %u: %s\n", o.port, listener.error().message().c_str());
        co_return 1;
    }
    std::printf("listening on port %u\n", listener->local_addr()->port());
    std::fflush(stdout);

    ringo::TaskScope connections;
    auto [which, v] = co_await ringo::when_any(accept_into(*listener, connections, srv), stop.next());
    if (which == 0 || v < 0) {
        std::fprintf(stderr, "http_file_server: %s: %s\n", which == 0 ? "accept" : "signals", std::strerror(-v));
        co_return 1;
    }
    (void)co_await listener->close(); // new connections are refused from here on
    srv.connections.stop();
    bool drained = static_cast<bool>(co_await ringo::with_timeout(connections.join(), o.grace));
    std::printf("stopped: %llu requests, %s\n", static_cast<unsigned long long>(srv.requests.load()),
                drained ? "every connection finished" : "connections still open were cancelled");
    co_return 0;
}

// A pool: one listening socket per runtime (SO_REUSEPORT), the main thread waits for Ctrl-C.
int serve_pool(Server& srv, const Options& o) {
    ringo::block_signals({SIGINT, SIGTERM}); // before the pool's threads start: they inherit it
    // The main thread's ring and signalfd before the first connection: clients that take
    // every descriptor (EMFILE) as soon as the listener is up must not leave it unable to wait
    // for Ctrl-C (it exited with "Too many open files" when these were opened after).
    ringo::Runtime main_rt;
    ringo::Task<int> stop = ringo::wait_signal({SIGINT, SIGTERM}); // the signalfd is opened here
    ringo::RuntimePool pool{o.threads, ringo::PoolOptions{}.pin_threads()};
    std::optional<ringo::net::ShardedListener> listener;
    try {
        listener.emplace(pool, ringo::net::SocketAddr::v4_any(o.port),
                         [&srv](ringo::net::TcpStream s) { return serve(std::move(s), srv); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "http_file_server: port %u: %s\n", o.port, e.what());
        return 1;
    }
    std::printf("listening on port %u\n", listener->port());
    std::fflush(stdout);
    int sig = main_rt.block_on(std::move(stop));
    if (sig < 0) {
        std::fprintf(stderr, "http_file_server: signals: %s\n", std::strerror(-sig));
        return 1;
    }
    listener->stop(); // new connections are refused from here on
    srv.connections.stop();
    bool drained = pool.shutdown_for(o.grace);
    std::printf("stopped: %llu requests, %s\n", static_cast<unsigned long long>(srv.requests.load()),
                drained ? "every connection finished" : "connections still open were cancelled");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o = parse_options(argc, argv);
    // A runtime or pool that cannot be set up (io_uring and epoll both refused, descriptors,
    // threads, memory) throws: "http_file_server: <what>", status 1.
    return args::report_setup_errors("http_file_server", [&] {
        Server srv;
        srv.splice = o.body == "splice";
        if (!o.inline_answer.empty()) {
            std::size_t colon = o.inline_answer.find(':');
            srv.inline_path = o.inline_answer.substr(0, colon);
            srv.inline_body = o.inline_answer.substr(colon + 1);
        }
        srv.root = ringo::Fd(::open(o.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!srv.root) {
            std::fprintf(stderr, "http_file_server: %s: %s\n", o.root, std::strerror(errno));
            return 1;
        }
        ::signal(SIGPIPE, SIG_IGN); // sendfile or splice into a socket the client closed: EPIPE, not a signal
        srv.idle = o.idle;
        return o.threads == 1 ? ringo::block_on(serve_one_runtime(srv, o)) : serve_pool(srv, o);
    });
}
