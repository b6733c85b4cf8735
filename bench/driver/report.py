"""Writes <figure>.csv, <figure>.png and REPORT.md from the per-figure result files."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess

# Order of figures in the report (the registry's order).
ORDER = ["seqread", "randread", "syncasync", "copy", "echo", "http", "pingpong", "pipes", "micro", "epoll", "include"]

CSV_FIELDS = ["figure", "panel", "x", "impl", "tag", "status", "runs_ok", "runs_failed", "metric", "median",
              "min", "max", "mean", "stdev", "mib_s", "iops", "p50_us", "p99_us", "read_p50_us", "read_p99_us",
              "write_p50_us", "write_p99_us", "cpu_us_per_op", "syscalls_per_op", "loop_syscalls_per_op",
              "server_cpu_us_per_msg", "server_syscalls_per_msg", "rps", "server_cpu_us_per_req", "ns_per_op", "wakeups_per_op", "faults_per_op",
              "bytes_per_wait", "rss_bytes_per_wait", "frames_per_wait", "kernel_timeout_sqes",
              "kernel_timeouts_in_flight", "idle_enters", "arm_disarm_ns", "arm_disarm_ns_loaded", "cancel_us_loaded", "user_cpu_s", "pp_lines", "syscalls_source",
              "waits_per_op", "instr_per_op", "error", "cmd"]

# Per-operation cost table of each kind of figure: (caption, fields joined with " · ").
COST = {
    "storage": ("CPU µs per I/O · syscalls per I/O", ["cpu_us_per_op", "syscalls_per_op"]),
    "syncasync": ("CPU µs per I/O · syscalls per I/O", ["cpu_us_per_op", "syscalls_per_op"]),
    "copy": ("CPU µs per MiB · syscalls per MiB", ["cpu_us_per_op", "syscalls_per_op"]),
    "echo": ("server CPU µs per message · server syscalls per message",
             ["server_cpu_us_per_msg", "server_syscalls_per_msg"]),
    "http": ("requests/s (wrk)", ["rps"]),
    "pingpong": ("CPU µs per round trip · syscalls per round trip · event-loop syscalls per round trip",
                 ["cpu_us_per_op", "syscalls_per_op", "loop_syscalls_per_op"]),
    "pipes": ("syscalls per operation · event-loop syscalls per round", ["syscalls_per_op", "loop_syscalls_per_op"]),
    "compile": ("lines after preprocessing", ["pp_lines"]),
    "micro": ("ns per operation · CPU µs per operation · syscalls per operation · cross-thread wake-ups per "
              "operation · page faults per operation",
              ["ns_per_op", "cpu_us_per_op", "syscalls_per_op", "wakeups_per_op", "faults_per_op"]),
}

# Panels whose programs report more than a time: (caption, [(column, field)]), a row per
# implementation and x, values the medians of the runs (run.py SECONDARY).
DETAILS = {
    "timeouts": ("Pending `with_timeout` waits that never fire (bytes: glibc heap in use per wait, "
                 "mallinfo2; RSS: resident set growth per wait; kernel timeout SQEs: SQEs beyond the "
                 "waits' own recvs; in flight: those plus the one timeout of the loop's timed "
                 "io_uring_enter; arm + disarm: with_timeout around an awaitable that finishes at once, "
                 "minus the same await without it, with no other timer / with the waits pending; cancel: "
                 "cancel() + join of one wait while the others are pending, whose ASYNC_CANCEL the kernel "
                 "looks up in a hash table of 16 buckets for the default 512-entry CQ)",
                 [("bytes per wait", "bytes_per_wait"), ("RSS bytes per wait", "rss_bytes_per_wait"),
                  ("frames per wait", "frames_per_wait"), ("kernel timeout SQEs", "kernel_timeout_sqes"),
                  ("kernel timeouts in flight", "kernel_timeouts_in_flight"),
                  ("timed waits while idle", "idle_enters"), ("arm + disarm ns, no other timer", "arm_disarm_ns"),
                  ("arm + disarm ns, waits pending", "arm_disarm_ns_loaded"),
                  ("cancel µs, waits pending", "cancel_us_loaded")]),
}


# --------------------------------------------------------------------------- machine

def _cmd(argv, timeout=10) -> str:
    exe = shutil.which(argv[0]) or (os.path.expanduser("~/.cargo/bin/" + argv[0])
                                   if os.path.exists(os.path.expanduser("~/.cargo/bin/" + argv[0])) else None)
    if not exe:
        return "not installed"
    try:
        cp = subprocess.run([exe] + argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    out = cp.stdout.strip().splitlines()
    return out[0].strip() if out and cp.returncode == 0 else "unknown"


def _file_field(path: str, key: str) -> str:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip() if ":" in line else line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "unknown"


def machine_info(root: str) -> dict:
    mem_kb = _file_field("/proc/meminfo", "MemTotal").split()[0]
    try:
        import matplotlib
        mpl = matplotlib.__version__
    except ImportError:
        mpl = "not installed"
    commit = _cmd(["git", "-C", root, "rev-parse", "--short", "HEAD"])
    return {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "memory": f"{int(mem_kb) / 1024 / 1024:.1f} GiB" if mem_kb.isdigit() else "unknown",
        "cpu": _file_field("/proc/cpuinfo", "model name"),
        "kernel": os.uname().release,
        "os": _file_field("/etc/os-release", "PRETTY_NAME"),
        "compiler": _cmd(["g++", "--version"]),
        "cmake": _cmd(["cmake", "--version"]),
        "liburing": _cmd(["pkg-config", "--modversion", "liburing"]),
        "libaio": _cmd(["dpkg-query", "-W", "-f=${Version}", "libaio-dev"]),
        "asio": _cmd(["dpkg-query", "-W", "-f=${Version}", "libasio-dev"]),
        "rustc": _cmd(["rustc", "--version"]),
        "fio": _cmd(["fio", "--version"]),
        "nginx": _cmd(["dpkg-query", "-W", "-f=${Version}", "nginx"]),
        "wrk": _cmd(["dpkg-query", "-W", "-f=${Version}", "wrk"]),
        "python": platform.python_version(),
        "matplotlib": mpl,
        "commit": commit if commit not in ("unknown", "not installed") else "none (uncommitted tree)",
    }


# --------------------------------------------------------------------------- formatting

def fnum(v) -> str:
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _xs(res: dict, panel: str) -> list:
    xs = []
    for r in res["rows"]:
        if r["panel"] == panel and r["x"] not in xs:
            xs.append(r["x"])
    return xs


def _impl_order(res: dict) -> list[str]:
    return [i["name"] for i in res["impls"]]


def _cell(res, panel, x, impl):
    for r in res["rows"]:
        if r["panel"] == panel and r["x"] == x and r["impl"] == impl:
            return r
    return None


def _status_text(r: dict) -> str:
    if r["status"] == "ok":
        return fnum(r["median"]) + (f" [{fnum(r['min'])}–{fnum(r['max'])}]" if r["runs_ok"] > 1 else "")
    return {"failed": "**failed**", "unsupported": "unsupported"}.get(r["status"], r["status"])


def _speedup(res, a, b, higher_is_better=None):
    """ringo's speed-up `a` over `b` (> 1: ringo better), in the figure's direction unless
    `higher_is_better` is given (a cost field such as CPU time is lower-is-better)."""
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    hib = res["higher_is_better"] if higher_is_better is None else higher_is_better
    return a / b if hib else b / a


def _x_head(res, x) -> str:
    lab = res["x_label"]
    if lab == "queue depth":
        return f"QD {x}"
    if lab in ("connections", "count"):
        return f"{x:,}" if isinstance(x, int) else str(x)
    return str(x)


# --------------------------------------------------------------------------- CSV + plot

def write_csv(results_dir: str, res: dict) -> str:
    path = os.path.join(results_dir, f"{res['figure']}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in res["rows"]:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_FIELDS})
    return path


def write_plot(results_dir: str, res: dict, log=print) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("[report] matplotlib missing: no plots")
        return None
    panels = [p for p in res["panels"] if p["available"] and any(r["panel"] == p["name"] for r in res["rows"])]
    if not panels:
        panels = res["panels"][:1]
    if not panels:
        return None
    n = len(panels)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    width = 6.2 * cols if res["plot"] != "bars" else max(6.2 * cols, 11.0)
    fig, axes = plt.subplots(rows, cols, figsize=(width, 4.6 * rows), squeeze=False)
    impls = _impl_order(res)
    # Lines: colour = system (first word of the name), line style + marker = variant (the rest).
    # Bars: one colour per implementation.
    families = []
    variants = []
    for name in impls:
        fam, _, var = name.partition(" ")
        if fam not in families:
            families.append(fam)
        if var not in variants:
            variants.append(var)
    fam_cmap = plt.get_cmap("tab10")
    bar_cmap = plt.get_cmap("tab20")
    if res["plot"] == "bars":
        colour = {name: bar_cmap(i % 20) for i, name in enumerate(impls)}
    else:
        colour = {name: fam_cmap(families.index(name.partition(" ")[0]) % 10) for name in impls}
    styles = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1))]
    markers = "os^vD<>ph*xP"

    def var_index(name):
        return variants.index(name.partition(" ")[2])
    handles = {}
    for k, panel in enumerate(panels):
        ax = axes[k // cols][k % cols]
        pname = panel["name"]
        xs = _xs(res, pname)
        skipped = []
        if res["plot"] == "bars":
            shown = [i for i in impls if any(r["status"] == "ok" and r["impl"] == i and r["panel"] == pname
                                             for r in res["rows"])]
            bw = 0.8 / max(1, len(shown))
            for j, name in enumerate(shown):
                for xi, x in enumerate(xs):
                    r = _cell(res, pname, x, name)
                    if not r or r["status"] != "ok" or r["median"] is None:
                        continue
                    pos = xi - 0.4 + bw * (j + 0.5)
                    err = [[r["median"] - r["min"]], [r["max"] - r["median"]]]
                    h = ax.bar(pos, r["median"], bw, color=colour[name], yerr=err, capsize=2,
                               edgecolor="black" if name.startswith("ringo") else None,
                               linewidth=1.2 if name.startswith("ringo") else 0)
                    handles.setdefault(name, h)
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([str(x) for x in xs], rotation=20, ha="right")
            meds = [r["median"] for r in res["rows"] if r["panel"] == pname and r["status"] == "ok"
                    and r["median"]]
            if meds and max(meds) / min(meds) > 30:  # e.g. buffered writes next to page-cache reads
                ax.set_yscale("log")
        else:
            for j, name in enumerate(impls):
                pts = [(_cell(res, pname, x, name)) for x in xs]
                pts = [r for r in pts if r and r["status"] == "ok" and r["median"] is not None]
                if not pts:
                    continue
                xv = [r["x"] for r in pts]
                yv = [r["median"] for r in pts]
                lo = [r["median"] - r["min"] for r in pts]
                hi = [r["max"] - r["median"] for r in pts]
                ringo = name.startswith("ringo")
                vi = var_index(name)
                h = ax.errorbar(xv, yv, yerr=[lo, hi], color=colour[name], marker=markers[vi % len(markers)],
                                linestyle=styles[vi % len(styles)], linewidth=2.4 if ringo else 1.2,
                                markersize=6 if ringo else 4, capsize=2, label=name)
                handles.setdefault(name, h)
            if res["plot"] == "lines-log2x":
                ax.set_xscale("log", base=2)
                num = [x for x in xs if isinstance(x, (int, float))]
                if num:
                    ax.set_xticks(num)
                    ax.set_xticklabels([str(x) for x in num])
            elif res["plot"] == "loglog":
                ax.set_xscale("log")
                ax.set_yscale("log")
        for r in res["rows"]:
            if r["panel"] == pname and r["status"] != "ok":
                tag = f"{r['impl']}: {r['status']}"
                if tag not in skipped:
                    skipped.append(tag)
        if skipped:
            ax.text(0.01, 0.99, "not plotted:\n" + "\n".join(skipped[:8]) + ("\n…" if len(skipped) > 8 else ""),
                    transform=ax.transAxes, va="top", ha="left", fontsize=7, color="0.35")
        title = f"tier: {pname}" if res.get("storage") else pname
        if title:
            ax.set_title(title, fontsize=10)
        ax.set_xlabel(res.get("panel_x_labels", {}).get(pname, res["x_label"]))
        ax.set_ylabel(res["metric"])
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_yscale() == "linear":
            ax.set_ylim(bottom=0)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    fig.suptitle(f"{res['title']} — {res['profile']} profile", fontsize=12)
    if handles:
        ncol = max(1, min(len(handles), int(width // 2.3)))
        fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
                   ncol=ncol, fontsize=8, frameon=False)
        legend_rows = math.ceil(len(handles) / ncol)
        fig.tight_layout(rect=(0, 0.04 + 0.035 * legend_rows, 1, 0.96))
    else:
        fig.text(0.5, 0.5, "no successful runs", ha="center")
        fig.tight_layout(rect=(0, 0, 1, 0.96))
    path = os.path.join(results_dir, f"{res['figure']}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_figure(results_dir: str, res: dict, log=print) -> None:
    """<figure>.csv (a figure made of parts: every part's rows, the figure column naming the part)
    and <figure>.png, or one <part>.png per part."""
    write_csv(results_dir, res)
    for part in res.get("parts") or [res]:
        write_plot(results_dir, part, log)


# --------------------------------------------------------------------------- REPORT.md

def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _figure_section(res: dict, depth: int = 2) -> list[str]:
    """The section of one figure; `depth` is its heading level (a part of a figure: one deeper)."""
    h = "#" * depth
    L = [f"{h} {res['title']} (`{res['figure']}`)", ""]
    if res.get("parts"):
        return L + _parts_section(res, depth)
    meta = [f"profile {res['profile']}", f"{res['reps']} run(s) per point"
            + (" after a warm-up" if res.get("warmup") else "")]
    if res.get("seconds"):
        meta.append(f"{res['seconds']} s per run")
    if res.get("bs"):
        meta.append(f"block size {res['bs'] // 1024} KiB")
    if res.get("file_size"):
        meta.append(f"test file {res['file_size'] >> 20} MiB")
    meta.append(f"started {res['started']}, took {res['duration_s']:.0f} s")
    if res.get("pinning"):
        meta.append(res["pinning"])
    if res.get("other_load") is not None:
        meta.append(_other_load_note(res))
    elif res.get("load"):
        meta.append(f"load average {res['load'][0]:.2f} at the start, {res['load'][1]:.2f} at the end")
    L.append("; ".join(meta) + ".")
    L.append("")
    if res.get("taken_under_load"):
        again = len(res.get("load_attempts") or []) > 1
        L.append(f"**Taken under load:** other processes used {res['other_load'] * 100:.0f} % of the CPUs while this "
                 "figure ran" + (", also when it was taken again" if again else "") +
                 "; its numbers are noisier than the others and its verdicts weaker.")
        L.append("")
    if res.get("storage"):
        L.append("Storage tiers:")
        for p in res["panels"]:
            L.append(f"- **{p['name']}**: " + (p["description"] if p["available"]
                                                 else f"unavailable ({p['reason']})"))
        L.append("")
    for n in res.get("notes", []):
        L.append(f"> {n}")
    if res.get("notes"):
        L.append("")
    if os.path.exists(os.path.join(REPORT_DIR[0], f"{res['figure']}.png")):
        L += [f"![{res['figure']}]({res['figure']}.png)", ""]
    impls = _impl_order(res)
    not_built = [i for i in res["impls"] if i["status"] == "not built"]
    better = "higher is better" if res["higher_is_better"] else "lower is better"
    for panel in res["panels"]:
        if not panel["available"]:
            continue
        pname = panel["name"]
        xs = _xs(res, pname)
        if not xs:
            continue
        names = [i for i in impls if any(r["impl"] == i and r["panel"] == pname for r in res["rows"])]
        where = f" — tier {pname}" if res.get("storage") else (f" — {pname}" if pname else "")
        L.append(f"{h}# {res['metric']}{where} (median [min–max], {better})")
        L.append("")
        rows = []
        for name in names:
            row = [name]
            for x in xs:
                r = _cell(res, pname, x, name)
                row.append(_status_text(r) if r else "")
            rows.append(row)
        xl = res.get("panel_x_labels", {}).get(pname, res["x_label"])
        L += _table([xl] + [_x_head(res, x) for x in xs], rows)
        L.append("")
        # cost per operation
        caption, keys = COST.get(res["kind"], COST["storage"])
        if any(r.get(k) is not None for r in res["rows"] if r["panel"] == pname for k in keys):
            L.append(f"{caption}{where}:")
            L.append("")
            rows = []
            for name in names:
                row = [name]
                for x in xs:
                    r = _cell(res, pname, x, name)
                    if not r or r["status"] != "ok":
                        row.append("")
                        continue
                    row.append(" · ".join(fnum(r.get(k)) + ("ˢ" if k in SYSCALL_KEYS and r.get(k) is not None
                                                               and r.get("syscalls_source") == "strace" else "")
                                          for k in keys))
                rows.append(row)
            L += _table([xl] + [_x_head(res, x) for x in xs], rows)
            L.append("")
            if any(r.get("syscalls_source") == "strace" for r in res["rows"] if r["panel"] == pname):
                L.append("ˢ counted in a separate untimed run under `strace -f -c` (every thread; the program's "
                         "set-up calls included), for programs that cannot count their own calls.")
                L.append("")
        L += _waits_section(res, pname, names, xs, where)
        L += _instructions_section(res, pname, names, xs, where)
        # bandwidth next to IOPS (sync vs async)
        if res["kind"] == "syncasync" and any(r.get("mib_s") is not None for r in res["rows"] if r["panel"] == pname):
            L.append(f"Bandwidth in MiB/s{where} (median of the runs' bytes / seconds):")
            L.append("")
            rows = []
            for name in names:
                row = [name]
                for x in xs:
                    r = _cell(res, pname, x, name)
                    row.append(fnum(r.get("mib_s")) if r and r["status"] == "ok" else "")
                rows.append(row)
            L += _table([xl] + [_x_head(res, x) for x in xs], rows)
            L.append("")
        # latency
        if res["kind"] in ("syncasync", "echo", "http"):
            L.append(f"Latency p50 / p99 in µs{where}" +
                     (" (mixed: r = reads, w = writes):" if res["kind"] == "syncasync" else ":"))
            L.append("")
            rows = []
            for name in names:
                row = [name]
                for x in xs:
                    r = _cell(res, pname, x, name)
                    if not r or r["status"] != "ok":
                        row.append("")
                    elif r.get("read_p50_us") is not None and r.get("write_p50_us") is not None:
                        row.append(f"r {fnum(r['read_p50_us'])} / {fnum(r['read_p99_us'])}, "
                                   f"w {fnum(r['write_p50_us'])} / {fnum(r['write_p99_us'])}")
                    else:
                        row.append(f"{fnum(r.get('p50_us'))} / {fnum(r.get('p99_us'))}")
                rows.append(row)
            L += _table([res["x_label"]] + [_x_head(res, x) for x in xs], rows)
            L.append("")
        if res["kind"] == "pipes":
            L.append(f"avg ± stdev, min, max in ms over the measured runs{where}:")
            L.append("")
            rows = []
            for n in names:
                row = [n]
                for x in xs:
                    r = _cell(res, pname, x, n)
                    row.append(f"{fnum(r.get('mean'))} ± {fnum(r.get('stdev'))}, {fnum(r.get('min'))}, "
                               f"{fnum(r.get('max'))}" if r and r["status"] == "ok" else "")
                rows.append(row)
            L += _table([xl] + [str(x) for x in xs], rows)
            L.append("")
        if pname in DETAILS:
            caption, cols = DETAILS[pname]
            drows = []
            for name in names:
                for x in xs:
                    r = _cell(res, pname, x, name)
                    if r and r["status"] == "ok" and any(r.get(k) is not None for _, k in cols):
                        drows.append([name, _x_head(res, x)] + [fnum(r.get(k)) for _, k in cols])
            if drows:
                L.append(f"{caption}{where}:")
                L.append("")
                L += _table(["", xl] + [c for c, _ in cols], drows)
                L.append("")
        # ratios
        L += _ratio_section(res, pname, xs, where)
    L += _targets_section(res)
    failed = [r for r in res["rows"] if r["status"] == "failed"]
    unsup = {}
    for r in res["rows"]:
        if r["status"] == "unsupported":
            unsup.setdefault((r["impl"], r["panel"]), r["error"])
    if unsup:
        L.append("Unsupported here: " + "; ".join(f"{i} on {p or 'this machine'} ({e})" for (i, p), e in unsup.items())
                 + ".")
        L.append("")
    if failed:
        L.append("Failed points (not plotted):")
        L.append("")
        groups: dict[tuple, list] = {}
        for r in failed:
            groups.setdefault((r["impl"], r["panel"]), []).append(r)
        for (impl, panel), rs in list(groups.items())[:25]:
            where = ", ".join(_x_head(res, r["x"]) for r in rs)
            errs = []
            for r in rs:
                if r["error"] not in errs:
                    errs.append(r["error"])
            L.append(f"- {impl}, {panel + ', ' if panel else ''}{where}: {'; '.join(errs[:2])}"
                     + (" …" if len(errs) > 2 else ""))
        if len(groups) > 25:
            L.append(f"- … more in {res['figure']}.csv")
        L.append("")
    if not_built:
        L.append("Not built: " + "; ".join(f"{i['name']} ({i['reason']})" for i in not_built) + ".")
        L.append("")
    return L


def _other_load_note(res: dict) -> str:
    """What other processes used of the CPUs while a figure ran, and how long it waited for a
    quiet machine (for the figure's line of facts)."""
    att = res.get("load_attempts") or []
    waited = sum(a.get("waited_s", 0) for a in att)
    return (f"other processes used {res['other_load'] * 100:.0f} % of the CPUs while it ran"
            + (f" (waited {waited:.0f} s for a quiet machine)" if waited >= 5 else "")
            + (f"; taken {len(att)} times, the last one shown" if len(att) > 1 else ""))


SYSCALL_KEYS = ("syscalls_per_op", "server_syscalls_per_msg")


def _parts_section(res: dict, depth: int) -> list[str]:
    """A figure made of parts: its own line (when, how long, the machine's load) and notes, then
    every part's section one heading level deeper."""
    meta = [f"profile {res['profile']}", f"started {res['started']}, took {res['duration_s']:.0f} s"]
    if res.get("other_load") is not None:
        meta.append(_other_load_note(res))
    L = ["; ".join(meta) + ".", ""]
    if res.get("taken_under_load"):
        L += [f"**Taken under load:** other processes used {res['other_load'] * 100:.0f} % of the CPUs while this "
              "figure ran; its numbers are noisier than the others and its verdicts weaker.", ""]
    for n in res.get("notes", []):
        L.append(f"> {n}")
    if res.get("notes"):
        L.append("")
    for part in res["parts"]:
        L += _figure_section(part, depth + 1)
    return L


def _waits_section(res, pname, names, xs, where) -> list[str]:
    """Kernel entries per operation from the strace pass, where every row of the panel has one."""
    rows = []
    for name in names:
        row = [name]
        for x in xs:
            r = _cell(res, pname, x, name)
            row.append(fnum(r.get("waits_per_op")) + " (" + fnum(r.get("strace_syscalls_per_op")) + ")"
                       if r and r.get("waits_per_op") is not None else "")
        if any(row[1:]):
            rows.append(row)
    if len(rows) < 2 or res["kind"] != "micro":
        return []
    L = [f"Kernel entries per operation{where}: waits and reaps (io_uring_enter, epoll_wait, ...) per operation, "
         "and in brackets every system call per operation, counted for every row in one untimed run under "
         "`strace -f -c`:", ""]
    L += _table([res.get("panel_x_labels", {}).get(pname, res["x_label"])] + [_x_head(res, x) for x in xs], rows)
    L.append("")
    return L


def _instructions_section(res, pname, names, xs, where) -> list[str]:
    """Wall time, CPU time and callgrind instructions side by side (panels judged on instructions)."""
    rows = []
    for name in names:
        for x in xs:
            r = _cell(res, pname, x, name)
            if r and r["status"] == "ok" and r.get("instr_per_op") is not None:
                rows.append([name, _x_head(res, x), fnum(r.get("ns_per_op")),
                             fnum(r["cpu_us_per_op"] * 1000 if r.get("cpu_us_per_op") is not None else None),
                             fnum(r["user_us_per_op"] * 1000 if r.get("user_us_per_op") is not None else None),
                             fnum(r["instr_per_op"]), fnum(r.get("allocs_per_op"))])
    if not rows:
        return []
    L = [f"Wall time, CPU time and user-space instructions per operation{where} (wall and CPU: medians of the "
         "runs; instructions: callgrind, the slope between two run lengths, the same on every run). On a shared "
         "machine wall time is noise for an operation this small; it is judged on CPU time and instructions:", ""]
    L += _table(["", res.get("panel_x_labels", {}).get(pname, res["x_label"]), "wall ns", "CPU ns",
                 "user CPU ns", "instructions", "heap allocations"], rows)
    L.append("")
    return L


def _ratio_section(res, pname, xs, where) -> list[str]:
    rows_ok = [r for r in res["rows"] if r["panel"] == pname and r["status"] == "ok"]
    ringo = [i for i in _impl_order(res) if i.startswith("ringo") and any(r["impl"] == i for r in rows_ok)]
    tags = {i["name"]: i["tag"] for i in res["impls"]}
    if not ringo:
        if any(i.startswith("ringo") for i in _impl_order(res)):
            return [f"Ringo vs baselines{where}: no ringo results in this run.", ""]
        return []
    L = [f"Ringo vs baselines{where}: speed-up (ratio of medians; > 1 means ringo is better):", ""]
    rows = []
    for ri in ringo:
        for b in _impl_order(res):
            if b.startswith("ringo") or not any(r["impl"] == b for r in rows_ok):
                continue
            if tags.get(ri) and tags.get(b) and tags[ri] != tags[b]:
                continue
            if tags.get(ri) and not tags.get(b):
                continue
            row = [f"{ri} / {b}"]
            for x in xs:
                a, c = _cell(res, pname, x, ri), _cell(res, pname, x, b)
                s = _speedup(res, a["median"] if a and a["status"] == "ok" else None,
                             c["median"] if c and c["status"] == "ok" else None)
                row.append(f"{s:.2f}x" if s else "")
            rows.append(row)
    if not rows:
        return []  # no baseline runs in this panel (e.g. a ringo-only measurement)
    L += _table(["ringo / baseline"] + [_x_head(res, x) for x in xs], rows)
    L.append("")
    return L


def _bounds(r: dict, on: str):
    """(median, min, max) over the runs of the metric, or of the secondary field `on`."""
    if not on:
        return r.get("median"), r.get("min"), r.get("max")
    lo_hi = (r.get("ranges") or {}).get(on)
    if r.get(on) is None:
        return None, None, None
    return (r[on], lo_hi[0], lo_hi[1]) if lo_hi else (r[on], r[on], r[on])


VERDICT_RULE = ("A target is **met** when it holds across the runs' spread (ringo's worst run against the "
                "baseline's best), **not met** when it fails across the spread (ringo's best run against the "
                "baseline's worst), and **inconclusive** when the spread straddles the bar.")


def _combine(verdicts: list[str]) -> str:
    if "not met" in verdicts:
        return "**not met**"
    if all(v == "met" for v in verdicts):
        return "met"
    return "inconclusive"


def _targets_section(res) -> list[str]:
    if not res.get("targets"):
        return []
    L = ["Targets for ringo (" + VERDICT_RULE[0].lower() + VERDICT_RULE[1:] + "):", ""]
    rows = []
    have = {r["impl"] for r in res["rows"] if r["status"] == "ok"}
    if not any(t["ringo"] in have for t in res["targets"]):
        names = sorted({t["ringo"] for t in res["targets"]})
        return [f"Targets for ringo: not checked, no results for {', '.join(names)} in this run.", ""]
    for t in res["targets"]:
        for panel in res["panels"]:
            if not panel["available"]:
                continue
            pname = panel["name"]
            if t.get("panel") and t["panel"] != pname:
                continue
            xs = _xs(res, pname)
            present = {r["impl"] for r in res["rows"] if r["panel"] == pname}
            if t["ringo"] not in present and t["baseline"] not in present:
                continue  # neither runs on this tier in this profile
            if t.get("field"):
                rows.append(_value_target_row(res, t, pname, xs))
                continue
            if t.get("from_instructions"):
                row = _instructions_target_row(res, t, pname, xs)
                if row:
                    rows.append(row)
                    continue
            on = t.get("on", "")
            # the metric's direction, or the field's: lower is better for a cost (CPU time,
            # instructions) unless the target says otherwise (requests/s)
            hib = res["higher_is_better"] if not on else bool(t.get("higher_is_better", False))
            points = []
            for x in xs:
                a, b = _cell(res, pname, x, t["ringo"]), _cell(res, pname, x, t["baseline"])
                if not (a and b and a["status"] == "ok" and b["status"] == "ok"):
                    continue
                (am, alo, ahi), (bm, blo, bhi) = _bounds(a, on), _bounds(b, on)
                med = _speedup(res, am, bm, hib)
                if med is None:
                    continue
                worst = _speedup(res, alo, bhi, hib) if hib else _speedup(res, ahi, blo, hib)
                best = _speedup(res, ahi, blo, hib) if hib else _speedup(res, alo, bhi, hib)
                need = t["min_ratio"]
                v = "met" if worst >= need else ("not met" if best < need else "inconclusive")
                points.append((x, med, worst, best, v))
            if t["where"] == "max x" and points:
                points = [points[-1]]
            label = f"{t['ringo']} vs {t['baseline']}: {t['text']}" + (f" ({pname})" if pname else "")
            if not points:
                rows.append([label, "no data", ""])
                continue
            status = _combine([p[4] for p in points])
            # The point that decides the status is shown: a failing one when the target is not
            # met, else one that is not met for sure, else the lowest median ratio.
            decisive = [p for p in points if p[4] == "not met"] or [p for p in points if p[4] != "met"] or points
            shown = min(decisive, key=lambda p: p[1])
            what = f"{on}, " if on else ""
            rows.append([label, status, f"{shown[1]:.2f}x at {_x_head(res, shown[0])}, {shown[2]:.2f}x–{shown[3]:.2f}x "
                                        f"across the runs ({what}needs {t['min_ratio']:.2f}x)"])
    L += _table(["target", "status", "ratio of medians at the worst point, worst–best across the runs"], rows)
    L.append("")
    return L


def _instructions_target_row(res, t, pname, xs) -> list[str] | None:
    """A CPU-time ratio judged from user-space instructions, for two rows that make the same
    system calls per operation (and the same kernel work), so that only user-space code separates
    them: the ringo row's CPU time is the baseline's plus the difference in callgrind instructions
    times the CPU time a user-space instruction takes in the runs (user CPU time over instructions;
    the lowest and highest of both rows' runs). Met when the ratio clears the bar at the baseline's
    fastest and slowest CPU time and at the fastest and slowest instruction, not met when it fails
    at all four, inconclusive otherwise. None (the caller judges on CPU time) when a row lacks
    instructions or user time, or the system calls differ."""
    label = f"{t['ringo']} vs {t['baseline']}: {t['text']}" + (f" ({pname})" if pname else "")
    points = []
    for x in xs:
        a, b = _cell(res, pname, x, t["ringo"]), _cell(res, pname, x, t["baseline"])
        if not (a and b and a["status"] == "ok" and b["status"] == "ok"):
            continue
        ia, ib = a.get("instr_per_op"), b.get("instr_per_op")
        sa, sb = a.get("syscalls_per_op"), b.get("syscalls_per_op")
        if not (ia and ib and sa is not None and sb is not None) or abs(sa - sb) > 0.005 * max(sa, sb, 1e-9):
            return None
        (bm, blo, bhi) = _bounds(b, "cpu_us_per_op")
        (uam, ualo, uahi), (ubm, ublo, ubhi) = _bounds(a, "user_us_per_op"), _bounds(b, "user_us_per_op")
        if None in (bm, blo, bhi, uam, ualo, uahi, ubm, ublo, ubhi) or bm <= 0:
            return None
        k_med = (uam / ia + ubm / ib) / 2
        k_lo, k_hi = min(ualo / ia, ublo / ib), max(uahi / ia, ubhi / ib)
        d = ia - ib

        def speedup(c, k):
            return c / (c + d * k)
        corners = [speedup(c, k) for c in (blo, bhi) for k in (k_lo, k_hi)]
        worst, best, need = min(corners), max(corners), t["min_ratio"]
        v = "met" if worst >= need else ("not met" if best < need else "inconclusive")
        points.append((x, speedup(bm, k_med), worst, best, v, ia, ib, k_med, k_lo, k_hi, sb))
    if not points:
        return None
    if t["where"] == "max x":
        points = [points[-1]]
    decisive = [p for p in points if p[4] == "not met"] or [p for p in points if p[4] != "met"] or points
    x, med, worst, best, _, ia, ib, k_med, k_lo, k_hi, sc = min(decisive, key=lambda p: p[1])
    return [label, _combine([p[4] for p in points]),
            f"{med:.3f}x at {_x_head(res, x)}, {worst:.3f}x–{best:.3f}x across the runs, from instructions: "
            f"{fnum(ia)} vs {fnum(ib)} per operation at {k_med * 1000:.2f} ns each in user space "
            f"({k_lo * 1000:.2f}–{k_hi * 1000:.2f}), the same {sc:.2f} system calls per operation "
            f"(needs {need:.2f}x)"]


def _value_target_row(res, t, pname, xs) -> list[str]:
    """A target on one of the ringo row's own per-run values, e.g. at most 2 event-loop syscalls
    per round trip: met when every run's value holds at every x (at the largest x only for a
    "max x" target), not met when every run's value fails at some x, inconclusive otherwise."""
    label = f"{t['ringo']}: {t['text']}" + (f" ({pname})" if pname else "")
    vals = []
    for x in xs:
        r = _cell(res, pname, x, t["ringo"])
        if r and r["status"] == "ok" and r.get(t["field"]) is not None:
            vals.append((x,) + _bounds(r, t["field"]))
    if vals and t.get("where") == "max x":
        vals = [max(vals, key=lambda p: p[0])]
    if not vals:
        return [label, "no data", f"no {t['field']} in the ringo runs"]
    verdicts = ["met" if hi <= t["max_value"] else ("not met" if lo > t["max_value"] else "inconclusive")
                for _, _, lo, hi in vals]
    worst = max(vals, key=lambda p: p[1])
    return [label, _combine(verdicts),
            f"{fnum(worst[1])} at {_x_head(res, worst[0])}, {fnum(worst[2])}–{fnum(worst[3])} across the runs "
            f"(needs at most {fnum(t['max_value'])}; {t['field']})"]


def _short_list(v) -> str:
    v = list(v)
    if all(isinstance(x, int) for x in v):
        return ", ".join(f"{x:,}" for x in v)
    return ", ".join(str(x) for x in v)


def _points_by_panel(prof: dict, key: str) -> dict:
    out: dict = {}
    for p in prof.get("points", []):
        out.setdefault(p.get("panel", ""), []).append(p.get(key, p["x"]))
    return out


def quick_reductions(fig_name: str) -> list[str]:
    """What the quick profile of one figure leaves out or shrinks compared with the full one, read
    from registry.py (so the report cannot drift from what was run)."""
    try:
        try:
            from . import registry
        except ImportError:  # report.py imported on its own, bench/driver on sys.path
            import registry
        fig = registry.figure(fig_name)
    except (ImportError, KeyError):
        return []
    return _reductions_of(fig, registry)


def _reductions_of(fig, registry) -> list[str]:
    if fig.parts:
        return [f"{part.name}: {r}" for part in fig.parts for r in _reductions_of(part, registry)]
    q, f = fig.profiles.get("quick", {}), fig.profiles.get("full", {})
    out = []
    if q.get("xs") != f.get("xs") and q.get("xs") and f.get("xs"):
        lab = "QD" if fig.x_label == "queue depth" else fig.x_label
        out.append(f"{lab} {_short_list(q['xs'])} only (full: {_short_list(f['xs'])})")
    if fig.kind == "syncasync":
        qx = [p["x"] for p in q.get("points", [])]
        fx = [p["x"] for p in f.get("points", [])]
        if qx != fx:
            miss = sorted({p.split()[0] for p in fx} - {p.split()[0] for p in qx})
            out.append(f"workloads {', '.join(sorted({p.split()[0] for p in qx}))} only "
                       f"(full adds {', '.join(miss)})")
    elif q.get("points") and f.get("points") and q["points"] != f["points"]:
        qp, fp = _points_by_panel(q, "count"), _points_by_panel(f, "count")
        groups: dict = {}  # panels with the same reduction are named together
        for panel in fp:
            if qp.get(panel) != fp[panel]:
                groups.setdefault((tuple(qp.get(panel, [])), tuple(fp[panel])), []).append(panel or "points")
        for (ql, fl), panels in groups.items():
            out.append(f"{', '.join(panels)}: {fig.x_label if len(panels) > 1 else ''}"
                       .replace(": count", ": counts").rstrip() + f" {_short_list(ql)} (full: {_short_list(fl)})")
        qm = {p.get("messages") for p in q["points"] if p.get("messages")}
        fm = {p.get("messages") for p in f["points"] if p.get("messages")}
        if qm and fm and qm != fm:
            out.append(f"messages per pair {_short_list(sorted(qm))} (full: {_short_list(sorted(fm))})")
    for key, text in (("seconds", "{} s per run (full: {} s)"), ("warmup_seconds", "{} s warm-up (full: {} s)"),
                      ("reps", "median of {} runs (full: {})")):
        if q.get(key) != f.get(key) and q.get(key) is not None and f.get(key) is not None:
            out.append(text.format(q[key], f[key]))
    if fig.storage:
        qs, fs = registry.FILE_SIZE["quick"], registry.FILE_SIZE["full"]
        if qs != fs:
            def size(b):
                return f"{b >> 30} GiB" if b >= 1 << 30 and b % (1 << 30) == 0 else f"{b >> 20} MiB"
            out.append(f"test file {size(qs)} (full: {size(fs)})")
        if q.get("tiers") != f.get("tiers"):
            out.append(f"tiers {', '.join(q.get('tiers', []))} (full: {', '.join(f.get('tiers', []))})")
        for tier, flt in q.get("tier_filter", {}).items():
            doc = (flt.__doc__ or "").strip().split(":")[0].rstrip(".")
            out.append(f"{tier} tier: " + (doc[0].lower() + doc[1:] if doc else "some rows only"))
    full_only = [i.name for i in fig.impls if "quick" not in i.profiles and "full" in i.profiles]
    if full_only:
        out.append("rows run only in the full profile: " + ", ".join(full_only))
    return out


def _reductions_section(figs) -> list[str]:
    quick = [r for r in figs if r.get("profile") == "quick"]
    if not quick:
        return []
    L = ["## What the quick profile leaves out", "",
         "The quick profile is a reduced run (`scripts/bench --full` runs everything at full size). "
         "For the figures below it differs from the full profile in:", ""]
    for res in quick:
        red = quick_reductions(res["figure"])
        if red:
            L.append(f"- **{res['title']}** (`{res['figure']}`): " + "; ".join(red) + ".")
    L.append("")
    return L


REPORT_DIR = [""]


def write_all(results_dir: str, log=print) -> str:
    REPORT_DIR[0] = results_dir
    figs = []
    for name in ORDER + sorted(f[:-5] for f in os.listdir(results_dir) if f.endswith(".json")):
        p = os.path.join(results_dir, f"{name}.json")
        if name == "machine" or name in [f["figure"] for f in figs] or not os.path.exists(p):
            continue
        with open(p) as fh:
            res = json.load(fh)
        if "figure" in res:
            figs.append(res)
    try:
        with open(os.path.join(results_dir, "machine.json")) as fh:
            m = json.load(fh)
    except (OSError, ValueError):
        m = {}
    for res in figs:  # CSV/PNG are cheap; keep them in step with the JSON
        write_figure(results_dir, res, log)
    L = ["# ringo benchmark report", ""]
    profiles = sorted({r["profile"] for r in figs})
    L.append(f"Generated {dt.datetime.now().isoformat(timespec='seconds')} by `scripts/bench` "
             f"(profile {', '.join(profiles) or '–'}). Each figure section gives its own date and settings.")
    L.append("")
    L.append("## Machine")
    L.append("")
    keys = [("CPU", "cpu"), ("nproc", "nproc"), ("memory", "memory"), ("kernel", "kernel"), ("OS", "os"),
            ("compiler", "compiler"), ("CMake", "cmake"), ("liburing", "liburing"), ("libaio", "libaio"),
            ("Asio", "asio"), ("rustc", "rustc"), ("fio", "fio"), ("nginx", "nginx"), ("wrk", "wrk"),
            ("Python / matplotlib", None),
            ("commit", "commit")]
    rows = []
    for label, k in keys:
        v = f"{m.get('python', '?')} / {m.get('matplotlib', '?')}" if k is None else str(m.get(k, "unknown"))
        rows.append([label, v])
    L += ["| | |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    L.append("")
    L.append("## How to read this")
    L.append("")
    L += [
        "- Every data point is the median of several runs taken after a warm-up run; implementations are "
        "interleaved (each round runs every implementation once, the order rotated each round). "
        "Brackets give the min and max of those runs.",
        "- Every program checks every I/O result. A run that reports an error, says `ok: false`, exits "
        "non-zero or prints no JSON is **failed**: the point is shown as failed and never plotted.",
        "- *unsupported* means the kernel or device refused the feature (probed once per tier, e.g. IOPOLL "
        "on a device without poll queues); *not built* means the program is missing from the build.",
        "- Storage figures run on two tiers: **loop** (a loop device on /dev/shm: stable, measures the "
        "software cost per I/O; while its rows run the device's kernel workers are kept on the programs' "
        "CPU, so a direct I/O's device work shares that CPU with the program: the tier's line says so "
        "when they could be kept there) and **disk** (a file on the machine's real disk, here a noisy "
        "virtio disk).",
        "- Ratios are ringo's speed-up over each baseline at the same point (> 1 = ringo better). "
        + VERDICT_RULE,
        "- Every program is pinned to the same CPU (`taskset`; each figure says how), the same for every "
        "implementation.",
        "- Before each figure the driver waits (bounded) for a quiet machine, and takes a figure again when "
        "other processes used more than a tenth of the CPUs while it ran; a figure still taken under load says so.",
        "- \"–\" means the program does not report that value. Syscall counts marked ˢ come from a separate "
        "untimed run under `strace -f -c`, for the programs that cannot count their own calls (the Rust "
        "baselines, Asio, fio; see bench/driver/README.md, \"Syscall counts\").",
        "",
    ]
    L += _reductions_section(figs)
    if figs:
        L.append("Figures: " + ", ".join(f"[{r['title']}](#{_anchor(r)})" for r in figs) + ".")
        L.append("")
    for res in figs:
        L += _figure_section(res)
    path = os.path.join(results_dir, "REPORT.md")
    with open(path, "w") as fh:
        fh.write("\n".join(L).rstrip() + "\n")
    log(f"[report] wrote {path}")
    return path


def _anchor(res) -> str:
    text = f"{res['title']} ({res['figure']})".lower()
    out = "".join(c for c in text if c.isalnum() or c in " -_")
    return out.replace(" ", "-")
