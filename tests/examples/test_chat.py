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

Hostile clients, each with a server of its own: 300 clients (100 in sanitizer builds) that
send 300 /who each and read nothing (the server's RSS, /proc/<pid>/status, grows by less
than their queues' caps together and is back when they leave; an asker that then reads gets
all its answers); a flooder that sends as fast as its socket takes lines while a fast reader
reads and 1 000 clients connect and close (the flooder is slowed, nobody is dropped, the fast
reader gets every line in order). Bad arguments: status 2, the reason and the usage; --help:
the usage, status 0. Set-up failures (a port another socket holds, RLIMIT_NOFILE 4 or 5 so
that the ring, the signalfd or the listening socket cannot be made): status 1 and 'chat:
<reason>' on stderr, no abort. Each server is stopped with SIGINT and must exit with 0 (in sanitizer
builds that includes the leak check). RINGO_SANITIZE (non-empty in sanitizer builds) scales
the /who flood down and skips the RSS bounds (ASan keeps freed memory in quarantine).
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
from test_ctrl_c_server import held_port, setup_failure

BIN = sys.argv[1] if len(sys.argv) > 1 else None
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
LINE_TIMEOUT = 15 if SANITIZED else 5  # seconds to wait for one expected line
MIB = 1 << 20
MAX_LINE = 512  # chat::max_line
QUEUE = 16384  # --queue-bytes: bytes waiting for one client before it is dropped
DEFAULT_QUEUE = 65536  # chat's default --queue-bytes
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


def test_room():
    """Joins, nicks, messages, bad input, departures, a client that never reads, /quit, SIGINT."""
    srv = Server(BIN, ["--queue-bytes", str(QUEUE)])
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
            batch = 16  # 6.6 KB, under half a queue: bob and carol, who read, keep up
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


def stop_clean(srv, still_open):
    """SIGINT: status 0 (a sanitizer build's leak check included), nothing on stderr, a summary
    that counts `still_open` connections open at the stop and all of them closed."""
    rc, out = srv.stop(signal.SIGINT)
    check(rc == 0 and not srv.stderr(), f"exit code {rc} after SIGINT; stderr: {srv.stderr()[-2000:]!r}")
    check(out and out[-1].endswith(f"; {still_open} open at stop, all closed"), f"after SIGINT: {out[-2:]!r}")
    return out


def vm_rss(pid):
    """The resident memory of process `pid`, in bytes (VmRSS in /proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def test_who_flood():
    """Clients that each send 300 /who at once and read nothing (from the hardening issue:
    300 of them took the server to 78 MB, 1 000 to 374 MB, kept after they left). An answer
    waits in its asker's queue, and the asker's reader takes no more input while that queue is
    over half its cap: the server grows by less than the clients' caps together, gives it back
    when they leave, and an asker that starts reading still gets all its answers."""
    n = 100 if SANITIZED else 300
    each = 300
    srv = Server(BIN, [])
    socks = []
    try:
        time.sleep(0.2)
        base_fds = srv.fds()
        before = vm_rss(srv.proc.pid)
        for _ in range(n):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(LINE_TIMEOUT)
            s.connect(("127.0.0.1", srv.port))
            socks.append(s)
        check(srv.wait_fds(base_fds + n) == base_fds + n, f"{n} clients connected")
        time.sleep(0.5)  # their joins announced
        idle = vm_rss(srv.proc.pid)
        for s in socks:
            s.sendall(b"/who\n" * each)  # 1 500 bytes: the socket takes them at once
        peak = idle
        end = time.monotonic() + 3
        while time.monotonic() < end:
            peak = max(peak, vm_rss(srv.proc.pid))
            time.sleep(0.05)
        print(f"who flood: {n} clients x {each} /who: RSS {before / MIB:.1f} MiB before they came, "
              f"{idle / MIB:.1f} with them idle, peak {peak / MIB:.1f}", flush=True)
        bound = n * DEFAULT_QUEUE
        if not SANITIZED:  # (ASan's allocator keeps freed memory in quarantine)
            check(peak - idle <= bound, f"the /who flood took {(peak - idle) / MIB:.1f} MiB, "
                  f"more than {n} queues of {DEFAULT_QUEUE} bytes ({bound / MIB:.1f} MiB)")

        # The first asker reads now: every one of its answers comes (the server waited for it).
        first = socks[0]
        answers, buf = 0, b""
        while answers < each:
            try:
                chunk = first.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            lines = buf.split(b"\n")
            buf = lines.pop()
            answers += sum(line.startswith(b"* online (") for line in lines)
        check(answers == each, f"an asker that reads after {each} /who gets {each} answers (got {answers})")

        for s in socks:
            s.close()
        socks = []
        check(srv.wait_fds(base_fds) == base_fds, "every asker's descriptor is closed after it left")
        time.sleep(0.5)
        after = vm_rss(srv.proc.pid)
        print(f"who flood: RSS {after / MIB:.1f} MiB after they left")
        if not SANITIZED:
            check(after - idle <= 4 * MIB, f"after the askers left the server holds {(after - idle) / MIB:.1f} MiB "
                  "more than with them idle (at most 4 MiB)")
        stop_clean(srv, 0)
    finally:
        for s in socks:
            s.close()
        srv.kill()


def churn(port, n, failures):
    """`n` clients that connect and close at once, one after the other."""
    for _ in range(n):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=10).close()
        except OSError:
            failures.append(1)


def test_flooder():
    """A flooder that sends lines as fast as its socket takes them (and reads what comes to
    it), a fast reader, and 1 000 clients that connect and close meanwhile (from the hardening
    issue: the fast reader was dropped in every run and the flooder never slowed). The flooder
    is slowed to what the room delivers: it is never more than the sockets' buffers ahead of
    the fast reader, and nobody is dropped: the fast reader gets every line in order."""
    n_churn, seconds = 1000, 3
    lag_limit = (4 * MIB) // len(b"flood 1000000\n")  # lines: 4 MiB of socket buffers
    srv = Server(BIN, [])
    socks = []
    try:
        fast = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        socks.append(fast)
        got = {"next": 0, "bad": None, "eof": False, "notices": []}

        def read_fast():
            buf = b""
            while True:
                try:
                    chunk = fast.recv(1 << 18)
                except OSError:
                    chunk = b""
                if not chunk:
                    got["eof"] = True
                    return
                buf += chunk
                lines = buf.split(b"\n")
                buf = lines.pop()
                for line in lines:
                    head, sep, number = line.partition(b": flood ")
                    if sep and not head.startswith(b"*"):
                        if int(number) != got["next"] and got["bad"] is None:
                            got["bad"] = (got["next"], line)
                        got["next"] = int(number) + 1
                    elif not line.endswith((b" joined", b" left")):
                        got["notices"].append(line.decode(errors="replace"))

        threading.Thread(target=read_fast, daemon=True).start()
        flooder = socket.socket()
        flooder.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32768)
        flooder.settimeout(30)
        flooder.connect(("127.0.0.1", srv.port))
        socks.append(flooder)
        heard = {"eof": False, "notices": []}

        def read_flooder():
            buf = b""
            while True:
                try:
                    chunk = flooder.recv(65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    heard["eof"] = True
                    return
                buf += chunk
                lines = buf.split(b"\n")
                buf = lines.pop()
                heard["notices"] += [l.decode(errors="replace") for l in lines
                                     if not l.endswith((b" joined", b" left"))]

        threading.Thread(target=read_flooder, daemon=True).start()
        time.sleep(0.2)

        failed = []
        churner = threading.Thread(target=churn, args=(srv.port, n_churn, failed), daemon=True)
        sent, lag, flooder_error = 0, 0, None
        t0 = time.monotonic()
        churner.start()
        while time.monotonic() - t0 < seconds:
            try:
                flooder.sendall(b"".join(b"flood %d\n" % i for i in range(sent, sent + 1000)))
            except OSError as e:
                flooder_error = e
                break
            sent += 1000
            lag = max(lag, sent - got["next"])
        secs = time.monotonic() - t0
        churner.join(timeout=60)
        check(not failed and not churner.is_alive(), f"{n_churn} clients connected and closed ({len(failed)} failed)")
        end = time.monotonic() + 30
        while got["next"] < sent and not got["eof"] and time.monotonic() < end:
            time.sleep(0.05)
        check(not got["eof"], f"the fast reader was not dropped (it had {got['next']} of {sent} lines)")
        check(got["bad"] is None, f"the fast reader got the flood in order (first gap: {got['bad']})")
        check(got["next"] == sent, f"the fast reader got all {sent} lines (got {got['next']})")
        check(flooder_error is None, f"the flooder's sends went on (got {flooder_error!r})")
        print(f"flooder: {sent} lines in {secs:.1f} s while {n_churn} clients came and went; "
              f"at most {lag} lines ahead of the fast reader")
        check(lag <= lag_limit, f"the flooder was slowed: at most {lag_limit} lines ahead of the fast reader "
              f"(was {lag} ahead)")
        fast.sendall(b"/who\n")
        end = time.monotonic() + LINE_TIMEOUT
        while not any(l.startswith("* online (") for l in got["notices"]) and time.monotonic() < end:
            time.sleep(0.05)
        who = [l for l in got["notices"] if l.startswith("* online (")]
        check(who and who[0].startswith("* online (2): "), f"both are still in the room: {who}")
        dropped = [l for l in got["notices"] + heard["notices"] if "dropped" in l]
        check(not dropped and not heard["eof"], f"nobody was dropped ({dropped}, flooder's end: {heard['eof']})")
        out = stop_clean(srv, 2)
        check(", 0 dropped;" in out[-1], f"the summary counts no drop: {out[-1]!r}")
    finally:
        for s in socks:
            s.close()
        srv.kill()


def test_bad_arguments():
    """--help: the usage on stdout, status 0. A bad argument: what is wrong and the usage on
    stderr, status 2, nothing started (no number wraps: 2^64 + 1 is out of range, not 1)."""
    try:
        r = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=5)
        ok = r.returncode == 0 and r.stdout.startswith("usage: chat ") and "--queue-bytes" in r.stdout
    except subprocess.TimeoutExpired:
        ok, r = False, None
    bad = [] if ok else [f"--help: {r and (r.returncode, r.stdout, r.stderr)}"]
    wrong = (["--port", "abc"], ["--port", "65536"], ["--port", "-1"], ["--port", " 80"], ["--port", "0x50"],
             ["--port", "18446744073709551617"], ["--port", ""], ["--queue-bytes", "0"], ["--queue-bytes", "1023"],
             ["--queue-bytes", "1073741825"], ["--queue-bytes", "18446744073709552640"], ["--queue-bytes", "64k"],
             ["--host", "localhost"], ["--host", "1.2.3.4.5"], ["--port"], ["--queue-bytes"], ["--bogus"],
             ["7001"], ["--queue", "64"])
    for args in wrong:
        try:
            r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=5)
            if not (r.returncode == 2 and r.stderr.startswith("chat: ") and "usage: chat " in r.stderr):
                bad.append(f"{args}: status {r.returncode}, stderr {r.stderr!r}")
        except subprocess.TimeoutExpired:
            bad.append(f"{args}: still running after 5 s (taken as valid)")
    check(not bad, "bad arguments: " + "; ".join(bad))
    print(f"bad arguments: --help and {len(wrong)} wrong ones as they should be")


def test_setup_failures():
    """A port another socket holds, and too few descriptors (RLIMIT_NOFILE 4: the signalfd
    cannot be made beside the ring, or on the epoll engine the ring itself; RINGO_ENGINE=epoll:
    the ring; 5: the listening socket, or the ring again): exit code 1 and 'chat: <reason>' on
    stderr, never an abort ('terminate called')."""
    results = []
    with held_port() as port:
        results.append(setup_failure(BIN, "chat", ["--port", str(port)], words=("cannot listen", "in use")))
    for nofile, env in ((4, None), (4, {"RINGO_ENGINE": "epoll"}), (5, None)):
        results.append(setup_failure(BIN, "chat", ["--port", "0"], nofile=nofile, env=env,
                                     words=("Too many open files",)))
    for ok, what in results:
        print(("skip " if ok is None else "ok   " if ok else "FAIL ") + what, flush=True)
    bad = [what for ok, what in results if ok is False]
    check(not bad, "set-up failures: " + "; ".join(bad))


def main():
    if not BIN:
        raise SystemExit(__doc__)
    failed = []
    t0 = time.monotonic()
    for test in (test_bad_arguments, test_setup_failures, test_room, test_who_flood, test_flooder):
        print(f"== {test.__name__}", flush=True)
        try:
            test()
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr, flush=True)
            failed.append(test.__name__)
    print(f"({time.monotonic() - t0:.1f} s)")
    if failed:
        print(f"chat: failed: {', '.join(failed)}")
        return 1
    print("chat: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
