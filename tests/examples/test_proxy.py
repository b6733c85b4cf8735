#!/usr/bin/env python3
"""Runs examples/proxy against real clients and upstreams: socat and nc as clients, a socat
`wc -c` server and small Python servers (an echo, a reset, a full accept queue) upstream.
(socat's own echo, `socat ... PIPE`, can block for good writing into its pipe while its
reader is slow, without any proxy in between: the echo upstream is Python's.)

    test_proxy.py PATH/TO/proxy

Checks: a large transfer both ways byte for byte (1 GiB in release builds, sha256 on both
ends), half-close in both directions, resets on either side closing both, refused and
timed-out upstreams closing the client promptly, idle sessions closed after --idle-timeout
(half-closed clients of a silent upstream among them), many concurrent connections, SIGINT and
SIGTERM ending the proxy with status 0 and a summary whose counts match what the clients did,
no descriptor left open in the proxy once the clients are gone, bad arguments (status 2
and the usage; --help status 0), and set-up failures (too few descriptors for a ring or the
signalfd, a port in use: status 1 and 'proxy: <reason>', no abort). Every wait has a deadline.
Exits 1 on any failed check. RINGO_SANITIZE (non-empty in sanitizer builds) scales sizes down.
"""
import hashlib
import os
import queue
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from checks import check, run_all
from test_ctrl_c_server import check_setup_failure, held_port

PROXY = sys.argv[1] if len(sys.argv) > 1 else "build/examples/proxy"
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
BIG = (64 << 20) if SANITIZED else (1 << 30)  # bytes each way through the proxy
MANY = 32 if SANITIZED else 100  # concurrent Python clients
SOCATS = 8 if SANITIZED else 20  # concurrent socat clients
MIB = 1 << 20

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def settle_fds(pid, target=None, deadline=5.0):
    """The proxy's descriptor count once it stops changing (or reaches `target`)."""
    end = time.monotonic() + deadline
    last = fd_count(pid)
    while time.monotonic() < end:
        time.sleep(0.1)
        now = fd_count(pid)
        if (target is None and now == last) or (target is not None and now == target):
            return now
        last = now
    return last


class Proxy:
    """A running proxy: its port, its output lines, and its stop."""

    def __init__(self, upstream, *extra):
        self.proc = subprocess.Popen([PROXY, "--listen-port", "0", "--upstream", upstream, "--threads", "2",
                                      "--verbose", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.out, self.err = [], []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.out, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err, None), daemon=True).start()
        try:
            first = self.lines.get(timeout=15)
        except queue.Empty:
            first = ""
        m = re.fullmatch(r"listening on port (\d+)", first.strip())
        if not check(m is not None, f"proxy to {upstream} prints 'listening on port <P>' first (got {first!r})"):
            self.proc.kill()
            raise RuntimeError("the proxy did not start")
        self.port = int(m.group(1))
        self.baseline = settle_fds(self.proc.pid)

    @staticmethod
    def _read(stream, into, q):
        for line in stream:
            into.append(line)
            if q is not None:
                q.put(line)

    def kill(self):
        """Ends the proxy if a failed check left it running."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def check_no_leak(self, what):
        now = settle_fds(self.proc.pid, self.baseline)
        check(now == self.baseline, f"{what}: the proxy holds {now} descriptors, as before the clients ({self.baseline})")

    def stop(self, sig=signal.SIGINT, deadline=15):
        """Sends `sig`; returns (exit status, summary dict)."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            check(False, f"the proxy ends within {deadline} s of {sig.name}")
        time.sleep(0.1)  # the reader threads take the last lines
        text = "".join(self.out)
        if self.err:  # --verbose: what went wrong with which connection, for the log
            print("proxy stderr:\n  " + "  ".join(self.err[-20:]), end="", flush=True)
        m = re.search(r"^summary: (.*)$", text, re.M)
        summary = {}
        if m:
            summary = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
        check(rc == 0, f"{sig.name}: the proxy exits with 0 (got {rc}; stderr {''.join(self.err)[-500:]!r})")
        check(f"stopped by {sig.name}" in text, f"{sig.name}: the proxy says it stopped by {sig.name}")
        check(bool(summary), f"{sig.name}: the proxy prints a summary line ({text[-300:]!r})")
        return rc, summary


def expect_summary(summary, **want):
    for k, v in want.items():
        check(summary.get(k) == v, f"summary {k}={v} (got {summary.get(k)})")


def start_socat_server(port, target):
    p = subprocess.Popen(["socat", "-t", "30", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,backlog=1024", target],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not check(wait_listening(port), f"socat upstream {target} listens on {port}"):
        p.kill()
        raise RuntimeError("the upstream did not start")
    return p


def client(cmd, data, timeout=10):
    """Runs a client program with `data` on its stdin; a run past the deadline is killed and
    yields status None and stdout b"(timed out)"."""
    try:
        return subprocess.run(cmd, input=data, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, None, b"(timed out)", b"")


def ends_soon(sock, deadline):
    """Whether `sock`'s peer ends the connection (EOF or reset) within `deadline` seconds."""
    sock.settimeout(deadline)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, TimeoutError):
        return False


def rst_close(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ---------------------------------------------------------------------------------------------
def big_transfer(port, total):
    """Streams `total` bytes (1 MiB blocks, each numbered) through socat to the echo upstream
    and back; returns whether what came back is byte for byte what went out."""
    cli = subprocess.Popen(["socat", "-t", "60", "-b", "131072", "-", f"TCP:127.0.0.1:{port}"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sent, got = hashlib.sha256(), hashlib.sha256()
    count = [0]
    block = bytearray(random.Random(7).randbytes(MIB))

    def writer():
        try:
            for i in range(total // MIB):
                block[0:8] = i.to_bytes(8, "little")
                cli.stdin.write(block)
                sent.update(block)
            cli.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    def reader():
        fd = cli.stdout.fileno()
        while True:
            b = os.read(fd, MIB)
            if not b:
                break
            got.update(b)
            count[0] += len(b)

    t0 = time.monotonic()
    threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=reader, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(1.0, 80 - (time.monotonic() - t0)))
    hung = any(t.is_alive() for t in threads)
    if hung:
        cli.kill()
    try:
        rc = cli.wait(timeout=10)
    except subprocess.TimeoutExpired:
        cli.kill()
        rc = cli.wait()
    secs = time.monotonic() - t0
    check(not hung, f"{total >> 20} MiB echoed through the proxy within 80 s ({secs:.1f} s)")
    check(rc == 0, f"the socat client of the large transfer exits with 0 (got {rc})")
    check(count[0] == total, f"{total} bytes came back (got {count[0]})")
    return check(sent.hexdigest() == got.hexdigest(), "what came back has the sha256 of what was sent")


def echo_clients(port, n, size):
    """`n` Python clients at once: each sends `size` random bytes, shuts its write half and reads
    the echo until the end. Returns the number that got exactly their bytes back."""
    barrier = threading.Barrier(n, timeout=20)
    ok = [0]
    lock = threading.Lock()

    def one(i):
        data = random.Random(i).randbytes(size)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
                barrier.wait()  # all connected before any sends
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                back = bytearray()
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    back += b
            if bytes(back) == data:
                with lock:
                    ok[0] += 1
        except (OSError, threading.BrokenBarrierError):
            pass

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=40)
    return ok[0]


def echo(c):
    """The echo upstream's connection: sends back what comes, then ends its side."""
    c.settimeout(60)
    with c:
        while True:
            b = c.recv(MIB)
            if not b:
                break
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)


def test_echo(tmp):
    """Echo upstream: the large transfer, nc, many concurrent clients, leaks, then SIGINT with
    an idle connection open."""
    upstream = PyServer(echo)
    proxy = Proxy(f"127.0.0.1:{upstream.port}", "--grace", "500")
    try:
        total_up = 0
        conns = 0
        big_transfer(proxy.port, BIG)
        total_up += BIG
        conns += 1

        r = client(["nc", "-N", "127.0.0.1", str(proxy.port)], b"hello through nc\n", 15)
        check(r.stdout == b"hello through nc\n", f"nc -N gets its line echoed (got {r.stdout!r})")
        total_up += 17
        conns += 1

        ok = echo_clients(proxy.port, MANY, 32 * 1024)
        check(ok == MANY, f"{MANY} concurrent Python clients each get their 32 KiB back (got {ok})")
        total_up += MANY * 32 * 1024
        conns += MANY

        # socat clients at once, each sending a file and reading the echo on its stdout.
        procs = []
        for i in range(SOCATS):
            data = random.Random(1000 + i).randbytes(64 * 1024)
            path = os.path.join(tmp, f"echo{i}")
            with open(path, "wb") as f:
                f.write(data)
            procs.append((data, subprocess.Popen(["socat", "-t", "10", f"OPEN:{path},rdonly!!STDOUT",
                                                  f"TCP:127.0.0.1:{proxy.port}"],
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        good = 0
        for data, p in procs:
            try:
                out, _ = p.communicate(timeout=30)
                good += out == data and p.returncode == 0
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
        check(good == SOCATS, f"{SOCATS} concurrent socat clients each get their 64 KiB back (got {good})")
        total_up += SOCATS * 64 * 1024
        conns += SOCATS

        proxy.check_no_leak("echo, after every client left")

        # An idle connection when the signal comes: cancelled after the grace period (500 ms).
        idle = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        idle.sendall(b"x")
        idle.settimeout(10)
        check(idle.recv(1) == b"x", "an idle client's byte is echoed")
        total_up += 1
        conns += 1
        t0 = time.monotonic()
        rc, summary = proxy.stop(signal.SIGINT)
        check(time.monotonic() - t0 < 5, "SIGINT: the proxy ends within 5 s with an idle connection open")
        check(ends_soon(idle, 5), "the idle client sees its connection end")
        idle.close()
        expect_summary(summary, connections=conns, client_to_upstream=total_up, upstream_to_client=total_up,
                       upstream_failures=0, resets=0, cancelled=1)
    finally:
        proxy.kill()
        upstream.close()


def test_half_close(tmp):
    """`wc -c` upstream: it answers only after the end of its input, so the client's
    shutdown(SHUT_WR) must reach it and the reply must still come back. The upstream is named
    `localhost` (net::resolve)."""
    up_port = free_port()
    upstream = start_socat_server(up_port, "SYSTEM:wc -c")
    proxy = Proxy(f"localhost:{up_port}")
    try:
        r = client(["socat", "-t", "5", "-", f"TCP:127.0.0.1:{proxy.port}"], b"hello", 10)
        check(r.stdout.strip() == b"5", f"socat: half-close reaches wc -c and its count comes back (got {r.stdout!r})")
        r = client(["nc", "-N", "127.0.0.1", str(proxy.port)], b"abc", 10)
        check(r.stdout.strip() == b"3", f"nc -N: half-close reaches wc -c and its count comes back (got {r.stdout!r})")
        size = 3 * MIB + 5
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as s:
            s.sendall(random.Random(3).randbytes(size))
            s.shutdown(socket.SHUT_WR)
            reply = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                reply += b
        check(reply.strip() == str(size).encode(), f"Python client: {size} bytes counted after its half-close "
              f"(got {reply!r})")
        proxy.check_no_leak("half-close")
        rc, summary = proxy.stop(signal.SIGTERM)
        expect_summary(summary, connections=3, client_to_upstream=5 + 3 + size, upstream_failures=0, resets=0)
        check(summary.get("upstream_to_client") == len(b"5\n3\n") + len(f"{size}\n"),
              f"summary upstream_to_client counts the replies (got {summary.get('upstream_to_client')})")
    finally:
        proxy.kill()
        upstream.kill()
        upstream.wait()


class PyServer:
    """A Python upstream running `handler(conn)` for each connection on its own thread."""

    def __init__(self, handler, backlog=1024, family=socket.AF_INET, host="127.0.0.1"):
        self.sock = socket.socket(family)
        self.sock.bind((host, 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.results = queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(c,), daemon=True).start()

    def _one(self, c):
        try:
            self.results.put(self.handler(c))
        except Exception as e:  # noqa: BLE001 - reported through the queue
            self.results.put(e)

    def close(self):
        self.sock.close()


def test_resets(tmp):
    """A reset on either side closes both sides."""
    def upstream(c):
        c.settimeout(10)
        first = c.recv(16)
        if first.startswith(b"reset-now"):  # reset at once, the client idle
            rst_close(c)
            return "reset"
        if first.startswith(b"stream"):  # reset in the middle of a transfer
            got = 0
            while got < 256 * 1024:
                b = c.recv(65536)
                if not b:
                    break
                got += len(b)
            rst_close(c)
            return "reset-mid"
        # "hold": wait for the client to go; report how the connection ended.
        try:
            while c.recv(65536):
                pass
            r = "eof"
        except ConnectionResetError:
            r = "reset-seen"
        except (socket.timeout, TimeoutError):
            r = "hung"
        c.close()
        return r

    srv = PyServer(upstream)
    proxy = Proxy(f"127.0.0.1:{srv.port}")
    try:
        # 1. the upstream resets while the client is idle: the client's connection ends, and the
        # proxy lets go of both sockets while the client still holds its own.
        a = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        a.sendall(b"reset-now")
        check(ends_soon(a, 5), "upstream reset with the client idle: the client's connection ends within 5 s")
        proxy.check_no_leak("upstream reset, the client still holding its socket")
        a.close()

        # 2. the upstream resets in the middle of a transfer from socat: socat ends.
        p = subprocess.Popen(["socat", "-u", "SYSTEM:printf stream; exec cat /dev/zero", f"TCP:127.0.0.1:{proxy.port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            p.wait(timeout=10)
            ended = True
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            ended = False
        check(ended, "upstream reset mid-transfer: the socat client's connection ends within 10 s")

        # 3. the client resets: the upstream sees its connection end (reset, not a clean end).
        c = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        c.sendall(b"hold")
        time.sleep(0.3)  # let the proxy connect and forward
        rst_close(c)
        outcome = [srv.results.get(timeout=10) for _ in range(3)]
        check(sorted(outcome) == ["reset", "reset-mid", "reset-seen"],
              f"a reset on either side is passed on as a reset (upstream saw {outcome})")

        proxy.check_no_leak("resets")
        rc, summary = proxy.stop(signal.SIGINT)
        expect_summary(summary, connections=3, upstream_failures=0, resets=3, cancelled=0)
    finally:
        proxy.kill()
        srv.close()


def test_unreachable_upstream(tmp):
    """A refused upstream and one that does not answer: the client is closed promptly."""
    # Refused: nothing listens on the port.
    proxy = Proxy(f"127.0.0.1:{free_port()}")
    try:
        slow = 0
        for i in range(5):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            t0 = time.monotonic()
            s.sendall(b"anyone?")
            ended = ends_soon(s, 5)
            slow += not ended or time.monotonic() - t0 > 2
            s.close()
        check(slow == 0, f"refused upstream: 5 clients closed within 2 s each ({slow} were not)")
        r = client(["socat", "-t", "1", "-", f"TCP:127.0.0.1:{proxy.port}"], b"x", 10)
        check(r.stdout == b"", "refused upstream: socat's connection ends with nothing received")
        proxy.check_no_leak("refused upstream")
        rc, summary = proxy.stop(signal.SIGINT)
        expect_summary(summary, connections=6, upstream_failures=6, client_to_upstream=0, upstream_to_client=0)
    finally:
        proxy.kill()

    # Timed out: a listener whose accept queue is full drops the proxy's SYNs.
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    port = full.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=5)  # fills the queue of one
    proxy = Proxy(f"127.0.0.1:{port}", "--connect-timeout", "300")
    try:
        times = []
        for i in range(3):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            t0 = time.monotonic()
            ended = ends_soon(s, 5)
            times.append(time.monotonic() - t0 if ended else 99)
            s.close()
        check(all(0.25 <= t < 2.5 for t in times),
              f"upstream that does not answer: clients closed after the 300 ms timeout ({[round(t, 2) for t in times]} s)")
        proxy.check_no_leak("timed-out upstream")
        rc, summary = proxy.stop(signal.SIGINT)
        expect_summary(summary, connections=3, upstream_failures=3)
    finally:
        proxy.kill()
        filler.close()
        full.close()


def test_ipv6_upstream(tmp):
    """An upstream given as a bracketed IPv6 address ([::1]:PORT), if this host has IPv6."""
    try:
        srv = PyServer(echo, family=socket.AF_INET6, host="::1")
    except OSError as e:
        print(f"skipped: no IPv6 loopback ({e})")
        return
    proxy = Proxy(f"[::1]:{srv.port}")
    try:
        r = client(["nc", "-N", "127.0.0.1", str(proxy.port)], b"over IPv6\n", 10)
        check(r.stdout == b"over IPv6\n", f"[::1] upstream: nc's line comes back (got {r.stdout!r})")
        proxy.check_no_leak("IPv6 upstream")
        rc, summary = proxy.stop(signal.SIGINT)
        expect_summary(summary, connections=1, client_to_upstream=10, upstream_to_client=10, upstream_failures=0)
    finally:
        proxy.kill()
        srv.close()


def test_idle_timeout(tmp):
    """--idle-timeout 1: a session in which no byte moves either way for a second is closed,
    both its sockets. 50 clients that half-close towards an upstream that never answers nor
    closes (from the hardening issue: 50 of them held 100 descriptors for good) and 10 that
    just wait are each closed after about a second, and the proxy holds no descriptor for them
    while they and the upstream still hold theirs; a session that moves a byte every 0.3 s
    lives on past the timeout, then is closed once it stops."""
    release = threading.Event()

    def upstream(c):
        c.settimeout(30)
        first = c.recv(16)
        if first.startswith(b"echo"):
            while first:
                c.sendall(first)
                first = c.recv(65536)
            c.close()
            return "echo"
        try:  # silent: reads to the end, answers nothing, keeps its socket until the test ends
            while c.recv(65536):
                pass
            r = "eof"
        except ConnectionResetError:
            r = "reset"
        except (socket.timeout, TimeoutError):
            r = "hung"
        release.wait(30)
        c.close()
        return r

    srv = PyServer(upstream)
    proxy = Proxy(f"127.0.0.1:{srv.port}", "--idle-timeout", "1")
    clients = []
    try:
        n_half, n_quiet = 50, 10
        started = []
        for i in range(n_half + n_quiet):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            s.sendall(b"silent")
            if i < n_half:
                s.shutdown(socket.SHUT_WR)
            clients.append(s)
            started.append(time.monotonic())
        held = settle_fds(proxy.proc.pid, proxy.baseline + 2 * len(clients), deadline=0.5)
        check(held == proxy.baseline + 2 * len(clients),
              f"while they wait, the proxy holds two descriptors per session "
              f"({held - proxy.baseline} for {len(clients)})")
        waited = []
        for s, t0 in zip(clients, started):
            waited.append(time.monotonic() - t0 if ends_soon(s, 8) else 99)
        slow = [round(w, 2) for w in waited if not 0.9 <= w < 5]
        check(not slow, f"{len(clients)} idle sessions closed 1 to 5 s after they went quiet "
              f"(took {min(waited):.2f} to {max(waited):.2f} s; out of range: {slow[:5]})")
        proxy.check_no_leak("idle sessions closed, their clients and the upstream still holding their sockets")
        for s in clients:
            s.close()
        clients = []
        release.set()
        outcome = [srv.results.get(timeout=10) for _ in range(n_half + n_quiet)]
        check(outcome.count("eof") == n_half + n_quiet, f"the upstream saw each idle session end with an end of "
              f"stream, not a reset ({sorted(set(outcome))})")

        # A byte every 0.3 s for 2.4 s: never idle for a second, so it lives on; then it stops.
        c = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        clients.append(c)
        c.sendall(b"echo")
        back = b""
        for i in range(8):
            while len(back) < 4 + i:
                b = c.recv(64)
                if not b:
                    break
                back += b
            time.sleep(0.3)
            c.sendall(b"x")
        while len(back) < 12:
            b = c.recv(64)
            if not b:
                break
            back += b
        check(back == b"echo" + b"x" * 8, f"a session that moves a byte every 0.3 s lives 2.4 s (got {back!r})")
        t0 = time.monotonic()
        ended = ends_soon(c, 8)
        check(ended and 0.9 <= time.monotonic() - t0 < 5, f"then, quiet, it is closed after about a second "
              f"({time.monotonic() - t0:.2f} s)")
        proxy.check_no_leak("idle timeout")
        rc, summary = proxy.stop(signal.SIGINT)
        expect_summary(summary, connections=n_half + n_quiet + 1, idle_timeouts=n_half + n_quiet + 1, resets=0,
                       cancelled=0, upstream_failures=0, client_to_upstream=6 * (n_half + n_quiet) + 12,
                       upstream_to_client=12)
    finally:
        release.set()
        for s in clients:
            s.close()
        proxy.kill()
        srv.close()


def test_bad_arguments(tmp):
    r = subprocess.run([PROXY], capture_output=True, timeout=10)
    check(r.returncode == 2 and b"usage" in r.stderr, f"no arguments: status 2 and the usage (got {r.returncode})")
    r = subprocess.run([PROXY, "--help"], capture_output=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith(b"usage: proxy ") and b"--idle-timeout" in r.stdout,
          f"--help: status 0 and the usage on stdout (got {r.returncode}, {r.stdout[:60]!r}, {r.stderr[:80]!r})")
    ok = "--listen-port", "0", "--upstream", "127.0.0.1:9"
    for bad in (("--idle-timeout", "abc"), ("--idle-timeout", "-1"), ("--idle-timeout", "31536001"),
                ("--idle-timeout", "18446744073709551617"), ("--idle-timeout", "1.5"), ("--idle-timeout", " 5"),
                ("--idle-timeout", "+5"), ("--idle-timeout",), ("--threads", "-1"), ("--threads", "+1"),
                ("--threads", "257"), ("--grace", " 5"),
                ("--listen-port", "65536"), ("--connect-timeout", "0"), ("--grace", "1e3"), ("--bogus", "1")):
        try:
            r = subprocess.run([PROXY, *ok, *bad], capture_output=True, timeout=5)
            good = r.returncode == 2 and r.stderr.startswith(b"proxy: ") and b"usage: proxy " in r.stderr
            got = f"{r.returncode}, {r.stderr[:80]!r}"
        except subprocess.TimeoutExpired:
            good, got = False, "still running after 5 s"
        check(good, f"{' '.join(bad)}: status 2, the reason and the usage (got {got})")
    r = subprocess.run([PROXY, "--listen-port", "0", "--upstream", "127.0.0.1"], capture_output=True, timeout=10)
    check(r.returncode == 2 and b"HOST:PORT" in r.stderr, f"an upstream without a port: status 2 (got {r.returncode})")
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = subprocess.run([PROXY, "--listen-port", str(port), "--upstream", "127.0.0.1:9"], capture_output=True,
                           timeout=10)
        check(r.returncode == 1 and b"cannot listen" in r.stderr and b"in use" in r.stderr,
              f"a port in use: status 1 and the error ({r.returncode}, {r.stderr!r})")


def test_setup_failures(tmp):
    """Too few descriptors: RLIMIT_NOFILE 4 leaves room for the main thread's ring but not its
    signalfd (on the epoll engine, not even the ring), RINGO_ENGINE=epoll not for the ring that
    resolves the upstream, 5 not for the pool's rings; and a port in use. Each: status 1,
    'proxy: <reason>' on stderr, never an abort ('terminate called')."""
    args = ["--listen-port", "0", "--upstream", "127.0.0.1:9", "--threads", "2"]
    for nofile, env in ((4, None), (4, {"RINGO_ENGINE": "epoll"}), (5, None)):
        check_setup_failure(PROXY, "proxy", args, nofile=nofile, env=env, words=("Too many open files",))
    with held_port() as port:
        check_setup_failure(PROXY, "proxy", ["--listen-port", str(port), "--listen-addr", "127.0.0.1", "--upstream",
                                             "127.0.0.1:9", "--threads", "2"], words=("cannot listen", "in use"))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        return run_all((test_bad_arguments, test_setup_failures, test_half_close, test_resets, test_unreachable_upstream,
                        test_ipv6_upstream, test_idle_timeout, test_echo), tmp)


if __name__ == "__main__":
    sys.exit(main())
