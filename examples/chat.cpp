// A line-based TCP chat room on one runtime. Each connection is two tasks: a reader that
// takes lines (BufReader::read_until, at most chat::max_line bytes) and acts on them, and a
// writer that sends the connection's outgoing queue into the socket. Connections come from
// net::accept_loop (which waits and goes on when descriptors or memory run short).
//
// Every client's outgoing queue is counted in bytes and capped (--queue-bytes, 64 KiB by
// default). Whoever speaks only appends to the others' queues and never waits for them, so
// a client that does not read stalls nobody: a line that would take its queue over the cap,
// or a write to it that moves no byte for 10 s (a Watchdog), drops it: its socket is shut
// down, what was queued for it is freed, and the others are told
// "* NAME was dropped (not reading)". The senders are the ones slowed, never the readers:
// before a reader takes its client's next line it waits while
//   - its own queue is over half the cap (what it asks for, /who above all, waits for it to
//     read: a client that sends /who without reading holds at most that much), or
//   - another client's queue is over half the cap while that client reads (no send to it
//     has been pending for 1 s): a flooder is slowed to what the room delivers, and the
//     readers it floods keep up. Joins and leaves wait their turn the same way. A client
//     whose send has been pending for 1 s does not read now and holds nobody back; the
//     lines it then misses take it to its cap.
// When clients leave, what they held goes with them (an idle client keeps no send buffer).
// Joins, leaves and nick changes are announced. The protocol (commands, limits, error lines)
// is examples/chat_protocol.hpp. SIGINT or SIGTERM stops it: everyone is told, the
// connections get 2 s to close, and the last line sums up.
//
//   chat [--port P] [--host ADDR] [--queue-bytes N] [--help]   (port 0: pick one; default 7001)
//   nc 127.0.0.1 7001          # in two terminals: type lines, /nick NAME, /who, /quit
//
// The first line of output is "listening on port <P>". Exit status 0 after a signal; 1 when it
// cannot be set up (a ring, a signalfd), listen or accept, or reading the signals fails
// ("chat: <reason>" on stderr); 2 for bad arguments (examples/args.hpp).
// tests/examples/test_chat.py runs it with several clients (Python sockets, socat, nc),
// hostile ones among them.
#include "args.hpp"
#include "chat_protocol.hpp"

#include <ringo/io/signal.hpp>
#include <ringo/ringo.hpp>

#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::net::SocketAddr;
using ringo::net::TcpListener;
using ringo::net::TcpStream;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto write_timeout = 10s; // a client whose writer moves no byte for this long is dropped
constexpr auto stuck_after = 1s;    // a send pending this long: its client does not read now
constexpr auto grace = 2s;          // for the connections to close when the server stops
constexpr std::uint64_t default_queue = 64 * 1024;
constexpr std::uint64_t min_queue = 1024, max_queue = std::uint64_t{1} << 30;

// Wakes every task waiting on `e` now; later waits wait again (one runtime: nothing runs in
// between).
void pulse(ringo::Event& e) {
    e.set();
    e.reset();
}

// What a client waits for its turn to do (Room::hold_back).
enum class Turn { line, announce };

// One connection as the room sees it. Lives in the connection's task frame.
struct Member {
    Member(std::uint64_t id, int fd) : id(id), fd(fd) {}
    std::uint64_t id;
    std::string nick;
    int fd;                  // the socket, for shutdown(2) when it is dropped
    std::string out;         // lines for this client that its writer has not taken yet
    std::size_t sending = 0; // bytes its writer took and has not sent yet
    bool in_room = false;
    bool closing = false; // no more lines come: the writer ends once `out` is sent
    bool behind = false;  // in the room with more than half the cap queued
    bool writing = false; // a send is in flight, since `write_since`
    Clock::time_point write_since;
    ringo::Event ready;     // set when `out` has lines or `closing` is set; the writer waits on it
    ringo::Event caught_up; // pulsed when `behind` ends (also by leaving); its reader waits on it

    std::size_t queued() const { return out.size() + sending; }
    bool stuck(Clock::time_point now) const { return writing && now - write_since >= stuck_after; }
};

// Everyone connected, in the order they came. One runtime: no locking.
class Room {
public:
    explicit Room(std::size_t cap) : cap_(cap) {}

    std::uint64_t next_id() { return ++last_id_; }

    // Puts `m` in the room; false once the server is stopping.
    bool join(Member& m) {
        if (stopping_)
            return false;
        m.nick = "guest" + std::to_string(m.id);
        while (find(m.nick)) // someone took that name with /nick
            m.nick += '_';
        members_.push_back(&m);
        m.in_room = true;
        send(m, chat::notice_line("welcome " + m.nick + ", " + std::to_string(members_.size()) +
                                  " online; commands: /nick NAME, /who, /quit"));
        broadcast(&m, chat::notice_line(m.nick + " joined"));
        return true;
    }

    // Takes `m` out of the room (once) and tells the others why. What is queued for it is
    // still sent, then its writer ends.
    void leave(Member& m, std::string_view how = "left") {
        if (!m.in_room)
            return;
        m.in_room = false;
        members_.erase(std::find(members_.begin(), members_.end(), &m));
        if (members_.size() < members_.capacity() / 4)
            members_.shrink_to_fit(); // a crowd has gone
        m.closing = true;
        m.ready.set();
        update(m); // it holds nobody back any more
        broadcast(nullptr, chat::notice_line(m.nick + " " + std::string(how)));
    }

    // A client that does not read: out of the room, its socket shut down (its reader and
    // writer wake up and end), what was queued for it freed.
    void drop(Member& m) {
        if (!m.in_room)
            return;
        ++dropped_;
        ::shutdown(m.fd, SHUT_RDWR);
        std::string().swap(m.out);
        leave(m, "was dropped (not reading)");
    }

    // A line for `m` about its own request: never over the cap by much, since its reader
    // waits while `m` is behind.
    void send(Member& m, std::string_view line) {
        if (m.in_room)
            append(m, line);
    }

    // One line for everyone but `from`. Nobody waits: a client whose queue it would take
    // over the cap is dropped.
    void broadcast(const Member* from, std::string_view line) {
        std::vector<Member*> slow;
        for (Member* m : members_) {
            if (m == from)
                continue;
            if (m->queued() + line.size() > cap_)
                slow.push_back(m);
            else
                append(*m, line);
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

    // How long `m` waits before its next line (Turn::line) or before its join or leave is
    // announced (Turn::announce), if it must: Clock::duration::max() while its own queue is
    // over half the cap (a line only; until `m.caught_up`), else the time until the nearest
    // other client over half its cap that reads would count as stuck (or until `progress`).
    std::optional<Clock::duration> hold_back(const Member& m, Turn turn) const {
        if (turn == Turn::line && !m.in_room)
            return std::nullopt;
        if (turn == Turn::line && m.behind)
            return Clock::duration::max();
        if (behind_ == 0)
            return std::nullopt;
        const Clock::time_point now = Clock::now();
        std::optional<Clock::duration> wait;
        for (const Member* o : members_) {
            if (o == &m || !o->behind || o->stuck(now))
                continue;
            Clock::duration left = o->writing ? stuck_after - (now - o->write_since) : Clock::duration(stuck_after);
            wait = wait ? std::min(*wait, left) : left;
        }
        return wait;
    }
    // Pulsed whenever a client stops holding the others back.
    ringo::Event& progress() { return progress_; }

    // The writer's side: moves what is queued for `m` into `batch` (false when nothing is).
    bool take(Member& m, std::string& batch) {
        if (m.out.empty())
            return false;
        batch = std::exchange(m.out, std::string()); // the next line starts a buffer of its own
        m.sending = batch.size();
        return true;
    }
    void send_started(Member& m) {
        m.writing = true;
        m.write_since = Clock::now();
    }
    void sent(Member& m, std::size_t n) {
        m.writing = false;
        m.sending -= std::min(n, m.sending);
        update(m);
    }

    // The server stops: everyone is told, and their reading side is shut down, so each
    // reader meets the end of its stream and each writer ends after the notice.
    void close_all() {
        stopping_ = true;
        for (Member* m : std::exchange(members_, {})) {
            append(*m, chat::notice_line("server is shutting down"));
            m->in_room = false;
            m->closing = true;
            update(*m);
            ::shutdown(m->fd, SHUT_RD);
        }
        pulse(progress_);
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

    void append(Member& m, std::string_view line) {
        m.out.append(line);
        m.ready.set();
        update(m);
    }

    // Keeps `behind` and its count true after `m`'s queue or place changed; wakes whoever
    // waited for it when it is behind no more.
    void update(Member& m) {
        const bool behind = m.in_room && m.queued() > cap_ / 2;
        if (behind == m.behind)
            return;
        m.behind = behind;
        if (behind) {
            ++behind_;
            return;
        }
        --behind_;
        pulse(m.caught_up);
        pulse(progress_);
    }

    std::size_t cap_;
    std::uint64_t last_id_ = 0;
    std::vector<Member*> members_;
    std::size_t behind_ = 0; // members with `behind` set
    ringo::Event progress_;
    bool stopping_ = false;
    std::uint64_t messages_ = 0, dropped_ = 0;
};

// Waits until the room lets `me` take its turn (Room::hold_back); false once cancelled.
Task<bool> wait_turn(Member& me, Room& room, Turn turn) {
    for (;;) {
        std::optional<Clock::duration> hold = room.hold_back(me, turn);
        if (!hold)
            co_return true;
        int r = 0;
        if (*hold == Clock::duration::max())
            r = co_await me.caught_up.wait();
        else
            r = co_await ringo::with_timeout(room.progress().wait(), *hold);
        if (r == -ECANCELED)
            co_return false;
    }
}

// Reads the client's lines and acts on them until it quits, its stream ends, or it is dropped.
Task<void> reader(TcpStream& conn, Member& me, Room& room) {
    // One byte over the limit so that a "\r" before the "\n" fits; parse_line checks the rest.
    ringo::BufReader in(conn, {.capacity = 4096, .max_line = chat::max_line + 1});
    std::string line;
    bool skipping = false; // in the rest of a line that was too long
    for (;;) {
        if (room.hold_back(me, Turn::line)) { // (a task only when it must wait)
            bool go = co_await wait_turn(me, room, Turn::line);
            if (!go)
                break;
        }
        if (!me.in_room)
            break;    // dropped
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
    if (me.in_room && room.hold_back(me, Turn::announce))
        (void)co_await wait_turn(me, room, Turn::announce); // "left" waits its turn too
    room.leave(me);
}

// Sends `batch` with as many sends as it takes, feeding `idle` after each one that moved
// bytes, so that only a client that takes nothing for write_timeout is dropped.
Task<Result<void>> send_batch(TcpStream& conn, Member& me, Room& room, std::string_view batch, ringo::Watchdog& idle) {
    while (!batch.empty()) {
        room.send_started(me);
        Result<std::size_t> n = co_await conn.write(batch);
        room.sent(me, n ? *n : 0);
        if (!n)
            co_return n.error();
        if (*n == 0)
            co_return make_error_code(ringo::IoError::write_zero);
        batch.remove_prefix(*n);
        idle.feed();
    }
    co_return Result<void>();
}

// Sends the client what is queued for it, all of it per batch, until it has left and
// everything is sent, or the client stops taking bytes.
Task<void> writer(TcpStream& conn, Member& me, Room& room) {
    ringo::Watchdog idle(write_timeout);
    std::string batch;
    for (;;) {
        if (!room.take(me, batch)) {
            if (me.closing)
                break; // left, and everything sent
            me.ready.reset();
            int r = co_await me.ready.wait();
            if (r < 0)
                break; // cancelled
            continue;
        }
        auto sent = co_await idle.guard(send_batch(conn, me, room, batch, idle));
        if (sent.timed_out()) {
            room.drop(me);
            break;
        }
        if (!*sent) {
            room.leave(me); // the client is gone; its reader may be waiting for its turn
            break;
        }
        std::string().swap(batch); // an idle client holds no buffer
    }
    ::shutdown(me.fd, SHUT_RDWR); // the client reads the end of the stream after the last line
}

// One connection: its reader and writer, both ended (and the socket closed) when it returns.
Task<void> session(TcpStream conn, Room& room) {
    Member me(room.next_id(), conn.fd().get());
    if (room.hold_back(me, Turn::announce)) { // while the room is behind, joins wait too
        bool go = co_await wait_turn(me, room, Turn::announce);
        if (!go)
            co_return;
    }
    if (!room.join(me))
        co_return; // the server is stopping
    co_await ringo::when_all(reader(conn, me, room), writer(conn, me, room));
}

// Accepts until cancelled (0) or until the listening socket fails (-errno); each connection
// runs in `sessions`.
Task<int> accept_all(TcpListener& l, Room& room, ringo::TaskScope& sessions, std::uint64_t& accepted) {
    auto start = [&](TcpStream s) {
        ++accepted;
        sessions.spawn(session(std::move(s), room));
    };
    std::error_code e = co_await ringo::net::accept_loop(l, start);
    co_return -e.value();
}

Task<int> serve(SocketAddr addr, std::size_t queue_bytes) {
    ringo::SignalSet signals{SIGINT, SIGTERM}; // one thread: this is all the masking it needs
    Result<TcpListener> l = co_await TcpListener::bind(addr);
    if (!l) {
        std::fprintf(stderr, "chat: cannot listen on %s: %s\n", addr.to_string().c_str(), l.message().c_str());
        co_return 1;
    }
    std::printf("listening on port %u\n", l->local_addr().value().port());
    std::fflush(stdout);

    Room room(queue_bytes);
    ringo::TaskScope sessions; // after the room: every session ends before the room goes
    std::uint64_t accepted = 0;
    auto [which, v] = co_await ringo::when_any(accept_all(*l, room, sessions, accepted), signals.next());
    int status = 0;
    if (which == 0) { // the listening socket failed
        std::fprintf(stderr, "chat: accept: %s; stopping\n", std::strerror(-v));
        status = 1;
    } else if (v < 0) { // the signalfd could not be read: no signal could stop the server
        std::fprintf(stderr, "chat: reading the signals: %s; stopping\n", std::strerror(-v));
        status = 1;
    } else {
        std::printf("got %s, stopping\n", v == SIGINT ? "SIGINT" : "SIGTERM");
    }
    std::fflush(stdout);
    Result<void> closed = co_await l->close();
    (void)closed;

    std::size_t open = sessions.running();
    room.close_all();
    bool finished = static_cast<bool>(co_await ringo::with_timeout(sessions.join(), grace));
    std::printf("chat: %llu connections, %llu messages, %llu dropped; %zu open at stop, %s\n",
                static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(room.messages()),
                static_cast<unsigned long long>(room.dropped()), open, finished ? "all closed" : "the rest cancelled");
    co_return status;
}

constexpr const char* usage_text =
    "usage: chat [--port P] [--host ADDR] [--queue-bytes N] [--help]\n"
    "  --port P          TCP port, 0 to 65535 (0: any free one; default 7001)\n"
    "  --host ADDR       IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
    "  --queue-bytes N   bytes that may wait for one client before it is dropped as not\n"
    "                    reading, 1024 to 1073741824 (default 65536)\n"
    "  --help            this text\n";

} // namespace

int main(int argc, char** argv) {
    args::Parser p("chat", usage_text, argc, argv);
    std::uint64_t port = 7001, queue = default_queue;
    std::string_view host = "127.0.0.1";
    while (std::optional<std::string_view> a = p.next()) {
        if (*a == "--host")
            host = p.value(*a);
        else if (*a == "--port")
            port = p.number(*a, 0, 65535);
        else if (*a == "--queue-bytes")
            queue = p.number(*a, min_queue, max_queue);
        else
            p.unknown(*a);
    }
    SocketAddr addr = p.address("--host", host, static_cast<std::uint16_t>(port));
    // A ring or a signalfd that cannot be made (too few descriptors, io_uring and epoll both
    // refused) throws: "chat: <what>", status 1.
    return args::report_setup_errors("chat", [&] { return ringo::block_on(serve(addr, queue)); });
}
