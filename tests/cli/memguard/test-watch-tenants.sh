#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `memguard watch --parent` as a node service over tenants' cgroups, on a
# real cgroup v2 (busybox sh, as root; the VM harness or a host with a
# delegated memory controller):
#   tests/vm/vmrun --kernel 6.1 --mem 2048 --file build/tools/memguard/memguard \
#       --file build/tools/mg-workload --file tests/cli/memguard/vm-lib.sh \
#       --file tests/cli/memguard/test-watch-tenants.sh -- /mg/test-watch-tenants.sh
# What it builds and expects:
#  1. Tenants: children delegated as systemd delegates them (the directory
#     and cgroup.procs, cgroup.threads, cgroup.subtree_control chowned to
#     uid 1000).  One carries user.memguard.limit 16000000T, one a forged
#     lend record (memory.high "max" to go back to, deadline a day away)
#     when watch starts; a root-owned child carries the same record.  Each
#     tenant gets the default limit (64 MiB) and a 200 MiB anon hog in it is
#     killed as an overshoot, as in a root-owned child beside them; the
#     forged record is not taken over, the root-owned one is (and ended at
#     the guard's lend deadline: a lend-expired event).
#  2. An inotify flood: the two tenants write 60,000 xattrs in turn, with
#     the queue at its default 16384 events, while watch is stopped (so it
#     surely overflows); a child is made after the overflow.  watch lists
#     the parent again, guards that child and goes on.
#     Then tuning no child's limit accepts: watch exits 1 at start.
#  3. Thousands of actors: 1,500 children under a soft RLIMIT_NOFILE of
#     1024, metrics every second.  watch raises the soft limit to the hard
#     one: every child is guarded, no EMFILE, and a 200 MiB hog in child
#     750 is killed as an overshoot.  Its descriptors per actor are logged.
# TAP on stdout; "# json: ..." lines carry what watch printed.
# Env: MEMGUARD (default /mg/memguard), MEMGUARD_WORKLOAD (/mg/mg-workload),
#      MEMGUARD_TEST_CGROUP (/sys/fs/cgroup), MEMGUARD_ACTORS (1500).

mg=${MEMGUARD:-/mg/memguard}
wl=${MEMGUARD_WORKLOAD:-/mg/mg-workload}
root=${MEMGUARD_TEST_CGROUP:-/sys/fs/cgroup}
actors=${MEMGUARD_ACTORS:-1500}
tmp=$(mktemp -d)
base=$root/memguard-tenants-test-$$
n=0
failed=0
. "${0%/*}/vm-lib.sh"

cleanup() {
    [ -n "$wpid" ] && kill -TERM "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
    for p in "$base"/*/; do
        for cg in "$p"*/; do [ -d "$cg" ] && echo 1 >"$cg/cgroup.kill" 2>/dev/null; done
    done
    sleep 0.3
    for p in "$base"/*/; do
        [ -d "$p" ] || continue
        ls -d "$p"*/ 2>/dev/null | xargs -r rmdir 2>/dev/null
        rmdir "$p" 2>/dev/null
    done
    rmdir "$base" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# delegate DIR: as systemd's Delegate=yes does for a unit of uid 1000.
delegate() { chown 1000:1000 "$1" "$1/cgroup.procs" "$1/cgroup.threads" "$1/cgroup.subtree_control"; }
# hog DIR: 200 MiB of anon memory in DIR, killed or done within 60 s; its
# exit status, and in $took the centiseconds it ran.
hog() {
    t0=$(cut -d' ' -f1 /proc/uptime | tr -d .)
    timeout 60 sh -c "echo \$\$ >$1/cgroup.procs && exec $wl anon 200 256 -1" >/dev/null 2>&1
    st=$?
    took=$(($(cut -d' ' -f1 /proc/uptime | tr -d .) - t0))
    return $st
}
# killed_as_overshoot JSON CGROUP: the kill event of CGROUP, at 64 MiB.
killed_as_overshoot() {
    wait_grep "$1" "\"event\":\"kill\",.*\"reason\":\"overshoot\",\"cgroup\":\"$2\",\"limit_bytes\":67108864,"
}
# start_watch PARENT JSON [ARGS...]: watch --json --parent PARENT --limit 64M,
# its pid in $wpid once it is confined (set up: every child found guarded).
start_watch() {
    p=$1 out=$2
    shift 2
    "$mg" watch --json --parent "$p" --limit 64M "$@" 2>"$out" &
    wpid=$!
    wait_confined $wpid 300 || echo "# watch not confined after 300 s"
}
stop() { # NAME JSON
    kill -TERM $wpid
    wait $wpid
    st=$?
    wpid=
    check "$1: SIGTERM ends watch with 0 (got $st)" [ "$st" = 0 ]
    sed 's/^/# json: /' "$2" | head -n 200
}

echo "TAP version 13"
echo "# kernel $(uname -r), memguard $("$mg" --version)"
echo "+memory" >"$root/cgroup.subtree_control" 2>/dev/null
mkdir "$base" && echo "+memory" >"$base/cgroup.subtree_control" ||
    { echo "Bail out! cannot make $base with the memory controller"; exit 1; }

# ---- 1. what tenants write decides nothing about them
t=$base/t
mkdir "$t" && echo +memory >"$t/cgroup.subtree_control"
mkdir "$t/huge" "$t/forged" "$t/own"
delegate "$t/huge"
delegate "$t/forged"
"$wl" xattr 1 user.memguard.limit 16000000T "$t/huge" >/dev/null
# a lend "open" for a day: what a guard made at start would take over
up=$(cut -d' ' -f1 /proc/uptime | cut -d. -f1)
rec="memguard-lend 1 high=max deadline_boottime_usec=$(((up + 86400) * 1000000)) pid=1"
"$wl" xattr 1 user.memguard.lend "$rec
" "$t/forged" >/dev/null
"$wl" xattr 1 user.memguard.lend "$rec
" "$t/own" >/dev/null
start_watch "$t" "$tmp/t.err"
check "tenants: the forged limit is refused, the child guarded at the default 64 MiB" \
    wait_grep "$tmp/t.err" "$(watch_ev "$t/huge" 67108864 default)"
check "tenants: ... with an error saying uid 1000 can write its directory" \
    wait_grep "$tmp/t.err" "user.memguard.limit .*16000000T.* ignored: uid 1000 can write"
hog "$t/huge"
st=$?
check "tenants: 200 MiB in the child with the forged limit: killed (status $st, $((took * 10)) ms)" [ "$st" = 137 ]
check "tenants: ... as an overshoot of 64 MiB" killed_as_overshoot "$tmp/t.err" "$t/huge"
hog "$t/forged"
st=$?
check "tenants: 200 MiB in the child with the forged lend: killed (status $st, $((took * 10)) ms)" [ "$st" = 137 ]
check "tenants: ... as an overshoot of 64 MiB" killed_as_overshoot "$tmp/t.err" "$t/forged"
mkdir "$t/plain"
wait_grep "$tmp/t.err" "$(watch_ev "$t/plain" 67108864 default)"
hog "$t/plain"
st=$?
check "tenants: 200 MiB in a root-owned child beside them: killed (status $st, $((took * 10)) ms)" [ "$st" = 137 ]

# a lend taken over ends at the guard's own deadline (11 s at 64 MiB)
check "tenants: the record on the root-owned child was taken over and ended (the control)" \
    wait_grep "$tmp/t.err" "\"event\":\"lend-expired\",.*\"cgroup\":\"$t/own\"" 30
check_eval "tenants: the same record on the delegated child was not" \
    "! grep -q '\"event\":\"lend-[a-z]*\",.*\"cgroup\":\"$t/forged\"' '$tmp/t.err'"

# ---- 2. an inotify flood from two tenants (watch stopped meanwhile, so the
# queue surely overflows; the child made after it is in no event, only in a
# new listing of the parent)
kill -STOP $wpid
"$wl" xattr 60000 user.flood x "$t/huge" "$t/forged" | sed 's/^/# /'
mkdir "$t/late"
kill -CONT $wpid
check "flood: watch lists the parent again after the queue overflowed" \
    wait_grep "$tmp/t.err" "inotify queue overflowed: listed again, 1 new children" 30
check "flood: ... and still runs" kill -0 $wpid
check "flood: the child made in the flood is guarded" wait_grep "$tmp/t.err" "$(watch_ev "$t/late" 67108864 default)"
hog "$t/late"
st=$?
check "flood: 200 MiB in it is killed (status $st, $((took * 10)) ms)" [ "$st" = 137 ]
refused=$(grep -c "16000000T.* ignored" "$tmp/t.err")
check "flood: the refused limit was said once in all ($refused)" [ "$refused" = 1 ]
stop "tenants" "$tmp/t.err"
# tuning no child's limit accepts (a 10 ms tick cannot span an 8 s window)
timeout 60 "$mg" watch --parent "$t" --limit 64M --tick 10ms --stall-window 8s 2>"$tmp/bad.err"
st=$?
check "options no child accepts: watch fails at start (status $st)" [ "$st" = 1 ]
check "options no child accepts: ... and says so" grep -q "the options fit none of the" "$tmp/bad.err"
diag "$tmp/bad.err" | tail -n 3

# ---- 3. thousands of actors within a service's descriptors
s=$base/s
mkdir "$s" && echo +memory >"$s/cgroup.subtree_control"
(cd "$s" && seq 1 "$actors" | xargs mkdir)
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -lt 65536 ] && ulimit -Hn 65536
ulimit -Sn 1024
t0=$(cut -d' ' -f1 /proc/uptime | tr -d .)
start_watch "$s" "$tmp/s.err" --metrics "$tmp/s.prom" --metrics-interval 1s
ready=$(($(cut -d' ' -f1 /proc/uptime | tr -d .) - t0))
ulimit -Sn "$(ulimit -Hn)"
guarded=$(grep -c '"event":"watch"' "$tmp/s.err")
check "scale: $actors children under a soft RLIMIT_NOFILE of 1024: all guarded ($guarded, in $((ready * 10)) ms)" \
    [ "$guarded" = "$actors" ]
wait_file "$tmp/s.prom" 30
sleep 2 # two metrics intervals: the reports' descriptors, if they stayed open, would show
fds=$(ls /proc/$wpid/fd 2>/dev/null | wc -l) # busybox ls stats each entry: one closing meanwhile is not listed
echo "# scale: watch holds $fds descriptors for $actors actors, RSS $(status_of $wpid VmRSS)"
check "scale: ... at most 3 descriptors per actor ($fds)" [ "$fds" -le $((3 * actors)) ]
hog "$s/750"
st=$?
check "scale: 200 MiB in child 750 is killed (status $st, $((took * 10)) ms from its start)" [ "$st" = 137 ]
check "scale: ... as an overshoot of 64 MiB" killed_as_overshoot "$tmp/s.err" "$s/750"
grep '"event":"kill"' "$tmp/s.err" | sed -n 's/.*\("detect_to_kill_ms":[0-9]*\).*\("kill_to_empty_ms":[0-9]*\).*/# scale: kill \1 \2/p'
emfile=$(grep -c "Too many open files\|descriptors RLIMIT_NOFILE" "$tmp/s.err")
check "scale: no descriptor error ($emfile)" [ "$emfile" = 0 ]
stop "scale" "$tmp/s.err"

echo "1..$n"
[ "$failed" = 0 ]
