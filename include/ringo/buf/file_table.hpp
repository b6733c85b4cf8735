// ringo/buf/file_table.hpp - a runtime's registered file table.
#pragma once

#include <cerrno>
#include <span>

#include <ringo/core/runtime.hpp>

namespace ringo::buf {

/// The registered file table of one Runtime's ring (IORING_REGISTER_FILES): operations
/// then name a file by its slot with op::Fixed{slot}, which saves the fd lookup and
/// reference counting per operation, and the *_direct operations create files straight
/// into slots. A ring has at most one table: a second FileTable on the same runtime gets
/// -EBUSY from register calls.
///
/// Every call is a synchronous io_uring_register(2) from the runtime's thread and returns
/// 0 (or a count) on success, -errno on failure. The table does not own the descriptors it
/// registers: the kernel keeps its own reference to each file, so closing an fd after
/// registering it leaves the slot usable. Destroying a FileTable unregisters the table.
/// Member functions must be called on the runtime's thread.
class FileTable {
public:
    explicit FileTable(Runtime& rt) noexcept : rt_(&rt) {}
    FileTable(const FileTable&) = delete;
    FileTable& operator=(const FileTable&) = delete;
    ~FileTable() { (void)unregister(); }

    /// Registers `fds` as slots 0..n-1 (-1 entries are empty slots): 0 or -errno (-EBUSY:
    /// a table is already registered, -EBADF: a bad fd, -EMFILE: too many).
    [[nodiscard]] int register_files(std::span<const int> fds) noexcept {
        int r = io_uring_register_files(&ring(), fds.data(), static_cast<unsigned>(fds.size()));
        if (r == 0)
            size_ = static_cast<unsigned>(fds.size());
        return r;
    }
    /// Registers `n` empty slots (5.19), to be filled by update() or direct operations.
    [[nodiscard]] int register_sparse(unsigned n) noexcept {
        int r = io_uring_register_files_sparse(&ring(), n);
        if (r == 0)
            size_ = n;
        return r;
    }
    /// Replaces slots offset..offset+n-1 with `fds` (-1 empties a slot,
    /// uring::compat::register_files_skip leaves it): the number of slots updated, or
    /// -errno (-ENXIO: no table, -EINVAL: out of range, -EBADF: a bad fd; the kernel stops at
    /// the bad entry, whose slot it has already emptied).
    [[nodiscard]] int update(unsigned offset, std::span<const int> fds) noexcept {
        return io_uring_register_files_update(&ring(), offset, fds.data(), static_cast<unsigned>(fds.size()));
    }
    /// Restricts the slots op::alloc_slot may pick to [offset, offset+len) (6.0): 0 or -errno
    /// (-EINVAL when the range passes the table's end or no table is registered).
    [[nodiscard]] int set_alloc_range(unsigned offset, unsigned len) noexcept {
        return io_uring_register_file_alloc_range(&ring(), offset, len);
    }
    /// Unregisters the table: 0, or -ENXIO when none is registered.
    int unregister() noexcept {
        if (!size_)
            return -ENXIO;
        int r = io_uring_unregister_files(&ring());
        if (r == 0)
            size_ = 0;
        return r;
    }

    /// Number of slots registered through this object (0: none).
    [[nodiscard]] unsigned size() const noexcept { return size_; }
    [[nodiscard]] bool registered() const noexcept { return size_ != 0; }
    [[nodiscard]] Runtime& runtime() const noexcept { return *rt_; }

private:
    io_uring& ring() const noexcept { return rt_->ring().raw(); }
    Runtime* rt_;
    unsigned size_ = 0;
};

} // namespace ringo::buf
