#!/usr/bin/env python3
"""Runs examples/chat with several scripted clients: Python sockets, socat and nc.

    test_chat.py PATH/TO/chat

They join, take nicks, talk, and each checks exactly which lines it receives (a client's
own messages do not come back to it; a /who round trip at the end shows nothing else was
queued). Bad input gets its error line and the connection goes on: unknown commands, bad
nicks, a taken nick, control characters, a line one byte over the limit, a line of many KB.
A client that resets its connection, one that closes in the middle of a line, and one that
never reads while others talk (it is dropped, the others are told, and nobody else misses a
line) all leave no descriptor behind (/proc/<pid>/fd). SIGINT with a client connected: that
client is told and closed, the exit code is 0, and the summary counts what happened.
"""
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from example_server import Failure, Server, check

BIN = sys.argv[1] if len(sys.argv) > 1 else None
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
LINE_TIMEOUT = 15 if SANITIZED else 5  # seconds to wait for one expected line
MAX_LINE = 512  # chat::max_line
QUEUE = 64  # --queue: lines waiting for one client before it is dropped
WELCOME_TAIL = " online; commands: /nick NAME, /who, /quit"


def pump(read, put):
    """Splits what `read()` returns into lines (with their "\\n") until it returns b""."""
    buf = b""
    while True:
        try:
            chunk = read()
        except OSError:
            chunk = b""
        if not chunk:
            if buf:
                put(buf.decode(errors="replace"))
            put(None)
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            put(line.decode(errors="replace") + "\n")


class Client:
    """A chat client whose received lines a thread queues. Subclasses say how it talks."""

    def __init__(self, name):
        self.name = name
        self.lines = queue.Queue()
        self.eof = False

    def start_reader(self, read):
        threading.Thread(target=pump, args=(read, self.lines.put), daemon=True).start()

    def next(self, timeout=LINE_TIMEOUT):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise Failure(f"{self.name}: no line within {timeout} s")
        if line is None:
            self.eof = True
        return line

    def expect(self, *want):
        for w in want:
            got = self.next()
            check(got == w, f"{self.name}: expected {w!r}, got {got!r}")

    def expect_eof(self):
        got = self.next()
        check(got is None, f"{self.name}: expected the end of the stream, got {got!r}")

    def say(self, text):
        self.send((text + "\n").encode())

    def welcome(self, online):
        """Reads the welcome line; returns the nick the server gave."""
        line = self.next()
        check(line.startswith("* welcome ") and line.endswith(f", {online}{WELCOME_TAIL}\n"),
              f"{self.name}: welcome line {line!r} (want {online} online)")
        return line[len("* welcome "):line.index(",")]


class SocketClient(Client):
    def __init__(self, port, name, rcvbuf=None, read=True):
        super().__init__(name)
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        if read:
            self.start_reader(lambda: self.sock.recv(65536))

    def send(self, data):
        self.sock.sendall(data)

    def reset(self):
        """Closes with a reset (SO_LINGER 0), not a FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self):
        """A FIN (shutdown first: a close alone waits for the reader thread's recv)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class ProcessClient(Client):
    """socat or nc, talking through its stdin and stdout."""

    def __init__(self, argv, name):
        super().__init__(name)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.start_reader(lambda: os.read(self.proc.stdout.fileno(), 65536))

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close_input(self):
        self.proc.stdin.close()

    def wait(self, timeout=10):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failure(f"{self.name} did not exit")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def barrier(*clients):
    """Each client asks /who and must get the reply as its very next line: nothing else was
    waiting for it. Returns the list of nicks online."""
    names = None
    for c in clients:
        c.say("/who")
        line = c.next()
        check(line.startswith("* online ("), f"{c.name}: expected the /who reply, got {line!r}")
        names = line.split("): ", 1)[1].rstrip("\n").split(", ") if "): " in line else []
    return names


def run():
    srv = Server(BIN, ["--queue", str(QUEUE)])
    clients = []
    messages = 0  # lines the server must count as messages
    connections = 0
    try:
        time.sleep(0.2)
        baseline = srv.fds()

        # Three clients: a Python socket, socat, nc. Each join is announced to those already in.
        a = SocketClient(srv.port, "A")
        clients.append(a)
        connections += 1
        a_nick = a.welcome(1)
        b = ProcessClient(["socat", "-", f"TCP:127.0.0.1:{srv.port}"], "B(socat)")
        clients.append(b)
        connections += 1
        b_nick = b.welcome(2)
        a.expect(f"* {b_nick} joined\n")
        c = ProcessClient(["nc", "-N", "127.0.0.1", str(srv.port)], "C(nc)")
        clients.append(c)
        connections += 1
        c_nick = c.welcome(3)
        check(len({a_nick, b_nick, c_nick}) == 3, f"default nicks not unique: {a_nick} {b_nick} {c_nick}")
        for x in (a, b):
            x.expect(f"* {c_nick} joined\n")
        check(barrier(a, b, c) == [a_nick, b_nick, c_nick], "who lists the clients in the order they came")

        # Nicks: taken (regardless of case), bad, fine; a change is announced to everyone.
        a.say("/nick alice")
        for x in (a, b, c):
            x.expect(f"* {a_nick} is now alice\n")
        b.say("/nick ALICE")
        b.expect("* error: nick ALICE is taken\n")
        for bad in ("/nick", "/nick 9lives", "/nick bob smith", "/nick " + "b" * 17, "/nick b*b"):
            b.say(bad)
            b.expect("* error: usage: /nick NAME\n" if bad == "/nick" else
                     "* error: a nick is 1 to 16 letters, digits, '_' or '-', starting with a letter\n")
        b.say("/nick bob")
        for x in (a, b, c):
            x.expect(f"* {b_nick} is now bob\n")
        c.say("/nick  carol ")  # spaces around the name are not part of it
        for x in (a, b, c):
            x.expect(f"* {c_nick} is now carol\n")
        a.say("/nick alice")
        a.expect("* you are alice\n")
        check(barrier(a, b, c) == ["alice", "bob", "carol"], "who after the nick changes")

        # Messages go to everyone else, as "nick: text"; "//" escapes a leading slash.
        a.say("hello everyone")
        messages += 1
        for x in (b, c):
            x.expect("alice: hello everyone\n")
        b.say("//slash is not a command")
        messages += 1
        for x in (a, c):
            x.expect("bob: /slash is not a command\n")
        c.send("crlf line\r\n".encode())
        messages += 1
        for x in (a, b):
            x.expect("carol: crlf line\n")
        c.say("")  # an empty line: nothing
        c.say("   ")

        # Bad input: an error line for the sender, nothing for the others, and it goes on.
        errors = {
            "/bogus": "unknown command (try /nick NAME, /who, /quit, or //text)",
            "/": "unknown command (try /nick NAME, /who, /quit, or //text)",
            "/who me": "this command takes no arguments",
            "/quit now": "this command takes no arguments",
            "bell \x07 here": "control characters are not allowed",
            "nul \x00 byte": "control characters are not allowed",
            "x" * (MAX_LINE + 1): "line too long (at most 512 bytes)",
        }
        for line, reason in errors.items():
            a.say(line)
            a.expect(f"* error: {reason}\n")
        a.say("y" * MAX_LINE)  # exactly the limit: a message
        messages += 1
        for x in (b, c):
            x.expect("alice: " + "y" * MAX_LINE + "\n")
        # Many KB in one line: one error line, the rest of that line is skipped, then it goes on.
        a.send(b"z" * 20000 + b"\nstill here\n")
        a.expect("* error: line too long (at most 512 bytes)\n")
        messages += 1
        for x in (b, c):
            x.expect("alice: still here\n")
        check(barrier(a, b, c) == ["alice", "bob", "carol"], "who after the bad input")

        # A client that resets its connection, one that closes halfway through a line (the
        # half line is not sent), both announced as leaving.
        for how in ("reset", "half line"):
            d = SocketClient(srv.port, "D", read=False)  # no reader thread: close() closes at once
            connections += 1
            joined = [x.next() for x in (a, b, c)]
            check(len(set(joined)) == 1 and joined[0].endswith(" joined\n"), f"a fourth client: {joined!r}")
            d_nick = joined[0][2:-len(" joined\n")]
            if how == "reset":
                d.say("/nick dave")
                for x in (a, b, c):
                    x.expect(f"* {d_nick} is now dave\n")
                d.reset()
                for x in (a, b, c):
                    x.expect("* dave left\n")
            else:
                d.send(b"half a li")
                d.close()
                for x in (a, b, c):
                    x.expect(f"* {d_nick} left\n")
        check(barrier(a, b, c) == ["alice", "bob", "carol"], "who after the departures")
        check(srv.wait_fds(baseline + 3) == baseline + 3, "the departed clients' descriptors are closed")

        # A client that never reads, with a tiny receive buffer: while alice talks, its queue
        # fills and it is dropped; bob and carol get every line, and the drop notice once.
        s = SocketClient(srv.port, "S", rcvbuf=4096, read=False)
        connections += 1
        joined = [x.next() for x in (a, b, c)]
        check(len(set(joined)) == 1 and joined[0].startswith("* guest") and joined[0].endswith(" joined\n"),
              f"the join of a fifth client: {joined!r}")
        s_nick = joined[0][2:-len(" joined\n")]
        drop = f"* {s_nick} was dropped (not reading)\n"
        text = "flood " + "f" * 400
        sent, dropped_at = 0, {}
        while len(dropped_at) < 2:
            check(sent < 20000, "the client that does not read was never dropped")
            batch = QUEUE // 2  # fewer than a queue holds: bob and carol, who read, keep up
            a.send("".join(f"{text} {sent + i}\n" for i in range(batch)).encode())
            want = [f"alice: {text} {sent + i}\n" for i in range(batch)]
            sent += batch
            for x in (b, c):  # each gets the batch in order, maybe with the drop notice in it
                got = []
                while len(got) < len(want):
                    line = x.next()
                    if line == drop:
                        check(x.name not in dropped_at, f"{x.name}: the drop notice came twice")
                        dropped_at[x.name] = sent
                        continue
                    got.append(line)
                check(got == want, f"{x.name}: a line of the flood is missing or out of order")
        messages += sent
        a.expect(drop)  # the sender is told as well
        check(barrier(a, b, c) == ["alice", "bob", "carol"], "who after the drop")
        # The dropped client's socket was shut down: after what reached it, the end of the stream.
        s.sock.settimeout(LINE_TIMEOUT)
        got = b""
        while True:
            chunk = s.sock.recv(65536)
            if not chunk:
                break
            got += chunk
        check(got.startswith(b"* welcome "), "the dropped client got its welcome first")
        s.close()

        # /quit: a goodbye, then the end of the stream (socat exits on its own).
        b.say("/quit")
        b.expect("* bye\n")
        b.expect_eof()
        check(b.wait() == 0, "socat exit code after /quit")
        for x in (a, c):
            x.expect("* bob left\n")
        check(barrier(a, c) == ["alice", "carol"], "who after /quit")

        # nc's input ends (-N: a half-close): carol leaves, nc sees the end and exits.
        c.close_input()
        c.expect_eof()
        check(c.wait() == 0, "nc exit code after its input ended")
        a.expect("* carol left\n")
        a.close()
        n = srv.wait_fds(baseline)
        check(n == baseline, f"{n - baseline} descriptor(s) still open after every client left")

        # SIGINT with one client connected: it is told and closed; the exit is clean.
        e = SocketClient(srv.port, "E")
        connections += 1
        e.welcome(1)
        t0 = time.monotonic()
        rc, out = srv.stop(signal.SIGINT)
        check(rc == 0, f"exit code {rc} after SIGINT; stderr: {srv.stderr()!r}")
        e.expect("* server is shutting down\n")
        e.expect_eof()
        check(time.monotonic() - t0 < 5, "stopping took longer than the connections needed")
        check(out[0] == "got SIGINT, stopping", f"after SIGINT: {out!r}")
        want = f"chat: {connections} connections, {messages} messages, 1 dropped; 1 open at stop, all closed"
        check(out[-1] == want, f"summary {out[-1]!r}, want {want!r}")
        print(f"chat: {connections} connections, {messages} messages; {out[-1]}")
    finally:
        for x in clients:
            if isinstance(x, ProcessClient):
                x.kill()
        srv.kill()


def main():
    if not BIN:
        raise SystemExit(__doc__)
    try:
        run()
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("chat: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
