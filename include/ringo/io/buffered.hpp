// ringo/io/buffered.hpp - BufReader and BufWriter: a fixed buffer in front of any stream.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <ringo/core/task.hpp>
#include <ringo/io/error.hpp>
#include <ringo/io/read_to_end.hpp>
#include <ringo/io/result.hpp>

namespace ringo {

/// How a BufReader is set up: `BufReader r(stream, {.capacity = 64 * 1024, .max_line = 1024})`.
struct BufReaderOptions {
    std::size_t capacity = 8192;      ///< the buffer's size in bytes (allocated once, when the reader is made)
    std::size_t max_line = 64 * 1024; ///< read_until/read_line: the most bytes a line may have before its delimiter
};

/// How a BufWriter is set up.
struct BufWriterOptions {
    std::size_t capacity = 8192; ///< the buffer's size in bytes (allocated once, when the writer is made)
};

namespace detail {

/// The awaitable of a buffered call. When awaited, `fast()` first tries to finish the call
/// from the buffer alone (a std::optional<T> holding the result: no frame, no operation);
/// when it cannot, `slow()` makes the Task that does the whole call, and the await runs it
/// (one frame from the frame pool). Nothing happens before the await.
template <class T, class Fast, class Slow>
class [[nodiscard]] Buffered {
public:
    Buffered(Fast fast, Slow slow) noexcept : fast_(std::move(fast)), slow_(std::move(slow)) {}
    bool await_ready() {
        done_ = fast_();
        if (done_)
            return true;
        task_ = slow_();
        return false;
    }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
        return typename Task<T>::Awaiter{task_.handle()}.await_suspend(h);
    }
    T await_resume() {
        if (done_)
            return std::move(*done_);
        return typename Task<T>::Awaiter{task_.handle()}.await_resume();
    }

private:
    Fast fast_;
    Slow slow_;
    std::optional<T> done_;
    Task<T> task_;
};

template <class T, class Fast, class Slow>
Buffered<T, Fast, Slow> buffered(Fast fast, Slow slow) noexcept {
    return Buffered<T, Fast, Slow>(std::move(fast), std::move(slow));
}

template <class S, class Self>
concept NotSelf = !std::is_same_v<std::remove_cvref_t<S>, Self>;

} // namespace detail

/// A read buffer in front of a stream: any `Stream` whose `read(void*, std::size_t)` is
/// awaitable and yields Result<std::size_t> (0 at the end of the stream): PipeReader,
/// net::TcpStream, another BufReader. It reads the stream in chunks of the buffer's
/// capacity and serves lines and small reads from the buffer.
///
/// `Stream` may be a reference (the reader borrows the stream) or a value (it owns it):
/// `BufReader r(stream)` borrows an lvalue, `BufReader r(std::move(stream))` takes it.
///
/// Costs: the buffer is allocated once, with the reader. A call that the buffer can answer
/// alone (a line or the bytes asked for are already in it) is done when awaited: no frame,
/// no operation, no allocation. A call that must read is a Task: one frame from the frame
/// pool, and one stream read per buffer's worth. read_until and read_line append to the
/// caller's string, which allocates only when it must grow: reuse one string, and after the
/// first lines they allocate nothing.
///
/// One call at a time (await each before the next). The stream and the strings must stay
/// valid until the await ends. In a cancelled task a call the buffer answers still succeeds;
/// one that must read yields ECANCELED (the stream's own rule).
template <class Stream>
class BufReader : public ReadsToEnd<BufReader<Stream>> {
public:
    /// A reader over `s` (a reference is borrowed, a value moved in) with a buffer of
    /// `o.capacity` bytes (at least 1).
    template <class S>
    requires detail::NotSelf<S, BufReader> && std::is_constructible_v<Stream, S&&>
    explicit BufReader(S&& s, BufReaderOptions o = {})
        : inner_(std::forward<S>(s)), cap_(o.capacity ? o.capacity : 1), max_line_(o.max_line),
          buf_(std::make_unique_for_overwrite<std::byte[]>(cap_)) {}

    /// Up to `len` bytes: what the buffer holds (no read), else one read of the stream (into
    /// the buffer; straight into `dst` when `len` is at least the capacity). 0 at the end of
    /// the stream. Yields Result<std::size_t>.
    auto read(void* dst, std::size_t len) {
        return detail::buffered<Result<std::size_t>>(
            [this, dst, len]() -> std::optional<Result<std::size_t>> {
                if (pos_ == end_ && len > 0)
                    return std::nullopt;
                return Result<std::size_t>(take(dst, len));
            },
            [this, dst, len] { return read_slow(static_cast<std::byte*>(dst), len); });
    }
    /// read() into `buf`.
    auto read(std::span<std::byte> buf) { return read(buf.data(), buf.size()); }

    /// Fills `dst`: from the buffer, then from the stream (reads of at least the capacity go
    /// straight into `dst`). The end of the stream first is IoError::unexpected_eof (what
    /// came is in `dst`). Yields Result<void>.
    auto read_exact(void* dst, std::size_t len) {
        return detail::buffered<Result<void>>(
            [this, dst, len]() -> std::optional<Result<void>> {
                if (end_ - pos_ < len)
                    return std::nullopt;
                take(dst, len);
                return Result<void>{};
            },
            [this, dst, len] { return read_exact_slow(static_cast<std::byte*>(dst), len); });
    }
    /// read_exact() into `buf`.
    auto read_exact(std::span<std::byte> buf) { return read_exact(buf.data(), buf.size()); }

    /// Appends the bytes up to and including the next `delim` to `out` and yields
    /// Result<std::size_t>: how many it appended; fewer with no `delim` at the end when the
    /// stream ended first; 0 at the end of the stream. A line with more than max_line bytes
    /// before its delimiter is IoError::line_too_long: `out` then has max_line bytes of it
    /// appended, and the rest of the line is what the next call reads.
    auto read_until(char delim, std::string& out) {
        return detail::buffered<Result<std::size_t>>(
            [this, delim, &out]() -> std::optional<Result<std::size_t>> {
                std::size_t n = line_in_buffer(delim);
                if (n == 0)
                    return std::nullopt;
                out.append(reinterpret_cast<const char*>(buf_.get() + pos_), n);
                pos_ += n;
                return Result<std::size_t>(n);
            },
            [this, delim, &out] { return scan<false>(delim, out); });
    }

    /// The next line into `line` (replacing what it held), without its terminator: "\n" and
    /// "\r\n" both end a line. Yields Result<bool>: true for a line (an empty one too; the
    /// last line of the stream may lack its "\n"), false at the end of the stream (`line`
    /// empty). A line longer than max_line is IoError::line_too_long, as for read_until.
    auto read_line(std::string& line) {
        return detail::buffered<Result<bool>>(
            [this, &line]() -> std::optional<Result<bool>> {
                std::size_t n = line_in_buffer('\n');
                if (n == 0)
                    return std::nullopt;
                line.assign(reinterpret_cast<const char*>(buf_.get() + pos_), n);
                pos_ += n;
                strip_terminator(line);
                return Result<bool>(true);
            },
            [this, &line] { return scan<true>('\n', line); });
    }

    /// The bytes buffered and not yet read.
    [[nodiscard]] std::span<const std::byte> buffered() const noexcept { return {buf_.get() + pos_, end_ - pos_}; }
    /// Drops `n` of the buffered bytes (at most all of them), as if read.
    void consume(std::size_t n) noexcept { pos_ += n < end_ - pos_ ? n : end_ - pos_; }
    /// The buffer's size in bytes (BufReaderOptions::capacity).
    [[nodiscard]] std::size_t capacity() const noexcept { return cap_; }
    /// The longest line read_line and read_until accept (BufReaderOptions::max_line).
    [[nodiscard]] std::size_t max_line() const noexcept { return max_line_; }
    /// The stream underneath (reading it directly skips what is buffered).
    std::remove_reference_t<Stream>& get() noexcept { return inner_; }

private:
    // Copies up to `len` buffered bytes to `dst`: how many.
    std::size_t take(void* dst, std::size_t len) noexcept {
        std::size_t n = len < end_ - pos_ ? len : end_ - pos_;
        if (n > 0)
            std::memcpy(dst, buf_.get() + pos_, n);
        pos_ += n;
        return n;
    }
    // The length of the line (with its delimiter) that starts at pos_ when it ends inside the
    // buffer and is within the limit; 0 otherwise.
    std::size_t line_in_buffer(char delim) const noexcept {
        const std::byte* b = buf_.get() + pos_;
        const void* hit = std::memchr(b, static_cast<unsigned char>(delim), end_ - pos_);
        if (!hit)
            return 0;
        std::size_t content = static_cast<std::size_t>(static_cast<const std::byte*>(hit) - b);
        return content <= max_line_ ? content + 1 : 0;
    }
    static void strip_terminator(std::string& line) noexcept {
        line.pop_back(); // the '\n'
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
    }

    Task<Result<std::size_t>> read_slow(std::byte* dst, std::size_t len) {
        if (pos_ == end_ && len >= cap_) { // nothing buffered, a large read: straight through
            Result<std::size_t> r = co_await inner_.read(dst, len);
            co_return r;
        }
        if (pos_ == end_) {
            pos_ = end_ = 0;
            Result<std::size_t> r = co_await inner_.read(buf_.get(), cap_);
            if (!r)
                co_return r;
            end_ = *r;
        }
        co_return take(dst, len);
    }

    Task<Result<void>> read_exact_slow(std::byte* dst, std::size_t len) {
        std::size_t done = take(dst, len);
        while (done < len) {
            std::size_t want = len - done;
            if (want >= cap_) { // straight into dst
                Result<std::size_t> r = co_await inner_.read(dst + done, want);
                if (!r)
                    co_return r.failure();
                if (*r == 0)
                    co_return make_error_code(IoError::unexpected_eof);
                done += *r;
            } else {
                pos_ = end_ = 0;
                Result<std::size_t> r = co_await inner_.read(buf_.get(), cap_);
                if (!r)
                    co_return r.failure();
                if (*r == 0)
                    co_return make_error_code(IoError::unexpected_eof);
                end_ = *r;
                done += take(dst + done, want);
            }
        }
        co_return Result<void>{};
    }

    // read_until (Line = false: append, yield the count) and read_line (Line = true: replace,
    // strip the terminator, yield whether there was a line).
    template <bool Line>
    Task<std::conditional_t<Line, Result<bool>, Result<std::size_t>>> scan(char delim, std::string& out) {
        if constexpr (Line)
            out.clear();
        std::size_t appended = 0;
        bool found = false;
        while (!found) {
            if (pos_ == end_) {
                pos_ = end_ = 0;
                Result<std::size_t> r = co_await inner_.read(buf_.get(), cap_);
                if (!r)
                    co_return r.failure();
                if (*r == 0)
                    break; // the end of the stream
                end_ = *r;
            }
            const std::byte* b = buf_.get() + pos_;
            std::size_t avail = end_ - pos_;
            const void* hit = std::memchr(b, static_cast<unsigned char>(delim), avail);
            std::size_t content = hit ? static_cast<std::size_t>(static_cast<const std::byte*>(hit) - b) : avail;
            if (content > max_line_ - appended) { // more than max_line bytes before the delimiter
                std::size_t room = max_line_ - appended;
                out.append(reinterpret_cast<const char*>(b), room);
                pos_ += room;
                co_return make_error_code(IoError::line_too_long);
            }
            found = hit != nullptr;
            std::size_t n = found ? content + 1 : avail;
            out.append(reinterpret_cast<const char*>(b), n);
            pos_ += n;
            appended += n;
        }
        if constexpr (Line) {
            if (found)
                strip_terminator(out);
            co_return appended > 0;
        } else {
            co_return appended;
        }
    }

    Stream inner_;
    std::size_t cap_;
    std::size_t max_line_;
    std::unique_ptr<std::byte[]> buf_;
    std::size_t pos_ = 0; // the next byte to hand out
    std::size_t end_ = 0; // the end of what the buffer holds
};

template <class S>
BufReader(S&&) -> BufReader<S>;
template <class S>
BufReader(S&&, BufReaderOptions) -> BufReader<S>;

/// A write buffer in front of a stream: any `Stream` whose `write(const void*, std::size_t)`
/// is awaitable and yields Result<std::size_t>: PipeWriter, net::TcpStream. Small writes are
/// copied into the buffer and reach the stream together, when the buffer is full or at
/// flush(); a write of at least the capacity goes straight to the stream (after what is
/// buffered, so the order is kept).
///
/// flush() before the writer goes: its destructor cannot wait, so bytes still buffered then
/// are dropped (never written). `Stream` may be a reference (borrowed) or a value (owned),
/// as for BufReader.
///
/// Costs: the buffer is allocated once, with the writer. A write that fits in the buffer is
/// a copy when awaited: no frame, no operation. One that does not is a Task (one frame from
/// the frame pool): the buffer is written out, then the new bytes buffered or written.
/// One call at a time (await each before the next); the bytes must stay valid until the
/// await ends. In a cancelled task a write that fits still succeeds; one that must write
/// yields ECANCELED and keeps what is buffered.
template <class Stream>
class BufWriter {
public:
    /// A writer over `s` (a reference is borrowed, a value moved in) with a buffer of
    /// `o.capacity` bytes (at least 1).
    template <class S>
    requires detail::NotSelf<S, BufWriter> && std::is_constructible_v<Stream, S&&>
    explicit BufWriter(S&& s, BufWriterOptions o = {})
        : inner_(std::forward<S>(s)), cap_(o.capacity ? o.capacity : 1),
          buf_(std::make_unique_for_overwrite<std::byte[]>(cap_)) {}

    /// Takes up to `len` bytes: all of them into the buffer when they fit; else the buffer is
    /// written out first, and then they are buffered (shorter than the capacity) or given to
    /// one write of the stream (the count it took, maybe short). Yields Result<std::size_t>.
    auto write(const void* src, std::size_t len) {
        return detail::buffered<Result<std::size_t>>(
            [this, src, len]() -> std::optional<Result<std::size_t>> {
                if (!fits(len))
                    return std::nullopt;
                put(src, len);
                return Result<std::size_t>(len);
            },
            [this, src, len] { return spill<Result<std::size_t>>(static_cast<const std::byte*>(src), len); });
    }
    /// write() of the string's bytes (no terminating NUL).
    auto write(std::string_view s) { return write(s.data(), s.size()); }

    /// Takes all of `len` bytes: into the buffer when they fit; else the buffer is written
    /// out, then they are buffered (shorter than the capacity) or written in full. A write
    /// that moves nothing is IoError::write_zero. Yields Result<void>.
    auto write_all(const void* src, std::size_t len) {
        return detail::buffered<Result<void>>(
            [this, src, len]() -> std::optional<Result<void>> {
                if (!fits(len))
                    return std::nullopt;
                put(src, len);
                return Result<void>{};
            },
            [this, src, len] { return spill<Result<void>>(static_cast<const std::byte*>(src), len); });
    }
    /// write_all() of `buf`'s bytes.
    auto write_all(std::span<const std::byte> buf) { return write_all(buf.data(), buf.size()); }
    /// The string must stay valid until the await ends (a temporary inside the co_await
    /// statement does).
    auto write_all(std::string_view s) { return write_all(s.data(), s.size()); }

    /// Writes out everything buffered (nothing to do when it is empty: no frame, no
    /// operation). On an error the bytes not yet written stay buffered, in order.
    /// Yields Result<void>.
    auto flush() {
        return detail::buffered<Result<void>>(
            [this]() -> std::optional<Result<void>> {
                if (used_ > 0)
                    return std::nullopt;
                return Result<void>{};
            },
            [this] { return spill<Result<void>>(nullptr, 0); });
    }

    /// How many bytes wait in the buffer.
    [[nodiscard]] std::size_t buffered() const noexcept { return used_; }
    /// The buffer's size in bytes (BufWriterOptions::capacity).
    [[nodiscard]] std::size_t capacity() const noexcept { return cap_; }
    /// The stream underneath (writing it directly passes what is buffered: flush first).
    std::remove_reference_t<Stream>& get() noexcept { return inner_; }

private:
    bool fits(std::size_t len) const noexcept { return len < cap_ && len <= cap_ - used_; }
    void put(const void* src, std::size_t len) noexcept {
        if (len > 0)
            std::memcpy(buf_.get() + used_, src, len);
        used_ += len;
    }

    // Writes out the buffer, then takes `p`: into the buffer when shorter than the capacity,
    // else straight to the stream (R = Result<void>: all of it; Result<std::size_t>: one
    // write, its count).
    template <class R>
    Task<R> spill(const std::byte* p, std::size_t len) {
        constexpr bool all = std::is_same_v<R, Result<void>>;
        bool direct = len >= cap_;
        const std::byte* part[2] = {buf_.get(), p};
        std::size_t size[2] = {used_, direct ? len : 0};
        for (int i = 0; i < 2; ++i) {
            std::size_t done = 0;
            while (done < size[i]) {
                Result<std::size_t> r = co_await inner_.write(part[i] + done, size[i] - done);
                if (!r || *r == 0) {
                    if (i == 0) { // keep what the stream did not take, in order
                        std::memmove(buf_.get(), buf_.get() + done, used_ - done);
                        used_ -= done;
                    }
                    if (!r)
                        co_return r.failure();
                    co_return make_error_code(IoError::write_zero);
                }
                done += *r;
                if constexpr (!all) {
                    if (i == 1)
                        co_return done; // write(): one write straight through
                }
            }
            if (i == 0)
                used_ = 0;
        }
        if (!direct)
            put(p, len);
        if constexpr (all)
            co_return Result<void>{};
        else
            co_return len;
    }

    Stream inner_;
    std::size_t cap_;
    std::unique_ptr<std::byte[]> buf_;
    std::size_t used_ = 0;
};

template <class S>
BufWriter(S&&) -> BufWriter<S>;
template <class S>
BufWriter(S&&, BufWriterOptions) -> BufWriter<S>;

} // namespace ringo
