// ringo/core/detail/task_list.hpp - a runtime's list of live spawned tasks.
#pragma once

#include <memory>

#include <ringo/core/task.hpp>

namespace ringo::detail {

/// The spawned tasks a runtime holds, for its shutdown and its cancel sweeps: an intrusive
/// doubly linked list through PromiseBase::prev_ / next_, so joining it and leaving it cost
/// a few stores and no allocation. Owner thread only.
class TaskList {
public:
    /// Puts `p` at the front.
    void link(PromiseBase& p) noexcept {
        p.prev_ = nullptr;
        p.next_ = head_;
        if (head_)
            head_->prev_ = &p;
        head_ = &p;
    }
    /// Takes `p` off the list; its link words then hold an empty result (PromiseBase::exc_
    /// empty, no sink).
    void unlink(PromiseBase& p) noexcept {
        if (p.prev_)
            p.prev_->next_ = p.next_;
        else if (head_ == &p)
            head_ = p.next_;
        if (p.next_)
            p.next_->prev_ = p.prev_;
        std::construct_at(&p.exc_); // prev_'s stale link is even: no sink tag
    }
    [[nodiscard]] PromiseBase* first() const noexcept { return head_; }
    [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }
    /// Calls f(PromiseBase&) for every task; `f` may unlink the task it is given.
    template <class F>
    void for_each(F&& f) {
        for (PromiseBase* p = head_; p;) {
            PromiseBase* next = p->next_;
            f(*p);
            p = next;
        }
    }

private:
    PromiseBase* head_ = nullptr;
};

} // namespace ringo::detail
