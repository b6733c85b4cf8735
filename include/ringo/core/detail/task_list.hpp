// ringo/core/detail/task_list.hpp - a runtime's list of live spawned tasks.
#pragma once

#include <memory>

#include <ringo/core/task.hpp>

namespace ringo::detail {

/// The spawned tasks a runtime holds, for its shutdown and its cancel sweeps: an intrusive
/// circular doubly linked list through PromiseBase::prev_ / next_ around a sentinel promise
/// of its own, so joining it and leaving it are a few stores with no branch and no
/// allocation. Owner thread only. Every task given to unlink() must be in the list.
class TaskList {
public:
    TaskList() noexcept {
        end_.prev_ = &end_;
        end_.next_ = &end_;
    }
    ~TaskList() { std::construct_at(&end_.exc_); } // the sentinel's words hold no exception
    TaskList(const TaskList&) = delete;
    TaskList& operator=(const TaskList&) = delete;

    /// Puts `p` at the front.
    void link(PromiseBase& p) noexcept {
        PromiseBase* first = end_.next_;
        p.prev_ = &end_;
        p.next_ = first;
        first->prev_ = &p;
        end_.next_ = &p;
    }
    /// Takes `p` off the list; its link words then hold an empty result (PromiseBase::exc_
    /// empty, no sink).
    void unlink(PromiseBase& p) noexcept {
        PromiseBase* prev = p.prev_;
        PromiseBase* next = p.next_;
        prev->next_ = next;
        next->prev_ = prev;
        std::construct_at(&p.exc_); // prev_'s stale link is even: no sink tag
    }
    [[nodiscard]] PromiseBase* first() noexcept { return end_.next_ == &end_ ? nullptr : end_.next_; }
    [[nodiscard]] bool empty() const noexcept { return end_.next_ == &end_; }
    /// Calls f(PromiseBase&) for every task; `f` may unlink the task it is given.
    template <class F>
    void for_each(F&& f) {
        for (PromiseBase* p = end_.next_; p != &end_;) {
            PromiseBase* next = p->next_;
            f(*p);
            p = next;
        }
    }

private:
    PromiseBase end_; // the sentinel: its next_ is the first task, its prev_ the last
};

} // namespace ringo::detail
