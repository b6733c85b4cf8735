// ringo/core/detail/node_pool.hpp - a per-thread free list of state nodes that must outlive the
// object that started an operation (the kernel refers to them until a final CQE), so they
// cannot live in a coroutine frame. After the first few, taking one allocates nothing.
#pragma once

namespace ringo::detail {

/// Free list of `Node`s for the calling thread, linked through the member `Next` while a node
/// is free. acquire() hands out a node reset to `Node{}`; recycle() takes it back on the same
/// thread. Free nodes are deleted when the thread exits.
template <class Node, Node* Node::*Next>
class ThreadNodePool {
public:
    static Node* acquire() {
        List& l = list();
        Node* n = l.free;
        if (n)
            l.free = n->*Next;
        else
            n = new Node;
        *n = Node{};
        return n;
    }
    static void recycle(Node* n) noexcept {
        List& l = list();
        n->*Next = l.free;
        l.free = n;
    }

private:
    struct List {
        Node* free = nullptr;
        List() = default;
        List(const List&) = delete;
        List& operator=(const List&) = delete;
        ~List() {
            while (Node* n = free) {
                free = n->*Next;
                delete n;
            }
        }
    };
    static List& list() noexcept {
        thread_local List l;
        return l;
    }
};

} // namespace ringo::detail
