#!/usr/bin/env python3
"""Runs one whole program of the docs (built from a ```cpp block by doc_snippets.py --programs)
the way its page says to, and exits 1 when it does not behave.

    run_doc_program.py PROGRAM KIND

KIND (the `run:` of the block's `<!-- snippet: program NAME run: KIND -->` comment):
    exit-0              runs in an empty temporary directory and exits 0 by itself (within 30 s);
    echo-server         `PROGRAM 0` prints "listening on port P" (flushed), echoes what three
                        clients send on 127.0.0.1:P, and is still running after; it has no
                        shutdown path, so the test then kills it (SIGKILL);
    echo-server-sigint  the same, then SIGINT (Ctrl-C) after the clients have closed: it exits 0;
    sigint              waits until the program blocks SIGINT (its main thread's SigBlk in
                        /proc), sends SIGINT, and it exits 0.
Every step has a deadline (a hang fails, it does not wait for ctest's timeout). The program
inherits the environment (RINGO_ENGINE=epoll, the sanitizers' options).
"""
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

START_TIMEOUT = 30  # s until the port is printed, or an exit-0 program ends (sanitizer builds are slow)
STEP_TIMEOUT = 10  # s for a reply, for the exit after SIGINT


def fail(what, proc=None, out=""):
    """Exits 1 with the reason and what the program printed."""
    print(f"FAIL: {what}")
    if proc is not None and proc.poll() is None:
        proc.kill()
    if proc is not None:
        rest, err = proc.communicate()
        print(f"exit status {proc.returncode}\nstdout:\n{out}{rest or ''}\nstderr:\n{err or ''}")
    sys.exit(1)


def run_exit_0(program):
    with tempfile.TemporaryDirectory() as tmp:
        try:
            r = subprocess.run([program], cwd=tmp, capture_output=True, text=True, timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"FAIL: still running after {START_TIMEOUT} s")
            sys.exit(1)
    print(r.stdout, end="")
    if r.returncode != 0:
        print(f"FAIL: exit status {r.returncode}, not 0\nstderr:\n{r.stderr}")
        sys.exit(1)


def start_server(program):
    """Starts `program 0`; returns (process, port) once it has printed its port."""
    proc = subprocess.Popen([program, "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The first line is read by a thread, so that a program that never prints it (or does
    # not flush it) fails at the deadline instead of blocking this script.
    first = queue.Queue()
    threading.Thread(target=lambda: first.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = first.get(timeout=START_TIMEOUT)
    except queue.Empty:
        fail(f"no 'listening on port P' line within {START_TIMEOUT} s (not printed, or not flushed)", proc)
    words = line.split()
    if not line.startswith("listening on port ") or len(words) != 4 or not words[3].isdigit():
        fail(f"the first line should be 'listening on port P', got {line!r}", proc)
    port = int(words[3])
    if not 0 < port < 65536:
        fail(f"port {port} printed", proc)
    return proc, port


def echo_check(proc, port):
    """Three clients, all connected at once (a pool spreads them over its runtimes), each sends
    a line and must get it back byte for byte; then they close."""
    clients = []
    for i in range(3):
        try:
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=STEP_TIMEOUT))
        except OSError as e:
            fail(f"client {i}: connect to 127.0.0.1:{port}: {e}", proc)
    for i, c in enumerate(clients):
        msg = f"hello from doc client {i}\n".encode()
        got = b""
        try:
            c.sendall(msg)
            while len(got) < len(msg):
                part = c.recv(len(msg) - len(got))
                if not part:
                    break
                got += part
        except OSError as e:
            fail(f"client {i}: sending or reading the reply: {e}", proc)
        if got != msg:
            fail(f"client {i}: sent {msg!r}, got back {got!r}", proc)
    for c in clients:
        c.close()
    if proc.poll() is not None:
        fail("the server ended while serving", proc)
    print(f"port {port}: 3 clients got their line back")


def signal_blocked(pid, sig):
    """Whether the process's main thread blocks `sig` (the SigBlk mask of /proc/PID/status)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("SigBlk:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def sigint_exits_0(proc, out=""):
    """Sends SIGINT; the program must exit 0 within the step deadline."""
    proc.send_signal(signal.SIGINT)
    try:
        rest, err = proc.communicate(timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(f"still running {STEP_TIMEOUT} s after SIGINT", proc, out)
    if proc.returncode != 0:
        print(f"FAIL: exit status {proc.returncode} after SIGINT, not 0\nstdout:\n{out}{rest}\nstderr:\n{err}")
        sys.exit(1)
    print(f"SIGINT: exit status 0\n{out}{rest}", end="")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    program, kind = sys.argv[1], sys.argv[2]
    if kind == "exit-0":
        run_exit_0(program)
    elif kind in ("echo-server", "echo-server-sigint"):
        proc, port = start_server(program)
        echo_check(proc, port)
        if kind == "echo-server":
            proc.kill()  # no shutdown path in this program: it serves until killed
            proc.wait()
            print("killed (the program has no shutdown path)")
        else:
            sigint_exits_0(proc)
    elif kind == "sigint":
        proc = subprocess.Popen([program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_TIMEOUT
        # Before it blocks SIGINT, the signal would end it by its default action.
        while not signal_blocked(proc.pid, signal.SIGINT):
            if proc.poll() is not None or time.monotonic() > deadline:
                fail(f"SIGINT not blocked within {START_TIMEOUT} s", proc)
            time.sleep(0.05)
        time.sleep(0.2)  # let it get to its wait (a signal sent earlier stays pending: same result)
        sigint_exits_0(proc)
    else:
        raise SystemExit(f"unknown run kind {kind!r}\n{__doc__}")


if __name__ == "__main__":
    main()
