// ringo/buf/buffer_ring.hpp - a registered provided-buffer ring and the buffers it lends.
//
// A provided-buffer ring (IORING_REGISTER_PBUF_RING, 5.19) is a ring of buffer descriptors
// shared with the kernel: an operation that selects a buffer from the ring's group (recv,
// read, recv_multishot ...) takes the next one when data arrives, and its CQE names the
// buffer it filled (IORING_CQE_F_BUFFER, the id in the upper 16 bits of the flags). The
// application gives a buffer back by writing its descriptor at the ring's tail. Unlike
// legacy provide_buffers, giving a buffer back costs no SQE and no system call.
//
// buf::BufferRing owns the ring memory and N buffers of S bytes; buf::Buffer is the handle
// of one buffer lent to the application (a received chunk): data(), size(), and the buffer
// goes back to the ring when the handle is destroyed or reset.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include <ringo/core/runtime.hpp>
#include <ringo/op/flags.hpp>

namespace ringo::buf {

class Buffer;

namespace detail {

template <class D>
struct BufferNode;

/// Test hook: when true on a thread, BufferRings made there are never incremental (as on a
/// kernel older than 6.12, which refuses IOU_PBUF_RING_INC).
inline thread_local bool incremental_force_fallback = false;

/// Something that waits for buffers of a ring to come back: a stream whose multishot
/// operation ended with -ENOBUFS. The ring calls `on_buffers` (owner thread, never from
/// inside the kernel's completion of that stream) each time a buffer comes back while the
/// waiter is parked; the waiter decides whether to take itself off the list (unpark) and
/// re-arm.
struct BufferWaiter {
    BufferWaiter* prev_waiter = nullptr;
    BufferWaiter* next_waiter = nullptr;
    bool parked = false;
    void (*on_buffers)(BufferWaiter* self, unsigned free_buffers) noexcept = nullptr;
};

/// The state of one registered buffer ring, shared by the BufferRing object, the buffers
/// lent out and the streams reading into the ring. It lives until the BufferRing is gone,
/// every lent buffer is back and no stream holds it (refs == 0 && lent == 0); then it
/// unregisters the group and unmaps the memory. Owner thread only.
struct RingState {
    Runtime* rt = nullptr;
    io_uring_buf_ring* br = nullptr; // the descriptor ring (page aligned, shared with the kernel)
    std::byte* data = nullptr;       // buffer i at data + i * buf_size
    void* map = nullptr;             // one mapping: the descriptor ring, then the buffers
    std::size_t map_bytes = 0;
    std::uint32_t entries = 0;
    std::uint32_t buf_size = 0;
    std::uint16_t bgid = 0;
    std::uint32_t refs = 1;            // the BufferRing object + the streams holding it
    std::uint32_t lent = 0;            // buffers a CQE handed out that are not back in the ring
    std::uint32_t chunks = 0;          // incremental ring: parts held (queued or in Buffer handles)
    std::uint32_t rearm_threshold = 1; // free buffers that re-arm a parked stream with no waiter
    // Per-buffer links: a stream queues the buffers it received through these (a buffer is
    // in at most one queue), so queueing a result never allocates.
    std::uint16_t* next = nullptr;
    std::uint32_t* len = nullptr;
    // The ring position each buffer was last published at: a bundle's CQE names its first
    // buffer only, and the others are the entries that follow it.
    std::uint16_t* slot = nullptr;
    // Incremental rings (IOU_PBUF_RING_INC, 6.12) only: the kernel fills a buffer in parts.
    bool inc = false;
    std::uint32_t inc_streams = 0;        // streams reading into it (at most one)
    std::uint32_t* off = nullptr;         // bytes of each buffer the kernel has filled so far
    std::uint32_t* qoff = nullptr;        // where a stream's queued part of each buffer starts
    std::uint32_t* users = nullptr;       // parts of each buffer held
    std::uint8_t* done = nullptr;         // the kernel is done with the buffer (no IORING_CQE_F_BUF_MORE)
    BufferWaiter* waiters_head = nullptr; // parked streams, FIFO
    BufferWaiter* waiters_tail = nullptr;
    std::uint64_t stat_lent = 0;    // buffers handed out over the ring's life
    std::uint64_t stat_enobufs = 0; // multishot operations ended by -ENOBUFS
    std::uint64_t stat_rearms = 0;  // re-arms after such an end (or a CQ-pressure stop)

    [[nodiscard]] std::byte* addr(std::uint16_t bid) const noexcept {
        return data + static_cast<std::size_t>(bid) * buf_size;
    }
    [[nodiscard]] unsigned free_buffers() const noexcept { return entries - lent; }
    /// The buffer id published at ring position `pos`.
    [[nodiscard]] std::uint16_t bid_at(std::uint16_t pos) const noexcept { return br->bufs[pos & (entries - 1)].bid; }

    /// Puts buffer `bid` back at the ring's tail, visible to the kernel at once.
    void publish(std::uint16_t bid) noexcept {
        slot[bid] = br->tail;
        io_uring_buf_ring_add(br, addr(bid), buf_size, bid, static_cast<int>(entries - 1), 0);
        io_uring_buf_ring_advance(br, 1);
    }
    /// Books buffer `bid` as taken by a completion (it left the kernel's ring).
    void take(std::uint16_t bid) noexcept {
        (void)bid;
        ++lent;
        ++stat_lent;
    }
    /// A lent buffer comes back: into the ring, then parked streams may re-arm.
    void give_back(std::uint16_t bid) noexcept {
        publish(bid);
        --lent;
        if (waiters_head) [[unlikely]]
            wake_waiters();
        else if (refs == 0 && lent == 0 && chunks == 0) [[unlikely]]
            destroy(this);
    }
    /// Incremental ring: books one CQE's use of buffer `bid` (`res` bytes; `more`: the kernel
    /// keeps filling it) and returns where that part starts in the buffer. A buffer the
    /// kernel is done with counts as lent until its last part is released.
    std::uint32_t consume(std::uint16_t bid, int res, bool more) noexcept {
        std::uint32_t start = off[bid];
        if (res > 0)
            off[bid] += static_cast<std::uint32_t>(res);
        if (!more) {
            done[bid] = 1;
            take(bid);
            if (users[bid] == 0 && res <= 0)
                finish(bid); // nothing of it is held, and this CQE brought nothing
        }
        return start;
    }
    /// Incremental ring: one more part of `bid` is held.
    void hold(std::uint16_t bid) noexcept {
        ++users[bid];
        ++chunks;
    }
    /// Incremental ring: a part of `bid` is released; the buffer goes back when the kernel is
    /// done with it and no part is held.
    void release_part(std::uint16_t bid) noexcept {
        --chunks;
        if (--users[bid] == 0 && done[bid])
            finish(bid);
        else if (refs == 0 && lent == 0 && chunks == 0) [[unlikely]]
            destroy(this);
    }
    void finish(std::uint16_t bid) noexcept {
        done[bid] = 0;
        off[bid] = 0;
        give_back(bid);
    }
    /// What a Buffer handle's reset does: the part, or the whole buffer, goes back.
    void release(std::uint16_t bid) noexcept {
        if (inc)
            release_part(bid);
        else
            give_back(bid);
    }
    void park(BufferWaiter& w) noexcept {
        w.parked = true;
        w.next_waiter = nullptr;
        w.prev_waiter = waiters_tail;
        if (waiters_tail)
            waiters_tail->next_waiter = &w;
        else
            waiters_head = &w;
        waiters_tail = &w;
    }
    void unpark(BufferWaiter& w) noexcept {
        if (!w.parked)
            return;
        if (w.prev_waiter)
            w.prev_waiter->next_waiter = w.next_waiter;
        else
            waiters_head = w.next_waiter;
        if (w.next_waiter)
            w.next_waiter->prev_waiter = w.prev_waiter;
        else
            waiters_tail = w.prev_waiter;
        w.prev_waiter = w.next_waiter = nullptr;
        w.parked = false;
    }
    void ref() noexcept { ++refs; }
    void unref() noexcept {
        if (--refs == 0 && lent == 0 && chunks == 0)
            destroy(this);
    }

    /// Offers the free buffers to the parked streams, oldest first (src/buffer_ring.cpp).
    void wake_waiters() noexcept;
    /// Unregisters the group, unmaps the memory and frees the state (src/buffer_ring.cpp).
    static void destroy(RingState* s) noexcept;
};

} // namespace detail

/// One buffer of a BufferRing lent to the application: the bytes one completion received.
/// Move-only; destroying it (or reset()) gives the buffer back to its ring, where the
/// kernel may fill it again. An empty Buffer carries a result instead: 0 for the end of a
/// stream, -errno for an error (what next() of a stream yields when there is no more data).
/// Owner thread of the ring's runtime only, and it must not outlive that runtime.
class Buffer {
public:
    Buffer() noexcept = default;
    /// An empty buffer carrying `result` (0 or -errno).
    explicit Buffer(int result) noexcept : res_(result) {}
    /// Takes `o`'s buffer over; `o` is left empty (carrying 0).
    Buffer(Buffer&& o) noexcept
        : ring_(std::exchange(o.ring_, nullptr)), res_(std::exchange(o.res_, 0)), bid_(o.bid_), off_(o.off_) {}
    /// Gives this buffer back to its ring, then takes `o`'s over.
    Buffer& operator=(Buffer&& o) noexcept {
        if (this != &o) {
            reset();
            ring_ = std::exchange(o.ring_, nullptr);
            res_ = std::exchange(o.res_, 0);
            bid_ = o.bid_;
            off_ = o.off_;
        }
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { reset(); }

    /// True when this holds received bytes (false: end of stream or error, see result()).
    explicit operator bool() const noexcept { return ring_ != nullptr; }
    /// The received bytes (nullptr for an empty buffer).
    [[nodiscard]] std::byte* data() const noexcept { return ring_ ? ring_->addr(bid_) + off_ : nullptr; }
    /// data() as chars.
    [[nodiscard]] char* chars() const noexcept { return reinterpret_cast<char*>(data()); }
    /// Number of bytes received (0 for an empty buffer).
    [[nodiscard]] std::size_t size() const noexcept { return ring_ ? static_cast<std::size_t>(res_) : 0; }
    /// The received bytes as a span.
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data(), size()}; }
    /// The received bytes as a string_view (no terminating NUL).
    [[nodiscard]] std::string_view view() const noexcept { return {chars(), size()}; }
    /// The buffer's full size in the ring (what the kernel could have filled).
    [[nodiscard]] std::size_t capacity() const noexcept { return ring_ ? ring_->buf_size : 0; }
    /// The buffer id the kernel reported.
    [[nodiscard]] std::uint16_t id() const noexcept { return bid_; }
    /// Where these bytes start in the ring buffer: 0, except for the parts of an incremental
    /// ring's buffer (BufferRingOptions::incremental), which follow each other in it.
    [[nodiscard]] std::uint32_t offset() const noexcept { return off_; }
    /// size() for a buffer; for an empty one 0 (end of stream) or -errno.
    [[nodiscard]] int result() const noexcept { return res_; }
    /// Gives the buffer back to its ring now; the handle becomes empty with result 0.
    void reset() noexcept {
        if (detail::RingState* r = std::exchange(ring_, nullptr)) {
            res_ = 0;
            r->release(bid_);
        }
    }

private:
    friend class BufferRing;
    template <class D>
    friend struct detail::BufferNode;
    Buffer(detail::RingState* r, std::uint16_t bid, std::uint32_t len, std::uint32_t off = 0) noexcept
        : ring_(r), res_(static_cast<int>(len)), bid_(bid), off_(off) {}
    detail::RingState* ring_ = nullptr;
    int res_ = 0;
    std::uint16_t bid_ = 0;
    std::uint32_t off_ = 0;
};

/// Counters of one BufferRing.
struct BufferRingStats {
    std::uint64_t buffers_lent = 0; ///< buffers completions handed out since creation
    std::uint64_t enobufs = 0;      ///< multishot operations the kernel ended because the ring was dry
    std::uint64_t rearms = 0;       ///< streams re-armed after such an end (or a CQ-pressure stop)
};

/// Options of a BufferRing.
struct BufferRingOptions {
    /// IOU_PBUF_RING_INC (6.12): the kernel fills each buffer in parts, one per completion,
    /// instead of taking a whole buffer for every completion however small; the parts come
    /// out as Buffers with their offset(), and the buffer goes back to the ring when the kernel
    /// is done with it (IORING_CQE_F_BUF_MORE clear) and every part is released. Where the
    /// kernel refuses it the ring is registered as a plain one (incremental() is false).
    /// An incremental ring feeds one stream at a time (a second one ends with -EBUSY), of
    /// bytes: queued parts of one buffer join, so datagram boundaries are not kept (and
    /// buf::recvmsg_multishot refuses it with -EINVAL).
    bool incremental = false;
};

/// A registered provided-buffer ring of one Runtime (IORING_REGISTER_PBUF_RING, 5.19):
/// `entries` buffers of `buffer_size` bytes, in buffer group `group`. Pass group() to any
/// operation that takes an op::BufferGroup, or read into it with a stream
/// (buf::recv_multishot(fd, ring), buf/recv_stream.hpp).
///
/// Set-up errors throw, naming the problem: std::logic_error when constructed on a thread
/// other than the one that created the runtime (checked first), std::invalid_argument for
/// sizes the kernel cannot take (entries not a power of two in 1..32768, buffer_size 0 or
/// above op::max_rw_count, the total not addressable), std::system_error with the kernel's
/// errno when the registration is refused (EEXIST: the group id is already registered on this
/// ring, by another BufferRing or a provide_buffers group; EINVAL: a kernel older than 5.19
/// or an argument it refuses; ENOMEM: memory). Nothing is left registered or mapped after a
/// throw.
///
/// The memory (descriptor ring + buffers) is one anonymous mapping made here, so it is
/// page aligned as the kernel requires, and it does not depend on liburing 2.4's
/// io_uring_setup_buf_ring. Buffers come back to the ring when their Buffer handle goes;
/// the registration lasts until the BufferRing is destroyed *and* every lent buffer is back
/// *and* no stream reads into it, so destroying the BufferRing first is safe. Everything
/// made from a ring (the ring, its buffers, its streams) must be gone before its Runtime.
/// Owner thread only. Move-only.
class BufferRing {
public:
    /// Registers the ring on `rt` (see the class for what throws). From `rt`'s own thread.
    BufferRing(Runtime& rt, op::BufferGroup group, unsigned entries, std::size_t buffer_size,
               BufferRingOptions options = {});
    /// Takes `o`'s registration over; `o` is left empty (only destruction and assignment are
    /// valid).
    BufferRing(BufferRing&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    /// Releases this ring (see the class: the registration goes once every buffer is back),
    /// then takes `o`'s over.
    BufferRing& operator=(BufferRing&& o) noexcept {
        if (this != &o) {
            if (s_)
                s_->unref();
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    BufferRing(const BufferRing&) = delete;
    BufferRing& operator=(const BufferRing&) = delete;
    ~BufferRing() {
        if (s_)
            s_->unref();
    }

    /// The group to pass to operations that select a buffer.
    [[nodiscard]] op::BufferGroup group() const noexcept { return {s_->bgid}; }
    /// The number of buffers.
    [[nodiscard]] unsigned entries() const noexcept { return s_->entries; }
    /// Each buffer's size in bytes.
    [[nodiscard]] std::size_t buffer_size() const noexcept { return s_->buf_size; }
    /// Buffers in the kernel's ring, free to be filled.
    [[nodiscard]] unsigned available() const noexcept { return s_->free_buffers(); }
    /// Buffers handed out by completions and not back yet (held by Buffer handles or
    /// queued in streams).
    [[nodiscard]] unsigned lent() const noexcept { return s_->lent; }
    /// The runtime the ring is registered on.
    [[nodiscard]] Runtime& runtime() const noexcept { return *s_->rt; }
    /// True when the kernel fills buffers in parts (BufferRingOptions::incremental, granted).
    [[nodiscard]] bool incremental() const noexcept { return s_->inc; }
    /// Counters since creation (BufferRingStats).
    [[nodiscard]] BufferRingStats stats() const noexcept { return {s_->stat_lent, s_->stat_enobufs, s_->stat_rearms}; }
    /// A parked stream (its multishot ended by -ENOBUFS) re-arms when this many buffers are
    /// free, or at once when its reader waits and one is free. Default: entries / 8 (>= 1).
    void set_rearm_threshold(unsigned n) noexcept { s_->rearm_threshold = n ? n : 1; }

    /// Claims the buffer a single-shot operation of this group consumed: pass the
    /// operation's result and result_flags(). With IORING_CQE_F_BUFFER and res > 0 it
    /// returns the buffer (size res); otherwise an empty Buffer carrying `res` (a buffer
    /// consumed with res <= 0 goes straight back). Every completion that consumed a buffer
    /// of this ring must go through take() (or a stream), or the buffer is lost to the ring.
    [[nodiscard]] Buffer take(int res, std::uint32_t cqe_flags) noexcept {
        if (!op::has_buffer(cqe_flags))
            return Buffer(res);
        std::uint16_t bid = op::buffer_id(cqe_flags);
        if (bid >= s_->entries) [[unlikely]]
            return Buffer(-EINVAL); // not a buffer of this ring
        if (s_->inc) {
            std::uint32_t start = s_->consume(bid, res, (cqe_flags & uring::compat::cqe_f_buf_more) != 0);
            if (res <= 0)
                return Buffer(res);
            s_->hold(bid);
            return Buffer(s_, bid, static_cast<std::uint32_t>(res), start);
        }
        s_->take(bid);
        if (res <= 0) {
            s_->give_back(bid);
            return Buffer(res);
        }
        return Buffer(s_, bid, static_cast<std::uint32_t>(res));
    }

    /// Internal: the shared state (streams hold a reference to it).
    [[nodiscard]] detail::RingState* state() const noexcept { return s_; }

private:
    detail::RingState* s_;
};

} // namespace ringo::buf
