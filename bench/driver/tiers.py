"""Storage tiers for the file figures, their test files and the shared random-offsets file.

Two tiers:
  loop  a loop device backed by a file in /dev/shm, formatted ext4 and mounted under bench/work/
        (the raw device is used if mkfs/mount fail). Created at start, removed at the end even on
        failure: the state is written to bench/work/loop-tier.state so that scripts/bench's EXIT
        trap (or the next run) can clean up after a killed driver.
  disk  a file under bench/work/ on whatever disk holds the checkout (the virtio disk here).

The loop device does each request's work in a kernel worker of an unbound workqueue, and Linux
places that worker on either CPU from one wake-up to the next. Measured on the 2-vCPU VM (psync,
4 KiB direct random reads, 0.3 s runs): about 81 k IOPS for every program when the worker runs on
the program's CPU, about 15 k when it runs on the other one (two cross-CPU wake-ups per I/O), and
left free it switches between the two in a way that depends on what the program did just before
(a program that parsed its offsets file just before timing got 15-24 k, fio, whose job idles before
its first I/O, 30-38 k; either one after 0.3 s asleep, 32-37 k). So while the loop tier's rows run,
the unbound workqueues may run only on the CPUs the programs are pinned to (`Tiers.pin_workers`).
The mask is global: writeback's workers are held there too. The old mask is saved in the state file
before it changes and comes back after those rows, when the tier goes, and after a killed run
(`cleanup_loop`, and scripts/bench's EXIT trap, which reads the same file).

Random offsets: one file of little-endian u64 byte offsets per (file size, block size), made from a
fixed seed with splitmix64, so every language reads exactly the same offsets:
    state = SEED; for each i: state += 0x9E3779B97F4A7C15; z = mix(state); offset = (z % nblocks) * bs
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field

SEED = 0x52494E474F  # "RINGO"
OFFSETS_COUNT = 1 << 20
MASK64 = (1 << 64) - 1
STATE_NAME = "loop-tier.state"


def splitmix64(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def offsets_file(workdir: str, file_size: int, bs: int, count: int = OFFSETS_COUNT) -> str:
    """Path of the offsets file for this size and block size, generated once and cached."""
    path = os.path.join(workdir, f"offsets-{file_size}-{bs}-{SEED:x}-{count}.bin")
    if os.path.exists(path) and os.path.getsize(path) == 8 * count:
        return path
    nblocks = file_size // bs
    if nblocks < 1:
        raise ValueError("file smaller than one block")
    state = SEED
    out = bytearray()
    pack = struct.Struct("<Q").pack
    for _ in range(count):
        state, z = splitmix64(state)
        out += pack((z % nblocks) * bs)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)
    return path


def write_test_file(path: str, size: int) -> None:
    """Writes `size` bytes of incompressible, non-zero data (a real allocation, not a sparse file)."""
    chunk = bytearray(os.urandom(1 << 20))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        left = size
        i = 0
        while left > 0:
            n = min(left, len(chunk))
            chunk[0:8] = struct.pack("<Q", i)  # every MiB differs
            f.write(chunk[:n])
            left -= n
            i += 1
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


@dataclass
class Tier:
    name: str                 # "loop" or "disk"
    available: bool
    description: str
    file: str | None = None   # test file path (or raw device)
    file_size: int = 0
    reason: str = ""          # why unavailable
    offsets: dict = field(default_factory=dict)  # bs -> offsets path

    def offsets_for(self, workdir: str, bs: int) -> str:
        if bs not in self.offsets:
            self.offsets[bs] = offsets_file(workdir, self.file_size, bs)
        return self.offsets[bs]


def _read_state(workdir: str) -> dict:
    st = {}
    try:
        with open(os.path.join(workdir, STATE_NAME)) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    st[k] = v
    except FileNotFoundError:
        pass
    return st


def _write_state(workdir: str, st: dict) -> None:
    with open(os.path.join(workdir, STATE_NAME), "w") as f:
        for k, v in st.items():
            f.write(f"{k}={v}\n")


WQ_CPUMASK = "/sys/devices/virtual/workqueue/cpumask"


def cpumask_text(cpus: list[int]) -> str:
    """The kernel's cpumask format: hex, in comma-separated groups of 32 CPUs, highest first."""
    bits = 0
    for c in cpus:
        bits |= 1 << c
    groups = []
    while True:
        groups.append(f"{bits & 0xFFFFFFFF:08x}")
        bits >>= 32
        if not bits:
            break
    return ",".join(reversed(groups))


def _write_cpumask(text: str) -> str:
    """Writes the unbound workqueues' cpumask; returns "" or why it could not."""
    try:
        with open(WQ_CPUMASK, "w") as f:
            f.write(text + "\n")
        return ""
    except OSError as e:
        return f"{WQ_CPUMASK}: {e.strerror or e}"


def cleanup_loop(workdir: str, log=print) -> None:
    """Unmounts, detaches and deletes whatever a previous loop tier left behind, and gives the
    unbound workqueues their old cpumask back (idempotent)."""
    st = _read_state(workdir)
    if not st:
        return
    mask_why = ""
    if st.get("wq_cpumask"):
        mask_why = _write_cpumask(st["wq_cpumask"])
        if mask_why:
            log(f"[tiers] could not restore the workqueue cpumask {st['wq_cpumask']}: {mask_why}")
    if st.get("mount") and os.path.ismount(st["mount"]):
        r = _run(["umount", st["mount"]])
        if r.returncode != 0:
            _run(["umount", "-l", st["mount"]])
    if st.get("mount"):
        try:
            os.rmdir(st["mount"])
        except OSError:
            pass
    if st.get("loop"):
        _run(["losetup", "-d", st["loop"]])
    if st.get("image"):
        try:
            os.unlink(st["image"])
        except FileNotFoundError:
            pass
    if mask_why:  # the old mask stays on record for the next clean-up to try again
        _write_state(workdir, {"wq_cpumask": st["wq_cpumask"]})
    else:
        os.unlink(os.path.join(workdir, STATE_NAME))
    log(f"[tiers] loop tier removed ({st.get('loop', '?')}, {st.get('image', '?')})")


class Tiers:
    """Creates the tiers a run needs and removes the loop tier again (use as a context manager)."""

    def __init__(self, workdir: str, file_size: int, log=print):
        self.workdir = workdir
        self.file_size = file_size
        self.log = log
        # The CPUs the programs run on, where pin_workers keeps the loop device's workers while
        # the loop tier's rows run (see the module's text). None: leave the workqueues alone.
        self.worker_cpus: list[int] | None = None
        self._pinned = False
        self.tiers: dict[str, Tier] = {}
        os.makedirs(workdir, exist_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        cleanup_loop(self.workdir, self.log)
        return False

    def pin_workers(self, on: bool) -> str:
        """Keeps the unbound workqueues on worker_cpus (on) or gives them back their old cpumask
        (off); idempotent, a no-op without worker_cpus or a loop tier. Returns "" or why it could
        not. The old mask goes into the loop tier's state file before the mask changes, and
        leaves it only once it is back."""
        if on == self._pinned or not self.worker_cpus:
            return ""
        st = _read_state(self.workdir)
        if not st:
            return "no loop tier"
        if on:
            try:
                with open(WQ_CPUMASK) as f:
                    old = f.read().strip()
            except OSError as e:
                return f"{WQ_CPUMASK}: {e.strerror or e}"
            if not old:
                return f"{WQ_CPUMASK} reads empty"
            st["wq_cpumask"] = old
            _write_state(self.workdir, st)
            why = _write_cpumask(cpumask_text(self.worker_cpus))
            if why:
                del st["wq_cpumask"]
                _write_state(self.workdir, st)
                return why
            self._pinned = True
            return ""
        why = _write_cpumask(st.get("wq_cpumask", ""))
        if why:
            self.log(f"[tiers] could not restore the workqueue cpumask {st.get('wq_cpumask')}: {why}")
            return why  # still on record: cleanup_loop tries again
        del st["wq_cpumask"]
        _write_state(self.workdir, st)
        self._pinned = False
        return ""

    def get(self, name: str) -> Tier:
        if name not in self.tiers:
            self.tiers[name] = self._make_loop() if name == "loop" else self._make_disk()
        return self.tiers[name]

    # ------------------------------------------------------------- disk

    def _make_disk(self) -> Tier:
        path = os.path.join(self.workdir, f"disk-testfile-{self.file_size}.bin")
        try:  # the copy figure's copy, left behind by a run that was killed outright
            os.unlink(os.path.join(self.workdir, "copy-dst.bin"))
        except FileNotFoundError:
            pass
        src = _run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", self.workdir]).stdout.strip() or "?"
        try:
            if not (os.path.exists(path) and os.path.getsize(path) == self.file_size):
                for old in os.listdir(self.workdir):  # one test file at a time on the disk
                    if old.startswith("disk-testfile-") and old != os.path.basename(path):
                        os.unlink(os.path.join(self.workdir, old))
                self.log(f"[tiers] writing disk test file {path} ({self.file_size >> 20} MiB)")
                write_test_file(path, self.file_size)
        except OSError as e:
            return Tier("disk", False, f"file on {src}", reason=f"cannot write test file: {e}")
        desc = f"file {os.path.relpath(path, os.path.dirname(os.path.dirname(self.workdir)))} on {src}"
        dev = src.split()[0] if src != "?" else ""
        base = os.path.basename(dev)
        sysq = f"/sys/block/{base}/queue"
        if base and os.path.isdir(sysq):
            try:
                sched = open(f"{sysq}/scheduler").read().strip()
                if "[" in sched:
                    sched = sched[sched.index("[") + 1:sched.index("]")]
                rot = open(f"{sysq}/rotational").read().strip()
                desc += f" (scheduler {sched}, rotational {rot})"
            except OSError:
                pass
        return Tier("disk", True, desc, file=path, file_size=self.file_size)

    # ------------------------------------------------------------- loop

    def _make_loop(self) -> Tier:
        cleanup_loop(self.workdir, self.log)  # leftovers of a killed run
        if shutil.which("losetup") is None:
            return Tier("loop", False, "loop device on /dev/shm", reason="losetup not installed")
        if not os.path.isdir("/dev/shm"):
            return Tier("loop", False, "loop device on /dev/shm", reason="/dev/shm missing")
        image = f"/dev/shm/ringo-bench-{os.getpid()}.img"
        # The test file, room for a copy of it (the copy figure), and ext4's metadata and journal: a
        # quarter extra plus 64 MiB. The image is sparse: check that tmpfs can hold it, or writes
        # would fail later as I/O errors.
        img_size = 2 * self.file_size + self.file_size // 4 + (64 << 20)
        vfs = os.statvfs("/dev/shm")
        if vfs.f_bavail * vfs.f_frsize < img_size:
            return Tier("loop", False, "loop device on /dev/shm",
                        reason=f"/dev/shm has {vfs.f_bavail * vfs.f_frsize >> 20} MiB free, "
                               f"the image needs {img_size >> 20} MiB")
        st = {"image": image}
        _write_state(self.workdir, st)
        try:
            with open(image, "wb") as f:
                f.truncate(img_size)
        except OSError as e:
            cleanup_loop(self.workdir, self.log)
            return Tier("loop", False, "loop device on /dev/shm", reason=f"cannot create {image}: {e}")
        r = _run(["losetup", "--find", "--show", image])
        if r.returncode != 0 or not r.stdout.strip():
            cleanup_loop(self.workdir, self.log)
            return Tier("loop", False, "loop device on /dev/shm",
                        reason=f"losetup failed: {(r.stderr or r.stdout).strip()}")
        loop = r.stdout.strip()
        st["loop"] = loop
        _write_state(self.workdir, st)
        mnt = os.path.join(self.workdir, "loopmnt")
        os.makedirs(mnt, exist_ok=True)
        st["mount"] = mnt
        _write_state(self.workdir, st)
        workers = "loop device's workers on any CPU"
        if self.worker_cpus:  # tried once here, so that the description says what the rows get;
            # after the last write of `st`, which would drop a mask pin_workers keeps on record
            cpus = ",".join(str(c) for c in self.worker_cpus)
            why = self.pin_workers(True) or self.pin_workers(False)
            if why:
                self.log(f"[tiers] cannot keep the loop device's workers on CPU {cpus}: {why}")
                workers += f" (could not pin them: {why})"
                self.worker_cpus = None
            else:
                workers = f"loop device's workers on CPU {cpus}, the programs' CPU, while its rows run"
        mk = _run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop]) \
            if shutil.which("mkfs.ext4") else None
        mounted = False
        if mk is not None and mk.returncode == 0:
            mo = _run(["mount", "-o", "noatime", loop, mnt])
            mounted = mo.returncode == 0
            why = "" if mounted else f"mount failed: {mo.stderr.strip()}"
        else:
            why = "mkfs.ext4 missing" if mk is None else f"mkfs.ext4 failed: {mk.stderr.strip()}"
        size_mib = img_size >> 20
        try:
            if mounted:
                path = os.path.join(mnt, "testfile.bin")
                self.log(f"[tiers] loop tier: {loop} ext4 on /dev/shm ({size_mib} MiB), "
                         f"writing {self.file_size >> 20} MiB test file")
                write_test_file(path, self.file_size)
                desc = (f"ext4 on {loop} backed by {image} ({size_mib} MiB image in tmpfs, loop direct-io off; "
                        f"{workers})")
                return Tier("loop", True, desc, file=path, file_size=self.file_size)
            self.log(f"[tiers] loop tier: {why}; using the raw device {loop}")
            with open(loop, "r+b") as f:
                chunk = os.urandom(1 << 20)
                for _ in range(self.file_size >> 20):
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            desc = f"raw {loop} backed by {image} ({size_mib} MiB in tmpfs; {why}; {workers})"
            return Tier("loop", True, desc, file=loop, file_size=self.file_size)
        except OSError as e:
            cleanup_loop(self.workdir, self.log)
            return Tier("loop", False, "loop device on /dev/shm", reason=f"cannot fill the loop tier: {e}")


if __name__ == "__main__":
    # `python3 tiers.py cleanup WORKDIR`: cleanup_loop by hand (scripts/bench's EXIT trap does
    # the same in shell, from the same state file).
    if len(sys.argv) == 3 and sys.argv[1] == "cleanup":
        cleanup_loop(sys.argv[2])
    else:
        print("usage: tiers.py cleanup WORKDIR", file=sys.stderr)
        sys.exit(2)
