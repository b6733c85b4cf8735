// ringo/uring/probe.hpp - what the running kernel's io_uring supports, read once at setup.
#pragma once

#include <cstdint>

#include <ringo/uring/compat.hpp>

namespace ringo::uring {

/// The kernel's opcode probe (IORING_REGISTER_PROBE) and the ring's feature bits.
/// Never derived from the kernel version string.
class Probe {
public:
    /// The opcodes up to this one (NOP .. EPOLL_CTL) exist on every kernel that has the
    /// probe (5.6), which ringo requires. They are gated like every other opcode all the
    /// same: set_supported(op, false) hides any operation.
    static constexpr std::uint8_t always_present_last = compat::opcode::epoll_ctl;

    /// True if the kernel reported `opcode` as supported.
    [[nodiscard]] bool supports(std::uint8_t opcode) const noexcept { return (ops_[opcode >> 6] >> (opcode & 63)) & 1; }
    /// One past the highest opcode the kernel knows (the probe's last_op + 1).
    [[nodiscard]] unsigned kernel_last_op() const noexcept { return last_op_; }
    /// IORING_FEAT_* bits the kernel reported at setup.
    [[nodiscard]] std::uint32_t features() const noexcept { return features_; }
    /// True if the kernel reported every IORING_FEAT_* bit of `feat`.
    [[nodiscard]] bool has_feature(std::uint32_t feat) const noexcept { return (features_ & feat) == feat; }

    /// Marks an opcode as (un)supported. Meant for tests that force the "unsupported" path
    /// and for programs that want to keep ringo away from an operation: every operation
    /// with a hidden opcode then yields -EOPNOTSUPP without being submitted, awaited alone,
    /// in a group (when_all, when_any, link) or queued raw.
    void set_supported(std::uint8_t opcode, bool on) noexcept {
        const std::uint64_t bit = std::uint64_t{1} << (opcode & 63);
        ops_[opcode >> 6] = on ? ops_[opcode >> 6] | bit : ops_[opcode >> 6] & ~bit;
    }

    /// Marks every opcode unsupported and records `last_op` (one past the highest the kernel
    /// knows) and the IORING_FEAT_* `features`; set_supported then fills the opcodes in.
    void reset(unsigned last_op, std::uint32_t features) noexcept {
        for (std::uint64_t& w : ops_)
            w = 0;
        last_op_ = last_op;
        features_ = features;
    }

private:
    std::uint64_t ops_[4]{}; // bit n of word n / 64: opcode n is supported (a bitset without <bitset>)
    unsigned last_op_ = 0;
    std::uint32_t features_ = 0;
};

} // namespace ringo::uring
