// ringo/fs/detail/awaitables.hpp - the awaitables ringo::fs returns where one operation does
// the job: the operation itself, with its int result turned into a Result.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <ringo/fs/metadata.hpp>
#include <ringo/io/detail/result_op.hpp>
#include <ringo/io/result.hpp>
#include <ringo/op/path.hpp>

namespace ringo::fs::detail {

using ringo::detail::ResultOp; // an operation awaited as it is, yielding Result<T>

/// The note of a statx that failed: "stat PATH", or "stat" for an open file's (path "").
inline ringo::detail::ErrorNote stat_note(const char* path) noexcept {
    if (path == nullptr || *path == '\0')
        return ringo::detail::ErrorNote(ringo::detail::what::stat);
    return ringo::detail::ErrorNote::made(ringo::detail::what::stat, path);
}

/// What a statx yields: the Metadata, the size, or whether the path exists.
struct YieldMetadata {
    static Result<Metadata> from(int r, const struct statx& s, const char* path) noexcept {
        if (r < 0)
            return Result<Metadata>(errno_code(r), stat_note(path));
        return Metadata::from_statx(s);
    }
};
struct YieldSize {
    static Result<std::uint64_t> from(int r, const struct statx& s, const char* path) noexcept {
        if (r < 0)
            return Result<std::uint64_t>(errno_code(r), stat_note(path));
        return std::uint64_t{s.stx_size};
    }
};
struct YieldExists {
    static Result<bool> from(int r, const struct statx&, const char* path) noexcept {
        if (r == -ENOENT || r == -ENOTDIR)
            return false;
        if (r < 0)
            return Result<bool>(errno_code(r), stat_note(path));
        return true;
    }
};

/// One IORING_OP_STATX whose struct statx lives in the awaitable (in the awaiting frame: no
/// allocation). The kernel writes into it, so it is not copied, and moved only before it is
/// awaited (as with_timeout, when_all and when_any do): the operation is pointed at the
/// struct statx in await_suspend, not before. The path is not copied: it must stay valid
/// until the await ends.
template <class Yield>
class [[nodiscard]] StatxAwait {
public:
    StatxAwait(int dfd, const char* path, int flags) noexcept
        : path_(path), op_(dfd, path, flags, STATX_BASIC_STATS, nullptr) {}
    StatxAwait(StatxAwait&&) noexcept = default;
    StatxAwait(const StatxAwait&) = delete;
    StatxAwait& operator=(const StatxAwait&) = delete;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        op_.out_ = &stx_;
        return op_.await_suspend(h);
    }
    auto await_resume() noexcept { return Yield::from(op_.await_resume(), stx_, path_); }

private:
    struct statx stx_ {};
    const char* path_;
    op::Statx op_;
};

} // namespace ringo::fs::detail
