"""The figures of the benchmark suite and the implementations each one compares.

Adding an implementation is one line in a figure's `impls` list:

    I("ringo direct", "<bench_ringo_storage> " + STORAGE_ARGS + " --variant direct", tag="direct"),

Command templates:
  <name>      an executable, looked up in the build tree (build/bench, build/bench-storage) and in
              bench/rust/target/release; missing => the row is reported as "not built".
  {param}     a parameter of the data point ({qd}, {file}, {seconds}, {connections}, {port} ...).
Names starting with "ringo" are ringo rows: the report gives their ratio to every baseline with the
same `tag` (or to every baseline when the ringo row has no tag).

Every program prints one JSON line (fields: bench, impl, variant, ops, bytes, seconds, cpu_seconds,
syscalls, errors, ok, p50_ns, p99_ns, error ...); ok:false, a non-zero exit or no JSON is a failed run.
`kind="fio"` rows run fio with the point's settings and convert its JSON output into the same fields;
`kind="server"` rows start a server pinned to CPU 0, run the figure's client pinned to CPU 1, and
stop the server with SIGTERM. `kind="http"` rows do the same with a web server and wrk (httpbench.py:
wrk's text report is parsed, the server's CPU time is read from /proc around wrk's run, and the
server is stopped with SIGINT).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# --------------------------------------------------------------------------- data model


@dataclass
class Metric:
    label: str                               # unit shown in tables and on the y axis
    fn: Callable[[dict], float | None]       # value from one run's JSON
    higher_is_better: bool = True


@dataclass
class Impl:
    name: str
    cmd: str | dict                          # template, or {sub: template} per panel (micro)
    tag: str = ""                            # ringo rows are compared with baselines of the same tag
    kind: str = "json"                       # json | fio | server | http | copy
    when: Callable[[dict], bool] | None = None   # run only at points where when(params) is true
    params: dict = field(default_factory=dict)   # overrides of the point's parameters
    profiles: tuple = ("quick", "full")
    note: str = ""
    # Environment variables set for the row's program (a server row's: the server's, not its
    # client's), on top of the driver's own environment, e.g. {"RINGO_ENGINE": "epoll"}.
    env: dict = field(default_factory=dict)
    # Fields the program must report with these values in its JSON line (a server row: the
    # server's; an http row: what the driver reads of the server, `engine` from its descriptors);
    # a run that reports another value, or none, is failed. E.g. {"engine": "epoll"}.
    expect: dict = field(default_factory=dict)

    @property
    def is_ringo(self) -> bool:
        return self.name.startswith("ringo")


def I(name, cmd, **kw) -> Impl:  # noqa: E743 - short on purpose: one line per implementation
    return Impl(name, cmd, **kw)


@dataclass
class Target:
    ringo: str
    baseline: str                            # "" for a value target (below)
    min_ratio: float
    where: str = "every x"                   # "every x" | "max x"
    text: str = ""
    # A value target instead of a ratio: the ringo row's per-run field (a CSV column such as
    # loop_syscalls_per_op, the median over its runs) must be at most max_value at every x.
    field: str = ""
    max_value: float | None = None
    panel: str = ""                          # checked in this panel only ("" = every panel)
    # A ratio on a cost field of the rows (e.g. cpu_us_per_op, lower is better) instead of the
    # figure's metric: for comparisons where wall time is noise on a shared machine.
    on: str = ""
    # The direction of the `on` field: lower is better (a cost) unless this is True (requests/s).
    higher_is_better: bool = False
    # A CPU-time ratio between two rows that make the same system calls per operation and do the
    # same kernel work, so that only user-space code separates them: judged from callgrind's
    # instructions and the time a user-space instruction takes in the runs (report.py,
    # _instructions_target_row), where the CPU time itself is too noisy to resolve the bar.
    from_instructions: bool = False


@dataclass
class Figure:
    name: str
    title: str
    kind: str                                # storage | syncasync | copy | echo | http | pingpong | pipes | micro | compile
    x_label: str
    metric: Metric
    impls: list[Impl]
    profiles: dict                           # profile -> settings (see the figures below)
    plot: str = "lines-log2x"                # lines-log2x | lines | loglog | bars
    client: str = ""                         # kind=server: the load generator's template
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    storage: bool = False                    # runs once per storage tier (panels = tiers)
    panel_x_labels: dict = field(default_factory=dict)   # x-axis label per panel, where it differs
    # kind "parts": a figure made of other figures (each with its own kind, metric, client,
    # profiles and targets), run one after the other as one figure (one quiet-machine wait, one
    # retake) and reported in one section, each part under its own heading.
    parts: list["Figure"] = field(default_factory=list)


# --------------------------------------------------------------------------- metrics


def _rate(field_name: str, scale: float = 1.0):
    def fn(j: dict):
        s = j.get("seconds")
        v = j.get(field_name)
        if not s or v is None or s <= 0:
            return None
        return v / s / scale
    return fn


MIBS = Metric("MiB/s", _rate("bytes", 1 << 20))
IOPS = Metric("IOPS", _rate("ops"))
def _msgs_per_sec(j: dict):
    if j.get("msgs_per_sec") is not None:
        return float(j["msgs_per_sec"])
    return _rate("msgs")(j) if j.get("msgs") is not None else _rate("ops")(j)


MSGS = Metric("round trips/s", _msgs_per_sec)
TOTAL_MS = Metric("ms (total)", lambda j: j["seconds"] * 1e3 if j.get("seconds") is not None else None,
                  higher_is_better=False)
RUN_MS = Metric("ms per run", lambda j: j.get("ms"), higher_is_better=False)

# --------------------------------------------------------------------------- executables
# The ringo programs are written by the lead; these names are placeholders: rename here.

RINGO_STORAGE = "bench_ringo_storage"     # bench/ringo: same CLI as bench_uring
RINGO_ECHO = "echo_ringo"                 # bench/ringo: --port P [--fixed] [--multishot]
RINGO_PINGPONG = "pingpong_ringo"         # bench/ringo: --mode ringo|ringo-fixed, else as bench_pingpong
RINGO_PIPES = "pipes_ringo"               # bench/ringo: --mode ringo, else as bench_pipes
RINGO_MICRO = "bench_ringo_micro"         # placeholder: the Rust baselines' subcommands, plus nop
MONOIO, COMPIO, TOKIO = "ringo-bench-monoio", "ringo-bench-compio", "ringo-bench-tokio"
# monoio's cross-thread wake-ups need its `sync` feature, built into a separate binary (bench/rust/README.md)
MONOIO_XTHREAD = "ringo-bench-monoio-xthread"

# Size of the storage figures' test file per profile (--file-size-mib overrides it).
FILE_SIZE = {"quick": 256 << 20, "full": 1 << 30}

# Common storage arguments; {offsets_arg} is "--offsets FILE" for random patterns, else empty.
STORAGE_ARGS = "{mode} --file {file} --bs {bs} --qd {qd} --seconds {seconds} {offsets_arg}"
RUST_ARGS = "{mode} --file {file} --bs {bs} --qd {qd} --seconds {seconds} --direct {direct01} {offsets_arg}"


def qd1(p):
    return p.get("qd") == 1


def direct_tag(impl: Impl) -> bool:
    return "direct" in impl.tag or "iopoll" in impl.tag


def quick_disk(impl: Impl) -> bool:
    """Only the O_DIRECT rows (and one libaio submit mode): used for the disk tier of the quick profile."""
    return direct_tag(impl) and "per-io" not in impl.name


def _storage_impls() -> list[Impl]:
    U = "<bench_uring> " + STORAGE_ARGS + " --variant "
    R = f"<{RINGO_STORAGE}> " + STORAGE_ARGS + " --variant "
    return [
        I("liburing buffered", U + "buffered", tag="buffered"),
        I("liburing fixed", U + "fixed", tag="fixed"),
        I("liburing direct", U + "direct", tag="direct"),
        I("liburing direct-fixed", U + "direct-fixed", tag="direct-fixed", profiles=("full",)),
        I("liburing sqpoll", U + "sqpoll", tag="sqpoll"),
        I("liburing iopoll", U + "iopoll", tag="iopoll"),
        I("ringo buffered", R + "buffered", tag="buffered"),
        I("ringo fixed", R + "fixed", tag="fixed"),
        I("ringo direct", R + "direct", tag="direct"),
        I("ringo direct-fixed", R + "direct-fixed", tag="direct-fixed", profiles=("full",)),
        I("ringo sqpoll", R + "sqpoll", tag="sqpoll"),
        I("ringo iopoll", R + "iopoll", tag="iopoll"),
        # The same reads through the high-level ringo::fs::File (read_at, Result<size_t>)
        # instead of op::read: what the layer costs per I/O.
        I("ringo fs::File buffered", R + "buffered --api file", tag="buffered"),
        I("ringo fs::File direct", R + "direct --api file", tag="direct"),
        I("libaio direct batched", "<bench_aio> " + STORAGE_ARGS + " --variant direct --submit batched", tag="direct"),
        I("libaio direct per-io", "<bench_aio> " + STORAGE_ARGS + " --variant direct --submit per-io", tag="direct"),
        I("psync buffered", "<bench_sync> " + STORAGE_ARGS + " --engine psync --variant buffered",
          tag="buffered", when=qd1),
        I("psync direct", "<bench_sync> " + STORAGE_ARGS + " --engine psync --variant direct",
          tag="direct", when=qd1),
        I("monoio buffered", f"<{MONOIO}> " + RUST_ARGS, tag="buffered", params={"direct01": 0}),
        I("monoio direct", f"<{MONOIO}> " + RUST_ARGS, tag="direct", params={"direct01": 1}),
        I("compio buffered", f"<{COMPIO}> " + RUST_ARGS, tag="buffered", params={"direct01": 0}),
        I("compio direct", f"<{COMPIO}> " + RUST_ARGS, tag="direct", params={"direct01": 1}),
        I("tokio buffered", f"<{TOKIO}> " + RUST_ARGS, tag="buffered", params={"direct01": 0}, profiles=("full",)),
        I("fio io_uring direct", {"ioengine": "io_uring"}, kind="fio", tag="direct", params={"direct01": 1},
          profiles=("full",)),
        I("fio libaio direct", {"ioengine": "libaio"}, kind="fio", tag="direct", params={"direct01": 1},
          profiles=("full",)),
    ]


def _storage_profiles(bs: int, mode: str) -> dict:
    return {
        # ~1 s per data point and implementation; the disk tier only runs the O_DIRECT rows
        # (buffered reads of a file that fits in memory are page-cache hits on either tier).
        "quick": dict(mode=mode, bs=bs, xs=[1, 4, 16, 64], seconds=0.3, warmup_seconds=0.1, reps=3,
                      tiers=["loop", "disk"], tier_filter={"disk": quick_disk}),
        "full": dict(mode=mode, bs=bs, xs=[1, 2, 4, 8, 16, 32, 64, 128], seconds=1.0, warmup_seconds=0.5,
                     reps=5, tiers=["loop", "disk"]),
    }


# The storage figures' note on how the raw liburing rows enter the kernel.
URING_ENTER_NOTE = ("The liburing rows (bench/storage/bench_uring) issue io_uring_enter inline in their loop, with "
                    "the arguments liburing 2.3's io_uring_submit_and_wait would pass, on a registered ring "
                    "descriptor, as ringo does (the micro figure's nop note says why the call's placement "
                    "matters on this machine): one enter per loop turn in every mode, as before.")


def _storage_targets() -> list[Target]:
    t = []
    for v in ("buffered", "fixed", "direct", "sqpoll", "iopoll"):
        t.append(Target(f"ringo {v}", f"liburing {v}", 0.98, "every x", "within 2 % of raw liburing"))
    for v in ("buffered", "direct"):
        t.append(Target(f"ringo fs::File {v}", f"ringo {v}", 0.98, "every x", "fs::File within 2 % of op::read"))
    for b in ("monoio direct", "compio direct"):
        t.append(Target("ringo direct", b, 1.25, "max x", "at least 1.25x at the highest QD"))
    t.append(Target("ringo direct", "libaio direct batched", 1.0, "every x", "at least libaio"))
    return t


# --------------------------------------------------------------------------- figure 3: sync vs async

ASYNC_QD = 32  # the iodepth "Synchronous IO is fast?!" gives its asynchronous engine


def _workloads(modes, variants):
    pts = []
    for m in modes:
        for v in variants:
            pts.append({"x": f"{m} {v}", "mode": m.replace("seqmixed", "mixed"), "variant": v,
                        "direct01": 1 if v == "direct" else 0,
                        "pattern": "rand" if m.startswith("rand") else "seq"})
    return pts


def _syncasync_impls() -> list[Impl]:
    A = STORAGE_ARGS + " --variant {variant}"
    aq = {"qd": ASYNC_QD}
    return [
        I("psync (QD1)", "<bench_sync> " + A + " --engine psync", params={"qd": 1}),
        I(f"posixaio (QD{ASYNC_QD})", "<bench_sync> " + A + " --engine posixaio", params=aq),
        I(f"libaio (QD{ASYNC_QD})", "<bench_aio> " + A + " --submit batched", params=aq),
        I(f"liburing (QD{ASYNC_QD})", "<bench_uring> " + A, params=aq),
        I("liburing (QD1)", "<bench_uring> " + A, params={"qd": 1}, profiles=("full",)),
        I(f"ringo (QD{ASYNC_QD})", f"<{RINGO_STORAGE}> " + A, params=aq),
        I("ringo (QD1)", f"<{RINGO_STORAGE}> " + A, params={"qd": 1}, profiles=("full",)),
        I("fio psync (QD1)", {"ioengine": "psync"}, kind="fio", params={"qd": 1}),
        I(f"fio posixaio (QD{ASYNC_QD})", {"ioengine": "posixaio"}, kind="fio", params=aq),
        I(f"fio libaio (QD{ASYNC_QD})", {"ioengine": "libaio"}, kind="fio", params=aq),
        I(f"fio io_uring (QD{ASYNC_QD})", {"ioengine": "io_uring"}, kind="fio", params=aq),
    ]


def _copy_impls() -> list[Impl]:
    buffered = lambda p: p.get("variant") == "buffered"  # noqa: E731
    return [
        I("ringo copy 8 x 128K", "<copy> {file} {dst} --depth 8 --block-size {bs} {copy_flags}", kind="copy"),
        I("ringo copy 4 x 1M", "<copy> {file} {dst} --depth 4 --block-size 1M {copy_flags}", kind="copy"),
        I("cp (coreutils)", "<cp> {file} {dst}", kind="copy", when=buffered),
        I("dd bs=128K", "<dd> if={file} of={dst} bs={bs} status=none {dd_flags}", kind="copy"),
        I("dd bs=1M", "<dd> if={file} of={dst} bs=1M status=none {dd_flags}", kind="copy"),
    ]


COPY_POINTS = [
    {"x": "page cache", "variant": "buffered", "copy_flags": "", "dd_flags": ""},
    {"x": "O_DIRECT", "variant": "direct", "copy_flags": "--direct", "dd_flags": "iflag=direct oflag=direct"},
]


# --------------------------------------------------------------------------- network figures
# Programs from bench/net/. The echo client and servers follow their usage texts; the ping-pong and
# pipes command lines are placeholders until those programs land (adjust the templates here).

# --mode uring: the cheapest client we have (raw liburing, registered files, SEND + RECV per message
# submitted together, one io_uring_enter per loop turn, one clock read per turn).
ECHO_CLIENT = ("<bench_echo_client> --port {port} --conns {connections} --msg 1024 --seconds {seconds}"
               " --mode uring")
ECHO_MSG = 1024  # the --msg above


def echo_server_msgs(j: dict):
    """The messages an echo server echoed in its life (its bytes / 1024), or the client's count
    when the server reports no bytes."""
    srv = j.get("server") or {}
    return srv["bytes"] / ECHO_MSG if srv.get("bytes") else j.get("msgs")


def _echo_server_cpu_ns_per_msg(j: dict):
    """The echo figure's measure: the server process's CPU time (user + system, its whole life:
    set-up, the run, the drain) divided by the messages it echoed in that life (its bytes / 1024).
    Falls back to the client's count of messages when the server reports no bytes."""
    srv = j.get("server") or {}
    cpu = srv.get("cpu_ns")
    if cpu is None and srv.get("cpu_seconds") is not None:
        cpu = srv["cpu_seconds"] * 1e9
    if cpu is None or cpu < 0:
        return None
    msgs = echo_server_msgs(j)
    return cpu / msgs if msgs else None


SERVER_CPU_PER_MSG = Metric("server CPU ns per message", _echo_server_cpu_ns_per_msg, higher_is_better=False)
# The echo figure's connections and run lengths (the epoll figure's echo part runs the same).
ECHO_PROFILES = {"quick": dict(xs=[4, 16, 64], seconds=0.5, warmup_seconds=0.2, reps=3),
                 "full": dict(xs=[4, 8, 16, 32, 64], seconds=3.0, warmup_seconds=1.0, reps=5)}


def _echo_impls() -> list[Impl]:
    S = " --port {port}"
    return [
        I("ringo plain", f"<{RINGO_ECHO}>" + S, kind="server", tag=""),
        I("ringo fixed files", f"<{RINGO_ECHO}>" + S + " --fixed", kind="server"),
        # One multishot recv per connection into a shared provided-buffer ring (512 x 16 KiB),
        # echoed from the ring's buffer, then recycled; compared with the same design in liburing.
        I("ringo multishot + buffer ring", f"<{RINGO_ECHO}>" + S + " --multishot", kind="server", tag="multishot"),
        # The same server as "ringo plain", written with net::TcpListener / net::TcpStream
        # (Result values, write_all) instead of op::: what the high-level layer costs.
        I("ringo net::TcpStream", f"<{RINGO_ECHO}>" + S + " --stream", kind="server"),
        I("liburing", "<echo_uring>" + S, kind="server"),
        I("liburing fixed files", "<echo_uring_fixed>" + S, kind="server"),
        I("liburing multishot + buffer ring", "<echo_uring>" + S + " --multishot", kind="server", tag="multishot"),
        I("epoll", "<echo_epoll>" + S, kind="server"),
        I("asio", "<echo_asio>" + S, kind="server"),
        I("monoio", f"<{MONOIO}> echo-server" + S, kind="server"),
        I("compio", f"<{COMPIO}> echo-server" + S, kind="server"),
        I("tokio", f"<{TOKIO}> echo-server" + S, kind="server"),
    ]


# --------------------------------------------------------------------------- http

# wrk, one thread, pinned to CPU 1. --timeout 10s instead of its default 2 s: at 1 000 connections
# on the 1 MiB file a response takes over a second on a 2-vCPU machine, and a request wrk times out
# is a socket error (a failed run) and is left out of its latency.
HTTP_CLIENT = ("<wrk> -t1 -c{connections} -d{seconds}s --timeout 10s --latency "
               "http://127.0.0.1:{port}{path}")
# The data points: (panel, target path); the files and the in-memory text are httpbench.py's.
HTTP_PANELS = [("in-memory answer (17 B)", "/mem"), ("4 KiB file", "/4k.bin"), ("1 MiB file", "/1m.bin")]


def _http_server_cpu_us_per_req(j: dict):
    """The http figure's measure: the server process's CPU time (every thread, io-wq workers
    included) from just before wrk starts to just after it ends, divided by wrk's request count."""
    v = j.get("server_cpu_ns_per_req")
    return v / 1e3 if v is not None and v >= 0 else None


SERVER_CPU_PER_REQ = Metric("server CPU µs per request", _http_server_cpu_us_per_req, higher_is_better=False)


# One runtime, the in-memory answer from --inline; files from --root.
HTTP_RINGO = "<http_file_server> --root {root} --port {port} --inline /mem:{text}"
# One process that is its own worker (daemon off, master_process off), access log off, sendfile
# on, keep-alive without a request limit: httpbench.nginx_conf writes {conf}.
HTTP_NGINX = "<nginx> -e {prefix}/error.log -p {prefix}/ -c {conf}"


def _http_impls() -> list[Impl]:
    return [
        I("ringo http_file_server", HTTP_RINGO, kind="http"),
        I("nginx", HTTP_NGINX, kind="http"),
        # Boost.Beast on Boost.Asio, C++20 coroutines (bench/net/http_beast.cpp).
        I("Boost.Beast (Asio coroutines)", "<http_beast> --root {root} --port {port} --inline /mem:{text}",
          kind="http"),
    ]


def _http_points(xs) -> list[dict]:
    return [{"panel": panel, "x": c, "connections": c, "path": path} for panel, path in HTTP_PANELS for c in xs]


def _pingpong_impls() -> list[Impl]:
    P = "<bench_pingpong> --conns {conns} --msgs {msgs} --mode "
    return [
        I("epoll + read/write", P + "epoll"),
        I("epoll + splice", P + "epoll-splice"),
        I("Linux AIO poll + recv/send", P + "aio"),
        I("Linux AIO poll + splice", P + "aio-splice"),
        I("io_uring poll + read/write", P + "uring-poll"),
        I("io_uring poll + splice", P + "uring-poll-splice"),
        I("io_uring recv/send", P + "uring"),
        I("io_uring recv/send fixed files", P + "uring-fixed"),
        I("io_uring recv/send sqpoll", P + "uring-sqpoll"),
        I("io_uring splice", P + "splice"),
        I("io_uring splice + hard link", P + "splice-link"),
        I("ringo recv/send", f"<{RINGO_PINGPONG}> --conns {{conns}} --msgs {{msgs}} --mode ringo"),
        I("ringo recv/send fixed files", f"<{RINGO_PINGPONG}> --conns {{conns}} --msgs {{msgs}} --mode ringo-fixed"),
    ]


def _pipes_impls() -> list[Impl]:
    P = "<bench_pipes> --pipes 128 --rounds 256 --prefill {prefill} --mode "
    return [
        I("liburing", P + "uring"),
        I("ringo", f"<{RINGO_PIPES}> --pipes 128 --rounds 256 --prefill {{prefill}} --mode ringo"),
        I("epoll", P + "epoll"),
        I("blocking read/write", P + "blocking"),
    ]


# --------------------------------------------------------------------------- micro benchmarks

MICRO_SUBS = {
    # The Condy benchmark's spawn workload: all `count` tasks spawned (handles kept), then
    # each awaited. spawn-one: one task alive at a time (spawn, join, spawn ...).
    "spawn": "spawn --count {count}",
    "spawn-one": "spawn --count {count} --batch 1",
    # spawn-warm: the spawn workload twice on one runtime, the second timed: the memory the
    # tasks need (frames, queue) is then already touched, which separates the runtime's own
    # cost per task from the kernel's first-touch page faults.
    "spawn-warm": "spawn --count {count} --rounds 2",
    # yield: in a spawned task (every runtime's ordinary case); yield-root: in the root future
    # given to block_on, where Monoio polls futures_lite's yield_now again without its
    # scheduler (how the Condy benchmark ran it). Asio has no root future.
    "yield": "yield --count {count} --in task",
    "yield-root": "yield --count {count} --in root",
    "channel": "channel --messages {count} --pairs 1 --capacity 1024",
    "channel-pairs": "channel --messages {messages} --pairs {count} --capacity 1024",
}


def _micro(binary: str, subs=("spawn", "spawn-warm", "spawn-one", "yield", "yield-root", "channel", "channel-pairs"),
           xthread: str | None = None) -> dict:
    """The subcommands of one micro-benchmark program; `xthread` adds the cross-thread channel
    (one producer runtime/thread, one consumer runtime/thread on another CPU, bounded channel of
    1024) from that binary."""
    cmds = {s: f"<{binary}> " + MICRO_SUBS[s] for s in subs}
    if xthread:
        cmds["xthread-channel"] = f"<{xthread}> xchannel --messages {{count}} --capacity 1024"
    return cmds


def _micro_impls() -> list[Impl]:
    ringo = _micro(RINGO_MICRO)
    ringo["nop"] = f"<{RINGO_MICRO}> nop --count {{count}}"
    ringo["xthread-channel"] = f"<{RINGO_MICRO}> xchannel --messages {{count}}"
    ringo["pool-spawn"] = f"<{RINGO_MICRO}> pool-spawn --count {{count}} --threads 2"
    # when_all(std::vector<op::Nop>(batch)) per round, against `batch` raw NOP SQEs per
    # io_uring_submit_and_wait: the same NOPs, submissions and waits.
    ringo["when-all-nop"] = f"<{RINGO_MICRO}> when-all-nop --count {{count}} --batch {{batch}}"
    # `count` pending with_timeout waits that never fire: bytes, frames, kernel timeouts,
    # arm + disarm cost (the report's table for this panel; `ms` is count arm+disarm cycles).
    ringo["timeouts"] = f"<{RINGO_MICRO}> timeouts --count {{count}}"
    # What the high-level layer costs over op:: on the same work: 4 KiB page-cache reads with
    # op::read against fs::File::read_at, and an echo server's loop (1 KiB messages over
    # loopback TCP, the client the same in both) with op::recv/op::send against net::TcpStream
    # read/write_all.
    ringo["layer-read"] = f"<{RINGO_MICRO}> layer-read --count {{count}} --api op"
    ringo["layer-echo"] = f"<{RINGO_MICRO}> layer-echo --count {{count}} --api op"
    return [
        I("ringo", ringo),
        I("ringo high-level", {"layer-read": f"<{RINGO_MICRO}> layer-read --count {{count}} --api file",
                               "layer-echo": f"<{RINGO_MICRO}> layer-echo --count {{count}} --api stream"}),
        # The variadic when_all of 32 operations: the group lives in the frame, no vector.
        I("ringo variadic", {"when-all-nop": f"<{RINGO_MICRO}> when-all-nop-static --count {{count}}"},
          when=lambda p: p.get("batch") == 32),
        I("liburing", {"nop": "<bench_micro_uring> nop --count {count}",
                       "when-all-nop": "<bench_micro_uring> nop-batch --count {count} --batch {batch}"}),
        I("asio", _micro("bench_asio_micro", subs=("spawn", "spawn-warm", "spawn-one", "yield", "channel", "channel-pairs"),
                         xthread="bench_asio_micro")),
        I("monoio", _micro(MONOIO, xthread=MONOIO_XTHREAD)),
        I("compio", _micro(COMPIO, xthread=COMPIO)),
        # The fastest single-thread channel a Monoio or compio user would pick (local-sync, by
        # Monoio's author) besides futures::channel::mpsc, which the rows above use.
        I("monoio local-sync", {s: f"<{MONOIO}> " + MICRO_SUBS[s] + " --channel local-sync"
                                for s in ("channel", "channel-pairs")}),
        I("compio local-sync", {s: f"<{COMPIO}> " + MICRO_SUBS[s] + " --channel local-sync"
                                for s in ("channel", "channel-pairs")}),
        I("tokio", _micro(TOKIO, xthread=TOKIO)),
    ]


# NOPs per when-all-nop run: a multiple of every batch size, about 0.1 s at ~95 ns per batched NOP.
WHEN_ALL_NOPS = 1 << 20
WHEN_ALL_BATCHES = (8, 32, 128)


# Where each program of the figures comes from (`python3 -m bench.driver --list` prints it per
# figure; a test checks that every program a figure names is here and its source exists).
PROGRAM_SOURCES = {
    "bench_uring": "bench/storage/bench_uring.cpp",
    "bench_aio": "bench/storage/bench_aio.cpp",
    "bench_sync": "bench/storage/bench_sync.cpp",
    "bench_ringo_storage": "bench/ringo/bench_ringo_storage.cpp",
    "bench_echo_client": "bench/net/echo_client.cpp",
    "echo_epoll": "bench/net/echo_epoll.cpp",
    "echo_uring": "bench/net/echo_uring.cpp",
    "echo_uring_fixed": "bench/net/echo_uring.cpp",
    "echo_asio": "bench/net/echo_asio.cpp",
    "echo_ringo": "bench/ringo/echo_ringo.cpp",
    "http_file_server": "examples/http_file_server.cpp",
    "copy": "examples/copy.cpp",
    "http_beast": "bench/net/http_beast.cpp",
    "bench_pingpong": "bench/net/pingpong.cpp",
    "pingpong_ringo": "bench/ringo/pingpong_ringo.cpp",
    "bench_pipes": "bench/net/pipes.cpp",
    "pipes_ringo": "bench/ringo/pipes_ringo.cpp",
    "bench_ringo_micro": "bench/micro/bench_ringo_micro.cpp",
    "bench_micro_uring": "bench/micro/bench_micro_uring.cpp",
    "bench_asio_micro": "bench/net/micro_asio.cpp",
    "ringo-bench-monoio": "bench/rust/monoio/src/main.rs",
    "ringo-bench-monoio-xthread": "bench/rust/monoio/src/xthread.rs",
    "ringo-bench-compio": "bench/rust/compio/src/main.rs",
    "ringo-bench-tokio": "bench/rust/tokio/src/main.rs",
    "include-times": "scripts/include-times",
}


# Programs that come from Debian packages (scripts/bench installs them), found in PATH or /usr/sbin.
SYSTEM_PROGRAMS = {
    "nginx": "the Debian package nginx-light (/usr/sbin/nginx)",
    "wrk": "the Debian package wrk",
    "cp": "the Debian package coreutils",
    "dd": "the Debian package coreutils",
}


def programs_of(fig: "Figure") -> list[str]:
    """The programs a figure runs, in the order its implementations name them."""
    import re
    found: list[str] = []
    for part in fig.parts:
        found += [n for n in programs_of(part) if n not in found]
    cmds = [fig.client] if fig.client else []
    for i in fig.impls:
        cmds += [i.cmd] if isinstance(i.cmd, str) else list(i.cmd.values()) if isinstance(i.cmd, dict) else []
    for c in cmds:
        for n in re.findall(r"<([A-Za-z0-9_.+-]+)>", c if isinstance(c, str) else ""):
            if n not in found:
                found.append(n)
    return found


# Micro panels whose programs run two threads (the driver pins them to two CPUs, each program
# placing one thread per CPU); every other single-process program is pinned to one CPU.
TWO_THREAD_SUBS = {"xthread-channel", "pool-spawn"}
# Panels where every row (not only those that cannot count their own calls) gets the untimed
# strace pass: how often each runtime enters the kernel per yield.
STRACE_EVERY_ROW_PANELS = {"yield", "yield-root"}
# Panels judged on user-space instructions as well: the callgrind pass's two operation counts.
CALLGRIND_PANELS = {"nop": (20_000, 120_000), "layer-read": (20_000, 120_000), "layer-echo": (10_000, 60_000)}


def _micro_points(counts, pair_counts, messages, timeout_counts, layer_counts=(100_000,)):
    pts = []
    for sub in ("spawn", "spawn-warm", "yield", "yield-root", "channel", "nop", "xthread-channel", "pool-spawn"):
        pts += [{"panel": sub, "sub": sub, "x": c, "count": c} for c in counts]
    # One task alive at a time is a steady state whatever the count; compio enters the kernel
    # per spawn there (~20 µs each here), so the counts stop at 100 000.
    pts += [{"panel": "spawn-one", "sub": "spawn-one", "x": c, "count": c} for c in counts if c <= 100_000]
    pts += [{"panel": "channel-pairs", "sub": "channel-pairs", "x": p, "count": p, "messages": messages}
            for p in pair_counts]
    pts += [{"panel": "when-all-nop", "sub": "when-all-nop", "x": b, "batch": b, "count": WHEN_ALL_NOPS}
            for b in WHEN_ALL_BATCHES]
    pts += [{"panel": "timeouts", "sub": "timeouts", "x": c, "count": c} for c in timeout_counts]
    for sub in ("layer-read", "layer-echo"):
        pts += [{"panel": sub, "sub": sub, "x": c, "count": c} for c in layer_counts]
    return pts


def _micro_targets() -> list[Target]:
    return [
        # All tasks alive (the Condy benchmark's workload): at most half of Monoio's time per
        # task, and at most 60 ns of CPU per task.
        Target("ringo", "monoio", 2.0, "max x", "spawn with every task alive: at most 0.5x Monoio's time per task",
               panel="spawn"),
        Target("ringo", "", 0, "max x", "spawn with every task alive: at most 60 ns CPU per task",
               field="cpu_us_per_op", max_value=0.060, panel="spawn"),
        # The same two bars on the second round (spawn-warm): the runtimes' own cost per task,
        # without the first touch of the memory the tasks need.
        Target("ringo", "monoio", 2.0, "max x", "spawn with every task alive, second round (memory already "
               "touched): at most 0.5x Monoio's time per task", panel="spawn-warm"),
        Target("ringo", "", 0, "max x", "spawn with every task alive, second round (memory already touched): "
               "at most 60 ns CPU per task", field="cpu_us_per_op", max_value=0.060, panel="spawn-warm"),
        # "within 10 %": ringo's time at most 1.1x raw liburing's, i.e. a speed-up of at least 1/1.1.
        Target("ringo", "liburing", 1 / 1.1, "every x", "when_all of N NOPs within 10 % of N raw NOP SQEs "
               "submitted in one batch", panel="when-all-nop"),
        # A NOP round trip makes the same system calls on both sides; wall time on a shared
        # machine is noise at this size, so it is judged on CPU time (instructions beside it).
        Target("ringo", "liburing", 1 / 1.05, "every x", "NOP round trip within 5 % of raw liburing's CPU time",
               panel="nop", on="cpu_us_per_op"),
        Target("ringo", "", 0, "every x", "pending with_timeout waits: at most 1 kernel timeout in flight",
               field="kernel_timeouts_in_flight", max_value=1.0, panel="timeouts"),
        # The high-level layer costs nothing measurable: within 2 % of op:: in CPU time per
        # operation. Both forms make the same system calls, so the difference is user-space
        # code: judged from callgrind's instructions (a 2 % bar is below this machine's noise in
        # CPU time; the measured CPU times stand beside it).
        Target("ringo high-level", "ringo", 0.98, "every x", "fs::File::read_at within 2 % of op::read (CPU time)",
               panel="layer-read", on="cpu_us_per_op", from_instructions=True),
        Target("ringo high-level", "ringo", 0.98, "every x", "an echo server written with net::TcpStream within 2 % "
               "of the same server written with op:: (CPU time per message)", panel="layer-echo", on="cpu_us_per_op",
               from_instructions=True),
        # ... and no heap allocation per operation (a counting operator new in the program; the
        # few of its set-up spread over 100 000 operations stay far below the bar).
        Target("ringo high-level", "", 0, "every x", "fs::File::read_at allocates nothing per read",
               field="allocs_per_op", max_value=0.001, panel="layer-read"),
        Target("ringo high-level", "", 0, "every x", "the net::TcpStream echo server allocates nothing per message",
               field="allocs_per_op", max_value=0.001, panel="layer-echo"),
    ]


# --------------------------------------------------------------------------- the epoll engine

# ringo's rows of the epoll figure: the same program on either engine, forced through the
# environment (RINGO_ENGINE), and failed when the program reports another engine than the one
# asked for (echo_ringo and bench_ringo_storage print it in their JSON; for http_file_server the
# driver reads it from the server's descriptors: httpbench.engine_of).
RINGO_EPOLL, RINGO_URING = "ringo (epoll engine)", "ringo (io_uring)"
ON_EPOLL = dict(env={"RINGO_ENGINE": "epoll"}, expect={"engine": "epoll"})
ON_URING = dict(env={"RINGO_ENGINE": "io_uring"}, expect={"engine": "io_uring"})
EPOLL_BASELINE = "epoll (hand-written)"
EPOLL_QDS = [1, 16]


def _epoll_echo_impls() -> list[Impl]:
    S = " --port {port}"
    return [
        I(RINGO_EPOLL, f"<{RINGO_ECHO}>" + S, kind="server", **ON_EPOLL),
        I(RINGO_URING, f"<{RINGO_ECHO}>" + S, kind="server", **ON_URING),
        I(EPOLL_BASELINE, "<echo_epoll>" + S, kind="server"),
        I("asio", "<echo_asio>" + S, kind="server"),
    ]


def _epoll_http_impls() -> list[Impl]:
    return [
        I(RINGO_EPOLL, HTTP_RINGO, kind="http", **ON_EPOLL),
        I(RINGO_URING, HTTP_RINGO, kind="http", **ON_URING),
        I("nginx", HTTP_NGINX, kind="http"),
    ]


def _epoll_storage_impls() -> list[Impl]:
    A = STORAGE_ARGS + " --variant {variant}"
    rows = []
    for v, label in (("buffered", "page cache"), ("direct", "O_DIRECT")):
        p = {"variant": v}
        rows += [
            I(f"{RINGO_EPOLL} {label}", f"<{RINGO_STORAGE}> " + A, tag=v, params=p, **ON_EPOLL),
            I(f"{RINGO_URING} {label}", f"<{RINGO_STORAGE}> " + A, tag=v, params=p, **ON_URING),
            # pread(2), one at a time: what QD 1 is compared with
            I(f"psync {label}", "<bench_sync> " + A + " --engine psync", tag=v, params=p, when=qd1),
            # glibc's POSIX AIO (aio_read on its helper threads): what a deeper queue is compared with
            I(f"glibc posixaio {label}", "<bench_sync> " + A + " --engine posixaio", tag=v, params=p,
              when=lambda pt: pt.get("qd", 1) > 1),
        ]
    return rows


def _epoll_parts() -> list["Figure"]:
    echo = Figure(
        "epoll-echo", "Echo server, 1 KiB messages: server CPU per message (server CPU 0, io_uring client CPU 1)",
        "echo", "connections", SERVER_CPU_PER_MSG, _epoll_echo_impls(), ECHO_PROFILES, plot="lines-log2x",
        client=ECHO_CLIENT,
        notes=["The echo figure's workload and client (bench_echo_client --mode uring, 1 KiB messages); "
               "ringo's row is echo_ringo (op::recv / op::send) with RINGO_ENGINE=epoll in its environment, "
               "beside the same program on io_uring for reference. epoll (hand-written): bench/net/echo_epoll.cpp; "
               "asio: bench/net/echo_asio.cpp. The epoll engine's own system calls (recv, send, epoll_wait, "
               "epoll_ctl) are not counted by the program: they come from the untimed strace pass (ˢ), which slows "
               "the server so that most recvs find data: the timed runs make more.",
               "System calls, counted with perf's syscall tracepoints (1.5 s, not under strace): ringo's epoll "
               "row makes 2.5 per message at 4 connections (recvfrom 1.0, sendto 1.0, epoll_wait 0.5) and 2.1 at "
               "16, as echo_epoll (read 1.0, write 1.0, epoll_wait 0.5; 2.1 at 16). The engine registers a socket "
               "it made (accept) once, edge-triggered, for its life, and a recv of a socket whose last read left "
               "its queue empty (EAGAIN or a short read) waits for the next edge without trying first "
               "(src/epoll/descriptors.cpp and engine.hpp: Engine::watch, skips_first_try). Before, it tried every recv at once and "
               "re-armed the registration with an EPOLL_CTL_MOD at each wait (a descriptor may be closed and "
               "its number reused behind its back; that case is now caught by re-checking a registration when "
               "nothing came for 10 ms): 4.2 per message at 4 connections (recvfrom 2.3, epoll_ctl 0.7), 3.1 "
               "at 16. In user space the engine's server runs about 1 050-1 350 instructions per message against "
               "echo_epoll's 90 (callgrind slope between a 1 s and a 3 s run at 4 connections; under callgrind "
               "the slowed server finds data waiting, so that count weighs the path through epoll_wait that "
               "the timed runs take less often): the queues emulated in user space (Engine::start, "
               "try_call_once, finish, post, make, poll_events, retry) and the coroutine's resumption."],
        targets=[Target(RINGO_EPOLL, EPOLL_BASELINE, 1 / 1.05, "every x",
                        "server CPU per message at most 1.05x the hand-written epoll server's"),
                 Target(RINGO_EPOLL, "asio", 1.0, "every x", "server CPU per message at most Asio's")])
    http = Figure(
        "epoll-http", "HTTP server: server CPU per request (server CPU 0, wrk CPU 1)", "http", "connections",
        SERVER_CPU_PER_REQ, _epoll_http_impls(),
        {"quick": dict(points=_http_points([100])[:2], seconds=2, warmup_seconds=1, reps=3),
         "full": dict(points=[p for p in _http_points([10, 100, 1000]) if p["path"] != "/1m.bin"],
                      seconds=5, warmup_seconds=2, reps=5)},
        plot="bars", client=HTTP_CLIENT,
        notes=["The http figure's workload: examples/http_file_server (one runtime) and nginx serve the "
               "17-byte in-memory answer and the 4 KiB file to wrk (one thread); the measure is the server's "
               "CPU time over wrk's run per request. ringo's rows run with RINGO_ENGINE=epoll and with "
               "RINGO_ENGINE=io_uring; the driver reads the engine from the server's descriptors (an "
               "io_uring instance, or an epoll instance and none) and fails a run on the wrong one.",
               "The 4 KiB file on epoll: per request examples/http_file_server opens the file (op::openat2 "
               "with O_NONBLOCK), reads its metadata (statx of the descriptor) and reads it (read_exact_at). The "
               "epoll engine tries such an open at once with RESOLVE_CACHED, makes a statx of a descriptor on a "
               "local file system at once (AT_STATX_DONT_SYNC) and reads the page cache at once (RWF_NOWAIT), so "
               "no call goes to its thread pool: counted with perf's syscall tracepoints at 100 connections "
               "(2 s), 7.3 system calls per request (openat2, statx, preadv2, close, recvfrom, sendto, and "
               "epoll_wait 0.02), where nginx opens, fstat()s and sends the file (sendfile). Before, openat2 and "
               "statx ran on the pool (two hand-offs per request, futex and eventfd calls, the switches between "
               "the loop's thread and a pool thread on the server's one CPU, fstat and fcntl at the read): "
               "16.6 system calls per request and about 2x nginx's CPU per request."],
        targets=[Target(RINGO_EPOLL, "nginx", 1.0, "every x", "requests/s at least nginx's",
                        on="rps", higher_is_better=True),
                 Target(RINGO_EPOLL, "nginx", 1.0, "every x", "server CPU per request at most nginx's")])
    storage = Figure(
        "epoll-storage", "Random read, 4 KiB, shared seeded offsets: page cache and O_DIRECT", "storage",
        "queue depth", IOPS, _epoll_storage_impls(),
        {"quick": dict(mode="randread", bs=4096, xs=EPOLL_QDS, seconds=0.3, warmup_seconds=0.1, reps=3,
                       tiers=["loop"]),
         "full": dict(mode="randread", bs=4096, xs=EPOLL_QDS, seconds=1.0, warmup_seconds=0.5, reps=5,
                      tiers=["loop", "disk"])},
        plot="bars", storage=True,
        notes=["The sync-vs-async figure's programs on the storage tier's test file: bench_ringo_storage "
               "(op::read, QD reads in flight) on either engine, psync (pread, QD 1 only) and glibc's POSIX "
               "AIO (aio_read, QD 16). On the epoll engine (src/epoll/) a read of a file opened "
               "without O_DIRECT is first tried at once with RWF_NOWAIT (a page-cache hit completes there, as "
               "io_uring's first try does); one that would wait runs on the engine's thread pool, whose threads "
               "share the program's CPU; an O_DIRECT read goes to native AIO (below). The program cannot count "
               "the engine's calls, so its system calls come from the untimed strace pass (ˢ).",
               "QD 1 on epoll against psync. Page cache: one system call per read, as psync (strace: "
               "preadv2 with RWF_NOWAIT; the engine caches what a descriptor is, and a positional read's "
               "-ESPIPE, -EISDIR or -EBADF says when the number names something else now): what is left is the "
               "runtime's own cost per operation (the emulated queues in user space), which ringo on io_uring "
               "(one io_uring_enter per read) also shows against psync, by about as much. Before the cache: three "
               "calls per read (newfstatat, fcntl, preadv2), about 0.5x psync; with it 0.86x in a quick run on a "
               "busy machine.",
               "Why page cache at QD 1 stays below 0.9x psync: most of the gap is the kernel's, not ringo's. "
               "Profiled with perf (cpu-clock samples, 2 s each on one CPU, 4 KiB random reads of a 64 MiB ext4 "
               "file held in the page cache): psync 899 000 reads/s, ringo on epoll 720 000 (0.80x). Per read the "
               "system call's body took 0.91 us as pread64 and 1.07 us as preadv2 with RWF_NOWAIT (the vectored "
               "path: the iovec copied in and imported), 0.16 us more for the same copy of the same page; the "
               "user-space rest was 0.19 us for ringo (the bench loop, the emulated queues) against psync's "
               "0.12 us (the bench loop). A read on the loop's thread must not wait for a disk, and "
               "preadv2 with RWF_NOWAIT is the only call that reads at an offset without waiting (pread64 takes "
               "no flags, and O_NONBLOCK does not make a regular file's read non-waiting). So even with no "
               "user-space cost of its own the engine would reach about 0.87x psync here: the 0.9x target is out "
               "of reach for a read that must not block the loop. ringo on io_uring shows about the same ratio "
               "(0.80x-0.82x).",
               "O_DIRECT on epoll: a direct read is queued with Linux's native AIO (io_submit with RWF_NOWAIT; "
               "Docker's and Kubernetes' default profiles allow it), its completion writes the eventfd the "
               "engine's epoll_wait watches (edge-triggered, never read back), and the engine takes the "
               "completions from the AIO ring mapped into the process, without io_getevents: about 1.3 system "
               "calls per read at QD 1 (io_submit, and epoll_wait when the read has not ended by the next wait) "
               "and 1.2 at QD 16. It goes to the pool only where io_setup is refused or a call would wait. "
               "Before (every direct read on the pool: futex, the eventfd's write and read, epoll_wait, pread64, "
               "and two switches between the loop's thread and a pool thread each way on the program's one "
               "CPU): QD 1 0.45x -> 0.48x psync, QD 16 0.73x -> 0.88x glibc POSIX AIO (quick runs, loop tier, "
               "on a busy machine)."],
        targets=[Target(f"{RINGO_EPOLL} page cache", "psync page cache", 0.9, "every x", "QD 1: at least 0.9x psync"),
                 Target(f"{RINGO_EPOLL} O_DIRECT", "psync O_DIRECT", 0.9, "every x", "QD 1: at least 0.9x psync"),
                 Target(f"{RINGO_EPOLL} page cache", "glibc posixaio page cache", 1.0, "every x",
                        "QD 16: at least glibc POSIX AIO"),
                 Target(f"{RINGO_EPOLL} O_DIRECT", "glibc posixaio O_DIRECT", 1.0, "every x",
                        "QD 16: at least glibc POSIX AIO")])
    return [echo, http, storage]


# --------------------------------------------------------------------------- the figures

FIGURES: list[Figure] = [
    Figure(
        "seqread", "Sequential read, 64 KiB", "storage", "queue depth", MIBS, _storage_impls(),
        _storage_profiles(65536, "seqread"), plot="lines-log2x", storage=True, targets=_storage_targets(),
        notes=["Buffered rows read a file that fits in memory: after the first pass they are page-cache "
               "copies, on either tier.", URING_ENTER_NOTE]),
    Figure(
        "randread", "Random read, 4 KiB, shared seeded offsets", "storage", "queue depth", IOPS,
        _storage_impls(), _storage_profiles(4096, "randread"), plot="lines-log2x", storage=True,
        targets=_storage_targets(), notes=[URING_ENTER_NOTE]),
    Figure(
        "syncasync", "Sync vs async, 4 KiB (after \"Synchronous IO is fast?!\", with fio)", "syncasync", "workload", IOPS,
        _syncasync_impls(),
        {
            "quick": dict(bs=4096, points=_workloads(["randread", "randwrite", "randmixed"], ["buffered", "direct"]),
                          seconds=0.3, warmup_seconds=0.1, reps=3, tiers=["loop"]),
            "full": dict(bs=4096, points=_workloads(["seqread", "randread", "write", "randwrite", "seqmixed",
                                                     "randmixed"], ["buffered", "direct"]),
                         seconds=1.0, warmup_seconds=0.5, reps=5, tiers=["loop", "disk"]),
        },
        plot="bars", storage=True,
        notes=["mixed = 80 % reads / 20 % writes (op k is a write when k mod 5 == 4; fio uses rwmixread=80). "
               "Random rows read the shared seeded offsets file; fio draws its own offsets (randrepeat=1).",
               "Latency is per I/O from submission to completion (fio: lat_ns, i.e. slat + clat).",
               "fio rows: CPU is fio's own usr_cpu + sys_cpu for the job, which may leave out glibc's POSIX AIO "
               "helper threads; fio reports no syscall count. posixaio syscalls (ours) are aio_suspend calls plus "
               "one pread/pwrite per request made by glibc's helper threads.",
               "posixaio (ours) waits like fio's engine (checks completions before it sleeps, reaps every "
               "finished request, sleeps in aio_suspend only on requests in progress) but sleeps until a quarter "
               "of the queue has finished where fio wakes per completion: glibc runs one file's requests in order "
               "on one helper thread, and each wake-up costs that thread a futex wake.",
               "Buffered random writes on the loop tier are slow for every engine alike (page-cache writeback "
               "through ext4 and the loop device dominates). Since writeback's workers share the programs' CPU "
               "(next note) these rows are about a third of what they were with writeback on the other CPU "
               "(psync 17 k against 48 k IOPS).",
               "The loop tier's rows run with the unbound workqueues, the loop device's workers and writeback "
               "among them, on the programs' CPU, so a program's IOPS follow its CPU per I/O plus the device's "
               "work. Left free, the workers moved between the CPUs depending on what a program did before its "
               "first I/O, and fio's psync and posixaio direct rows came out 1.2-1.7x ours for the same calls "
               "(bench/driver/tiers.py gives the measurements). Now our psync and posixaio match fio's or "
               "beat them: psync randread agrees within the spreads; fio's psync job spends as much or more "
               "CPU per I/O (4.71 against 4.67 µs per randread, 5.68 against 4.83 per randwrite); fio's "
               "posixaio CPU leaves out glibc's helper threads, so it is not comparable. fio's libaio and "
               "io_uring direct rows reach 0.55-0.66x of our libaio and liburing programs: fio spends about "
               "twice their CPU per I/O (3.50 against 1.68 µs for io_uring on randread).", URING_ENTER_NOTE]),
    Figure(
        "copy", "File copy: examples/copy against coreutils cp and dd", "copy", "copy", MIBS, _copy_impls(),
        {"quick": dict(bs=128 << 10, points=COPY_POINTS, warmup_seconds=0, reps=5, tiers=["loop"]),
         "full": dict(bs=128 << 10, points=COPY_POINTS, warmup_seconds=0, reps=7, tiers=["loop", "disk"])},
        plot="bars", storage=True,
        notes=["Every program copies the tier's whole test file to a new file beside it. A run is timed from "
               "the program's start to its exit (a program's own start-up included, no fsync: a buffered "
               "copy ends in the page cache), its CPU time is the process's user + system time (wait4); the "
               "copy is then compared with the source byte for byte and removed before its pages are written "
               "back, so no writeback spills into the next run. The source is in the page cache for the "
               "page-cache rows.",
               "ringo copy: examples/copy with its default of 8 blocks of 128 KiB in flight, and with 4 of "
               "1 MiB; each block is read into a registered buffer and written from it (File::read_at_fixed, "
               "File::write_at_fixed), both files in the registered file table. cp: coreutils 9.1, which "
               "copies with copy_file_range(2), inside the kernel, without user-space buffers (no O_DIRECT "
               "option). dd: one read(2) and one write(2) at a time, "
               "iflag=direct oflag=direct on the O_DIRECT rows. Through the page cache, ext4 makes io_uring hand "
               "every write to an io-wq worker (about 1 400 worker switches per 256 MiB at 128 KiB blocks); "
               "those workers are threads of the process, on its CPU (checked with sched_switch events) and "
               "in its CPU time.",
               "A quick-profile copy takes about 0.12 s, start-up included, and its runs spread by a fifth or "
               "more: ratios between 0.8x and 1.25x here are within the noise.",
               "Per MiB columns: ops = MiB copied; syscalls from an untimed strace -f -c run."]),
    Figure(
        "echo", "Echo server, 1 KiB messages: server CPU per message (server CPU 0, io_uring client CPU 1)",
        "echo", "connections", SERVER_CPU_PER_MSG,
        _echo_impls(),
        ECHO_PROFILES, plot="lines-log2x", client=ECHO_CLIENT,
        notes=["Measure: the server's CPU time (user + system, whole process) per message it echoed, "
               "lower is better. Throughput is not the measure: with one client thread on loopback the "
               "client and the server each spend about as much CPU per message (a loopback send also runs "
               "the receiving socket's TCP processing on the sender's CPU), so round trips/s mostly show how "
               "fast the client and the machine's other load are, and cannot rank servers.",
               "The client is the cheapest we have (bench_echo_client --mode uring: raw liburing, registered "
               "files, a SEND and a RECV per message submitted together, one io_uring_enter per loop turn, "
               "every echoed byte checked), pinned to CPU 1 with the server alone on CPU 0. Against the "
               "epoll client it cuts the client's syscalls per message from about 2.1 to 0.2-0.4, but its "
               "CPU per message only a little: almost all of it is kernel TCP work.",
               "What the figure can show: differences in the server's own cost per message (its syscalls, "
               "its user-space work, how many messages one io_uring_enter or epoll_wait serves). What it "
               "cannot show: a server's peak throughput or scaling with cores (both sides share a 2-vCPU "
               "machine), or NIC effects (no NIC on loopback; the kernel's TCP path, a few us per message, "
               "is most of every server's CPU, so user-space differences are a few percent of the total). "
               "The server's CPU includes its set-up and the drain after the client's window; with one "
               "server per data point and thousands of messages that is well under 1 %."],
        targets=[Target("ringo plain", "epoll", 1.1, "every x", "server CPU per message at most 1/1.1 of epoll's"),
                 Target("ringo net::TcpStream", "ringo plain", 0.98, "every x",
                        "net::TcpStream within 2 % of op:: server CPU per message"),
                 Target("ringo plain", "asio", 1.1, "every x", "server CPU per message at most 1/1.1 of Asio's")]),
    Figure(
        "http", "HTTP server: server CPU per request (server CPU 0, wrk CPU 1)", "http", "connections",
        SERVER_CPU_PER_REQ, _http_impls(),
        {"quick": dict(points=_http_points([10, 100, 1000]), seconds=3, warmup_seconds=1, reps=3),
         "full": dict(points=_http_points([10, 100, 1000]), seconds=5, warmup_seconds=2, reps=5)},
        plot="lines-log2x", client=HTTP_CLIENT,
        notes=["Measure: the server process's CPU time (user + system, every thread, io-wq workers included; "
               "read from /proc just before wrk starts and just after it ends) divided by the requests wrk "
               "completed, lower is better. wrk with one thread on one vCPU is close to saturating, so "
               "requests/s and latency mostly show the client and the machine; server CPU per request is the "
               "measure that separates servers. Requests/s and p50/p99 latency (wrk --latency) are given below.",
               "Every server serves the same bytes: a 17-byte text from memory (ringo and Beast: --inline, "
               "nginx: `return 200`), and a 4 KiB and a 1 MiB file of random bytes written once per figure run into a "
               "temporary folder (in the page cache). Every run first GETs its URL once and checks the bytes.",
               "nginx 1.22 (Debian): one process that is its own worker (daemon off, master_process off), "
               "access log off, sendfile on, tcp_nopush on, keep-alive without a request limit. ringo: "
               "examples/http_file_server on one runtime (files of 16 KiB or less sent with their head in one "
               "send; a larger one's head sent with MSG_MORE, its body by sendfile on the socket made "
               "non-blocking for the call, an io_uring poll waiting for room). Boost.Beast (Boost 1.74, "
               "Debian's libboost-dev): bench/net/http_beast.cpp, the C++ coroutine server a Beast user would "
               "write after Beast's examples: one io_context on one thread, a coroutine per connection "
               "(co_spawn, use_awaitable), http::async_read and http::async_write, the in-memory answer as a "
               "string_body, files as a file_body, which Beast reads and writes through user space in 4 KiB "
               "pieces (it has no sendfile). A fresh server process per run. At 1 MiB and 1 000 connections "
               "Beast finishes no request within the one-second warm-up: its one thread spends ~2 ms of CPU on "
               "each 1 MiB answer (256 reads and 256 writes), so one answer to each connection takes ~2 s, "
               "and wrk counts finished requests only; the failed warm-up fails that point.",
               "wrk -t1 -cN -dS --timeout 10s --latency; a run with any non-2xx answer or socket error "
               "(connect, read, write, timeout) is failed. The open-file limit is raised to 65 536 for wrk "
               "and every server.",
               "Why the 0.7x CPU bar is not met here: nearly all of ringo's and nginx's CPU time is the "
               "kernel's TCP work (on loopback a sender also pays the receiving side's processing), which "
               "io_uring's recv and send go through as read and write do. Taken apart by hand at 100 "
               "connections on the 17-byte answer (user and system time of the server process, two runs "
               "each): ringo 0.31 µs of user time and 7.3-7.7 µs of system time per request, nginx 1.5-1.8 "
               "µs of user time and 6.9-7.4 µs of system time. At 0.7x nginx's 8.4-9.2 µs, ringo would have "
               "to spend 15-20 % less kernel time per request than nginx on the same TCP path. Both "
               "send 1 MiB files with sendfile; requests/s on the 17-byte answer is wrk's limit for both "
               "(one wrk thread on one vCPU). ringo and nginx make the same TCP traffic: 2.00 segments out and "
               "2.00 in per request on the 17-byte answer at 100 connections (nstat, both directions of "
               "loopback counted), no pure ACKs. A cpu-clock profile of the server CPU at that point "
               "(perf, 4 s, 117 k requests/s for ringo, 104 k for nginx) put ringo at 6.4 µs and nginx at "
               "9.0 µs per request, 0.71x: of ringo's time 80 % was the kernel's TCP and socket code, 8 % "
               "io_uring's own kernel code, 7 % user space, 3 % the scheduler, 2 % system call entry; of "
               "nginx's, 75 % TCP, socket and epoll code, 19 % user space. Hand runs of the same point "
               "range from 0.72x to 0.85x, so the bar sits inside the runs' spread and a verdict of met "
               "would need most of what io_uring's own code and user space cost on top of the shared TCP "
               "path removed. Tried and not kept: the request read through a multishot recv into a "
               "per-runtime provided-buffer ring (no receive to arm per request): 6.7-7.5 µs per request "
               "against 6.7-7.1 µs with plain recv at 100 connections, and no change at 10 and 1 000, "
               "with more user time for the ring's bookkeeping; and recv with IORING_RECVSEND_POLL_FIRST "
               "(no failed first attempt before the request arrives): 6.91 against 6.90 µs per request, "
               "medians of 5 interleaved runs each. The server makes 0.42 io_uring_enter calls per request "
               "at 100 connections (nginx about 4 system calls).",
               "At 1 MiB both servers send the file with sendfile, and a cpu-clock profile of the server CPU "
               "at 1 000 connections puts almost all of either server's busy time in the same kernel "
               "sendfile, splice and TCP code: program-specific code (user space, io_uring's or epoll's own "
               "kernel code) is 3.2 % of ringo's busy time and 4.6 % of nginx's. No server making those calls "
               "can spend 0.7x of another's CPU there (hand runs: ringo 118.5 µs, nginx 111.2 µs per request)."],
        targets=[Target("ringo http_file_server", "nginx", 1.0, "every x", "requests/s at least nginx's",
                        on="rps", higher_is_better=True),
                 Target("ringo http_file_server", "nginx", 1 / 0.7, "every x",
                        "server CPU per request at most 0.7x nginx's")]),
    Figure(
        "pingpong", "Ping-pong in one thread, 4-byte messages (the liburing4cpp ping-pong benchmark)", "pingpong", "connections x round trips",
        TOTAL_MS, _pingpong_impls(),
        {"quick": dict(points=[{"x": "1x100000", "conns": 1, "msgs": 100000},
                               {"x": "500x500", "conns": 500, "msgs": 500}], warmup_seconds=0, reps=3),
         "full": dict(points=[{"x": "1x100000", "conns": 1, "msgs": 100000},
                              {"x": "500x500", "conns": 500, "msgs": 500}], warmup_seconds=0, reps=5)},
        plot="bars",
        targets=[Target("ringo recv/send", "io_uring recv/send", 1.0, "every x", "at least raw io_uring recv/send"),
                 Target("ringo recv/send", "", 0, "every x", "at most 2 event-loop syscalls per round trip",
                        field="loop_syscalls_per_op", max_value=2.0)]),
    Figure(
        "pipes", "Pipes: 128 pipes x 256 rounds (after the Phoronix article on IOCB_NOWAIT for pipes)", "pipes", "pipes at read time",
        RUN_MS, _pipes_impls(),
        {"quick": dict(points=[{"x": "empty", "prefill": 0}, {"x": "prefilled", "prefill": 1}],
                       warmup_seconds=0, reps=9),
         "full": dict(points=[{"x": "empty", "prefill": 0}, {"x": "prefilled", "prefill": 1}],
                      warmup_seconds=0, reps=9)},
        plot="bars",
        targets=[Target("ringo", "liburing", 0.95, "every x", "within 5 % of raw liburing")],
        notes=["10 runs per point, the first (the warm-up) dropped, as in the article; the table gives "
               "avg ± stdev, min and max of the other 9. empty: reads are issued on empty pipes; "
               "prefilled: the data is already there when the read is issued."]),
    Figure(
        "micro", "Runtime micro benchmarks", "micro", "count", TOTAL_MS, _micro_impls(),
        {"quick": dict(points=_micro_points([10_000, 100_000, 1_000_000], [1, 4, 32], 100_000, [100_000]),
                       warmup_seconds=0, reps=3),
         "full": dict(points=_micro_points([10_000, 100_000, 1_000_000, 10_000_000], [1, 2, 4, 8, 16, 32],
                                           1_000_000, [10_000, 100_000]), warmup_seconds=0, reps=5)},
        plot="loglog", panel_x_labels={"channel-pairs": "producer/consumer pairs (messages per pair fixed)",
                                       "channel": "messages",
                                       "spawn": "tasks, all alive at once (spawn every one, then join each)",
                                       "spawn-warm": "tasks, all alive at once, second round on the same "
                                                     "runtime (memory already touched)",
                                       "spawn-one": "tasks, one alive at a time (spawn, join, spawn ...)",
                                       "yield": "yields, in a spawned task",
                                       "yield-root": "yields, in the root future of block_on (Asio has none)",
                                       "nop": "NOPs", "xthread-channel": "messages",
                                       "pool-spawn": "tasks (spawned round robin on 2 runtimes)",
                                       "when-all-nop": "NOPs per when_all / per raw submission (2^20 NOPs per run)",
                                       "timeouts": "pending with_timeout waits",
                                       "layer-read": "4 KiB reads of a page-cached file, one at a time "
                                                     "(op::read vs fs::File::read_at)",
                                       "layer-echo": "1 KiB messages echoed over loopback TCP (the server's "
                                                     "loop in op:: vs net::TcpStream)"},
        targets=_micro_targets(),
        notes=["when-all-nop: ringo awaits when_all(std::vector<op::Nop>(N)) (and, at N = 32, the variadic "
               "when_all of 32 nop() calls), liburing submits N NOP SQEs with one io_uring_enter (submit N, "
               "wait for N); both on a SINGLE_ISSUER | DEFER_TASKRUN ring, one io_uring_enter per batch.",
               "nop and when-all-nop: the liburing row issues io_uring_enter inline in its loop, as ringo does, "
               "not through io_uring_submit_and_wait, whose return right after the system call cost ~110 ns "
               "of CPU time per NOP, nearly all of it system time, on the reference VM (AMD EPYC Zen 4 guest, kernel with the SRSO "
               "Safe RET mitigation); by hand, medians of 7 interleaved runs of 1 000 000 NOPs: 350 ns per "
               "NOP through io_uring_submit_and_wait, 239 ns inline, ringo 240 ns (the ping-pong, pipes and "
               "storage baselines enter inline too).",
               "timeouts: `count` with_timeout(recv, 1 h) waits, each in its own task, that never fire; "
               "the table under the panel gives heap bytes per pending wait, kernel timeout SQEs and the "
               "cost of arming and disarming one; `ms` is `count` arm + disarm cycles with them pending.",
               "spawn at 1 000 000 tasks: ringo carves task frames from its own chunks (64 KiB, 256 KiB, then "
               "2 MiB). Where a virtio balloon with free page reporting is bound (the reference VM), the host "
               "takes back free guest memory and a fresh transparent huge page came ~4 ns a byte, 5-10x slower "
               "than 4 KiB pages: there the 2 MiB chunks use 4 KiB pages populated 256 KiB at a time "
               "(MADV_POPULATE_WRITE); elsewhere huge pages, timed, with the same fallback.",
               "spawn-warm: the spawn panel's workload twice on one runtime (Asio: one io_context), only the "
               "second round timed. The first round leaves the memory its tasks used already touched (ringo's "
               "frame pool keeps its frames; what the other runtimes' allocators keep, their page-fault column "
               "shows), so this panel is each runtime's own cost per task, and the spawn panel adds the first "
               "touch of that memory. On the reference VMs a first-touched 4 KiB page has cost ~1.3-2.5 µs of "
               "kernel time (the host backs guest memory it took back page by page): at 1 000 000 tasks that is "
               "about half of the spawn panel's time, and it grows with the bytes a task needs: ringo's empty "
               "task takes a 96-byte frame and an 8-byte run-queue slot, and every program keeps an 8-byte "
               "handle per task.",
               "spawn targets on the reference VMs: the spawn panel's two bars are out of reach there, because "
               "the first touch of a task's memory costs more than the bar leaves. At 1 000 000 tasks, half of "
               "Monoio's time per task (or 60 ns) minus ringo's own cost per task (spawn-warm) is what is left "
               "for the first touch of a frame and its run-queue slot. In this take that is 0.5 x 102 - 45.8 "
               "= 5.2 ns (against 60 ns: 14.2 ns), while touching those 104 bytes cost 49.5 ns (spawn minus "
               "spawn-warm: 0.48 ns of kernel time a byte, and 0.31-0.66 in the five takes before, on other "
               "VMs). Even a frame as small as Monoio's whole task (64 bytes; ringo's is 96: a promise of 64 "
               "bytes holding the join state, the owner, the cancellation context, whose links in the "
               "runtime's tree also make the list of live tasks and hold the exception once the task has "
               "ended, plus the compiler's 32) would take 22-48 ns to touch with its queue slot. The "
               "spawn-warm panel's half-of-Monoio bar is not met either, and for a "
               "related reason: with the memory touched, a million live tasks are bound by memory traffic, "
               "not instructions. ringo's time per task grows from 22.8 ns at 10 000 tasks (1.71x faster "
               "than Monoio's 38.9, the frames staying in cache) to 45.8 ns at 1 000 000 (1.30x Monoio's "
               "59.5) for the same ~250 user-space instructions per task (callgrind), because the "
               "workload's three passes (spawn all, run all, join all) each carry every frame "
               "through the caches; only a smaller frame moves that. Monoio's own times vary by a third "
               "between takes, so one take's ratio is a sample, not a constant. How far a smaller frame "
               "would go was measured with bench/micro/frame_slope.sh: the spawn workload with frames 16, 48 "
               "and 80 bytes larger than an empty task's, interleaved with Monoio, 1 000 000 tasks, CPU time. "
               "In two series (7 and 11 runs, when the frame was 112 bytes) ringo took 75.6 / 92.4 ns with it and 110.0 / "
               "141.1 ns with 192 bytes, Monoio 70.0 / 91.8 ns: 0.46-0.60 ns per frame byte. Extended below "
               "the sizes measured (an extrapolation: the cost may step with cache lines), the lines give a "
               "64-byte frame (the smallest that holds a promise with the join state, the owner, the "
               "cancellation context and the exception) 55.4 / 63.6 ns, 0.79x / 0.69x Monoio, and even a "
               "32-byte frame (the compiler's own part alone) 0.58x / 0.49x. So by these lines no frame a task "
               "can have meets the half-of-Monoio bar on this VM, and the spawn target, which asks for both "
               "bars, is out of reach here; the 60 ns bar alone would need a 64-byte frame, and then only in "
               "some takes.",
               "layer-read and layer-echo: the same program and the same work, the ringo row through op::, "
               "the ringo high-level row through fs::File / net::TcpStream; the table under each panel gives "
               "user-space instructions per operation (callgrind) beside wall and CPU time. Their 2 % targets "
               "are judged from instructions: both rows make the same system calls per operation (checked in "
               "the verdict) and the same kernel work, so the high-level row's CPU time is taken as the op:: "
               "row's plus the difference in instructions times the user-space CPU time one instruction takes "
               "in these runs (user CPU time over instructions, both rows; the verdict spans the runs' spread "
               "of it and of the op:: row's CPU time). The CPU-time ratio itself cannot resolve 2 % on this "
               "machine: it moves by a third between runs."]),
]

FIGURES.append(Figure(
    "epoll", "The epoll engine: ringo on epoll against the programs a user would otherwise use", "parts", "",
    SERVER_CPU_PER_MSG, [], {"quick": {}, "full": {}}, parts=_epoll_parts(),
    notes=["ringo serves the same programs where io_uring is refused (Docker's and Kubernetes' default seccomp "
           "profiles, kernel.io_uring_disabled, a small memlock limit) on its epoll engine: readiness for "
           "sockets, a thread pool for files (native AIO for O_DIRECT). Here each ringo row is the program of "
           "the figure it comes from with RINGO_ENGINE=epoll in its environment, against the programs a "
           "user of epoll would otherwise run (a hand-written epoll server, Asio, nginx, pread, glibc's POSIX "
           "AIO) on the same workload, and the same ringo program on io_uring for reference. A ringo run that "
           "reports another engine than the one its row asks for is failed."]))

# --------------------------------------------------------------------------- include cost

# Programs of the repository itself that a figure runs from where they are (no build): the
# driver finds `<name>` here before it looks in the build trees.
REPO_PROGRAMS = {"include-times": "scripts/include-times"}

# What including a header costs the compiler: scripts/include-times --json --only ROW, which
# compiles a file holding only that #include with -fsyntax-only, {reps} times, and reports the
# best run's user CPU time (and the lines the file preprocesses to). (name, row, tag): the
# umbrella headers share a tag, so the ratio table compares ringo.hpp with asio.hpp only.
INCLUDE_ROWS = [
    ("ringo ringo/ringo.hpp", "ringo/ringo.hpp", "umbrella"),
    ("ringo ringo/net/tcp.hpp", "ringo/net/tcp.hpp", "single"),
    ("ringo ringo/fs/file.hpp", "ringo/fs/file.hpp", "single"),
    ("ringo ringo/core/runtime.hpp", "ringo/core/runtime.hpp", "single"),
    ("ringo ringo/op/file.hpp", "ringo/op/file.hpp", "single"),
    ("asio asio.hpp", "asio.hpp", "umbrella"),
    ("liburing liburing.h", "liburing.h", "liburing"),
    ("ten standard headers", "standard", "standard"),
]
INCLUDE_CPU = Metric("user CPU s (best of the program's runs)", lambda j: j.get("user_cpu_seconds"),
                     higher_is_better=False)


def _include_impls() -> list[Impl]:
    T = "<include-times> --json --no-install --reps {reps} --cxx {cxx} --only "
    return [I(name, T + row, tag=tag) for name, row, tag in INCLUDE_ROWS]


FIGURES.append(Figure(
    "include", "Include cost: compiling a file that holds one #include (g++ -std=c++20 -fsyntax-only)", "compile",
    "compiler", INCLUDE_CPU, _include_impls(),
    # One point, the GCC the build uses; each run of the program is itself the best of 3
    # compiles (the targets' measure), so the quick profile runs every row once (~25 s in all).
    {"quick": dict(points=[{"x": "g++", "cxx": "g++", "reps": 3}], reps=1),
     "full": dict(points=[{"x": "g++", "cxx": "g++", "reps": 3}], reps=3)},
    plot="bars",
    targets=[Target("ringo ringo/ringo.hpp", "", 0, "every x", "at most 1.0 s of user CPU",
                    field="user_cpu_s", max_value=1.0),
             Target("ringo ringo/ringo.hpp", "asio asio.hpp", 1.0, "every x",
                    "at most asio.hpp's user CPU"),
             Target("ringo ringo/net/tcp.hpp", "", 0, "every x", "at most 0.7 s of user CPU",
                    field="user_cpu_s", max_value=0.7)],
    notes=["Each row is scripts/include-times --json --only ROW: a file holding only that #include (the ten "
           "standard headers: algorithm, chrono, functional, memory, mutex, optional, string, thread, variant, "
           "vector) compiled with g++ -std=c++20 -fsyntax-only three times, the best run's user CPU time "
           "(what the compiler spends, which other load on the machine hardly changes); the table under it "
           "gives the lines the file preprocesses to. asio.hpp is Debian's libasio-dev, liburing.h Debian's "
           "liburing-dev (2.3)."]))

FIGURE_NAMES = [f.name for f in FIGURES]


def figure(name: str) -> Figure:
    for f in FIGURES:
        if f.name == name:
            return f
    raise KeyError(name)
