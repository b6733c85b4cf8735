// ringo/buf/buffer_stream.hpp - the stream object shared by every stream that receives into a
// BufferRing (recv, bundles, read, recvmsg); the state behind it is buf/detail/buffer_stream.hpp.
#pragma once

#include <ringo/buf/detail/buffer_stream.hpp>
#include <ringo/op/stream.hpp>

namespace ringo::buf {

/// The stream object of a stream that receives into a BufferRing (buf::RecvStream,
/// buf::ReadStream, buf::RecvMsgStream): op::MultishotStream's next(), cancel(), done(),
/// result(), armed() and rearms(), and the ring's side of it. When the ring runs dry the
/// stream parks (it is not ended) and is armed again once buffers come back.
template <class Node>
class BufferStream : public op::MultishotStream<Node> {
public:
    /// An empty stream: next() yields its EBADF item at once, and result() is -EBADF.
    BufferStream() noexcept = default;
    /// Buffers received and not yet taken by next().
    [[nodiscard]] unsigned queued() const noexcept { return this->n_ ? this->n_->queued : 0; }
    /// True while the stream waits for buffers to come back to re-arm.
    [[nodiscard]] bool parked() const noexcept { return this->n_ && this->n_->parked; }

protected:
    /// Keeps the arguments for prepare().
    explicit BufferStream(Node* n) noexcept : op::MultishotStream<Node>(n) {}
};

} // namespace ringo::buf
