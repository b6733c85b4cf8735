"""Tests of the benchmark driver: verdicts, strace parsing, the command line, and the report
generated from a small recorded result set (tests/data: the micro figure's nop, yield and spawn
panels at two counts, from a quick-profile run). Run from the repository's root:

    python3 -m unittest discover -s bench/driver/tests -t .
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from bench.driver import counting, execute, report, tiers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def _row(impl, x, values, **fields):
    vals = sorted(values)
    mid = vals[len(vals) // 2]
    row = {"figure": "f", "panel": "", "x": x, "impl": impl, "tag": "", "ringo": impl.startswith("ringo"),
           "status": "ok", "runs_ok": len(vals), "median": mid, "min": vals[0], "max": vals[-1], "values": vals,
           "ranges": {}}
    for k, v in fields.items():
        row[k] = sorted(v)[len(v) // 2]
        row["ranges"][k] = [min(v), max(v)]
    return row


def _res(rows, targets, higher_is_better=False):
    return {"figure": "f", "title": "t", "kind": "micro", "higher_is_better": higher_is_better, "x_label": "count",
            "panels": [{"name": "", "available": True}], "impls": [{"name": "ringo", "tag": ""},
                                                                   {"name": "base", "tag": ""}],
            "rows": rows, "targets": targets}


def _target(min_ratio, on="", field="", max_value=None):
    return {"ringo": "ringo", "baseline": "" if field else "base", "min_ratio": min_ratio, "where": "every x",
            "text": "the target", "field": field, "max_value": max_value, "panel": "", "on": on}


def _status(lines):
    rows = [ln for ln in lines if ln.startswith("| ringo")]
    assert len(rows) == 1, lines
    return rows[0].split("|")[2].strip()


class Verdicts(unittest.TestCase):
    # lower is better: a speed-up is base / ringo; the target asks for at least 2x
    def test_met_only_when_the_worst_runs_clear_the_bar(self):
        res = _res([_row("ringo", 1, [40, 42, 44]), _row("base", 1, [90, 95, 100])], [_target(2.0)])
        self.assertEqual(_status(report._targets_section(res)), "met")  # 90 / 44 = 2.05

    def test_not_met_when_the_best_runs_miss_the_bar(self):
        res = _res([_row("ringo", 1, [50, 52, 55]), _row("base", 1, [80, 85, 90])], [_target(2.0)])
        self.assertEqual(_status(report._targets_section(res)), "**not met**")  # 90 / 50 = 1.8

    def test_inconclusive_when_the_spread_straddles_the_bar(self):
        # medians 45 vs 95 clear 2x, but ringo's worst run (60) against base's best (90) does not
        res = _res([_row("ringo", 1, [40, 45, 60]), _row("base", 1, [90, 95, 100])], [_target(2.0)])
        self.assertEqual(_status(report._targets_section(res)), "inconclusive")

    def test_one_failing_point_fails_the_target(self):
        rows = [_row("ringo", 1, [40, 41, 42]), _row("base", 1, [90, 91, 92]),
                _row("ringo", 2, [60, 61, 62]), _row("base", 2, [90, 91, 92])]
        self.assertEqual(_status(report._targets_section(_res(rows, [_target(2.0)]))), "**not met**")

    def test_the_point_shown_is_the_one_that_decides(self):
        # x=1 has the lower median ratio (95 / 56 = 1.70x) but straddles the bar (100 / 20);
        # x=2 (87 / 49 = 1.78x) fails across its spread (90 / 48 = 1.875): the row says not met
        # and shows x=2, the point that failed, not x=1.
        rows = [_row("ringo", 1, [20, 56, 60]), _row("base", 1, [90, 95, 100]),
                _row("ringo", 2, [48, 49, 50]), _row("base", 2, [85, 87, 90])]
        lines = report._targets_section(_res(rows, [_target(2.0)]))
        self.assertEqual(_status(lines), "**not met**")
        row = [ln for ln in lines if ln.startswith("| ringo")][0]
        self.assertIn("1.78x at 2,", row)

    def test_higher_is_better_metric(self):
        res = _res([_row("ringo", 1, [200, 210, 220]), _row("base", 1, [95, 100, 99])], [_target(2.0)], True)
        self.assertEqual(_status(report._targets_section(res)), "met")  # 200 / 100

    def test_ratio_on_a_cost_field(self):
        rows = [_row("ringo", 1, [1, 1, 1], cpu_us_per_op=[0.30, 0.31, 0.32]),
                _row("base", 1, [9, 9, 9], cpu_us_per_op=[0.40, 0.41, 0.42])]
        # on the metric ringo is 9x better; on CPU time 0.40 / 0.32 = 1.25x, short of 1.5x
        self.assertEqual(_status(report._targets_section(_res(rows, [_target(1.5, on="cpu_us_per_op")]))),
                         "**not met**")
        self.assertEqual(_status(report._targets_section(_res(rows, [_target(1.2, on="cpu_us_per_op")]))), "met")

    def test_value_target_across_runs(self):
        t = [_target(0, field="cpu_us_per_op", max_value=0.060)]
        for runs, want in (([0.050, 0.055, 0.058], "met"), ([0.061, 0.070, 0.080], "**not met**"),
                           ([0.050, 0.055, 0.090], "inconclusive")):
            res = _res([_row("ringo", 1, [1, 1, 1], cpu_us_per_op=runs)], t)
            self.assertEqual(_status(report._targets_section(res)), want, runs)

    def _layer(self, instr, syscalls=(2.0, 2.0)):
        """ringo (the high-level row) and base (op::): CPU times that straddle a 2 % bar, and user
        time ~0.6 µs per operation at about 1 ns an instruction."""
        rows = [_row("ringo", 1, [1, 1, 1], cpu_us_per_op=[14.0, 16.0, 21.0], user_us_per_op=[0.55, 0.60, 0.70],
                     syscalls_per_op=[syscalls[0]] * 3),
                _row("base", 1, [1, 1, 1], cpu_us_per_op=[12.0, 15.0, 20.0], user_us_per_op=[0.50, 0.55, 0.65],
                     syscalls_per_op=[syscalls[1]] * 3)]
        rows[0]["instr_per_op"], rows[1]["instr_per_op"] = instr
        t = dict(_target(0.98, on="cpu_us_per_op"), from_instructions=True)
        return report._targets_section(_res(rows, [t]))

    def test_from_instructions_when_only_user_code_differs(self):
        # 43 more instructions at <= 1.1 ns each (0.70 µs / 654): ~47 ns on >= 12 µs, < 0.4 %
        lines = self._layer((697, 654))
        self.assertEqual(_status(lines), "met")
        self.assertIn("from instructions: 697 vs 654", "".join(lines))
        # the same CPU times judged as measured straddle the bar
        t = _target(0.98, on="cpu_us_per_op")
        rows = [_row("ringo", 1, [1], cpu_us_per_op=[14.0, 16.0, 21.0]), _row("base", 1, [1], cpu_us_per_op=[12.0, 15.0, 20.0])]
        self.assertEqual(_status(report._targets_section(_res(rows, [t]))), "inconclusive")

    def test_from_instructions_not_met_when_the_layer_doubles_the_user_code(self):
        # 12 000 more instructions at >= 0.84 ns each (0.55 µs / 654): >= 10 µs on <= 20 µs
        self.assertEqual(_status(self._layer((12_654, 654))), "**not met**")

    def test_from_instructions_needs_the_same_system_calls(self):
        # one more system call per operation is kernel work the instructions do not see: judged
        # on the measured CPU time instead (which straddles the bar here)
        lines = self._layer((697, 654), syscalls=(3.0, 2.0))
        self.assertEqual(_status(lines), "inconclusive")
        self.assertNotIn("from instructions", "".join(lines))


STRACE_SAMPLE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 61.20    0.004200          12       333           io_uring_enter
 20.00    0.001372          10       137           mmap
  9.00    0.000617           9        64         3 openat
  0.10    0.000010          10         1           exit_group
------ ----------- ----------- --------- --------- ----------------
100.00    0.006199                   535         3 total
"""


class Strace(unittest.TestCase):
    def test_summary_counts_every_call_but_the_total_line(self):
        calls = counting.parse_strace_summary(STRACE_SAMPLE)
        self.assertEqual(calls, {"io_uring_enter": 333, "mmap": 137, "openat": 64, "exit_group": 1})
        self.assertEqual(sum(calls.values()), 535)

    def test_garbage_gives_nothing(self):
        self.assertEqual(counting.parse_strace_summary("strace: exec: No such file or directory\n"), {})

    @unittest.skipUnless(counting.have_strace(), "strace is not installed")
    def test_real_strace_run(self):
        path = counting.strace_file()
        subprocess.run(counting.strace_prefix(path) + [sys.executable, "-c", "import os; [os.getppid() for _ in range(50)]"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        calls = counting.read_strace(path)
        self.assertIsNotNone(calls)
        self.assertGreaterEqual(calls.get("getppid", 0), 50)
        self.assertFalse(os.path.exists(path))


class LoopWorkerPinning(unittest.TestCase):
    """The unbound workqueues' cpumask, here a file in a temporary folder that also holds the
    loop tier's state file."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name
        self.mask = os.path.join(self.d, "cpumask")
        self.saved, tiers.WQ_CPUMASK = tiers.WQ_CPUMASK, self.mask

    def tearDown(self):
        tiers.WQ_CPUMASK = self.saved
        self.dir.cleanup()

    def write(self, mask: str, state: str) -> None:
        with open(self.mask, "w") as f:
            f.write(mask + "\n")
        with open(os.path.join(self.d, tiers.STATE_NAME), "w") as f:
            f.write(state + "\n")

    def read_mask(self) -> str:
        with open(self.mask) as f:
            return f.read()

    def test_cpumask_text_is_the_kernels_format(self):
        self.assertEqual(tiers.cpumask_text([1]), "00000002")
        self.assertEqual(tiers.cpumask_text([0, 1]), "00000003")
        self.assertEqual(tiers.cpumask_text([33]), "00000002,00000000")

    def test_pin_workers_saves_sets_and_restores_the_mask(self):
        self.write("3", "loop=/dev/loop9")
        t = tiers.Tiers(self.d, 1 << 20, log=lambda *_: None)
        t.worker_cpus = [1]
        self.assertEqual(t.pin_workers(True), "")
        self.assertEqual(t.pin_workers(True), "")  # idempotent
        self.assertEqual(self.read_mask(), "00000002\n")
        self.assertEqual(tiers._read_state(self.d).get("wq_cpumask"), "3")
        self.assertEqual(t.pin_workers(False), "")
        self.assertEqual(self.read_mask(), "3\n")
        self.assertEqual(tiers._read_state(self.d), {"loop": "/dev/loop9"})

    def test_cleanup_gives_the_old_mask_back(self):
        self.write("00000002", "wq_cpumask=3")
        tiers.cleanup_loop(self.d, log=lambda *_: None)
        self.assertEqual(self.read_mask(), "3\n")
        self.assertFalse(os.path.exists(os.path.join(self.d, tiers.STATE_NAME)))

    def test_cleanup_keeps_the_old_mask_on_record_when_it_cannot_write_it(self):
        self.write("00000002", "wq_cpumask=3")
        tiers.WQ_CPUMASK = self.d  # a folder: the write fails
        tiers.cleanup_loop(self.d, log=lambda *_: None)
        self.assertEqual(tiers._read_state(self.d), {"wq_cpumask": "3"})


class CopyRuns(unittest.TestCase):
    """execute.run_copy: the copy figure's runs of programs that print no JSON."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.dir.name, "src.bin")
        self.dst = os.path.join(self.dir.name, "dst.bin")
        with open(self.src, "wb") as f:
            f.write(os.urandom(3 << 20))

    def tearDown(self):
        self.dir.cleanup()

    def test_a_whole_copy_is_ok_and_removed(self):
        with open(self.dst, "wb") as f:
            f.write(b"left over from an earlier run")
        r = execute.run_copy(["cp", self.src, self.dst], self.src, self.dst, 60.0, "cp")
        self.assertEqual(r.status, "ok", r.error)
        self.assertEqual(r.data["bytes"], 3 << 20)
        self.assertAlmostEqual(r.data["ops"], 3.0)
        self.assertGreater(r.data["seconds"], 0)
        self.assertGreaterEqual(r.data["cpu_seconds"], 0)
        self.assertFalse(os.path.exists(self.dst))

    def test_a_short_copy_fails(self):
        r = execute.run_copy(["dd", f"if={self.src}", f"of={self.dst}", "bs=1M", "count=2", "status=none"],
                             self.src, self.dst, 60.0)
        self.assertEqual(r.status, "failed")
        self.assertIn("differs", r.error)
        self.assertFalse(os.path.exists(self.dst))

    def test_a_program_past_its_time_is_stopped(self):
        r = execute.run_copy(["sleep", "30"], self.src, self.dst, 0.3)
        self.assertEqual(r.status, "failed")
        self.assertIn("timeout", r.error)
        self.assertLess(r.wall, 10)

    def test_a_failing_program_fails(self):
        r = execute.run_copy(["cp", os.path.join(self.dir.name, "missing"), self.dst], self.src, self.dst, 60.0)
        self.assertEqual(r.status, "failed")
        self.assertIn("exit status 1", r.error)


class CommandLine(unittest.TestCase):
    def run_driver(self, *args):
        return subprocess.run([sys.executable, "-m", "bench.driver", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=60)

    def test_list_names_every_figure(self):
        p = self.run_driver("--list")
        self.assertEqual(p.returncode, 0, p.stderr)
        for fig in ("seqread", "randread", "syncasync", "echo", "http", "pingpong", "pipes", "micro", "epoll", "include"):
            self.assertIn(f"{fig}: ", p.stdout)

    def test_list_gives_every_program_its_source(self):
        from bench.driver import registry
        p = self.run_driver("--list")
        for fig in registry.FIGURES:
            for prog in registry.programs_of(fig):
                if prog in registry.SYSTEM_PROGRAMS:  # a Debian package's program (nginx, wrk)
                    self.assertIn(f"program {prog}", p.stdout)
                    self.assertNotIn(prog, registry.PROGRAM_SOURCES)
                    continue
                src = registry.PROGRAM_SOURCES.get(prog)
                self.assertIsNotNone(src, f"{prog} (figure {fig.name}) has no source in PROGRAM_SOURCES")
                self.assertTrue(os.path.exists(os.path.join(ROOT, src)), src)
                self.assertIn(f"program {prog}", p.stdout)

    def test_unknown_figure_is_refused(self):
        p = self.run_driver("--only", "nosuchfigure", "--list")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown figure", p.stderr)


class RowEnvironmentAndExpectedFields(unittest.TestCase):
    """Impl.env reaches the row's program (a server row: the server, not its client); Impl.expect
    fails a run whose program reports another value (the engine a ringo row is forced onto)."""

    def test_env_reaches_the_program(self):
        prog = "import json, os; print(json.dumps({'ok': True, 'engine': os.environ.get('RINGO_ENGINE')}))"
        r = execute.run_command([sys.executable, "-c", prog], 30, env={"RINGO_ENGINE": "epoll"})
        self.assertEqual(r.status, "ok", r.error)
        self.assertEqual(r.data["engine"], "epoll")
        self.assertTrue(r.cmd.startswith("RINGO_ENGINE=epoll "), r.cmd)
        r = execute.run_command([sys.executable, "-c", prog], 30)
        self.assertEqual(r.data["engine"], os.environ.get("RINGO_ENGINE"))

    def test_the_expected_value_passes_and_another_fails(self):
        ok = execute.check_expected(execute.Run("ok", {"engine": "epoll"}), {"engine": "epoll"})
        self.assertEqual(ok.status, "ok")
        bad = execute.check_expected(execute.Run("ok", {"engine": "io_uring"}), {"engine": "epoll"})
        self.assertEqual(bad.status, "failed")
        self.assertIn("reports engine 'io_uring', the row asks for 'epoll'", bad.error)
        none = execute.check_expected(execute.Run("ok", {"server": {}}), {"engine": "epoll"}, "server")
        self.assertEqual(none.status, "failed")
        self.assertIn("the server reports no engine", none.error)

    def test_the_epoll_rows_ask_for_their_engine(self):
        from bench.driver import registry
        fig = registry.figure("epoll")
        rows = [i for p in fig.parts for i in p.impls if i.is_ringo]
        self.assertTrue(rows)
        for i in rows:
            engine = "epoll" if i.name.startswith(registry.RINGO_EPOLL) else "io_uring"
            self.assertTrue(i.name.startswith((registry.RINGO_EPOLL, registry.RINGO_URING)), i.name)
            self.assertEqual(i.env, {"RINGO_ENGINE": engine}, i.name)
            self.assertEqual(i.expect, {"engine": engine}, i.name)

    def test_every_target_of_the_epoll_figure_names_rows_it_has(self):
        from bench.driver import registry
        for part in registry.figure("epoll").parts:
            names = {i.name for i in part.impls}
            for t in part.targets:
                self.assertIn(t.ringo, names)
                self.assertIn(t.baseline, names)


class FigureOfParts(unittest.TestCase):
    """The epoll figure is made of parts (echo, http, storage), each a figure of its own kind."""

    def test_parts_count_list_and_reduce(self):
        from bench.driver import registry
        from bench.driver.run import Binaries, count_runs
        fig = registry.figure("epoll")
        self.assertEqual([p.kind for p in fig.parts], ["echo", "http", "storage"])
        progs = registry.programs_of(fig)
        for prog in ("echo_ringo", "echo_epoll", "echo_asio", "http_file_server", "nginx", "bench_ringo_storage",
                     "bench_sync"):
            self.assertIn(prog, progs)
        # nothing built in an empty folder: the runs counted are those of nginx's rows (a Debian
        # package's program), a warm-up and the repetitions at each of the http part's points
        empty = tempfile.mkdtemp(prefix="ringo-bins-")
        try:
            bins = Binaries([empty])
            n, _ = count_runs(fig, "quick", bins, [])
            http = fig.parts[1].profiles["quick"]
            nginx = len(http["points"]) * (http["reps"] + 1) if bins.find("nginx") and bins.find("wrk") else 0
            self.assertEqual(n, nginx)
        finally:
            shutil.rmtree(empty)
        red = report.quick_reductions("epoll")
        self.assertTrue(any(r.startswith("epoll-http: ") for r in red), red)

    def test_report_of_a_figure_of_parts(self):
        def part(name, kind, title):
            return {"figure": name, "title": title, "kind": kind, "profile": "quick", "reps": 3, "warmup": True,
                    "seconds": 0.5, "started": "2026-01-01T00:00:00", "duration_s": 10.0, "metric": "m",
                    "higher_is_better": False, "x_label": "connections", "plot": "bars", "storage": False,
                    "panels": [{"name": "", "available": True}],
                    "impls": [{"name": "ringo (epoll engine)", "tag": "", "status": "ok"},
                              {"name": "base", "tag": "", "status": "ok"}],
                    "rows": [dict(_row("ringo (epoll engine)", 4, [10, 11, 12]), figure=name),
                             dict(_row("base", 4, [20, 21, 22]), figure=name)],
                    "targets": [{"ringo": "ringo (epoll engine)", "baseline": "base", "min_ratio": 1.0,
                                 "where": "every x", "text": "at most base's", "field": "", "max_value": None,
                                 "panel": "", "on": ""}], "notes": []}
        a, b = part("epoll-echo", "echo", "Echo part"), part("epoll-http", "http", "HTTP part")
        res = {"figure": "epoll", "title": "The epoll engine", "kind": "parts", "profile": "quick",
               "started": "2026-01-01T00:00:00", "duration_s": 20.0, "notes": ["a note"], "parts": [a, b],
               "rows": a["rows"] + b["rows"], "impls": a["impls"] + b["impls"], "panels": [], "targets": [],
               "other_load": 0.02}
        text = "\n".join(report._figure_section(res))
        self.assertIn("## The epoll engine (`epoll`)", text)
        self.assertIn("### Echo part (`epoll-echo`)", text)
        self.assertIn("### HTTP part (`epoll-http`)", text)
        self.assertIn("#### m (median [min–max], lower is better)", text)
        self.assertIn("> a note", text)
        self.assertEqual(text.count("| ringo (epoll engine) vs base: at most base's | met |"), 2)
        d = tempfile.mkdtemp(prefix="ringo-parts-")
        try:
            report.write_csv(d, res)
            with open(os.path.join(d, "epoll.csv")) as fh:
                body = fh.read()
            self.assertIn("epoll-echo,", body)
            self.assertIn("epoll-http,", body)
        finally:
            shutil.rmtree(d)


class IncludeCost(unittest.TestCase):
    """The include figure: scripts/include-times --json gives the driver one JSON line per row,
    the driver finds the script in the repository, and the targets read its user CPU time."""

    def test_every_row_is_a_row_of_the_script_and_every_target_names_one(self):
        from bench.driver import registry
        from bench.driver.run import Binaries
        fig = registry.figure("include")
        names = {i.name for i in fig.impls}
        for t in fig.targets:
            self.assertIn(t.ringo, names)
            if t.baseline:
                self.assertIn(t.baseline, names)
        self.assertEqual(Binaries([]).find("include-times"), os.path.join(ROOT, "scripts", "include-times"))
        with open(os.path.join(ROOT, "scripts", "include-times")) as fh:
            script = fh.read()
        for _, row, _ in registry.INCLUDE_ROWS:
            self.assertIn("standard headers|" if row == "standard" else f'"<{row}>|', script)

    @unittest.skipUnless(shutil.which("g++") and os.path.exists("/usr/include/liburing.h")
                         and os.path.exists("/usr/bin/time"), "needs g++, liburing.h and /usr/bin/time")
    def test_one_row_as_json(self):
        from bench.driver import registry, run
        argv = [os.path.join(ROOT, "scripts", "include-times"), "--json", "--no-install", "--reps", "2",
                "--only", "liburing.h"]
        r = execute.run_command(argv, 120)
        self.assertEqual(r.status, "ok", r.error)
        self.assertEqual(r.data["header"], "<liburing.h>")
        self.assertEqual(len(r.data["runs"]), 2)
        self.assertEqual(r.data["user_cpu_seconds"], min(r.data["runs"]))
        self.assertGreater(run.SECONDARY["pp_lines"](r.data), 100)
        self.assertEqual(registry.INCLUDE_CPU.fn(r.data), run.SECONDARY["user_cpu_s"](r.data))
        bad = subprocess.run(argv[:-1] + ["no-such-row"], capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)

    def test_verdicts(self):
        from bench.driver import registry
        fig = registry.figure("include")

        def row(name, runs):
            r = _row(name, "g++", runs, user_cpu_s=runs)
            r["tag"] = next(i.tag for i in fig.impls if i.name == name)
            return r
        res = _res([row("ringo ringo/ringo.hpp", [0.95]), row("ringo ringo/net/tcp.hpp", [0.74]),
                    row("asio asio.hpp", [1.17])], [t.__dict__ for t in fig.targets])
        res["impls"] = [{"name": i.name, "tag": i.tag} for i in fig.impls]
        lines = report._targets_section(res)
        verdicts = {ln.split("|")[1].strip(): ln.split("|")[2].strip() for ln in lines if ln.startswith("| ringo")}
        self.assertEqual(verdicts["ringo ringo/ringo.hpp: at most 1.0 s of user CPU"], "met")
        self.assertEqual(verdicts["ringo ringo/ringo.hpp vs asio asio.hpp: at most asio.hpp's user CPU"], "met")
        self.assertEqual(verdicts["ringo ringo/net/tcp.hpp: at most 0.7 s of user CPU"],
                         "**not met**")
        # the ratio table compares the umbrella headers only
        ratios = [ln for ln in report._ratio_section(res, "", ["g++"], "") if ln.startswith("| ringo ringo/")]
        self.assertEqual(ratios, ["| ringo ringo/ringo.hpp / asio asio.hpp | 1.23x |"])


class ReportFromRecordedResults(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ringo-driver-test-")
        for f in os.listdir(os.path.join(HERE, "data")):
            shutil.copy(os.path.join(HERE, "data", f), self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_report(self):
        path = report.write_all(self.dir, log=lambda *a: None)
        with open(path) as fh:
            text = fh.read()
        self.assertTrue(os.path.exists(os.path.join(self.dir, "micro.csv")))
        self.assertIn("## Runtime micro benchmarks (`micro`)", text)
        self.assertIn("every program pinned to CPU 1", text)
        # the recorded run was taken while other work ran: marked
        self.assertIn("**Taken under load:**", text)
        # strace-counted syscall columns are marked, and the yield panel compares kernel entries
        self.assertIn("ˢ counted in a separate untimed run", text)
        self.assertIn("| monoio | 0.334 (0.34) | 0.333 (0.333) |", text)
        # NOP: wall, CPU and callgrind instructions side by side; the target judged on CPU time
        self.assertIn("| ringo | 1,000,000 | 390 | 347 | – | 167 | – |", text)
        self.assertRegex(text, r"NOP round trip within 5 % of raw liburing's CPU time \(nop\) \| met \| 1\.25x")
        # the spawn target, judged across the runs' spread
        self.assertRegex(text, r"at most 0\.5x Monoio's time per task \(spawn\) \| \*\*not met\*\* \| 1\.48x at 1,000,000")


if __name__ == "__main__":
    unittest.main()
