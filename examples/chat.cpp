// A line-based TCP chat room on one runtime. Each connection is two tasks: a reader that
// takes lines (BufReader::read_until, at most chat::max_line bytes) and acts on them, and a
// writer that drains the connection's own bounded Channel of outgoing lines into the socket.
// Whoever speaks only puts lines into the others' channels (try_send, never waiting), so a
// client that does not read stalls nobody: when its channel is full (--queue lines waiting),
// or a write to it has not finished in 10 s, it is dropped: its socket is shut down and the
// others are told "* NAME was dropped (not reading)". Joins, leaves and nick changes are
// announced. The protocol (commands, limits, error lines) is examples/chat_protocol.hpp.
// SIGINT or SIGTERM stops it: everyone is told, the connections get 2 s to close, and the
// last line sums up.
//
//   chat [--port P] [--queue N] [--host ADDR]     (port 0: pick one; default 7001)
//   nc 127.0.0.1 7001          # in two terminals: type lines, /nick NAME, /who, /quit
//
// The first line of output is "listening on port <P>". tests/examples/test_chat.py runs it
// with several clients (Python sockets, socat, nc).
#include "chat_protocol.hpp"

#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;

namespace {

constexpr auto write_timeout = 10s;          // a client that takes no line for this long is dropped
constexpr auto grace = 2s;                   // for the connections to close when the server stops
constexpr std::size_t max_batch = 16 * 1024; // lines a writer sends in one write

// One connection as the room sees it. Lives in the connection's task frame.
struct Member {
    Member(std::uint64_t id, std::size_t queue, int fd) : id(id), out(queue), fd(fd) {}
    std::uint64_t id;
    std::string nick;
    ringo::Channel<std::string> out; // lines for this client; its writer drains it
    int fd;                          // the socket, for shutdown(2) when it is dropped
    bool in_room = false;
};

// Everyone connected, in the order they came. One runtime: no locking.
class Room {
public:
    explicit Room(std::size_t queue) : queue_(queue) {}

    std::size_t queue() const { return queue_; }
    std::uint64_t next_id() { return ++last_id_; }

    void join(Member& m) {
        m.nick = "guest" + std::to_string(m.id);
        while (find(m.nick)) // someone took that name with /nick
            m.nick += '_';
        members_.push_back(&m);
        m.in_room = true;
        send(m, chat::notice_line("welcome " + m.nick + ", " + std::to_string(members_.size()) +
                                  " online; commands: /nick NAME, /who, /quit"));
        broadcast(&m, chat::notice_line(m.nick + " joined"));
    }

    // Takes `m` out of the room (once) and tells the others why.
    void leave(Member& m, std::string_view how = "left") {
        if (!m.in_room)
            return;
        m.in_room = false;
        members_.erase(std::find(members_.begin(), members_.end(), &m));
        m.out.close(); // its writer sends what is queued, then ends
        broadcast(nullptr, chat::notice_line(m.nick + " " + std::string(how)));
    }

    // A client that does not read: out of the room, its socket shut down (its reader and
    // writer wake up and end), what was queued for it discarded with its channel.
    void drop(Member& m) {
        if (!m.in_room)
            return;
        ++dropped_;
        ::shutdown(m.fd, SHUT_RDWR);
        leave(m, "was dropped (not reading)");
    }

    // One line for one client; a full queue drops it.
    void send(Member& m, std::string line) {
        if (m.in_room && m.out.try_send(std::move(line)) == -EAGAIN)
            drop(m);
    }

    // One line for everyone but `from`. Nobody waits: a full queue drops its client.
    void broadcast(const Member* from, const std::string& line) {
        std::vector<Member*> slow;
        for (Member* m : members_) {
            if (m != from && m->out.try_send(std::string(line)) == -EAGAIN)
                slow.push_back(m);
        }
        for (Member* m : slow)
            drop(*m);
    }

    void say(Member& m, std::string_view text) {
        ++messages_;
        broadcast(&m, chat::message_line(m.nick, text));
    }

    void rename(Member& m, std::string_view nick) {
        if (m.nick == nick)
            return send(m, chat::notice_line("you are " + m.nick));
        if (Member* other = find(nick); other && other != &m)
            return send(m, chat::error_line("nick " + std::string(nick) + " is taken"));
        std::string old = std::exchange(m.nick, std::string(nick));
        broadcast(nullptr, chat::notice_line(old + " is now " + m.nick));
    }

    void who(Member& m) {
        std::string list = "online (" + std::to_string(members_.size()) + "):";
        for (std::size_t i = 0; i < members_.size(); ++i)
            list.append(i ? ", " : " ").append(members_[i]->nick);
        send(m, chat::notice_line(list));
    }

    // The server stops: everyone is told, and their reading side is shut down, so each
    // reader meets the end of its stream and each writer ends after the notice.
    void close_all() {
        for (Member* m : std::exchange(members_, {})) {
            m->in_room = false;
            (void)m->out.try_send(chat::notice_line("server is shutting down"));
            m->out.close();
            ::shutdown(m->fd, SHUT_RD);
        }
    }

    std::uint64_t messages() const { return messages_; }
    std::uint64_t dropped() const { return dropped_; }

private:
    Member* find(std::string_view nick) const {
        for (Member* m : members_) {
            if (chat::same_nick(m->nick, nick))
                return m;
        }
        return nullptr;
    }

    std::size_t queue_;
    std::uint64_t last_id_ = 0;
    std::vector<Member*> members_;
    std::uint64_t messages_ = 0, dropped_ = 0;
};

// Reads the client's lines and acts on them until it quits, its stream ends, or it is dropped.
Task<void> reader(TcpStream& conn, Member& me, Room& room) {
    // One byte over the limit so that a "\r" before the "\n" fits; parse_line checks the rest.
    ringo::BufReader in(conn, {.capacity = 4096, .max_line = chat::max_line + 1});
    std::string line;
    bool skipping = false; // in the rest of a line that was too long
    for (;;) {
        line.clear(); // read_until appends
        Result<std::size_t> got = co_await in.read_until('\n', line);
        if (!got) {
            if (got.error() != ringo::IoError::line_too_long)
                break; // reset, shut down, cancelled
            if (!skipping)
                room.send(me, chat::error_line(chat::reason::too_long));
            skipping = true; // the next read_until goes on with the rest of the line
            continue;
        }
        if (line.empty() || line.back() != '\n' || !me.in_room)
            break; // the end of the stream (a last line without "\n" is not sent), or dropped
        line.pop_back();
        if (std::exchange(skipping, false))
            continue; // the end of the long line
        chat::Command c = chat::parse_line(line);
        switch (c.kind) {
        case chat::Kind::message: room.say(me, c.arg); break;
        case chat::Kind::nick: room.rename(me, c.arg); break;
        case chat::Kind::who: room.who(me); break;
        case chat::Kind::empty: break;
        case chat::Kind::error: room.send(me, chat::error_line(c.arg)); break;
        case chat::Kind::quit:
            room.send(me, chat::notice_line("bye"));
            room.leave(me);
            co_return;
        }
    }
    room.leave(me);
}

// Sends the client what its channel brings, a batch of lines per write, until the channel is
// closed and drained, or the client stops taking them.
Task<void> writer(TcpStream& conn, Member& me, Room& room) {
    std::string batch;
    for (;;) {
        std::optional<std::string> line = co_await me.out.recv();
        if (!line)
            break; // closed (the client left) and everything sent
        batch = std::move(*line);
        while (batch.size() < max_batch) {
            std::optional<std::string> more = me.out.try_recv();
            if (!more)
                break;
            batch += *more;
        }
        auto w = co_await ringo::with_timeout(conn.write_all(std::string_view(batch)), write_timeout);
        if (w.timed_out()) {
            room.drop(me);
            break;
        }
        if (!*w)
            break; // the client is gone: shut down below, which ends the reader too
    }
    ::shutdown(me.fd, SHUT_RDWR); // the client reads the end of the stream after the last line
}

// One connection: its reader and writer, both ended (and the socket closed) when it returns.
Task<void> session(TcpStream conn, Room& room) {
    Member me(room.next_id(), room.queue(), conn.fd().get());
    room.join(me);
    co_await ringo::when_all(reader(conn, me, room), writer(conn, me, room));
}

// Accepts until cancelled; each connection runs in `sessions`.
Task<int> accept_loop(TcpListener& l, Room& room, ringo::TaskScope& sessions, std::uint64_t& accepted) {
    auto in = l.incoming();
    for (;;) {
        Result<TcpStream> c = co_await in.next();
        if (!c) {
            std::error_code e = c.error();
            if (e == std::errc::operation_canceled)
                co_return 0;
            if (e == std::errc::too_many_files_open || e == std::errc::too_many_files_open_in_system ||
                e == std::errc::not_enough_memory || e == std::errc::connection_aborted) {
                co_await ringo::sleep_for(10ms);
                continue;
            }
            std::fprintf(stderr, "accept: %s\n", c.message().c_str());
            co_return -e.value();
        }
        ++accepted;
        sessions.spawn(session(std::move(*c), room));
    }
}

Task<int> serve(SocketAddr addr, std::size_t queue) {
    ringo::SignalSet signals{SIGINT, SIGTERM}; // one thread: this is all the masking it needs
    Result<TcpListener> l = co_await TcpListener::bind(addr);
    if (!l) {
        std::fprintf(stderr, "listen on %s: %s\n", addr.to_string().c_str(), l.message().c_str());
        co_return 1;
    }
    std::printf("listening on port %u\n", l->local_addr().value().port());
    std::fflush(stdout);

    Room room(queue);
    ringo::TaskScope sessions; // after the room: every session ends before the room goes
    std::uint64_t accepted = 0;
    auto [which, v] = co_await ringo::when_any(accept_loop(*l, room, sessions, accepted), signals.next());
    if (which == 0)
        std::fprintf(stderr, "stopped accepting: %s\n", std::strerror(-v));
    else
        std::printf("got %s, stopping\n", v == SIGINT ? "SIGINT" : v == SIGTERM ? "SIGTERM" : std::strerror(-v));
    std::fflush(stdout);
    Result<void> closed = co_await l->close();
    (void)closed;

    std::size_t open = sessions.running();
    room.close_all();
    bool finished = static_cast<bool>(co_await ringo::with_timeout(sessions.join(), grace));
    std::printf("chat: %llu connections, %llu messages, %llu dropped; %zu open at stop, %s\n",
                static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(room.messages()),
                static_cast<unsigned long long>(room.dropped()), open, finished ? "all closed" : "the rest cancelled");
    co_return which == 0 ? 1 : 0;
}

int usage(const char* prog) {
    std::fprintf(stderr, "usage: %s [--port P] [--queue N] [--host ADDR]\n", prog);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    long port = 7001, queue = 256;
    std::string host = "127.0.0.1";
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (i + 1 >= argc)
            return usage(argv[0]);
        char* end = nullptr;
        if (a == "--port")
            port = std::strtol(argv[++i], &end, 10);
        else if (a == "--queue")
            queue = std::strtol(argv[++i], &end, 10);
        else if (a == "--host")
            host = argv[++i];
        else
            return usage(argv[0]);
        if (end && (*end != '\0' || end == argv[i]))
            return usage(argv[0]);
    }
    std::optional<SocketAddr> addr = SocketAddr::parse_ip(host, 0);
    if (port < 0 || port > 65535 || queue < 1 || queue > 1 << 20 || !addr)
        return usage(argv[0]);
    addr->set_port(static_cast<std::uint16_t>(port));
    return ringo::block_on(serve(*addr, static_cast<std::size_t>(queue)));
}
