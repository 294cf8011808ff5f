#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `watch --metrics` text against the rules of the Prometheus text exposition
# format (version 0.0.4), as node_exporter's textfile collector parses it:
# every line a HELP, a TYPE, a comment or a sample; names and label names
# of their grammar; label values with only \\ \" \n escaped, valid UTF-8;
# a family's HELP and TYPE once, before its samples, its samples together;
# no sample twice; values numbers; counters end in _total and are >= 0;
# the file ends in a newline.  Also memguard's own: the memguard_ prefix,
# the families watch documents.  With promtool (Debian's prometheus) also
# `promtool check metrics`.  TAP on stdout.
#
#   tests/cli/memguard/test-metrics-format.py MEMGUARD-TEST-COMMANDS          # its `metrics-sample`
#   tests/cli/memguard/test-metrics-format.py MEMGUARD-TEST-COMMANDS FILE...  # and files watch wrote
import re
import shutil
import subprocess
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
VALUE = re.compile(r"^(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN)$")
REQUIRED = ["memguard_kills_total", "memguard_used_bytes", "memguard_limit_bytes", "memguard_current_bytes",
            "memguard_stall_seconds", "memguard_lend_active", "memguard_cgroups",
            "memguard_last_update_timestamp_seconds", "memguard_ticks_total", "memguard_node_ticks_total",
            "memguard_errors_total", "memguard_node_errors_total", "memguard_lends_total",
            "memguard_lend_expired_total", "memguard_throttled_total", "memguard_kernel_oom_kills_total",
            "memguard_dry_run_kills_total", "memguard_node_dry_run_kills_total", "memguard_kills_deferred_total",
            "memguard_kills_averted_total", "memguard_reclaims_total", "memguard_reclaimed_bytes_total",
            "memguard_node_reclaims_total", "memguard_node_reclaimed_bytes_total"]
n = failed = 0


def tap(good, desc):
    global n, failed
    n += 1
    failed += not good
    print(("ok" if good else "not ok") + f" {n} - {desc}")


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


def check(text, what):
    errs = []
    if not text.endswith("\n"):
        errs.append("does not end in a newline")
    types, helps, seen, done, current = {}, {}, set(), set(), None
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
        if name != current:
            if name in done or name in seen and name not in types:
                errs.append(f"{where}: {name}: samples of a family not together")
            if current:
                done.add(current)
            current = name
        if name not in types:
            errs.append(f"{where}: {name} has no TYPE")
        if name not in helps:
            errs.append(f"{where}: {name} has no HELP")
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            errs.append(f"{where}: sample {key} twice")
        seen.add(key)
        seen.add(name)
        if types.get(name) == "counter":
            if not name.endswith("_total"):
                errs.append(f"{where}: counter {name} does not end in _total")
            if float(rest[1]) < 0:
                errs.append(f"{where}: counter {name} below 0")
        if not name.startswith("memguard_"):
            errs.append(f"{where}: {name} lacks the memguard_ prefix")
    tap(not errs, f"{what}: the text exposition format's rules" + "".join("\n# " + e for e in errs[:20]))
    missing = [f for f in REQUIRED if f not in types]
    tap(not missing, f"{what}: has {', '.join(REQUIRED)}" + (f" (missing: {missing})" if missing else ""))
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        tap(p.returncode == 0, f"{what}: promtool check metrics" + "".join(
            "\n# " + l for l in (p.stdout + p.stderr).splitlines()))
    else:
        n_skip = n + 1
        print(f"ok {n_skip} - {what}: promtool check metrics # SKIP no promtool (Debian: prometheus)")
        globals()["n"] = n_skip
    return types


print("TAP version 13")
mg = sys.argv[1]
p = subprocess.run([mg, "metrics-sample"], capture_output=True)
tap(p.returncode == 0 and p.stderr == b"", f"metrics-sample exits 0 (got {p.returncode})")
try:
    text = p.stdout.decode("utf-8")
    tap(True, "metrics-sample: valid UTF-8")
except UnicodeDecodeError as e:
    tap(False, f"metrics-sample: valid UTF-8 ({e})")
    text = p.stdout.decode("utf-8", "replace")
check(text, "metrics-sample")
tap('cgroup="/sandboxes/a \\"q\\" \\\\ \\n\ufffd"' in text, "a cgroup name is escaped: quote, backslash, newline, "
    "invalid UTF-8 as U+FFFD")
tap("memguard_used_bytes{cgroup=\"/sandboxes/b\"}" not in text,
    "an actor whose report failed has no used_bytes sample (no made-up 0)")
tap('memguard_limit_bytes{cgroup="/sandboxes/b",source="default"} 1073741824' in text, "limit_bytes with its source")
tap("memguard_stall_seconds{cgroup=" in text and " 1.500000\n" in text, "stall_seconds in seconds (1.5)")
# The library's counters (struct mg_stats) as the sample gives them.
for sample, desc in [
    ('memguard_ticks_total{cgroup="/sandboxes/b",path="fast"} 1234\n', "ticks_total by path, fast"),
    ('memguard_ticks_total{cgroup="/sandboxes/b",path="slow"} 0\n', "ticks_total by path, slow (0 is a sample)"),
    ('memguard_node_ticks_total{path="fast"} 2434\n', "node_ticks_total by path"),
    ('memguard_node_kills_total{reason="overshoot"} 5\n', "node_kills_total by reason"),
    ('memguard_node_errors_total 1\n', "node_errors_total"),
    ('memguard_node_dry_run_kills_total 2\n', "node_dry_run_kills_total"),
    ('memguard_dry_run_kills_total{cgroup="/sandboxes/b"} 2\n', "dry_run_kills_total per cgroup"),
    ('memguard_kills_deferred_total{cgroup="/sandboxes/b"} 0\n', "kills_deferred_total per cgroup"),
    ('memguard_kills_averted_total{cgroup="/sandboxes/b"} 0\n', "kills_averted_total per cgroup"),
    ('memguard_reclaims_total{cgroup="/sandboxes/b"} 0\n', "reclaims_total per cgroup (0 is a sample)"),
    ('memguard_reclaimed_bytes_total{cgroup="/sandboxes/b"} 0\n', "reclaimed_bytes_total per cgroup"),
    ('memguard_node_reclaims_total 5\n', "node_reclaims_total"),
    ('memguard_node_reclaimed_bytes_total 262144000\n', "node_reclaimed_bytes_total"),
]:
    tap(sample in text, f"{desc}: {sample.strip()}")
tap(re.search(r'^memguard_lends_total\{cgroup="/sandboxes/a [^\n]*\} 4$', text, re.M) is not None,
    "lends_total of a: 4")
tap(re.search(r'^memguard_lend_expired_total\{cgroup="/sandboxes/a [^\n]*\} 1$', text, re.M) is not None,
    "lend_expired_total of a: 1")
tap(re.search(r'^memguard_throttled_total\{cgroup="/sandboxes/a [^\n]*\} 1$', text, re.M) is not None,
    "throttled_total of a: 1")
tap(re.search(r'^memguard_reclaims_total\{cgroup="/sandboxes/a [^\n]*\} 3$', text, re.M) is not None,
    "reclaims_total of a: 3")
tap(re.search(r'^memguard_reclaimed_bytes_total\{cgroup="/sandboxes/a [^\n]*\} 157286400$', text, re.M) is not None,
    "reclaimed_bytes_total of a: 150 MiB")
tap(re.search(r'^memguard_empty_over_limit_total\{cgroup="/sandboxes/a [^\n]*\} 1$', text, re.M) is not None,
    "empty_over_limit_total of a (counted by watch): 1")
# The checker itself must refuse what the format does not allow.
for desc, bad in [
    ("a sample without TYPE", "# HELP memguard_x_total x\nmemguard_x_total 1\n"),
    ("a bad escape", '# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x{cgroup="a\\tb"} 1\n'),
    ("a family split in two", "# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x{a=\"1\"} 1\n"
     "# HELP memguard_y y\n# TYPE memguard_y gauge\nmemguard_y 1\nmemguard_x{a=\"2\"} 1\n"),
    ("a counter without _total", "# HELP memguard_x x\n# TYPE memguard_x counter\nmemguard_x 1\n"),
    ("a duplicate sample", "# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x 1\nmemguard_x 2\n"),
    ("no final newline", "# HELP memguard_x x\n# TYPE memguard_x gauge\nmemguard_x 1"),
]:
    saved_n, saved_failed = n, failed
    import io, contextlib
    with contextlib.redirect_stdout(io.StringIO()):
        check(bad, desc)
    refused = failed > saved_failed
    n, failed = saved_n, saved_failed
    tap(refused, f"the checker refuses {desc}")
for path in sys.argv[2:]:
    check(open(path, encoding="utf-8").read(), path)
print(f"1..{n}")
sys.exit(1 if failed else 0)
