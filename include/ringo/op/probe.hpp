// ringo/op/probe.hpp - asking beforehand whether the kernel supports an operation.
#pragma once

#include <cstdint>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// True if `rt`'s kernel probe lists `opcode`. An awaited operation whose opcode is not
/// supported completes with -EOPNOTSUPP without being submitted.
[[nodiscard]] inline bool supported(const Runtime& rt, std::uint8_t opcode) noexcept { return rt.supports(opcode); }

/// True if the runtime driving this thread supports operation type `OpT` (op::FutexWait,
/// op::Pipe, ...); false outside a runtime.
template <class OpT>
[[nodiscard]] bool supported() noexcept {
    const Runtime* rt = Runtime::current();
    return rt && rt->supports(OpT::opcode);
}
template <class OpT>
[[nodiscard]] bool supported(const Runtime& rt) noexcept {
    return rt.supports(OpT::opcode);
}

} // namespace ringo::op
