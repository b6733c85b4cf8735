#!/usr/bin/env python3
"""Runs examples/ctrl_c_server against hostile clients and bad arguments.

    test_ctrl_c_server.py PATH/TO/ctrl_c_server

Checks:
- out of descriptors: started with RLIMIT_NOFILE 64 and flooded with 100 clients, the server
  keeps running (accept's EMFILE makes it wait, not exit), serves the clients that waited in
  the backlog once others close, and a new one; SIGINT then stops it with exit code 0, the
  idle connections it still holds cancelled after the grace period and closed, nothing on
  stderr about accept, and no LeakSanitizer report (sanitizer builds; where UBSan ends the
  program with its own false report while out of descriptors, the rest is skipped and says so:
  see ubsan_out_of_descriptors);
- arguments: --help and -h print the usage and exit 0; a port above 65535, negative or
  malformed numbers, trailing garbage, a huge grace period, unknown options, a missing value
  or an extra argument print a reason and the usage on stderr and exit 2 (never an abort,
  never a server on some other port);
- set-up failures (a port another socket holds, RLIMIT_NOFILE 4 or 5 so that the ring, the
  signalfd or the listening socket cannot be made, RINGO_ENGINE=epoll): exit code 1 and
  'ctrl_c_server: <reason>' on stderr, never an abort ('terminate called');
- both forms still work: `ctrl_c_server 0 200` (as tests/test_io_signal.cpp runs it) and
  `--port 0 --grace-ms 200`, each echoing and stopping with exit code 0 on a signal.

The other example scripts import the helpers below (flood, check_arguments, positional,
setup_failure ...) from here.
Every run and every client has a deadline. Exits 1 on any failed check.
"""
import contextlib
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time

from checks import check, run_all
from example_server import Server

BIN = sys.argv[1] if len(sys.argv) > 1 else None
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
NOFILE = 64      # the server's descriptor limit in the flood test
CLIENTS = 100    # more connections than that
KEEP = 5         # served connections left open (idle) when the signal comes
GRACE_MS = 300


@contextlib.contextmanager
def lowered_nofile(limit):
    """RLIMIT_NOFILE's soft limit at `limit` in this process for the duration, so that a server
    started meanwhile inherits it (Server starts the child itself); then back as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def start(binary, args):
    """Server(binary, args), whose child is killed when the constructor fails (a first line
    that is not 'listening on port P': Server raises then, and no one else holds the child)."""
    srv = Server.__new__(Server)
    try:
        Server.__init__(srv, binary, args)
    except BaseException:
        if hasattr(srv, "proc"):
            srv.kill()
        raise
    return srv


def ubsan_out_of_descriptors(err):
    """Whether `err` is UBSan's false report for a program out of descriptors: UBSan checks the
    object of a virtual call by reading its vtable through a pipe; with no descriptor left,
    pipe() fails, and UBSan reports the object as having an "invalid vptr" or as not pointing
    "to an object of type" it has, then ends the program (sanitizer builds only). Callers run
    the program with a descriptor limit too small to hold that pipe."""
    return SANITIZED and "runtime error: " in err and \
        ("invalid vptr" in err or "does not point to an object of type" in err)


def echoed(socks, timeout, quiet=None):
    """Each of `socks` ({index: socket}) has sent b"%04d" % index: the indices whose four bytes
    came back within `timeout` s (or before nothing more came for `quiet` s)."""
    sel = selectors.DefaultSelector()
    got = {}
    for i, s in socks.items():
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
        got[i] = b""
    done = set()
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while len(done) < len(socks) and time.monotonic() < deadline:
        if quiet is not None and time.monotonic() - last > quiet:
            break
        for key, _ in sel.select(timeout=0.1):
            last = time.monotonic()
            i = key.data
            try:
                chunk = key.fileobj.recv(4 - len(got[i]))
            except (BlockingIOError, ConnectionError):
                chunk = b""
            if not chunk:  # closed (or reset) by the server: never echoed
                sel.unregister(key.fileobj)
                continue
            got[i] += chunk
            if len(got[i]) == 4:
                sel.unregister(key.fileobj)
                if got[i] == b"%04d" % i:
                    done.add(i)
    sel.close()
    for s in socks.values():
        s.setblocking(True)
        s.settimeout(10)
    return done


def stderr_complete(srv, timeout=10):
    """The server's whole stderr, once its pipe has ended (a LeakSanitizer report comes last)."""
    deadline = time.monotonic() + timeout
    while None not in srv.err and time.monotonic() < deadline:
        time.sleep(0.05)
    return srv.stderr()


def flood(binary, args, nofile=NOFILE, clients=CLIENTS, keep=KEEP):
    """Starts `binary --port 0 args...` with RLIMIT_NOFILE `nofile`, connects `clients` (more
    than it may hold), and checks that it keeps running and serves every one of them as others
    close. Returns (server, the `keep` served connections left open) for the caller to stop."""
    with lowered_nofile(nofile):
        srv = start(binary, args)
    socks = {}
    for i in range(clients):  # the kernel completes them all: the backlog holds the unaccepted
        try:
            socks[i] = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        except OSError:  # the server is gone (checked below)
            break
    deadline = time.monotonic() + 10
    while srv.proc.poll() is None and srv.fds() < nofile - 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)  # a few rounds of the accept loop's back-off (10 ms doubling to 1 s)
    rc = srv.proc.poll()
    err = "" if rc is None else stderr_complete(srv, 2)
    if ubsan_out_of_descriptors(err):  # a virtual call while out of descriptors (error_code's
        # operator== with a std::errc is one): not the server's failure, nothing more to check here
        print(f"skip the rest: UBSan's false 'invalid vptr' report while out of descriptors: {err[:200]!r}")
        return srv, []
    if not check(rc is None, f"still running with {clients} clients and a limit of {nofile} descriptors" +
                 ("" if rc is None else f" (exit code {rc}, stderr {err[-300:]!r})")):
        return srv, []
    n = srv.fds()
    check(n <= nofile, f"the server holds {n} descriptors, its limit is {nofile}")
    for i, s in socks.items():
        s.sendall(b"%04d" % i)
    served = echoed(socks, 10, quiet=1)
    check(keep < len(served) < clients,
          f"{len(served)} of {clients} clients served while out of descriptors (want more than {keep}, not all)")
    kept = sorted(served)[:keep]
    for i in sorted(served)[keep:]:
        socks.pop(i).close()
    waiting = {i: s for i, s in socks.items() if i not in served}
    later = echoed(waiting, 20)
    check(len(later) == len(waiting), f"{len(later)} of the {len(waiting)} clients that waited in the backlog were "
                                      "served once others closed")
    for i in waiting:
        socks.pop(i).close()
    fresh = {9999: socket.create_connection(("127.0.0.1", srv.port), timeout=10)}
    fresh[9999].sendall(b"9999")
    check(echoed(fresh, 10) == {9999}, "a new client is served after the flood")
    fresh[9999].close()
    return srv, [socks[i] for i in kept]


def check_closed(socks, what):
    """Every one of `socks` reads the end of the stream (the server closed it); closes them."""
    closed = 0
    for s in socks:
        s.settimeout(10)
        try:
            closed += s.recv(1) == b""
        except ConnectionError:
            closed += 1
        except OSError:
            pass
        s.close()
    check(closed == len(socks), f"{what}: {closed} of {len(socks)} open connections closed by the server")


def no_leak_report(err, what):
    ok = "LeakSanitizer" not in err and "AddressSanitizer" not in err and "runtime error" not in err
    check(ok, f"{what}: no sanitizer report" + ("" if ok else f" (stderr {err[-2000:]!r})"))


def run(binary, args, timeout=5):
    """Runs `binary args...` to its end; a run past its deadline is killed and has status None."""
    try:
        return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return subprocess.CompletedProcess([binary, *args], None, out, "(still running: killed)")


def check_arguments(binary, name, bad, timeout=5):
    """--help and -h: the usage on stdout, status 0. Each argument list of `bad`: status 2, a
    line '<name>: <reason>' then the usage on stderr, nothing started (no abort, no hang)."""
    for args in (["--help"], ["-h"]):
        r = run(binary, args, timeout)
        ok = r.returncode == 0 and r.stdout.startswith("usage: ") and r.stderr == ""
        check(ok, f"{name} {' '.join(args)}: the usage on stdout, status 0" +
              ("" if ok else f" (got {r.returncode}, stdout {r.stdout[:80]!r}, stderr {r.stderr[:300]!r})"))
    for args in bad:
        r = run(binary, args, timeout)
        lines = r.stderr.splitlines()
        ok = (r.returncode == 2 and len(lines) >= 2 and lines[0].startswith(f"{name}: ") and
              lines[1].startswith("usage: ") and r.stdout == "")
        shown = " ".join(repr(a) if not a or " " in a else a for a in args)
        check(ok, f"{name} {shown}: " + (lines[0] if ok else f"status 2, a reason and the usage on stderr expected; "
                                         f"got {r.returncode}, stdout {r.stdout[:80]!r}, stderr {r.stderr[:300]!r}"))


@contextlib.contextmanager
def held_port():
    """A port on 127.0.0.1 that a listening socket without SO_REUSEPORT holds for the duration,
    so that a server cannot bind it (nor 0.0.0.0 on that port)."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]
    finally:
        holder.close()


def setup_failure(binary, name, args, nofile=None, env=None, words=(), timeout=20):
    """Runs `binary args...` to its end where it cannot be set up: with RLIMIT_NOFILE's soft
    limit at `nofile` (set in the child before exec; 4 leaves one descriptor beside stdin,
    stdout and stderr) and `env` added to its environment. Returns (ok, what): ok when it exits
    with status 1 without printing 'listening', the first line of its stderr is
    '<name>: <reason>' holding each of `words`, and nothing says 'terminate called' or reports
    a sanitizer error; ok is None when UBSan's false report for a program out of descriptors
    ended it (ubsan_out_of_descriptors), which says nothing about the program."""
    def lower():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    shown = " ".join([name, *args] + [f"{k}={v}" for k, v in (env or {}).items()])
    if nofile is not None:
        shown += f" (RLIMIT_NOFILE {nofile})"
    try:
        r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, preexec_fn=lower,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        return False, f"{shown}: still running after {timeout} s"
    if ubsan_out_of_descriptors(r.stderr):
        return None, f"{shown}: UBSan's false 'invalid vptr' report while out of descriptors"
    first = r.stderr.splitlines()[0] if r.stderr else ""
    clean = ("terminate called" not in r.stderr and "AddressSanitizer" not in r.stderr and
             "LeakSanitizer" not in r.stderr and "runtime error" not in r.stderr)
    ok = (r.returncode == 1 and "listening" not in r.stdout and first.startswith(f"{name}: ") and
          all(w in first for w in words) and clean)
    if ok:
        return True, f"{shown}: exit code 1, {first!r}"
    return False, (f"{shown}: exit code 1 and '{name}: <reason>' with {list(words)} on stderr expected; got "
                   f"{r.returncode}, stdout {r.stdout[-200:]!r}, stderr {r.stderr[-600:]!r}")


def check_setup_failure(*args, **kwargs):
    """setup_failure(...) as a counted check (a skip is printed, not counted)."""
    ok, what = setup_failure(*args, **kwargs)
    if ok is None:
        print("skip " + what)
        return True
    return check(ok, what)


def test_setup_failures(binary):
    """A port another socket holds; and too few descriptors: with 4 the signalfd cannot be
    made beside the ring (on the epoll engine, the ring itself), with RINGO_ENGINE=epoll the
    ring cannot, with 5 the listening socket cannot (on the epoll engine, the ring again)."""
    with held_port() as port:
        check_setup_failure(binary, "ctrl_c_server", [str(port)], words=("cannot listen", "in use"))
    for nofile, env in ((4, None), (4, {"RINGO_ENGINE": "epoll"}), (5, None)):
        check_setup_failure(binary, "ctrl_c_server", ["0"], nofile=nofile, env=env, words=("Too many open files",))


def test_out_of_descriptors(binary):
    srv, kept = flood(binary, ["--grace-ms", str(GRACE_MS)])
    try:
        if srv.proc.poll() is not None:
            return
        rc, out = srv.stop(signal.SIGINT)
        want = ["got SIGINT, stopping", f"{len(kept)} connection(s) still open after {GRACE_MS} ms: cancelled"]
        check(rc == 0 and out == want, f"SIGINT: exit code 0 and {want}" + ("" if rc == 0 and out == want else
                                                                          f" (got {rc}, {out!r})"))
        check_closed(kept, "after the grace period")
        err = stderr_complete(srv)
        check("accept" not in err, "nothing about accept on stderr" + ("" if "accept" not in err else f": {err!r}"))
        no_leak_report(err, "out of descriptors, then SIGINT")
    finally:
        srv.kill()


def test_arguments(binary):
    bad = [["99999"], ["65536"], ["-1"], ["abc"], ["80x"], [" 80"], ["+80"], [""], ["0", "-5"], ["0", "1e3"],
           ["0", "99999999999999999999"], ["0", "3600001"], ["0", "200", "7"], ["--port"], ["--port", "70000"],
           ["--grace-ms", "-1"], ["--port", "0", "--port", "1"], ["--bogus"], ["--help=x"]]
    check_arguments(binary, "ctrl_c_server", bad)


def serve_once(srv, sig, what):
    """One connection echoes, `sig` stops the server: exit code 0, that connection cancelled."""
    c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    c.sendall(b"ping")
    c.settimeout(10)
    check(c.recv(4) == b"ping", f"{what}: echo")
    rc, out = srv.stop(sig)
    want = [f"got {sig.name}, stopping", "1 connection(s) still open after 200 ms: cancelled"]
    check(rc == 0 and out == want, f"{what}: exit code 0 and {want} after {sig.name}" +
          ("" if rc == 0 and out == want else f" (got {rc}, {out!r})"))
    check_closed([c], what)
    no_leak_report(stderr_complete(srv), what)


def positional(binary, args, last):
    """`binary args...` (a form that Server, which puts --port first, cannot start): its first
    line says the port, one connection echoes, SIGINT ends it with exit code 0 and a last line
    that ends with `last`."""
    what = " ".join(args)
    p = subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()
        ok = first.startswith("listening on port ")
        check(ok, f"{what}: first line 'listening on port P'" + ("" if ok else f" (got {first!r})"))
        if ok:
            c = socket.create_connection(("127.0.0.1", int(first.split()[-1])), timeout=10)
            c.sendall(b"0000")
            check(echoed({0: c}, 10) == {0}, f"{what}: echo")
            c.close()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=15)
        ok = p.returncode == 0 and out.endswith(last + "\n")
        check(ok, f"{what}: SIGINT, exit code 0" + ("" if ok else f" (got {p.returncode}, {out!r}, {err[-300:]!r})"))
        no_leak_report(err, what)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: still running 15 s after SIGINT")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_both_forms(binary):
    srv = start(binary, ["--grace-ms", "200"])  # --port 0 --grace-ms 200
    try:
        serve_once(srv, signal.SIGTERM, "--port 0 --grace-ms 200")
    finally:
        srv.kill()
    positional(binary, ["0", "200"], ": all finished")


def main():
    if not BIN:
        raise SystemExit(__doc__)
    return run_all([test_arguments, test_setup_failures, test_both_forms, test_out_of_descriptors], BIN)


if __name__ == "__main__":
    sys.exit(main())
