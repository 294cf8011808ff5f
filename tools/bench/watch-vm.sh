#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `memguard watch --parent` over N real cgroups, and the reads-alone floor
# on as many, in one boot (busybox sh, inside tests/vm/vmrun; docs/benchmarks.md
# "watch at scale"):
#   tests/vm/vmrun --kernel 6.1 --mem 6144 --file build/tools/memguard/memguard \
#       --file build/tools/mg-workload --file build/tools/bench/bench-scale \
#       --file tools/bench/watch-vm.sh -- /mg/watch-vm.sh 10000 20
# First bench-scale's floor on N cgroups (the same reads at the same 250 ms
# tick, nothing else: its "result bench=scale-floor" line), then N children
# of one parent under watch (--limit 64M, metrics every S seconds): the time
# from its start to set-up done (every child guarded), its fds and RSS, its
# CPU and ticks between two metrics writes (utime + stime of /proc/PID/stat,
# the node's tick counters), and a 200 MiB hog in the
# middle child, which must be killed as an overshoot.  "result bench=watch"
# carries the figures; exit 1 if any child was left unguarded or the hog
# lived.
n=${1:-10000} seconds=${2:-20}
root=/sys/fs/cgroup
mg=/mg/memguard
echo "env bench=watch kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) mem_kib=$(sed -n 's/^MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo)"
ulimit -n 1048576 2>/dev/null || ulimit -n 65536
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
cs() { cut -d' ' -f1 /proc/uptime | tr -d .; } # centiseconds since boot
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

/mg/bench-scale --cgroup "$root" -n "$n" --seconds "$seconds" --floor --rounds 1 | grep -E '^(env|result) '

echo +memory >"$root/cgroup.subtree_control"
p=$root/watch-bench
mkdir "$p" && echo +memory >"$p/cgroup.subtree_control" || { echo "watch-vm: cannot make $p"; exit 1; }
(cd "$p" && seq 1 "$n" | xargs mkdir)
t0=$(cs)
"$mg" watch --json --parent "$p" --limit 64M --metrics /tmp/watch.prom --metrics-interval "${seconds}s" 2>/tmp/watch.err &
pid=$!
while [ "$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/$pid/status 2>/dev/null)" != 2 ]; do
    kill -0 $pid 2>/dev/null || { echo "watch-vm: watch exited"; tail -n 5 /tmp/watch.err; exit 1; }
    sleep 0.1
done
ready_ms=$((($(cs) - t0) * 10))
guarded=$(grep -c '"event":"watch"' /tmp/watch.err)
# The window: from one metrics write after set-up to the next, S seconds
# later (the node's tick counters are in both; the second write's cost is
# in the window, as a scrape a service makes is).
stamp() { grep -m 1 '^memguard_last_update_timestamp_seconds' /tmp/watch.prom 2>/dev/null; }
ticks() { grep '^memguard_node_ticks_total' /tmp/watch.prom | awk '{s += $2} END {print s + 0}'; }
next_write() { s=$(stamp); while [ "$(stamp)" = "$s" ]; do sleep 0.1; done; }
next_write
c0=$(cpu_ticks $pid) w0=$(cs) k0=$(ticks)
next_write
c1=$(cpu_ticks $pid) w1=$(cs) k1=$(ticks)
fds=$(ls /proc/$pid/fd | wc -l)
rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status)
cpu_ms=$(((c1 - c0) * 1000 / hz))
wall_ms=$(((w1 - w0) * 10))
h0=$(cs)
timeout 60 sh -c "echo \$\$ >$p/$((n / 2))/cgroup.procs && exec /mg/mg-workload anon 200 256 -1" >/dev/null 2>&1
hog=$?
hog_ms=$((($(cs) - h0) * 10))
kill_line=$(grep '"event":"kill"' /tmp/watch.err | head -n 1)
echo "result bench=watch n=$n guarded=$guarded ready_ms=$ready_ms fds=$fds rss_kib=$rss cpu_ms=$cpu_ms wall_ms=$wall_ms" \
    "cpu_share=$(awk "BEGIN{printf \"%.4f\", $cpu_ms / $wall_ms}") ticks_per_sec=$(((k1 - k0) * 1000 / wall_ms))" \
    "cpu_us_per_tick=$(awk "BEGIN{printf \"%.2f\", $cpu_ms * 1000 / ($k1 - $k0 + 1)}") hog_status=$hog hog_ms=$hog_ms" \
    "$(echo "$kill_line" | grep -o '"reason":"[a-z]*"\|"detect_to_kill_ms":[0-9]*\|"kill_to_empty_ms":[0-9]*' | tr -d '"' | tr ':\n' '= ')"
kill -TERM $pid
wait $pid
(cd "$p" && ls | xargs rmdir 2>/dev/null)
rmdir "$p"
[ "$guarded" = "$n" ] && [ "$hog" = 137 ]
