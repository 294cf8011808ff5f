#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the raw outputs bench/run keeps in RESULTS into markdown tables.

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
"""
import glob
import os
import re
import sys
from collections import Counter, defaultdict

R = sys.argv[1] if len(sys.argv) > 1 else "."


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
                     fmt(num(r["fds_per_guard"]), 2)])
    out.append(table(["where", "guards", "at the limit", "seconds", "CPU % of one core", "of it in the kernel %",
                      "CPU µs per tick", "preads/s (ticks due/s)", "wakeups/s", "CPU µs per wakeup",
                      "fds per guard"], rows))
    out.append("")
    sc = {r["name"]: num(r["ir"]) for r in records("scale.callgrind.txt", "callgrind")}
    sr = [r for r in records("scale.callgrind.txt.stdout") if r.get("bench") == "scale"]
    if sc.get("scale:run") and sr:
        r = sr[0]
        n_, k_ = num(r["n"]), num(r["slow"])
        # preads = fast ticks + 3 per slow tick
        ticks = num(r["preads_per_sec"]) * num(r["seconds"]) * n_ / (n_ + 2 * k_)
        out.append(f"Under callgrind ({fmt(n_)} fixture guards, ticks in {r['align_ms']} ms slots): "
                   f"{fmt(sc['scale:run'] / ticks)} user-space instructions per tick, everything in the loop "
                   f"included (poll, mg_set_process, the heap, the tick).")
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
            ["of which `stat_buf` (memory.stat)", sizeof["stat_buf"]],
            ["of which `small_buf`", sizeof["small_buf"]],
            ["of which `struct mg_policy_state` (64-sample ring)", sizeof["policy_state"]],
            ["of which `struct mg_kill_record`", sizeof["kill_record"]],
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
                      f"{mm.group(1)} ms crossing to kill ({mm.group(2)} ms to empty)" if mm else "—",
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
        targets.append(["fast path: one pread", f"{p:.2f} preads, {num(f['opens_per_tick']):.0f} opens per tick (fixture)",
                        "met" if p == 1 else "missed"])
    if s:
        p = num(s["preads_per_tick"])
        extra = []
        if ws:
            extra.append(f"{num(ws['preads_per_tick']):.0f} while losing its working set")
        if hi:
            extra.append(f"{num(hi['preads_per_tick']):.0f} at memory.high")
        targets.append(["slow path: at most four preads",
                        f"{p:.0f} at the limit, steady; " + ", ".join(extra),
                        ("met" if p <= 4 else "missed") + (" for the steady slow path; exceeded in the modes that need PSI "
                                                           "and throttle figures" if any(num(x["preads_per_tick"]) > 4 for x in (ws, hi) if x) else "")])
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
        targets.append(["< 1 % of one core for 1,000 actors", f"{c:.3f} % ({r['label']})", "met" if c < 1 else "missed"])
if targets:
    out.append("## Targets")
    out.append("")
    out.append(table(["target", "measured", ""], targets))
    out.append("")

print("\n".join(out))
