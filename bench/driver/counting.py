"""Untimed counting passes: system calls under strace, user-space instructions under callgrind.

Neither pass is part of a timed run. The strace pass runs a program once more under
`strace -f -c` (every thread and child process) for the rows whose programs cannot count their own
system calls (the Rust runtimes, Asio, fio): its totals, divided by the operations that straced run
reported, fill the syscalls-per-operation column, marked as counted by strace. The counts include
the program's set-up (a few hundred calls: mappings, thread creation), spread over its operations.

The callgrind pass runs a program at two operation counts under `valgrind --tool=callgrind` and
takes the slope: user-space instructions per operation, the same on every run, for micro
comparisons where wall time on a shared machine is noise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

# System calls that wait for events: how often a program enters the kernel to wait or reap.
WAIT_CALLS = ("io_uring_enter", "epoll_wait", "epoll_pwait", "epoll_pwait2", "io_getevents", "io_pgetevents",
              "poll", "ppoll", "select", "pselect6")


def have_strace() -> bool:
    return shutil.which("strace") is not None


def strace_prefix(out_path: str) -> list[str]:
    return [shutil.which("strace") or "strace", "-f", "-c", "-o", out_path]


def parse_strace_summary(text: str) -> dict[str, int]:
    """Calls per system call from `strace -c` output (the 'total' line left out)."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        t = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(t) < 5 or not re.fullmatch(r"[0-9.]+", t[0]) or t[-1] == "total":
            continue
        try:
            calls[t[-1]] = calls.get(t[-1], 0) + int(t[3])
        except ValueError:
            continue
    return calls


def strace_file() -> str:
    fd, path = tempfile.mkstemp(prefix="ringo-strace-", suffix=".txt")
    os.close(fd)
    return path


def read_strace(path: str) -> dict[str, int] | None:
    try:
        with open(path) as f:
            calls = parse_strace_summary(f.read())
    except OSError:
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    return calls or None


def have_callgrind() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_annotate") is not None


def _callgrind_total(argv: list[str], timeout: float) -> int | None:
    fd, out = tempfile.mkstemp(prefix="ringo-callgrind-")
    os.close(fd)
    try:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        if p.returncode != 0:
            return None
        a = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True, timeout=60)
        m = re.search(r"^\s*([0-9,]+)\s+.*PROGRAM TOTALS", a.stdout, re.M)
        return int(m.group(1).replace(",", "")) if m else None
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        try:
            os.unlink(out)
        except OSError:
            pass


def callgrind_per_op(argv_for, n_small: int, n_large: int, timeout: float = 300.0) -> float | None:
    """Instructions per operation: (total at n_large - total at n_small) / (n_large - n_small).
    `argv_for(n)` gives the command for n operations."""
    a = _callgrind_total(argv_for(n_small), timeout)
    b = _callgrind_total(argv_for(n_large), timeout)
    if a is None or b is None or n_large <= n_small:
        return None
    return (b - a) / (n_large - n_small)
