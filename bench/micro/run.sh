#!/usr/bin/env bash
# bench/micro/run.sh - the runtime micro benchmarks in one command.
#
#   bench/micro/run.sh [--build-dir DIR] [--no-build] [--callgrind] [-- bench_micro options]
#
# Builds bench_micro (and only what it needs) in a Release tree, build/micro unless --build-dir
# says otherwise, then runs it once: NOP round trip of ringo against a raw liburing loop with
# the same ring flags, yield/switch, spawn + join of an empty task, each the median of 5 runs
# (interleaved, after a warm-up), side by side in one process run, with the targets and the
# allocations per spawn. --callgrind adds bench/micro/callgrind.sh: user-space instructions per
# operation (needs valgrind). Options after `--` go to bench_micro (--reps N, --iters N, --only CASE).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="$ROOT/build/micro"
BUILD=1
CALLGRIND=0
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || { echo "run.sh: --build-dir needs a directory" >&2; exit 2; }
                 BUILD_DIR="$(realpath -m "$2")"; shift ;;
    --no-build) BUILD=0 ;;
    --callgrind) CALLGRIND=1 ;;
    --) shift; ARGS=("$@"); break ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BIN="$BUILD_DIR/bench/micro/bench_micro"
if [[ $BUILD -eq 1 ]]; then
  mkdir -p "$BUILD_DIR"
  log="$BUILD_DIR/micro-build.log"
  if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
    gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    echo "[micro] configuring $BUILD_DIR (Release; log $log)"
    if ! cmake -S "$ROOT" -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DRINGO_BUILD_BENCH=ON \
         -DRINGO_BUILD_TESTS=OFF -DRINGO_BUILD_EXAMPLES=OFF >"$log" 2>&1; then
      tail -n 15 "$log" >&2
      echo "[micro] configuring failed (the benchmark tree needs liburing-dev, libaio-dev and pkg-config;" \
           "scripts/bench installs them)" >&2
      exit 1
    fi
  fi
  echo "[micro] building bench_micro in $BUILD_DIR"
  if ! cmake --build "$BUILD_DIR" --target bench_micro >>"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "[micro] build failed (log $log)" >&2
    exit 1
  fi
fi
[[ -x "$BIN" ]] || { echo "[micro] $BIN is missing (run without --no-build)" >&2; exit 1; }

cc="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)"
bt="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)"
echo "[micro] $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
     "$(${cc:-c++} --version 2>/dev/null | head -n1) ${bt:+($bt)}"
rc=0
"$BIN" "${ARGS[@]}" || rc=$?
if [[ $CALLGRIND -eq 1 ]]; then
  echo "[micro] instructions per operation (callgrind, slope between two run lengths):"
  bash "$ROOT/bench/micro/callgrind.sh" "$BIN" || rc=1
fi
exit $rc
