// ringo/core/completion.hpp - ringo::Completion: receives the CQEs of an operation that is
// not a plain awaitable.
#pragma once

#include <cstdint>

namespace ringo {

/// Where the completions of an operation that is not a plain awaitable go: a multishot
/// operation queued with op::raw::queue (several CQEs with one user_data), and the runtime's
/// own wake-ups and notifications. Derive from it, set `fn`, and keep the object alive (at a
/// stable address) until its last CQE: the CQE's user_data is its address with a tag
/// (op::raw::completion_user_data), and the runtime's loop calls `fn(this, res, flags)` for
/// each CQE, with the kernel's result (>= 0, or -errno) and the CQE's flags
/// (IORING_CQE_F_MORE while more are to come: op::has_more).
///
/// `fn` runs inside the run loop, on the runtime's thread: it must not resume a coroutine
/// inline (schedule it, e.g. by waking a channel or an Event), must not throw, and must not
/// destroy the runtime. docs/ops.md ("Multishot operations") has a whole example.
struct Completion {
    /// Called once per CQE: `self` is this object (cast it to the derived type), `res` the
    /// CQE's result, `flags` its flags.
    void (*fn)(Completion* self, int res, std::uint32_t flags) = nullptr;
};

} // namespace ringo
