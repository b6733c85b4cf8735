// ringo/op/file_table.hpp - a runtime's registered file table (the slots op::Fixed names).
#pragma once

#include <cerrno>
#include <span>

#include <ringo/core/detail/registered_table.hpp>
#include <ringo/core/runtime.hpp>

namespace ringo::detail {
/// The liburing calls of the registered file table.
struct FileKind {
    using Entry = int;
    static int register_all(io_uring* r, const int* fds, unsigned n) noexcept {
        return io_uring_register_files(r, fds, n);
    }
    static int register_sparse(io_uring* r, unsigned n) noexcept { return io_uring_register_files_sparse(r, n); }
    static int update(io_uring* r, unsigned off, const int* fds, unsigned n) noexcept {
        return io_uring_register_files_update(r, off, fds, n);
    }
    static int unregister(io_uring* r) noexcept { return io_uring_unregister_files(r); }
};
} // namespace ringo::detail

namespace ringo::op {

/// The registered file table of one Runtime's ring (IORING_REGISTER_FILES): operations
/// then name a file by its slot with Fixed{slot}, which saves the fd lookup and
/// reference counting per operation, and the *_direct operations create files straight
/// into slots. A ring has at most one table: a second FileTable on the same runtime gets
/// -EBUSY from register calls.
///
/// Every call is a synchronous io_uring_register(2) from the runtime's thread and returns
/// 0 (or a count) on success, -errno on failure. The table does not own the descriptors it
/// registers: the kernel keeps its own reference to each file, so closing an fd after
/// registering it leaves the slot usable. Destroying a FileTable unregisters the table.
/// Member functions must be called on the runtime's thread.
class FileTable : public ringo::detail::RegisteredTable<ringo::detail::FileKind> {
public:
    using RegisteredTable::RegisteredTable;

    /// Registers `fds` as slots 0..n-1 (-1 entries are empty slots): 0 or -errno (-EBUSY:
    /// a table is already registered, -EBADF: a bad fd, -EMFILE: too many).
    [[nodiscard]] int register_files(std::span<const int> fds) noexcept { return register_all(fds); }
    /// Replaces slots offset..offset+n-1 with `fds` (-1 empties a slot,
    /// uring::compat::register_files_skip leaves it): the number of slots updated, or
    /// -errno (-ENXIO: no table, -EINVAL: out of range, -EBADF: a bad fd; the kernel stops at
    /// the bad entry, whose slot it has already emptied).
    [[nodiscard]] int update(unsigned offset, std::span<const int> fds) noexcept { return update_entries(offset, fds); }
    /// Restricts the slots alloc_slot may pick to [offset, offset+len) (6.0): 0 or -errno
    /// (-EINVAL when the range passes the table's end or no table is registered).
    [[nodiscard]] int set_alloc_range(unsigned offset, unsigned len) noexcept {
        return io_uring_register_file_alloc_range(&ring(), offset, len);
    }
};

} // namespace ringo::op
