#!/usr/bin/env bash
# User-space instructions per operation of ringo's runtime micro cases against the design's
# targets, measured with callgrind as the slope between two run lengths (set-up cost cancels;
# the same on every run). Uses the programs of the benchmark suite's micro figure:
#   bench/micro/callgrind.sh [BIN_DIR]    (default build/micro/bench/micro: `cmake --preset bench`
#                                          then `cmake --build build/micro`)
# The figure itself (wall and CPU time side by side with the other runtimes, medians of
# interleaved runs): python3 -m bench.driver --only micro
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir=${1:-$ROOT/build/micro/bench/micro}
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install valgrind)"; exit 1; }
for b in bench_ringo_micro bench_micro_uring; do
  [[ -x "$dir/$b" ]] || { echo "$dir/$b is missing (cmake --preset bench && cmake --build build/micro)"; exit 1; }
done
count() { # total instructions of: program subcommand count [options...]
  local out prog=$1 sub=$2 n=$3
  shift 3
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$dir/$prog" "$sub" --count "$n" "$@" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1; exit}'
  rm -f "$out"
}
slope() { # name target program subcommand [options...]
  local name=$1 target=$2 a b
  shift 2
  a=$(count "$1" "$2" 20000 "${@:3}")
  b=$(count "$1" "$2" 120000 "${@:3}")
  per=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 100000 }')
  printf "%-34s %10s %10s\n" "$name" "$per" "$target"
}
printf "%-34s %10s %10s\n" case "instr/op" target
slope "NOP round trip, raw liburing" "" bench_micro_uring nop
nop_l=$per
slope "NOP round trip, ringo" "<= 130" bench_ringo_micro nop
nop_r=$per
slope "yield, one task" "<= 40" bench_ringo_micro yield --in task
slope "switch, two tasks yielding in turn" "<= 45" bench_ringo_micro switch
slope "spawn + join, one task alive" "<= 300" bench_ringo_micro spawn --batch 1
slope "spawn + join, every task alive" "" bench_ringo_micro spawn
awk -v r="$nop_r" -v l="$nop_l" \
  'BEGIN { if (l > 0) printf "NOP round trip: ringo / raw liburing = %.2f x the instructions (%+.1f per NOP)\n", r / l, r - l }'
