// ringo/fs/metadata.hpp - Metadata (what statx reports about a file) and PathRef (how ringo::fs
// takes a path).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <concepts>
#include <cstdint>
#include <string>

#include <ringo/core/detail/chrono.hpp>

namespace ringo::fs {

/// A path as ringo::fs takes it: a NUL-terminated string that is not copied. Made from a
/// `const char*`, a `std::string` or a `std::filesystem::path`. The string must stay valid
/// until the await of the call that took it ends (as for op::openat): a temporary in the
/// co_await expression itself lives that long (`co_await fs::remove(dir + "/x")` is fine);
/// a Task kept to be awaited later must not take one.
class PathRef {
public:
    /// A C string (implicit on purpose, as for the other two).
    PathRef(const char* p) noexcept : p_(p) {} // NOLINT: implicit on purpose
    /// The string's c_str().
    PathRef(const std::string& s) noexcept : p_(s.c_str()) {} // NOLINT
    /// The path's c_str(): a `std::filesystem::path` (whose c_str() is a `const char*` on
    /// Linux), or any other type with such a c_str(). (A template, so that this header does
    /// not need `<filesystem>`: a caller holding a path has included it.)
    template <class P>
    requires requires(const P& p) {
        { p.c_str() } -> std::same_as<const char*>;
    }
    PathRef(const P& p) noexcept : p_(p.c_str()) {} // NOLINT
    /// The NUL-terminated path.
    [[nodiscard]] const char* c_str() const noexcept { return p_; }

private:
    const char* p_;
};

/// What statx(2) reports about a file (STATX_BASIC_STATS).
struct Metadata {
    std::uint64_t size = 0;                        ///< bytes
    std::uint32_t mode = 0;                        ///< st_mode: the file type (S_IFMT bits) and the permission bits
    std::uint32_t blksize = 0;                     ///< the preferred I/O size of the file system
    std::uint64_t blocks = 0;                      ///< 512-byte blocks allocated
    std::uint32_t nlink = 0;                       ///< hard links to the file
    std::uint32_t uid = 0;                         ///< the owner's user id
    std::uint32_t gid = 0;                         ///< the owner's group id
    std::uint64_t ino = 0;                         ///< the inode number: with `dev`, names the file
    std::uint64_t dev = 0;                         ///< the device the file is on (makedev(major, minor))
    std::chrono::system_clock::time_point mtime{}; ///< the last modification of the data
    std::chrono::system_clock::time_point atime{}; ///< the last access
    std::chrono::system_clock::time_point ctime{}; ///< the last change of the inode (status)

    /// True for a regular file.
    [[nodiscard]] bool is_file() const noexcept { return S_ISREG(mode); }
    /// True for a directory.
    [[nodiscard]] bool is_dir() const noexcept { return S_ISDIR(mode); }
    /// True for a symbolic link (seen only when the call did not follow it).
    [[nodiscard]] bool is_symlink() const noexcept { return S_ISLNK(mode); }
    /// The permission bits (mode & 07777).
    [[nodiscard]] std::uint32_t permissions() const noexcept { return mode & 07777u; }

    /// The fields of a statx(2) result.
    [[nodiscard]] static Metadata from_statx(const struct statx& s) noexcept {
        auto tp = [](const struct statx_timestamp& t) {
            return std::chrono::system_clock::time_point(
                std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(t.tv_sec) +
                                                                                std::chrono::nanoseconds(t.tv_nsec)));
        };
        Metadata m;
        m.size = s.stx_size;
        m.mode = s.stx_mode;
        m.blksize = s.stx_blksize;
        m.blocks = s.stx_blocks;
        m.nlink = s.stx_nlink;
        m.uid = s.stx_uid;
        m.gid = s.stx_gid;
        m.ino = s.stx_ino;
        m.dev = makedev(s.stx_dev_major, s.stx_dev_minor);
        m.mtime = tp(s.stx_mtime);
        m.atime = tp(s.stx_atime);
        m.ctime = tp(s.stx_ctime);
        return m;
    }
};

} // namespace ringo::fs
