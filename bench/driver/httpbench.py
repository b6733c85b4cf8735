"""The http figure: a web server pinned to one CPU, wrk pinned to the other.

Per figure run a temporary folder holds the served files (a 4 KiB and a 1 MiB file of random
bytes) and, per nginx run, its generated configuration. Per run: the server starts, one GET of
the run's URL checks its answer (status 200, the expected bytes), the server's CPU time is read,
wrk runs, the CPU time is read again, and the server is stopped with SIGINT. The result is one
dict in the fields every other program prints (ops = wrk's requests, p50_ns/p99_ns, errors, the
server's CPU time over wrk's run in server.cpu_ns).
"""

from __future__ import annotations

import http.client
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

from .execute import Run, _wait_listening, env_text, environment, stop_group

# The in-memory answer: the same bytes from both servers (no whitespace: command templates are
# split on it).
TEXT = "hello-from-bench!"
FILES = {"/4k.bin": 4096, "/1m.bin": 1 << 20}
# Open descriptors wanted for wrk and the servers at 1 000 connections (the driver raises its own
# soft limit, which the programs it starts inherit).
NOFILE = 65536


# --------------------------------------------------------------------------- the served folder

class Docroot:
    """The temporary folder of one figure run: doc/ (the served files) and one nginx prefix per run."""

    def __init__(self, parent: str | None = None):
        if parent:
            os.makedirs(parent, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="ringo-http-", dir=parent)
        self.doc = os.path.join(self.dir, "doc")
        os.mkdir(self.doc)
        self.content = {"/mem": TEXT.encode()}
        for path, size in FILES.items():
            data = os.urandom(size)
            with open(os.path.join(self.doc, path.lstrip("/")), "wb") as f:
                f.write(data)
            self.content[path] = data
        self.runs = 0

    def nginx_prefix(self, port: int) -> tuple[str, str]:
        """A fresh nginx prefix with its configuration for `port`; returns (prefix, conf path)."""
        self.runs += 1
        prefix = os.path.join(self.dir, f"nginx-{self.runs}")
        os.mkdir(prefix)
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(prefix, port, self.doc, TEXT))
        return prefix, conf

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def nginx_conf(prefix: str, port: int, root: str, text: str) -> str:
    """One process that is its own worker (no master, no daemon: its CPU time is the server's),
    no access log, sendfile, keep-alive without a request limit, the in-memory answer at /mem."""
    return f"""\
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile {NOFILE};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{
    worker_connections 8192;
}}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    default_type application/octet-stream;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {root};
        location = /mem {{
            return 200 "{text}";
        }}
    }}
}}
"""


def raise_nofile(want: int = NOFILE) -> int:
    """Raises this process's soft RLIMIT_NOFILE towards `want` (at most the hard limit); the
    programs it starts inherit it. Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


# --------------------------------------------------------------------------- wrk's output

_UNITS_NS = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
_TIME = r"([0-9.]+)\s*(us|µs|ms|ns|s|m|h)"


def time_ns(value: str, unit: str) -> float:
    return float(value) * _UNITS_NS[unit]


def parse_wrk(text: str) -> dict:
    """wrk --latency's report in the driver's fields. Raises ValueError when the totals are missing.

    errors = non-2xx/3xx responses + socket errors (connect, read, write, timeout); wrk prints
    either line only when its count is not zero."""
    m = re.search(r"^\s*(\d+) requests in " + _TIME, text, re.M)
    if not m:
        raise ValueError("no 'N requests in T' line in wrk's output")
    requests = int(m.group(1))
    seconds = time_ns(m.group(2), m.group(3)) / 1e9
    rps = re.search(r"^Requests/sec:\s*([0-9.]+)", text, re.M)
    if not rps:
        raise ValueError("no 'Requests/sec:' line in wrk's output")
    out = {"ops": requests, "requests": requests, "seconds": seconds, "requests_per_s": float(rps.group(1))}
    for q, key in (("50", "p50_ns"), ("99", "p99_ns")):
        pm = re.search(rf"^\s*{q}(?:\.0+)?%\s+{_TIME}", text, re.M)
        out[key] = time_ns(pm.group(1), pm.group(2)) if pm else None
    non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["non_2xx"] = int(non2xx.group(1)) if non2xx else 0
    out["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"), map(int, sock.groups()))) if sock else {}
    out["errors"] = out["non_2xx"] + sum(out["socket_errors"].values())
    rd = re.search(r"requests in [^,]+,\s*([0-9.]+)\s*([KMGT]?B) read", text)
    if rd:
        out["bytes"] = int(float(rd.group(1)) * {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30,
                                                  "TB": 1 << 40}[rd.group(2)])
    return out


# --------------------------------------------------------------------------- the server's CPU time

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> dict:
    """The CPU time of process `pid` so far: `tasks` maps each live thread (io-wq workers
    included: they are tasks of the process) to its time on the CPU in ns (schedstat's first
    field); `stat_ns` is utime + stime of the whole process from /proc/PID/stat (clock ticks,
    threads that have exited included)."""
    tasks = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                tasks[int(tid)] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3): utime and stime are fields 14 and 15
    stat_ns = (int(fields[11]) + int(fields[12])) * TICK_NS
    return {"tasks": tasks, "stat_ns": stat_ns}


def cpu_between(before: dict, after: dict) -> tuple[float, str]:
    """The process's CPU time between two process_cpu() readings, in ns, and where it comes
    from. The per-thread sum is exact while no thread that ran before has ended (a thread
    started in between counts whole); otherwise the process's own utime + stime (clock ticks)."""
    if set(before["tasks"]) <= set(after["tasks"]) and after["tasks"]:
        return float(sum(after["tasks"].values()) - sum(before["tasks"].values())), "schedstat"
    return float(after["stat_ns"] - before["stat_ns"]), "stat"


def cpu_per_request_ns(cpu_ns: float | None, requests: int | None) -> float | None:
    """Server CPU ns per request: None when either is unknown, negative, or there were no requests."""
    if cpu_ns is None or cpu_ns < 0 or not requests or requests <= 0:
        return None
    return cpu_ns / requests


# --------------------------------------------------------------------------- one run

def check_answer(port: int, path: str, want: bytes, timeout: float = 10.0) -> str:
    """One GET of `path`: "" when it answers 200 with exactly `want`, else what went wrong."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
    except (OSError, http.client.HTTPException) as e:
        return f"GET {path}: {e}"
    if r.status != 200:
        return f"GET {path}: status {r.status}"
    if body != want:
        return f"GET {path}: {len(body)} bytes, not the {len(want)} expected"
    return ""


def _tail(path: str, n: int = 3) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[:300]


def run_http(server_argv: list[str], wrk_argv: list[str], port: int, path: str, want: bytes, timeout: float,
             logdir: str, extra_logs: list[str] | None = None, env: dict | None = None) -> Run:
    """Starts the server, checks one answer, runs wrk between two readings of the server's CPU
    time, stops the server with SIGINT. Failed: the server does not start or exits non-zero,
    the answer is wrong, wrk fails or counts errors (any non-2xx answer, any socket error).
    The server's output goes to a file in `logdir`; its last lines (and those of `extra_logs`,
    nginx's error log) are quoted when the run fails. `env` is added to the server's environment;
    the event-loop engine it runs on (engine_of) is kept as server.engine."""
    cmd = env_text(env) + shlex.join(server_argv) + "  &&  " + shlex.join(wrk_argv)
    t0 = time.monotonic()
    srv_log = os.path.join(logdir, f"server-{port}.log")
    run = _run_http(server_argv, wrk_argv, port, path, want, timeout, srv_log, env)
    run.cmd, run.wall = cmd, time.monotonic() - t0
    if run.status == "failed":
        tails = [t for t in (_tail(f) for f in [srv_log] + (extra_logs or [])) if t]
        if tails:
            run.error += " [server: " + " | ".join(tails) + "]"
    return run


def engine_of(pid: int) -> str:
    """The event-loop engine of a running process, from its descriptors: "io_uring" when it has an
    io_uring instance open, else "epoll" when it has an epoll instance, else "" (or unreadable)."""
    kinds = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                kinds.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                pass
    except OSError:
        return ""
    if "anon_inode:[io_uring]" in kinds:
        return "io_uring"
    return "epoll" if "anon_inode:[eventpoll]" in kinds else ""


def _run_http(server_argv, wrk_argv, port, path, want, timeout, srv_log, env=None) -> Run:
    with open(srv_log, "wb") as log:
        try:
            srv = subprocess.Popen(server_argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   env=environment(env))
        except OSError as e:
            return Run("failed", {}, f"cannot start server: {e}")
    data: dict = {}
    error = ""
    srv_rc = None
    try:
        if not _wait_listening(port, srv, 10.0):
            if srv.poll() is not None:
                return Run("failed", {}, f"server exited with status {srv.returncode} before it accepted connections")
            return Run("failed", {}, "server did not accept connections within 10 s")
        error = check_answer(port, path, want)
        if error:
            return Run("failed", {}, error)
        engine = engine_of(srv.pid)  # after the first answer: the server's loop is set up
        before = process_cpu(srv.pid)
        try:
            cp = subprocess.run(wrk_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Run("failed", {}, f"wrk timeout after {timeout:.0f} s")
        except OSError as e:
            return Run("failed", {}, f"cannot start wrk: {e}")
        after = process_cpu(srv.pid)
        cpu_ns, source = cpu_between(before, after)
        if cp.returncode != 0:
            tail = (cp.stderr.strip().splitlines() or cp.stdout.strip().splitlines() or [""])[-1][:300]
            return Run("failed", {}, f"wrk exit status {cp.returncode}: {tail}")
        try:
            data = parse_wrk(cp.stdout)
        except ValueError as e:
            return Run("failed", {}, f"{e}: {cp.stdout.strip()[-200:]}")
        data["server"] = {"cpu_ns": cpu_ns, "cpu_source": source, "threads": len(after["tasks"]),
                          "pid": srv.pid, "engine": engine}
        data["server_cpu_ns_per_req"] = cpu_per_request_ns(cpu_ns, data["requests"])
        data["ok"] = data["errors"] == 0 and data["requests"] > 0
        if data["errors"]:
            err = [f"{data['non_2xx']} non-2xx answers"] if data["non_2xx"] else []
            err += [f"{v} socket {k} errors" for k, v in data["socket_errors"].items() if v]
            error = data["error"] = "wrk counted " + ", ".join(err)
        elif not data["requests"]:
            error = data["error"] = "wrk made no requests"
    finally:
        if not stop_group(srv, signal.SIGINT, 10):
            srv_rc = "killed: it did not stop within 10 s of SIGINT"
        elif srv.returncode != 0:
            srv_rc = f"server exit status {srv.returncode}"
    if error or srv_rc:
        return Run("failed", data, error or srv_rc)
    return Run("ok", data)
