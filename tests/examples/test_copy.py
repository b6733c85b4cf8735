#!/usr/bin/env python3
"""Runs examples/copy on real files and compares every copy with cmp.

    test_copy.py PATH/TO/copy

Checks: files of 0, 1, 4095, 4096, 1 MiB + 17 bytes and a large one (64 MiB in release
builds) copied with several --depth / --block-size settings and with --direct, each equal to
its source (cmp) with the source's permission bits; a longer destination emptied first; a
sparse source copied whole and still sparse; --verbose reporting the bytes on stderr (and
nothing printed without it); the errors (missing source, a directory or FIFO as source, a
destination in a missing directory or that is a directory, the same file twice, a full device,
bad arguments: a sign, spaces or trailing garbage in a number too, a K/M/G suffix on --depth)
with status 1 (2 for arguments), a message on stderr and no file left behind; a runtime that
cannot be set up (too few descriptors) with status 1 and 'copy: <reason>', not an abort;
--help and -h: the usage, status 0;
and the copy no slower than dd's sequential read/write loop. Every run has a deadline.
Exits 1 on any failed check. RINGO_SANITIZE (non-empty in sanitizer builds) scales sizes down.
"""
import os
import random
import stat
import subprocess
import sys
import tempfile
import time

from checks import check, run_all
from test_ctrl_c_server import check_setup_failure

COPY = sys.argv[1] if len(sys.argv) > 1 else "build/examples/copy"
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
MIB = 1 << 20
LARGE = (4 * MIB + 3) if SANITIZED else (64 * MIB)

def run(args, timeout=60):
    """Runs the copy program; a run past its deadline counts as a failure (status None)."""
    try:
        return subprocess.run([COPY, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([COPY, *args], None, "", "(timed out)")


def same(a, b):
    return subprocess.run(["cmp", "-s", a, b], timeout=60).returncode == 0


def make(path, size, mode, seed):
    rnd = random.Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MIB)
            f.write(rnd.randbytes(n))
            left -= n
    os.chmod(path, mode)


def copy_ok(src, dst, opts, what):
    r = run([src, dst, *opts])
    if not check(r.returncode == 0, f"{what}: status 0 (got {r.returncode}, stderr {r.stderr.strip()!r})"):
        return False
    check(r.stdout == "" and r.stderr == "", f"{what}: nothing printed without --verbose")
    check(same(src, dst), f"{what}: cmp finds the copy equal")
    sm, dm = os.stat(src).st_mode & 0o7777, os.stat(dst).st_mode & 0o7777
    check(sm == dm, f"{what}: mode {dm:o} is the source's {sm:o}")
    return True


def test_sizes(tmp):
    settings = [
        [],
        ["--depth", "1", "--block-size", "4096"],
        ["--depth", "3", "--block-size", "1000"],  # blocks that are not page multiples
        ["--depth", "16", "--block-size", "64K"],
        ["--direct"],
        ["--direct", "--depth", "4", "--block-size", "1M"],
    ]
    modes = [0o644, 0o600, 0o755, 0o440, 0o751, 0o604]
    sizes = [0, 1, 4095, 4096, MIB + 17]
    n = 0
    for size in sizes:
        src = os.path.join(tmp, f"src{size}")
        for i, opts in enumerate(settings):
            make(src, size, modes[(n + i) % len(modes)], seed=size * 31 + i)
            dst = os.path.join(tmp, f"dst{size}_{i}")
            copy_ok(src, dst, opts, f"{size} bytes {' '.join(opts) or '(defaults)'}")
        n += 1
    src = os.path.join(tmp, "large")
    make(src, LARGE, 0o640, seed=99)
    for i, opts in enumerate([[], ["--direct"], ["--depth", "32", "--block-size", "256K"]]):
        copy_ok(src, os.path.join(tmp, f"large_{i}"), opts, f"{LARGE} bytes {' '.join(opts) or '(defaults)'}")
        os.unlink(os.path.join(tmp, f"large_{i}"))

    # A destination that exists and is longer is emptied first.
    src = os.path.join(tmp, "short")
    make(src, 4095, 0o600, seed=5)
    dst = os.path.join(tmp, "long_before")
    make(dst, 3 * MIB, 0o777, seed=6)
    copy_ok(src, dst, [], "over a longer file")
    check(os.path.getsize(dst) == 4095, "over a longer file: the copy has the source's size")

    # --verbose: the byte count on stderr, nothing on stdout.
    r = run([src, os.path.join(tmp, "verbose"), "--verbose"])
    check(r.returncode == 0 and r.stdout == "" and "4095 bytes in" in r.stderr,
          f"--verbose: '4095 bytes in ...' on stderr only (got {r.stdout!r}, {r.stderr!r})")
    check("registered buffers" in r.stderr, "--verbose: the copy went through registered buffers")


def test_sparse(tmp):
    size = (16 if not SANITIZED else 4) * MIB + 123
    for opts in ([], ["--direct"]):
        src = os.path.join(tmp, "sparse")
        if os.path.exists(src):
            os.unlink(src)
        with open(src, "wb") as f:
            f.truncate(size)  # a hole to the end
            for off in (0, 3 * MIB + 5, size // 2):
                f.seek(off)
                f.write(b"data" * 1000)
        os.chmod(src, 0o640)
        dst = os.path.join(tmp, "sparse_copy")
        what = f"sparse {size} bytes {' '.join(opts) or '(defaults)'}"
        if copy_ok(src, dst, opts, what):
            check(os.path.getsize(dst) == size, f"{what}: the copy ends where the source does (a trailing hole)")
            used = os.stat(dst).st_blocks * 512
            check(used < MIB, f"{what}: the copy stays sparse ({used} bytes allocated)")
        os.unlink(dst)


def test_errors(tmp):
    src = os.path.join(tmp, "e_src")
    make(src, 10000, 0o644, seed=1)

    def fails(args, status, words, what, left=None):
        r = run(args, timeout=20)
        check(r.returncode == status, f"{what}: status {status} (got {r.returncode})")
        check(all(w in r.stderr for w in words), f"{what}: stderr says {words} (got {r.stderr.strip()!r})")
        if left is not None:
            check(not os.path.lexists(left), f"{what}: no {os.path.basename(left)} left behind")

    missing = os.path.join(tmp, "missing")
    out = os.path.join(tmp, "e_out")
    fails([missing, out], 1, ["No such file or directory", missing], "missing source", left=out)
    fails([tmp, out], 1, ["not a regular file", "directory"], "a directory as source", left=out)
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    fails([fifo, out], 1, ["not a regular file"], "a FIFO as source (no wait for a writer)", left=out)
    nodir = os.path.join(tmp, "no", "such", "dir", "x")
    fails([src, nodir], 1, ["No such file or directory", nodir], "destination in a missing directory",
          left=os.path.join(tmp, "no"))
    fails([src, tmp], 1, ["Is a directory"], "a directory as destination")
    before = open(src, "rb").read()
    fails([src, src], 1, ["same file"], "the same file twice")
    check(open(src, "rb").read() == before, "the same file twice: the file is unchanged")
    link = os.path.join(tmp, "e_link")
    os.symlink(src, link)
    fails([src, link], 1, ["same file"], "a link to the source as destination")
    check(open(src, "rb").read() == before, "a link to the source as destination: the source is unchanged")
    if os.path.exists("/dev/full"):
        mode = os.stat("/dev/full").st_mode
        fails([src, "/dev/full"], 1, ["No space left on device", "/dev/full"], "a full device as destination")
        check(os.stat("/dev/full").st_mode == mode and stat.S_ISCHR(mode), "/dev/full is left as it was")
    fails([], 2, ["usage"], "no arguments")
    fails([src], 2, ["usage"], "one path")
    fails([src, out, "--depth", "0"], 2, ["--depth"], "--depth 0", left=out)
    fails([src, out, "--block-size", "12Q"], 2, ["--block-size"], "--block-size 12Q", left=out)
    fails([src, out, "--direct", "--block-size", "1000"], 2, ["multiple of 4K"], "--direct with 1000-byte blocks",
          left=out)
    fails([src, out, "--bogus"], 2, ["unknown option"], "an unknown option", left=out)
    # No sign or spaces before the digits, nothing after; a count takes no K, M or G.
    for bad in (" 8", "+8", "-1", "8x", "", "1K", "8k", "1M"):
        fails([src, out, "--depth", bad], 2, ["--depth", "usage"], f"--depth {bad!r}", left=out)
    fails([src, out, "--block-size", " 4K"], 2, ["--block-size"], "--block-size ' 4K'", left=out)
    for h in ("--help", "-h"):
        r = run([h, src, out], timeout=20)
        check(r.returncode == 0 and r.stdout.startswith("usage: copy SRC DST") and r.stderr == "",
              f"{h}: the usage on stdout, status 0 (got {r.returncode})")
        check(not os.path.lexists(out), f"{h}: nothing copied")


def test_setup_failures(tmp):
    """Too few descriptors for the runtime (RLIMIT_NOFILE 4 and 5 on the epoll engine, which
    needs three; 4 on io_uring leaves none for the source): status 1 and 'copy: <reason>',
    never an abort ('terminate called'), nothing created."""
    src = os.path.join(tmp, "s_src")
    make(src, 4096, 0o644, seed=5)
    dst = os.path.join(tmp, "s_dst")
    for nofile, env in ((4, {"RINGO_ENGINE": "epoll"}), (5, {"RINGO_ENGINE": "epoll"}), (4, None)):
        check_setup_failure(COPY, "copy", [src, dst], nofile=nofile, env=env, words=("Too many open files",))
        check(not os.path.lexists(dst), f"RLIMIT_NOFILE {nofile}: nothing created")


def test_speed(tmp):
    """At least as fast as a sequential read/write loop (dd, 128 KiB at a time), best of 5."""
    if SANITIZED:
        return
    src = os.path.join(tmp, "speed")
    make(src, 64 * MIB, 0o644, seed=11)

    def best(cmd):
        times = []
        for i in range(5):
            dst = os.path.join(tmp, "speed_out")
            if os.path.exists(dst):
                os.unlink(dst)
            t0 = time.perf_counter()
            subprocess.run(cmd(dst), check=True, timeout=60, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
        return min(times)

    dd = best(lambda d: ["dd", f"if={src}", f"of={d}", "bs=128K", "status=none"])
    cp = best(lambda d: [COPY, src, d])
    check(cp <= dd * 1.5 + 0.02,
          f"64 MiB: copy {cp * 1000:.0f} ms, dd's read/write loop {dd * 1000:.0f} ms (best of 5; bar 1.5x + 20 ms)")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        old = os.umask(0o077)  # the mode must come from the source, not from the umask
        try:
            return run_all((test_sizes, test_sparse, test_errors, test_setup_failures, test_speed), tmp)
        finally:
            os.umask(old)


if __name__ == "__main__":
    sys.exit(main())
