#!/usr/bin/env python3
"""Runs examples/sharded_echo against clients, a flood, and bad arguments.

    test_sharded_echo.py PATH/TO/sharded_echo

Checks:
- `--port 0 --threads 2 --host 127.0.0.1`: the first line says the port; 40 connections at
  once each get their own bytes back; SIGINT stops it with exit code 0, and the per-runtime
  lines count exactly the 40 connections, every runtime some of them;
- out of descriptors: with RLIMIT_NOFILE 64 and 100 clients it keeps running, serves the
  clients that waited once others close, and stops on SIGTERM with exit code 0, the idle
  connections it still holds cancelled after its 2 s and closed (no sanitizer report);
- arguments: --help and -h print the usage and exit 0; `0 -1` (a negative thread count), a
  port above 65535, more than 256 threads, malformed numbers, trailing garbage, a bad --host,
  unknown options, a missing value or an extra argument print a reason and the usage on
  stderr and exit 2; a port another socket holds is exit code 1 and a reason, not an abort;
- the positional form `sharded_echo 0 2` (with --host 127.0.0.1) still serves and stops on SIGINT with exit code 0.
Every run and every client has a deadline. Exits 1 on any failed check.
"""
import signal
import socket
import sys

from checks import check, run_all
from test_ctrl_c_server import (CLIENTS, check_arguments, check_closed, echoed, flood, no_leak_report, positional,
                                run, start, stderr_complete)

BIN = sys.argv[1] if len(sys.argv) > 1 else None
LOCAL = ["--threads", "2", "--host", "127.0.0.1"]
MANY = 40


def summary(out, threads):
    """The accepted counts of the per-runtime lines, and the last line."""
    counts = [int(l.split()[3]) for l in out if l.startswith("runtime ") and " accepted " in l]
    check(len(counts) == threads, "one line per runtime" + ("" if len(counts) == threads else f": {out!r}"))
    return counts, out[-1] if out else ""


def test_serves(binary):
    srv = start(binary, LOCAL)
    try:
        second = srv.line(10)
        check(second == "2 runtime(s)", "second line '2 runtime(s)'" + ("" if second == "2 runtime(s)" else
                                                                        f" (got {second!r})"))
        socks = {i: socket.create_connection(("127.0.0.1", srv.port), timeout=10) for i in range(MANY)}
        for i, s in socks.items():
            s.sendall(b"%04d" % i)
        got = echoed(socks, 20)
        check(len(got) == MANY, f"{len(got)} of {MANY} connections got their own bytes back")
        for s in socks.values():
            s.close()
        rc, out = srv.stop(signal.SIGINT)
        counts, last = summary(out, 2)
        check(rc == 0 and last == "all connections finished", f"SIGINT: exit code 0, all connections finished"
              + ("" if rc == 0 and last == "all connections finished" else f" (got {rc}, {out!r})"))
        check(sum(counts) == MANY and all(counts), f"the runtimes accepted {counts}: {MANY} in all, each some")
        no_leak_report(stderr_complete(srv), "serving")
    finally:
        srv.kill()


def test_out_of_descriptors(binary):
    srv, kept = flood(binary, LOCAL)
    try:
        if srv.proc.poll() is not None:
            return
        rc, out = srv.stop(signal.SIGTERM)
        counts, last = summary(out, 2)
        check(sum(counts) == CLIENTS + 1, f"the runtimes accepted {counts}: the {CLIENTS} clients and one more")
        ok = rc == 0 and last == "open connections were cancelled"
        check(ok, f"SIGTERM with {len(kept)} idle connections: exit code 0, open connections were cancelled" +
              ("" if ok else f" (got {rc}, {out!r})"))
        check_closed(kept, "after the 2 s grace")
        no_leak_report(stderr_complete(srv), "out of descriptors, then SIGTERM")
    finally:
        srv.kill()


def test_arguments(binary):
    bad = [["0", "-1"], ["99999"], ["-1"], ["abc"], ["80x"], [" 80"], ["+80"], [""], ["0", "257"], ["0", "100000"],
           ["0", "2x"], ["0", "2", "3"], ["--port"], ["--port", "65536"], ["--threads", "-1"], ["--host", "nowhere"],
           ["--host", "127.0.0.1:80"], ["--port", "0", "--port", "1"], ["--bogus"]]
    check_arguments(binary, "sharded_echo", bad)
    # A port held by a socket without SO_REUSEPORT: the listener cannot bind it.
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        r = run(binary, ["--port", str(port), "--threads", "1", "--host", "127.0.0.1"], timeout=10)
        ok = r.returncode == 1 and r.stderr.startswith("sharded_echo: ") and "terminate" not in r.stderr
        check(ok, "a port in use: exit code 1 and a reason on stderr" +
              (f": {r.stderr.strip()!r}" if ok else f" (got {r.returncode}, {r.stderr[-400:]!r})"))
    finally:
        holder.close()


def test_positional(binary):
    # (--host keeps it on the loopback interface; PORT and THREADS are positional)
    positional(binary, ["0", "2", "--host", "127.0.0.1"], "all connections finished")


def main():
    if not BIN:
        raise SystemExit(__doc__)
    return run_all([test_arguments, test_serves, test_positional, test_out_of_descriptors], BIN)


if __name__ == "__main__":
    sys.exit(main())
