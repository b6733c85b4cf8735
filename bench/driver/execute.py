"""Running one benchmark command and turning its output into one result.

A run is ok only when the program exits 0, prints a JSON object line on stdout, that object says
"ok": true, and it reports no errors. Anything else is a failed run with a reason; a JSON line with
"unsupported": true (or an error text starting with "unsupported") is an unsupported run.
"""

from __future__ import annotations

import filecmp
import json
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Run:
    status: str                     # ok | failed | unsupported
    data: dict = field(default_factory=dict)
    error: str = ""
    wall: float = 0.0
    cmd: str = ""


def last_json_line(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


def classify(rc: int, stdout: str, stderr: str, cmd: str, wall: float) -> Run:
    data = last_json_line(stdout)
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    # The most telling stderr line: one that says error, else the last one.
    err_tail = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "")[:300]
    if data is None:
        why = f"exit {rc}, no JSON line" + (f": {err_tail}" if err_tail else "")
        return Run("failed", {}, why, wall, cmd)
    text = str(data.get("error", ""))
    if data.get("unsupported") is True or text.lower().startswith("unsupported"):
        return Run("unsupported", data, text or "unsupported", wall, cmd)
    if data.get("ok") is not True:
        return Run("failed", data, text or "ok is not true", wall, cmd)
    if data.get("errors"):
        return Run("failed", data, f"{data['errors']} errors reported", wall, cmd)
    if rc != 0:
        return Run("failed", data, f"exit status {rc}" + (f": {err_tail}" if err_tail else ""), wall, cmd)
    return Run("ok", data, "", wall, cmd)


def environment(extra: dict | None) -> dict | None:
    """The environment of a program whose row sets variables (registry.Impl.env): the driver's
    own plus those; None (inherit) when it sets none."""
    if not extra:
        return None
    env = dict(os.environ)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def env_text(env: dict | None) -> str:
    """`K=V ` for the command line shown in the results."""
    return "".join(f"{k}={shlex.quote(str(v))} " for k, v in (env or {}).items())


def check_expected(run: Run, expect: dict, where: str = "") -> Run:
    """Fails an ok run whose JSON (its `where` object, e.g. "server") does not report every field
    of `expect` with that value (registry.Impl.expect: a ringo row forced onto an engine must
    report that engine)."""
    if not expect or run.status != "ok":
        return run
    data = run.data.get(where) if where else run.data
    data = data if isinstance(data, dict) else {}
    for k, want in expect.items():
        got = data.get(k)
        if got != want:
            who = f"the {where}" if where else "the program"
            run.status = "failed"
            run.error = (f"{who} reports {k} {got!r}, the row asks for {want!r}" if got is not None
                         else f"{who} reports no {k} (the row asks for {want!r})")
            break
    return run


def run_command(argv: list[str], timeout: float, env: dict | None = None) -> Run:
    cmd = env_text(env) + shlex.join(argv)
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env=environment(env))
    except OSError as e:
        return Run("failed", {}, f"cannot start: {e}", 0.0, cmd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, err = p.communicate()
        return Run("failed", {}, f"timeout after {timeout:.0f} s", time.monotonic() - t0, cmd)
    return classify(p.returncode, out, err, cmd, time.monotonic() - t0)


def run_copy(argv: list[str], src: str, dst: str, timeout: float, name: str = "", env: dict | None = None) -> Run:
    """One run of a program that copies file `src` to `dst` and prints nothing we read (ringo's
    examples/copy, coreutils cp, dd): `dst` is removed first and the file systems synced (untimed);
    the run is timed from the program's start to its exit (no fsync: a buffered copy ends in the
    page cache), its CPU time (user + system) comes from wait4; then `dst` must hold `src` byte
    for byte, and is removed again (before its dirty pages are written back, so no writeback
    spills into the next run). The result has the fields of the other programs' JSON: bytes,
    seconds, cpu_seconds, and ops = MiB copied, so that the per-operation columns read per MiB."""
    cmd = env_text(env) + shlex.join(argv)

    def remove_dst() -> None:
        try:
            os.unlink(dst)
        except FileNotFoundError:
            pass
    remove_dst()
    os.sync()  # untimed: the file system's pending metadata (the last copy's removal) goes out first
    size = os.path.getsize(src)
    with tempfile.TemporaryFile() as errf:
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errf, start_new_session=True,
                                 env=environment(env))
        except OSError as e:
            return Run("failed", {}, f"cannot start: {e}", 0.0, cmd)
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            _kill_group(p)
        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:  # the driver is stopped (Ctrl-C, SIGTERM): no copy left running or behind
            _kill_group(p)
            os.waitpid(p.pid, 0)
            remove_dst()
            raise
        finally:
            timer.cancel()
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        err = errf.read().decode(errors="replace").strip().splitlines()
    tail = (err[-1] if err else "")[:300]
    if timed_out.is_set():
        remove_dst()
        return Run("failed", {}, f"timeout after {timeout:.0f} s", wall, cmd)
    data = {"bench": "copy", "impl": name, "bytes": size, "ops": size / (1 << 20), "seconds": wall,
            "cpu_seconds": ru.ru_utime + ru.ru_stime, "user_cpu_seconds": ru.ru_utime,
            "minflt": ru.ru_minflt, "errors": 0, "ok": True}
    try:
        same = p.returncode == 0 and filecmp.cmp(src, dst, shallow=False)
    except OSError as e:
        same, tail = False, f"cannot compare the copy: {e}"
    remove_dst()
    if p.returncode != 0:
        return Run("failed", {}, f"exit status {p.returncode}" + (f": {tail}" if tail else ""), wall, cmd)
    if not same:
        return Run("failed", {}, "the copy differs from the source" + (f" ({tail})" if tail else ""), wall, cmd)
    return Run("ok", data, "", wall, cmd)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_group(p: subprocess.Popen, sig: int, wait: float) -> bool:
    """Sends `sig` to the process group of `p` (a server under strace gets the signal itself, not
    only strace) and waits up to `wait` seconds, then kills the group. False when it was killed."""
    if p.poll() is not None:
        return True
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=wait)
        return True
    except subprocess.TimeoutExpired:
        _kill_group(p)
        p.wait()
        return False


# --------------------------------------------------------------------------- fio

FIO_RW = {"seqread": "read", "randread": "randread", "write": "write", "randwrite": "randwrite",
          "mixed": "rw", "randmixed": "randrw"}


def fio_argv(fio: str, settings: dict, p: dict) -> list[str]:
    mode = p["mode"]
    rw = FIO_RW[mode]
    if mode == "mixed" and p.get("pattern") == "rand":
        rw = "randrw"
    argv = [fio, "--name=ringo-bench", f"--filename={p['file']}", f"--rw={rw}", f"--bs={p['bs']}",
            f"--iodepth={p['qd']}", f"--direct={p.get('direct01', 0)}",
            f"--runtime={max(1, int(round(float(p['seconds']) * 1000)))}ms", "--time_based",
            f"--size={p['file_size']}",
            "--invalidate=0",        # the other programs read a warm page cache too
            "--randrepeat=1", "--lat_percentiles=1", "--group_reporting", "--output-format=json"]
    if rw in ("rw", "randrw"):
        argv.append("--rwmixread=80")
    for k, v in settings.items():
        argv.append(f"--{k}={v}")
    return argv


def fio_convert(out: dict, p: dict) -> dict:
    """fio's JSON (one job) in the fields every other program prints."""
    job = out["jobs"][0]
    r, w = job.get("read", {}), job.get("write", {})
    ops = int(r.get("total_ios", 0)) + int(w.get("total_ios", 0))
    nbytes = int(r.get("io_bytes", 0)) + int(w.get("io_bytes", 0))
    secs = max(int(r.get("runtime", 0)), int(w.get("runtime", 0))) / 1000.0

    def pct(d, q):
        v = d.get("lat_ns", {}).get("percentile", {}).get(q)
        return int(v) if v is not None else None

    main = r if r.get("total_ios") else w
    res = {
        "bench": p["mode"], "impl": "fio-" + str(job.get("job options", {}).get("ioengine", "?")),
        "variant": "direct" if p.get("direct01") else "buffered", "qd": p["qd"], "bs": p["bs"],
        "ops": ops, "reads": int(r.get("total_ios", 0)), "writes": int(w.get("total_ios", 0)),
        "bytes": nbytes, "seconds": secs,
        "cpu_seconds": (float(job.get("usr_cpu", 0)) + float(job.get("sys_cpu", 0))) / 100.0 * secs,
        "syscalls": None, "errors": int(job.get("error", 0)) + int(r.get("short_ios", 0)) + int(w.get("short_ios", 0)),
        "p50_ns": pct(main, "50.000000"), "p99_ns": pct(main, "99.000000"),
        "fio_version": out.get("fio version"),
    }
    if r.get("total_ios") and w.get("total_ios"):
        res.update(read_p50_ns=pct(r, "50.000000"), read_p99_ns=pct(r, "99.000000"),
                   write_p50_ns=pct(w, "50.000000"), write_p99_ns=pct(w, "99.000000"))
    res["ok"] = res["errors"] == 0 and ops > 0
    if not res["ok"]:
        res["error"] = f"fio error {job.get('error')}" if job.get("error") else "fio did no I/O"
    return res


def run_fio(fio: str, settings: dict, p: dict, timeout: float, prefix: list[str] | None = None,
            env: dict | None = None) -> Run:
    """`prefix` (taskset, strace) goes in front of fio's command."""
    argv = (prefix or []) + fio_argv(fio, settings, p)
    cmd = env_text(env) + shlex.join(argv)
    t0 = time.monotonic()
    try:
        cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                            env=environment(env))
    except subprocess.TimeoutExpired:
        return Run("failed", {}, f"fio timeout after {timeout:.0f} s", time.monotonic() - t0, cmd)
    wall = time.monotonic() - t0
    try:
        start = cp.stdout.index("{")
        out = json.loads(cp.stdout[start:])
        data = fio_convert(out, p)
    except (ValueError, KeyError, IndexError) as e:
        tail = (cp.stderr.strip().splitlines() or [""])[-1][:300]
        return Run("failed", {}, f"fio exit {cp.returncode}, unreadable output ({e}) {tail}", wall, cmd)
    if cp.returncode != 0 and data.get("ok"):
        data["ok"] = False
        data["error"] = f"fio exit status {cp.returncode}"
    return classify(0 if data.get("ok") else 1, json.dumps(data), cp.stderr, cmd, wall)


# --------------------------------------------------------------------------- server + client

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def run_server_client(server_argv: list[str], client_argv: list[str], port: int, timeout: float,
                      server_env: dict | None = None) -> Run:
    """Starts the server (with `server_env` added to its environment), waits until it accepts, runs
    the client; the client's JSON is the result. The server is stopped with SIGTERM (then SIGKILL);
    its own JSON line, if any, is kept as `server`."""
    cmd = env_text(server_env) + shlex.join(server_argv) + "  &&  " + shlex.join(client_argv)
    t0 = time.monotonic()
    try:
        srv = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, env=environment(server_env))
    except OSError as e:
        return Run("failed", {}, f"cannot start server: {e}", 0.0, cmd)
    try:
        if not _wait_listening(port, srv, 10.0):
            return Run("failed", {}, "server did not accept connections within 10 s", time.monotonic() - t0, cmd)
        run = run_command(client_argv, timeout)
        run.cmd = cmd
    finally:
        stop_group(srv, signal.SIGTERM, 5)
        sout = srv.stdout.read() if srv.stdout else ""
        if srv.stdout:
            srv.stdout.close()
        if srv.stderr:
            srv.stderr.close()
    sdata = last_json_line(sout)
    if sdata is not None:
        run.data = dict(run.data)
        run.data["server"] = sdata
        if run.status == "ok" and (sdata.get("ok") is False or sdata.get("errors")):
            run.status, run.error = "failed", f"server reported: {sdata.get('error') or 'errors'}"
    run.wall = time.monotonic() - t0
    return run
