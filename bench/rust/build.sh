#!/bin/sh
# Build the Rust baselines of the ringo benchmark suite (release, locked versions).
# Tries offline first (crates already in ~/.cargo/registry), then fetches once.
# Prints the binary paths on stdout when done.
#
# ringo-bench-monoio-xthread (the cross-thread channel benchmark) needs monoio's `sync`
# feature, which must not reach ringo-bench-monoio: it is built by a second cargo call that
# selects only that binary (Cargo unifies features within one call, not across calls).
set -eu
cd "$(dirname "$0")"
PATH="${CARGO_HOME:-$HOME/.cargo}/bin:/root/.cargo/bin:$PATH"
export PATH
jobs="${RINGO_BENCH_JOBS:-2}"

if ! command -v cargo >/dev/null 2>&1; then
    echo "build.sh: cargo not found (install Rust with rustup)" >&2
    exit 1
fi

build() {
    if ! cargo build --release --locked --offline -j "$jobs" "$@" >&2; then
        echo "build.sh: offline build failed, fetching the locked crates" >&2
        cargo fetch --locked >&2
        cargo build --release --locked -j "$jobs" "$@" >&2
    fi
}
build
build -p ringo-bench-monoio --features xthread --bin ringo-bench-monoio-xthread

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
dir="$target/release"
for b in monoio compio tokio monoio-xthread; do
    test -x "$dir/ringo-bench-$b" || { echo "build.sh: missing $dir/ringo-bench-$b" >&2; exit 1; }
    echo "$dir/ringo-bench-$b"
done
