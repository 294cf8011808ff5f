#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Guest side of tools/bench/run's VM part (busybox sh, inside tests/vm/vmrun):
# the tick and scale benchmarks on fixture trees in the guest's tmpfs and on
# real cgroups, in one boot, so their ratios come from the same machine.
#   vm.sh TICKS ROUNDS SECONDS N...   (TICKS 0: no tick benchmarks)
ticks=$1 rounds=$2 seconds=$3
shift 3
echo "env bench=vm kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) mem_kib=$(sed -n 's/^MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo)"
st=0
if [ "$ticks" -gt 0 ]; then
    /mg/bench-tick --fixture /tmp/tick --ticks "$ticks" --rounds "$rounds" || st=1
    /mg/bench-tick --cgroup /sys/fs/cgroup --ticks "$ticks" --rounds "$rounds" || st=1
fi
for n in "$@"; do
    /mg/bench-scale --fixture /tmp/scale-$n -n "$n" --seconds "$seconds" --floor --rounds "$seconds" || st=1
    rm -rf /tmp/scale-$n
    /mg/bench-scale --cgroup /sys/fs/cgroup -n "$n" --seconds "$seconds" --floor --rounds "$seconds" || st=1
done
exit $st
