// libFuzzer target: BufReader (ringo/io/buffered.hpp) over an in-memory stream that hands out
// a payload in chunks of fuzzed sizes, with stream errors at fuzzed points, while a fuzzed
// schedule of read_line, read_until, read, read_exact and consume calls reads it. A model of
// the documented behaviour says what each call must give (what a call gives does not depend
// on the chunks, except how much one read() takes), and the target checks:
//   - every call yields exactly the bytes that follow in the payload: a read_until segment
//     ends with the delimiter and holds no earlier one (the last may lack it at the end of the
//     stream); read_line strips "\n" or "\r\n" only; so all they give, concatenated, is the
//     payload: nothing lost, doubled or reordered;
//   - a line with more than max_line bytes before its delimiter is IoError::line_too_long
//     with max_line bytes of it given, the rest left for the next call;
//   - a stream error comes through as that error, from the call that needed the bytes after
//     it (a read_until/read_line keeps what it had taken; read_exact too), and reading goes
//     on after it; the end of the stream is 0 / false, again and again; read_exact short of
//     it is IoError::unexpected_eof;
//   - the buffer never holds more than the capacity and always holds the payload's next
//     bytes; the stream is read only for a buffer's capacity (or a read of at least that, straight
//     into the caller's memory); a call the buffer answers reads nothing and makes no frame.
#include <ringo/io/buffered.hpp>
#include <ringo/ringo.hpp>

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

using ringo::BufReader;
using ringo::IoError;
using ringo::Result;
using ringo::Task;

namespace {

void require(bool ok, const char* what) {
    if (ok)
        return;
    std::fprintf(stderr, "buf_reader: %s\n", what);
    std::abort();
}

constexpr std::size_t npos = std::string_view::npos;

// One piece of the stream: `len` payload bytes, or (err != 0) one read failing with err.
struct Event {
    std::size_t len = 0;
    int err = 0;
};

// A stream whose read completes at once with the next bytes of its current event (at most the
// length asked for), that event's error, or 0 after the last one.
struct ChunkStream {
    std::string_view payload;
    const std::vector<Event>* events = nullptr;
    std::size_t min_read = 1; // the reader's capacity: no read of the stream asks for less
    std::size_t next = 0;     // the current event
    std::size_t taken = 0;    // bytes of it handed out
    std::size_t delivered = 0;
    std::size_t errors = 0;
    std::size_t reads = 0;
    const void* last_dst = nullptr; // where the last read wrote

    struct Ready {
        Result<std::size_t> r;
        bool await_ready() const noexcept { return true; }
        void await_suspend(std::coroutine_handle<>) const noexcept {}
        Result<std::size_t> await_resume() { return r; }
    };

    Ready read(void* dst, std::size_t len) {
        ++reads;
        last_dst = dst;
        require(len > 0 && len >= min_read, "a read of the stream for less than the capacity");
        if (next == events->size())
            return {std::size_t{0}};
        const Event& e = (*events)[next];
        if (e.err != 0) {
            ++next;
            ++errors;
            return {ringo::errno_code(e.err)};
        }
        std::size_t n = len < e.len - taken ? len : e.len - taken;
        std::memcpy(dst, payload.data() + delivered, n);
        delivered += n;
        taken += n;
        if (taken == e.len) {
            ++next;
            taken = 0;
        }
        return {n};
    }
};

struct Plan {
    std::size_t capacity_option = 8192; // as given to BufReaderOptions (0 means 1)
    std::size_t max_line = 64 * 1024;
    char delim = '\n';
    std::string_view ops;
    std::string_view payload;
    std::vector<Event> events;
    std::vector<std::size_t> error_at; // the payload offset of each error event, in order
    std::vector<int> error_code;
};

// The input: capacity, max_line, delimiter, number of chunk bytes, number of op bytes, the
// chunk bytes, the op bytes, then the payload.
Plan make_plan(std::string_view in) {
    Plan p;
    auto byte = [&](std::size_t i) -> unsigned { return i < in.size() ? static_cast<unsigned char>(in[i]) : 0u; };
    unsigned b0 = byte(0), b1 = byte(1), b2 = byte(2);
    if (in.size() >= 5) {
        p.capacity_option = b0 < 0xf0 ? b0 % 48 : 8192;
        p.max_line = b1 < 0xf0 ? b1 % 40 : 64 * 1024;
        p.delim = b2 < 0x80 ? '\n' : static_cast<char>(b2);
    }
    std::size_t nchunks = byte(3) % 16, nops = byte(4) % 24;
    std::size_t at = in.size() < 5 ? in.size() : 5;
    std::string_view chunks = in.substr(at, nchunks);
    at += chunks.size();
    p.ops = in.substr(at, nops);
    at += p.ops.size();
    p.payload = in.substr(at);

    static constexpr int codes[8] = {EIO, ECONNRESET, EAGAIN, EINTR, EPIPE, ETIMEDOUT, ENOBUFS, EBADF};
    constexpr std::size_t max_errors = 4;
    std::size_t assigned = 0, i = 0;
    auto error_of = [&](unsigned c) { return c >= 0xf8 && p.error_at.size() < max_errors ? codes[c & 7] : 0; };
    auto add_error = [&](int err) {
        p.events.push_back({0, err});
        p.error_at.push_back(assigned);
        p.error_code.push_back(err);
    };
    while (assigned < p.payload.size()) {
        std::size_t rest = p.payload.size() - assigned;
        if (chunks.empty()) { // one chunk: all of it
            p.events.push_back({rest, 0});
            assigned += rest;
            break;
        }
        unsigned c = static_cast<unsigned char>(chunks[i++ % chunks.size()]);
        if (int err = error_of(c)) {
            add_error(err);
            continue;
        }
        std::size_t len = c < 0x80 ? 1 + c % 8 : 1 + c % 128;
        len = len < rest ? len : rest;
        p.events.push_back({len, 0});
        assigned += len;
    }
    if (!chunks.empty()) // maybe an error after the last byte, before the end
        if (int err = error_of(static_cast<unsigned char>(chunks[i % chunks.size()])))
            add_error(err);
    return p;
}

// What the reader must do, from the payload alone: `pos` is where the caller is in it.
struct Model {
    const Plan& plan;
    std::size_t pos = 0;
    std::size_t errors = 0; // stream errors delivered so far

    bool error_pending_at(std::size_t at) const { return errors < plan.error_at.size() && plan.error_at[errors] == at; }
    // How far the stream gives bytes before its next error or its end.
    std::size_t limit() const { return errors < plan.error_at.size() ? plan.error_at[errors] : plan.payload.size(); }
};

enum class Outcome { found, end, too_long, error };

// read_until / read_line: the bytes the call takes from the payload and how it ends.
struct Scan {
    Outcome how;
    std::string_view bytes;
    int err = 0;
};

Scan predict_scan(Model& m, char delim) {
    std::string_view p = m.plan.payload;
    std::size_t lim = m.limit();
    std::size_t d = p.find(delim, m.pos);
    if (d >= lim)
        d = npos;
    std::size_t content = (d != npos ? d : lim) - m.pos;
    Scan s;
    if (content > m.plan.max_line) {
        s = {Outcome::too_long, p.substr(m.pos, m.plan.max_line)};
    } else if (d != npos) {
        s = {Outcome::found, p.substr(m.pos, content + 1)};
    } else if (m.error_pending_at(lim)) {
        s = {Outcome::error, p.substr(m.pos, content), m.plan.error_code[m.errors]};
        ++m.errors;
    } else {
        s = {Outcome::end, p.substr(m.pos, content)};
    }
    m.pos += s.bytes.size();
    return s;
}

// The buffer answers this line alone (within the limit): no read, no frame.
bool line_in_buffer(std::span<const std::byte> buffered, char delim, std::size_t max_line) {
    const void* hit = std::memchr(buffered.data(), static_cast<unsigned char>(delim), buffered.size());
    return hit && static_cast<std::size_t>(static_cast<const std::byte*>(hit) - buffered.data()) <= max_line;
}

struct Run {
    const Plan& plan;
    ChunkStream stream;
    Model model;
    std::string got;         // every byte the calls gave, terminators put back: must end as the payload
    std::size_t checked = 0; // how much of `got` check_state has compared with the payload
    bool at_end = false;
};

void check_state(Run& run, BufReader<ChunkStream&>& r) {
    std::span<const std::byte> b = r.buffered();
    require(b.size() <= r.capacity(), "more buffered than the capacity");
    require(run.stream.delivered == run.model.pos + b.size(), "bytes lost or doubled between stream and caller");
    require(std::memcmp(b.data(), run.plan.payload.data() + run.model.pos, b.size()) == 0,
            "the buffer does not hold the payload's next bytes");
    require(run.stream.errors == run.model.errors, "a stream error delivered at another point");
    require(run.got.size() == run.model.pos, "the calls gave other than the bytes taken");
    // What the calls gave since the last check (the earlier part was checked then).
    require(std::memcmp(run.got.data() + run.checked, run.plan.payload.data() + run.checked,
                        run.got.size() - run.checked) == 0,
            "the calls' bytes so far are not the payload's start");
    run.checked = run.got.size();
}

Task<void> read_until_step(Run& run, BufReader<ChunkStream&>& r, char delim, bool keep_prefix) {
    std::string out = keep_prefix ? "prefix" : "";
    std::size_t before = out.size();
    bool quick = line_in_buffer(r.buffered(), delim, r.max_line());
    std::size_t reads = run.stream.reads, frames = ringo::detail::t_frames_allocated;
    Scan want = predict_scan(run.model, delim);
    Result<std::size_t> n = co_await r.read_until(delim, out);
    require(out.size() >= before && out.compare(0, before, keep_prefix ? "prefix" : "") == 0,
            "read_until changed what the string held");
    std::string_view seg = std::string_view(out).substr(before);
    require(seg == want.bytes, "read_until appended other bytes than the payload's next");
    switch (want.how) {
    case Outcome::found:
        require(n.ok() && *n == seg.size(), "read_until's count");
        require(seg.back() == delim && seg.find(delim) == seg.size() - 1, "a segment not ending at its delimiter");
        break;
    case Outcome::end:
        require(n.ok() && *n == seg.size(), "read_until's count at the end");
        require(seg.find(delim) == npos, "a delimiter in the last segment");
        run.at_end = seg.empty();
        break;
    case Outcome::too_long: require(!n && n.error() == IoError::line_too_long, "a line over the limit taken"); break;
    case Outcome::error: require(!n && n.error() == ringo::errno_code(want.err), "not the stream's error"); break;
    }
    if (quick)
        require(run.stream.reads == reads && ringo::detail::t_frames_allocated == frames,
                "read_until of a buffered line read the stream or made a frame");
    require(run.stream.reads - reads <= seg.size() + 1, "more reads of the stream than bytes");
    run.got += seg;
}

Task<void> read_line_step(Run& run, BufReader<ChunkStream&>& r) {
    std::string line = "stale";
    bool quick = line_in_buffer(r.buffered(), '\n', r.max_line());
    std::size_t reads = run.stream.reads, frames = ringo::detail::t_frames_allocated;
    Scan want = predict_scan(run.model, '\n');
    Result<bool> more = co_await r.read_line(line);
    switch (want.how) {
    case Outcome::found: {
        std::string_view body = want.bytes.substr(0, want.bytes.size() - 1);
        if (!body.empty() && body.back() == '\r')
            body.remove_suffix(1);
        require(more.ok() && *more, "read_line's line not given");
        require(line == body && line.find('\n') == npos, "read_line: not the line without \"\\n\" or \"\\r\\n\"");
        break;
    }
    case Outcome::end:
        require(more.ok() && *more == !want.bytes.empty(), "read_line at the end");
        require(line == want.bytes, "read_line: not the last line as it is");
        run.at_end = want.bytes.empty();
        break;
    case Outcome::too_long:
        require(!more && more.error() == IoError::line_too_long, "a line over the limit taken");
        require(line == want.bytes, "read_line over the limit: not its first max_line bytes");
        break;
    case Outcome::error:
        require(!more && more.error() == ringo::errno_code(want.err), "not the stream's error");
        require(line == want.bytes, "read_line: what it took before the error is not in the line");
        break;
    }
    if (quick)
        require(run.stream.reads == reads && ringo::detail::t_frames_allocated == frames,
                "read_line of a buffered line read the stream or made a frame");
    require(run.stream.reads - reads <= want.bytes.size() + 1, "more reads of the stream than bytes");
    run.got += want.bytes;
}

Task<void> read_step(Run& run, BufReader<ChunkStream&>& r, std::size_t len) {
    Model& m = run.model;
    std::size_t buffered = r.buffered().size();
    std::size_t reads = run.stream.reads, frames = ringo::detail::t_frames_allocated;
    bool error = buffered == 0 && len > 0 && m.error_pending_at(m.pos);
    auto dst = std::make_unique<char[]>(len); // exactly len bytes: ASan sees a write past them
    Result<std::size_t> n = co_await r.read(dst.get(), len);
    if (error) {
        require(!n && n.error() == ringo::errno_code(m.plan.error_code[m.errors]), "read: not the stream's error");
        ++m.errors;
        co_return;
    }
    require(n.ok() && *n <= len, "read: an error or more than asked");
    std::string_view p = m.plan.payload;
    require(std::memcmp(dst.get(), p.data() + m.pos, *n) == 0, "read: not the payload's next bytes");
    if (len == 0 || buffered > 0) {
        require(*n == (len < buffered ? len : buffered), "read: not what the buffer held");
        require(run.stream.reads == reads && ringo::detail::t_frames_allocated == frames,
                "read answered by the buffer read the stream or made a frame");
    } else {
        require((*n == 0) == (m.pos == p.size()), "read: 0 before the end, or bytes after it");
        require(run.stream.reads == reads + 1, "read: not one read of the stream");
        require((run.stream.last_dst == dst.get()) == (len >= r.capacity()),
                "read: a read of at least the capacity not straight into the caller's memory, or a smaller one");
        if (*n == 0)
            run.at_end = true;
    }
    run.got.append(dst.get(), *n);
    m.pos += *n;
}

Task<void> read_exact_step(Run& run, BufReader<ChunkStream&>& r, std::size_t len) {
    Model& m = run.model;
    std::size_t buffered = r.buffered().size();
    std::size_t reads = run.stream.reads, frames = ringo::detail::t_frames_allocated;
    std::size_t lim = m.limit();
    auto dst = std::make_unique<char[]>(len);
    Result<void> ok = co_await r.read_exact(dst.get(), len);
    std::size_t take = len;
    if (lim - m.pos >= len) {
        require(ok.ok(), "read_exact failed with the bytes there");
    } else {
        take = lim - m.pos;
        if (m.error_pending_at(lim)) {
            require(!ok && ok.error() == ringo::errno_code(m.plan.error_code[m.errors]), "read_exact: not the error");
            ++m.errors;
        } else {
            require(!ok && ok.error() == IoError::unexpected_eof, "read_exact: not unexpected_eof at the end");
        }
    }
    require(std::memcmp(dst.get(), m.plan.payload.data() + m.pos, take) == 0, "read_exact: not the payload's bytes");
    if (buffered >= len)
        require(run.stream.reads == reads && ringo::detail::t_frames_allocated == frames,
                "read_exact answered by the buffer read the stream or made a frame");
    run.got.append(dst.get(), take);
    m.pos += take;
}

Task<void> drive(const Plan& plan) {
    Run run{plan, ChunkStream{}, Model{plan}, {}, 0, false};
    run.stream.payload = plan.payload;
    run.stream.events = &plan.events;
    std::size_t cap = plan.capacity_option ? plan.capacity_option : 1;
    run.stream.min_read = cap;
    BufReader<ChunkStream&> r(run.stream, {.capacity = plan.capacity_option, .max_line = plan.max_line});
    require(r.capacity() == cap && r.max_line() == plan.max_line, "capacity() or max_line()");
    require(&r.get() == &run.stream, "get() is not the stream");

    // The scheduled calls (a bounded number, to keep each input quick), then plain reads.
    std::size_t steps = 2 * plan.payload.size() + 16 < 256 ? 2 * plan.payload.size() + 16 : 256;
    for (std::size_t k = 0; k < steps && !run.at_end; ++k) {
        unsigned o = plan.ops.empty() ? 0 : static_cast<unsigned char>(plan.ops[k % plan.ops.size()]);
        unsigned arg = o / 5; // 0 to 51
        switch (o % 5) {
        case 0: co_await read_line_step(run, r); break;
        case 1: co_await read_until_step(run, r, arg & 2 ? '\n' : plan.delim, arg & 1); break;
        case 2: co_await read_step(run, r, arg); break;
        case 3: co_await read_exact_step(run, r, arg % 24); break;
        default: {
            std::size_t n = arg == 51 ? SIZE_MAX : arg % 8;
            std::size_t buffered = r.buffered().size();
            std::size_t dropped = n < buffered ? n : buffered;
            r.consume(n);
            run.got.append(plan.payload.substr(run.model.pos, dropped));
            run.model.pos += dropped;
            break;
        }
        }
        check_state(run, r);
    }
    // The rest by plain reads, then the end, which stays the end.
    for (;;) {
        run.at_end = false;
        co_await read_step(run, r, 64);
        check_state(run, r);
        if (run.at_end)
            break;
    }
    require(run.model.pos == plan.payload.size() && run.model.errors == plan.error_at.size(),
            "the end before all the payload and its errors");
    std::string line = "x";
    Result<bool> more = co_await r.read_line(line);
    require(more.ok() && !*more && line.empty(), "read_line after the end");
    std::string seg;
    Result<std::size_t> n = co_await r.read_until(plan.delim, seg);
    require(n.ok() && *n == 0 && seg.empty(), "read_until after the end");
    char byte;
    Result<void> exact = co_await r.read_exact(&byte, 1);
    require(!exact && exact.error() == IoError::unexpected_eof, "read_exact after the end");
    require(run.got == plan.payload, "the calls' bytes together are not the payload");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // One runtime for the whole run: the stream completes every read at once, so nothing
    // here waits on the kernel (and the runtime takes the epoll engine where io_uring is refused).
    static ringo::Runtime rt;
    Plan plan = make_plan(std::string_view(reinterpret_cast<const char*>(data), size));
    rt.block_on(drive(plan));
    return 0;
}
