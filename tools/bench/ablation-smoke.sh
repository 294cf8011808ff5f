#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench-ablation-fixture: bench-ablation --fixture on a fake cgroup tree in
# a temp dir, both modes, one regime: every arm's case ran ("ok"), one CSV
# line each under the header, the predicate fired in the swap arms, the
# reclaim arm's guard wrote its one dose and the headroom arm's guard
# wrote some.  Nothing is measured: the fake kernel's figures are made up.
#   ablation-smoke.sh BENCH-ABLATION
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 bench-ablation" >&2; exit 2; }
bench=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$bench" --help >/dev/null

col() { # col CSV NAME: the column's index (1-based)
    head -1 "$1" | tr , '\n' | grep -nx "$2" | cut -d: -f1
}
field() { # field CSV ARM NAME
    local c
    c=$(col "$1" "$3")
    awk -F, -v a="$2" -v c="$c" 'NR > 1 && $2 == a { print $c }' "$1"
}
fail() { echo "FAIL: $*"; tail -30 "$dir/err" 2>/dev/null; exit 1; }

"$bench" --fixture "$dir/swap" --regimes s4 >"$dir/swap.csv" 2>"$dir/err" || fail "swap fixture run exited $?"
[ "$(wc -l <"$dir/swap.csv")" -eq 4 ] || fail "swap: want a header and 3 lines, got: $(cat "$dir/swap.csv")"
for arm in static delayed reclaim; do
    [ "$(field "$dir/swap.csv" "$arm" status)" = ok ] || fail "swap $arm: status $(field "$dir/swap.csv" "$arm" status)"
    [ "$(field "$dir/swap.csv" "$arm" compute_n)" -gt 0 ] || fail "swap $arm: no compute requests in the pressure phase"
    [ "$(field "$dir/swap.csv" "$arm" sqlite_n)" -gt 0 ] || fail "swap $arm: no sqlite requests in the pressure phase"
    [ "$(field "$dir/swap.csv" "$arm" trigger_ms)" -ge 0 ] || fail "swap $arm: the predicate never fired"
done
[ "$(field "$dir/swap.csv" reclaim doses)" -eq 1 ] || fail "reclaim: $(field "$dir/swap.csv" reclaim doses) doses, want 1"
[ "$(field "$dir/swap.csv" static doses)" -eq 0 ] || fail "static: a dose"
echo "ok: swap fixture ($(($(wc -l <"$dir/swap.csv") - 1)) cases)"

"$bench" --fixture "$dir/swapless" --swapless --no-header >"$dir/swapless.csv" 2>"$dir/err" ||
    fail "swapless fixture run exited $?"
[ "$(wc -l <"$dir/swapless.csv")" -eq 2 ] || fail "swapless: want 2 lines, got: $(cat "$dir/swapless.csv")"
grep -q '^swapless,none,f4,0,[01],.*,ok,' "$dir/swapless.csv" || fail "swapless none: $(cat "$dir/swapless.csv")"
grep -q '^swapless,headroom,f4,0,[01],.*,ok,' "$dir/swapless.csv" || fail "swapless headroom: $(cat "$dir/swapless.csv")"
echo "ok: swapless fixture"
