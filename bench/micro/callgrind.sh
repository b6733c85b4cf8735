#!/usr/bin/env bash
# User-space instructions per operation of each micro case, measured with callgrind as the
# slope between two run lengths (set-up cost cancels). Deterministic run to run.
#   bench/micro/callgrind.sh [path/to/bench_micro]     (default: build/micro, see run.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin=${1:-$ROOT/build/micro/bench/micro/bench_micro}
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install valgrind)"; exit 1; }
[[ -x "$bin" ]] || { echo "$bin is missing (bench/micro/run.sh builds it)"; exit 1; }
count() { # case iters
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --reps 1 --iters "$2" --only "$1" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1; exit}'
  rm -f "$out"
}
# Targets (instructions per operation): the reference figures of the design (raw liburing: 96).
declare -A target=([nop-liburing]="" [nop-ringo]="<= 130" [yield]="<= 40" [spawn]="<= 300")
printf "%-14s %12s %10s\n" case "instr/op" target
declare -A per
for c in nop-liburing nop-ringo yield spawn; do
  a=$(count "$c" 20000); b=$(count "$c" 120000)
  # The warm-up runs iters/10 too, so each run performs 1.1 x iters operations.
  per[$c]=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / (1.1 * 100000) }')
  printf "%-14s %12s %10s\n" "$c" "${per[$c]}" "${target[$c]}"
done
awk -v r="${per[nop-ringo]}" -v l="${per[nop-liburing]}" \
  'BEGIN { if (l > 0) printf "NOP round trip: ringo / raw liburing = %.2f x the instructions (%+.1f per NOP)\n", r / l, r - l }'
