// ringo/buf/buffer_table.hpp - a runtime's registered buffer table.
#pragma once

#include <sys/uio.h>

#include <cerrno>
#include <span>

#include <ringo/core/runtime.hpp>

namespace ringo::buf {

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
class BufferTable {
public:
    explicit BufferTable(Runtime& rt) noexcept : rt_(&rt) {}
    BufferTable(const BufferTable&) = delete;
    BufferTable& operator=(const BufferTable&) = delete;
    ~BufferTable() { (void)unregister(); }

    /// Registers `iovs` as buffers 0..n-1.
    [[nodiscard]] int register_buffers(std::span<const iovec> iovs) noexcept {
        int r = io_uring_register_buffers(&ring(), iovs.data(), static_cast<unsigned>(iovs.size()));
        if (r == 0)
            size_ = static_cast<unsigned>(iovs.size());
        return r;
    }
    /// Registers `n` empty buffer slots (5.19), filled later with update().
    [[nodiscard]] int register_sparse(unsigned n) noexcept {
        int r = io_uring_register_buffers_sparse(&ring(), n);
        if (r == 0)
            size_ = n;
        return r;
    }
    /// Replaces buffers offset..offset+n-1 with `iovs` (an iovec {nullptr, 0} empties a
    /// slot) (5.13): the number updated, or -errno.
    [[nodiscard]] int update(unsigned offset, std::span<const iovec> iovs) noexcept {
        return io_uring_register_buffers_update_tag(&ring(), offset, iovs.data(), nullptr,
                                                    static_cast<unsigned>(iovs.size()));
    }
    /// Unregisters the table: 0, or -ENXIO when none is registered.
    int unregister() noexcept {
        if (!size_)
            return -ENXIO;
        int r = io_uring_unregister_buffers(&ring());
        if (r == 0)
            size_ = 0;
        return r;
    }

    [[nodiscard]] unsigned size() const noexcept { return size_; }
    [[nodiscard]] bool registered() const noexcept { return size_ != 0; }
    [[nodiscard]] Runtime& runtime() const noexcept { return *rt_; }

private:
    io_uring& ring() const noexcept { return rt_->ring().raw(); }
    Runtime* rt_;
    unsigned size_ = 0;
};

} // namespace ringo::buf
