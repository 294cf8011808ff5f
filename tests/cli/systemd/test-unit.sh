#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The memguard-watch@.service unit: `systemd-analyze verify` of an instance
# of it (ExecStart pointed at the memguard under test), and what it must
# say: Type=notify, Restart=always, a low OOMScoreAdjust, the capability
# bounding set, mlockall.  TAP on stdout.
#
#   tests/cli/systemd/test-unit.sh BUILD/tools/systemd/memguard-watch@.service BUILD/tools/memguard/memguard
set -u
unit=${1:?usage: test-unit.sh UNIT MEMGUARD}
mg=${2:?usage: test-unit.sh UNIT MEMGUARD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
has() { # DESCRIPTION REGEX
    if grep -qE "$2" "$unit"; then ok "$1"; else not_ok "$1 (no line matching '$2')"; fi
}
echo "TAP version 13"
has "Type=notify (watch sends READY=1)" '^Type=notify$'
has "Restart=always" '^Restart=always$'
has "a low OOMScoreAdjust" '^OOMScoreAdjust=-(9[0-9][0-9]|1000)$'
has "only CAP_KILL and CAP_IPC_LOCK" '^CapabilityBoundingSet=CAP_KILL CAP_IPC_LOCK$'
has "watch --mlock" '^ExecStart=.* watch --mlock '
has "a watchdog" '^WatchdogSec='
has "reload is SIGHUP" '^ExecReload=/bin/kill -HUP \$MAINPID$'
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
    # An instance, its ExecStart on the binary under test; /bin/kill must exist for ExecReload.
    sed "s|^ExecStart=[^ ]*/memguard |ExecStart=$(realpath "$mg") |" "$unit" >"$tmp/memguard-watch@sandboxes.slice.service"
    if SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
        "$tmp/memguard-watch@sandboxes.slice.service" >"$tmp/out" 2>&1 && ! grep -q . "$tmp/out"; then
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
