#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The memguard-watch@.service unit: `systemd-analyze verify` of an instance
# of it (ExecStart and ExecReload pointed at the memguard under test), and
# what it must say: Type=notify with the config checked on reload, then
# the signal,
# no environment file, Restart=always, a low OOMScoreAdjust, the capability
# bounding set; and the config file installed with it (mlockall, which the
# unit's LimitMEMLOCK is for) taken by `memguard config-parse`.  TAP on
# stdout.
#
#   tests/cli/systemd/test-unit.sh BUILD/tools/systemd/memguard-watch@.service BUILD/tools/memguard/memguard \
#       tools/systemd/watch.conf
set -u
unit=${1:?usage: test-unit.sh UNIT MEMGUARD WATCH.CONF}
mg=${2:?usage: test-unit.sh UNIT MEMGUARD WATCH.CONF}
conf=${3:?usage: test-unit.sh UNIT MEMGUARD WATCH.CONF}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
has() { # DESCRIPTION REGEX
    if grep -qE "$2" "$unit"; then ok "$1"; else not_ok "$1 (no line matching '$2')"; fi
}
echo "TAP version 13"
has "Type=notify (watch sends READY=1, and RELOADING=1 on SIGHUP; notify-reload is systemd 253's)" '^Type=notify$'
has "Restart=always" '^Restart=always$'
has "a low OOMScoreAdjust" '^OOMScoreAdjust=-(9[0-9][0-9]|1000)$'
has "only CAP_KILL and CAP_IPC_LOCK" '^CapabilityBoundingSet=CAP_KILL CAP_IPC_LOCK$'
has "watch with its config and the instance as its parent, nothing else" \
    '^ExecStart=[^ ]*/memguard watch --config [^ ]*/memguard/watch\.conf --parent %I$'
has "a watchdog" '^WatchdogSec='
has "a reload checks the config first (a bad one fails it)" \
    '^ExecReload=[^ ]*/memguard config-parse [^ ]*/memguard/watch\.conf$'
if grep -n '^ExecReload=' "$unit" | tail -1 | grep -qE ':ExecReload=/bin/kill -HUP \$MAINPID$' &&
   [ "$(grep -c '^ExecReload=' "$unit")" = 2 ]; then
    ok "then the signal, after the check"
else
    not_ok "then the signal, after the check (ExecReload= lines: $(grep -c '^ExecReload=' "$unit"))"
fi
has "LimitMEMLOCK for mlockall" '^LimitMEMLOCK=infinity$'
if grep -qE '^EnvironmentFile=|MEMGUARD_WATCH_OPTIONS' "$unit"; then
    not_ok "no environment file: every option is a key of watch.conf"
else
    ok "no environment file: every option is a key of watch.conf"
fi
# The file installed beside it: what the unit's command line no longer says.
if "$mg" config-parse "$conf" >"$tmp/conf.out" 2>&1; then ok "memguard config-parse takes the installed watch.conf"
else not_ok "memguard config-parse takes the installed watch.conf"; sed 's/^/# /' "$tmp/conf.out"; fi
grep -qx 'mlock yes' "$tmp/conf.out" && ok "watch.conf: mlock = yes (mlockall)" || not_ok "watch.conf: mlock = yes (mlockall)"
# Each commented-out example is a key config-parse takes, with a value it takes.
sed -n 's/^#\([a-z-]*\) = \(.*\)$/\1 = \2/p' "$conf" >"$tmp/examples.conf"
if [ -s "$tmp/examples.conf" ] && "$mg" config-parse "$tmp/examples.conf" >"$tmp/ex.out" 2>&1; then
    ok "watch.conf: its $(wc -l <"$tmp/examples.conf") commented-out settings are valid"
else
    not_ok "watch.conf: its commented-out settings are valid"; sed 's/^/# /' "$tmp/ex.out"
fi
has "the cgroup tree writable (no ProtectControlGroups)" '^ProtectSystem=strict$'
if grep -qE '^(ProtectControlGroups|ProtectKernelTunables)=yes' "$unit"; then
    not_ok "no ProtectControlGroups/ProtectKernelTunables: they make /sys/fs/cgroup read-only"
else
    ok "no ProtectControlGroups/ProtectKernelTunables (they make /sys/fs/cgroup read-only)"
fi
if ! command -v systemd-analyze >/dev/null; then
    echo "ok $((n + 1)) - systemd-analyze verify # SKIP no systemd-analyze (Debian: systemd)"
    n=$((n + 1))
else
    # An instance, its ExecStart and ExecReload on the binary under test.
    sed "s|^\(Exec[A-Za-z]*=\)[^ ]*/memguard |\1$(realpath "$mg") |" "$unit" >"$tmp/memguard-watch@sandboxes.slice.service"
    SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$tmp/memguard-watch@sandboxes.slice.service" >"$tmp/out" 2>&1
    st=$?
    if [ "$st" = 0 ] && ! grep -q . "$tmp/out"; then
        ok "systemd-analyze verify: no complaint"
    else
        # Where no systemd runs (a container), verify cannot load units at all: a skip, with its words.
        if grep -qiE 'Failed to (connect|initialize manager|setup working directory)|not been booted with systemd' "$tmp/out"; then
            echo "ok $((n + 1)) - systemd-analyze verify # SKIP $(head -1 "$tmp/out")"
            n=$((n + 1))
        else
            not_ok "systemd-analyze verify"
            sed 's/^/# /' "$tmp/out"
        fi
    fi
fi
echo "1..$n"
[ "$failed" = 0 ]
