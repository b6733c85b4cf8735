"""How busy the machine is: waiting for a quiet machine before a figure, and measuring how much
CPU other processes took while it ran.

Before a figure the driver samples /proc/stat once a second (the driver itself sleeps meanwhile,
so what it sees is other work) and starts when two samples in a row are under the threshold, or
when the bounded wait is over. While a figure runs the benchmarks themselves keep the CPUs busy,
so the other load is estimated from user time only: the user time of every CPU (/proc/stat)
minus the user time of the driver and of the programs it ran and waited for (os.times()).
Kernel threads that work for the benchmarks (the loop device's workers, softirq) run in system
time and are not mistaken for other load; another process's system time is not seen either.
"""

from __future__ import annotations

import os
import time

HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def _stat() -> tuple[int, int, int]:
    """(user + nice, busy, total) jiffies summed over every CPU."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (8 - len(v))
    user = v[0] + v[1]
    idle = v[3] + v[4]
    total = sum(v[:8])  # guest time is already inside user
    return user, total - idle, total


def busy_fraction(seconds: float = 1.0) -> float:
    """Fraction of all CPUs busy over the next `seconds` (0..1)."""
    a = _stat()
    time.sleep(seconds)
    b = _stat()
    dt = b[2] - a[2]
    return (b[1] - a[1]) / dt if dt > 0 else 0.0


def wait_quiet(max_wait: float, threshold: float, log) -> tuple[bool, float, float]:
    """Waits until two 1-second samples in a row find the CPUs less than `threshold` busy, at most
    `max_wait` seconds. Returns (quiet, seconds waited, the last sample)."""
    t0 = time.monotonic()
    calm = 0
    next_log = t0 + 10
    while True:
        busy = busy_fraction(1.0)
        calm = calm + 1 if busy < threshold else 0
        waited = time.monotonic() - t0
        if calm >= 2:
            return True, waited, busy
        if waited >= max_wait:
            return False, waited, busy
        if time.monotonic() >= next_log:
            log(f"[load] waiting for a quiet machine: {busy * 100:.0f} % of {NCPU} CPUs busy "
                f"(load average {os.getloadavg()[0]:.2f}), waited {waited:.0f} of {max_wait:.0f} s")
            next_log += 10


class OtherLoad:
    """Measures the user-mode CPU that processes other than the driver and its benchmark programs
    took between start() and stop(), as a fraction of all CPUs over that time."""

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.u0 = _stat()[0]
        t = os.times()
        self.own0 = t.user + t.children_user

    def stop(self) -> float:
        wall = time.monotonic() - self.t0
        user = (_stat()[0] - self.u0) / HZ
        t = os.times()
        own = t.user + t.children_user - self.own0
        if wall <= 0:
            return 0.0
        return max(0.0, user - own) / (wall * NCPU)
