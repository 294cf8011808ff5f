#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# memguard-burnin on any host (no cgroup v2 needed): --help, and exit 2
# with exactly one line on stderr for bad arguments.  TAP on stdout.
#
#   tests/cli/burnin/test-cli.sh build/tools/burnin/memguard-burnin
set -u

bi=${1:?usage: test-cli.sh PATH-TO-memguard-burnin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

run() {
    "$bi" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    status=$?
}

echo "TAP version 13"

run --help
if [ "$status" = 0 ] && grep -q '^usage: memguard-burnin' "$tmp/out" && [ ! -s "$tmp/err" ]; then
    ok "--help exits 0 with the usage"
else
    not_ok "--help (status $status)"
fi

# PATTERN ARGS...: exit 2, one line on stderr matching PATTERN, nothing on stdout
expect_usage() {
    local pattern=$1
    shift
    run "$@"
    if [ "$status" = 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
        grep -q -- "$pattern" "$tmp/err"; then
        ok "$*: $(cat "$tmp/err")"
    else
        not_ok "$* (status $status, want 2 and one line matching '$pattern')"
        sed 's/^/# /' "$tmp/out" "$tmp/err"
    fi
}

expect_usage 'unknown option --frob' --frob
expect_usage 'needs a value' --actors
expect_usage 'unexpected argument' stray
expect_usage 'not a number of actors' --actors 0
expect_usage 'not a number of actors' --actors x
expect_usage 'not a number of actors' --actors 100000
expect_usage 'not a duration' --duration 5x
expect_usage 'not a duration' --duration 0s
expect_usage 'not a duration' --duration -5s
expect_usage 'not a duration' --slot ''
expect_usage 'not a size' --actor-size 64MB
expect_usage 'not a size' --actor-size lots
expect_usage 'multiple of 2M' --actor-size 1M
expect_usage 'multiple of 2M' --actor-size 65M
expect_usage 'one of memguard, buffered, both' --writer direct
expect_usage 'not N:DURATION' --ladder 2
expect_usage 'not a duration' --ladder 2:60s,6:forever
expect_usage 'not a number of actors' --ladder x:60s
expect_usage 'no steps' --ladder ,
expect_usage 'exclude each other' --ladder 1:10s --actors 2
expect_usage 'exclude each other' --ladder 1:10s --duration 10s
expect_usage 'not a number of overshoots' --chaos x
expect_usage 'not a number of overshoots' --chaos 65
expect_usage 'not a number of overshoots' --chaos -1
expect_usage 'one of direct, cached, lent, alternate, rotate' --restore mmap
expect_usage 'needs a value' --chaos
expect_usage 'not a duration' --lend-deadline 0
expect_usage 'not a duration' --lend-deadline soon
expect_usage 'not a number of parks' --park x
expect_usage 'not a number of parks' --park 65
expect_usage 'not a number of parks' --park -1
expect_usage 'more than the 0 chaos overshoots' --park 1
expect_usage 'more than the 1 chaos overshoots' --chaos 1 --park 2
expect_usage 'not a number' --seed -1
expect_usage 'not a number' --seed 12ab

echo "1..$n"
[ "$failed" = 0 ]
