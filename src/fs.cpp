// ringo::fs's Tasks: File::read_to_end and File::close (fs/file.hpp), and the whole-file and
// file-system calls by path, read_file, write_file, create_dirs, copy (fs/path.hpp).
#include <ringo/fs/path.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <ringo/compose/when.hpp>
#include <ringo/fs/file.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/path.hpp>

namespace ringo::fs {

Task<Result<std::string>> File::read_to_end(std::uint64_t offset) {
    Result<std::uint64_t> hint = co_await size();
    std::size_t want = 0;
    if (hint && *hint > offset)
        want = static_cast<std::size_t>(*hint - offset);
    std::string s;
    s.resize(want + 1 < 4096 ? 4096 : want + 1); // one byte more: the read that ends it returns 0
    std::size_t len = 0;
    for (;;) {
        if (len == s.size())
            s.resize(s.size() * 2);
        int r = co_await op::read(ref(), s.data() + len, s.size() - len, offset + len);
        if (r < 0)
            co_return errno_code(r);
        if (r == 0)
            break;
        len += static_cast<std::size_t>(r);
    }
    s.resize(len);
    co_return s;
}

Task<Result<void>> File::close() {
    int slot = registered_slot();
    ref_ = op::FileRef(-1);
    Fd fd = std::move(fd_);
    if (slot >= 0)
        (void)co_await op::close(op::Fixed{static_cast<unsigned>(slot)});
    int r = co_await fd.close();
    co_return Result<void>::from_res(r);
}

Task<Result<std::string>> read_file(PathRef path) {
    Result<File> f = co_await File::open(path);
    if (!f)
        co_return f.failure();
    co_return co_await f->read_to_end();
}

Task<Result<void>> write_file(PathRef path, std::span<const std::byte> data) {
    Result<File> f = co_await File::create(path);
    if (!f)
        co_return f.failure();
    Result<void> w = co_await f->write_all_at(data, 0);
    Result<void> c = co_await f->close();
    co_return w ? c : w;
}
Task<Result<void>> write_file(PathRef path, std::string_view data) {
    return write_file(path, std::as_bytes(std::span<const char>(data.data(), data.size())));
}

Task<Result<void>> create_dirs(PathRef path, mode_t mode) {
    std::string p = path.c_str();
    while (p.size() > 1 && p.back() == '/')
        p.pop_back();
    if (p.empty())
        co_return errno_code(-ENOENT);
    std::size_t pos = 0;
    for (;;) {
        std::size_t slash = p.find('/', pos);
        bool last = slash == std::string::npos;
        std::size_t end = last ? p.size() : slash;
        pos = end + 1;
        if (end == 0 || p[end - 1] == '/') { // the root, or a "//"
            if (last)
                co_return Result<void>{};
            continue;
        }
        char saved = last ? '\0' : p[end];
        p[end] = '\0';
        int r = co_await op::mkdirat(AT_FDCWD, p.c_str(), mode);
        if (r == -EEXIST) {
            Result<Metadata> m = co_await metadata(p.c_str());
            if (!m)
                co_return m.failure();
            if (!m->is_dir())
                co_return errno_code(last ? -EEXIST : -ENOTDIR);
            r = 0;
        }
        p[end] = saved;
        if (r < 0)
            co_return errno_code(r);
        if (last)
            co_return Result<void>{};
    }
}

namespace {

struct CopyState {
    op::FileRef src, dst;
    std::size_t chunk;
    std::uint64_t next = 0;                   // the next chunk's offset
    std::uint64_t eof_at = ~std::uint64_t{0}; // where a read found the end of the source
    std::uint64_t copied = 0;
    bool stop = false; // a branch failed: the others take no new chunk
};

// One of copy()'s `depth` branches: takes the next chunk, fills it (reading again after short
// reads, up to the end of the source), writes all of it at the same offset, and so on until
// a read finds the end of the file or a branch fails.
Task<Result<void>> copy_chunks(CopyState& st, std::byte* buf) {
    while (!st.stop) {
        std::uint64_t off = st.next;
        if (off >= st.eof_at)
            break;
        st.next += st.chunk;
        std::size_t got = 0;
        while (got < st.chunk) {
            int r = co_await op::read(st.src, buf + got, st.chunk - got, off + got);
            if (r < 0) {
                st.stop = true;
                co_return errno_code(r);
            }
            if (r == 0) {
                st.eof_at = std::min(st.eof_at, off + got);
                break;
            }
            got += static_cast<std::size_t>(r);
        }
        for (std::size_t put = 0; put < got;) {
            int r = co_await op::write(st.dst, buf + put, got - put, off + put);
            if (r <= 0) {
                st.stop = true;
                co_return r < 0 ? errno_code(r) : make_error_code(Error::write_zero);
            }
            put += static_cast<std::size_t>(r);
        }
        st.copied += got;
        if (got < st.chunk)
            break;
    }
    co_return Result<void>{};
}

} // namespace

Task<Result<std::uint64_t>> copy(PathRef from, PathRef to, CopyOptions o) {
    if (o.chunk == 0 || o.depth == 0)
        co_return std::make_error_code(std::errc::invalid_argument);
    o.chunk = std::min(o.chunk, op::max_rw_count);
    Result<File> src = co_await File::open(from);
    if (!src)
        co_return src.failure();
    Result<Metadata> sm = co_await src->metadata();
    if (!sm)
        co_return sm.failure();
    if (sm->is_dir())
        co_return errno_code(-EISDIR);
    Result<Metadata> dm = co_await metadata(to); // not inside the if: GCC 12.2 miscompiles co_await there
    if (dm && dm->ino == sm->ino && dm->dev == sm->dev)
        co_return std::make_error_code(std::errc::invalid_argument); // the same file: O_TRUNC would empty it
    Result<File> dst = co_await File::open(to, {.write = true, .create = true, .truncate = true}, sm->permissions());
    if (!dst)
        co_return dst.failure();
    dm = co_await dst->metadata();
    if (!dm)
        co_return dm.failure();
    // Only a regular file takes the source's mode: a device or FIFO (copying to /dev/null, say)
    // keeps its own.
    if (dm->is_file() && ::fchmod(dst->get(), sm->permissions()) != 0)
        co_return errno_code(-errno);

    std::unique_ptr<std::byte[]> bufs(new std::byte[o.chunk * o.depth]);
    CopyState st{src->ref(), dst->ref(), o.chunk};
    std::vector<Task<Result<void>>> branches;
    branches.reserve(o.depth);
    for (unsigned i = 0; i < o.depth; ++i)
        branches.push_back(copy_chunks(st, bufs.get() + std::size_t{i} * o.chunk));
    std::vector<Result<void>> results = co_await when_all(std::move(branches));
    for (Result<void>& r : results)
        if (!r)
            co_return r.failure();
    Result<void> c = co_await dst->close();
    if (!c)
        co_return c.failure();
    co_return st.copied;
}

} // namespace ringo::fs
