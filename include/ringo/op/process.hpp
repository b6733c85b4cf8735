// ringo/op/process.hpp - waiting for child processes.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <ringo/op/base.hpp>

namespace ringo::op {

/// IORING_OP_WAITID (6.7), like waitid(2): waits for a state change of a child (idtype
/// P_PID, P_PIDFD, P_PGID or P_ALL; options WEXITED, WSTOPPED, WCONTINUED, WNOHANG,
/// WNOWAIT). 0 with `*info` filled (si_pid, si_status, si_code), or -errno (-ECHILD: no
/// such child). `info` may be null.
struct [[nodiscard]] Waitid : Op<Waitid> {
    /// The opcode submitted: IORING_OP_WAITID.
    static constexpr std::uint8_t opcode = uring::compat::opcode::waitid;
    /// Keeps the arguments for prepare(); op::waitid() makes one.
    Waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) noexcept
        : idtype_(idtype), id_(id), info_(info), options_(options) {}
    /// Fills the SQE with the arguments (Op::await_suspend calls it).
    void prepare(io_uring_sqe* s) const noexcept {
        // fd = id, len = idtype, file_index = options, addr2 = infop
        prep_raw(s, opcode, static_cast<int>(id_), 0, static_cast<std::uint32_t>(idtype_),
                 reinterpret_cast<std::uint64_t>(info_));
        s->file_index = static_cast<std::uint32_t>(options_);
    }
    ///@{
    /// The constructor's arguments, read by prepare().
    idtype_t idtype_;
    id_t id_;
    siginfo_t* info_;
    int options_;
    ///@}
};
inline Waitid waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) noexcept {
    return {idtype, id, info, options};
}

} // namespace ringo::op
