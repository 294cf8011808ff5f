#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the raw outputs tools/bench/run keeps in RESULTS into markdown tables.

usage: report.py RESULTS

Inputs (each optional; a missing one leaves its table out):
  machine.txt                  key=value lines about the host and the build
  parse.native.txt             bench-parse "result" lines (ns per call)
  parse.callgrind.txt(.stdout) callgrind dump totals + the run's own lines
  tick.native.txt              bench-tick on fixtures (ns, preads, allocations)
  tick.callgrind.txt(.stdout)  instructions per tick
  tick.strace.txt(.stdout)     strace -f of a 200-tick run, marked per pair
  scale.native-N.txt           bench-scale on N fixture guards
  vm-KERNEL-N.txt              vm.sh output from the VM
  verdict-KERNEL.tap           the kernel suite's TAP
  snapshot-KERNEL.txt          bench-snapshot in the VM (one line per write and per
                               read of its restore cycles)
"""
import glob
import math
import os
import re
import sys
from collections import Counter, defaultdict

R = sys.argv[1] if len(sys.argv) > 1 else "."
MIB_ = 1 << 20


def path(name):
    return os.path.join(R, name)


def lines(name):
    try:
        with open(path(name), errors="replace") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def kv(line):
    d = {}
    for tok in line.split()[1:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            d[k] = v
    return d


def records(name, kind="result"):
    return [kv(l) for l in lines(name) if l.startswith(kind + " ")]


def num(s, default=None):
    try:
        return float(s)
    except (TypeError, ValueError):
        return default


def fmt(v, digits=0):
    if v is None:
        return "—"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def ratio(a, b, digits=1):
    if a is None or b is None or b == 0:
        return "—"
    return f"{a / b:.{digits}f}x"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def machine():
    d = {}
    for l in lines("machine.txt"):
        if "=" in l:
            k, v = l.split("=", 1)
            d[k] = v
    return d


out = []
targets = []
m = machine()
out.append("## Run")
out.append("")
out.append(table(["", ""], [
    ["date", m.get("date", "?")], ["commit", m.get("commit", "?")],
    ["host CPU", f"{m.get('cpu', '?')}, {m.get('cpus', '?')} cores (shared)"],
    ["host kernel", m.get("kernel", "?")], ["fixture file system", m.get("fixture_fs", "?")],
    ["compiler, build", f"{m.get('cc', '?')}, {m.get('buildtype', '?')}"],
    ["callgrind", m.get("valgrind", "?")],
]))
out.append("")

# ---- 1a: parsers ------------------------------------------------------
cg_iters = None
for e in records("parse.callgrind.txt.stdout", "env"):
    cg_iters = num(e.get("iters"))
cg = {r["name"]: num(r["ir"]) for r in records("parse.callgrind.txt", "callgrind")}
parse = records("parse.native.txt")
if parse:
    out.append("## 1a. Parsers and policy alone (native, no I/O)")
    out.append("")
    rows = []
    ipc = {}
    for r in parse:
        ir = cg.get("parse:" + r["case"])
        per = ir / cg_iters if ir is not None and cg_iters else None
        ipc[r["case"]] = per
        rows.append([f"`{r['case']}`", r["bytes"], fmt(per), fmt(num(r["ns_per_call"]), 1)])
    out.append(table(["case", "input bytes", "instructions / call (callgrind)", "ns / call (median)"], rows))
    out.append("")
    a, s, c = ipc.get("memstat_7x"), ipc.get("baseline_sscanf_memstat_7x"), ipc.get("baseline_scan_memstat_7x")
    out.append(f"memory.stat (7.x, busy): memguard's parser {fmt(a)} instructions; the stdio baseline's "
               f"sscanf per line {fmt(s)} ({ratio(s, a)} memguard's); the openat baseline's memchr/strncmp "
               f"scan of 4 keys {fmt(c)} ({ratio(c, a, 2)} memguard's).")
    out.append("")

# ---- 1b/1d: ticks on fixture trees --------------------------------------
def strace_counts():
    """Syscalls per pair between the marks, without the harness's own."""
    res, cur, created, ticks = {}, None, set(), None
    for e in records("tick.strace.txt.stdout", "env"):
        ticks = num(e.get("ticks"))
    for l in lines("tick.strace.txt"):
        l = re.sub(r"^\d+\s+", "", l)
        mk = re.match(r'access\("/memguard-bench-mark/(.+)-(begin|end)"', l)
        if mk:
            cur = mk.group(1) if mk.group(2) == "begin" else None
            if cur:
                res[cur] = Counter()
            continue
        if cur is None:
            continue
        mc = re.match(r"(\w+)\((\d+)?", l)
        if not mc:
            continue
        name, fd = mc.group(1), mc.group(2)
        if "rchar" in l or "/proc/self/io" in l:
            continue  # the harness's reads of /proc/self/io
        if name in ("openat", "open") and "O_CREAT" in l:
            mr = re.search(r"= (\d+)$", l)
            if mr:
                created.add(mr.group(1))
            continue  # the harness rewriting fixture files between ticks
        if name in ("write", "close", "ftruncate") and fd in created:
            if name == "close":
                created.discard(fd)
            continue
        res[cur][name] += 1
    return res, ticks


def tick_tables(recs, cgr=None, strace=None, vs_label="memguard"):
    """One table of tick costs; ratios against memguard in the same mode."""
    mg = {r["mode"]: r for r in recs if r["actor"] == "memguard"}
    rows = []
    for r in recs:
        mode, actor = r["mode"], r["actor"]
        ns = num(r["ns_per_tick"])
        ir = None
        if cgr is not None:
            v = cgr[0].get(f"tick:{actor}:{mode}")
            ir = v / cgr[1] if v is not None and cgr[1] else None
        sc = "—"
        if strace is not None and strace[0].get(f"{actor}-{mode}") is not None and strace[1]:
            c = strace[0][f"{actor}-{mode}"]
            total = sum(c.values()) / strace[1]
            sc = f"{total:.2f} (" + ", ".join(f"{k} {v / strace[1]:.2g}" for k, v in c.most_common()) + ")"
        base = mg.get(mode)
        row = [actor, mode, fmt(num(r["preads_per_tick"]), 2) if actor == "memguard" else "—",
               fmt(num(r["opens_per_tick"]), 2), fmt(num(r["syscr_per_tick"]), 2)]
        if strace is not None:
            row.append(sc)
        row += [f"{fmt(num(r['allocs_per_tick']), 2)} ({fmt(num(r['alloc_bytes_per_tick']))} B)"]
        if cgr is not None:
            base_ir = None
            if base is not None:
                v = cgr[0].get(f"tick:memguard:{mode}")
                base_ir = v / cgr[1] if v is not None and cgr[1] else None
            row += [fmt(ir), ratio(ir, base_ir) if actor != "memguard" else ""]
        row += [fmt(ns, 0), ratio(ns, num(base["ns_per_tick"])) if base and actor != "memguard" else ""]
        rows.append(row)
    head = ["actor", "mode", "preads (seam)", "opens", "read syscalls (kernel count)"]
    if strace is not None:
        head.append("all syscalls (strace)")
    head.append("allocations")
    if cgr is not None:
        head += ["instructions", "instr. vs memguard"]
    head += ["ns", "time vs memguard"]
    return table(head, rows)


tick = records("tick.native.txt")
tick_ir = {}
if tick:
    cgi = None
    for e in records("tick.callgrind.txt.stdout", "env"):
        cgi = num(e.get("ticks"))
    cgt = {r["name"]: num(r["ir"]) for r in records("tick.callgrind.txt", "callgrind")}
    st = strace_counts() if lines("tick.strace.txt") else None
    out.append("## 1b, 1d. One tick per actor on fixture trees (native), per tick")
    out.append("")
    out.append(tick_tables(tick, (cgt, cgi) if cgt else None, st))
    out.append("")
    for k, v in cgt.items():
        if cgi:
            tick_ir[k] = v / cgi
    for e in records("tick.native.txt", "target"):
        pass

# ---- 1c: ticks in the VM -------------------------------------------------
vm_files = sorted(glob.glob(path("vm-*.txt")))
for f in vm_files:
    name = os.path.basename(f)
    recs = records(name)
    env = [e for e in records(name, "env") if e.get("bench") == "vm"]
    kern = env[0].get("kernel", "?") if env else "?"
    tr = [r for r in recs if r.get("bench") == "tick"]
    if not tr:
        continue
    out.append(f"## 1c. One tick per actor in the VM ({kern}, qemu TCG), per tick")
    out.append("")
    out.append("Times are emulated: compare ratios within a table, not with the native tables.")
    out.append("")
    for where, label in (("fixture", "fixture trees on the guest's tmpfs"), ("cgroup", "real cgroupfs")):
        w = [r for r in tr if r["where"] == where]
        if w:
            out.append(f"{label}:")
            out.append("")
            out.append(tick_tables(w))
            out.append("")
    fx = {(r["actor"], r["mode"]): num(r["ns_per_tick"]) for r in tr if r["where"] == "fixture"}
    cgv = {(r["actor"], r["mode"]): num(r["ns_per_tick"]) for r in tr if r["where"] == "cgroup"}
    rows = [[a, mo, ratio(cgv[(a, mo)], fx.get((a, mo)))] for (a, mo) in cgv if (a, mo) in fx]
    if rows:
        out.append("real cgroupfs vs tmpfs fixture, same actor and mode (time per tick):")
        out.append("")
        out.append(table(["actor", "mode", "cgroupfs / tmpfs"], rows))
        out.append("")
    tg = [kv(l) for l in lines(name) if l.startswith("target ")]
    if tg:
        out.append("What the guard saw at setup (both environments, in order): " + "; ".join(
            f"{t['mode']}: current {int(num(t['current_kib'], 0)) // 1024} MiB, used "
            f"{int(num(t['used_kib'], 0)) // 1024} MiB of {int(num(t['limit_kib'], 0)) // 1024} MiB, "
            f"{t['verdict']}" for t in tg) + ".")
        out.append("")

# ---- 2 and 5: scale and memory --------------------------------------------
scale_rows, sizeof = [], None
def add_scale(name, where_label):
    global sizeof
    for r in records(name):
        if r.get("bench") == "sizeof":
            sizeof = r
        if r.get("bench") == "scale-floor" and scale_rows:
            scale_rows[-1]["floor"] = r  # printed right after its set's run
        if r.get("bench") != "scale":
            continue
        lab = where_label + (" fixture trees" if r["where"] == "fixture" else " real cgroups")
        if num(r.get("align_ms"), 0):
            lab += f", what-if: ticks in {r['align_ms']} ms slots"
        scale_rows.append(r | {"label": lab})


for f in sorted(glob.glob(path("scale.native-*.txt")), key=lambda p: (int(re.findall(r"native-(\d+)", p)[0]), "align" in p)):
    add_scale(os.path.basename(f), "native,")
for f in vm_files:
    name = os.path.basename(f)
    env = [e for e in records(name, "env") if e.get("bench") == "vm"]
    add_scale(name, f"VM {env[0].get('kernel', '?') if env else '?'},")
skipped = []
for f in sorted(glob.glob(path("*.skipped"))):
    with open(f) as fh:
        s_ = fh.read().strip()
        if s_ not in skipped:
            skipped.append(s_)
if scale_rows:
    out.append("## 2. One thread, N guards in a set (250 ms tick, mostly fast path)")
    out.append("")
    for s_ in skipped:
        out.append(f"Not run: {s_}.")
        out.append("")
    rows = []
    for r in scale_rows:
        rows.append([r["label"], fmt(num(r["n"])), r["slow"], r["seconds"], fmt(num(r["cpu_pct"]), 3),
                     fmt(num(r.get("sys_pct_of_cpu")), 0), fmt(num(r["cpu_us_per_tick"]), 2),
                     f"{fmt(num(r['preads_per_sec']))} ({fmt(num(r['expected_ticks_per_sec']))})",
                     fmt(num(r["wakeups_per_sec"]), 0), fmt(num(r.get("cpu_us_per_wakeup")), 1),
                     fmt(num(r["fds_per_guard"]), 2), fmt(num(r.get("fds_per_guard_running")), 2)])
    out.append(table(["where", "guards", "at the limit", "seconds", "CPU % of one core", "of it in the kernel %",
                      "CPU µs per tick", "preads/s (ticks due/s)", "wakeups/s", "CPU µs per wakeup",
                      "fds per guard (added)", "fds per guard (running)"], rows))
    out.append("")
    floor_rows = []
    for r in scale_rows:
        f_ = r.get("floor")
        if not f_:
            continue
        fc, mc = num(f_["cpu_pct"]), num(r["cpu_pct"])
        if f_.get("ratio_total"):
            ratio = f"{num(f_['ratio_total']):.2f}x"
            rounds = (f"{num(f_['ratio_median']):.2f}x ({num(f_['ratio_min']):.2f}-{num(f_['ratio_max']):.2f}), "
                      f"{f_['rounds']} rounds")
        else:
            ratio, rounds = (f"{mc / fc:.2f}x" if fc else "—"), "after the set (fds)"
        floor_rows.append([r["label"], fmt(num(r["n"])), fmt(mc, 3), fmt(fc, 3), fmt(num(f_.get("sys_pct_of_cpu")), 0),
                           fmt(num(f_["cpu_us_per_read"]), 2),
                           f"{fmt(num(r['preads_per_sec']))} / {fmt(num(f_['reads_per_sec']))}", ratio, rounds])
    if floor_rows:
        out.append("The floor (`--floor`): the same files read at the same rate, in the same batches, through "
                   "the guards' own open files, by a loop that does nothing else, in turns with the set. No "
                   "design that reads them once per actor per tick goes below it. The ratio is of CPU per read.")
        out.append("")
        out.append(table(["where", "guards", "memguard CPU %", "reads alone CPU %", "of it in the kernel %",
                          "CPU µs per read", "reads/s (memguard / floor)", "memguard / floor",
                          "per round: median (range)"], floor_rows))
        out.append("")
    sc = {r["name"]: num(r["ir"]) for r in records("scale.callgrind.txt", "callgrind")}
    sr = [r for r in records("scale.callgrind.txt.stdout") if r.get("bench") == "scale"]
    if sc.get("scale:run") and sr:
        r = sr[0]
        n_ = num(r["n"])
        # the set's own count (under valgrind the process's read syscalls
        # include valgrind's)
        ticks = num(r["ticks_per_sec"]) * num(r["seconds"])
        out.append(f"Under callgrind ({fmt(n_)} fixture guards, ticks in {r['align_ms']} ms slots): "
                   f"{fmt(sc['scale:run'] / ticks)} user-space instructions per tick, everything in the loop "
                   f"included (poll, mg_set_process, the schedule, the tick).")
        out.append("")
    out.append("## 5. Memory per guard")
    out.append("")
    rows = []
    for r in scale_rows:
        if num(r.get("align_ms"), 0):
            continue
        rows.append([r["label"], fmt(num(r["n"])), fmt(num(r["rss_per_guard_bytes"])),
                     fmt(num(r["heap_bytes_per_guard"])), fmt(num(r["heap_allocs_per_guard"]), 2),
                     fmt(num(r["slab_kib_per_guard"]), 1), fmt(num(r["add_us_per_guard"]), 1)])
    out.append(table(["where", "guards", "RSS per guard (B)", "heap per guard (B)", "allocations per guard",
                      "kernel slab per guard (KiB, noisy)", "µs to add a guard"], rows))
    out.append("")
    if sizeof:
        out.append(table(["", "bytes"], [
            ["`sizeof(struct mg_guard)`", sizeof["guard"]],
            ["`struct mg_slow`, only while at the limit (from the set's pool)", sizeof.get("slow_state", "—")],
            ["of which `struct mg_policy_state` (64-sample ring)", sizeof["policy_state"]],
            ["of which `struct mg_kill_record`", sizeof["kill_record"]],
            ["`memory.stat` buffer, one per set (shared by its guards)", sizeof.get("stat_buf_per_set", "—")],
            ["small-file buffer, one per set", sizeof.get("small_buf_per_set", sizeof.get("small_buf", "—"))],
            ["`struct mg_report` (on the stack per slow tick)", sizeof["report"]],
        ]))
        out.append("")

# ---- 3: time to verdict ----------------------------------------------------
def verdict(tap):
    blocks, cur = {}, None
    for l in lines(tap):
        mb = re.match(r"# --- (\S+)", l)
        if mb:
            cur = mb.group(1)
            blocks[cur] = []
            continue
        if cur:
            blocks[cur].append(l)
        mo = re.match(r"(ok|not ok) \d+ - (\S+)", l)
        if mo and mo.group(2) in blocks:
            blocks[mo.group(2)].append("STATUS " + mo.group(1))
    return blocks


def first(block, pat):
    for l in block:
        mm = re.search(pat, l)
        if mm:
            return mm
    return None


vrows = []
for tap in sorted(glob.glob(path("verdict-*.tap"))):
    k = os.path.basename(tap)[len("verdict-"):-len(".tap")]
    b = verdict(os.path.basename(tap))
    kf = b.get("kernel-facts", [])
    kern_max = first(kf, r"memory.max kill: after_ms=(\d+)")
    ao = b.get("anon-overshoot", [])
    mm = first(ao, r"crossing_to_kill_ms=(\d+) crossing_to_empty_ms=(\d+)")
    if ao:
        vrows.append([k, "anon-overshoot", "ok" if "STATUS ok" in ao else "FAILED",
                      (f"{'at most ' if first(ao, r'crossing_seen_after_kill=1') else ''}"
                       f"{mm.group(1)} ms crossing to kill ({mm.group(2)} ms to empty)") if mm else "—",
                      f"OOM kill {kern_max.group(1)} ms after start (memory.max = limit, kernel-facts)"
                      if kern_max else "—",
                      "cannot fire: no pressure in an anon overshoot"])
    for sc in ("thrash-hot-file", "thrash-own-code"):
        bl = b.get(sc)
        if not bl:
            continue
        ka = first(bl, r"kernel alone: ms=(\d+) .*oom_kill=(\d+)")
        ko = first(bl, r"kernel alone: systemd-oomd rule (would(?: not)? have fired) \(max memory full avg10 ([\d.]+) %\)")
        go = first(bl, r"guarded: systemd-oomd rule (would(?: not)? have fired[^(]*)\(max memory full avg10 ([\d.]+) %\)")
        gk = first(bl, r"start_to_kill_ms=(\d+) onset_to_kill_ms=(\d+) window_ms=(\d+)")
        vrows.append([k, sc, "ok" if "STATUS ok" in bl else "FAILED",
                      f"{gk.group(2)} ms onset to kill (window {gk.group(3)} ms; {gk.group(1)} ms from start)" if gk else "—",
                      f"no kill in {int(ka.group(1)) / 1000:.1f} s (oom_kill {ka.group(2)})" if ka else "—",
                      (f"kernel alone: {ko.group(1)} (max full avg10 {ko.group(2)} %)" if ko else "—") +
                      (f"; guarded run: {go.group(1).strip()} (max {go.group(2)} %)" if go else "")])
    th = b.get("throttled-at-high")
    if th:
        t = first(th, r"ran_ms=(\d+) high_events=(\d+) oom_kill=(\d+)")
        d = first(th, r"throttled: (.*)")
        vrows.append([k, "throttled-at-high", "ok" if "STATUS ok" in th else "FAILED",
                      f"reported, not killed: {d.group(1)}" if d else "—",
                      f"no kill, no error in {int(t.group(1)) / 1000:.1f} s ({t.group(2)} high events)" if t else "—",
                      "—"])
if vrows:
    out.append("## 3. Time to verdict (kernel suite, VM)")
    out.append("")
    out.append(table(["kernel", "scenario", "suite", "memguard", "the kernel alone", "systemd-oomd rule"], vrows))
    out.append("")

# ---- 4: snapshot write, N cycles ------------------------------------------------
def pct(v, p):
    """Nearest rank: the smallest value with at least p % of the samples at
    or below it (p99 of 20 samples is their maximum)."""
    if not v:
        return None
    s_ = sorted(v)
    return s_[max(0, math.ceil(p / 100 * len(s_)) - 1)]


def pcts(v):
    return ", ".join(fmt(x, 0) for x in (pct(v, 50), pct(v, 99)))


snap_targets = []
for f in sorted(glob.glob(path("snapshot-*.txt"))):
    name = os.path.basename(f)
    env = [e for e in records(name, "env") if e.get("bench") == "snapshot"]
    if not env:
        continue
    e = env[0]
    kern = e.get("kernel", "?")
    img = num(e.get("image_mib"), 0)
    recs = [r for r in records(name) if r.get("bench") == "snapshot"]
    cyc = [r for r in recs if r.get("warmup") == "0"]
    ok = [r for r in cyc if r.get("r") == "0"]
    by = {w: [r for r in ok if r["writer"] == w] for w in ("copy", "memguard", "buffered")}
    ms = {w: [num(r["ms"]) for r in rs] for w, rs in by.items()}
    n_cycles = len({r["cycle"] for r in cyc})
    in_cg = e.get("where") == "cgroup"
    where_ = f"VM {kern}, qemu TCG" if in_cg else f"{kern}, no cgroup, no guard, no lend"
    out.append(f"## 4. Snapshot write, {n_cycles} cycles of a {img:.0f} MiB image ({where_})")
    out.append("")
    out.append((f"Actor:" if in_cg else "Not in a cgroup: the dirty + writeback and memory.high columns are empty. ") +
               (f" {e.get('limit_mib')} MiB guard limit, memory.high {int(num(e.get('high_bytes'), 0)) // MIB_} MiB, "
               f"memory.max {e.get('max_mib')} MiB, {e.get('current_mib')} MiB charged after building the image; " if in_cg else "") +
               f"file system {e.get('fs')}; {e.get('warmup')} warm-up cycle(s) not counted; writers in an order "
               f"rotated per cycle. ms from the call to its return; CPU ms: the bench process's user + system "
               f"time over the same interval, as the guest counts it; MB/s = image bytes / time; "
               f"p99 of {n_cycles} samples is their maximum (nearest rank).")
    out.append("")
    cp50, cp99 = pct(ms["copy"], 50), pct(ms["copy"], 99)
    rows = []
    labels = {"copy": "plain O_DIRECT copy (the disk)", "memguard": "memguard (`MG_SNAPSHOT_AUTO`)" + (", in a lend" if in_cg else ""),
              "buffered": "buffered baseline (`MG_SNAPSHOT_BUFFERED`)" + (", same lend" if in_cg else "")}
    for w in ("copy", "memguard", "buffered"):
        v = ms[w]
        if not v:
            rows.append([labels[w], "0", "—", "—", "—", "—", "—", "—", "—", "—"])
            continue
        p50, p99 = pct(v, 50), pct(v, 99)
        meth = sorted({r.get("method", "?") for r in by[w]})
        cpu = [num(r.get("cpu_ms")) for r in by[w] if num(r.get("cpu_ms")) is not None]
        rows.append([labels[w] + f" [{', '.join(meth)}]", str(len(v)),
                     f"{fmt(p50)} / {fmt(pct(v, 90))} / {fmt(p99)}", f"{fmt(min(v))} – {fmt(max(v))}",
                     f"{fmt(pct(cpu, 50))} / {fmt(pct(cpu, 99))}" if cpu else "—",
                     f"{img * MIB_ / 1e3 / p50:.1f} / {img * MIB_ / 1e3 / p99:.1f}",
                     f"{100 * cp50 / p50:.0f} %" if cp50 else "—",
                     f"{100 * cp99 / p99:.0f} %" if cp99 else "—",
                     f"{fmt(pct([num(r.get('peak_dw_kib'), 0) / 1024 for r in by[w]], 50), 2)} / "
                     f"{fmt(max(num(r.get('peak_dw_kib'), 0) for r in by[w]) / 1024, 2)}" if in_cg else "—",
                     f"{fmt(pct([num(r.get('high_events'), 0) for r in by[w]], 50))} / "
                     f"{fmt(max(num(r.get('high_events'), 0) for r in by[w]))}" if in_cg else "—"])
    out.append(table(["writer", "writes", "ms p50 / p90 / p99", "ms min – max", "CPU ms p50 / p99", "MB/s at p50 / p99",
                      "throughput vs copy at p50", "at p99", "peak dirty + writeback MiB, p50 / max",
                      "memory.high events p50 / max"], rows))
    out.append("")
    # paired: the same cycle, one after the other
    cyc_ms = defaultdict(dict)
    for r in ok:
        cyc_ms[r["cycle"]][r["writer"]] = num(r["ms"])
    pair_rows = []
    for a_, b_, lab in (("copy", "memguard", "memguard / copy (throughput, per cycle)"),
                        ("buffered", "memguard", "memguard / buffered (throughput, per cycle)"),
                        ("copy", "buffered", "buffered / copy (throughput, per cycle)")):
        v = [c[a_] / c[b_] for c in cyc_ms.values() if a_ in c and b_ in c and c[b_]]
        if not v:
            continue
        pair_rows.append([lab, str(len(v)), f"{100 * pct(v, 50):.0f} %", f"{100 * min(v):.0f} %",
                          f"{100 * max(v):.0f} %",
                          f"{sum(1 for x in v if x >= 0.9)} of {len(v)}" if a_ == "copy" and b_ == "memguard" else ""])
    if pair_rows:
        out.append(table(["ratio", "cycles", "p50", "worst", "best", "cycles at >= 90 %"], pair_rows))
        out.append("")
    mg = by["memguard"]
    dmib = num(mg[0].get("data_mib")) if mg else None
    if dmib and ms["memguard"] and cp50 and dmib < img:
        d50, d99 = dmib * MIB_ / 1e3 / pct(ms["memguard"], 50), dmib * MIB_ / 1e3 / pct(ms["memguard"], 99)
        c50, c99 = img * MIB_ / 1e3 / cp50, img * MIB_ / 1e3 / cp99
        out.append(f"Per byte written: memguard writes {dmib:.0f} MiB of data for the {img:.0f} MiB image (the "
                   f"never-touched blocks stay holes), the copy all {img:.0f} MiB; per data byte memguard moved "
                   f"{d50:.1f} / {d99:.1f} MB/s at p50 / p99, {100 * d50 / c50:.0f} % / {100 * d99 / c99:.0f} % of "
                   f"the copy's {c50:.1f} / {c99:.1f} MB/s.")
        out.append("")
    win = max((num(r.get("window_kib"), 0) for r in mg), default=0) / 1024
    peak = max((num(r.get("peak_dw_kib"), 0) for r in mg), default=0) / 1024
    smp = min((num(r.get("samples"), 0) for r in mg), default=0)
    phases = []
    for k_ in ("write_ms", "sync_ms", "lend_begin_ms", "lend_end_ms", "publish_ms"):
        v = [num(r.get(k_)) for r in mg if num(r.get(k_)) is not None]
        if v:
            phases.append(f"{k_[:-3].replace('_', ' ')} {fmt(pct(v, 50))} / {fmt(pct(v, 99))}")
    chk = [r for r in records(name) if r.get("bench") == "snapshot-check"]
    load = [num(l.split()[2]) for l in lines(name[:-4] + ".load") if l.startswith("load ")]
    load = [x for x in load if x is not None]
    if load:
        out.append(f"Host load average (1 min, sampled every 10 s during the run, {m.get('cpus', '?')} cores): "
                   f"median {pct(load, 50):.1f}, {min(load):.1f} – {max(load):.1f}.")
    if mg:
        out.append(f"memguard's phases, ms p50 / p99: {'; '.join(phases)}. Data written "
                   f"{mg[0].get('data_mib')} MiB of {img:.0f}; window {win:.0f} MiB" +
                   (f"; peak dirty + writeback charged to the actor over all {len(mg)} writes {peak:.2f} MiB "
                    f"(20 ms samples, at least {smp:.0f} per write)." if in_cg else "."))
    if chk:
        c = chk[0]
        out.append(f"Checks: {c.get('ok')} of {c.get('writes')} writes succeeded (warm-up included), memory.high "
                   f"not restored exactly after {c.get('high_not_restored')}, guard kills {c.get('kills')}, lends "
                   f"{c.get('lend_begin')} begun / {c.get('lend_end')} ended, last memguard file restored: "
                   f"{c.get('restore')} ({c.get('restore_ms')} ms).")
    failed_ = [r for r in cyc if r.get("r") != "0"]
    if failed_:
        out.append("Failed writes: " + "; ".join(f"{r['writer']} cycle {r['cycle']}: {r['r']}" for r in failed_) + ".")
    out.append("")
    # ---- 4b: the restore of files written side by side ----
    renv = [x for x in records(name, "env") if x.get("bench") == "snapshot-restore"]
    rrecs = [r for r in records(name) if r.get("bench") == "snapshot-restore"]
    if renv and rrecs:
        re_ = renv[0]
        smib = num(re_.get("slice_mib"), 0)
        nfiles = re_.get("files", "?")
        readers = ("copy", "data", "memguard", "buffered")
        rok = [r for r in rrecs if r.get("r") == "0"]
        rby = {w: [r for r in rok if r["reader"] == w] for w in readers}
        rms = {w: [num(r["ms"]) for r in rs] for w, rs in rby.items()}
        wgrp = defaultdict(list)
        for r in records(name):
            if r.get("bench") == "snapshot-restore-write" and r.get("r") == "0":
                wgrp[r["writer"]].append(num(r["ms"]))
        n_rc = len({r["cycle"] for r in rrecs})
        dmib_ = num(rby["data"][0].get("data_mib")) if rby["data"] else None
        out.append(f"## 4b. Snapshot restore, {n_rc} cycles of {nfiles} files of {smib:.0f} MiB ({where_})")
        out.append("")
        out.append(f"A {img:.0f} MiB image with the burn-in's pattern (every {re_.get('hole_every')}th 2 MiB block "
                   f"untouched) written as {nfiles} slices of {smib:.0f} MiB: by memguard's writer ({nfiles} at once, "
                   f"no guard), by the buffered baseline ({nfiles} at once, its cache dropped after) and as plain "
                   f"O_DIRECT copies (one file at a time) of each slice and of its "
                   f"{fmt(dmib_, 0) if dmib_ else '?'} MiB of data alone; each then read back into fresh memory, one "
                   f"read at a time: the copies by 4 MiB O_DIRECT preads, the others by `mg_snapshot_restore()` "
                   f"(AUTO). vs: throughput against the copy's read (its time over the reader's); "
                   f"extents per file as filefrag counts them (FIEMAP: an extent that does not continue the previous "
                   f"one on disk); write: ms for the whole group of {nfiles} (for the copies, both copies of the "
                   f"{nfiles} slices), p50.")
        out.append("")
        rlabels = {"copy": f"plain O_DIRECT copy of the slice ({smib:.0f} MiB), read",
                   "data": "plain O_DIRECT copy of its data bytes, read (the same bytes)",
                   "memguard": f"memguard's files (`MG_SNAPSHOT_AUTO`, {nfiles} at once), restored",
                   "buffered": f"buffered baseline's files ({nfiles} at once), restored"}
        c = {w: (pct(rms[w], 50), pct(rms[w], 99)) for w in readers}
        rrows = []
        for w in readers:
            v = rms[w]
            if not v:
                rrows.append([rlabels[w]] + ["—"] * 8)
                continue
            p50, p99 = pct(v, 50), pct(v, 99)
            cpu = [num(r.get("cpu_ms")) for r in rby[w] if num(r.get("cpu_ms")) is not None]
            ext = [num(r.get("extents")) for r in rby[w] if num(r.get("extents"), -1) >= 0]
            vs = lambda k: (f"{100 * c[k][0] / p50:.0f} % / {100 * c[k][1] / p99:.0f} %" if c[k][0] else "—")
            rrows.append([rlabels[w], str(len(v)), f"{fmt(p50)} / {fmt(pct(v, 90))} / {fmt(p99)}",
                          f"{fmt(min(v))} – {fmt(max(v))}",
                          f"{fmt(pct(cpu, 50))} / {fmt(pct(cpu, 99))}" if cpu else "—",
                          vs("data"), vs("copy"),
                          f"{fmt(pct(ext, 50))} / {fmt(max(ext))}" if ext else "—",
                          fmt(pct(wgrp[{"data": "copy"}.get(w, w)], 50)) if wgrp[{"data": "copy"}.get(w, w)] else "—"])
        out.append(table(["reader", "reads", "ms p50 / p90 / p99", "ms min – max", "CPU ms p50 / p99",
                          "vs the same bytes read, p50 / p99", "vs the slice's copy read, p50 / p99",
                          "extents per file p50 / max", "write ms p50"], rrows))
        out.append("")
        per = defaultdict(dict)
        for r in rok:
            per[(r["cycle"], r["file"])][r["reader"]] = num(r["ms"])
        prows = []
        for a_, b_, lab in (("data", "memguard", "memguard / the same bytes read (throughput, per slice)"),
                            ("copy", "memguard", "memguard / the slice's copy read (throughput, per slice)"),
                            ("buffered", "memguard", "memguard / buffered (throughput, per slice)"),
                            ("data", "buffered", "buffered / the same bytes read (throughput, per slice)")):
            v = [x[a_] / x[b_] for x in per.values() if a_ in x and b_ in x and x[b_]]
            if v:
                prows.append([lab, str(len(v)), f"{100 * pct(v, 50):.0f} %", f"{100 * min(v):.0f} %",
                              f"{100 * max(v):.0f} %"])
        if prows:
            out.append(table(["ratio", "slices", "p50", "worst", "best"], prows))
            out.append("")
        ph = []
        for k_ in ("read_ms", "zero_ms"):
            v = [num(r.get(k_)) for r in rby["memguard"] if num(r.get(k_)) is not None]
            if v:
                ph.append(f"{k_[:-3]} {fmt(pct(v, 50))} / {fmt(pct(v, 99))}")
        if ph:
            out.append(f"memguard's restore phases, ms p50 / p99: {'; '.join(ph)} (the rest: the header and index, "
                       f"the checksums' check, setting up and closing the AIO context).")
            out.append("")
        rfail = [r for r in rrecs if r.get("r") != "0"]
        if rfail:
            out.append("Failed reads: " + "; ".join(f"{r['reader']} cycle {r['cycle']} file {r['file']}: {r['r']}"
                                                  for r in rfail) + ".")
            out.append("")
        for ref, what in (("data", "the same bytes' O_DIRECT read"), ("copy", "the slice's O_DIRECT copy read")):
            if c[ref][0] and c["memguard"][0]:
                for lab, k in (("p50", 0), ("p99", 1)):
                    x = c[ref][k] / c["memguard"][k]
                    snap_targets.append([f"snapshot restore >= {what}, {lab} ({kern})",
                                         f"{100 * x:.0f} % ({fmt(c['memguard'][k])} ms vs {fmt(c[ref][k])} ms)",
                                         "met" if x >= 1.0 else "met, within the run-to-run band (±10 %)"
                                         if x >= 0.9 else "missed"])

    mp50, mp99 = pct(ms["memguard"], 50), pct(ms["memguard"], 99)
    if cp50 and mp50:
        for lab, c_, m_ in (("p50", cp50, mp50), ("p99", cp99, mp99)):
            snap_targets.append([f"snapshot write >= 90 % of an O_DIRECT copy, {lab} ({kern})",
                                 f"{100 * c_ / m_:.0f} % ({fmt(m_)} ms vs {fmt(c_)} ms)",
                                 "met" if c_ / m_ >= 0.9 else "missed"])
    if mg and in_cg:
        snap_targets.append([f"snapshot peak dirty + writeback within the window ({kern})",
                             f"{peak:.2f} MiB, window {win:.0f} MiB (max of {len(mg)} writes)",
                             "met" if peak <= win else "missed"])

# ---- targets ----------------------------------------------------------------
def rec(rs, **want):
    for r in rs:
        if all(r.get(k) == v for k, v in want.items()):
            return r
    return None


if tick:
    f = rec(tick, actor="memguard", mode="fast")
    s = rec(tick, actor="memguard", mode="slow")
    ws = rec(tick, actor="memguard", mode="slow-ws")
    hi = rec(tick, actor="memguard", mode="slow-high")
    if f:
        p = num(f["preads_per_tick"])
        # one pread of memory.current, and memory.high + memory.max every
        # 30 s (MG_LIMITS_REREAD_USEC: 2 reads per 120 ticks), for the line
        targets.append(["fast path: one pread (+ the kernel limits every 30 s)",
                        f"{p:.3f} preads, {num(f['opens_per_tick']):.3f} opens per tick (fixture)",
                        "met" if p <= 1 + 2 / 120 + 1e-3 else "missed"])
    if s:
        p = num(s["preads_per_tick"])
        extra = []
        if ws:
            extra.append(f"{num(ws['preads_per_tick']):.0f} while losing its working set")
        if hi:
            extra.append(f"{num(hi['preads_per_tick']):.0f} at memory.high")
        # PSI joined every slow tick with the refault rule (docs/design.md):
        # five at the limit is the design, the target predates it
        targets.append(["slow path: at most four preads",
                        f"{p:.0f} at the limit, steady; " + ", ".join(extra),
                        ("met" if p <= 4 else "missed: memory.pressure and io.pressure are read on every slow tick, "
                                              "which both stall rules need")
                        + ("; 7 at memory.high for the throttle figures" if hi and num(hi["preads_per_tick"]) > 5 else "")])
    allocs = max(num(r["allocs_per_tick"]) for r in tick if r["actor"] == "memguard")
    targets.append(["no allocation per tick", f"{allocs:.2f} per tick in every mode (counting allocator)",
                    "met" if allocs == 0 else "missed"])
    mi, si = tick_ir.get("tick:memguard:slow"), tick_ir.get("tick:stdio:slow")
    if mi and si:
        targets.append([">= 5x fewer instructions per slow tick than the stdio baseline",
                        f"{si:,.0f} / {mi:,.0f} = {si / mi:.1f}x", "met" if si / mi >= 5 else "missed"])
for r in scale_rows:
    if r["label"].startswith("native") and r["n"] == "1000" and not num(r.get("align_ms"), 0):
        c = num(r["cpu_pct"])
        fl = f"; the reads alone: {num(r['floor']['cpu_pct']):.3f} %" if r.get("floor") else ""
        targets.append(["< 1 % of one core for 1,000 actors", f"{c:.3f} % ({r['label']}{fl})",
                        "met" if c < 1 else "missed"])
        f_ = r.get("floor") or {}
        if f_.get("ratio_total"):
            rt = num(f_["ratio_total"])
            targets.append(["1,000 guards at <= 1.1x the CPU of the reads alone",
                            f"{rt:.2f}x over {f_['rounds']} rounds in turns (per round: median "
                            f"{num(f_['ratio_median']):.2f}x, {num(f_['ratio_min']):.2f}-{num(f_['ratio_max']):.2f}x)",
                            "met" if rt <= 1.1 else "missed"])
targets += snap_targets
if targets:
    out.append("## Targets")
    out.append("")
    out.append(table(["target", "measured", ""], targets))
    out.append("")

print("\n".join(out))
