# SPDX-License-Identifier: Apache-2.0
# TAP and polling helpers for the scripts that test the memguard command in
# the VM harness (busybox sh), sourced from the directory they run from.
# The caller sets n=0 and failed=0 first.

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diag() { sed 's/^/# /' "$@"; }
check() { # DESCRIPTION COMMAND...
    desc=$1
    shift
    if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
check_eval() { # DESCRIPTION 'SHELL CONDITION'
    if eval "$2"; then ok "$1"; else not_ok "$1"; fi
}
# status_of PID FIELD: FIELD of /proc/PID/status ("" once PID is gone)
status_of() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null; }
# wait_confined PID [SECONDS]: polls until PID runs under its seccomp filter,
# the last step of memguard's set-up (mgt_drop_privileges); at most SECONDS
# (default 10).  Fails at once if PID is gone.
wait_confined() {
    i=0
    while [ $i -lt $((${2:-10} * 10)) ]; do
        [ "$(status_of "$1" Seccomp)" = 2 ] && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# wait_file FILE [SECONDS]: polls until FILE exists, at most SECONDS (10).
wait_file() {
    i=0
    while [ ! -s "$1" ] && [ $i -lt $((${2:-10} * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    [ -s "$1" ]
}
privs_of() { # PID: the fields the privilege checks look at, for the log
    grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "/proc/$1/status" 2>/dev/null | tr '\t\n' '  '
}
# wait_grep FILE PATTERN [SECONDS]: polls until FILE has a line matching PATTERN.
wait_grep() {
    i=0
    while ! grep -q -- "$2" "$1" 2>/dev/null && [ $i -lt $((${3:-10} * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    grep -q -- "$2" "$1" 2>/dev/null
}
watch_ev() { # CGROUP LIMIT SOURCE: the pattern of watch's "watch" event
    echo "\"event\":\"watch\",.*\"cgroup\":\"$1\",\"limit_bytes\":$2,\"limit_source\":\"$3\""
}
