#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `memguard watch --park-hook` on a real cgroup v2 (busybox sh, as root; the
# VM harness or a host with a delegated memory controller):
#   tests/vm/vmrun --kernel 6.1 --file build/tools/memguard/memguard \
#       --file build/tools/mg-workload --file tests/cli/memguard/vm-lib.sh \
#       --file tests/cli/memguard/test-watch-park.sh -- /mg/test-watch-park.sh
# What it builds and expects: a parent with the memory controller and four
# children (two more later), watch --parent at a default limit of 64 MiB, --park-hook a
# script of this test (its answer by the child's name), --park-timeout 3s,
# metrics every second.  In each child an actor holds 67 MiB of anon: over
# its limit, within the hard bound (72 MiB).  Each is frozen, not killed
# (a park event; cgroup.events says "frozen 1" while the hook runs, which
# gets the cgroup as its last argument and the park event's JSON on stdin),
# then:
#   saved  the hook exits 0: park-hook "saved", then the kill, park_end
#          "kill" (status 137);
#   thaw   the hook writes 256 MiB to memory.max and exits 10: park-hook
#          "thaw" at that limit (source memory.max), the thaw event, and the
#          actor runs to its end (status 0);
#   fail   the hook exits 3: park-hook "failed", its stderr's last line
#          quoted, the kill;
#   slow   the hook sleeps (and leaves a sleep in the background): at 3 s
#          park-hook "timeout", its process group sent SIGTERM (the
#          background sleep dies of it too), the kill;
#   orphan the runner is killed outright while the hook sleeps: the hook
#          dies with it, watch says so, and the guard's own deadline (kill
#          wait 2 s + 3 s + the grace 0.75 s + 2 s) kills the actor,
#          park_end "deadline";
#   late   a park after that: park-hook "error" (EPIPE), killed at once.
# A fifth child, frozen before watch starts (as a park a killed watch left
# open, unrecorded), is said to be found frozen and left so.
# Then a watch killed outright (SIGKILL) mid-park: its park is recorded on
# the cgroup (user.memguard.park), the actor stays frozen, and the next
# watch takes the park over: a park event with the record's park_id 1,
# the hook run for it (saved), the kill.
# The lines of each come in that order (park, park-hook, kill or thaw); the
# metrics count the parks by how they ended and the hook's runs; watch runs
# confined all along, and at its end no hook is left.
# TAP on stdout; "# json: ..." lines carry what watch printed.
# Env: MEMGUARD (default /mg/memguard), MEMGUARD_WORKLOAD (/mg/mg-workload),
#      MEMGUARD_TEST_CGROUP (/sys/fs/cgroup).

mg=${MEMGUARD:-/mg/memguard}
wl=${MEMGUARD_WORKLOAD:-/mg/mg-workload}
root=${MEMGUARD_TEST_CGROUP:-/sys/fs/cgroup}
tmp=$(mktemp -d)
base=$root/memguard-park-test-$$
n=0
failed=0
wpid=
. "${0%/*}/vm-lib.sh"

cleanup() {
    [ -n "$wpid" ] && kill -TERM "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
    for cg in "$base"/*/; do
        [ -d "$cg" ] || continue
        echo 0 >"$cg/cgroup.freeze" 2>/dev/null
        echo 1 >"$cg/cgroup.kill" 2>/dev/null
    done
    sleep 0.3
    for cg in "$base"/*/; do rmdir "$cg" 2>/dev/null; done
    rmdir "$base" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
metric() { grep -v '^#' "$1" 2>/dev/null | grep -F "$2" | head -n 1 | sed 's/.* //'; }
wait_metric() { # FILE LINE-START VALUE [SECONDS]
    i=0
    while [ "$(metric "$1" "$2")" != "$3" ]; do
        [ $i -ge $((${4:-10} * 10)) ] && return 1
        sleep 0.1
        i=$((i + 1))
    done
}
# line_of FILE PATTERN: the number of the first line matching PATTERN (0: none)
line_of() { grep -n -- "$2" "$1" | head -n 1 | cut -d: -f1 | grep . || echo 0; }
# told_killed NAME: waits (bounded) for the kill record of the child NAME: the
# actor's process is reaped when it dies, its record goes out once the cgroup
# is empty and the output thread has written it.
told_killed() { wait_grep "$tmp/err" "\"event\":\"kill\",.*\"cgroup\":\"$base/$1\"" 15 || true; }
# in_order FILE PATTERN...: each pattern's first line after the previous one's
in_order() {
    f=$1
    shift
    last=0
    for p in "$@"; do
        l=$(line_of "$f" "$p")
        [ "$l" -gt "$last" ] || return 1
        last=$l
    done
}

echo "TAP version 13"
echo "+memory" >"$root/cgroup.subtree_control" 2>/dev/null
if ! mkdir "$base" || ! echo "+memory" >"$base/cgroup.subtree_control"; then
    echo "ok 1 # SKIP no cgroup v2 memory controller at $root"
    echo "1..1"
    exit 0
fi
if [ ! -e "$base/cgroup.freeze" ]; then
    echo "ok 1 # SKIP no cgroup v2 freezer (Linux 5.2+)"
    echo "1..1"
    exit 0
fi

# The hook: what it saw, then its answer by the child's name.
cat >"$tmp/hook" <<EOF
#!/bin/sh
for cg in "\$@"; do :; done # the last argument
name=\${cg##*/}
cat >"$tmp/\$name.record"
grep '^frozen ' "\$cg/cgroup.events" >"$tmp/\$name.frozen"
echo "\$#:\$*" >"$tmp/\$name.args"
echo "\$MEMGUARD_PARK_ID \$MEMGUARD_TIMEOUT_MS \$MEMGUARD_THAW_STATUS" >"$tmp/\$name.env"
case \$name in
saved) echo "snapshot of \$name written"; exit 0 ;;
thaw) echo 268435456 >"\$cg/memory.max"; echo "memory.max raised"; exit \$MEMGUARD_THAW_STATUS ;;
fail) echo "copying"; echo "snapshot: no space left on device" >&2; exit 3 ;;
slow) sleep 100 & echo \$! >"$tmp/slow.bg"; sleep 100 ;;
crash) [ -e "$tmp/crash.second" ] && { echo "snapshot of \$name written"; exit 0; }; sleep 100 ;;
orphan) echo \$\$ >"$tmp/orphan.leader"; sleep 100 ;;
esac
exit 1
EOF
chmod 755 "$tmp/hook"
for c in saved thaw fail slow paused; do mkdir "$base/$c"; done
# frozen before watch: as a park a killed watch left open would be
echo 1 >"$base/paused/cgroup.freeze"
"$mg" watch --json --parent "$base" --limit 64M --park-hook "$tmp/hook --mode test" --park-timeout 3s \
    --metrics "$tmp/park.prom" --metrics-interval 1s 2>"$tmp/err" &
wpid=$!
wait_confined $wpid || echo "# watch --park-hook not confined after 10 s"
check "watch --park-hook runs confined, its hook's runner forked before ($(privs_of $wpid))" \
    [ "$(status_of $wpid Seccomp)" = 2 ]
for c in saved thaw fail slow paused; do wait_grep "$tmp/err" "$(watch_ev "$base/$c" 67108864 default)"; done
check "a cgroup found frozen is said, and left frozen" sh -c "
    grep -q '\"event\":\"error\",.*\"message\":\"$base/paused: found frozen (cgroup.freeze 1)' '$tmp/err' &&
    grep -qx 1 '$base/paused/cgroup.freeze'"

# actor NAME SECONDS: 67 MiB of anon in the child NAME, held SECONDS (-1:
# until killed), within 60 s; its exit status
actor() {
    timeout 60 sh -c "echo \$\$ >$base/$1/cgroup.procs && exec $wl anon 67 256 $2" >/dev/null 2>&1
}
ev() { # EVENT NAME: the pattern of that event of the child NAME
    echo "\"event\":\"$1\",.*\"cgroup\":\"$base/$2\""
}

# ---- saved: exit 0 is a kill, after the hook
actor saved -1
st=$?
check "saved: the actor is killed (status $st)" [ "$st" = 137 ]
told_killed saved
check "saved: a park event first, the kill's record with park_id and park_end open" \
    grep -q "\"event\":\"park\",.*\"reason\":\"overshoot\",\"cgroup\":\"$base/saved\",.*\"park_id\":1,\"park_end\":\"open\",\"parked_ms\":null,\"frozen_after_ms\":[0-9]*,\"kill_id\":[0-9]*,\"hook_timeout_ms\":3000" "$tmp/err"
check "saved: the actor was frozen while the hook ran (cgroup.events: $(cat "$tmp/saved.frozen" 2>/dev/null))" \
    grep -qx 'frozen 1' "$tmp/saved.frozen"
check "saved: the hook's stdin is the park event's JSON object" \
    sh -c "grep -q '^{\"event\":\"park\",.*\"cgroup\":\"$base/saved\"' '$tmp/saved.record' && [ \$(wc -l <'$tmp/saved.record') = 1 ]"
check "saved: CMD's words, then the cgroup (no shell: $(cat "$tmp/saved.args" 2>/dev/null))" \
    grep -qx "3:--mode test $base/saved" "$tmp/saved.args"
check "saved: its environment: park id, timeout, thaw status ($(cat "$tmp/saved.env" 2>/dev/null))" \
    grep -qx "1 3000 10" "$tmp/saved.env"
check "saved: park, park-hook (saved, its output), then the kill with park_end kill" \
    in_order "$tmp/err" "$(ev park saved)" \
    "\"event\":\"park-hook\",.*\"cgroup\":\"$base/saved\",\"park_id\":1,.*\"result\":\"saved\",\"exit_status\":0,.*\"output\":\"snapshot of saved written\\\\n\",.*\"action\":\"kill\"" \
    "\"event\":\"kill\",.*\"cgroup\":\"$base/saved\",.*\"park_id\":1,\"park_end\":\"kill\",\"parked_ms\":[0-9]*,\"frozen_after_ms\":[0-9]*"
pk=$(sed -n "s|.*\"event\":\"park\",.*\"cgroup\":\"$base/saved\",.*\"kill_id\":\([0-9]*\),.*|\1|p" "$tmp/err")
kk=$(sed -n "s|.*\"event\":\"kill\",.*\"cgroup\":\"$base/saved\",.*\"kill_id\":\([0-9]*\).*|\1|p" "$tmp/err")
check "saved: the park and its kill carry one kill_id ($pk, $kk)" [ -n "$pk" ] && [ "$pk" = "$kk" ]

# ---- thaw: exit 10 after raising memory.max: thawed at that limit, and the actor runs to its end
actor thaw 3
st=$?
check "thaw: the actor runs to its end (status $st)" [ "$st" = 0 ]
check "thaw: park, park-hook (thaw at memory.max's 256 MiB), then the thaw" \
    in_order "$tmp/err" "$(ev park thaw)" \
    "\"event\":\"park-hook\",.*\"cgroup\":\"$base/thaw\",.*\"result\":\"thaw\",\"exit_status\":10,.*\"action\":\"thaw\",\"limit_bytes\":268435456,\"limit_source\":\"memory.max\"" \
    "\"event\":\"thaw\",.*\"cgroup\":\"$base/thaw\",.*\"park_end\":\"thaw\""
check "thaw: not killed" sh -c "! grep -q '\"event\":\"kill\",.*\"cgroup\":\"$base/thaw\"' '$tmp/err'"
check "thaw: cgroup.freeze is 0 again" grep -qx 0 "$base/thaw/cgroup.freeze"
check "thaw: the guard made anew at the new limit" wait_grep "$tmp/err" "$(watch_ev "$base/thaw" 268435456 memory.max)"

# ---- fail: another status is a kill all the same, the hook's last line said
actor fail -1
st=$?
check "fail: the actor is killed (status $st)" [ "$st" = 137 ]
told_killed fail
check "fail: park-hook failed (exit 3, its stderr in the output), then the kill" \
    in_order "$tmp/err" "$(ev park fail)" \
    "\"event\":\"park-hook\",.*\"cgroup\":\"$base/fail\",.*\"result\":\"failed\",\"exit_status\":3,.*\"output\":\"copying\\\\nsnapshot: no space left on device\\\\n\",.*\"action\":\"kill\"" \
    "\"event\":\"kill\",.*\"cgroup\":\"$base/fail\",.*\"park_end\":\"kill\""

# ---- slow: past --park-timeout, its process group killed, then the actor
t0=$(cut -d' ' -f1 /proc/uptime | tr -d .)
actor slow -1
st=$?
took=$(($(cut -d' ' -f1 /proc/uptime | tr -d .) - t0))
check "slow: the actor is killed (status $st) after the hook's 3 s (${took}0 ms)" \
    sh -c "[ '$st' = 137 ] && [ '$took' -ge 300 ] && [ '$took' -lt 1000 ]"
told_killed slow
check "slow: park-hook timeout, then the kill (the hook's answer, not the guard's deadline)" \
    in_order "$tmp/err" "$(ev park slow)" \
    "\"event\":\"park-hook\",.*\"cgroup\":\"$base/slow\",.*\"result\":\"timeout\",\"exit_status\":null,.*\"action\":\"kill\"" \
    "\"event\":\"kill\",.*\"cgroup\":\"$base/slow\",.*\"park_end\":\"kill\""
bg=$(cat "$tmp/slow.bg" 2>/dev/null)
check "slow: what the hook left in the background is killed with its group (pid ${bg:-?})" \
    sh -c "[ -n '$bg' ] && { [ ! -e /proc/$bg ] || grep -q '^State:.*Z' /proc/$bg/status; }"

# ---- the metrics: parks by how they ended, the hook's runs
rel=${base#"$root"}
check "metrics: three parks ended in the hook's kill (the last one too)" \
    wait_metric "$tmp/park.prom" 'memguard_node_park_ends_total{end="kill"}' 3
check "metrics: four parks, one ended in a thaw, none at the guard's deadline" sh -c "
    grep -qx 'memguard_node_parks_total 4' '$tmp/park.prom' &&
    grep -qx 'memguard_node_park_ends_total{end=\"thaw\"} 1' '$tmp/park.prom' &&
    grep -qx 'memguard_node_park_ends_total{end=\"deadline\"} 0' '$tmp/park.prom'"
check "metrics: the hook's runs by result" sh -c "
    grep -qx 'memguard_park_hooks_total{result=\"saved\"} 1' '$tmp/park.prom' &&
    grep -qx 'memguard_park_hooks_total{result=\"thaw\"} 1' '$tmp/park.prom' &&
    grep -qx 'memguard_park_hooks_total{result=\"failed\"} 1' '$tmp/park.prom' &&
    grep -qx 'memguard_park_hooks_total{result=\"timeout\"} 1' '$tmp/park.prom' &&
    grep -qx 'memguard_park_hook_seconds_count 4' '$tmp/park.prom'"
check "metrics: none parked now; saved's series" sh -c "
    grep -qx 'memguard_node_parked 0' '$tmp/park.prom' &&
    grep -qx 'memguard_parks_total{cgroup=\"$rel/saved\",id=\"$rel/saved\"} 1' '$tmp/park.prom'"
sed 's/^/# park metrics: /' "$tmp/park.prom" | grep -E 'park'

# ---- the runner gone (killed outright): the park under way is killed at
# the guard's own deadline (kill wait 2 s + 3 s + the hook's grace 0.75 s +
# 2 s after the freeze),
# its hook with the runner; a park after that is killed at once.
mkdir "$base/orphan" "$base/late"
for c in orphan late; do wait_grep "$tmp/err" "$(watch_ev "$base/$c" 67108864 default)"; done
runner=
for f in /proc/[0-9]*/stat; do
    read -r p c _ pp _ <"$f" 2>/dev/null || continue
    [ "$c" = "(memguard-hook)" ] && [ "$pp" = "$wpid" ] && runner=$p
done
check "the runner is a child of watch named memguard-hook (${runner:-none})" [ -n "$runner" ]
actor orphan -1 &
apid=$!
wait_file "$tmp/orphan.leader"
leader=$(cat "$tmp/orphan.leader" 2>/dev/null)
kill -KILL "$runner"
wait $apid
st=$?
check "orphan: the actor is killed (status $st)" [ "$st" = 137 ]
told_killed orphan
check "orphan: watch says the runner is gone, the park under way left to its deadline" \
    grep -q '"event":"error",.*"message":"--park-hook: its runner is gone: parks under way (1) end at their deadline' "$tmp/err"
pms=$(sed -n "s|.*\"event\":\"kill\",.*\"cgroup\":\"$base/orphan\",.*\"park_end\":\"deadline\",\"parked_ms\":\([0-9]*\),.*|\1|p" "$tmp/err")
check "orphan: killed at the guard's park deadline, about 7.75 s after the freeze (${pms:-no such kill} ms)" \
    sh -c "[ -n '$pms' ] && [ '$pms' -ge 7650 ] && [ '$pms' -lt 9750 ]"
check "orphan: its hook died with the runner (pid ${leader:-?})" \
    sh -c "[ -n '$leader' ] && { [ ! -e /proc/$leader ] || grep -q '^State:.*Z' /proc/$leader/status; }"
actor late -1
st=$?
check "late: a park with no runner is killed at once (status $st)" [ "$st" = 137 ]
told_killed late
check "late: park, park-hook error (Broken pipe), the kill" \
    in_order "$tmp/err" "$(ev park late)" \
    "\"event\":\"park-hook\",.*\"cgroup\":\"$base/late\",.*\"result\":\"error\",.*\"error\":\"Broken pipe\",\"errno\":32,.*\"action\":\"kill\"" \
    "\"event\":\"kill\",.*\"cgroup\":\"$base/late\",.*\"park_end\":\"kill\""
check "metrics: the deadline's end counted" \
    wait_metric "$tmp/park.prom" 'memguard_node_park_ends_total{end="deadline"}' 1

kill -TERM "$wpid"
wait "$wpid"
st=$?
wpid=
check "watch --park-hook: SIGTERM ends it with 0 (got $st)" [ "$st" = 0 ]
check "watch --park-hook: nothing but JSON on stderr" sh -c "! grep -qv '^{' '$tmp/err'"
sed 's/^/# json: /' "$tmp/err"

# ---- crash: a watch killed outright mid-park, and the next one
mkdir "$base/crash"
"$mg" watch --json --parent "$base" --limit 64M --park-hook "$tmp/hook --mode test" --park-timeout 30s \
    2>"$tmp/err2" &
wpid=$!
wait_grep "$tmp/err2" "$(watch_ev "$base/crash" 67108864 default)"
actor crash -1 &
apid=$!
wait_file "$tmp/crash.record" 20
check "crash: parked, the hook running, before the watch is killed" grep -qx 'frozen 1' "$tmp/crash.frozen"
kill -KILL "$wpid"
wait "$wpid" 2>/dev/null
wpid=
sleep 0.5
check "crash: the killed watch's park stays frozen" grep -qx 1 "$base/crash/cgroup.freeze"
touch "$tmp/crash.second"
rm -f "$tmp/crash.record"
"$mg" watch --json --parent "$base" --limit 64M --park-hook "$tmp/hook --mode test" --park-timeout 3s \
    2>"$tmp/err3" &
wpid=$!
wait $apid
st=$?
check "crash: the next watch ends the park it took over in a kill (status $st)" [ "$st" = 137 ]
wait_grep "$tmp/err3" "\"event\":\"kill\",.*\"cgroup\":\"$base/crash\"" 15 || true
check "crash: the next watch's park event (the record's park_id 1), its hook (saved), the kill" \
    in_order "$tmp/err3" "\"event\":\"park\",.*\"cgroup\":\"$base/crash\",.*\"park_id\":1,\"park_end\":\"open\"" \
    "\"event\":\"park-hook\",.*\"cgroup\":\"$base/crash\",\"park_id\":1,.*\"result\":\"saved\"" \
    "\"event\":\"kill\",.*\"cgroup\":\"$base/crash\",.*\"park_id\":1,\"park_end\":\"kill\""
check "crash: the hook's stdin is the taken-over park's event" \
    grep -q "^{\"event\":\"park\",.*\"cgroup\":\"$base/crash\"" "$tmp/crash.record"
kill -TERM "$wpid"
wait "$wpid"
wpid=
sed 's/^/# json (the killed watch): /' "$tmp/err2"
sed 's/^/# json (the next watch): /' "$tmp/err3"
echo "1..$n"
[ "$failed" = 0 ]
