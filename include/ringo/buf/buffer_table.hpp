// ringo/buf/buffer_table.hpp - a runtime's registered buffer table.
#pragma once

#include <sys/uio.h>

#include <cerrno>
#include <span>

#include <ringo/core/detail/registered_table.hpp>
#include <ringo/core/runtime.hpp>

namespace ringo::buf {

namespace detail {
/// The liburing calls of the registered buffer table.
struct BufferKind {
    using Entry = iovec;
    static int register_all(io_uring* r, const iovec* iovs, unsigned n) noexcept {
        return io_uring_register_buffers(r, iovs, n);
    }
    static int register_sparse(io_uring* r, unsigned n) noexcept { return io_uring_register_buffers_sparse(r, n); }
    static int update(io_uring* r, unsigned off, const iovec* iovs, unsigned n) noexcept {
        return io_uring_register_buffers_update_tag(r, off, iovs, nullptr, n);
    }
    static int unregister(io_uring* r) noexcept { return io_uring_unregister_buffers(r); }
};
} // namespace detail

/// The registered buffer table of one Runtime's ring (IORING_REGISTER_BUFFERS): the kernel
/// pins each buffer's pages once, and read_fixed / write_fixed / readv_fixed / writev_fixed
/// / send_zc_fixed then name a buffer by its index instead of mapping it per operation. A
/// ring has one table; a second register call gets -EBUSY.
///
/// Every call is a synchronous io_uring_register(2) returning 0 or -errno (-ENOMEM or
/// -EFAULT for memory that cannot be pinned, -EINVAL for a zero-length or oversized
/// buffer; the pinned pages count against RLIMIT_MEMLOCK for unprivileged processes). The
/// table does not own the memory: keep each buffer alive and in place until it is
/// unregistered. Destroying a BufferTable unregisters the table. Runtime's thread only.
class BufferTable : public ringo::detail::RegisteredTable<detail::BufferKind> {
public:
    using RegisteredTable::RegisteredTable;

    /// Registers `iovs` as buffers 0..n-1.
    [[nodiscard]] int register_buffers(std::span<const iovec> iovs) noexcept { return register_all(iovs); }
    /// Replaces buffers offset..offset+n-1 with `iovs` (an iovec {nullptr, 0} empties a
    /// slot) (5.13): the number updated, or -errno.
    [[nodiscard]] int update(unsigned offset, std::span<const iovec> iovs) noexcept {
        return update_entries(offset, iovs);
    }
};

} // namespace ringo::buf
