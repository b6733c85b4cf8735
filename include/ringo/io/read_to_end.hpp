// ringo/io/read_to_end.hpp - a stream read to its end into a string or a byte vector.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <ringo/core/task.hpp>
#include <ringo/io/error.hpp>
#include <ringo/io/result.hpp>

namespace ringo {

/// Reads `stream` until its end (a read that yields 0), appending what comes to `out`, and
/// yields Result<std::size_t>: how many bytes it appended. `Stream` is anything whose
/// `read(void*, std::size_t)` is awaitable and yields Result<std::size_t>: net::TcpStream,
/// net::UnixStream, PipeReader, BufReader (its buffered bytes first). `out` is a
/// std::string, or a std::vector of std::byte, char or unsigned char; it grows by doubling
/// (4 KiB at first), and the reads go straight into its free room.
///
/// More than `limit` bytes is IoError::too_large, after `limit` bytes were appended (the
/// byte that showed there was more is read and dropped): a bound on what a peer can make
/// the program hold. An error of the stream (a reset, ECANCELED in a cancelled task) is
/// yielded as it is, with what came before it appended. One Task (a frame from the frame
/// pool); the stream and `out` must stay valid until the await ends.
template <class Stream, class Buffer>
Task<Result<std::size_t>> read_to_end(Stream& stream, Buffer& out,
                                      std::size_t limit = std::numeric_limits<std::size_t>::max()) {
    static_assert(sizeof(typename Buffer::value_type) == 1, "ringo: read_to_end appends bytes");
    const std::size_t start = out.size();
    std::size_t len = start; // the bytes `out` holds; beyond them, room to read into
    for (;;) {
        const std::size_t got = len - start;
        // Room for one byte past the limit: a read that gets it shows there was more.
        const std::size_t left = got < limit ? limit - got : 0;
        const std::size_t want_max = left < std::numeric_limits<std::size_t>::max() ? left + 1 : left;
        if (out.size() == len) {
            std::size_t grow = len < 4096 ? 4096 : len;
            if (grow > want_max)
                grow = want_max;
            out.resize(len + grow);
        }
        std::size_t room = out.size() - len;
        if (room > want_max)
            room = want_max;
        Result<std::size_t> r = co_await stream.read(reinterpret_cast<std::byte*>(out.data()) + len, room);
        if (!r) {
            out.resize(len);
            co_return r.failure();
        }
        if (*r == 0)
            break;
        len += *r;
        if (len - start > limit) {
            out.resize(start + limit);
            co_return make_error_code(IoError::too_large);
        }
    }
    out.resize(len);
    co_return len - start;
}

/// read_to_end into a std::string.
template <class Stream>
Task<Result<std::size_t>> read_to_string(Stream& stream, std::string& out,
                                         std::size_t limit = std::numeric_limits<std::size_t>::max()) {
    return read_to_end(stream, out, limit);
}

/// The read_to_end and read_to_string members of a stream type `Derived` (PipeReader,
/// net::TcpStream and net::UnixStream, BufReader): ringo::read_to_end on the stream itself.
template <class Derived>
class ReadsToEnd {
public:
    /// Reads until the end of the stream, appending to `out` (a std::string, or a std::vector
    /// of bytes): ringo::read_to_end. More than `limit` bytes is IoError::too_large. Yields
    /// Result<std::size_t>, the bytes appended.
    template <class Buffer>
    Task<Result<std::size_t>> read_to_end(Buffer& out, std::size_t limit = std::numeric_limits<std::size_t>::max()) {
        return ringo::read_to_end(static_cast<Derived&>(*this), out, limit);
    }
    /// read_to_end into a std::string.
    Task<Result<std::size_t>> read_to_string(std::string& out,
                                             std::size_t limit = std::numeric_limits<std::size_t>::max()) {
        return ringo::read_to_end(static_cast<Derived&>(*this), out, limit);
    }
};

} // namespace ringo
