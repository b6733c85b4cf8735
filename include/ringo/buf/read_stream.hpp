// ringo/buf/read_stream.hpp - multishot read of a pollable file as a stream of buffers.
//
//   buf::BufferRing ring(rt, op::BufferGroup{2}, 16, 4096);
//   auto s = buf::read_multishot(pipe_reader_fd, ring);
//   while (buf::Buffer b = co_await s.next())
//       consume(b.view());
//   // s.result(): 0 at end of file, or -errno
//
// One IORING_OP_READ_MULTISHOT (6.7) stays armed on a pipe, socket, eventfd, tty ... and
// posts one CQE per read, each into a buffer the kernel picked from the ring. Where the probe
// lacks the opcode (before 6.7, detected at run time), the stream reads with one single-shot
// IORING_OP_READ with buffer select per chunk, re-armed at each CQE; it behaves the same.
// Everything else (queueing, the ring running dry, cancellation, dropping) is as for
// buf::recv_multishot (buf/recv_stream.hpp).
#pragma once

#include <cstdint>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/buffer_stream.hpp>
#include <ringo/op/base.hpp>
#include <ringo/op/multishot.hpp>

namespace ringo::buf {

class ReadStream;
[[nodiscard]] inline ReadStream read_multishot(op::FileRef fd, BufferRing& ring, unsigned nbytes = 0);

namespace detail {

struct ReadNode : BufferNode<ReadNode> {
    ReadNode* pool_next = nullptr;
    op::FileRef fd{-1};
    unsigned nbytes = 0;
    bool single = false; // one IORING_OP_READ per chunk (no READ_MULTISHOT)

    void prep(io_uring_sqe* s) noexcept {
        if (single) {
            op::prep_raw(s, uring::compat::opcode::read, fd.raw(), 0, nbytes ? nbytes : ring->buf_size,
                         ~std::uint64_t{0}); // the file's position (pipes have none)
            op::raw::select_buffer(s, op::BufferGroup{ring->bgid});
            fd.apply(s);
        } else {
            op::raw::prep_read_multishot(s, fd, op::BufferGroup{ring->bgid}, nbytes);
        }
    }
    void on_stop(int res) noexcept {
        if (single && res > 0) { // every single read ends with its CQE: the next one
            if (ring->free_buffers() > 0)
                arm();
            else
                ring->park(*this);
            return;
        }
        BufferNode::on_stop(res);
    }
};

} // namespace detail

/// A multishot read into a BufferRing (buf::read_multishot); the API of buf::RecvStream.
class ReadStream : public BufferStream<detail::ReadNode> {
public:
    ReadStream() noexcept = default;
    /// True when the kernel's READ_MULTISHOT drives it, false on the single-read fallback.
    [[nodiscard]] bool multishot() const noexcept { return n_ && !n_->single; }

private:
    friend ReadStream read_multishot(op::FileRef, BufferRing&, unsigned);
    explicit ReadStream(detail::ReadNode* n) noexcept : BufferStream(n) {}
};

/// Reads pollable file `fd` (plain or Fixed: a pipe, a socket, an eventfd; not a regular
/// file, which ends the stream with -EBADFD) into the buffers of `ring` each time it becomes
/// readable, as a stream: `co_await s.next()` yields each chunk as a Buffer, then an empty
/// Buffer whose result() is the end (0: end of file, -errno). `nbytes` caps a read (0: a
/// whole buffer). IORING_OP_READ_MULTISHOT (6.7), or single reads re-armed per chunk where
/// the probe lacks it. Armed here; must be called on the ring's runtime, from a task
/// (otherwise -ENXIO at once). Costs one SQE now (and one per chunk on the fallback), one
/// CQE per chunk; no allocation after the first stream of a thread.
inline ReadStream read_multishot(op::FileRef fd, BufferRing& ring, unsigned nbytes) {
    detail::ReadNode* n = detail::ReadNode::acquire(ring.runtime(), ring.state());
    n->fd = fd;
    n->nbytes = nbytes;
    n->single = !ring.runtime().supports(uring::compat::opcode::read_multishot);
    ReadStream s(n);
    n->start();
    return s;
}

} // namespace ringo::buf
