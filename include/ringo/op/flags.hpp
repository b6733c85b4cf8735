// ringo/op/flags.hpp - what operations take and return besides their result: the slot to
// allocate, the buffer group to pick from, and the CQE flags that tell what was picked.
#pragma once

#include <cstdint>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// Pass as the slot of an operation that creates a direct descriptor (openat_direct,
/// accept_direct, socket_direct, pipe_direct, msg_ring_fd, files_update) to let the kernel
/// pick a free slot of the registered file table; the result is then the slot it chose
/// (IORING_FILE_INDEX_ALLOC).
inline constexpr unsigned alloc_slot = uring::compat::file_index_alloc;

/// A provided-buffer group (legacy `provide_buffers` or a registered buffer ring): pass it
/// instead of a buffer pointer and the kernel picks a buffer of the group
/// (IOSQE_BUFFER_SELECT). The chosen buffer's id is `buffer_id(op.result_flags())`.
struct BufferGroup {
    ///@{
    /// The constructor's arguments, read by prepare().
    std::uint16_t id;
    ///@}
};

/// True when a completion consumed a provided buffer (IORING_CQE_F_BUFFER).
[[nodiscard]] constexpr bool has_buffer(std::uint32_t cqe_flags) noexcept {
    return (cqe_flags & uring::compat::cqe_f_buffer) != 0;
}
/// The id of the provided buffer a completion consumed (valid when has_buffer()).
[[nodiscard]] constexpr std::uint16_t buffer_id(std::uint32_t cqe_flags) noexcept {
    return static_cast<std::uint16_t>(cqe_flags >> uring::compat::cqe_buffer_shift);
}

/// True when more CQEs of the same operation follow this one (IORING_CQE_F_MORE): a
/// multishot operation posts it on every CQE but its last.
[[nodiscard]] constexpr bool has_more(std::uint32_t cqe_flags) noexcept {
    return (cqe_flags & uring::compat::cqe_f_more) != 0;
}

namespace raw {
/// Marks `s` as picking its buffer from group `g`.
inline void select_buffer(io_uring_sqe* s, BufferGroup g) noexcept {
    s->flags |= uring::compat::sqe_flag::buffer_select;
    s->buf_group = g.id;
}

} // namespace raw

} // namespace ringo::op
