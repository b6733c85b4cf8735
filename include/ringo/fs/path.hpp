// ringo/fs/path.hpp - whole-file and file-system operations by path: read_file, write_file,
// copy, remove, rename, create_dir(s), exists, metadata.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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
Task<Result<std::string>> read_file(PathRef path);

/// Makes `path` hold exactly `data`: created (mode 0644 before the umask) or emptied, then
/// written, then closed, the close's error included.
Task<Result<void>> write_file(PathRef path, std::span<const std::byte> data);
/// write_file of the bytes of a text.
Task<Result<void>> write_file(PathRef path, std::string_view data);

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
Task<Result<void>> create_dirs(PathRef path, mode_t mode = 0777);

/// How copy() moves the bytes: `depth` chunks of `chunk` bytes in flight at once.
struct CopyOptions {
    std::size_t chunk = 128 * 1024; ///< bytes per read and write
    unsigned depth = 4;             ///< chunks in flight at once
};

/// Copies the contents of file `from` to `to` (created, or emptied) and gives `to` the
/// permission bits of `from` when `to` is a regular file (one fchmod(2): open's mode is
/// masked by the umask; a device such as /dev/null keeps its own): the number of bytes
/// copied. Reads and writes go `depth` chunks at a time (4 x 128 KiB by default), each branch
/// reading then writing its own chunk. Errors: those of opening either file, EISDIR when
/// `from` is a directory, EINVAL when both name the same file, the first read or write error
/// (ENOSPC on a full file system); `to` then holds what was written before. Cancelled, it
/// stops every branch, closes both files and yields ECANCELED. Allocates the branches'
/// buffers (depth x chunk bytes) and their frames.
Task<Result<std::uint64_t>> copy(PathRef from, PathRef to, CopyOptions o = {});

} // namespace ringo::fs
