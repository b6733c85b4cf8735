#!/usr/bin/env bash
# What each byte of a task's frame costs on the micro figure's spawn workload (spawn N empty
# tasks, all alive, then join each), and so what a smaller frame could reach:
#   bench/micro/frame_slope.sh [--runs R] [--count N] [--bin BENCH_RINGO_MICRO] [--monoio BIN]
# Runs ringo's spawn with frames 0, 16, 48 and 80 bytes larger than an empty task's
# (bench_ringo_micro spawn --frame-pad P) and Monoio's spawn, interleaved, R times each (default
# 7), each in a fresh process pinned to one CPU; prints the median CPU time per task of each,
# the least-squares line through ringo's medians (ns per frame byte), and what that line gives
# (an extrapolation below the measured sizes) for frames of 96, 64, 48 and 32 bytes next to the
# spawn targets (at most 0.5x Monoio's time per task and at most 60 ns). Needs `cmake --preset bench && cmake --build build/micro`, and the
# Rust baselines (scripts/bench builds them) for the Monoio column.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
runs=7
count=1000000
bin=$ROOT/build/micro/bench/micro/bench_ringo_micro
monoio=$ROOT/bench/rust/target/release/ringo-bench-monoio
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --monoio) monoio=$2; shift 2 ;;
    *) echo "usage: $0 [--runs R] [--count N] [--bin BENCH_RINGO_MICRO] [--monoio BIN]" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "$bin is missing (cmake --preset bench && cmake --build build/micro)" >&2; exit 1; }
[[ -x "$monoio" ]] || { echo "no Monoio program at $monoio: ringo's rows only" >&2; monoio=""; }
cpu=$(( $(nproc) > 1 ? 1 : 0 ))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
programs=(0 16 48 80)
[[ -n "$monoio" ]] && programs+=(monoio)
n=${#programs[@]}
for ((r = 0; r < runs; r++)); do
  for ((k = 0; k < n; k++)); do # the order rotated each round, so drift does not follow frame size
    p=${programs[$(( (k + r) % n ))]}
    if [[ $p == monoio ]]; then
      taskset -c "$cpu" "$monoio" spawn --count "$count" >>"$out" || true
    else
      taskset -c "$cpu" "$bin" spawn --count "$count" --frame-pad "$p" >>"$out" || true
    fi
  done
done
python3 - "$out" $(( runs * n )) <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
bad = [r for r in rows if not r.get("ok")]
if bad:
    sys.exit(f"a run failed: {bad[0]}")
if len(rows) != int(sys.argv[2]):
    sys.exit(f"{int(sys.argv[2]) - len(rows)} run(s) printed nothing (crashed?)")
ns = lambda r: r["cpu_seconds"] / r["ops"] * 1e9
by = {}
for r in rows:
    key = r["frame_bytes"] if r["impl"] == "ringo" else "monoio"
    by.setdefault(key, []).append(ns(r))
print(f"CPU ns per task, {rows[0]['count']} tasks alive, medians of {min(map(len, by.values()))} runs [min-max]")
xs, ys = [], []
for key in sorted(k for k in by if k != "monoio"):
    v = by[key]
    xs.append(key)
    ys.append(statistics.median(v))
    print(f"  ringo, {key:3d}-byte frame: {ys[-1]:6.1f} [{min(v):.1f}-{max(v):.1f}]")
mono = None
if "monoio" in by:
    v = by["monoio"]
    mono = statistics.median(v)
    print(f"  Monoio:                {mono:6.1f} [{min(v):.1f}-{max(v):.1f}]")
if len(set(xs)) < 2:
    sys.exit(f"every padded frame measured {xs[0]} bytes: the compiler left the pad out of the frame")
n = len(xs)
mx, my = sum(xs) / n, sum(ys) / n
slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
base = my - slope * mx
print(f"least squares: {slope:.3f} ns per frame byte, {base:.1f} ns at 0 bytes; extrapolated:")
for size in (96, 64, 48, 32):
    t = base + slope * size
    line = f"  a {size}-byte frame: {t:5.1f} ns"
    if mono:
        line += f" = {t / mono:.2f}x Monoio (target <= 0.50x: {'yes' if t <= 0.5 * mono else 'no'})"
    line += f", <= 60 ns: {'yes' if t <= 60 else 'no'}"
    print(line)
PY
