// ringo/core/detail/registered_table.hpp - what the registered file table and the registered
// buffer table share: one ring's table, registered whole or sparse, unregistered on
// destruction.
#pragma once

#include <cerrno>
#include <span>

#include <ringo/core/runtime.hpp>

namespace ringo::detail {

/// One registered table of a Runtime's ring. `Kind` supplies the liburing calls for its
/// entries: `Entry` (int for files, iovec for buffers) and static functions
/// `register_all(io_uring*, const Entry*, unsigned)`, `register_sparse(io_uring*, unsigned)`,
/// `update(io_uring*, unsigned offset, const Entry*, unsigned n)` and `unregister(io_uring*)`,
/// each returning 0 (or a count) or -errno. Every call is a synchronous
/// io_uring_register(2) from the runtime's thread.
template <class Kind>
class RegisteredTable {
public:
    using Entry = typename Kind::Entry;

    explicit RegisteredTable(Runtime& rt) noexcept : rt_(&rt) {}
    RegisteredTable(const RegisteredTable&) = delete;
    RegisteredTable& operator=(const RegisteredTable&) = delete;
    ~RegisteredTable() { (void)unregister(); }

    /// Registers `n` empty slots (5.19), filled later by update() (or, for files, by direct
    /// operations).
    [[nodiscard]] int register_sparse(unsigned n) noexcept {
        int r = Kind::register_sparse(&ring(), n);
        if (r == 0)
            size_ = n;
        return r;
    }
    /// Unregisters the table: 0, or -ENXIO when none is registered.
    int unregister() noexcept {
        if (!size_)
            return -ENXIO;
        int r = Kind::unregister(&ring());
        if (r == 0)
            size_ = 0;
        return r;
    }

    /// Number of slots registered through this object (0: none).
    [[nodiscard]] unsigned size() const noexcept { return size_; }
    [[nodiscard]] bool registered() const noexcept { return size_ != 0; }
    [[nodiscard]] Runtime& runtime() const noexcept { return *rt_; }

protected:
    int register_all(std::span<const Entry> entries) noexcept {
        int r = Kind::register_all(&ring(), entries.data(), static_cast<unsigned>(entries.size()));
        if (r == 0)
            size_ = static_cast<unsigned>(entries.size());
        return r;
    }
    int update_entries(unsigned offset, std::span<const Entry> entries) noexcept {
        return Kind::update(&ring(), offset, entries.data(), static_cast<unsigned>(entries.size()));
    }
    io_uring& ring() const noexcept { return RuntimeAccess::engine(*rt_).ring.raw(); }

private:
    Runtime* rt_;
    unsigned size_ = 0;
};

} // namespace ringo::detail
