#!/usr/bin/env python3
"""Runs examples/ctrl_c_pool with good and bad arguments.

    test_ctrl_c_pool.py PATH/TO/ctrl_c_pool

Checks:
- arguments: --help and -h print the usage and exit 0; 0 threads, 100000 threads (above the
  cap of 256), negative or malformed numbers, trailing garbage, a huge grace period, unknown
  options, a missing value or an extra argument print a reason and the usage on stderr and
  exit 2 at once (no abort, no thousands of threads);
- a pool that cannot be set up (RLIMIT_NOFILE too low for its rings or its signalfd) is
  reported on stderr with exit code 1, without an abort and without waiting for its tasks;
- `ctrl_c_pool 2 200` (as tests/test_io_signal.cpp runs it) and `--threads 3 --grace-ms 100`
  stop on SIGINT / SIGTERM with exit code 0, their workers stopped when asked and the stuck
  task cancelled after the grace period.
Every run has a deadline. Exits 1 on any failed check.
"""
import resource
import signal
import subprocess
import sys
import time

from checks import check, run_all
from test_ctrl_c_server import check_arguments, no_leak_report, ubsan_out_of_descriptors

BIN = sys.argv[1] if len(sys.argv) > 1 else None


def test_arguments(binary):
    bad = [["0"], ["100000"], ["257"], ["-1"], ["abc"], ["2x"], [" 2"], ["+2"], [""], ["2", "-5"], ["2", "abc"],
           ["2", "99999999999999999999"], ["2", "3600001"], ["2", "200", "1"], ["--threads"], ["--threads", "0"],
           ["--grace-ms", "1e3"], ["--threads", "2", "--threads", "3"], ["--bogus"]]
    check_arguments(binary, "ctrl_c_pool", bad)


def test_cannot_set_up(binary):
    """With 4 descriptors the pool's second ring cannot be made; with 5 (on kernels where a
    runtime needs one descriptor) the pool starts and the main thread's signalfd cannot."""
    for nofile in (4, 5):
        def lower(n=nofile):
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        try:
            r = subprocess.run([binary, "2", "100"], capture_output=True, text=True, timeout=20, preexec_fn=lower)
        except subprocess.TimeoutExpired:
            check(False, f"RLIMIT_NOFILE {nofile}: still running after 20 s")
            continue
        if ubsan_out_of_descriptors(r.stderr):  # the exception's way out makes virtual calls
            print(f"skip RLIMIT_NOFILE {nofile}: UBSan's false 'invalid vptr' report while out of descriptors")
            continue
        ok = r.returncode == 1 and r.stderr.startswith("ctrl_c_pool: ") and "terminate" not in r.stderr
        check(ok, f"RLIMIT_NOFILE {nofile}: exit code 1 and a reason on stderr" +
              (f": {r.stderr.strip()!r}" if ok else f" (got {r.returncode}, {r.stderr[-400:]!r})"))


def stops(binary, args, sig, threads, grace_ms):
    p = subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()
        want = f"{2 * threads} workers on {threads} runtimes, press Ctrl-C\n"
        check(first == want, f"{' '.join(args)}: first line {want!r}" + ("" if first == want else f" (got {first!r})"))
        time.sleep(0.1)
        t0 = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=15)
        took = time.monotonic() - t0
        want = (f"got {sig.name}, shutting down\n"
                f"{2 * threads} workers stopped when asked, 1 task(s) cancelled after {grace_ms} ms\n")
        ok = p.returncode == 0 and out == want
        check(ok, f"{' '.join(args)}: {sig.name} gives exit code 0 and {want!r}" +
              ("" if ok else f" (got {p.returncode}, {out!r}, stderr {err[-400:]!r})"))
        check(took < 10, f"{' '.join(args)}: stopped {took:.1f} s after {sig.name}")
        no_leak_report(err, " ".join(args))
    except subprocess.TimeoutExpired:
        check(False, f"{' '.join(args)}: still running 15 s after {sig.name}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_stops(binary):
    stops(binary, ["2", "200"], signal.SIGINT, 2, 200)
    stops(binary, ["--threads", "3", "--grace-ms", "100"], signal.SIGTERM, 3, 100)


def main():
    if not BIN:
        raise SystemExit(__doc__)
    return run_all([test_arguments, test_cannot_set_up, test_stops], BIN)


if __name__ == "__main__":
    sys.exit(main())
