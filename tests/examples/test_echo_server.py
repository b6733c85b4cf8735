#!/usr/bin/env python3
"""Runs examples/echo_server against real clients, with one runtime and with --threads 2.

    test_echo_server.py PATH/TO/echo_server

For each mode: several MB of random bytes through socat (twice at once), text through nc,
200 concurrent connections from Python (all open at the same time, each checking its own
bytes), a client that sends without reading (the others must still be served meanwhile)
and then resets its connection; then every connection's descriptor must be gone from
/proc/<pid>/fd, SIGINT must stop the server with exit code 0, and its summary line must
count exactly the connections and bytes the clients made. Then, with one runtime: out of
descriptors (RLIMIT_NOFILE 64, 100 clients) it keeps serving, and the clients that waited are
served once others close; and the arguments: --help and -h print the usage and exit 0, bad
ones (a port above 65535, 0 or 257 threads, a negative or malformed number, a bad --host,
an unknown option, a missing value) a reason and the usage on stderr with exit code 2; and
set-up failures (a port in use, RLIMIT_NOFILE 4) exit code 1 with 'echo_server: <reason>'.
Exits non-zero on any mismatch.
"""
import hashlib
import os
import random
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

import checks
from example_server import Failure, Server, check
from test_ctrl_c_server import (CLIENTS, check_arguments, check_closed, check_setup_failure, flood, held_port,
                                no_leak_report, stderr_complete)

BIN = sys.argv[1] if len(sys.argv) > 1 else None
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
SOCAT_BYTES = (1 if SANITIZED else 6) * 1024 * 1024
NC_LINES = 2000 if SANITIZED else 20000
MANY = 200
MANY_BYTES = 4 * 1024 if SANITIZED else 32 * 1024
STEP_TIMEOUT = 60  # seconds for any one step; a hang fails instead of blocking


def through_socat(port, data_path, out_path):
    """Starts socat sending the file and writing what comes back; returns the process."""
    # -t: how long socat waits for the echo's end once its input is sent; shut-down: a
    # half-close after the input (the server then echoes the rest and closes).
    return subprocess.Popen(["socat", "-t", "30", "-T", "30", "-", f"TCP:127.0.0.1:{port},shut-down"],
                            stdin=open(data_path, "rb"), stdout=open(out_path, "wb"), stderr=subprocess.PIPE)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest(), os.path.getsize(path)


def test_socat(srv, tmp):
    """Two socat clients at once, each SOCAT_BYTES of random bytes, compared byte for byte."""
    procs = []
    for i in range(2):
        src = os.path.join(tmp, f"in{i}.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(SOCAT_BYTES))
        dst = os.path.join(tmp, f"out{i}.bin")
        procs.append((through_socat(srv.port, src, dst), src, dst))
    for p, src, dst in procs:
        try:
            p.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Failure("socat did not finish")
        check(p.returncode == 0, f"socat exited {p.returncode}: {p.stderr.read()!r}")
        check(digest(src) == digest(dst), f"socat: {dst} differs from {src} ({digest(dst)[1]} bytes back)")
    return 2, 2 * SOCAT_BYTES


def test_nc(srv):
    """Lines of text through nc (-N: half-close at the end of its input)."""
    text = "".join(f"line {i} {'x' * (i % 97)}\n" for i in range(NC_LINES)).encode()
    r = subprocess.run(["nc", "-N", "-w", "30", "127.0.0.1", str(srv.port)], input=text, capture_output=True,
                       timeout=STEP_TIMEOUT)
    check(r.returncode == 0, f"nc exited {r.returncode}: {r.stderr!r}")
    check(r.stdout == text, f"nc: got {len(r.stdout)} bytes back, sent {len(text)}")
    return 1, len(text)


def test_many(srv, baseline):
    """MANY connections open at once, each sending MANY_BYTES of its own and checking them."""
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(MANY):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.setblocking(False)
        data = random.randbytes(MANY_BYTES)
        c = {"sock": s, "data": data, "sent": 0, "got": bytearray(), "eof": False}
        conns.append(c)
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    # Every one of them is accepted and open in the server at the same time.
    n = srv.wait_fds(baseline + MANY)
    check(n == baseline + MANY, f"{MANY} connections open: the server holds {n} descriptors, want {baseline + MANY}")
    deadline = time.monotonic() + STEP_TIMEOUT
    open_conns = MANY
    while open_conns:
        check(time.monotonic() < deadline, f"{open_conns} of {MANY} connections unfinished")
        for key, ev in sel.select(timeout=1):
            c = key.data
            s = c["sock"]
            if ev & selectors.EVENT_WRITE and c["sent"] < MANY_BYTES:
                try:
                    c["sent"] += s.send(c["data"][c["sent"]:c["sent"] + 16384])
                except BlockingIOError:
                    pass
                if c["sent"] == MANY_BYTES:
                    s.shutdown(socket.SHUT_WR)
                    sel.modify(s, selectors.EVENT_READ, c)
            if ev & selectors.EVENT_READ:
                chunk = s.recv(65536)
                if chunk:
                    c["got"] += chunk
                    check(len(c["got"]) <= MANY_BYTES, "more bytes came back than were sent")
                else:  # the server closed after echoing everything
                    check(c["sent"] == MANY_BYTES, "the server closed before the client was done")
                    c["eof"] = True
                    sel.unregister(s)
                    s.close()
                    open_conns -= 1
    for i, c in enumerate(conns):
        check(bytes(c["got"]) == c["data"], f"connection {i}: {len(c['got'])} bytes back, not its own bytes")
    return MANY, MANY * MANY_BYTES


def test_hog(srv):
    """A client that sends without reading: once its socket and the server's are full, the
    server must still echo another client promptly; then the hog resets its connection."""
    hog = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    hog.setblocking(False)
    block = os.urandom(65536)
    pushed, idle_since = 0, time.monotonic()
    while time.monotonic() - idle_since < 0.5:  # until nothing more goes for half a second
        check(pushed < 512 * 1024 * 1024, "the server takes everything without echoing it")
        try:
            pushed += hog.send(block)
            idle_since = time.monotonic()
        except BlockingIOError:
            time.sleep(0.02)
    # Another client, meanwhile: the hog must not hold every buffer of the ring.
    probe = os.urandom(256 * 1024)
    r = subprocess.run(["nc", "-N", "-w", "10", "127.0.0.1", str(srv.port)], input=probe, capture_output=True,
                       timeout=20)
    check(r.stdout == probe, f"while a client does not read, another got {len(r.stdout)} of {len(probe)} bytes back")
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    hog.close()  # a reset, with bytes unread on both sides
    return 2, len(probe)  # the hog's echoed bytes are unknown: counted separately


def run_mode(threads):
    args = [] if threads == 1 else ["--threads", str(threads)]
    srv = Server(BIN, args)
    try:
        time.sleep(0.2)
        baseline = srv.fds()
        conns, nbytes = 0, 0
        with tempfile.TemporaryDirectory() as tmp:
            for step in (lambda: test_socat(srv, tmp), lambda: test_nc(srv), lambda: test_many(srv, baseline)):
                c, b = step()
                conns += c
                nbytes += b
        c, b = test_hog(srv)
        conns += c
        # Every connection is over: only the descriptors the server started with remain.
        n = srv.wait_fds(baseline)
        check(n == baseline, f"{n - baseline} descriptor(s) still open after every client left")
        rc, out = srv.stop(signal.SIGINT)
        check(rc == 0, f"exit code {rc} after SIGINT; stderr: {srv.stderr()!r}")
        check(out and out[0] == "got SIGINT, stopping", f"after SIGINT: {out!r}")
        last = out[-1].split()
        # "echoed B bytes over C connections on R runtime(s); O open at stop, K cancelled"
        check(len(last) >= 11 and last[0] == "echoed", f"last line: {out[-1]!r}")
        check(int(last[4]) == conns, f"summary counts {last[4]} connections, the clients made {conns}")
        check(int(last[1]) >= nbytes + b, f"summary counts {last[1]} bytes, the clients got {nbytes + b} back")
        check(int(last[7]) == threads, f"summary names {last[7]} runtimes, want {threads}")
        check(last[9] == "0" and last[-2] == "0", f"connections open at the stop: {out[-1]!r}")
        per_runtime = [l for l in out if l.startswith("runtime ")]
        check(len(per_runtime) == threads, f"one line per runtime expected: {out!r}")
        if threads > 1:
            busy = sum(1 for l in per_runtime if int(l.split()[2]) > 0)
            check(busy == threads, f"the kernel gave every runtime's socket connections: {per_runtime!r}")
        print(f"threads={threads}: {conns} connections, {nbytes + b} bytes checked; {out[-1]}")
    finally:
        srv.kill()


def test_stop_with_open_connection():
    """SIGTERM with a connection open: the server closes it (the client reads the end of the
    stream) after its grace period and still exits 0."""
    srv = Server(BIN, [])
    try:
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        c.sendall(b"ping")
        check(c.recv(4) == b"ping", "no echo")
        t0 = time.monotonic()
        rc, out = srv.stop(signal.SIGTERM)
        check(rc == 0, f"exit code {rc} after SIGTERM with a connection open")
        check(out[-1].endswith("1 open at stop, 1 cancelled"), f"last line: {out[-1]!r}")
        check(c.recv(1) == b"", "the open connection was not closed by the stop")
        check(time.monotonic() - t0 < 10, "the stop took too long")
    finally:
        srv.kill()


def test_out_of_descriptors():
    """More clients than descriptors: the server waits instead of failing, and serves them all
    as others close (test_ctrl_c_server.flood); SIGINT then cancels the idle ones it holds."""
    srv, kept = flood(BIN, [])
    try:
        if srv.proc.poll() is not None:
            return
        rc, out = srv.stop(signal.SIGINT)
        check(rc == 0, f"out of descriptors: exit code {rc} after SIGINT")
        want = f"{CLIENTS + 1} connections on 1 runtime(s); {len(kept)} open at stop, {len(kept)} cancelled"
        check(out and out[-1].endswith(want), f"out of descriptors: last line should end with {want!r}: {out!r}")
        check_closed(kept, "out of descriptors, after the grace period")
        no_leak_report(stderr_complete(srv), "out of descriptors, then SIGINT")
    finally:
        srv.kill()


def test_arguments():
    bad = [["--port", "65536"], ["--port", "-1"], ["--port", " 80"], ["--port", "80x"], ["--port", ""],
           ["--threads", "0"], ["--threads", "257"], ["--threads", "+2"], ["--host", "nowhere"], ["--port"],
           ["--bogus"], ["7000"]]
    check_arguments(BIN, "echo_server", bad)


def test_setup_failures():
    """A port another socket holds, and RLIMIT_NOFILE 4 (no room for the signalfd beside the
    ring, or for the pool's second ring; on the epoll engine, for the ring): exit code 1 and
    'echo_server: <reason>' on stderr, never an abort."""
    for threads in ("1", "2"):
        with held_port() as port:
            check_setup_failure(BIN, "echo_server", ["--port", str(port), "--threads", threads],
                                words=("cannot listen", "in use"))
        check_setup_failure(BIN, "echo_server", ["--port", "0", "--threads", threads], nofile=4,
                            words=("Too many open files",))


def main():
    if not BIN:
        raise SystemExit(__doc__)
    try:
        run_mode(1)
        run_mode(2)
        test_stop_with_open_connection()
        test_out_of_descriptors()
        test_arguments()
        test_setup_failures()
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    if checks.finish():  # the checks of flood() and check_arguments() are counted, not raised
        return 1
    print("echo_server: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
