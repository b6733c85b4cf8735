// ringo/fs/path.hpp - whole-file and file-system operations by path: read_file, write_file,
// copy, remove, rename, create_dir(s), exists, metadata.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ringo/compose/when.hpp>
#include <ringo/core/task.hpp>
#include <ringo/fs/detail/awaitables.hpp>
#include <ringo/fs/error.hpp>
#include <ringo/fs/file.hpp>
#include <ringo/fs/metadata.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/path.hpp>

namespace ringo::fs {

/// The whole file at `path` (open, statx, reads until a read returns 0, close).
inline Task<Result<std::string>> read_file(PathRef path) {
    Result<File> f = co_await File::open(path);
    if (!f)
        co_return f.failure();
    co_return co_await f->read_to_end();
}

/// Makes `path` hold exactly `data`: created (mode 0644 before the umask) or emptied, then
/// written, then closed, the close's error included.
inline Task<Result<void>> write_file(PathRef path, std::span<const std::byte> data) {
    Result<File> f = co_await File::create(path);
    if (!f)
        co_return f.failure();
    Result<void> w = co_await f->write_all_at(data, 0);
    Result<void> c = co_await f->close();
    co_return w ? c : w;
}
inline Task<Result<void>> write_file(PathRef path, std::string_view data) {
    return write_file(path, std::as_bytes(std::span<const char>(data.data(), data.size())));
}

/// Removes a file (unlink(2)): ENOENT when missing, EISDIR for a directory.
inline auto remove(PathRef path) noexcept {
    return ringo::detail::PathResultOp<op::Unlinkat, void, ringo::detail::what::remove>(AT_FDCWD, path.c_str(), 0);
}
/// Removes an empty directory (rmdir(2)): ENOTEMPTY when it is not empty, ENOTDIR for a file.
inline auto remove_dir(PathRef path) noexcept {
    return ringo::detail::PathResultOp<op::Unlinkat, void, ringo::detail::what::remove_dir>(AT_FDCWD, path.c_str(),
                                                                                            AT_REMOVEDIR);
}
/// Renames `from` to `to`, replacing `to` when it is a file (rename(2)).
inline auto rename(PathRef from, PathRef to) noexcept {
    return ringo::detail::PathResultOp<op::Renameat, void, ringo::detail::what::rename>(AT_FDCWD, from.c_str(),
                                                                                        AT_FDCWD, to.c_str(), 0u);
}
/// Creates a directory (mkdir(2); `mode` before the umask): EEXIST when the path exists,
/// ENOENT when its parent does not.
inline auto create_dir(PathRef path, mode_t mode = 0777) noexcept {
    return ringo::detail::PathResultOp<op::Mkdirat, void, ringo::detail::what::create_dir>(AT_FDCWD, path.c_str(),
                                                                                           mode);
}
/// The Metadata of what `path` names, following symbolic links.
inline auto metadata(PathRef path) noexcept {
    return detail::StatxAwait<detail::YieldMetadata>(AT_FDCWD, path.c_str(), 0);
}
/// The Metadata of `path` itself (a symbolic link is not followed).
inline auto symlink_metadata(PathRef path) noexcept {
    return detail::StatxAwait<detail::YieldMetadata>(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW);
}
/// Whether `path` names something (following symbolic links): false for ENOENT and ENOTDIR,
/// the error for anything else (EACCES on a directory on the way, ELOOP, ...).
inline auto exists(PathRef path) noexcept { return detail::StatxAwait<detail::YieldExists>(AT_FDCWD, path.c_str(), 0); }

/// Creates `path` and every missing directory above it, like `mkdir -p`: directories that
/// exist are fine (also when another task or process creates them meanwhile); a file in the
/// way is an error: EEXIST when it is `path` itself, ENOTDIR when it is above it. Copies the
/// path once (one allocation when it is longer than the string's inline capacity).
inline Task<Result<void>> create_dirs(PathRef path, mode_t mode = 0777) {
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

/// How copy() moves the bytes: `depth` chunks of `chunk` bytes in flight at once.
struct CopyOptions {
    std::size_t chunk = 128 * 1024; ///< bytes per read and write
    unsigned depth = 4;             ///< chunks in flight at once
};

namespace detail {
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
inline Task<Result<void>> copy_chunks(CopyState& st, std::byte* buf) {
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
} // namespace detail

/// Copies the contents of file `from` to `to` (created, or emptied) and gives `to` the
/// permission bits of `from` when `to` is a regular file (one fchmod(2): open's mode is
/// masked by the umask; a device such as /dev/null keeps its own): the number of bytes
/// copied. Reads and writes go `depth` chunks at a time (4 x 128 KiB by default), each branch
/// reading then writing its own chunk. Errors: those of opening either file, EISDIR when
/// `from` is a directory, EINVAL when both name the same file, the first read or write error
/// (ENOSPC on a full file system); `to` then holds what was written before. Cancelled, it
/// stops every branch, closes both files and yields ECANCELED. Allocates the branches'
/// buffers (depth x chunk bytes) and their frames.
inline Task<Result<std::uint64_t>> copy(PathRef from, PathRef to, CopyOptions o = {}) {
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
    detail::CopyState st{src->ref(), dst->ref(), o.chunk};
    std::vector<Task<Result<void>>> branches;
    branches.reserve(o.depth);
    for (unsigned i = 0; i < o.depth; ++i)
        branches.push_back(detail::copy_chunks(st, bufs.get() + std::size_t{i} * o.chunk));
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
