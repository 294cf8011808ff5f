#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# memguard watch's loop on this host, without a memory controller: a parent
# made in a cgroup v2 directory this user may write (a hybrid host's
# unified mount, a delegated cgroup; $MEMGUARD_TEST_CGROUP2 to name one),
# its settings from a config file and drop-ins only.  A child made there is
# never guarded (no memory controller), but what watch says of it shows the
# settings in force: "no limit" without one, the missing controller once a
# limit is in force.  Checked:
#  - the reload protocol, RELOADING=1 then READY=1 (test-notify listening as the
#    service manager): RELOADING=1 with MONOTONIC_USEC= from the monotonic
#    clock, after the request, then READY=1;
#  - a drop-in's limit reaches the child on SIGHUP;
#  - a bad drop-in: the reload fails (its event, an error naming the file
#    and line, STATUS= says why), the last good settings stay in force, and
#    watch keeps running;
#  - fixed, the next reload applies the files as they are (a key removed
#    goes back to its default);
#  - a start-only key changed is said and kept (json, park-hook); the park
#    hook's runner, a child process of watch, is there from the start and
#    gone after it; park-timeout is reloaded;
#  - as root with unshare(1): stderr the journal ($JOURNAL_STREAM), the
#    entries sent natively to a journal socket of a private /run, with
#    their PRIORITY=, MESSAGE_ID= and MEMGUARD_* fields, from the confined
#    writer thread, and nothing on stderr.
# Skips where no such directory can be written.  TAP on stdout.
#
#   tests/cli/memguard/test-watch-reload.sh BUILD/tools/memguard/memguard BUILD/tests/cli/test-notify \
#       BUILD/tools/memguard/memguard-test-commands
set -u
usage="usage: test-watch-reload.sh MEMGUARD TEST-NOTIFY MEMGUARD-TEST-COMMANDS"
mg=$(realpath "${1:?$usage}")
notify=$(realpath "${2:?$usage}")
tc=$(realpath "${3:?$usage}")
tmp=$(mktemp -d)
n=0 failed=0 parent= pids=
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # DESCRIPTION COMMAND...
    local d=$1
    shift
    if "$@"; then ok "$d"; else not_ok "$d"; fi
}
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$parent" ] && { rmdir "$parent"/* 2>/dev/null; rmdir "$parent" 2>/dev/null; }
    rm -rf "$tmp"
}
trap cleanup EXIT
# wait_grep FILE REGEX [SECONDS]: until a line of FILE matches
wait_grep() {
    local i=0
    while [ $i -lt $((${3:-10} * 10)) ]; do
        grep -qE -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# lines FILE FROM: the lines of FILE past line FROM
lines_after() { tail -n +"$(($2 + 1))" "$1"; }
echo "TAP version 13"

# A cgroup v2 directory to make the parent in.
cands=${MEMGUARD_TEST_CGROUP2:-}
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do cands="$cands $d"; done
self=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -n "$self" ] && cands="$cands /sys/fs/cgroup$self /sys/fs/cgroup/unified$self"
for d in $cands; do
    [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ] || continue
    if mkdir "$d/memguard-test-reload.$$" 2>/dev/null; then
        parent=$d/memguard-test-reload.$$
        break
    fi
done
if [ -z "$parent" ]; then
    echo "ok 1 - watch's reload on this host # SKIP no cgroup v2 directory this user may make a cgroup in"
    echo "1..1"
    exit 0
fi
echo "# parent: $parent"

conf=$tmp/etc/watch.conf
mkdir -p "$tmp/etc/watch.conf.d"
printf 'parent = %s\njson = yes\npark-hook = /bin/true\n' "$parent" >"$conf"
"$notify" listen "$tmp/notify.sock" 60 >"$tmp/notify.out" 2>&1 &
pids="$pids $!"
i=0; while [ ! -S "$tmp/notify.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
NOTIFY_SOCKET=$tmp/notify.sock "$mg" watch --config "$conf" 2>"$tmp/err" </dev/null &
wpid=$!
pids="$pids $wpid"
check "watch --config with the parent from the file: READY=1" wait_grep "$tmp/notify.out" '^READY=1\|STATUS=guarding 0 cgroups$'

# The park hook's runner: a child of watch, forked before its guards.
runner_of() { # PID: the pid of its child named memguard-hook, if any
    local f
    for f in /proc/[0-9]*/stat; do
        read -r p c _ pp _ <"$f" 2>/dev/null || continue
        [ "$c" = "(memguard-hook)" ] && [ "$pp" = "$1" ] && { echo "$p"; return 0; }
    done
    return 1
}
runner=$(runner_of "$wpid")
check "park-hook: its runner is a child process of watch (${runner:-none})" test -n "$runner"

# A child: no limit anywhere, so not guarded, and said so.
mkdir "$parent/c1"
check "a child, and no limit in force: not guarded, for want of a limit" \
    wait_grep "$tmp/err" '"message":"[^"]*/c1: no limit \(no user.memguard.limit'

# reload WANT_OK: sends SIGHUP, waits for the reload event it brings and for
# READY=1; true if the event's "ok" is WANT_OK.  The lines after the
# signal in $tmp/new, the notifications in $tmp/nnew.
reload() {
    local from_err from_n before i=0
    from_err=$(wc -l <"$tmp/err")
    from_n=$(wc -l <"$tmp/notify.out")
    before=$(python3 -c 'import time; print(int(time.monotonic() * 1e6))')
    echo "$before" >"$tmp/before"
    kill -HUP "$wpid"
    while [ $i -lt 100 ]; do
        lines_after "$tmp/err" "$from_err" >"$tmp/new"
        lines_after "$tmp/notify.out" "$from_n" >"$tmp/nnew"
        grep -q '"event":"reload"' "$tmp/new" && grep -q '^READY=1' "$tmp/nnew" && break
        sleep 0.1
        i=$((i + 1))
    done
    grep -q "\"event\":\"reload\",.*\"ok\":$1}" "$tmp/new"
}
has_new() { grep -qE -- "$1" "$tmp/new"; }

# A good drop-in: the limit it gives is in force (the child's guard is now
# tried, and fails on the missing controller instead).
printf 'limit = 64M\n' >"$tmp/etc/watch.conf.d/50-limit.conf"
check "a good drop-in: the reload succeeds" reload true
check "  RELOADING=1 with MONOTONIC_USEC=, then READY=1" \
    grep -qE '^RELOADING=1\|MONOTONIC_USEC=[0-9]+\|' "$tmp/nnew"
mono=$(sed -n 's/^RELOADING=1|MONOTONIC_USEC=\([0-9]*\)|.*/\1/p' "$tmp/nnew" | head -1)
check "  MONOTONIC_USEC= is CLOCK_MONOTONIC, taken after the request (${mono:-none} >= $(cat "$tmp/before"))" \
    test "${mono:-0}" -ge "$(cat "$tmp/before")"
check "  READY=1 after it" sh -c "sed -n '/^RELOADING=1/,\$p' '$tmp/nnew' | grep -q '^READY=1|STATUS=guarding 0 cgroups\$'"
check "  the drop-in's limit is in force: the child is tried (no memory controller)" \
    has_new '"message":"[^"]*/c1 \(no memory controller'

# A bad drop-in: the reload fails, says where, and the last good settings stay.
printf 'limits = 1G\n' >"$tmp/etc/watch.conf.d/70-bad.conf"
check "a bad drop-in: the reload fails" reload false
check "  an error names the drop-in and its line" has_new '"message":"[^"]*/70-bad.conf: line 1: unknown key \\"limits\\""'
check "  STATUS= says the reload failed, why, and that the last good config is in force" \
    grep -qE '^READY=1\|STATUS=guarding 0 cgroups; reload failed, the last good config is in force: [^|]*70-bad.conf: line 1: unknown key' "$tmp/nnew"
check "  the last good limit stays in force (the child is tried again, not refused for want of a limit)" \
    sh -c "has_new() { grep -qE -- \"\$1\" '$tmp/new'; }; has_new '/c1 \\(no memory controller' && ! has_new '/c1: no limit'"
# Removing the limit's drop-in changes nothing while the set is bad.
rm "$tmp/etc/watch.conf.d/50-limit.conf"
check "still bad, the limit's drop-in gone: the reload fails again" reload false
check "  the last good limit still in force" sh -c "! grep -q '/c1: no limit' '$tmp/new'"
check "watch keeps running through failed reloads" kill -0 "$wpid"

# Fixed: the files as they are now, without a limit.
rm "$tmp/etc/watch.conf.d/70-bad.conf"
check "fixed: the reload succeeds" reload true
check "  the files as they are: the limit removed goes back to none" has_new '"message":"[^"]*/c1: no limit'

# A start-only key changed: said, kept.
printf 'json = no\n' >"$tmp/etc/watch.conf.d/60-json.conf"
check "a start-only key changed: the reload succeeds" reload true
check "  and says the value in force stays until a restart" \
    has_new '"message":"--config [^"]*: json changed: watch reads it at start only'
check "  the output stays JSON" has_new '^\{"event":"reload",.*"ok":true'
rm "$tmp/etc/watch.conf.d/60-json.conf"
printf 'park-hook = /bin/false\npark-timeout = 5s\n' >"$tmp/etc/watch.conf.d/60-park.conf"
check "park-hook changed, park-timeout set: the reload succeeds" reload true
check "  park-hook changed is said: read at start only" \
    has_new '"message":"--config [^"]*: park-hook changed: watch reads it at start only'
check "  park-timeout is taken, no word of it" sh -c "! grep -q 'park-timeout' '$tmp/new'"
printf 'park-timeout = 5s\n' >"$tmp/etc/watch.conf.d/60-park.conf"
printf 'parent = %s\njson = yes\n' "$parent" >"$conf"
check "park-hook gone from the files, its timeout left: the reload fails (a timeout needs a hook)" reload false
check "  and says why" has_new 'park-timeout without park-hook'
printf 'parent = %s\njson = yes\npark-hook = /bin/true\n' "$parent" >"$conf"
rm "$tmp/etc/watch.conf.d/60-park.conf"

kill -TERM "$wpid"
wait "$wpid"
check "SIGTERM: exit 0" test $? = 0
check "STOPPING=1" wait_grep "$tmp/notify.out" '^STOPPING=1$'
gone() { local i=0; while [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status"; }
check "the park hook's runner ends with watch" gone "${runner:-0}"
rmdir "$parent/c1" 2>/dev/null

# ---- stderr the journal: entries sent natively, in a private /run.
if ! "$tc" journal-detect 2>/dev/null | grep -qx native; then
    ok "journal entries # SKIP built without libsystemd (-Djournal): lines on stderr as ever"
elif [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v python3 >/dev/null; then
    ok "journal entries # SKIP needs root, unshare(1) and python3 (a private /run for the journal's socket)"
else
    printf 'parent = %s\nlimit = 64M\n' "$parent" >"$conf"
    cat >"$tmp/listen.py" <<'EOF'
# The journal's end of the native protocol: each datagram an entry of
# "KEY=value" lines (no value here holds a newline), written as one JSON
# object a line.
import json, os, socket, sys
path, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.makedirs(os.path.dirname(path), exist_ok=True)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(seconds)
with open(out, "a") as f:
    print("listening", file=f, flush=True)
    try:
        while True:
            data = s.recv(1 << 20)
            entry = dict(l.split("=", 1) for l in data.decode("utf-8", "replace").split("\n") if "=" in l)
            print(json.dumps(entry), file=f, flush=True)
    except socket.timeout:
        pass
EOF
    # One shell in a private mount namespace: its /run is a tmpfs of its own.
    unshare -m --propagation private sh -c '
        mount -t tmpfs tmpfs /run || exit 3
        python3 "$1/listen.py" /run/systemd/journal/socket "$1/journal.out" 15 &
        i=0; while ! grep -q listening "$1/journal.out" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        exec 2>"$1/jerr"
        JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) "$2" watch --config "$3" &
        w=$!
        sleep 1
        mkdir "$4/j1"
        sleep 0.5
        kill -HUP $w
        sleep 0.5
        kill -TERM $w
        wait $w
        echo "watch exited $?" >"$1/jexit"
        rmdir "$4/j1"
        kill %1 2>/dev/null
        wait
    ' sh "$tmp" "$mg" "$conf" "$parent" 2>"$tmp/unshare.err"
    st=$?
    if [ "$st" = 3 ] || ! grep -q listening "$tmp/journal.out" 2>/dev/null; then
        ok "journal entries # SKIP no private /run here: $(head -1 "$tmp/unshare.err")"
    else
        check "journal: watch exits 0" grep -qx 'watch exited 0' "$tmp/jexit"
        check "journal: nothing on stderr, the journal's stream" test ! -s "$tmp/jerr"
        python3 - "$tmp/journal.out" "$parent" >"$tmp/jcheck" 2>&1 <<'EOF'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
parent = sys.argv[2]
def find(**want):
    return [e for e in entries if all(e.get(k) == v for k, v in want.items())]
errors = []
def need(what, cond):
    print(("ok " if cond else "FAIL ") + what)
    if not cond:
        errors.append(what)
need("every entry has PRIORITY=, MESSAGE= and SYSLOG_IDENTIFIER=memguard",
     entries and all("PRIORITY" in e and "MESSAGE" in e and e.get("SYSLOG_IDENTIFIER") == "memguard" for e in entries))
child = find(MEMGUARD_EVENT="error", MESSAGE_ID="3c1f1815cf0942e2a36c6890df777d95", PRIORITY="3", MEMGUARD_WHAT="watch")
need("the child's error: PRIORITY=3, the error MESSAGE_ID, MEMGUARD_WHAT=, ERRNO=",
     any(parent + "/j1" in e.get("MEMGUARD_MESSAGE", "") and e.get("ERRNO") == "2" for e in child))
reload = find(MEMGUARD_EVENT="reload", MESSAGE_ID="f3e1546f8b0e4305b1c57e079ed57519", MEMGUARD_OK="true")
need("the reload: its MESSAGE_ID, MEMGUARD_OK=true, PRIORITY=6", any(e["PRIORITY"] == "6" for e in reload))
need("the reload's MESSAGE= is the text line", any(e["MESSAGE"].startswith("memguard: reloaded ") for e in reload))
need("a note at exit: PRIORITY=5, no MESSAGE_ID",
     any(e["MESSAGE"].startswith("memguard: stopping") and e["PRIORITY"] == "5" and "MESSAGE_ID" not in e
         for e in entries))
sys.exit(1 if errors else 0)
EOF
        st=$?
        sed 's/^/# /' "$tmp/jcheck"
        check "journal: entries with their PRIORITY=, MESSAGE_ID= and fields, from the confined writer" test $st = 0
    fi
fi

echo "1..$n"
[ "$failed" = 0 ]
