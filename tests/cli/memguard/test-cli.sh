#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The memguard command on any host (no cgroup v2 needed): help and version,
# exit 2 with exactly one line on stderr for bad arguments, clear errors for
# things that are not cgroups; watch's configuration (`memguard config-parse`:
# a key for every flag, the drop-ins, errors naming the file and line); the
# size parser and JSON escaping, the guard options watch makes of its flags
# and config, and the event lines, through memguard-test-commands (not
# installed).  TAP on stdout.
#
#   tests/cli/memguard/test-cli.sh build/tools/memguard/memguard build/tools/memguard/memguard-test-commands
set -u

mg=${1:?usage: test-cli.sh PATH-TO-memguard PATH-TO-memguard-test-commands}
tc=${2:?usage: test-cli.sh PATH-TO-memguard PATH-TO-memguard-test-commands}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diag() { sed 's/^/# /' "$@"; }

# run EXPECTED_STATUS ARGS...: runs memguard, output in $tmp/out and $tmp/err
run() {
    local want=$1
    shift
    "$mg" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    status=$?
    [ "$status" = "$want" ]
}

# Exit 0, something on stdout, nothing on stderr.
expect_ok() {
    local desc=$1
    shift
    if run 0 "$@" && [ -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; then
        ok "$desc"
    else
        not_ok "$desc (status $status)"
        diag "$tmp/out" "$tmp/err"
    fi
}

# Exit STATUS with exactly one line on stderr (matching PATTERN) and
# nothing on stdout.
expect_error() {
    local want=$1 pattern=$2 desc=$3
    shift 3
    if run "$want" "$@" && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
        grep -q -- "$pattern" "$tmp/err"; then
        ok "$desc: $(cat "$tmp/err")"
    else
        not_ok "$desc (status $status, want $want and one line matching '$pattern')"
        diag "$tmp/out" "$tmp/err"
    fi
}

echo "TAP version 13"

# ---- help and version
expect_ok "--help exits 0" --help
grep -q '^usage: memguard COMMAND' "$tmp/out" && ok "--help prints the usage" || not_ok "--help prints the usage"
expect_ok "help exits 0" help
expect_ok "run --help exits 0" run --help
grep -q 'run --limit SIZE' "$tmp/out" && ok "run --help shows run's usage" || not_ok "run --help shows run's usage"
# Each command's --help: its usage, one line of what it does and every flag
# with its meaning and default, not the overview of every command.
help_flags() { # COMMAND: the long options it takes
    case $1 in
        run) echo limit high max parent json dry-run pre-kill-defer ;;
        watch) echo limit parent config metrics metrics-interval metrics-cgroups mlock json dry-run pre-kill-defer park-hook \
            park-timeout tick margin \
            stall-window stall-pressure lend-deadline kill-wait post-kill-holdoff refault-window refault-mapped-window \
            reclaim-dose reclaim-cgroup reclaim-some reclaim-full reclaim-windows reclaim-cooldown reclaim-headroom ;;
        stat) echo limit json ;;
        demo) echo kernel native ;;
    esac
}
for cmd in run watch config-parse stat demo; do
    expect_ok "$cmd --help exits 0" "$cmd" --help
    cp "$tmp/out" "$tmp/help"
    head -1 "$tmp/help" | grep -q "^usage: memguard $cmd " && ok "$cmd --help starts with its usage" ||
        not_ok "$cmd --help starts with its usage"
    grep -q -e '^Commands:' -e 'Guards memory actors' -e '^  help, --help' "$tmp/help" &&
        not_ok "$cmd --help is not the overview" || ok "$cmd --help is not the overview"
    # the usage, a blank line, one line of description, a blank line
    awk 'NF == 0 && !b { b = NR } b && NR == b + 1 { d = NF > 0 } b && NR == b + 2 { e = NF == 0 } END { exit !(d && e) }' \
        "$tmp/help" && ok "$cmd --help: one line of what it does under the usage" ||
        not_ok "$cmd --help: one line of what it does under the usage"
    # a flag's block: "  --flag ..." and its indented lines, up to the next flag
    for flag in $(help_flags "$cmd"); do
        block=$(awk -v f="  --$flag" 'index($0, f) == 1 && (length($0) == length(f) || substr($0, length(f) + 1, 1) == " ") \
            { on = 1; print; next } on && /^        / { print; next } { on = 0 }' "$tmp/help")
        if [ "$(printf '%s\n' "$block" | wc -l)" -ge 2 ] && printf '%s' "$block" | tr '\n' ' ' | grep -q '(default: '; then
            ok "$cmd --help: --$flag with its meaning and default"
        else
            not_ok "$cmd --help: --$flag with its meaning and default"
            printf '%s\n' "$block" | sed 's/^/# /'
        fi
    done
    cmp -s "$tmp/help" <("$mg" help "$cmd") && ok "help $cmd is $cmd --help" || not_ok "help $cmd is $cmd --help"
done
"$mg" watch --help >"$tmp/help"
for flag in stall-window lend-deadline kill-wait refault-window refault-mapped-window; do
    awk -v f="  --$flag " 'index($0, f) == 1 { on = 1; next } on && /^        / { print; next } { on = 0 }' "$tmp/help" |
        tr '\n' ' ' | tr -s ' ' | grep -q 'default: tuned to the limit, watch.conf(5)' &&
        ok "watch --help: --$flag's default is tuned to the limit" ||
        not_ok "watch --help: --$flag's default is tuned to the limit"
done
awk '{ if (length($0) > 80) { print; bad = 1 } } END { exit bad }' "$tmp/help" && ok "watch --help fits 80 columns" ||
    not_ok "watch --help fits 80 columns"
expect_ok "--version exits 0" --version
grep -qE '^memguard [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" && ok "--version prints 'memguard X.Y.Z'" ||
    not_ok "--version prints 'memguard X.Y.Z'"

# ---- bad arguments: exit 2, one line
expect_error 2 'missing command' "no arguments"
expect_error 2 "unknown command 'frobnicate'" "bad subcommand" frobnicate
expect_error 2 'unknown option --frobnicate' "bad global option" --frobnicate
expect_error 2 '--limit 64Q: not a size' "run: bad size" run --limit 64Q -- true
expect_error 2 '--high 64MB: not a size' "run: SI-looking size refused" run --limit 64M --high 64MB -- true
expect_error 2 'too large' "run: size overflow" run --limit 99999999999T -- true
expect_error 2 'missing --limit' "run: missing --limit" run -- true
expect_error 2 'missing command' "run: no command" run --limit 64M
expect_error 2 'missing command' "run: no command after --" run --limit 64M --
expect_error 2 'unknown option --frob' "run: unknown option" run --frob --limit 64M -- true
expect_error 2 'option --limit needs a value' "run: option without its value" run --limit
expect_error 2 'missing --limit' "watch: missing --limit" watch /sys/fs/cgroup
expect_error 2 'missing CGROUP' "watch: missing CGROUP" watch --limit 64M
expect_error 2 'not a size' "watch: bad size" watch --limit lots /sys/fs/cgroup
expect_error 2 'missing CGROUP' "stat: missing CGROUP" stat
expect_error 2 'one CGROUP only' "stat: two cgroups" stat a b
expect_error 2 'not a size' "stat: bad size" stat --limit 12x "$tmp"
# the limit before the path: a usage error whatever the path is
expect_error 2 'must be above 0 bytes' "stat: --limit 0 is refused before the path" stat --limit 0 "$tmp/nonexistent"
expect_error 2 'must be above 0 bytes' "stat: --limit 0% is refused before the path" stat --limit 0% "$tmp/nonexistent"
expect_error 2 'not a size' "stat: a bad --limit before a plain directory" stat --limit 12x "$tmp"
expect_error 1 'No such file' "stat: --limit 0.5% is a limit, the path is looked at" stat --limit 0.5% "$tmp/nonexistent"
expect_error 2 'one of 6.1, 6.12, 7' "demo: unknown kernel" demo --kernel 5.4
expect_error 2 "unexpected argument" "demo: stray argument" demo now

expect_error 2 'one or the other' "watch: --parent and a list" watch --parent /sys/fs/cgroup/x /sys/fs/cgroup/y
expect_error 2 'not a duration above 0' "watch: bad --tick" watch --limit 64M --tick 5x /sys/fs/cgroup
expect_error 2 'not a percentage' "watch: bad --stall-pressure" watch --limit 64M --stall-pressure 10 /sys/fs/cgroup
expect_error 2 'not a size or a percentage' "watch: bad --margin" watch --limit 64M --margin lots /sys/fs/cgroup
expect_error 2 '1 s or more' "watch: --metrics-interval too short" watch --limit 64M --metrics-interval 10ms /sys/fs/cgroup
expect_error 2 'metrics-cgroups some: not none, all or a number of cgroups' "watch: bad --metrics-cgroups" \
    watch --limit 64M --metrics-cgroups some /sys/fs/cgroup
expect_error 2 '1 ms to 60 s' "watch: --pre-kill-defer above 60 s" watch --limit 64M --pre-kill-defer 61s /sys/fs/cgroup
expect_error 2 '1 ms to 60 s' "watch: --pre-kill-defer not a duration" watch --limit 64M --pre-kill-defer soon /sys/fs/cgroup
expect_error 2 '1 ms to 60 s' "run: --pre-kill-defer of 0" run --limit 64M --pre-kill-defer 0 -- true
expect_error 2 'not a duration above 0' "watch: --tick past 2^64 us (wrapped to 4.4 s once)" watch --limit 64M --tick 307445734561.9m /sys/fs/cgroup
expect_error 2 '1 ms to 60 s' "run: --pre-kill-defer past 2^64 us" run --limit 64M --pre-kill-defer 307445734561.9m -- true
expect_error 1 'No such file' "watch: a missing --config" watch --config "$tmp/nonexistent.conf" /sys/fs/cgroup
# --park-hook: a shell-free command line, an absolute path first; --park-timeout's bounds and its need of a hook
expect_error 2 'park-hook save-vm: its first word is not an absolute path' "watch: --park-hook not an absolute path" \
    watch --limit 64M --park-hook save-vm /sys/fs/cgroup
expect_error 2 "not a shell's command line" "watch: --park-hook with a shell's pipe" \
    watch --limit 64M --park-hook '/usr/bin/save | tee' /sys/fs/cgroup
expect_error 2 "park-hook : empty" "watch: an empty --park-hook" watch --limit 64M --park-hook '' /sys/fs/cgroup
expect_error 2 '100 ms to 30 min' "watch: --park-timeout above 30 min" \
    watch --limit 64M --park-hook /bin/true --park-timeout 31m /sys/fs/cgroup
expect_error 2 '100 ms to 30 min' "watch: --park-timeout under 100 ms" \
    watch --limit 64M --park-hook /bin/true --park-timeout 50ms /sys/fs/cgroup
expect_error 2 'park-timeout without --park-hook' "watch: --park-timeout alone" \
    watch --limit 64M --park-timeout 10s /sys/fs/cgroup

# the reclaim actuator's flags: each value of its kind, and the rules that tie them
for bad in "dose lots:not a size above 0" "dose 0:not a size above 0" "dose 64MB:not a size above 0" \
    "dose 99999999999T:out of range" "headroom -1M:not a size above 0" "windows 9:not a whole number of windows, 1 to 8" \
    "windows 0:not a whole number of windows" "windows 2x:not a whole number of windows" \
    "some 2s:not a duration above 0 and at most 1s" "some 0:not a duration above 0 and at most 1s" \
    "full 1000001us:not a duration above 0 and at most 1s" "cooldown soon:not a duration above 0" "cooldown 0:not a duration above 0"; do
    flag=${bad%% *} rest=${bad#* } val=${rest%%:*} msg=${bad#*:}
    expect_error 2 "--reclaim-$flag $val: $msg" "watch: bad --reclaim-$flag $val" \
        watch --limit 64M --reclaim-dose 64M --reclaim-"$flag" "$val" /sys/fs/cgroup
done
expect_error 2 '--reclaim-cgroup : not a cgroup' "watch: an empty --reclaim-cgroup" \
    watch --limit 64M --reclaim-dose 64M --reclaim-cgroup "" /sys/fs/cgroup
for flag in "cgroup bg" "some 5ms" "full 1ms" "windows 2" "cooldown 30s" "headroom 16M"; do
    expect_error 2 "--reclaim-${flag% *} without --reclaim-dose" "watch: --reclaim-${flag% *} without --reclaim-dose" \
        watch --limit 64M --reclaim-$flag /sys/fs/cgroup
done
expect_error 2 '--reclaim-headroom with --reclaim-cgroup: the headroom rule doses the actor.s own cgroup only' \
    "watch: --reclaim-headroom with --reclaim-cgroup" \
    watch --limit 64M --reclaim-dose 8M --reclaim-headroom 16M --reclaim-cgroup bg /sys/fs/cgroup
for flag in "windows 2" "cooldown 30s"; do
    expect_error 2 "--reclaim-${flag% *} is of the pressure predicate, which --reclaim-headroom alone leaves off" \
        "watch: --reclaim-${flag% *} with --reclaim-headroom alone" \
        watch --limit 64M --reclaim-dose 8M --reclaim-headroom 16M --reclaim-$flag /sys/fs/cgroup
done
# taken: watch goes on to the path, which is not a cgroup
expect_error 1 'not a cgroup v2 directory' "watch: every --reclaim flag of the pressure predicate taken" \
    watch --limit 64M --reclaim-dose 64M --reclaim-cgroup bg --reclaim-some 5ms --reclaim-full 1ms \
    --reclaim-windows 2 --reclaim-cooldown 30s "$tmp"
expect_error 1 'not a cgroup v2 directory' "watch: --reclaim-headroom with --reclaim-some taken" \
    watch --limit 64M --reclaim-dose 8M --reclaim-headroom 16M --reclaim-some 5ms --reclaim-windows 2 "$tmp"
printf 'reclaim-dose = 8M\n' >"$tmp/reclaim.conf"
expect_error 1 'not a cgroup v2 directory' "watch: the config's reclaim-dose arms a --reclaim-headroom" \
    watch --limit 64M --config "$tmp/reclaim.conf" --reclaim-headroom 16M "$tmp"
printf 'reclaim-headroom = 16M\n' >"$tmp/reclaim.conf"
expect_error 1 "--config $tmp/reclaim.conf with the command line: reclaim-headroom without reclaim-dose" \
    "watch: the config's reclaim-headroom without a dose" watch --limit 64M --config "$tmp/reclaim.conf" "$tmp"

# ---- environment errors: clear, one line, non-zero
expect_error 1 'not a cgroup v2 directory' "stat on a plain directory" stat "$tmp"
expect_error 1 'No such file or directory' "stat on a missing path" stat "$tmp/nonexistent"
expect_error 1 'not a cgroup v2 directory' "watch on a plain directory" watch --limit 64M "$tmp"
expect_error 127 'command not found' "run: unknown command is 127" run --limit 64M -- memguard-no-such-command
touch "$tmp/plain"
expect_error 126 'not executable' "run: a non-executable file is 126" run --limit 64M -- "$tmp/plain"
if run 1 stat --json "$tmp"; then
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["event"] == "error", d' <"$tmp/err" &&
            ok "stat --json: the error is a JSON object" || not_ok "stat --json: the error is a JSON object"
    else
        grep -q '^{"event":"error",.*}$' "$tmp/err" && ok "stat --json: the error is a JSON object" ||
            not_ok "stat --json: the error is a JSON object"
    fi
else
    not_ok "stat --json on a plain directory exits 1 (status $status)"
fi

# stat on a cgroup without the memory controller names the file it missed,
# whatever the limit: a fixture directory with cgroup.procs only (through
# memguard-test-commands, past the cgroup2 check), and a real cgroup v2
# directory without memory.current where this host has one (a hybrid host's
# unified mount, the root of a pure v2 one).
mkdir "$tmp/nomem" && touch "$tmp/nomem/cgroup.procs"
for lim in "" 64M; do
    "$tc" stat-dir "$tmp/nomem" $lim >"$tmp/out" 2>"$tmp/err"
    st=$?
    if [ "$st" = 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
        grep -q 'no memory.current: the memory controller is not enabled' "$tmp/err"; then
        ok "stat of a fixture without memory.current${lim:+, --limit $lim}: $(cat "$tmp/err")"
    else
        not_ok "stat of a fixture without memory.current${lim:+, --limit $lim} (status $st)"
        diag "$tmp/out" "$tmp/err"
    fi
done
nomem=
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
    if [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ] && [ -e "$d/cgroup.procs" ] && [ ! -e "$d/memory.current" ]; then
        nomem=$d
        break
    fi
done
if [ -n "$nomem" ]; then
    expect_error 1 'no memory.current: the memory controller is not enabled' \
        "stat on $nomem (no memory controller)" stat "$nomem"
    expect_error 1 'no memory.current: the memory controller is not enabled' \
        "stat --limit on $nomem (no memory controller)" stat --limit 64M "$nomem"
else
    ok "stat on a cgroup v2 directory without memory.current # SKIP none on this host"
fi

# ---- the size parser: INPUT [PERCENT_BASE] -> BYTES, or "error"
while read -r input base want; do
    [ -z "$input" ] && continue
    if [ "$base" = - ]; then args=("$input"); else args=("$input" "$base"); fi
    "$tc" size-parse "${args[@]}" >"$tmp/out" 2>"$tmp/err"
    status=$?
    got=$(cut -d' ' -f1 <"$tmp/out")
    if [ "$want" = error ]; then
        if [ "$status" = 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ]; then
            ok "size '$input' is refused"
        else
            not_ok "size '$input' is refused (status $status, got '$got')"
        fi
    elif [ "$status" = 0 ] && [ "$got" = "$want" ]; then
        ok "size '$input'${base/#-/} = $want"
    else
        not_ok "size '$input' base $base: want $want, got '$got' (status $status)"
        diag "$tmp/err"
    fi
done <<'EOF'
0                       -            0
1                       -            1
67108864                -            67108864
512B                    -            512
1K                      -            1024
1k                      -            1024
64M                     -            67108864
64m                     -            67108864
64Mi                    -            67108864
64MiB                   -            67108864
2G                      -            2147483648
1T                      -            1099511627776
1Ti                     -            1099511627776
1.5G                    -            1610612736
0.5K                    -            512
0.1K                    -            102
1.0000000001K           -            1024
16777215.999999T        -            18446744073708452104
18446744073709551615    -            18446744073709551615
max                     -            18446744073709551615
18446744073709551616    -            error
16777216T               -            error
99999999999999999999999 -            error
1.5                     -            error
64MB                    -            error
64KB                    -            error
64Mib                   -            error
64MIB                   -            error
64iB                    -            error
x                       -            error
-1                      -            error
+1                      -            error
.5M                     -            error
5.M                     -            error
1e6                     -            error
64M%                    -            error
Max                     -            error
90%                     -            error
90%                     64M          60397977
100%                    64M          67108864
12.5%                   1000         125
150%                    1G           1610612736
0%                      64M          0
0.1%                    1M           1048
90%x                    64M          error
%                       64M          error
1000000000%             64M          error
EOF

# ---- watch's config file: what a file gives, and its errors with the line
# (`memguard config-parse`: one line on stderr, exit 1)
config() { # DESCRIPTION WANT-OUTPUT-OR-error:PATTERN TEXT
    printf '%s' "$3" >"$tmp/watch.conf"
    "$mg" config-parse "$tmp/watch.conf" >"$tmp/out" 2>"$tmp/err"
    st=$?
    case $2 in
        error:*)
            if [ $st = 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
                grep -q -- "${2#error:}" "$tmp/err"; then ok "config: $1: $(cat "$tmp/err")"
            else not_ok "config: $1 (status $st, want an error matching '${2#error:}')"; diag "$tmp/out" "$tmp/err"; fi ;;
        *)
            if [ $st = 0 ] && [ "$(cat "$tmp/out")" = "$2" ]; then ok "config: $1"
            else not_ok "config: $1: want '$2', got '$(cat "$tmp/out")' (status $st)"; diag "$tmp/err"; fi ;;
    esac
}
config "empty" "" ""
config "comments and blank lines" "" $'# a comment\n\n   \n\t# another\n'
config "every key" "$(printf '%s\n' 'limit 268435456' 'tick 250000' 'margin 625%' 'stall-window 3000000' \
    'stall-pressure 1000' 'lend-deadline 30000000' 'kill-wait 5000000' 'post-kill-holdoff 2250000' \
    'refault-window 20000000' 'refault-mapped-window 8000000')" \
    $'limit = 256M\ntick=250ms\nmargin = 6.25%\nstall-window = 3s\nstall-pressure = 10%\nlend-deadline = 30s\nkill-wait = 5s\npost-kill-holdoff = 2.25s\nrefault-window = 20s\nrefault-mapped-window = 8000ms\n'
config "a margin in bytes, no final newline, CRLF" "margin 16777216" $'margin = 16M\r'
config "durations: us, plain seconds, minutes" "$(printf '%s\n' 'tick 500' 'lend-deadline 90000000' 'kill-wait 2000000')" \
    $'tick = 500us\nkill-wait = 2\nlend-deadline = 1.5m\n'
config "an unknown key" "error:line 2: unknown key \"limits\"" $'limit = 1G\nlimits = 2G\n'
config "a key twice" "error:line 3: limit set twice" $'limit = 1G\n\nlimit = 2G\n'
config "no '='" "error:line 1: not \"key = value\"" $'limit 1G\n'
config "a bad size" "error:line 1: limit 1GB: not a size" $'limit = 1GB\n'
config "a zero limit" "error:line 1: limit 0: out of range" $'limit = 0\n'
config "a bad duration" "error:line 1: tick 5 minutes: not a duration" $'tick = 5 minutes\n'
config "a zero duration" "error:line 1: kill-wait 0s: not a duration above 0" $'kill-wait = 0s\n'
config "a pressure over 100 %" "error:line 1: stall-pressure 101%" $'stall-pressure = 101%\n'
config "a margin of the whole limit" "error:line 1: margin 100%: out of range" $'margin = 100%\n'
config "every reclaim key of the pressure predicate" "$(printf '%s\n' 'reclaim-dose 67108864' \
    'reclaim-cgroup /sys/fs/cgroup/background' 'reclaim-some 5000' 'reclaim-full 1000' 'reclaim-windows 4' \
    'reclaim-cooldown 30000000')" \
    $'reclaim-dose = 64M\nreclaim-cgroup = background\nreclaim-some = 5ms\nreclaim-full = 1000us\nreclaim-windows = 4\nreclaim-cooldown = 30s\n'
config "the headroom rule" "$(printf '%s\n' 'reclaim-dose 8388608' 'reclaim-headroom 16777216')" \
    $'reclaim-headroom = 16M\nreclaim-dose = 8M\n'
config "a reclaim cgroup in the mount, as it is but its trailing slash" \
    "$(printf '%s\n' 'reclaim-dose 1048576' 'reclaim-cgroup /sys/fs/cgroup/a b/c')" \
    $'reclaim-dose = 1M\nreclaim-cgroup = /sys/fs/cgroup/a b/c/\n'
config "a reclaim cgroup from the mount's root" "$(printf '%s\n' 'reclaim-dose 1048576' 'reclaim-cgroup /sys/fs/cgroup/bg')" \
    $'reclaim-dose = 1M\nreclaim-cgroup = //bg\n'
config "the largest reclaim stall, in windows of a second" \
    "$(printf '%s\n' 'reclaim-dose 1048576' 'reclaim-some 1000000' 'reclaim-windows 8')" \
    $'reclaim-dose = 1M\nreclaim-some = 1s\nreclaim-windows = 8\n'
config "the headroom rule with a reclaim cgroup" \
    "error:reclaim-headroom with reclaim-cgroup: the headroom rule doses the actor.s own cgroup only" \
    $'reclaim-dose = 1M\nreclaim-headroom = 1M\nreclaim-cgroup = bg\n'
# config-parse checks the keys that go together as watch does with none on
# its command line (the unit's case); a dose from the command line: options below
config "a reclaim key alone: refused as watch without the flag would" \
    "error:watch.conf and its drop-ins: reclaim-headroom without reclaim-dose" $'reclaim-headroom = 1M\n'
config "a zero dose" "error:line 1: reclaim-dose 0: not a size above 0" $'reclaim-dose = 0\n'
config "a dose in SI units" "error:line 2: reclaim-dose 64MB: not a size above 0" $'\nreclaim-dose = 64MB\n'
config "a stall longer than a window" "error:line 2: reclaim-some 1.5s: not a duration above 0 and at most 1s" \
    $'reclaim-dose = 1M\nreclaim-some = 1.5s\n'
config "too many windows" "error:line 1: reclaim-windows 9: not a whole number of windows, 1 to 8" $'reclaim-windows = 9\n'
config "a negative window count" "error:line 1: reclaim-windows -1: not a whole number" $'reclaim-windows = -1\n'
config "an empty reclaim cgroup" "error:line 1: reclaim-cgroup : not a cgroup" $'reclaim-cgroup =\n'
config "metrics-cgroups: a number" "metrics-cgroups 25" $'metrics-cgroups = 25\n'
config "metrics-cgroups: none is 0" "metrics-cgroups 0" $'metrics-cgroups = none\n'
config "metrics-cgroups: all" "metrics-cgroups 18446744073709551615" $'metrics-cgroups = all\n'
config "metrics-cgroups: a negative count" "error:line 1: metrics-cgroups -1: not none, all or a number of cgroups" \
    $'metrics-cgroups = -1\n'
config "metrics-cgroups: past a million" "error:line 1: metrics-cgroups 1000001: not none, all or a number" \
    $'metrics-cgroups = 1000001\n'

config "how watch runs: every other key" "$(printf '%s\n' 'parent sandboxes.slice' 'metrics /var/lib/m.prom' \
    'metrics-interval 30000000' 'mlock yes' 'json no' 'dry-run yes' 'pre-kill-defer 2500000')" \
    $'parent = sandboxes.slice\nmetrics = /var/lib/m.prom\nmetrics-interval = 30s\nmlock = on\njson = false\ndry-run = 1\npre-kill-defer = 2.5s\n'
config "a boolean that is not one" "error:line 1: json maybe: not a boolean (yes or no)" $'json = maybe\n'
config "a metrics interval under a second" "error:line 2: metrics-interval 10ms: not a duration of 1 s or more" \
    $'\nmetrics-interval = 10ms\n'
config "a pre-kill deferral past 60 s" "error:line 1: pre-kill-defer 61s: not a duration of 1 ms to 60 s" \
    $'pre-kill-defer = 61s\n'
config "an empty parent" "error:line 1: parent : empty" $'parent =\n'
config "parking: the hook as given, its timeout" \
    "$(printf '%s\n' 'park-hook /usr/lib/platform/save-vm --to  /var/snap' 'park-timeout 90000000')" \
    $'park-hook = /usr/lib/platform/save-vm --to  /var/snap\npark-timeout = 1.5m\n'
config "a park hook through a shell" "error:line 1: park-hook /bin/sh -c .save.: .'.: not a shell's command line" \
    $'park-hook = /bin/sh -c \'save\'\n'
config "a park timeout without a hook" "error:park-timeout without park-hook: parking is off until a hook is set" \
    $'park-timeout = 10s\n'
config "a park timeout past 30 min" "error:line 2: park-timeout 2h: not a duration of 100 ms to 30 min" \
    $'park-hook = /bin/true\npark-timeout = 2h\n'

# ---- one configuration: every flag of watch is a key of its config file,
# and every key a flag (--config and --help aside), so a flag added without
# its key, or a key without its flag, fails here.
"$mg" watch --help | sed -n 's/^  \(-h, \)\{0,1\}--\([a-z][a-z-]*\).*/\2/p' | sort -u >"$tmp/flags"
"$tc" config-keys | sort >"$tmp/keys"
grep -vxE 'config|help' "$tmp/flags" >"$tmp/flags.keyed"
if [ -s "$tmp/keys" ] && [ "$(wc -l <"$tmp/flags.keyed")" -ge 20 ] && cmp -s "$tmp/flags.keyed" "$tmp/keys"; then
    ok "every watch flag but --config and --help is a config key, and every key a flag ($(wc -l <"$tmp/keys") keys)"
else
    not_ok "every watch flag but --config and --help is a config key, and every key a flag"
    diff "$tmp/flags.keyed" "$tmp/keys" | sed 's/^/# flags vs keys: /'
fi
missing=
while read -r key; do
    printf '%s = ?\n' "$key" >"$tmp/one.conf"
    "$mg" config-parse "$tmp/one.conf" >/dev/null 2>"$tmp/err"
    grep -q 'unknown key' "$tmp/err" && missing="$missing $key"
    "$mg" watch --"$key" 2>&1 </dev/null | grep -q 'unknown option' && missing="$missing --$key"
done <"$tmp/flags.keyed"
[ -z "$missing" ] && ok "config-parse knows each flag's key, watch each key's flag" ||
    not_ok "config-parse knows each flag's key, watch each key's flag (missing:$missing)"

# ---- drop-ins: FILE.d/*.conf after FILE, in lexical order, a later file winning
mkdir -p "$tmp/d"
printf 'limit = 1G\ntick = 100ms\nstall-pressure = 10%%\n' >"$tmp/d/watch.conf"
mkdir "$tmp/d/watch.conf.d"
printf 'limit = 2G\nmargin = 8M\n' >"$tmp/d/watch.conf.d/50-site.conf"
printf 'limit = 3G\n' >"$tmp/d/watch.conf.d/10-vendor.conf"
printf 'tick = 200ms\n' >"$tmp/d/watch.conf.d/90-local.conf"
printf 'limit = 9G\n' >"$tmp/d/watch.conf.d/99-ignored.conf.bak"
printf 'limit = 9G\n' >"$tmp/d/watch.conf.d/.99-hidden.conf"
mkdir "$tmp/d/watch.conf.d/95-dir.conf"
ln -s 50-site.conf "$tmp/d/watch.conf.d/60-link.conf"
want=$(printf '%s\n' 'limit 2147483648' 'tick 200000' 'margin 8388608' 'stall-pressure 1000')
run 0 config-parse "$tmp/d/watch.conf"
if [ "$(cat "$tmp/out")" = "$want" ] && [ ! -s "$tmp/err" ]; then
    ok "drop-ins: read after the file in lexical order, later keys win; not *.conf, hidden and directories skipped"
else
    not_ok "drop-ins: read after the file in lexical order, later keys win (status $status)"
    diag "$tmp/out" "$tmp/err"
fi
printf 'limit = 4G\nlimits = 5G\n' >"$tmp/d/watch.conf.d/70-bad.conf"
expect_error 1 "^memguard config-parse: $tmp/d/watch.conf.d/70-bad.conf: line 2: unknown key \"limits\"$" \
    "drop-ins: a bad drop-in refused, with its path and line" config-parse "$tmp/d/watch.conf"
printf 'limit = 4G\nlimit = 5G\n' >"$tmp/d/watch.conf.d/70-bad.conf"
expect_error 1 "70-bad.conf: line 2: limit set twice" "drop-ins: a key twice within one drop-in" \
    config-parse "$tmp/d/watch.conf"
rm "$tmp/d/watch.conf.d/70-bad.conf"
printf 'reclaim-headroom = 16M\n' >"$tmp/d/watch.conf.d/80-headroom.conf"
expect_error 1 "watch.conf and its drop-ins: reclaim-headroom without reclaim-dose" \
    "drop-ins: the keys that go together are checked on the files merged" config-parse "$tmp/d/watch.conf"
printf 'reclaim-dose = 8M\n' >"$tmp/d/watch.conf"
run 0 config-parse "$tmp/d/watch.conf" && grep -qx 'reclaim-headroom 16777216' "$tmp/out" &&
    ok "drop-ins: a drop-in's key goes with the file's" || { not_ok "drop-ins: a drop-in's key goes with the file's"; diag "$tmp/err"; }
rm "$tmp/d/watch.conf"
expect_error 1 "$tmp/d/watch.conf: No such file or directory" "drop-ins without their file: refused" \
    config-parse "$tmp/d/watch.conf"
expect_error 2 'missing FILE' "config-parse: no FILE" config-parse
expect_error 2 'one FILE only' "config-parse: two FILEs" config-parse a b
expect_error 2 'unknown option --frob' "config-parse: an option" config-parse --frob

# ---- watch takes what its config gives as it takes its flags
printf 'limit = 64M\n' >"$tmp/w.conf"
expect_error 2 'missing CGROUP (or --parent DIR)' "watch: a config without a parent, and no CGROUP" \
    watch --config "$tmp/w.conf"
printf 'parent = %s\nlimit = 64M\n' "$tmp" >"$tmp/w.conf"
expect_error 1 "--parent $tmp: not a cgroup v2 directory" "watch: the config's parent" watch --config "$tmp/w.conf"
mkdir -p "$tmp/listed"
expect_error 1 "$tmp/listed: not a cgroup v2 directory" "watch: CGROUPs listed win over the config's parent" \
    watch --config "$tmp/w.conf" "$tmp/listed"
printf 'limit = 64M\njson = yes\n' >"$tmp/w.conf"
expect_error 1 '^{"event":"error",.*not a cgroup v2 directory' "watch: the config's json = yes" \
    watch --config "$tmp/w.conf" "$tmp"
printf 'limit = 64M\nmetrics-interval = 10ms\n' >"$tmp/w.conf"
expect_error 1 "^memguard watch: $tmp/w.conf: line 2: metrics-interval 10ms: not a duration of 1 s or more$" \
    "watch: a bad key at start, named with its file and line" watch --config "$tmp/w.conf" "$tmp"

# ---- $JOURNAL_STREAM: stderr is the journal only where it is the stream named
: >"$tmp/stream"
: >"$tmp/elsewhere"
detect() { # JOURNAL_STREAM-VALUE: the first line journal-detect prints, stderr on $tmp/stream
    JOURNAL_STREAM=$1 "$tc" journal-detect 2>>"$tmp/stream" | head -1
}
[ "$(detect "$(stat -L -c %d:%i "$tmp/stream")")" = journal ] &&
    ok "journal: stderr is the journal where \$JOURNAL_STREAM names its device and inode" ||
    not_ok "journal: stderr is the journal where \$JOURNAL_STREAM names its device and inode"
[ "$(detect "$(stat -L -c %d:%i "$tmp/elsewhere")")" = stream ] &&
    ok "journal: inherited, naming another file: not the journal" ||
    not_ok "journal: inherited, naming another file: not the journal"
[ "$(detect '')" = stream ] && [ "$(detect "$(stat -L -c %d:%i "$tmp/stream")x")" = stream ] &&
    ok "journal: empty or malformed: not the journal" || not_ok "journal: empty or malformed: not the journal"

# ---- the guard options watch makes of its tuning flags and config for a
# cgroup of LIMIT, and whether the library takes them
# options DESCRIPTION STATUS EXPECTED ARGS...: `options ARGS` exits STATUS
# and prints each line of EXPECTED on stdout (or has it in its message)
options() {
    local desc=$1 want=$2 expect=$3 missing=
    shift 3
    "$tc" options "$@" >"$tmp/out" 2>"$tmp/err"
    st=$?
    while IFS= read -r line; do
        grep -qxF -- "$line" "$tmp/out" || grep -qF -- "$line" "$tmp/err" || missing="$missing [$line]"
    done <<<"$expect"
    if [ "$st" = "$want" ] && [ -z "$missing" ]; then
        ok "options: $desc"
    else
        not_ok "options: $desc (status $st, want $want; missing:$missing)"
        diag "$tmp/out" "$tmp/err"
    fi
}
options "no reclaim flag: the actuator is off" 0 "$(printf '%s\n' 'reclaim_dose_bytes 0' 'reclaim_cgroup (none)' \
    'reclaim_some_usec 0' 'reclaim_headroom_bytes 0' 'library takes them')" 256M
options "every reclaim flag of the pressure predicate" 0 "$(printf '%s\n' 'reclaim_dose_bytes 67108864' \
    'reclaim_cgroup /sys/fs/cgroup/background' 'reclaim_some_usec 5000' 'reclaim_full_usec 1000' 'reclaim_windows 4' \
    'reclaim_cooldown_usec 30000000' 'reclaim_headroom_bytes 0' 'library takes them')" \
    256M --reclaim-dose 64M --reclaim-cgroup /background --reclaim-some 5ms --reclaim-full 1ms --reclaim-windows 4 \
    --reclaim-cooldown 30s
printf 'reclaim-dose = 32M\nreclaim-headroom = 16M\ntick = 100ms\n' >"$tmp/reclaim.conf"
options "the config's reclaim keys, a flag winning over its dose" 0 "$(printf '%s\n' 'tick_usec 100000' \
    'reclaim_dose_bytes 50331648' 'reclaim_headroom_bytes 16777216' 'reclaim_some_usec 0' 'reclaim_cgroup (none)' \
    'library takes them')" 256M --config "$tmp/reclaim.conf" --reclaim-dose 48M
options "a headroom the limit leaves no room for: the library refuses it" 1 "$(printf '%s\n' \
    'reclaim_headroom_bytes 67108864' 'library refuses them: Invalid argument')" 64M --reclaim-dose 8M --reclaim-headroom 64M
printf 'reclaim-headroom = 16M\n' >"$tmp/headroom.conf"
options "the config's headroom armed by the command line's dose" 0 "$(printf '%s\n' 'reclaim_dose_bytes 8388608' \
    'reclaim_headroom_bytes 16777216' 'library takes them')" 256M --config "$tmp/headroom.conf" --reclaim-dose 8M
options "a headroom without a dose: refused before the library" 2 \
    "memguard options: --reclaim-headroom without --reclaim-dose" 256M --reclaim-headroom 16M
options "the config's headroom with a flag's reclaim cgroup" 1 \
    "with the command line: reclaim-headroom with reclaim-cgroup" 256M --config "$tmp/reclaim.conf" --reclaim-cgroup bg
options "a bad window count" 2 "memguard options: --reclaim-windows 9: not a whole number of windows, 1 to 8" \
    256M --reclaim-dose 64M --reclaim-windows 9
# parking: the guard's deadline is the kill wait (tuned: 2 s at 256 MiB), the hook's timeout, its grace
# (a quarter of the timeout, at most 2 s) and 2 s
options "no park hook: no park" 0 "$(printf '%s\n' 'park_deadline_usec 0' 'park_timeout_usec 0')" 256M
options "a park hook: its default timeout, the guard's deadline above it" 0 "$(printf '%s\n' \
    'kill_wait_usec 2000000' 'park_timeout_usec 30000000' 'park_deadline_usec 36000000' 'library takes them')" \
    256M --park-hook /usr/bin/save-vm
options "a 30 min timeout and a long kill wait: the deadline within the library's hour" 0 "$(printf '%s\n' \
    'park_timeout_usec 1800000000' 'park_deadline_usec 1864000000' 'library takes them')" \
    256M --park-hook /usr/bin/save-vm --park-timeout 30m --kill-wait 1m
printf 'park-hook = /usr/bin/save-vm\n' >"$tmp/park.conf"
options "the config's hook, the command line's timeout" 0 "$(printf '%s\n' 'park_timeout_usec 5000000' \
    'park_deadline_usec 10250000')" 256M --config "$tmp/park.conf" --park-timeout 5s

# ---- the reclaim event as a text line (its JSON: test-events-schema.py)
"$tc" event-sample >"$tmp/out" 2>"$tmp/err"
grep -qxF 'memguard: reclaim: /sys/fs/cgroup/sample/"actor": a dose of 64.0 MiB to /sys/fs/cgroup/sample/background on memory pressure (stalled some 12.0 15.3 20.1 ms, full 0.0 1.0 2.5 ms in 3 windows of a second): 60.0 MiB reclaimed in 85.2 ms, counted' \
    "$tmp/err" && ok "event: a pressure dose as a text line" || { not_ok "event: a pressure dose as a text line"; diag "$tmp/err"; }
grep -qxF 'memguard: reclaim: /sys/fs/cgroup/sample/"actor": a dose of 12.0 MiB to /sys/fs/cgroup/sample/"actor" on headroom (memory.current 250.0 MiB, file cache 40.0 MiB): 3.0 MiB reclaimed in 400.0 ms, not counted: Resource temporarily unavailable (the kernel took less than asked)' \
    "$tmp/err" && ok "event: a headroom dose cut short as a text line" ||
    { not_ok "event: a headroom dose cut short as a text line"; diag "$tmp/err"; }

# ---- a park's lines, in the order an operator reads them (their JSON: test-events-schema.py)
for line in \
    'memguard: park: /sys/fs/cgroup/sample/"actor": frozen instead of killed (overshoot): used 81920kB of limit 65536kB, anon 80896kB; frozen 10 ms after the freeze; park 3; the park hook runs, at most 30.0 s' \
    'memguard: park-hook: /sys/fs/cgroup/sample/"actor": park 3: the hook exited 0 (saved) after 2.1 s: killing it; its output ends "saved to /var/snap/3"' \
    'memguard: park-hook: /sys/fs/cgroup/sample/"actor": park 3: the hook exited 10 (thaw) after 0.8 s: thawing it at a limit of 512.0 MiB (xattr)' \
    'memguard: park-hook: /sys/fs/cgroup/sample/"actor": park 3: the hook timed out after 30.0 s (park-timeout 30.0 s): SIGTERM to its process group, then SIGKILL (at the hook'"'"'s exit, at most 2.0 s later): killing it; its output ends "copying page 81234 of 1" (of more)' \
    'memguard: park-hook: /sys/fs/cgroup/sample/"actor": park 4: the hook was cancelled after 34.0 s, its process group killed: the park ended first (deadline): nothing to do' \
    'memguard: park-hook: /sys/fs/cgroup/sample/"actor": park 5: the hook was not run: 256 hooks run already, the most at once: killing it' \
    'memguard: thaw: /sys/fs/cgroup/sample/"actor": park 3 ended after 2000 ms: thawed, guarded again (used 81920kB when parked, limit then 65536kB)'; do
    grep -qxF "$line" "$tmp/err" && ok "event: ${line:10:40}... as a text line" ||
        { not_ok "event: a park's text line: $line"; diag "$tmp/err"; }
done
grep -qF ', parked 33750ms (frozen), killed at the park'"'"'s deadline, verdict to empty' "$tmp/err" &&
    ok "event: a kill that ended a park says so in its record" ||
    { not_ok "event: a kill that ended a park says so in its record"; diag "$tmp/err"; }

# ---- JSON escaping: what must come out, and that it parses
check_json() {
    local desc=$1 input=$2 want=$3
    "$tc" json-escape "$input" >"$tmp/out" 2>"$tmp/err"
    local got
    got=$(cat "$tmp/out")
    if [ "$got" = "{\"s\":$want}" ]; then
        ok "json: $desc"
    else
        not_ok "json: $desc: want {\"s\":$want}, got $got"
    fi
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <"$tmp/out" &&
            ok "json: $desc parses" || not_ok "json: $desc parses"
    fi
}
check_json "plain" 'abc' '"abc"'
check_json "quote and backslash" 'a"b\c' '"a\"b\\c"'
check_json "newline and tab" $'a\nb\tc' '"a\nb\tc"'
check_json "control character" $'a\x01b\x1f' '"a\u0001b\u001f"'
check_json "UTF-8 kept" 'é€😀' '"é€😀"'
check_json "invalid UTF-8 replaced" $'a\xffb\xc3' '"a\ufffdb\ufffd"'
check_json "overlong encoding replaced" $'\xc0\xaf' '"\ufffd\ufffd"'
check_json "surrogate replaced" $'\xed\xa0\x80' '"\ufffd\ufffd\ufffd"'

echo "1..$n"
[ "$failed" = 0 ]
