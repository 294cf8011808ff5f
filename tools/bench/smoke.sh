#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench-smoke: runs each benchmark binary in a tiny mode on fixture trees and
# checks that it exits 0 and prints its results.  Times are not checked.
#   smoke.sh BENCH-PARSE BENCH-TICK BENCH-SCALE BENCH-SNAPSHOT
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 bench-parse bench-tick bench-scale bench-snapshot" >&2; exit 2; }
parse=$1 tick=$2 scale=$3 snapshot=$4
out=$(mktemp)
snapdir=$(mktemp -d)
trap 'rm -f "$out"; rm -rf "$snapdir"' EXIT

check() {
    local what=$1 want=$2
    shift 2
    if ! "$@" >"$out" 2>&1; then
        echo "FAIL: $what exited $?:"; cat "$out"; exit 1
    fi
    local got
    got=$(grep -c '^result ' "$out" || true)
    if [ "$got" -lt "$want" ]; then
        echo "FAIL: $what printed $got result lines, want >= $want:"; cat "$out"; exit 1
    fi
    echo "ok: $what ($got results)"
}

check bench-parse 10 "$parse" --iters 100 --rounds 1
check bench-tick 8 "$tick" --fixture --ticks 20 --rounds 1 --warmup 2
check bench-scale 3 "$scale" --fixture -n 10 --seconds 1 --floor
# No cgroup, no guard: a 4 MiB image, 2 cycles of the three writers in a temp dir,
# then one restore cycle of 2 slices (3 groups of writes, 8 reads).
check bench-snapshot 18 "$snapshot" --no-cgroup --dir "$snapdir" --size 4 --cycles 2 --warmup 0 \
    --restore-cycles 1 --restore-writers 2
