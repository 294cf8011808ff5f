#!/bin/sh
# Guest-side smoke test of the VM harness (busybox sh only):
#   tests/vm/vmrun --kernel 6.1 --file tests/vm/smoke.sh -- /mg/smoke.sh
# Prints TAP; exits non-zero if any check fails.

CG=/sys/fs/cgroup
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() {  # check DESCRIPTION COMMAND...; its stderr becomes TAP comments
    desc=$1; shift
    if { "$@"; } 2>/tmp/check.err; then ok "$desc"; else not_ok "$desc"; fi
    sed 's/^/# /' /tmp/check.err
}
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1/memory.stat"; }
event_of() { awk -v k="$2" '$1 == k { print $2 }' "$1/memory.events"; }

kver=$(uname -r)
echo "# kernel $kver, vmrun label ${MEMGUARD_VM_KERNEL:-?}"
case ${MEMGUARD_VM_KERNEL:-}. in
    .) check "kernel version $kver" true ;;
    *) check "kernel version $kver matches ${MEMGUARD_VM_KERNEL}" \
        sh -c "case $kver in ${MEMGUARD_VM_KERNEL}.*) exit 0;; esac; exit 1" ;;
esac

check "cgroup2 mounted at $CG" grep -q "^cgroup2 $CG cgroup2 " /proc/mounts
echo "# $(grep " $CG " /proc/mounts)"

controllers=$(cat $CG/cgroup.subtree_control)
echo "# root cgroup.subtree_control: $controllers"
for c in memory io cpu pids; do
    check "controller $c enabled at the root" sh -c "echo ' $controllers ' | grep -q ' $c '"
done

for r in memory io cpu; do
    check "PSI /proc/pressure/$r readable" grep -q '^some ' /proc/pressure/$r
done

check "create cgroup $CG/smoke" mkdir $CG/smoke
echo 32M >$CG/smoke/memory.max
check "memory.max=32M reads back as 33554432" [ "$(cat $CG/smoke/memory.max)" = 33554432 ]

echo "# memory.stat keys: $(awk '{ printf "%s ", $1 }' $CG/smoke/memory.stat)"
for k in anon file shmem sock file_dirty file_writeback workingset_refault_file; do
    check "memory.stat has $k" grep -q "^$k " $CG/smoke/memory.stat
done
check "memory.stat has kernel or kernel_stack" grep -qE '^kernel(_stack)? ' $CG/smoke/memory.stat
for f in memory.pressure io.pressure cpu.pressure cgroup.kill memory.reclaim memory.events io.stat pids.max; do
    check "$f exists" [ -e $CG/smoke/$f ]
done

# Nested delegation: a process-free child may enable controllers for its own
# children (the no-internal-process rule).
mkdir -p $CG/nest/leaf
check "enable +memory +io in a child's subtree_control" \
    sh -c "echo '+memory +io' >$CG/nest/cgroup.subtree_control"
check "grandchild has memory.max" [ -e $CG/nest/leaf/memory.max ]
rmdir $CG/nest/leaf $CG/nest

check "/mnt/disk is ext4" grep -q '^/dev/vda /mnt/disk ext4 ' /proc/mounts
check "/mnt/disk is writable" touch /mnt/disk/.smoke
[ -d /mnt/small ] && check "/mnt/small is ext4" grep -q ' /mnt/small ext4 ' /proc/mounts

# Page cache of a writer is charged to its cgroup and held under memory.max.
# Known kernel behaviour, reported as TAP TODO rather than a harness failure:
# with MGLRU enabled (Debian's 6.12 default) the writer is OOM-killed with all
# of its page cache dirty and no writeback started.
oom0=$(event_of $CG/smoke oom_kill)
{ sh -c "echo \$\$ >$CG/smoke/cgroup.procs && exec dd if=/dev/zero of=/mnt/disk/f bs=1M count=64 2>/dev/null"; } 2>/dev/null
rc=$?
lru_gen=$(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo none)
if [ $rc -eq 0 ]; then
    ok "dd 64 MiB to /mnt/disk from inside the cgroup"
elif [ "$(event_of $CG/smoke oom_kill)" -gt "$oom0" ] && [ "$lru_gen" != 0x0000 ] && [ "$lru_gen" != none ]; then
    n=$((n + 1))
    echo "not ok $n - dd 64 MiB to /mnt/disk from inside the cgroup # TODO memcg OOM on dirty page cache with MGLRU (lru_gen $lru_gen)"
else
    not_ok "dd 64 MiB to /mnt/disk from inside the cgroup (exit status $rc)"
fi
for k in anon file file_dirty file_writeback; do echo "# after dd: memory.stat $k $(stat_of $CG/smoke $k)"; done
check "page cache charged to the cgroup (file > 0)" [ "$(stat_of $CG/smoke file)" -gt 0 ]
check "memory.current <= memory.max" [ "$(cat $CG/smoke/memory.current)" -le 33554432 ]
# sync first: dirty page cache cannot be reclaimed (EAGAIN).
check "memory.reclaim reclaims 1M of clean page cache" sh -c "sync && echo 1M >$CG/smoke/memory.reclaim"

# No swap: anonymous memory beyond memory.max must end in the cgroup OOM
# killer. busybox tail keeps the last "line" of /dev/zero, which never ends.
before=$(event_of $CG/smoke oom_kill)
# (The braces keep the shell's "Killed" notice out of the TAP stream.)
{ timeout 120 sh -c "echo \$\$ >$CG/smoke/cgroup.procs && exec tail /dev/zero"; } 2>/dev/null
rc=$?
after=$(event_of $CG/smoke oom_kill)
echo "# tail /dev/zero exit status $rc, oom_kill $before -> $after"
check "over-limit allocation is OOM-killed (SIGKILL)" [ "$rc" -eq 137 ]
check "memory.events oom_kill rises" [ "$after" -gt "$before" ]
check "memory.pressure reports some/full" grep -q '^full ' $CG/smoke/memory.pressure
echo "# memory.pressure: $(tr '\n' ' ' <$CG/smoke/memory.pressure)"

# cgroup.kill: move a sleeper in from outside (no race with its start).
mkdir $CG/smoke-kill
sleep 1000 &
pid=$!
echo $pid >$CG/smoke-kill/cgroup.procs
echo 1 >$CG/smoke-kill/cgroup.kill
{ wait $pid; } 2>/dev/null
check "cgroup.kill kills the cgroup's processes" [ $? -eq 137 ]
rmdir $CG/smoke-kill

rm -f /mnt/disk/f
echo "1..$n"
[ "$failed" -eq 0 ]
