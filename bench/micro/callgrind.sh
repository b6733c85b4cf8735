#!/usr/bin/env bash
# User-space instructions per operation of each micro case, measured with callgrind as the
# slope between two run lengths (set-up cost cancels). Deterministic run to run.
#   bench/micro/callgrind.sh [path/to/bench_micro]
set -euo pipefail
bin=${1:-build/bench/micro/bench_micro}
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install valgrind)"; exit 1; }
count() { # case iters
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --reps 1 --iters "$2" --only "$1" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1; exit}'
  rm -f "$out"
}
printf "%-14s %16s\n" case "instr/op"
for c in nop-liburing nop-ringo yield spawn; do
  a=$(count "$c" 20000); b=$(count "$c" 120000)
  # The warm-up runs iters/10 too, so each run performs 1.1 x iters operations.
  awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "%-14s %16.1f\n", c, (b - a) / (1.1 * 100000) }'
done
