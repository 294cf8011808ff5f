#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `watch --metrics` text against the rules of the Prometheus text exposition
# format (version 0.0.4), as node_exporter's textfile collector parses it:
# every line a HELP, a TYPE, a comment or a sample; names and label names
# of their grammar; label values with only \\ \" \n escaped, valid UTF-8;
# a family's HELP and TYPE once, before its samples, its samples together;
# no sample twice; values numbers; counters end in _total and are >= 0; a
# histogram's buckets cumulative, their le ascending, the +Inf one its
# _count; the file ends in a newline.  Also memguard's own: the memguard_
# prefix, the families watch documents, the cgroup and id labels alike,
# memory.high and memory.max +Inf when unset, the node's sums, the
# cgroups --metrics-cgroups picks and the counters left out where they
# cannot move.  With promtool (Debian's prometheus) also `promtool check
# metrics`.  TAP on stdout.
#
#   tests/cli/memguard/test-metrics-format.py MEMGUARD-TEST-COMMANDS          # its `metrics-sample`
#   tests/cli/memguard/test-metrics-format.py MEMGUARD-TEST-COMMANDS FILE...  # and files watch wrote
# (test-metrics-scrape.py imports check() and parse() from here.)
import contextlib
import io
import math
import re
import shutil
import subprocess
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
VALUE = re.compile(r"^(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN)$")
NODE = ["memguard_cgroups", "memguard_metrics_cgroups", "memguard_last_update_timestamp_seconds",
        "memguard_node_kills_total", "memguard_node_ticks_total", "memguard_node_errors_total",
        "memguard_node_dry_run_kills_total", "memguard_node_kernel_oom_kills_total",
        "memguard_node_kills_deferred_total", "memguard_node_kills_averted_total", "memguard_node_throttled_total",
        "memguard_node_empty_over_limit_total", "memguard_node_unkillable_total", "memguard_node_reclaims_total",
        "memguard_node_reclaimed_bytes_total", "memguard_node_lends_total", "memguard_node_lend_expired_total",
        "memguard_node_lend_active", "memguard_node_limit_bytes", "memguard_node_used_bytes",
        "memguard_node_current_bytes", "memguard_node_file_bytes", "memguard_node_verdict",
        "memguard_detect_to_kill_seconds", "memguard_node_parks_total", "memguard_node_park_ends_total",
        "memguard_node_parked", "memguard_park_hooks_total", "memguard_park_hook_seconds"]
PER_CGROUP = ["memguard_kills_total", "memguard_used_bytes", "memguard_limit_bytes", "memguard_current_bytes",
              "memguard_stall_seconds", "memguard_lend_active", "memguard_ticks_total", "memguard_errors_total",
              "memguard_lends_total", "memguard_lend_expired_total", "memguard_throttled_total",
              "memguard_kernel_oom_kills_total", "memguard_dry_run_kills_total", "memguard_kills_deferred_total",
              "memguard_kills_averted_total", "memguard_reclaims_total", "memguard_reclaimed_bytes_total",
              "memguard_empty_over_limit_total", "memguard_unkillable_total", "memguard_memory_high_bytes",
              "memguard_memory_max_bytes", "memguard_file_bytes", "memguard_verdict", "memguard_parks_total",
              "memguard_parked"]
REQUIRED = NODE + PER_CGROUP
# Each per-cgroup family the node sums (memguard_node_X is the sum of
# memguard_X over every cgroup): the counters from the library's set, the
# gauges from this file's cgroups (the sample checks those add up).
SUMMED = {"memguard_kills_total": "memguard_node_kills_total", "memguard_ticks_total": "memguard_node_ticks_total",
          "memguard_errors_total": "memguard_node_errors_total",
          "memguard_dry_run_kills_total": "memguard_node_dry_run_kills_total",
          "memguard_kernel_oom_kills_total": "memguard_node_kernel_oom_kills_total",
          "memguard_kills_deferred_total": "memguard_node_kills_deferred_total",
          "memguard_kills_averted_total": "memguard_node_kills_averted_total",
          "memguard_throttled_total": "memguard_node_throttled_total",
          "memguard_empty_over_limit_total": "memguard_node_empty_over_limit_total",
          "memguard_unkillable_total": "memguard_node_unkillable_total",
          "memguard_reclaims_total": "memguard_node_reclaims_total",
          "memguard_reclaimed_bytes_total": "memguard_node_reclaimed_bytes_total",
          "memguard_lends_total": "memguard_node_lends_total",
          "memguard_lend_expired_total": "memguard_node_lend_expired_total",
          "memguard_lend_active": "memguard_node_lend_active", "memguard_limit_bytes": "memguard_node_limit_bytes",
          "memguard_used_bytes": "memguard_node_used_bytes", "memguard_current_bytes": "memguard_node_current_bytes",
          "memguard_file_bytes": "memguard_node_file_bytes", "memguard_verdict": "memguard_node_verdict",
          "memguard_parks_total": "memguard_node_parks_total", "memguard_parked": "memguard_node_parked"}
# Not summed, and why: a sum of stalls' durations or of kernel limits means nothing.
NOT_SUMMED = {"memguard_stall_seconds", "memguard_memory_high_bytes", "memguard_memory_max_bytes"}
n = failed = 0


def tap(good, desc):
    global n, failed
    n += 1
    failed += not good
    print(("ok" if good else "not ok") + f" {n} - {desc}")


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}")


def parse_labels(s, i):
    """Labels from s[i] == '{'; returns (dict, index after '}') or raises ValueError."""
    labels = {}
    i += 1
    while True:
        if s[i] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ValueError(f"bad label name at {s[i:i+20]!r}")
        name = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            raise ValueError(f"label {name}: no =\"")
        i += 2
        v = []
        while s[i] != '"':
            if s[i] == "\\":
                if s[i + 1] not in '\\"n':
                    raise ValueError(f"label {name}: bad escape \\{s[i+1]}")
                v.append({"\\": "\\", '"': '"', "n": "\n"}[s[i + 1]])
                i += 2
            elif s[i] == "\n":
                raise ValueError(f"label {name}: raw newline")
            else:
                v.append(s[i])
                i += 1
        if name in labels:
            raise ValueError(f"label {name} twice")
        labels[name] = "".join(v)
        i += 1
        if s[i] == ",":
            i += 1
        elif s[i] != "}":
            raise ValueError(f"after label {name}: {s[i]!r}")


def family_of(name, types):
    """The family a sample name belongs to: its own, or a histogram's or summary's for _bucket, _sum, _count."""
    if name in types:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return name


def check_histograms(samples, types):
    """The rules of a histogram's samples: per label set, buckets with le ascending and cumulative, a +Inf
    bucket equal to _count, a _sum and a _count."""
    errs = []
    for fam, t in types.items():
        if t != "histogram":
            continue
        series = {}
        for (name, labels), v in samples.items():
            if family_of(name, types) != fam:
                continue
            d = dict(labels)
            le = d.pop("le", None)
            key = tuple(sorted(d.items()))
            s = series.setdefault(key, {"buckets": [], "sum": None, "count": None})
            if name == fam + "_bucket":
                if le is None:
                    errs.append(f"{fam}{key}: a bucket without le")
                    continue
                try:
                    s["buckets"].append((float(le), v, le))
                except ValueError:
                    errs.append(f"{fam}{key}: le {le!r} not a number")
            elif name == fam + "_sum":
                s["sum"] = v
            elif name == fam + "_count":
                s["count"] = v
            else:
                errs.append(f"{fam}: sample {name} is not a histogram's")
        for key, s in series.items():
            b = sorted(s["buckets"])
            if not b or not math.isinf(b[-1][0]):
                errs.append(f"{fam}{key}: no +Inf bucket")
            if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
                errs.append(f"{fam}{key}: buckets not cumulative: {[(x[2], x[1]) for x in b]}")
            if s["count"] is None or s["sum"] is None:
                errs.append(f"{fam}{key}: no _count or _sum")
            elif b and b[-1][1] != s["count"]:
                errs.append(f"{fam}{key}: the +Inf bucket {b[-1][1]} is not _count {s['count']}")
    return errs


def parse(text):
    """(errors, types, samples {(name, labels tuple): value}, helps) of a text in the exposition format."""
    errs = []
    if not text.endswith("\n"):
        errs.append("does not end in a newline")
    types, helps, samples, seen, done, current = {}, {}, {}, set(), set(), None
    order = []  # the sample lines' (name, labels) in order: le ascending as written
    for no, line in enumerate(text.split("\n")[:-1], 1):
        where = f"line {no}"
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    errs.append(f"{where}: bad metric name {name!r}")
                table = helps if parts[1] == "HELP" else types
                if name in table:
                    errs.append(f"{where}: second {parts[1]} for {name}")
                if name in done or (current and current != name and name in seen):
                    errs.append(f"{where}: {parts[1]} for {name} after its samples")
                if parts[1] == "TYPE":
                    if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                        errs.append(f"{where}: bad TYPE line")
                    else:
                        types[name] = parts[3]
                else:
                    h = parts[3] if len(parts) == 4 else ""
                    if re.search(r"\\[^\\n]", h) or "\n" in h:
                        errs.append(f"{where}: bad escape in HELP")
                    helps[name] = h
                if current != name:
                    if current:
                        done.add(current)
                    current = name
            continue
        if line.strip() == "":
            errs.append(f"{where}: empty line")
            continue
        m = NAME.match(line)
        if not m:
            errs.append(f"{where}: not a sample: {line[:40]!r}")
            continue
        name, i = m.group(0), m.end()
        labels = {}
        try:
            if i < len(line) and line[i] == "{":
                labels, i = parse_labels(line + "\0", i)
        except (ValueError, IndexError) as e:
            errs.append(f"{where}: {e}")
            continue
        rest = line[i:].split(" ")
        if len(rest) < 2 or rest[0] != "" or not VALUE.match(rest[1]) or len(rest) > 3:
            errs.append(f"{where}: bad value part {line[i:]!r}")
            continue
        fam = family_of(name, types)
        if fam != current:
            if fam in done or fam in seen and fam not in types:
                errs.append(f"{where}: {fam}: samples of a family not together")
            if current:
                done.add(current)
            current = fam
        if fam not in types:
            errs.append(f"{where}: {name} has no TYPE")
        if fam not in helps:
            errs.append(f"{where}: {name} has no HELP")
        key = (name, tuple(sorted(labels.items())))
        if key in samples:
            errs.append(f"{where}: sample {key} twice")
        value = float(rest[1])
        samples[key] = value
        order.append(key)
        seen.add(fam)
        if types.get(fam) == "counter":
            if not name.endswith("_total"):
                errs.append(f"{where}: counter {name} does not end in _total")
            if value < 0:
                errs.append(f"{where}: counter {name} below 0")
        if not name.startswith("memguard_"):
            errs.append(f"{where}: {name} lacks the memguard_ prefix")
    errs += check_histograms(samples, types)
    # le ascending as written, within each series of buckets
    last = {}
    for name, labels in order:
        if not name.endswith("_bucket") or types.get(family_of(name, types)) != "histogram":
            continue
        d = dict(labels)
        le = d.pop("le", "nan")
        k = (name, tuple(sorted(d.items())))
        try:
            v = float(le)
        except ValueError:
            continue
        if k in last and v <= last[k]:
            errs.append(f"{name}{k[1]}: le {le} after {last[k]}")
        last[k] = v
    return errs, types, samples, helps


def promtool(text, what):
    if not shutil.which("promtool"):
        skip(f"{what}: promtool check metrics", "no promtool (Debian: prometheus)")
        return
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    tap(p.returncode == 0, f"{what}: promtool check metrics" + "".join(
        "\n# " + line for line in (p.stdout + p.stderr).splitlines()))


def check(text, what, required=REQUIRED):
    errs, types, samples, _ = parse(text)
    tap(not errs, f"{what}: the text exposition format's rules" + "".join("\n# " + e for e in errs[:20]))
    missing = [f for f in required if f not in types]
    tap(not missing, f"{what}: has the families watch documents" + (f" (missing: {missing})" if missing else ""))
    bad = [k for k in samples if "cgroup" in dict(k[1]) and dict(k[1]).get("id") != dict(k[1])["cgroup"]]
    tap(not bad, f"{what}: every sample with a cgroup label has an id label of the same value (cAdvisor's)"
        + "".join(f"\n# {k}" for k in bad[:5]))
    promtool(text, what)
    return types, samples


def cgroups_in(samples):
    return {dict(k[1])["cgroup"] for k in samples if "cgroup" in dict(k[1])}


def sample(mg, *args):
    p = subprocess.run([mg, "metrics-sample", *args], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    global n, failed
    print("TAP version 13")
    mg = sys.argv[1]
    p = subprocess.run([mg, "metrics-sample", "--pre-kill-defer"], capture_output=True)
    tap(p.returncode == 0 and p.stderr == b"", f"metrics-sample exits 0 (got {p.returncode})")
    try:
        text = p.stdout.decode("utf-8")
        tap(True, "metrics-sample: valid UTF-8")
    except UnicodeDecodeError as e:
        tap(False, f"metrics-sample: valid UTF-8 ({e})")
        text = p.stdout.decode("utf-8", "replace")
    types, samples = check(text, "metrics-sample")
    A = '/sandboxes/a "q" \\ \n\ufffd'
    a = (("cgroup", A), ("id", A))
    b = (("cgroup", "/sandboxes/b"), ("id", "/sandboxes/b"))

    def has(name, labels, value=None):
        key = (name, tuple(sorted(labels)))
        return key in samples and (value is None or samples[key] == value)

    tap('cgroup="/sandboxes/a \\"q\\" \\\\ \\n\ufffd",id="/sandboxes/a \\"q\\" \\\\ \\n\ufffd"' in text,
        "a cgroup name is escaped in both labels: quote, backslash, newline, invalid UTF-8 as U+FFFD")
    tap("memguard_used_bytes{cgroup=\"/sandboxes/b\"" not in text,
        "an actor whose report failed has no used_bytes sample (no made-up 0)")
    tap('memguard_limit_bytes{cgroup="/sandboxes/b",id="/sandboxes/b",source="default"} 1073741824\n' in text,
        "limit_bytes with its source")
    tap(has("memguard_stall_seconds", a, 1.5) and " 1.500000\n" in text, "stall_seconds in seconds (1.5)")
    tap(has("memguard_memory_high_bytes", a, 60397977), "memory_high_bytes where memory.high is set")
    tap(re.search(r'^memguard_memory_max_bytes\{cgroup="/sandboxes/a [^\n]*\} \+Inf$', text, re.M) is not None,
        "memory_max_bytes +Inf where memory.max is max (not left out)")
    tap('memguard_memory_high_bytes{cgroup="/fleet/near",id="/fleet/near"} +Inf\n' in text and
        'memguard_memory_max_bytes{cgroup="/fleet/near",id="/fleet/near"} 209715200\n' in text,
        "memory_high_bytes +Inf, memory_max_bytes a number, for another cgroup")
    # The library's counters (struct mg_stats) as the sample gives them.
    for line, desc in [
        ('memguard_ticks_total{cgroup="/sandboxes/b",id="/sandboxes/b",path="fast"} 1234\n', "ticks_total by path, fast"),
        ('memguard_ticks_total{cgroup="/sandboxes/b",id="/sandboxes/b",path="slow"} 0\n',
         "ticks_total by path, slow (0 is a sample)"),
        ('memguard_node_ticks_total{path="fast"} 2434\n', "node_ticks_total by path"),
        ('memguard_node_kills_total{reason="overshoot"} 5\n', "node_kills_total by reason"),
        ('memguard_node_errors_total 1\n', "node_errors_total"),
        ('memguard_node_dry_run_kills_total 2\n', "node_dry_run_kills_total"),
        ('memguard_node_unkillable_total 2\n', "node_unkillable_total (counted by watch)"),
        ('memguard_node_throttled_total 1\n', "node_throttled_total"),
        ('memguard_node_lend_expired_total 1\n', "node_lend_expired_total"),
        ('memguard_dry_run_kills_total{cgroup="/sandboxes/b",id="/sandboxes/b"} 2\n', "dry_run_kills_total per cgroup"),
        ('memguard_kills_deferred_total{cgroup="/sandboxes/b",id="/sandboxes/b"} 0\n',
         "kills_deferred_total per cgroup under --pre-kill-defer (0 is a sample)"),
        ('memguard_kills_averted_total{cgroup="/sandboxes/b",id="/sandboxes/b"} 0\n', "kills_averted_total per cgroup"),
        ('memguard_reclaims_total{cgroup="/sandboxes/b",id="/sandboxes/b"} 0\n',
         "reclaims_total of a guard with the actuator (0 is a sample)"),
        ('memguard_reclaimed_bytes_total{cgroup="/sandboxes/b",id="/sandboxes/b"} 0\n', "reclaimed_bytes_total per cgroup"),
        ('memguard_node_reclaims_total 5\n', "node_reclaims_total"),
        ('memguard_node_reclaimed_bytes_total 262144000\n', "node_reclaimed_bytes_total"),
    ]:
        tap(line in text, f"{desc}: {line.strip()}")
    for name, value in [("memguard_lends_total", 4), ("memguard_lend_expired_total", 1), ("memguard_lend_active", 1),
                        ("memguard_throttled_total", 1), ("memguard_reclaims_total", 3),
                        ("memguard_reclaimed_bytes_total", 150 << 20), ("memguard_empty_over_limit_total", 1)]:
        tap(has(name, a, value), f"{name} of a: {value}")
    # Parking (--park-hook): a's parks, parked now; the node's ends by how and the hook's runs.
    tap(has("memguard_parks_total", a, 2) and has("memguard_parked", a, 1) and not has("memguard_parks_total", b),
        "parks_total and parked of a, parked; none for b (no park, no --park-hook)")
    tap(has("memguard_node_park_ends_total", (("end", "thaw"),), 1) and
        has("memguard_node_park_ends_total", (("end", "deadline"),), 0) and
        not has("memguard_node_park_ends_total", (("end", "open"),)),
        "node_park_ends_total by how a park ended (no 'open')")
    tap(has("memguard_park_hooks_total", (("result", "thaw"),), 1) and
        has("memguard_park_hooks_total", (("result", "timeout"),), 0), "park_hooks_total by result")
    tap(has("memguard_park_hook_seconds_bucket", (("le", "0.5"),), 0) and
        has("memguard_park_hook_seconds_bucket", (("le", "1"),), 1) and
        has("memguard_park_hook_seconds_bucket", (("le", "+Inf"),), 1) and
        has("memguard_park_hook_seconds_sum", (), 0.812), "park_hook_seconds: a run of 0.812 s")
    _, ptext, _ = sample(mg, "--park")
    _, psamples = check(ptext, "metrics-sample --park")
    tap((("memguard_parks_total", b)) in psamples and psamples[("memguard_parks_total", b)] == 0 and
        psamples[("memguard_parked", b)] == 0, "under --park-hook every cgroup has park series, at 0")
    # Counters that cannot move are left out while 0, for as long as the cgroup is there.
    tap(not has("memguard_lends_total", b) and not has("memguard_lend_active", b) and
        not has("memguard_lend_expired_total", b), "b, never lent (watch begins no lend), has no lend series")
    q = (("cgroup", "/fleet/q70"), ("id", "/fleet/q70"))
    tap(not has("memguard_reclaims_total", q) and not has("memguard_reclaimed_bytes_total", q),
        "a guard without the reclaim actuator has no reclaim series")
    tap(has("memguard_kills_total", q + (("reason", "overshoot"),), 0) and has("memguard_errors_total", q, 0) and
        has("memguard_kernel_oom_kills_total", q, 0) and has("memguard_unkillable_total", q, 0),
        "counters that can move are there at 0 (kills, errors, kernel OOM kills, unkillable)")
    # The node's gauges are the sums of the cgroups'; every per-cgroup family has its node sum or a reason.
    for fam, node in SUMMED.items():
        if types.get(SUMMED[fam]) != "gauge":
            continue
        per = {}
        for (name, labels), v in samples.items():
            if name == fam:
                d = dict(labels)
                k = tuple((x, y) for x, y in sorted(d.items()) if x not in ("cgroup", "id", "source"))
                per[k] = per.get(k, 0) + v
        tot = {labels: v for (name, labels), v in samples.items() if name == node}
        ok = all(per.get(k, 0) == v for k, v in tot.items()) and all(k in tot for k in per)
        tap(ok, f"{node} is the sum of {fam} over the cgroups" + ("" if ok else f" ({tot} vs {per})"))
    unsummed = [f for f in PER_CGROUP if f not in SUMMED and f not in NOT_SUMMED]
    tap(not unsummed and all(SUMMED[f] in types for f in SUMMED),
        f"every per-cgroup family that adds up has its memguard_node_ sum (missing: {unsummed})")
    # The detect-to-kill histogram, as the sample's kills give it.
    for reason, le, v in [("overshoot", "0.1", 1), ("overshoot", "0.25", 1), ("overshoot", "0.5", 2),
                          ("overshoot", "3", 3), ("overshoot", "+Inf", 3), ("stall", "10", 0), ("stall", "15", 1),
                          ("stall", "30", 1), ("stall", "+Inf", 2)]:
        tap(has("memguard_detect_to_kill_seconds_bucket", (("reason", reason), ("le", le)), v),
            f"detect_to_kill_seconds {reason} le {le}: {v}")
    tap(has("memguard_detect_to_kill_seconds_sum", (("reason", "overshoot"),), 2.55) and
        has("memguard_detect_to_kill_seconds_count", (("reason", "stall"),), 2),
        "detect_to_kill_seconds sum in seconds (2.55), count (2)")
    les = [dict(k[1])["le"] for k in samples if k[0] == "memguard_detect_to_kill_seconds_bucket"
           and dict(k[1])["reason"] == "overshoot"]
    tap("0.25" in les and "0.5" in les and "30" in les and "+Inf" in les and len(les) <= 16,
        f"detect_to_kill_seconds buckets: ticks of 0.25 s up to 30 s ({', '.join(les)})")

    # --metrics-cgroups: which cgroups have series of their own.
    everyone = cgroups_in(samples)
    tap(len(everyone) == 8 and samples.get(("memguard_metrics_cgroups", ())) == 8,
        f"--cgroups all (the sample's default): all 8 cgroups, memguard_metrics_cgroups 8 (got {len(everyone)})")
    for arg, want in [("3", {A, "/fleet/near", "/fleet/acted"}),
                      ("4", {A, "/fleet/near", "/fleet/acted", "/fleet/q70"}),
                      ("5", {A, "/fleet/near", "/fleet/acted", "/fleet/q70", "/fleet/q64-shown"}),
                      ("none", set()), ("0", set()), ("all", everyone), ("100", everyone)]:
        rc, t, err = sample(mg, "--cgroups", arg)
        errs, ty, s, _ = parse(t)
        got = cgroups_in(s)
        tap(rc == 0 and not errs and got == want and s.get(("memguard_metrics_cgroups", ())) == len(want),
            f"--cgroups {arg}: {sorted(want) if len(want) < 8 else 'all'}" +
            ("" if got == want else f" (got {sorted(got)})") + "".join("\n# " + e for e in errs[:5]))
        if arg in ("3", "none"):
            missing = [f for f in NODE if f not in ty]
            tap(not missing and s.get(("memguard_node_used_bytes", ())) == samples[("memguard_node_used_bytes", ())],
                f"--cgroups {arg}: every node family, the sums over every cgroup all the same" +
                (f" (missing {missing})" if missing else ""))
            promtool(t, f"--cgroups {arg}")
    rc, t, err = sample(mg, "--cgroups", "many")
    tap(rc == 2 and "not none, all or a number of cgroups" in err, f"--cgroups many: refused (exit {rc})")
    tap("(see memguard --help)" in err, "... a usage error")
    # --dry-run: kills_total left out where 0 (a dry run kills nothing); without --pre-kill-defer no deferrals.
    rc, t, err = sample(mg, "--dry-run")
    errs, ty, s, _ = parse(t)
    tap(rc == 0 and not errs and not has_in(s, "memguard_kills_total", "/fleet/q70") and
        has_in(s, "memguard_kills_total", A) and has_in(s, "memguard_dry_run_kills_total", "/fleet/q70"),
        "--dry-run: dry_run_kills_total of every cgroup, kills_total only where it moved")
    tap(not has_in(s, "memguard_kills_deferred_total", "/sandboxes/b") and
        has_in(s, "memguard_kills_deferred_total", A),
        "without --pre-kill-defer: kills_deferred_total only where it moved")
    t2 = sample(mg)[1]
    s2 = parse(t2)[2]
    tap(not has_in(s2, "memguard_dry_run_kills_total", "/fleet/q70") and
        has_in(s2, "memguard_dry_run_kills_total", "/sandboxes/b"),
        "not a dry run: dry_run_kills_total only where it moved (b's 2)")
    quiet = sum(1 for k in s2 if dict(k[1]).get("cgroup") == "/fleet/q70")
    tap(quiet <= 17, f"a quiet cgroup has at most 17 series ({quiet}), not 23")

    # The checker itself must refuse what the format does not allow.
    for desc, bad in [
        ("a sample without TYPE", "# HELP memguard_x_total x\nmemguard_x_total 1\n"),
        ("a bad escape", '# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x{cgroup="a\\tb"} 1\n'),
        ("a family split in two", "# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x{a=\"1\"} 1\n"
         "# HELP memguard_y y\n# TYPE memguard_y gauge\nmemguard_y 1\nmemguard_x{a=\"2\"} 1\n"),
        ("a counter without _total", "# HELP memguard_x x\n# TYPE memguard_x counter\nmemguard_x 1\n"),
        ("a duplicate sample", "# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x 1\nmemguard_x 2\n"),
        ("no final newline", "# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x 1"),
        ("buckets that are not cumulative", "# HELP memguard_h h\n# TYPE memguard_h histogram\n"
         'memguard_h_bucket{le="1"} 2\nmemguard_h_bucket{le="2"} 1\nmemguard_h_bucket{le="+Inf"} 2\n'
         "memguard_h_sum 1\nmemguard_h_count 2\n"),
        ("a histogram without +Inf", "# HELP memguard_h h\n# TYPE memguard_h histogram\n"
         'memguard_h_bucket{le="1"} 2\nmemguard_h_sum 1\nmemguard_h_count 2\n'),
        ("a +Inf bucket that is not _count", "# HELP memguard_h h\n# TYPE memguard_h histogram\n"
         'memguard_h_bucket{le="1"} 1\nmemguard_h_bucket{le="+Inf"} 2\nmemguard_h_sum 1\nmemguard_h_count 3\n'),
        ("le out of order", "# HELP memguard_h h\n# TYPE memguard_h histogram\n"
         'memguard_h_bucket{le="2"} 1\nmemguard_h_bucket{le="1"} 1\nmemguard_h_bucket{le="+Inf"} 1\n'
         "memguard_h_sum 1\nmemguard_h_count 1\n"),
        ("an id label unlike the cgroup label", "# HELP memguard_x x\n# TYPE memguard_x gauge\n"
         'memguard_x{cgroup="/a",id="/b"} 1\n'),
    ]:
        saved_n, saved_failed = n, failed
        with contextlib.redirect_stdout(io.StringIO()):
            check(bad, desc, required=[])
        refused = failed > saved_failed
        n, failed = saved_n, saved_failed
        tap(refused, f"the checker refuses {desc}")
    for path in sys.argv[2:]:  # a real file has the per-cgroup families its cgroups and options give
        check(open(path, encoding="utf-8").read(), path, required=NODE)
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


def has_in(samples, name, cgroup):
    return any(k[0] == name and dict(k[1]).get("cgroup") == cgroup for k in samples)


if __name__ == "__main__":
    main()
