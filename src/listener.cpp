// net::ShardedListener's members that are not templates: binding the shards, stopping the
// accept loops (net/listener.hpp says what each does).
#include <ringo/net/listener.hpp>

#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace ringo::net {

ShardedListener::~ShardedListener() {
    if (pool_)
        pool_->remove_shutdown_hook(hook_);
    stop();
}

void ShardedListener::request_stop() {
    std::lock_guard lk(m_);
    for (auto& l : loops_)
        l.cancel();
}

void ShardedListener::stop() {
    request_stop();
    std::vector<JoinHandle<void>> loops;
    {
        std::lock_guard lk(m_);
        loops.swap(loops_);
    }
    for (auto& l : loops) {
        try {
            l.join();
        } catch (...) { // an accept loop that failed (out of memory) has ended all the same
        }
    }
    for (TcpListener& l : state_->listeners)
        l = TcpListener(); // closes it
}

void ShardedListener::throw_not_ip() {
    throw std::invalid_argument("ringo: ShardedListener needs an IPv4 or IPv6 address");
}

SocketAddr ShardedListener::to_socket_addr(const sockaddr* addr, socklen_t addrlen) {
    std::optional<SocketAddr> a = SocketAddr::from(addr, addrlen); // checks null and length
    if (!a)
        throw_not_ip();
    return *a;
}

void ShardedListener::open_sockets(SocketAddr a, int backlog) {
    if (!a.is_v4() && !a.is_v6())
        throw_not_ip();
    const ListenOptions opts{.backlog = backlog, .reuse_addr = true, .reuse_port = true};
    for (std::size_t i = 0; i < state_->listeners.size(); ++i) {
        auto l = TcpListener::bind_sync(a, opts);
        if (!l)
            throw std::system_error(l.error(), "ringo: ShardedListener: listening on " + a.to_string());
        if (i == 0) { // port 0: every other shard takes the port the first one got
            auto got = l->local_addr();
            if (!got)
                throw std::system_error(got.error(), "ringo: ShardedListener: getsockname");
            a.set_port(got->port());
            port_ = got->port();
        }
        state_->listeners[i] = std::move(*l);
    }
}

} // namespace ringo::net
