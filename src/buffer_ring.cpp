// Set-up and tear-down of provided-buffer rings (include/ringo/buf/buffer_ring.hpp).
#include <ringo/buf/buffer_ring.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include <ringo/op/base.hpp>

namespace ringo::buf {

namespace {

std::string describe_register_error(int err, unsigned group, unsigned entries, std::size_t size, bool single_issuer) {
    std::string what = "ringo: BufferRing: registering buffer group " + std::to_string(group) + " (" +
                       std::to_string(entries) + " buffers of " + std::to_string(size) + " bytes)";
    switch (err) {
    case EEXIST:
        // The kernel answers EEXIST for a group id already registered on the ring, and on a
        // SINGLE_ISSUER ring for a caller that is not its submitter task. The constructor
        // has checked the thread, but the kernel's notion of the submitter is its own.
        return what + " failed with EEXIST: group " + std::to_string(group) +
               " is already registered on this ring (by another BufferRing or a provide_buffers group)" +
               (single_issuer ? ", or the kernel does not take this thread as the SINGLE_ISSUER ring's submitter" : "");
    case EINVAL:
        return what + " was refused: IORING_REGISTER_PBUF_RING needs kernel 5.19, or the kernel does not take "
                      "these arguments";
    case ENOMEM: return what + " failed: the kernel could not pin the ring's memory (RLIMIT_MEMLOCK?)";
    default: return what + " failed";
    }
}

} // namespace

BufferRing::BufferRing(Runtime& rt, op::BufferGroup group, unsigned entries, std::size_t buffer_size,
                       BufferRingOptions options)
    : s_(nullptr) {
    if (!rt.on_owner_thread())
        throw std::logic_error("ringo: BufferRing: constructed on a thread that is not its Runtime's (a ring's "
                               "buffer groups are registered and used by the thread that created the Runtime)");
    if (entries == 0 || entries > 32768 || (entries & (entries - 1)) != 0)
        throw std::invalid_argument("ringo: BufferRing: entries must be a power of two between 1 and 32768, got " +
                                    std::to_string(entries));
    if (buffer_size == 0 || buffer_size > op::max_rw_count)
        throw std::invalid_argument("ringo: BufferRing: buffer_size must be between 1 and " +
                                    std::to_string(op::max_rw_count) + " bytes, got " + std::to_string(buffer_size));

    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t ring_bytes = (entries * sizeof(io_uring_buf) + page - 1) / page * page;
    const std::size_t data_bytes = static_cast<std::size_t>(entries) * buffer_size; // < 2^46: no overflow

    auto st = std::make_unique<detail::RingState>();
    auto next = std::make_unique<std::uint16_t[]>(entries);
    auto len = std::make_unique<std::uint32_t[]>(entries);
    auto slot = std::make_unique<std::uint16_t[]>(entries);
    std::unique_ptr<std::uint32_t[]> off, qoff, users;
    std::unique_ptr<std::uint8_t[]> done;
    const bool want_inc = options.incremental && !detail::incremental_force_fallback;
    if (want_inc) {
        off = std::make_unique<std::uint32_t[]>(entries);
        qoff = std::make_unique<std::uint32_t[]>(entries);
        users = std::make_unique<std::uint32_t[]>(entries);
        done = std::make_unique<std::uint8_t[]>(entries);
    }
    void* map = ::mmap(nullptr, ring_bytes + data_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(),
                                "ringo: BufferRing: cannot map " + std::to_string(ring_bytes + data_bytes) +
                                    " bytes for " + std::to_string(entries) + " buffers of " +
                                    std::to_string(buffer_size) + " bytes");
    st->rt = &rt;
    st->map = map;
    st->map_bytes = ring_bytes + data_bytes;
    st->br = static_cast<io_uring_buf_ring*>(map);
    st->data = static_cast<std::byte*>(map) + ring_bytes;
    st->entries = entries;
    st->buf_size = static_cast<std::uint32_t>(buffer_size);
    st->bgid = group.id;
    st->rearm_threshold = entries / 8 ? entries / 8 : 1;
    st->next = next.get();
    st->len = len.get();
    st->slot = slot.get();

    // Every buffer goes into the ring before the kernel first looks at it.
    io_uring_buf_ring_init(st->br);
    const int mask = static_cast<int>(entries - 1);
    for (unsigned i = 0; i < entries; ++i) {
        st->slot[i] = static_cast<std::uint16_t>(i);
        io_uring_buf_ring_add(st->br, st->addr(static_cast<std::uint16_t>(i)), st->buf_size,
                              static_cast<unsigned short>(i), mask, static_cast<int>(i));
    }
    io_uring_buf_ring_advance(st->br, static_cast<int>(entries));

    // ring_addr, ring_entries and bgid, and the flags for an incremental ring; the other
    // fields are reserved (zero).
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(st->br);
    reg.ring_entries = entries;
    reg.bgid = group.id;
    int r = -EINVAL;
    if (want_inc) {
        // The flags follow bgid (liburing 2.3 calls them `pad`, newer ones `flags`).
        const std::uint16_t flags = uring::compat::pbuf_ring::inc;
        std::memcpy(reinterpret_cast<unsigned char*>(&reg) + offsetof(io_uring_buf_reg, bgid) + sizeof reg.bgid, &flags,
                    sizeof flags);
        r = ringo::detail::RuntimeAccess::engine(rt).ring.register_buf_ring(reg);
        if (r == 0) {
            st->inc = true;
            st->off = off.release();
            st->qoff = qoff.release();
            st->users = users.release();
            st->done = done.release();
        } else if (r == -EINVAL) { // a kernel without incremental rings: a plain one
            const std::uint16_t none = 0;
            std::memcpy(reinterpret_cast<unsigned char*>(&reg) + offsetof(io_uring_buf_reg, bgid) + sizeof reg.bgid,
                        &none, sizeof none);
        }
    }
    if (!st->inc && r == -EINVAL) // not asked for, or refused
        r = ringo::detail::RuntimeAccess::engine(rt).ring.register_buf_ring(reg);
    if (r < 0) {
        ::munmap(map, st->map_bytes);
        throw std::system_error(-r, std::generic_category(),
                                describe_register_error(-r, group.id, entries, buffer_size,
                                                        (rt.setup_flags() & uring::compat::setup::single_issuer) != 0));
    }
    next.release();
    len.release();
    slot.release();
    s_ = st.release();
}

namespace detail {

void RingState::wake_waiters() noexcept {
    // One parked stream per returned buffer at most: each re-arm competes for the same
    // free buffers, and the next buffer that comes back offers them to the next stream.
    for (BufferWaiter* w = waiters_head; w && free_buffers() > 0;) {
        BufferWaiter* following = w->next_waiter;
        w->on_buffers(w, free_buffers());
        if (!w->parked)
            break; // it re-armed (or ended)
        w = following;
    }
}

void RingState::destroy(RingState* s) noexcept {
    // No operation reads into the ring any more (every stream is gone, which waits for its
    // multishot's final CQE): the kernel may let go of the memory.
    (void)ringo::detail::RuntimeAccess::engine(*s->rt).ring.unregister_buf_ring(s->bgid);
    ::munmap(s->map, s->map_bytes);
    delete[] s->next;
    delete[] s->len;
    delete[] s->slot;
    delete[] s->off;
    delete[] s->qoff;
    delete[] s->users;
    delete[] s->done;
    delete s;
}

} // namespace detail

} // namespace ringo::buf
