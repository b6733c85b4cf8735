#!/usr/bin/env bash
# Quick correctness run of every bench/net program (about 10 s in all).
# usage: bench/net/smoke.sh BUILD_DIR [PORT]
#   BUILD_DIR: where the programs were built (e.g. /tmp/netb, or <build>/bench/net)
# Prints each JSON line; exits 1 if any program failed or printed "ok":false.
set -u
dir=${1:?usage: smoke.sh BUILD_DIR [PORT]}
port=${2:-23411}
fail=0

run() {  # run a client-style program, expect exit 0 and "ok":true
  local out
  out=$(timeout 60 "$@")
  local rc=$?
  echo "$out"
  if [[ $rc -ne 0 || $out != *'"ok":true'* ]]; then
    echo "FAILED (rc=$rc): $*" >&2
    fail=1
  fi
}

for mode in uring epoll blocking; do
  for prefill in 0 1; do
    run "$dir/bench_pipes" --mode "$mode" --pipes 128 --rounds 256 --prefill "$prefill"
  done
done

for mode in epoll epoll-splice aio aio-splice uring-poll uring-poll-splice uring uring-fixed uring-sqpoll splice \
            splice-link; do
  run "$dir/bench_pingpong" --mode "$mode" --conns 1 --msgs 2000
  run "$dir/bench_pingpong" --mode "$mode" --conns 500 --msgs 20
done
run "$dir/bench_pingpong" --mode uring --conns 20 --msgs 100 --transport tcp

for spec in echo_epoll echo_uring echo_uring_fixed "echo_uring --multishot" "echo_uring --multishot --ring-entries 2" \
            echo_asio; do
  read -r server extra <<<"$spec"
  if [[ ! -x $dir/$server ]]; then
    echo "skipped: $server not built" >&2
    continue
  fi
  port=$((port + 1))
  sout=$(mktemp)
  # shellcheck disable=SC2086 # $extra: the variant's options, split on purpose
  "$dir/$server" --port "$port" $extra >"$sout" &
  spid=$!
  run "$dir/bench_echo_client" --port "$port" --conns 4 --msg 1024 --seconds 0.5
  run "$dir/bench_echo_client" --port "$port" --conns 3 --msg 100000 --seconds 0.3  # partial reads/writes
  kill -TERM "$spid"
  wait "$spid"
  src=$?
  cat "$sout"
  if [[ $src -ne 0 ]] || ! grep -q '"ok":true' "$sout"; then
    echo "FAILED (rc=$src): $spec" >&2
    fail=1
  fi
  rm -f "$sout"
done

if [[ $fail -ne 0 ]]; then
  echo "smoke: FAILED" >&2
  exit 1
fi
echo "smoke: all ok" >&2
