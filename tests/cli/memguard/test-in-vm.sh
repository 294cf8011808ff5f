#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The memguard command on a real cgroup v2 (busybox sh; the VM harness or a
# host with a delegated memory controller, as root):
#   tests/vm/vmrun --kernel 6.1 --file build/tools/memguard/memguard \
#       --file build/tools/mg-workload --file tests/cli/memguard/vm-lib.sh \
#       --file tests/cli/memguard/test-in-vm.sh -- /mg/test-in-vm.sh
# (meson test memguard-cli-vm-K, tests/cli/meson.build, also gives it
# build/tests/cli/test-notify, setfattr and two docs/examples.)
# `run` kills an overshoot (137, a kill line; with --json one JSON object),
# passes exit statuses through, writes limits, cleans up; `stat` and `watch`
# on cgroups made here; what `watch` and `run` keep once set up (capabilities,
# no_new_privs, the seccomp filter: docs/security.md).  TAP on stdout;
# "# json: ..." lines carry the JSON the guard printed, for a host-side parser.
#
# Env: MEMGUARD (default /mg/memguard), MEMGUARD_WORKLOAD (/mg/mg-workload),
#      MEMGUARD_TEST_CGROUP (/sys/fs/cgroup).

mg=${MEMGUARD:-/mg/memguard}
wl=${MEMGUARD_WORKLOAD:-/mg/mg-workload}
root=${MEMGUARD_TEST_CGROUP:-/sys/fs/cgroup}
tmp=$(mktemp -d)
base=$root/memguard-cli-test-$$
n=0
failed=0
. "${0%/*}/vm-lib.sh"

runs_left() { ls -d "$base"/memguard-run-* 2>/dev/null | wc -l; }
stop_watch() { # PID NAME JSON_FILE PARENT: SIGTERM ends it with 0; its events; its actors removed
    kill -TERM "$1"
    wait "$1"
    local st=$?
    check "$2: SIGTERM ends it with 0 (got $st)" [ "$st" = 0 ]
    sed 's/^/# json: /' "$3"
    for cg in "$4"/*/; do rmdir "$cg" 2>/dev/null; done
    rmdir "$4" 2>/dev/null
}

cleanup() {
    for cg in "$base"/*/ "$base"; do
        [ -d "$cg" ] || continue
        echo 1 >"$cg/cgroup.kill" 2>/dev/null
        sleep 0.2
        rmdir "$cg" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

echo "TAP version 13"
echo "# kernel $(uname -r), memguard $("$mg" --version)"
echo "+memory" >"$root/cgroup.subtree_control" 2>/dev/null
mkdir "$base" && echo "+memory" >"$base/cgroup.subtree_control" ||
    { echo "Bail out! cannot make $base with the memory controller"; exit 1; }

# ---- run: an anon overshoot is killed
timeout 60 "$mg" run --limit 64M --parent "$base" -- "$wl" anon 160 256 -1 >"$tmp/out" 2>"$tmp/err"
st=$?
check "run: overshoot exits 137 (got $st)" [ "$st" = 137 ]
check "run: one kill line on stderr" [ "$(grep -c '^memguard: kill: ' "$tmp/err")" = 1 ]
check "run: the kill line says overshoot" grep -q 'killed: used memory above its limit; limit 65536kB' "$tmp/err"
diag "$tmp/err"

# ---- run --json: one parsable kill object
timeout 60 "$mg" run --json --limit 64M --parent "$base" -- "$wl" anon 160 256 -1 >"$tmp/out" 2>"$tmp/err"
st=$?
check "run --json: overshoot exits 137 (got $st)" [ "$st" = 137 ]
grep '^{' "$tmp/err" >"$tmp/json"
check "run --json: exactly one JSON line" [ "$(wc -l <"$tmp/json")" = 1 ]
check "run --json: nothing but JSON on stderr" [ "$(wc -l <"$tmp/err")" = 1 ]
line=$(head -n 1 "$tmp/json")
echo "# json: $line"
case $line in
    '{"event":"kill","time":"'*'","format_version":1,"reason":"overshoot","cgroup":"'*'}') ok "run --json: a kill object, reason overshoot" ;;
    *) not_ok "run --json: a kill object, reason overshoot" ;;
esac
# the wall-clock time, RFC 3339 in UTC with milliseconds, within a minute of now
t=$(echo "$line" | sed -n 's/^{"event":"kill","time":"\([^"]*\)".*/\1/p')
check_eval "run --json: the time is RFC 3339 UTC with milliseconds (${t:-?})" \
    'echo "$t" | grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"'
tsec=$(date -u -d "$(echo "$t" | sed 's/T/ /; s/\..*//')" +%s 2>/dev/null || echo 0)
check_eval "run --json: ... and within a minute of the clock ($tsec, now $(date -u +%s))" \
    '[ $(( $(date -u +%s) - tsec )) -ge 0 ] && [ $(( $(date -u +%s) - tsec )) -lt 60 ]'
missing=
for k in limit_bytes used_bytes anon_bytes shmem_bytes kernel_bytes sock_bytes current_bytes file_bytes \
    file_dirty_bytes file_writeback_bytes memory_some_total_usec events_high events_max oom_kill \
    detect_to_kill_ms kill_to_empty_ms; do
    echo "$line" | grep -qE "\"$k\":[0-9]+[,}]" || missing="$missing $k"
done
check "run --json: every numeric field present${missing:+ (missing:$missing)}" [ -z "$missing" ]
check "run --json: limit_bytes is 64 MiB" sh -c "echo '$line' | grep -q '\"limit_bytes\":67108864,'"
used=$(echo "$line" | sed -n 's/.*"used_bytes":\([0-9]*\).*/\1/p')
check "run --json: used_bytes ${used:-?} above the limit" [ "${used:-0}" -gt 67108864 ]

# ---- run: statuses pass through, nothing is killed below the limit
"$mg" run --limit 64M --parent "$base" -- "$wl" anon 16 256 0 >"$tmp/out" 2>"$tmp/err"
st=$?
check "run: a workload below the limit exits 0 (got $st)" [ "$st" = 0 ]
check "run: no event lines below the limit" [ ! -s "$tmp/err" ]
check "run: CMD's stdout passes through" grep -q '^workload=anon mib=16' "$tmp/out"
"$mg" run --limit 64M --parent "$base" -- sh -c 'exit 3' 2>"$tmp/err"
st=$?
check "run: exit status 3 passes through (got $st)" [ "$st" = 3 ]
"$mg" run --limit 64M --parent "$base" -- sh -c 'kill -TERM $$' 2>"$tmp/err"
st=$?
check "run: death by SIGTERM is 143 (got $st)" [ "$st" = 143 ]

# ---- run: limits written, percentages of --limit, cgroup removed afterwards
"$mg" run --limit 64M --max 48M --high 90% --parent "$base" -- \
    sh -c 'cg=$(sed -n "s/^0:://p" /proc/self/cgroup); cat /sys/fs/cgroup$cg/memory.max /sys/fs/cgroup$cg/memory.high' \
    >"$tmp/out" 2>"$tmp/err"
check "run: --max 48M written as memory.max" [ "$(sed -n 1p "$tmp/out")" = 50331648 ]
# 90 % of 64 MiB is 60397977 bytes; the kernel keeps whole pages of it
high=$(sed -n 2p "$tmp/out")
check_eval "run: --high 90% of --limit written as memory.high (${high:-?})" \
    '[ -n "$high" ] && [ $((60397977 - high)) -ge 0 ] && [ $((60397977 - high)) -lt 65536 ]'
left=$(runs_left)
check "run: no memguard-run-* cgroup left behind ($left)" [ "$left" = 0 ]
"$mg" run --limit 64M --parent "$base" -- sh -c "$wl anon 8 256 -1 & exit 0" 2>"$tmp/err"
st=$?
left=$(runs_left)
check_eval "run: leftover background process killed, cgroup removed (exit $st, $left left)" '[ "$st" = 0 ] && [ "$left" = 0 ]'

# ---- run: the kernel's memory.max kill is not the guard's
timeout 60 "$mg" run --limit 64M --max 32M --parent "$base" -- "$wl" anon 96 256 0 >"$tmp/out" 2>"$tmp/err"
st=$?
check "run: a memory.max OOM kill exits 137 (got $st)" [ "$st" = 137 ]
check "run: ... without a guard kill line" sh -c "! grep -q '^memguard: kill:' '$tmp/err'"

# ---- run: the default parent (no --parent) works from the root cgroup
"$mg" run --limit 64M -- true 2>"$tmp/err"
st=$?
check "run: default parent (exit $st)" [ "$st" = 0 ]
diag "$tmp/err"

# ---- stat
mkdir "$base/stat"
echo 67108864 >"$base/stat/memory.max"
echo 60397977 >"$base/stat/memory.high"
"$mg" stat "$base/stat" >"$tmp/out" 2>"$tmp/err"
st=$?
check "stat: exits 0 (got $st)" [ "$st" = 0 ]
check "stat: the guard limit defaults to memory.max" grep -q '^guard limit *64.0 MiB (memory.max)' "$tmp/out"
check "stat: shows memory.high" grep -q 'memory.high 57.6 MiB, memory.max 64.0 MiB' "$tmp/out"
for w in memory.current used anon shmem kernel sock 'page cache' dirty writeback 'memory pressure' events.local verdict; do
    grep -q "^ *$w " "$tmp/out" || missing_stat="$missing_stat '$w'"
done
check "stat: every line present${missing_stat:+ (missing:$missing_stat)}" [ -z "${missing_stat:-}" ]
check "stat: an empty cgroup's verdict is ok" grep -q '^verdict *ok' "$tmp/out"
diag "$tmp/out"
rel=${base#"$root"}
"$mg" stat "$rel/stat" >/dev/null 2>"$tmp/err"
check "stat: a path relative to $root works ($rel/stat)" [ $? = 0 ]
"$mg" stat --json "$base/stat" >"$tmp/out" 2>"$tmp/err"
echo "# json: $(cat "$tmp/out")"
check "stat --json: one object with its format_version, limit_source and verdict" \
    grep -q '^{"format_version":1,"cgroup":.*"limit_source":"[a-z.-]*".*"verdict":"ok"}$' "$tmp/out"
mkdir "$base/nolimit"
"$mg" stat "$base/nolimit" >"$tmp/out" 2>"$tmp/err"
st=$?
check_eval "stat: no limit and no --limit is exit 2 asking for --limit (got $st)" \
    '[ "$st" = 2 ] && grep -q -- "--limit" "$tmp/err"'
"$mg" stat --limit 32M "$base/nolimit" >"$tmp/out" 2>"$tmp/err"
check "stat --limit on a cgroup without limits" grep -q '^guard limit *32.0 MiB (--limit)' "$tmp/out"

# stat on a live actor, in the middle of a `memguard run`
"$mg" run --limit 64M --parent "$base" -- "$wl" anon 40 256 -1 >/dev/null 2>&1 &
runpid=$!
i=0
while [ $i -lt 100 ]; do
    cur=$(cat "$base/memguard-run-$runpid/memory.current" 2>/dev/null || echo 0)
    [ "$cur" -gt 41943040 ] && break
    sleep 0.1
    i=$((i + 1))
done
"$mg" stat --json --limit 64M "$base/memguard-run-$runpid" >"$tmp/out" 2>"$tmp/err"
used=$(sed -n 's/.*"used_bytes":\([0-9]*\).*/\1/p' "$tmp/out")
anon=$(sed -n 's/.*"anon_bytes":\([0-9]*\).*/\1/p' "$tmp/out")
check_eval "stat on a running actor: used ${used:-?} >= anon ${anon:-?} >= 40 MiB" \
    '[ "${anon:-0}" -ge 41943040 ] && [ "${used:-0}" -ge "${anon:-0}" ]'
kill -TERM $runpid
wait $runpid
st=$?
check "run: SIGTERM to memguard is forwarded to CMD: 143 (got $st)" [ "$st" = 143 ]
check "run: ... and its cgroup is gone" [ ! -d "$base/memguard-run-$runpid" ]

# ---- watch: kills in an existing cgroup, reports it gone, exits 0
mkdir "$base/watched"
"$mg" watch --limit 64M "$base/watched" 2>"$tmp/watch.err" &
watchpid=$!
wait_confined $watchpid || echo "# watch not confined after 10 s"
timeout 60 sh -c "echo \$\$ >$base/watched/cgroup.procs && exec $wl anon 160 256 -1" >/dev/null 2>&1
st=$?
check "watch: the overshoot in a watched cgroup is killed (status $st)" [ "$st" = 137 ]
sleep 0.5
rmdir "$base/watched"
i=0
# the guard notices after its post-kill hold-off (2.25 s)
while kill -0 $watchpid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $watchpid 2>/dev/null; then
    not_ok "watch: exits once its only cgroup is gone"
    kill -INT $watchpid
    wait $watchpid
else
    wait $watchpid
    st=$?
    check "watch: exits 0 once its only cgroup is gone (got $st)" [ "$st" = 0 ]
fi
check "watch: printed the kill" grep -q '^memguard: kill: .*watched killed: used memory above its limit' "$tmp/watch.err"
check "watch: printed gone" grep -q '^memguard: gone: .*watched' "$tmp/watch.err"
diag "$tmp/watch.err"

mkdir "$base/w1" "$base/w2"
"$mg" watch --json --limit 64M "$base/w1" "$base/w2" 2>"$tmp/watch.err" &
watchpid=$!
wait_confined $watchpid || echo "# watch not confined after 10 s"
kill -TERM $watchpid
wait $watchpid
st=$?
check "watch: SIGTERM ends it with 0 (got $st)" [ "$st" = 0 ]
check "watch --json: nothing but JSON on stderr" sh -c "! grep -qv '^{' '$tmp/watch.err'"
"$mg" watch --limit 64M "$base/nonexistent" 2>"$tmp/err"
st=$?
check_eval "watch: a missing cgroup is exit 1 with one line (got $st)" '[ "$st" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ]'

# ---- watch --parent: children guarded as they come and go, each with its
# own limit (user.memguard.limit, memory.max, the default), SIGHUP reloads,
# metrics agreeing with the events.  Tree: $base/svc (+memory) with children
# pre (memory.max 48 MiB, there before watch starts), a (xattr 64M), b
# (memory.max 64 MiB), c (neither: the default, 256M, then 128M from the
# config on SIGHUP, then 32M from an xattr set while watch runs).
setfattr=
for f in /mg/setfattr "$(command -v setfattr 2>/dev/null)"; do [ -x "$f" ] && setfattr=$f && break; done
svc=$base/svc
mkdir "$svc" && echo +memory >"$svc/cgroup.subtree_control"
mkdir "$svc/pre" && echo 50331648 >"$svc/pre/memory.max"
printf 'limit = 256M\n' >"$tmp/watch.conf"
"$mg" watch --json --mlock --parent "$svc" --config "$tmp/watch.conf" --metrics "$tmp/memguard.prom" \
    --metrics-interval 1s 2>"$tmp/svc.err" &
svcpid=$!
wait_confined $svcpid || echo "# watch --parent not confined after 10 s"
lck=$(status_of $svcpid VmLck | sed 's/ kB//')
check "watch --mlock: its memory is locked (VmLck ${lck:-?} kB)" [ "${lck:-0}" -gt 0 ]
# the metrics writer: a child of watch, no_new_privs, at most CAP_DAC_OVERRIDE
writer=$(for f in /proc/[0-9]*/status; do
    [ "$(sed -n 's/^PPid:[[:space:]]*//p' "$f" 2>/dev/null)" = $svcpid ] && basename "$(dirname "$f")"; done | head -n 1)
echo "# metrics writer ${writer:-?}: $(privs_of "${writer:-0}")"
check_eval "watch --metrics: the writer process keeps at most CAP_DAC_OVERRIDE, no_new_privs" \
    '[ -n "$writer" ] && [ "$(status_of $writer CapEff)" = 0000000000000002 ] && [ "$(status_of $writer NoNewPrivs)" = 1 ]'
check "watch --parent: a child there at start is guarded at its memory.max" \
    wait_grep "$tmp/svc.err" "$(watch_ev "$svc/pre" 50331648 memory.max)"
mkdir "$svc/a" "$svc/b" "$svc/c"
echo 67108864 >"$svc/b/memory.max"
if [ -n "$setfattr" ]; then
    "$setfattr" -n user.memguard.limit -v 64M "$svc/a"
    check "watch --parent: a new child with user.memguard.limit 64M is guarded at 64 MiB" \
        wait_grep "$tmp/svc.err" "$(watch_ev "$svc/a" 67108864 xattr)"
else
    n=$((n + 1)); echo "ok $n - watch --parent: the xattr limit # SKIP no setfattr in the VM (Debian: attr)"
fi
check "watch --parent: a new child with memory.max 64 MiB is guarded at it" \
    wait_grep "$tmp/svc.err" "$(watch_ev "$svc/b" 67108864 memory.max)"
check "watch --parent: a new child with neither gets the config's limit, 256 MiB" \
    wait_grep "$tmp/svc.err" "$(watch_ev "$svc/c" 268435456 default)"
if [ -n "$setfattr" ]; then
    # 160 MiB of anon in a: above its own 64 MiB, far below the default
    timeout 60 sh -c "echo \$\$ >$svc/a/cgroup.procs && exec $wl anon 160 256 -1" >/dev/null 2>&1
    st=$?
    check "watch --parent: the overshoot in a (xattr 64M) is killed (status $st)" [ "$st" = 137 ]
    check "watch --parent: ... as an overshoot of its own limit, 64 MiB" wait_grep "$tmp/svc.err" \
        "\"event\":\"kill\",.*\"reason\":\"overshoot\",\"cgroup\":\"$svc/a\",\"limit_bytes\":67108864,"
fi
# b's limit is its memory.max: the kernel stops it there (a kernel-oom),
# the guard does not kill below it.
timeout 60 sh -c "echo \$\$ >$svc/b/cgroup.procs && exec $wl anon 160 256 0" >/dev/null 2>&1
st=$?
check "watch --parent: b beyond its memory.max is the kernel's kill (status $st)" [ "$st" = 137 ]
check "watch --parent: ... reported as a kernel-oom of b" wait_grep "$tmp/svc.err" \
    "\"event\":\"kernel-oom\",.*\"cgroup\":\"$svc/b\""
check_eval "watch --parent: ... and no guard kill of b" "! grep -q '\"event\":\"kill\",.*\"cgroup\":\"$svc/b\"' '$tmp/svc.err'"
# SIGHUP: the config's new default reaches c, b's new memory.max reaches b; watch keeps running
printf 'limit = 128M\n' >"$tmp/watch.conf"
echo 100663296 >"$svc/b/memory.max"
kill -HUP $svcpid
check "watch --parent: SIGHUP reloads (a reload event, ok)" wait_grep "$tmp/svc.err" '"event":"reload",.*"ok":true'
check "watch --parent: ... c takes the config's new limit, 128 MiB" \
    wait_grep "$tmp/svc.err" "$(watch_ev "$svc/c" 134217728 default)"
check "watch --parent: ... b takes its new memory.max, 96 MiB" \
    wait_grep "$tmp/svc.err" "$(watch_ev "$svc/b" 100663296 memory.max)"
check "watch --parent: ... and it still runs" kill -0 $svcpid
printf 'limit = lots\n' >"$tmp/watch.conf"
kill -HUP $svcpid
check "watch --parent: a bad config on SIGHUP is a failed reload, not an exit" \
    wait_grep "$tmp/svc.err" '"event":"reload",.*"ok":false'
check "watch --parent: ... and it still runs" kill -0 $svcpid
if [ -n "$setfattr" ]; then
    "$setfattr" -n user.memguard.limit -v 32M "$svc/c"
    check "watch --parent: an xattr set while it runs is taken at once (c: 32 MiB)" \
        wait_grep "$tmp/svc.err" "$(watch_ev "$svc/c" 33554432 xattr)"
fi
# children removed while it runs
rmdir "$svc/pre"
check "watch --parent: a removed child is dropped" wait_grep "$tmp/svc.err" \
    "\"event\":\"unwatch\",.*\"cgroup\":\"$svc/pre\",\"why\":\"removed\""
mkdir "$svc/late"
# the last good config stays: 128M, the bad one was refused
check "watch --parent: a child made later is guarded, at the last good config's limit" \
    wait_grep "$tmp/svc.err" "$(watch_ev "$svc/late" 134217728 default)"
# metrics: the file agrees with the events (interval 1 s)
kills=$(grep -c '"event":"kill"' "$tmp/svc.err")
sleep 2.5
rel=${svc#"$root"}
prom=$tmp/memguard.prom
check "watch --metrics: the file is there" [ -s "$prom" ]
check "watch --metrics: the node's overshoot kills ($(sed -n 's/^memguard_node_kills_total{reason="overshoot"} //p' "$prom")) are the kill events ($kills)" \
    grep -qx "memguard_node_kills_total{reason=\"overshoot\"} $kills" "$prom"
if [ -n "$setfattr" ]; then
    check "watch --metrics: a's kills_total overshoot is 1" \
        grep -qx "memguard_kills_total{cgroup=\"$rel/a\",id=\"$rel/a\",reason=\"overshoot\"} 1" "$prom"
    check "watch --metrics: c's limit is 32 MiB from its xattr" \
        grep -qx "memguard_limit_bytes{cgroup=\"$rel/c\",id=\"$rel/c\",source=\"xattr\"} 33554432" "$prom"
fi
check "watch --metrics: b's kernel OOM kills agree with its kernel-oom events" \
    grep -qx "memguard_kernel_oom_kills_total{cgroup=\"$rel/b\",id=\"$rel/b\"} $(sed -n "s|.*\"event\":\"kernel-oom\",.*\"cgroup\":\"$svc/b\",\"count\":\([0-9]*\)}|\1|p" "$tmp/svc.err" | awk '{s+=$1} END {print s+0}')" "$prom"
check "watch --metrics: the reloads (1 ok, 1 error)" sh -c "grep -qx 'memguard_reloads_total{result=\"ok\"} 1' '$prom' && grep -qx 'memguard_reloads_total{result=\"error\"} 1' '$prom'"
check "watch --metrics: no sample for the removed child" sh -c "! grep -q '$rel/pre\"' '$prom'"
check "watch --metrics: used, current, stall gauges for b, memory.high +Inf, memory.max 96 MiB" sh -c "grep -q '^memguard_used_bytes{cgroup=\"$rel/b\",id=\"$rel/b\"} [0-9]' '$prom' &&
    grep -q '^memguard_current_bytes{cgroup=\"$rel/b\",id=\"$rel/b\"} [0-9]' '$prom' && grep -q '^memguard_stall_seconds{cgroup=\"$rel/b\",id=\"$rel/b\"} [0-9]' '$prom' &&
    grep -qx 'memguard_memory_high_bytes{cgroup=\"$rel/b\",id=\"$rel/b\"} +Inf' '$prom' &&
    grep -qx 'memguard_memory_max_bytes{cgroup=\"$rel/b\",id=\"$rel/b\"} 100663296' '$prom'"
check "watch --metrics: no lend series for b, never lent (watch begins no lend)" sh -c "! grep -q '^memguard_lend' '$prom'"
check "watch --metrics: the detect-to-kill histogram counts the overshoot kills ($kills)" \
    grep -qx "memguard_detect_to_kill_seconds_count{reason=\"overshoot\"} $kills" "$prom"
check "watch --metrics: no temporary file left" [ ! -e "$prom.tmp" ]
sed 's/^/# metrics: /' "$prom"
kill -TERM $svcpid
wait $svcpid
st=$?
check "watch --parent: SIGTERM ends it with 0 (got $st)" [ "$st" = 0 ]
check "watch --parent: nothing but JSON on stderr" sh -c "! grep -qv '^{' '$tmp/svc.err'"
check "watch --parent: every event has its time and format_version" \
    sh -c "! grep -v '^{\"event\":\"[a-z-]*\",\"time\":\"[0-9-]*T[0-9:]*\.[0-9][0-9][0-9]Z\",\"format_version\":1[,}]' '$tmp/svc.err' | grep -q ."
sed 's/^/# json: /' "$tmp/svc.err"
for cg in "$svc"/*/; do rmdir "$cg" 2>/dev/null; done
rmdir "$svc" 2>/dev/null

# keys_of JSON-LINE: the object's keys in order, "event" and "dry_run" left out
keys_of() { echo "$1" | grep -o '"[a-z_]*":' | grep -v '^"event":$' | grep -v '^"dry_run":$' | tr -d '\n'; }
# metric FILE LINE-START: the value of the sample whose line starts so ("" if none)
metric() { grep -F "$2" "$1" 2>/dev/null | head -n 1 | sed 's/.* //'; }
# wait_metric FILE LINE-START MIN [SECONDS]: polls until that sample is at least MIN
wait_metric() {
    i=0
    while [ "$(metric "$1" "$2")" -lt "$3" ] 2>/dev/null || [ -z "$(metric "$1" "$2")" ]; do
        [ $i -ge $((${4:-10} * 10)) ] && return 1
        sleep 0.1
        i=$((i + 1))
    done
}

# ---- watch --parent --dry-run: a would-be kill told with the record a kill
# carries, nothing killed, not told again every tick; the library's counters
# in the metrics file agree with the events (dry runs, ticks, an adopted
# lend's expiry).
dry=$base/dry
mkdir "$dry" && echo +memory >"$dry/cgroup.subtree_control"
mkdir "$dry/d1"
lent=
if [ -n "$setfattr" ]; then
    # a lend whose process died: memory.high "max" as it wrote, its record
    # (old memory.high 48 MiB, deadline 8 s from now on CLOCK_BOOTTIME)
    mkdir "$dry/lent"
    echo max >"$dry/lent/memory.high"
    dl=$(awk '{ printf "%.0f", ($1 + 8) * 1000000 }' /proc/uptime)
    hex=0x$(printf 'memguard-lend 1 high=50331648 deadline_boottime_usec=%s pid=1\n' "$dl" | od -An -tx1 | tr -d ' \n')
    "$setfattr" -n user.memguard.lend -v "$hex" "$dry/lent" && lent=$dry/lent
fi
"$mg" watch --json --dry-run --parent "$dry" --limit 64M --metrics "$tmp/dry.prom" --metrics-interval 1s \
    2>"$tmp/dry.err" &
drypid=$!
wait_confined $drypid || echo "# watch --dry-run not confined after 10 s"
check "watch --dry-run: d1 is guarded at 64 MiB" wait_grep "$tmp/dry.err" "$(watch_ev "$dry/d1" 67108864 default)"
sh -c "echo \$\$ >$dry/d1/cgroup.procs && exec $wl anon 160 256 -1" >/dev/null 2>&1 &
wlpid=$!
check "watch --dry-run: d1's overshoot of 64 MiB is told as kill-dry-run" wait_grep "$tmp/dry.err" \
    "\"event\":\"kill-dry-run\",.*\"reason\":\"overshoot\",\"cgroup\":\"$dry/d1\",\"limit_bytes\":67108864,"
rel=${dry#"$root"}
# ten more slow ticks of d1 (its counters, as the metrics file gives them)
slow0=$(metric "$tmp/dry.prom" "memguard_ticks_total{cgroup=\"$rel/d1\",id=\"$rel/d1\",path=\"slow\"}")
check "watch --dry-run: d1 goes on ticking at its limit (slow ticks in the last metrics ${slow0:-?}, then 10 more)" \
    wait_metric "$tmp/dry.prom" "memguard_ticks_total{cgroup=\"$rel/d1\",id=\"$rel/d1\",path=\"slow\"}" $((${slow0:-0} + 10)) 20
check "watch --dry-run: ... and its process was not killed" kill -0 $wlpid
ndry=$(grep -c "\"event\":\"kill-dry-run\",.*\"cgroup\":\"$dry/d1\"" "$tmp/dry.err")
check "watch --dry-run: ... and the would-be kill was told once, not every tick ($ndry)" [ "$ndry" = 1 ]
check_eval "watch --dry-run: no kill event" "! grep -q '\"event\":\"kill\",' '$tmp/dry.err'"
dline=$(grep -m 1 "\"event\":\"kill-dry-run\"" "$tmp/dry.err")
kline=$(head -n 1 "$tmp/json") # run --json's kill, above
check "watch --dry-run: the record has the fields of a kill's, in its order" [ "$(keys_of "$dline")" = "$(keys_of "$kline")" ]
check "watch --dry-run: ... says dry_run, the method it would use, used above the limit" sh -c "
    echo '$dline' | grep -q '\"method\":\"cgroup.kill\",' && echo '$dline' | grep -q '\"dry_run\":true,\"kill_id\":[0-9]*}\$' &&
    [ \$(echo '$dline' | sed -n 's/.*\"used_bytes\":\([0-9]*\).*/\1/p') -gt 67108864 ]"
check "watch --dry-run --metrics: dry_run_kills_total of d1 is the kill-dry-run events ($ndry)" \
    wait_metric "$tmp/dry.prom" "memguard_dry_run_kills_total{cgroup=\"$rel/d1\",id=\"$rel/d1\"}" "$ndry"
check "watch --dry-run --metrics: ... and the node's is the same, its kills 0" sh -c "
    grep -qx 'memguard_node_dry_run_kills_total $ndry' '$tmp/dry.prom' &&
    grep -qx 'memguard_node_kills_total{reason=\"overshoot\"} 0' '$tmp/dry.prom'"
check "watch --dry-run --metrics: fast and slow ticks of the node counted" sh -c "
    [ \$(sed -n 's/^memguard_node_ticks_total{path=\"fast\"} //p' '$tmp/dry.prom') -gt 0 ] &&
    [ \$(sed -n 's/^memguard_node_ticks_total{path=\"slow\"} //p' '$tmp/dry.prom') -gt 0 ]"
kill -KILL $wlpid 2>/dev/null
wait $wlpid 2>/dev/null
if [ -n "$lent" ]; then
    check "watch: a lend record left by a dead process is taken over and ends at its deadline" \
        wait_grep "$tmp/dry.err" "\"event\":\"lend-expired\",.*\"cgroup\":\"$lent\""
    check "watch: ... memory.high back at 48 MiB ($(cat "$lent/memory.high"))" [ "$(cat "$lent/memory.high")" = 50331648 ]
    nexp=$(grep -c "\"event\":\"lend-expired\",.*\"cgroup\":\"$lent\"" "$tmp/dry.err")
    nbeg=$(grep -c "\"event\":\"lend-begin\",.*\"cgroup\":\"$lent\"" "$tmp/dry.err")
    check "watch --metrics: lend_expired_total of the taken-over lend is its lend-expired events ($nexp)" \
        wait_metric "$tmp/dry.prom" "memguard_lend_expired_total{cgroup=\"$rel/lent\",id=\"$rel/lent\"}" "$nexp"
    check "watch --metrics: lends_total is its lend-begin events ($nbeg: a lend taken over begins none)" \
        grep -qx "memguard_lends_total{cgroup=\"$rel/lent\",id=\"$rel/lent\"} $nbeg" "$tmp/dry.prom"
else
    n=$((n + 1)); echo "ok $n - watch: a lend record taken over # SKIP no setfattr in the VM (Debian: attr)"
fi
sed 's/^/# dry metrics: /' "$tmp/dry.prom" | grep -E 'ticks|kills|lend'
stop_watch $drypid "watch --dry-run" "$tmp/dry.err" "$dry"

# ---- watch --pre-kill-defer 2s: each kill told first and put off 2 s; one
# still over its limit then is killed, one that left it is not, and one past
# the hard bound (anon above limit + 1/8) is killed without waiting.
pk=$base/pk
mkdir "$pk" && echo +memory >"$pk/cgroup.subtree_control"
mkdir "$pk/hold" "$pk/leave" "$pk/runaway"
"$mg" watch --json --parent "$pk" --limit 64M --pre-kill-defer 2s --metrics "$tmp/pk.prom" --metrics-interval 1s \
    2>"$tmp/pk.err" &
pkpid=$!
wait_confined $pkpid || echo "# watch --pre-kill-defer not confined after 10 s"
for c in hold leave runaway; do wait_grep "$tmp/pk.err" "$(watch_ev "$pk/$c" 67108864 default)"; done
# 67 MiB of anon, held: over 64 MiB, within the bound of 72
timeout 60 sh -c "echo \$\$ >$pk/hold/cgroup.procs && exec $wl anon 67 256 -1" >/dev/null 2>&1
st=$?
check "watch --pre-kill-defer: an actor that stays over its limit is killed (status $st)" [ "$st" = 137 ]
check "watch --pre-kill-defer: ... after a pre-kill event that deferred it 2 s" grep -q \
    "\"event\":\"pre-kill\",.*\"reason\":\"overshoot\",\"cgroup\":\"$pk/hold\",.*\"deferred_ms\":2000,\"defer_error\":null" "$tmp/pk.err"
ms=$(sed -n "s|.*\"event\":\"kill\",.*\"cgroup\":\"$pk/hold\",.*\"detect_to_kill_ms\":\([0-9]*\),.*|\1|p" "$tmp/pk.err")
check_eval "watch --pre-kill-defer: ... the kill came when the deferral ended (detected to killed ${ms:-?} ms)" \
    '[ "${ms:-0}" -ge 2000 ] && [ "${ms:-0}" -lt 4000 ]'
# 67 MiB for 1 s, then it exits: gone from its limit when the deferral ends
timeout 60 sh -c "echo \$\$ >$pk/leave/cgroup.procs && exec $wl anon 67 256 1" >/dev/null 2>&1
st=$?
check "watch --pre-kill-defer: an actor that leaves its limit within the deferral ends as it wants (status $st)" [ "$st" = 0 ]
check "watch --pre-kill-defer: ... its pre-kill was deferred" grep -q \
    "\"event\":\"pre-kill\",.*\"cgroup\":\"$pk/leave\",.*\"deferred_ms\":2000," "$tmp/pk.err"
check "watch --pre-kill-defer: ... and the deferral ended in kill-averted" wait_grep "$tmp/pk.err" \
    "\"event\":\"kill-averted\",\"time\":\"[^\"]*\",\"format_version\":1,\"reason\":\"overshoot\",\"cgroup\":\"$pk/leave\""
check_eval "watch --pre-kill-defer: ... not a kill" "! grep -q '\"event\":\"kill\",.*\"cgroup\":\"$pk/leave\"' '$tmp/pk.err'"
timeout 60 sh -c "echo \$\$ >$pk/runaway/cgroup.procs && exec $wl anon 160 256 -1" >/dev/null 2>&1
st=$?
check "watch --pre-kill-defer: an actor running past the hard bound is killed (status $st)" [ "$st" = 137 ]
ms=$(sed -n "s|.*\"event\":\"kill\",.*\"cgroup\":\"$pk/runaway\",.*\"detect_to_kill_ms\":\([0-9]*\),.*|\1|p" "$tmp/pk.err")
anon=$(sed -n "s|.*\"event\":\"kill\",.*\"cgroup\":\"$pk/runaway\",.*\"anon_bytes\":\([0-9]*\),.*|\1|p" "$tmp/pk.err")
check_eval "watch --pre-kill-defer: ... before its deferral's end (${ms:-?} ms), anon ${anon:-?} above 72 MiB" \
    '[ -n "$ms" ] && [ "$ms" -lt 2000 ] && [ "${anon:-0}" -gt 75497472 ]'
rel=${pk#"$root"}
nk=$(grep -c '"event":"kill",' "$tmp/pk.err")
check "watch --pre-kill-defer --metrics: the node's kills ($nk events)" \
    wait_metric "$tmp/pk.prom" 'memguard_node_kills_total{reason="overshoot"}' "$nk"
check "watch --pre-kill-defer --metrics: kills_deferred_total of hold and leave, kills_averted_total of leave" sh -c "
    grep -qx 'memguard_kills_deferred_total{cgroup=\"$rel/hold\",id=\"$rel/hold\"} 1' '$tmp/pk.prom' &&
    grep -qx 'memguard_kills_deferred_total{cgroup=\"$rel/leave\",id=\"$rel/leave\"} 1' '$tmp/pk.prom' &&
    grep -qx 'memguard_kills_averted_total{cgroup=\"$rel/leave\",id=\"$rel/leave\"} $(grep -c '"event":"kill-averted"' "$tmp/pk.err")' '$tmp/pk.prom' &&
    grep -qx 'memguard_kills_total{cgroup=\"$rel/hold\",id=\"$rel/hold\",reason=\"overshoot\"} 1' '$tmp/pk.prom'"
sed 's/^/# pk metrics: /' "$tmp/pk.prom" | grep -E 'kills'
stop_watch $pkpid "watch --pre-kill-defer" "$tmp/pk.err" "$pk"

# ---- watch under a service manager: READY=1 once confined, RELOADING=1
# (with MONOTONIC_USEC=) and READY=1 around a SIGHUP, watchdog pings, STOPPING=1 (the manager's
# end: test-notify listen)
if [ -x /mg/test-notify ]; then
    mkdir "$base/sd" && echo +memory >"$base/sd/cgroup.subtree_control" && mkdir "$base/sd/x"
    /mg/test-notify listen "$tmp/notify.sock" 30 >"$tmp/notify.out" 2>&1 &
    lpid=$!
    i=0; while [ ! -S "$tmp/notify.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    NOTIFY_SOCKET=$tmp/notify.sock WATCHDOG_USEC=2000000 "$mg" watch --parent "$base/sd" --limit 64M 2>"$tmp/sd.err" &
    sdpid=$!
    if wait_grep "$tmp/notify.out" '^READY=1|STATUS=guarding 1 cgroups$'; then
        check "watch: READY=1 with its status, after it is confined (Seccomp $(status_of $sdpid Seccomp))" \
            [ "$(status_of $sdpid Seccomp)" = 2 ]
    else
        not_ok "watch: READY=1 on \$NOTIFY_SOCKET"
    fi
    check "watch: WATCHDOG=1 at half of \$WATCHDOG_USEC" wait_grep "$tmp/notify.out" '^WATCHDOG=1$' 3
    kill -HUP $sdpid
    check "watch: RELOADING=1 with MONOTONIC_USEC= on SIGHUP (the notify protocol)" \
        wait_grep "$tmp/notify.out" '^RELOADING=1|MONOTONIC_USEC=[0-9][0-9]*|'
    check "watch: ... then READY=1 again" sh -c "sed -n '/^RELOADING=1|/,\$p' '$tmp/notify.out' | grep -q '^READY=1|'"
    kill -TERM $sdpid
    wait $sdpid
    check "watch: STOPPING=1 on SIGTERM" wait_grep "$tmp/notify.out" '^STOPPING=1$'
    sort "$tmp/notify.out" | uniq -c | sed 's/^ */# notify: /'
    kill $lpid 2>/dev/null
    wait $lpid 2>/dev/null
    rmdir "$base/sd/x" "$base/sd"
else
    n=$((n + 1)); echo "ok $n - watch under a service manager # SKIP no test-notify in the VM"
fi

# ---- docs/examples on a real cgroup (built against the build tree)
if [ -x /mg/epoll-worker ]; then
    mkdir "$base/ex"
    /mg/epoll-worker "$base/ex:64M" 2>"$tmp/ex.err" &
    expid=$!
    sleep 1
    timeout 60 sh -c "echo \$\$ >$base/ex/cgroup.procs && exec $wl anon 160 256 -1" >/dev/null 2>&1
    st=$?
    check "examples/epoll-worker: the overshoot is killed (status $st)" [ "$st" = 137 ]
    check "examples/epoll-worker: ... and its record printed" wait_grep "$tmp/ex.err" 'killed: used memory above its limit; limit 65536kB'
    kill -TERM $expid
    wait $expid
    st=$?
    check "examples/epoll-worker: SIGTERM ends it with 0 (got $st)" [ "$st" = 0 ]
    diag "$tmp/ex.err"
    rmdir "$base/ex"
else
    n=$((n + 1)); echo "ok $n - examples/epoll-worker # SKIP not given to the VM"
fi
if [ -x /mg/snapshot-lend ]; then
    mkdir "$base/snap"
    echo 50331648 >"$base/snap/memory.high"
    sdir=/mnt/disk
    [ -d "$sdir" ] && [ -w "$sdir" ] || sdir=$tmp
    /mg/snapshot-lend "$base/snap" "$sdir" >"$tmp/snap.out" 2>"$tmp/snap.err"
    st=$?
    check "examples/snapshot-lend: written in a lend, restored, identical (status $st)" \
        sh -c "[ $st = 0 ] && grep -q 'restored and compared: identical' '$tmp/snap.out'"
    check "examples/snapshot-lend: memory.high back at 48 MiB ($(cat "$base/snap/memory.high"))" \
        [ "$(cat "$base/snap/memory.high")" = 50331648 ]
    diag "$tmp/snap.out" "$tmp/snap.err"
    rm -f "$sdir/guest.snap"
    rmdir "$base/snap"
else
    n=$((n + 1)); echo "ok $n - examples/snapshot-lend # SKIP not given to the VM"
fi

# ---- privileges once set up (docs/security.md, "Privileges each component needs")
# watch: every capability dropped (the bounding set too; CAP_KILL would stay
# only for a cgroup without cgroup.kill, before 5.14), no_new_privs, seccomp.
mkdir "$base/privs"
# check_privs WHAT PID CAPS: PID's permitted and effective sets are CAPS, its
# bounding and ambient sets empty, no_new_privs set.
check_privs() {
    what=$1 pid=$2 want=$3
    echo "# $what: $(privs_of $pid)"
    for f in CapPrm CapEff; do
        v=$(status_of $pid $f)
        check "$what: $f is $want (${v:-?})" [ "$v" = "$want" ]
    done
    for f in CapBnd CapAmb; do
        v=$(status_of $pid $f)
        check "$what: $f is empty (${v:-?})" [ "$v" = 0000000000000000 ]
    done
    v=$(status_of $pid NoNewPrivs)
    check "$what: NoNewPrivs 1 (${v:-?})" [ "$v" = 1 ]
}

"$mg" watch --limit 64M "$base/privs" 2>"$tmp/watch.err" &
watchpid=$!
if wait_confined $watchpid; then
    ok "watch: confined once set up (Seccomp 2)"
    check_privs watch $watchpid 0000000000000000
else
    not_ok "watch: confined once set up (Seccomp: $(status_of $watchpid Seccomp))"
    diag "$tmp/watch.err"
fi
kill -TERM $watchpid
wait $watchpid
st=$?
check "watch: SIGTERM ends the confined watch with 0 (got $st)" [ "$st" = 0 ]

# run_privs WHERE CAPS PARENT-DIR [RUN-OPTIONS]: `memguard run` of a CMD that
# writes its pid and waits for $tmp/go; once memguard is confined, its
# permitted and effective sets must be CAPS, its bounding and ambient sets
# empty; CMD keeps root's capabilities and no filter; exit 7 passes through
# and the cgroup goes.
run_privs() {
    where=$1 want=$2 pdir=$3
    shift 3
    rm -f "$tmp/go" "$tmp/cmd.pid"
    "$mg" run --limit 64M "$@" -- sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0"
        i=0
        while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
        exit 7' "$tmp/cmd.pid" "$tmp/go" 2>"$tmp/run.err" &
    runpid=$!
    if wait_confined $runpid; then
        ok "run $where: confined once CMD runs (Seccomp 2)"
        check_privs "run $where" $runpid "$want"
    else
        not_ok "run $where: confined once CMD runs (Seccomp: $(status_of $runpid Seccomp))"
    fi
    if wait_file "$tmp/cmd.pid"; then
        cmdpid=$(cat "$tmp/cmd.pid")
        echo "# run $where, CMD: $(privs_of "$cmdpid")"
        check_eval "run $where: CMD keeps this shell's capabilities, no filter, no no_new_privs" \
            '[ "$(status_of "$cmdpid" CapEff)" = "$(status_of $$ CapEff)" ] &&
             [ "$(status_of "$cmdpid" Seccomp)" = 0 ] && [ "$(status_of "$cmdpid" NoNewPrivs)" = 0 ]'
    else
        not_ok "run $where: CMD started"
    fi
    touch "$tmp/go"
    wait $runpid
    st=$?
    check "run $where: CMD's exit 7 passes through the confined run (got $st)" [ "$st" = 7 ]
    check "run $where: ... and its cgroup is removed" [ ! -d "$pdir/memguard-run-$runpid" ]
    diag "$tmp/run.err"
}
# The cgroup2 root is mode 0555: root removes its cgroup there through
# CAP_DAC_OVERRIDE, the one capability kept (bit 1).  A parent writable by
# its permission bits (here root's own 0755 directory) leaves nothing.
run_privs "under --parent" 0000000000000000 "$base" --parent "$base"
if [ "$(id -u)" = 0 ] && [ "$root" = /sys/fs/cgroup ] && [ "$(sed -n 's/^0:://p' /proc/self/cgroup)" = / ]; then
    run_privs "in the root cgroup" 0000000000000002 "$root"
    # The confined guard still kills, and run still removes its cgroup there.
    timeout 60 "$mg" run --limit 32M -- "$wl" anon 128 256 -1 >/dev/null 2>"$tmp/err"
    st=$?
    check "run in the root cgroup: overshoot killed while confined: 137 (got $st)" [ "$st" = 137 ]
    left=$(ls -d "$root"/memguard-run-* 2>/dev/null | wc -l)
    check "run in the root cgroup: no memguard-run-* left ($left)" [ "$left" = 0 ]
    diag "$tmp/err"
else
    n=$((n + 1))
    echo "ok $n - run in the root cgroup # SKIP not root in the cgroup2 root (as in the VM)"
fi

echo "1..$n"
[ "$failed" = 0 ]
