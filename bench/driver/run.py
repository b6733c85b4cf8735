#!/usr/bin/env python3
"""ringo benchmark driver: runs the figures of registry.py, repeats and interleaves the runs, and
writes bench/results/ (<figure>.json, <figure>.csv, <figure>.png, REPORT.md).

Per data point: one warm-up run of every implementation, then `reps` rounds in which every
implementation runs once, the order rotated each round (round-robin interleaving). The point's
value is the median of the runs, min and max kept. A run that exits non-zero, prints no JSON, or
says ok:false / errors > 0 is failed; a point with a failed run is shown as failed and never plotted.
A program that reports "unsupported" (IOPOLL on a device without poll queues) is probed once per
tier and shown as unsupported. A missing executable is "not built", not an error.

    python3 -m bench.driver [--profile quick|full] [--only FIG[,FIG]] [--list] [--dry-run]
    (from the repository's root; scripts/bench builds everything first and runs it)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import statistics
import string
import sys
import time

from . import counting, execute, httpbench, registry, report
from . import load as load_mod
from . import tiers as tiers_mod

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FILE_SIZE = registry.FILE_SIZE
BIN_RE = re.compile(r"<([A-Za-z0-9_.+-]+)>")


def log(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- executables

class Binaries:
    """Finds executables by name in the build trees (first match wins); the programs of Debian
    packages (registry.SYSTEM_PROGRAMS: nginx, wrk) in PATH, /usr/sbin and /sbin."""

    def __init__(self, dirs: list[str]):
        self.dirs = dirs
        self._index: dict[str, str] | None = None

    def _build_index(self) -> dict[str, str]:
        idx: dict[str, str] = {}
        for d in self.dirs:
            if not os.path.isdir(d):
                continue
            for dirpath, dirnames, filenames in os.walk(d):
                dirnames[:] = [n for n in dirnames if n not in ("CMakeFiles", "deps", "build", "incremental",
                                                                ".fingerprint", "examples")]
                for fn in filenames:
                    p = os.path.join(dirpath, fn)
                    if fn not in idx and os.access(p, os.X_OK) and os.path.isfile(p) and "." not in fn.replace("-", ""):
                        idx[fn] = p
        return idx

    def find(self, name: str) -> str | None:
        if name in registry.SYSTEM_PROGRAMS:
            path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
            return shutil.which(name, path=path)
        if name in registry.REPO_PROGRAMS:  # a script of the repository (scripts/include-times)
            p = os.path.join(ROOT, registry.REPO_PROGRAMS[name])
            return p if os.access(p, os.X_OK) else None
        if self._index is None:
            self._index = self._build_index()
        return self._index.get(name)


# --------------------------------------------------------------------------- templates

class _Strict(string.Formatter):
    def get_value(self, key, args, kwargs):
        if key not in kwargs:
            raise KeyError(f"template parameter {{{key}}} has no value")
        return kwargs[key]


def expand(template: str, params: dict, bins: Binaries) -> tuple[list[str] | None, str]:
    """argv for a template, or (None, reason) when an executable is missing."""
    missing = []

    def sub(m):
        path = bins.find(m.group(1))
        if path is None:
            missing.append(m.group(1))
            return m.group(0)
        return path

    text = BIN_RE.sub(sub, template)
    if missing:
        return None, "missing " + ", ".join(missing)
    text = _Strict().format(text, **params)
    return text.split(), ""


# --------------------------------------------------------------------------- planning

class Cell:
    """One implementation at one data point: its runs and summary."""

    def __init__(self, impl: registry.Impl, panel: str, x, params: dict):
        self.impl, self.panel, self.x, self.params = impl, panel, x, params
        self.runs: list[execute.Run] = []
        self.warmup: execute.Run | None = None
        self.status = "pending"
        self.error = ""
        self.cmd = ""
        self.counted: dict = {}  # the untimed passes: strace, callgrind


def template_for(impl: registry.Impl, params: dict) -> str | dict | None:
    if isinstance(impl.cmd, dict) and impl.kind != "fio":
        return impl.cmd.get(params.get("sub"))
    return impl.cmd


def points_of(fig: registry.Figure, prof: dict) -> list[dict]:
    if "points" in prof:
        return [dict(p) for p in prof["points"]]
    key = {"storage": "qd", "echo": "connections"}.get(fig.kind, "count")
    return [{"x": x, key: x} for x in prof["xs"]]


def seconds_for(prof: dict, warm: bool) -> float | None:
    if warm:
        return prof.get("warmup_seconds")
    return prof.get("seconds")


# --------------------------------------------------------------------------- running

class Runner:
    def __init__(self, args, bins: Binaries, tiers: tiers_mod.Tiers | None):
        self.args = args
        self.bins = bins
        self.tiers = tiers
        self.done = 0
        self.total = 0
        self.t0 = time.monotonic()
        self.fio = shutil.which("fio")
        # CPU pinning, the same for every implementation: a program that runs in one thread (and
        # its helper threads: glibc's AIO threads, tokio's blocking pool) on the second allowed
        # CPU; a cross-thread benchmark on the first two, each program placing its two threads
        # one per CPU; an echo server on the first and its client on the second. io-wq workers are
        # threads of the process and take its CPU affinity (checked: Cpus_allowed_list); an
        # unpinned SQPOLL thread may run on either CPU; the loop device's workers are kept on the
        # programs' CPU while the loop tier's rows run (tiers.py).
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.taskset = shutil.which("taskset") if len(allowed) >= 2 else None
        self.cpus = allowed[:2]
        if tiers is not None and self.taskset:
            tiers.worker_cpus = self.cpus[1:]  # the loop device's workers beside the program
        self.strace = counting.have_strace() and not args.no_strace
        self.callgrind = counting.have_callgrind() and not args.no_callgrind
        self.instr_cache: dict = {}
        self.http: httpbench.Docroot | None = None  # the http figure's served files, while it runs

    def pinning_text(self, fig: registry.Figure) -> str:
        if not self.taskset:
            return "not pinned (fewer than 2 CPUs allowed)"
        a, b = self.cpus
        if fig.parts:
            return "; ".join(f"{p.name}: {self.pinning_text(p)}" for p in fig.parts)
        if fig.kind == "echo":
            return f"server pinned to CPU {a}, client to CPU {b}"
        if fig.kind == "http":
            return f"server pinned to CPU {a}, wrk to CPU {b}"
        two = any(isinstance(i.cmd, dict) and set(i.cmd) & registry.TWO_THREAD_SUBS for i in fig.impls)
        return f"every program pinned to CPU {b}" + (
            f" (the two-thread panels: CPUs {a} and {b}, one thread on each)" if two else "")

    def pin(self, cpus: list[int]) -> list[str]:
        return [self.taskset, "-c", ",".join(str(c) for c in cpus)] if self.taskset else []

    def pin_for(self, cell: Cell) -> list[str]:
        if not self.taskset:
            return []
        return self.pin(self.cpus if cell.params.get("sub") in registry.TWO_THREAD_SUBS else self.cpus[1:])

    # --- one run
    def run_once(self, fig: registry.Figure, cell: Cell, warm: bool, trace: list[str] | None = None,
                 timeout: float | None = None) -> execute.Run:
        """One run of `cell`; `trace` (strace) goes before the program (the server for a server
        row), after the CPU pinning. The row's environment variables (Impl.env) go to its program
        (the server of a server or http row), and a run whose program does not report the values
        the row expects (Impl.expect, e.g. the engine) is failed."""
        r = self._run_once(fig, cell, warm, trace or [], timeout)
        return execute.check_expected(r, cell.impl.expect, "server" if cell.impl.kind in ("server", "http") else "")

    def _run_once(self, fig: registry.Figure, cell: Cell, warm: bool, trace: list[str],
                  timeout: float | None) -> execute.Run:
        prof = fig.profiles[self.args.profile]
        p = dict(cell.params)
        secs = seconds_for(prof, warm)
        if secs:
            p["seconds"] = secs
        # Timed programs get 10 s plus 5x their duration; untimed ones (ping-pong, micro) 120 s.
        if timeout is None:
            timeout = 10.0 + 5.0 * float(p["seconds"]) if "{seconds}" in str(template_for(cell.impl, p)) \
                or cell.impl.kind in ("fio", "server", "http") else 120.0
        impl = cell.impl
        try:
            if impl.kind == "fio":
                return execute.run_fio(self.fio, impl.cmd, p, timeout, self.pin_for(cell) + trace, env=impl.env)
            tmpl = template_for(impl, p)
            if impl.kind == "http":
                return self.run_http(fig, tmpl, p, trace, timeout, impl.env)
            if impl.kind == "copy":
                if not os.path.isfile(p["file"]):
                    return execute.Run("unsupported", {}, f"unsupported: the tier has no file system to copy in "
                                                          f"({p['file']})")
                p["dst"] = os.path.join(os.path.dirname(p["file"]), "copy-dst.bin")
            if impl.kind == "server":
                p["port"] = execute.free_port()
                sargv, why = expand(tmpl, p, self.bins)
                cargv, cwhy = expand(fig.client, p, self.bins)
                if sargv is None or cargv is None:
                    return execute.Run("failed", {}, why or cwhy)
                sargv = self.pin(self.cpus[:1]) + trace + sargv
                cargv = self.pin(self.cpus[1:2]) + cargv
                return execute.run_server_client(sargv, cargv, p["port"], timeout, server_env=impl.env)
            argv, why = expand(tmpl, p, self.bins)
            if argv is None:
                return execute.Run("failed", {}, why)
            argv = self.pin_for(cell) + trace + argv
            if impl.kind == "copy":
                return execute.run_copy(argv, p["file"], p["dst"], timeout, impl.name, env=impl.env)
            return execute.run_command(argv, timeout, env=impl.env)
        except KeyError as e:
            return execute.Run("failed", {}, f"registry template error: {e}")

    def run_http(self, fig: registry.Figure, tmpl: str, p: dict, trace: list[str], timeout: float,
                 env: dict | None = None) -> execute.Run:
        """One run of a web server (pinned to the first CPU) under wrk (pinned to the second)."""
        d = self.http
        p["port"] = execute.free_port()
        p["seconds"] = max(1, int(round(float(p["seconds"]))))  # wrk takes whole seconds
        p.update(root=d.doc, text=httpbench.TEXT)
        if "{conf}" in tmpl:
            p["prefix"], p["conf"] = d.nginx_prefix(p["port"])
        sargv, why = expand(tmpl, p, self.bins)
        cargv, cwhy = expand(fig.client, p, self.bins)
        if sargv is None or cargv is None:
            return execute.Run("failed", {}, why or cwhy)
        extra = [os.path.join(p["prefix"], "error.log")] if "prefix" in p else []
        return httpbench.run_http(self.pin(self.cpus[:1]) + trace + sargv, self.pin(self.cpus[1:2]) + cargv,
                                  p["port"], p["path"], d.content[p["path"]], timeout, d.dir, extra, env)

    def progress(self, fig, cell: Cell, label: str, run: execute.Run) -> None:
        self.done += 1
        el = time.monotonic() - self.t0
        eta = el / self.done * max(0, self.total - self.done)
        val = fig.metric.fn(run.data) if run.status == "ok" else None
        shown = f"{val:,.1f} {fig.metric.label}" if val is not None else run.status.upper() + \
            (f" ({run.error})" if run.error else "")
        log(f"[{self.done:>4}/{self.total} {fmt_dur(el)} eta {fmt_dur(eta)}] {fig.name} {cell.panel} "
            f"{'batch' if 'batch' in cell.params and fig.kind == 'micro' else fig.x_label}={cell.x} | "
            f"{cell.impl.name} {label}: {shown}")

    # --- untimed counting passes
    def count_syscalls(self, fig: registry.Figure, c: Cell) -> None:
        """For a row whose program cannot count its own system calls (or any row of a panel that
        compares kernel entries), one more run under strace -f -c, not timed."""
        if not self.strace or c.status != "ok" or fig.kind in ("http", "compile"):
            return  # http: a web server under strace -f at 1 000 connections measures strace; compile: no I/O
        data = next((r.data for r in c.runs if r.status == "ok"), {})
        server = c.impl.kind == "server"
        key = "server_syscalls_per_msg" if server else "syscalls_per_op"
        if safe(SECONDARY[key], data) is not None and c.panel not in registry.STRACE_EVERY_ROW_PANELS:
            return
        path = counting.strace_file()
        r = self.run_once(fig, c, warm=False, trace=counting.strace_prefix(path), timeout=600.0)
        calls = counting.read_strace(path)
        log(f"[{fig.name}] {c.panel} {fig.x_label}={c.x} | {c.impl.name} strace pass: "
            + (f"{sum(calls.values()):,} calls" if r.status == "ok" and calls else f"FAILED {r.error}"))
        if r.status != "ok" or not calls:
            c.counted["strace_error"] = r.error or "strace wrote no summary"
            return
        ops = registry.echo_server_msgs(r.data) if server else r.data.get("ops")
        if not ops:
            c.counted["strace_error"] = "the straced run reported no operation count"
            return
        total = sum(calls.values())
        waits = sum(calls.get(k, 0) for k in counting.WAIT_CALLS)
        c.counted.update(strace_syscalls_per_op=total / ops, strace_waits_per_op=waits / ops,
                         strace_top={k: v for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:6]},
                         strace_ops=ops)

    def count_instructions(self, fig: registry.Figure, c: Cell) -> None:
        """Callgrind slope for the panels judged on instructions (registry.CALLGRIND_PANELS)."""
        small_large = registry.CALLGRIND_PANELS.get(c.panel)
        if not self.callgrind or c.status != "ok" or not small_large:
            return
        tmpl = template_for(c.impl, c.params)

        def argv_for(n):
            p = dict(c.params)
            p["count"] = n
            argv, _ = expand(tmpl, p, self.bins)
            return argv
        if argv_for(1) is None:
            return
        key = (fig.name, c.panel, c.impl.name)  # the same at every x: counted once
        if key in self.instr_cache:
            if self.instr_cache[key] is not None:
                c.counted["instr_per_op"] = self.instr_cache[key]
            return
        v = self.instr_cache[key] = counting.callgrind_per_op(argv_for, *small_large)
        log(f"[{fig.name}] {c.panel} | {c.impl.name} callgrind pass: "
            + (f"{v:.1f} instructions per operation" if v is not None else "FAILED"))
        if v is not None:
            c.counted["instr_per_op"] = v

    # --- one figure, on a quiet machine if there is one
    def figure(self, fig: registry.Figure) -> dict:
        """Waits for a quiet machine (bounded), runs the figure, and runs it once more if other
        processes took more than the threshold of the CPUs meanwhile; a figure still taken under
        load says so."""
        a = self.args
        res = None
        waits = []
        for attempt in (1, 2):
            quiet, waited, busy = (True, 0.0, 0.0)
            if a.quiet_wait > 0:
                quiet, waited, busy = load_mod.wait_quiet(a.quiet_wait, a.quiet_threshold, log)
                if not quiet:
                    log(f"[load] {fig.name}: still {busy * 100:.0f} % busy after {waited:.0f} s; running anyway")
            waits.append({"waited_s": round(waited, 1), "quiet": quiet, "busy_before": round(busy, 3)})
            meter = load_mod.OtherLoad()
            meter.start()
            done_before = self.done
            res = self._parts_once(fig) if fig.parts else self._with_docroot(fig)
            other = meter.stop()
            waits[-1]["other_load"] = round(other, 3)
            res["other_load"] = round(other, 3)
            res["load_attempts"] = waits
            res["taken_under_load"] = other > a.quiet_threshold
            if not res["taken_under_load"] or attempt == 2 or a.quiet_wait <= 0:
                break
            log(f"[load] {fig.name}: other processes took {other * 100:.0f} % of the CPUs while it ran; "
                f"taking it again")
            self.total += self.done - done_before  # the retake's runs
        return res

    def _with_docroot(self, fig: registry.Figure) -> dict:
        """One take of a figure; the http figure's served files exist while it runs."""
        if fig.kind == "http":
            httpbench.raise_nofile()
            self.http = httpbench.Docroot(self.args.workdir)
        try:
            return self._figure_once(fig)
        finally:
            if self.http:
                self.http.close()
                self.http = None

    def _parts_once(self, fig: registry.Figure) -> dict:
        """One take of a figure made of parts (registry.Figure.parts): each part as a figure of its
        own, one after the other; the result holds the parts' results and all their rows."""
        started = dt.datetime.now().isoformat(timespec="seconds")
        load0 = loadavg()
        t_fig = time.monotonic()
        parts = []
        for part in fig.parts:
            log(f"[{fig.name}] part {part.name}: {part.title}")
            parts.append(self._with_docroot(part))
        return {
            "figure": fig.name, "title": fig.title, "kind": fig.kind, "profile": self.args.profile,
            "started": started, "duration_s": round(time.monotonic() - t_fig, 1),
            "metric": fig.metric.label, "higher_is_better": fig.metric.higher_is_better, "x_label": fig.x_label,
            "plot": fig.plot, "storage": False, "reps": None, "warmup": None, "seconds": None,
            "panels": [], "impls": [i for p in parts for i in p["impls"]], "rows": [r for p in parts for r in p["rows"]],
            "targets": [], "notes": fig.notes, "parts": parts, "pinning": self.pinning_text(fig),
            "load": [load0, loadavg()],
        }

    def _figure_once(self, fig: registry.Figure) -> dict:
        prof = fig.profiles[self.args.profile]
        started = dt.datetime.now().isoformat(timespec="seconds")
        load0 = loadavg()
        t_fig = time.monotonic()
        impls = [i for i in fig.impls if self.args.profile in i.profiles]
        impl_info = {i.name: {"name": i.name, "tag": i.tag, "ringo": i.is_ringo, "status": "", "reason": ""}
                     for i in impls}
        panels_info = []
        cells_by_group: list[tuple[str, object, list[Cell]]] = []
        # ---- build cells
        if fig.storage:
            panel_names = prof["tiers"]
            if self.args.tiers:
                panel_names = [t for t in panel_names if t in self.args.tiers]
        else:
            seen = []
            for pt in points_of(fig, prof):
                if pt.get("panel", "") not in seen:
                    seen.append(pt.get("panel", ""))
            panel_names = seen
        for panel in panel_names:
            base = {}
            tier = None
            if fig.storage:
                tier = self.tiers.get(panel)
                panels_info.append({"name": panel, "available": tier.available, "description": tier.description,
                                    "reason": tier.reason})
                if not tier.available:
                    log(f"[{fig.name}] tier {panel} unavailable: {tier.reason}")
                    continue
                base = {"file": tier.file, "file_size": tier.file_size, "bs": prof["bs"]}
            else:
                panels_info.append({"name": panel, "available": True, "description": "", "reason": ""})
            for pt in points_of(fig, prof):
                if pt.get("panel", panel) != panel:
                    continue
                group = []
                for impl in impls:
                    if fig.storage and prof.get("tier_filter", {}).get(panel) and \
                            not prof["tier_filter"][panel](impl):
                        continue
                    params = dict(base)
                    if "mode" in prof:
                        params["mode"] = prof["mode"]
                    params.update({k: v for k, v in pt.items() if k not in ("x", "panel")})
                    params.update(impl.params)
                    params.setdefault("seconds", prof.get("seconds", 1.0))
                    if impl.when and not impl.when(params):
                        continue
                    if template_for(impl, params) is None:
                        continue
                    if fig.storage:
                        rand = str(params.get("mode", "")).startswith("rand") or params.get("pattern") == "rand"
                        params["offsets_arg"] = (f"--offsets {tier.offsets_for(self.tiers.workdir, params['bs'])}"
                                                 if rand else "")
                    # not built?
                    why = self.missing(fig, impl, params)
                    if why:
                        impl_info[impl.name]["status"] = "not built"
                        impl_info[impl.name]["reason"] = why
                        continue
                    group.append(Cell(impl, panel, pt["x"], params))
                if group:
                    cells_by_group.append((panel, pt["x"], group))
        # ---- run
        # Sticky outcomes, so a broken or unsupported implementation costs one run, not one per point:
        #   unsupported         -> the rest of this tier is unsupported
        #   timeout             -> the rest of this tier is skipped (a hung program would eat the budget)
        #   usage error (exit 2, no JSON: the program rejects these arguments) -> the rest of the figure
        unsupported: dict[tuple[str, str], str] = {}
        skipped: dict[tuple[str, str], str] = {}
        runs_per_cell = prof["reps"] + (1 if prof.get("warmup_seconds") is not None else 0)

        def note_sticky(c: Cell, r: execute.Run) -> None:
            if r.status == "unsupported":
                unsupported[(c.panel, c.impl.name)] = r.error
            elif r.status == "failed" and r.error.startswith("timeout"):
                skipped[(c.panel, c.impl.name)] = r.error
            elif r.status == "failed" and r.error.startswith("exit 2, no JSON"):
                skipped[("*", c.impl.name)] = "usage error: " + r.error[len("exit 2, no JSON line"):].lstrip(": ")

        all_cells = [c for _, _, g in cells_by_group for c in g]
        try:
            self._run_groups(fig, prof, cells_by_group, unsupported, skipped, runs_per_cell, note_sticky)
        finally:
            if fig.storage and self.tiers:
                self.tiers.pin_workers(False)
        for name, info in impl_info.items():
            if not info["status"]:
                st = {c.status for c in all_cells if c.impl.name == name}
                info["status"] = "ok" if st == {"ok"} else ("/".join(sorted(st)) if st else "not run")
        rows = [self.row(fig, c) for c in all_cells]
        return {
            "figure": fig.name, "title": fig.title, "kind": fig.kind, "profile": self.args.profile,
            "started": started, "duration_s": round(time.monotonic() - t_fig, 1),
            "metric": fig.metric.label, "higher_is_better": fig.metric.higher_is_better,
            "x_label": fig.x_label, "panel_x_labels": fig.panel_x_labels, "plot": fig.plot,
            "storage": fig.storage,
            "reps": prof["reps"], "warmup": prof.get("warmup_seconds") is not None,
            "seconds": prof.get("seconds"), "bs": prof.get("bs"),
            "file_size": self.tiers.file_size if (fig.storage and self.tiers) else None,
            "panels": panels_info, "impls": list(impl_info.values()), "rows": rows,
            "targets": [t.__dict__ for t in fig.targets], "notes": fig.notes,
            "pinning": self.pinning_text(fig),
            "load": [load0, loadavg()],
        }

    def _run_groups(self, fig, prof, cells_by_group, unsupported, skipped, runs_per_cell, note_sticky) -> None:
        """Runs every group of cells (one data point's implementations): warm-up, then the
        interleaved repetitions, then the untimed counting passes. The loop tier's groups run
        with its device's workers on the programs' CPU (tiers.py)."""
        for panel, x, group in cells_by_group:
            if fig.storage and self.tiers:
                why = self.tiers.pin_workers(panel == "loop")
                if why:
                    log(f"[{fig.name}] the loop device's workers: {why}")
            active = []
            for c in group:
                key = (panel, c.impl.name)
                if key in unsupported:
                    c.status, c.error = "unsupported", unsupported[key]
                    self.total -= runs_per_cell
                    continue
                why = skipped.get(key) or skipped.get(("*", c.impl.name))
                if why:
                    c.status, c.error = "failed", "not run, failed earlier: " + why
                    self.total -= runs_per_cell
                    continue
                active.append(c)
            if prof.get("warmup_seconds") is not None:
                still = []
                for c in active:
                    r = self.run_once(fig, c, warm=True)
                    c.warmup = r
                    c.cmd = r.cmd
                    self.progress(fig, c, "warm-up", r)
                    note_sticky(c, r)
                    if r.status == "unsupported":
                        c.status, c.error = "unsupported", r.error
                        self.total -= prof["reps"]
                    elif r.status == "failed":
                        c.status, c.error = "failed", "warm-up: " + r.error
                        self.total -= prof["reps"]
                    else:
                        still.append(c)
                active = still
            for rep in range(prof["reps"]):
                k = rep % len(active) if active else 0
                for c in active[k:] + active[:k]:
                    if (c.panel, c.impl.name) in skipped or ("*", c.impl.name) in skipped:
                        self.total -= 1
                        continue
                    r = self.run_once(fig, c, warm=False)
                    c.runs.append(r)
                    c.cmd = r.cmd
                    self.progress(fig, c, f"run {rep + 1}/{prof['reps']}", r)
                    note_sticky(c, r)
            for c in active:
                self.summarise(c)
            for c in active:
                self.count_syscalls(fig, c)
                self.count_instructions(fig, c)

    def missing(self, fig, impl: registry.Impl, params: dict) -> str:
        if impl.kind == "fio":
            return "" if self.fio else "fio not installed"
        tmpl = template_for(impl, params)
        names = BIN_RE.findall(tmpl) + (BIN_RE.findall(fig.client) if impl.kind == "server" else [])
        miss = [n for n in names if self.bins.find(n) is None]
        if not miss:
            return ""
        why = "missing " + ", ".join(miss)
        if any(n.startswith("ringo-bench-") for n in miss) and not (
                shutil.which("cargo") or os.path.exists(os.path.expanduser("~/.cargo/bin/cargo"))):
            why += " (cargo is not installed: Rust baselines skipped)"
        return why

    @staticmethod
    def summarise(c: Cell) -> None:
        if c.status in ("failed", "unsupported"):
            return
        bad = [r for r in c.runs if r.status != "ok"]
        if not c.runs:
            c.status, c.error = "failed", "not run: the implementation failed earlier in this tier"
        elif any(r.status == "unsupported" for r in bad):
            c.status, c.error = "unsupported", next(r.error for r in bad if r.status == "unsupported")
        elif bad:
            c.status, c.error = "failed", f"{len(bad)}/{len(c.runs)} runs failed: {bad[0].error}"
        else:
            c.status = "ok"

    def row(self, fig: registry.Figure, c: Cell) -> dict:
        ok_runs = [r for r in c.runs if r.status == "ok"]
        vals = [v for v in (fig.metric.fn(r.data) for r in ok_runs) if v is not None]
        row = {"figure": fig.name, "panel": c.panel, "x": c.x, "impl": c.impl.name, "tag": c.impl.tag,
               "ringo": c.impl.is_ringo, "status": c.status, "runs_ok": len(ok_runs),
               "runs_failed": len(c.runs) - len(ok_runs), "metric": fig.metric.label,
               "median": statistics.median(vals) if vals else None,
               "min": min(vals) if vals else None, "max": max(vals) if vals else None,
               "mean": statistics.fmean(vals) if vals else None,
               "stdev": statistics.stdev(vals) if len(vals) > 1 else None,
               "values": vals, "error": c.error, "cmd": c.cmd}
        if c.status == "ok" and not vals:
            row["status"], row["error"] = "failed", "no metric value in the JSON output"
        ranges = {}
        for k, fn in SECONDARY.items():
            xs = [v for v in (safe(fn, r.data) for r in ok_runs) if v is not None]
            row[k] = statistics.median(xs) if xs else None
            if xs:
                ranges[k] = [min(xs), max(xs)]
        row["ranges"] = ranges  # per-run min and max of each secondary field (verdicts on a field)
        # The untimed passes: strace fills a missing syscall column (marked), callgrind adds
        # instructions per operation.
        cnt = c.counted
        row["syscalls_source"] = "self"
        if cnt.get("strace_syscalls_per_op") is not None:
            key = "server_syscalls_per_msg" if c.impl.kind == "server" else "syscalls_per_op"
            if row.get(key) is None:
                row[key] = cnt["strace_syscalls_per_op"]
                row["syscalls_source"] = "strace"
            row["strace_syscalls_per_op"] = cnt["strace_syscalls_per_op"]
            row["waits_per_op"] = cnt["strace_waits_per_op"]
            row["strace_top"] = cnt["strace_top"]
        elif row.get("syscalls_per_op") is None and row.get("server_syscalls_per_msg") is None:
            row["syscalls_source"] = ""
        if cnt.get("strace_error"):
            row["strace_error"] = cnt["strace_error"]
        row["instr_per_op"] = cnt.get("instr_per_op")
        return row


def safe(fn, d):
    try:
        return fn(d)
    except (KeyError, TypeError, ZeroDivisionError, ValueError):
        return None


def _per_op(field_name, scale=1.0):
    return lambda d: d[field_name] / d["ops"] * scale if d.get(field_name) is not None and d.get("ops") else None


def _ns_to_us(field_name):
    return lambda d: d[field_name] / 1e3 if d.get(field_name) is not None else None


def _first(*fns):
    """The first of several extractors that yields a value (programs name things differently)."""
    def fn(d):
        for f in fns:
            v = safe(f, d)
            if v is not None:
                return v
        return None
    return fn


def _field(name, scale=1.0):
    return lambda d: d[name] * scale if d.get(name) is not None and d[name] >= 0 else None


def _server_per_msg(name, scale=1.0):
    """A server-side total divided by the client's message count (negative = the server cannot count)."""
    def fn(d):
        v = d.get("server", {}).get(name)
        if v is None or v < 0 or not d.get("msgs"):
            return None
        return v * scale / d["msgs"]
    return fn


SECONDARY = {
    "mib_s": lambda d: d["bytes"] / d["seconds"] / (1 << 20) if d.get("bytes") and d.get("seconds") else None,
    "iops": lambda d: d["ops"] / d["seconds"] if d.get("ops") and d.get("seconds") else None,
    "p50_us": _ns_to_us("p50_ns"),
    "p99_us": _ns_to_us("p99_ns"),
    "read_p50_us": _ns_to_us("read_p50_ns"),
    "read_p99_us": _ns_to_us("read_p99_ns"),
    "write_p50_us": _ns_to_us("write_p50_ns"),
    "write_p99_us": _ns_to_us("write_p99_ns"),
    "cpu_us_per_op": _first(_per_op("cpu_seconds", 1e6), _field("cpu_ns_per_roundtrip", 1e-3)),
    "user_us_per_op": _per_op("user_cpu_seconds", 1e6),
    "syscalls_per_op": _first(_per_op("syscalls"), _field("syscalls_per_rt"), _field("syscalls_per_op")),
    "loop_syscalls_per_op": _first(_field("loop_syscalls_per_rt"), _field("loop_syscalls_per_round")),
    "server_cpu_us_per_msg": _first(_server_per_msg("cpu_ns", 1e-3), _server_per_msg("cpu_seconds", 1e6)),
    "server_syscalls_per_msg": _server_per_msg("syscalls_total"),
    # the http figure: wrk's requests/s, the server's CPU µs per request over wrk's run
    "rps": _field("requests_per_s"),
    "server_cpu_us_per_req": _field("server_cpu_ns_per_req", 1e-3),
    "wakeups_per_op": _first(_field("wakeups_per_op"), _per_op("wakeups")),
    "faults_per_op": _per_op("minflt"),
    "allocs_per_op": _per_op("allocs"),
    # the include figure: a compile's user CPU seconds (the program's best run) and its preprocessed lines
    "user_cpu_s": _field("user_cpu_seconds"),
    "pp_lines": _field("lines"),
    "ns_per_op": _first(_field("ns_per_op"), _field("ns_per_roundtrip"),
                        lambda d: d["seconds"] / d["ops"] * 1e9 if d.get("ops") and d.get("seconds") else None),
    # bench_ringo_micro timeouts (report.DETAILS)
    **{k: (lambda d, k=k: d.get(k)) for k in ("bytes_per_wait", "rss_bytes_per_wait", "frames_per_wait", "kernel_timeout_sqes",
                              "kernel_timeouts_in_flight", "idle_enters", "arm_disarm_ns", "arm_disarm_ns_loaded",
                              "cancel_us_loaded")},
}


def loadavg() -> float:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def fmt_dur(s: float) -> str:
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s"


# --------------------------------------------------------------------------- estimate

def count_runs(fig: registry.Figure, profile: str, bins: Binaries, tier_names) -> tuple[int, float]:
    if fig.parts:
        counts = [count_runs(p, profile, bins, tier_names) for p in fig.parts]
        return sum(n for n, _ in counts), sum(s for _, s in counts)
    prof = fig.profiles[profile]
    n = 0
    secs = 0.0
    panels = prof.get("tiers", [None]) if fig.storage else [None]
    if fig.storage and tier_names:
        panels = [t for t in panels if t in tier_names]
    warm = prof.get("warmup_seconds")
    for panel in panels:
        for pt in points_of(fig, prof):
            for impl in fig.impls:
                if profile not in impl.profiles:
                    continue
                if panel and prof.get("tier_filter", {}).get(panel) and not prof["tier_filter"][panel](impl):
                    continue
                params = dict(pt)
                params.update(impl.params)
                if impl.when and not impl.when(params):
                    continue
                tmpl = template_for(impl, params)
                if tmpl is None:
                    continue
                if impl.kind == "fio":
                    if not shutil.which("fio"):
                        continue
                elif any(bins.find(b) is None for b in BIN_RE.findall(tmpl) +
                         (BIN_RE.findall(fig.client) if impl.kind == "server" else [])):
                    continue
                # measured: ~0.05 s to start a program, ~0.3 s more for fio; 0.2 s for untimed programs;
                # http: a server start, one checked GET and wrk's own overrun (~0.4 s at 1 MiB x 1 000)
                # copy: the copy itself (~0.3 s for 256 MiB here) and its comparison with the source (~0.3 s)
                # compile: ~5 compiles of ~0.6 s each (a check, the timed ones, the preprocessor)
                extra = 0.05 + (0.3 if impl.kind == "fio" else 0) + (0.4 if impl.kind == "http" else 0) + \
                    (0.6 * FILE_SIZE[profile] / (256 << 20) if impl.kind == "copy" else 0) + \
                    (3.0 if fig.kind == "compile" else 0)
                per_run = (prof.get("seconds") or 0.15) + extra
                n += prof["reps"] + (1 if warm is not None else 0)
                secs += prof["reps"] * per_run + ((warm + extra if warm else per_run) if warm is not None else 0)
    return n, secs


# --------------------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=["quick", "full"], default="quick")
    ap.add_argument("--only", default="", help="comma-separated figures: " + ", ".join(registry.FIGURE_NAMES))
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--workdir", default=os.path.join(ROOT, "bench", "work"))
    ap.add_argument("--bin-dir", action="append", default=[],
                    help="extra directory searched first for executables (repeatable)")
    ap.add_argument("--tiers", default="", help="restrict storage tiers, e.g. loop or disk")
    ap.add_argument("--file-size-mib", type=int, default=0, help="override the test file size")
    ap.add_argument("--list", action="store_true", help="list figures and implementations, then exit")
    ap.add_argument("--dry-run", action="store_true", help="show what would run and the estimated time")
    ap.add_argument("--report-only", action="store_true", help="rebuild REPORT.md/CSV/PNG from results/*.json")
    ap.add_argument("--quiet-wait", type=float, default=None,
                    help="seconds to wait at most for a quiet machine before each figure (default 60 quick, "
                         "300 full; 0: do not wait and never retake a figure)")
    ap.add_argument("--quiet-threshold", type=float, default=0.10,
                    help="fraction of all CPUs that other work may use: quiet below it before a figure, "
                         "and a figure during which other processes used more is taken again (default 0.10)")
    ap.add_argument("--no-strace", action="store_true", help="skip the untimed strace pass (syscall counts)")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the untimed callgrind pass (instructions)")
    args = ap.parse_args()
    args.tiers = [t for t in args.tiers.split(",") if t]
    if args.quiet_wait is None:
        args.quiet_wait = 60.0 if args.profile == "quick" else 300.0

    # build/bench/examples: examples/http_file_server (the walk skips folders named examples, e.g.
    # cargo's, inside the others)
    bins = Binaries(args.bin_dir + [os.path.join(ROOT, "build", "bench"), os.path.join(ROOT, "build", "bench-storage"),
                                    os.path.join(ROOT, "build", "bench", "examples"),
                                    os.path.join(ROOT, "bench", "rust", "target", "release")])
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in registry.FIGURE_NAMES]
        if unknown:
            ap.error(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(registry.FIGURE_NAMES)}")
        figs = [registry.figure(n) for n in names]
    else:
        figs = list(registry.FIGURES)

    if args.list:
        for f in figs:
            print(f"{f.name}: {f.title}")
            for prog in registry.programs_of(f):
                src = registry.PROGRAM_SOURCES.get(prog) or registry.SYSTEM_PROGRAMS.get(prog, "(source not listed)")
                print(f"    program {prog:28s} {src}")
            if any(i.kind == "fio" for i in f.impls):
                print(f"    program {'fio':28s} (installed: the fio package)")
            for part in f.parts or [f]:
                if f.parts:
                    print(f"  part {part.name}: {part.title}")
                for i in part.impls:
                    tmpl = i.cmd if isinstance(i.cmd, str) else ", ".join(f"{k}={v}" for k, v in i.cmd.items())
                    env = "".join(f"{k}={v} " for k, v in i.env.items())
                    print(f"    {i.name:32s} [{'/'.join(i.profiles)}] {env}{tmpl}")
        return 0

    os.makedirs(args.results, exist_ok=True)
    if args.report_only:
        report.write_all(args.results, log)
        return 0

    total = 0
    est = 0.0
    for f in figs:
        n, s = count_runs(f, args.profile, bins, args.tiers)
        total += n
        est += s
        log(f"[plan] {f.name}: {n} runs, about {fmt_dur(s)}")
    log(f"[plan] profile {args.profile}: {total} runs, about {fmt_dur(est)} plus set-up")
    if args.dry_run:
        return 0

    # Turn SIGTERM/SIGHUP into an exception so the loop tier is removed on the way out.
    def _stop(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)

    la = loadavg()
    if la > 0.5 * (os.cpu_count() or 1):
        log(f"[warn] load average is {la:.2f} on {os.cpu_count()} CPUs: other work is running, numbers will be noisy")
    machine = report.machine_info(ROOT)
    with open(os.path.join(args.results, "machine.json"), "w") as fh:
        json.dump(machine, fh, indent=1)

    size = (args.file_size_mib << 20) if args.file_size_mib else FILE_SIZE[args.profile]
    need_storage = any(f.storage or any(p.storage for p in f.parts) for f in figs)
    t0 = time.monotonic()
    with tiers_mod.Tiers(args.workdir, size, log) as tiers:
        runner = Runner(args, bins, tiers if need_storage else None)
        runner.total = total
        for f in figs:
            log(f"[{f.name}] {f.title}")
            res = runner.figure(f)
            res["machine_ref"] = "machine.json"
            with open(os.path.join(args.results, f"{f.name}.json"), "w") as fh:
                json.dump(res, fh, indent=1)
            report.write_figure(args.results, res, log)
            log(f"[{f.name}] done in {fmt_dur(res['duration_s'])}")
    report.write_all(args.results, log)
    shown = args.results if not args.results.startswith(ROOT + os.sep) else os.path.relpath(args.results, ROOT)
    log(f"[done] {fmt_dur(time.monotonic() - t0)}; results in {shown}/")
    return 0


def entry() -> None:
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
