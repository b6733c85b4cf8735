"""Tests of the http figure's pieces (bench/driver/httpbench.py): wrk's report parsed into the
driver's fields, the server's CPU time per request, nginx's generated configuration, and the
figure's two targets judged across the runs' spread. Run from the repository's root:

    python3 -m unittest discover -s bench/driver/tests -t .
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from bench.driver import execute, httpbench, registry, report

# wrk 4.1.0's report, as printed on this machine (a 404 path: every answer non-2xx).
WRK_NON2XX = """\
Running 1s test @ http://127.0.0.1:18777/nope
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.43ms    1.41ms  21.18ms   95.86%
    Req/Sec     1.67k   124.19     1.77k    90.91%
  Latency Distribution
     50%    2.23ms
     75%    2.60ms
     90%    3.12ms
     99%    8.69ms
  1832 requests in 1.10s, 0.91MB read
  Non-2xx or 3xx responses: 1832
Requests/sec:   1665.55
Transfer/sec:    845.95KB
"""

WRK_OK = """\
Running 3s test @ http://127.0.0.1:40001/mem
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   105.32us   40.10us   3.02ms   93.00%
    Req/Sec    46.70k     1.20k   48.10k    71.00%
  Latency Distribution
     50%   96.00us
     75%  110.00us
     90%  130.00us
     99%  312.00us
  139512 requests in 3.00s, 18.70MB read
Requests/sec:  46503.71
Transfer/sec:      6.23MB
"""

# Latencies in seconds, and wrk's socket errors line (printed only when one of its counts is not 0).
WRK_SOCKET_ERRORS = """\
Running 3s test @ http://127.0.0.1:40001/1m.bin
  1 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   900.12ms  300.00ms   1.98s    70.00%
    Req/Sec   800.00    100.00     1.00k    60.00%
  Latency Distribution
     50%  715.16ms
     75%    1.01s
     90%    1.30s
     99%    1.50s
  2310 requests in 3.10s, 2.26GB read
  Socket errors: connect 0, read 2, write 0, timeout 5
Requests/sec:    745.16
Transfer/sec:    745.00MB
"""


class WrkParser(unittest.TestCase):
    def test_a_clean_run(self):
        d = httpbench.parse_wrk(WRK_OK)
        self.assertEqual(d["requests"], 139512)
        self.assertEqual(d["ops"], 139512)
        self.assertAlmostEqual(d["seconds"], 3.0)
        self.assertAlmostEqual(d["requests_per_s"], 46503.71)
        self.assertAlmostEqual(d["p50_ns"], 96_000)         # 96.00us
        self.assertAlmostEqual(d["p99_ns"], 312_000)
        self.assertEqual(d["errors"], 0)
        self.assertEqual(d["bytes"], int(18.70 * (1 << 20)))

    def test_milliseconds_and_non_2xx_answers(self):
        d = httpbench.parse_wrk(WRK_NON2XX)
        self.assertAlmostEqual(d["p50_ns"], 2_230_000)      # 2.23ms
        self.assertAlmostEqual(d["p99_ns"], 8_690_000)
        self.assertAlmostEqual(d["seconds"], 1.10)
        self.assertEqual(d["non_2xx"], 1832)
        self.assertEqual(d["errors"], 1832)

    def test_seconds_and_socket_errors(self):
        d = httpbench.parse_wrk(WRK_SOCKET_ERRORS)
        self.assertAlmostEqual(d["p50_ns"], 715_160_000)    # 715.16ms
        self.assertAlmostEqual(d["p99_ns"], 1_500_000_000)  # 1.50s
        self.assertEqual(d["socket_errors"], {"connect": 0, "read": 2, "write": 0, "timeout": 5})
        self.assertEqual(d["non_2xx"], 0)
        self.assertEqual(d["errors"], 7)
        self.assertEqual(d["requests"], 2310)

    def test_units(self):
        for text, ns in (("12.5us", 12_500), ("3.00ms", 3_000_000), ("1.50s", 1_500_000_000), ("2.00m", 120e9)):
            v, unit = text.rstrip("usmh"), text[len(text.rstrip("usmh")):]
            self.assertAlmostEqual(httpbench.time_ns(v, unit), ns, msg=text)

    def test_a_report_without_totals_is_refused(self):
        with self.assertRaises(ValueError):
            httpbench.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused\n")
        with self.assertRaises(ValueError):
            httpbench.parse_wrk(WRK_OK.replace("Requests/sec:  46503.71\n", ""))

    def test_the_figure_fails_a_run_with_errors(self):
        # what run_http does with the parsed report: errors make the run fail
        for text, ok in ((WRK_OK, True), (WRK_NON2XX, False), (WRK_SOCKET_ERRORS, False)):
            d = httpbench.parse_wrk(text)
            d["ok"] = d["errors"] == 0 and d["requests"] > 0
            r = execute.classify(0, __import__("json").dumps(d), "", "wrk", 1.0)
            self.assertEqual(r.status == "ok", ok, text.splitlines()[0])


class CpuPerRequest(unittest.TestCase):
    def test_per_thread_sum_when_no_thread_ended(self):
        before = {"tasks": {10: 1_000, 11: 500}, "stat_ns": 0}
        after = {"tasks": {10: 4_000, 11: 1_500, 12: 700}, "stat_ns": 10_000_000}  # 12 started meanwhile
        cpu, source = httpbench.cpu_between(before, after)
        self.assertEqual((cpu, source), (3_000 + 1_000 + 700, "schedstat"))

    def test_process_total_when_a_thread_ended(self):
        # an io-wq worker (11) ended between the readings: its time is only in the process's total
        before = {"tasks": {10: 1_000, 11: 500}, "stat_ns": 20_000_000}
        after = {"tasks": {10: 4_000}, "stat_ns": 50_000_000}
        self.assertEqual(httpbench.cpu_between(before, after), (30_000_000, "stat"))

    def test_per_request(self):
        self.assertAlmostEqual(httpbench.cpu_per_request_ns(2.5e9, 100_000), 25_000)
        self.assertIsNone(httpbench.cpu_per_request_ns(1e9, 0))
        self.assertIsNone(httpbench.cpu_per_request_ns(None, 10))
        self.assertIsNone(httpbench.cpu_per_request_ns(-1, 10))
        # the figure's metric, in µs, from a run's fields
        fig = registry.figure("http")
        self.assertAlmostEqual(fig.metric.fn({"server_cpu_ns_per_req": 25_000.0}), 25.0)
        self.assertIsNone(fig.metric.fn({}))
        self.assertFalse(fig.metric.higher_is_better)

    def test_a_busy_child_is_measured_between_the_readings(self):
        # a child that spins for about 0.3 s after a pause: its CPU time between two readings
        # taken around the spin, not its start-up
        p = subprocess.Popen([sys.executable, "-c", "import time, sys\nsys.stdin.readline()\n"
                              "t = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
                              "print('spun', flush=True)\nsys.stdin.readline()\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(0.3)
            before = httpbench.process_cpu(p.pid)
            p.stdin.write("\n")
            p.stdin.flush()
            self.assertEqual(p.stdout.readline().strip(), "spun")
            after = httpbench.process_cpu(p.pid)
            cpu, source = httpbench.cpu_between(before, after)
            self.assertEqual(source, "schedstat")
            self.assertGreater(cpu, 0.25e9)
            self.assertLess(cpu, 0.6e9)
            self.assertLess(abs(after["stat_ns"] - before["stat_ns"] - cpu), 0.05e9)
        finally:
            p.stdin.write("\n")
            p.stdin.close()
            p.wait(timeout=10)
            p.stdout.close()


class NginxConfig(unittest.TestCase):
    def test_the_settings_the_figure_names(self):
        conf = httpbench.nginx_conf("/p", 8080, "/doc", httpbench.TEXT)
        for line in ("daemon off;", "master_process off;", "worker_processes 1;", "access_log off;",
                     "sendfile on;", "tcp_nopush on;", "root /doc;", 'return 200 "hello-from-bench!";',
                     "listen 127.0.0.1:8080 backlog=4096;"):
            self.assertIn(line, conf)
        self.assertEqual(len(httpbench.TEXT), 17)

    @unittest.skipUnless(shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin"), "nginx not installed")
    def test_nginx_accepts_it(self):
        d = httpbench.Docroot(tempfile.gettempdir())
        try:
            prefix, conf = d.nginx_prefix(execute.free_port())
            nginx = shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin")
            p = subprocess.run([nginx, "-t", "-e", f"{prefix}/error.log", "-p", prefix + "/", "-c", conf],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(os.path.getsize(os.path.join(d.doc, "1m.bin")), 1 << 20)
            with open(os.path.join(d.doc, "4k.bin"), "rb") as f:
                self.assertEqual(d.content["/4k.bin"], f.read())
        finally:
            d.close()
        self.assertFalse(os.path.exists(d.dir))


@unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
class OneRun(unittest.TestCase):
    """run_http against Python's http.server: a good run, and the ways a run fails."""

    def setUp(self):
        self.d = httpbench.Docroot(tempfile.gettempdir())
        self.port = execute.free_port()

    def tearDown(self):
        self.d.close()

    def run_against(self, server, path, wrk_path=None):
        wrk = ["wrk", "-t1", "-c2", "-d1s", "--latency", f"http://127.0.0.1:{self.port}{wrk_path or path}"]
        return httpbench.run_http(server, wrk, self.port, path, self.d.content.get(path, b""), 30, self.d.dir)

    def python_server(self):
        return [sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1", "--directory", self.d.doc]

    def test_a_good_run(self):
        r = self.run_against(self.python_server(), "/4k.bin")
        self.assertEqual(r.status, "ok", r.error)
        self.assertGreater(r.data["requests"], 0)
        self.assertGreater(r.data["server"]["cpu_ns"], 0)
        self.assertAlmostEqual(r.data["server_cpu_ns_per_req"], r.data["server"]["cpu_ns"] / r.data["requests"])
        self.assertIsNotNone(r.data["p99_ns"])

    def test_non_2xx_answers_fail_the_run(self):
        r = self.run_against(self.python_server(), "/4k.bin", wrk_path="/missing")
        self.assertEqual(r.status, "failed")
        self.assertRegex(r.error, r"^wrk counted \d+ non-2xx answers")

    def test_a_wrong_answer_fails_before_wrk(self):
        r = self.run_against(self.python_server(), "/mem")  # http.server has no /mem: 404
        self.assertEqual(r.status, "failed")
        self.assertIn("GET /mem: status 404", r.error)

    def test_a_server_that_exits(self):
        r = self.run_against(["sh", "-c", "echo cannot bind >&2; exit 3"], "/4k.bin")
        self.assertEqual(r.status, "failed")
        self.assertIn("server exited with status 3", r.error)
        self.assertIn("cannot bind", r.error)


class EngineOfAServer(unittest.TestCase):
    def test_an_epoll_instance_reads_as_epoll(self):
        import select
        before = httpbench.engine_of(os.getpid())
        ep = select.epoll()
        try:
            self.assertEqual(httpbench.engine_of(os.getpid()), "io_uring" if before == "io_uring" else "epoll")
        finally:
            ep.close()

    def test_a_process_that_is_gone_reads_as_nothing(self):
        p = subprocess.Popen(["true"])
        p.wait()
        self.assertEqual(httpbench.engine_of(p.pid), "")


class FindingThePrograms(unittest.TestCase):
    def test_the_example_in_the_bench_build_and_the_packages_in_path(self):
        from bench.driver.run import Binaries
        top = tempfile.mkdtemp(prefix="ringo-bins-")
        try:
            for rel in ("bench/examples/http_file_server", "rust/examples/stray"):
                path = os.path.join(top, rel)
                os.makedirs(os.path.dirname(path))
                with open(path, "w") as f:
                    f.write("#!/bin/sh\n")
                os.chmod(path, 0o755)
            bins = Binaries([os.path.join(top, "bench"), os.path.join(top, "bench", "examples"),
                             os.path.join(top, "rust")])
            self.assertEqual(bins.find("http_file_server"), os.path.join(top, "bench/examples/http_file_server"))
            self.assertIsNone(bins.find("stray"))  # examples folders inside the trees stay skipped
            wrk = shutil.which("wrk")
            self.assertEqual(bins.find("wrk"), wrk)
        finally:
            shutil.rmtree(top)


def _row(impl, x, panel, cpu, rps):
    return {"figure": "http", "panel": panel, "x": x, "impl": impl, "tag": "", "ringo": impl.startswith("ringo"),
            "status": "ok", "runs_ok": len(cpu), "median": sorted(cpu)[1], "min": min(cpu), "max": max(cpu),
            "values": cpu, "rps": sorted(rps)[1], "ranges": {"rps": [min(rps), max(rps)]}}


class Targets(unittest.TestCase):
    def res(self, rows):
        fig = registry.figure("http")
        return {"figure": "http", "title": fig.title, "kind": "http", "higher_is_better": False,
                "x_label": "connections", "panels": [{"name": "4 KiB file", "available": True}],
                "impls": [{"name": "ringo http_file_server", "tag": ""}, {"name": "nginx", "tag": ""}],
                "rows": rows, "targets": [t.__dict__ for t in fig.targets]}

    def statuses(self, rows):
        lines = report._targets_section(self.res(rows))
        return [ln.split("|")[2].strip() for ln in lines if ln.startswith("| ringo")]

    def test_both_met(self):
        # rps: ringo's worst 50 000 >= nginx's best 48 000; CPU: nginx's best 20 / ringo's worst 13 = 1.54x >= 1.43x
        rows = [_row("ringo http_file_server", 10, "4 KiB file", [12, 12.5, 13], [50_000, 51_000, 52_000]),
                _row("nginx", 10, "4 KiB file", [20, 21, 22], [46_000, 47_000, 48_000])]
        self.assertEqual(self.statuses(rows), ["met", "met"])

    def test_fewer_requests_and_too_much_cpu(self):
        # rps: ringo's best 45 000 < nginx's worst 46 000; CPU: 22 / 16 = 1.375x < 1.43x
        rows = [_row("ringo http_file_server", 10, "4 KiB file", [16, 17, 18], [43_000, 44_000, 45_000]),
                _row("nginx", 10, "4 KiB file", [20, 21, 22], [46_000, 47_000, 48_000])]
        self.assertEqual(self.statuses(rows), ["**not met**", "**not met**"])

    def test_straddling_spreads_are_inconclusive(self):
        rows = [_row("ringo http_file_server", 10, "4 KiB file", [12, 13, 15], [45_000, 49_000, 53_000]),
                _row("nginx", 10, "4 KiB file", [20, 21, 22], [46_000, 47_000, 48_000])]
        self.assertEqual(self.statuses(rows), ["inconclusive", "inconclusive"])


if __name__ == "__main__":
    unittest.main()
