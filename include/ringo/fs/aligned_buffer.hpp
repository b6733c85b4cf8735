// ringo/fs/aligned_buffer.hpp - AlignedBuffer: memory aligned for O_DIRECT transfers.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <stdexcept>
#include <utility>

namespace ringo::fs {

/// A heap buffer whose address is a multiple of `alignment` (4096 by default), for files
/// opened with OpenOptions::direct (O_DIRECT). Move-only; zero-filled when made; freed when it
/// goes. One allocation (posix_memalign) when made, none afterwards.
///
/// The O_DIRECT rule (Linux, per file system): the buffer's address, the byte count and the
/// file offset of every read or write must each be a multiple of the file's logical block
/// size (512 or 4096 bytes on common devices; `statx`'s STATX_DIOALIGN tells it exactly).
/// 4096 satisfies every common device. A transfer that breaks the rule fails with EINVAL.
///
///     fs::AlignedBuffer buf(64 * 1024);                      // 4096-aligned, 64 KiB
///     auto n = co_await file.read_at(buf.span(), 0);         // offset and size: multiples of 4096
class AlignedBuffer {
public:
    /// The alignment when none is given: 4096 bytes, enough for every common device.
    static constexpr std::size_t default_alignment = 4096;

    AlignedBuffer() noexcept = default;
    /// `size` bytes at an address that is a multiple of `alignment` (a power of two, at least
    /// sizeof(void*): else std::invalid_argument). Throws std::bad_alloc when there is no
    /// memory. A size of 0 allocates nothing.
    explicit AlignedBuffer(std::size_t size, std::size_t alignment = default_alignment) : align_(alignment) {
        if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0)
            throw std::invalid_argument("ringo::fs::AlignedBuffer: alignment must be a power of two >= sizeof(void*)");
        if (size == 0)
            return;
        void* p = nullptr;
        if (::posix_memalign(&p, alignment, size) != 0)
            throw std::bad_alloc();
        std::memset(p, 0, size);
        data_ = static_cast<std::byte*>(p);
        size_ = size;
    }
    /// Takes `o`'s memory over; `o` is left empty.
    AlignedBuffer(AlignedBuffer&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), align_(o.align_) {}
    /// Frees this buffer's memory, then takes `o`'s over.
    AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
        if (this != &o) {
            std::free(data_);
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
            align_ = o.align_;
        }
        return *this;
    }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { std::free(data_); }

    /// The first byte (nullptr when empty).
    [[nodiscard]] std::byte* data() noexcept { return data_; }
    /// The first byte (nullptr when empty).
    [[nodiscard]] const std::byte* data() const noexcept { return data_; }
    /// The size in bytes.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// The alignment the memory was allocated with.
    [[nodiscard]] std::size_t alignment() const noexcept { return align_; }
    /// True when it holds no memory.
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// The whole buffer, or its bytes [offset, offset + count) (clamped to the buffer).
    [[nodiscard]] std::span<std::byte> span() noexcept { return {data_, size_}; }
    /// The whole buffer, read-only.
    [[nodiscard]] std::span<const std::byte> span() const noexcept { return {data_, size_}; }
    /// The bytes [offset, offset + count), clamped to the buffer.
    [[nodiscard]] std::span<std::byte> span(std::size_t offset, std::size_t count) noexcept {
        offset = offset < size_ ? offset : size_;
        return {data_ + offset, count < size_ - offset ? count : size_ - offset};
    }

private:
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t align_ = default_alignment;
};

} // namespace ringo::fs
