// src/epoll/op_table.hpp - how the epoll engine serves each opcode: the one place that says
// it. docs/ops.md's epoll column is generated from this table (scripts/ops-index reads it;
// one entry a line), the engine's probe lists exactly these opcodes (Engine::fill_probe),
// and an opcode that is not here completes with -EOPNOTSUPP.
#pragma once

#include <cstdint>

#include <ringo/uring/compat.hpp>

namespace ringo::uring::epoll {

namespace opc = compat::opcode;

/// readiness: tried at once without waiting, then again at each readiness of its descriptor
/// (readiness.hpp); thread_pool: a blocking call on the process's pool (blocking_calls.hpp),
/// or native AIO for O_DIRECT files; at_once: a call that never waits, made at submission;
/// timer: the engine's timer heap (timers.cpp).
enum class How : unsigned char { readiness, thread_pool, at_once, timer };
struct Way {
    std::uint8_t opcode;
    How how;
};
// clang-format off
inline constexpr Way ways[] = {
    {opc::nop, How::at_once},
    {opc::readv, How::readiness},
    {opc::writev, How::readiness},
    {opc::fsync, How::thread_pool},
    {opc::poll_add, How::readiness},
    {opc::poll_remove, How::at_once},
    {opc::sync_file_range, How::thread_pool},
    {opc::sendmsg, How::readiness},
    {opc::recvmsg, How::readiness},
    {opc::timeout, How::timer},
    {opc::timeout_remove, How::at_once},
    {opc::accept, How::readiness},
    {opc::async_cancel, How::at_once},
    {opc::link_timeout, How::timer},
    {opc::connect, How::readiness},
    {opc::fallocate, How::thread_pool},
    {opc::openat, How::thread_pool},
    {opc::close, How::at_once},
    {opc::statx, How::thread_pool},
    {opc::read, How::readiness},
    {opc::write, How::readiness},
    {opc::fadvise, How::at_once},
    {opc::send, How::readiness},
    {opc::recv, How::readiness},
    {opc::openat2, How::thread_pool},
    {opc::epoll_ctl, How::at_once},
    {opc::shutdown, How::at_once},
    {opc::renameat, How::thread_pool},
    {opc::unlinkat, How::thread_pool},
    {opc::mkdirat, How::thread_pool},
    {opc::symlinkat, How::thread_pool},
    {opc::linkat, How::thread_pool},
    {opc::socket, How::at_once},
    {opc::ftruncate, How::thread_pool},
    {opc::bind, How::at_once},
    {opc::listen, How::at_once},
    {opc::splice, How::thread_pool},
    {opc::tee, How::thread_pool},
    {opc::send_zc, How::readiness},
    {opc::sendmsg_zc, How::readiness},
    {opc::madvise, How::thread_pool},
    {opc::fsetxattr, How::thread_pool},
    {opc::setxattr, How::thread_pool},
    {opc::fgetxattr, How::thread_pool},
    {opc::getxattr, How::thread_pool},
    {opc::epoll_wait, How::readiness},
    {opc::pipe, How::at_once},
    {opc::futex_wait, How::thread_pool},
    {opc::futex_wake, How::at_once},
    {opc::futex_waitv, How::thread_pool},
    {opc::waitid, How::thread_pool},
};
// clang-format on

} // namespace ringo::uring::epoll
