// ringo/ringo.hpp - the umbrella header.
#pragma once

#include <ringo/version.hpp>

#include <ringo/uring/compat.hpp>
#include <ringo/uring/probe.hpp>
#include <ringo/uring/ring.hpp>

#include <ringo/core/blocking.hpp>
#include <ringo/core/completion.hpp>
#include <ringo/core/join_handle.hpp>
#include <ringo/core/options.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/runtime_pool.hpp>
#include <ringo/core/task.hpp>
#include <ringo/core/time.hpp>

#include <ringo/op/base.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/path.hpp>
#include <ringo/op/socket.hpp>
#include <ringo/op/timeout.hpp>

#include <ringo/compose/cancel.hpp>
#include <ringo/compose/link.hpp>
#include <ringo/compose/scope.hpp>
#include <ringo/compose/timeout.hpp>
#include <ringo/compose/traits.hpp>
#include <ringo/compose/when.hpp>
#include <ringo/op/cancel.hpp>
#include <ringo/op/cmd.hpp>
#include <ringo/op/direct.hpp>
#include <ringo/op/epoll.hpp>
#include <ringo/op/file_table.hpp>
#include <ringo/op/flags.hpp>
#include <ringo/op/futex.hpp>
#include <ringo/op/interval.hpp>
#include <ringo/op/msg_ring.hpp>
#include <ringo/op/multishot.hpp>
#include <ringo/op/pipe.hpp>
#include <ringo/op/poll.hpp>
#include <ringo/op/poll_stream.hpp>
#include <ringo/op/probe.hpp>
#include <ringo/op/process.hpp>
#include <ringo/op/raw.hpp>
#include <ringo/op/send_zc.hpp>
#include <ringo/op/stream.hpp>
#include <ringo/op/xattr.hpp>

#include <ringo/buf/buffer_ring.hpp>
#include <ringo/buf/buffer_stream.hpp>
#include <ringo/buf/buffer_table.hpp>
#include <ringo/buf/read_stream.hpp>
#include <ringo/buf/recv_stream.hpp>
#include <ringo/buf/recvmsg_stream.hpp>

#include <ringo/sync/channel.hpp>
#include <ringo/sync/condition_variable.hpp>
#include <ringo/sync/condition_waiters.hpp>
#include <ringo/sync/event.hpp>
#include <ringo/sync/futex.hpp>
#include <ringo/sync/mutex.hpp>
#include <ringo/sync/semaphore.hpp>
#include <ringo/sync/wait_group.hpp>

#include <ringo/io/buffered.hpp>
#include <ringo/io/error.hpp>
#include <ringo/io/fd.hpp>
#include <ringo/io/fixed_fd.hpp>
#include <ringo/io/owns_fd.hpp>
#include <ringo/io/pipe.hpp>
#include <ringo/io/read_to_end.hpp>
#include <ringo/io/result.hpp>
#include <ringo/io/signal.hpp>

#include <ringo/net/accept_loop.hpp>
#include <ringo/net/address.hpp>
#include <ringo/net/datagram.hpp>
#include <ringo/net/error.hpp>
#include <ringo/net/incoming.hpp>
#include <ringo/net/listener.hpp>
#include <ringo/net/resolve.hpp>
#include <ringo/net/socket.hpp>
#include <ringo/net/stream.hpp>
#include <ringo/net/tcp.hpp>
#include <ringo/net/udp.hpp>
#include <ringo/net/unix.hpp>

#include <ringo/fs/aligned_buffer.hpp>
#include <ringo/fs/error.hpp>
#include <ringo/fs/file.hpp>
#include <ringo/fs/metadata.hpp>
#include <ringo/fs/path.hpp>
