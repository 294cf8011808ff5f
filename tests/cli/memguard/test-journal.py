#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# watch's journal entries without a journal: one event of each type, and
# the library's log lines of each level, as entries
# (`memguard-test-commands journal-sample`, the export form: a
# "FIELD=value" line each, a blank line after each entry), text and --json.
# Checked: every entry has PRIORITY= and MESSAGE=, each event its
# MESSAGE_ID= and its JSON object's fields as MEMGUARD_*; the library's
# warnings and information kept at their priority, its debugging not; the
# MESSAGE_IDs of the code are those of the catalog (each with a Subject),
# and each is listed in memguard(1); every @FIELD@ the catalog's text fills
# in is a field the entries of its id carry; `journalctl --update-catalog`
# takes the catalog (where journalctl is installed).  TAP on stdout.
#
#   tests/cli/memguard/test-journal.py MEMGUARD-TEST-COMMANDS CATALOG MEMGUARD.1
#   (CATALOG: tools/systemd/memguard.catalog)
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

tc, catalog_path, man_path = sys.argv[1], sys.argv[2], sys.argv[3]
n = failed = 0


def tap(good, desc, diag=None):
    global n, failed
    n += 1
    failed += not good
    print(("ok" if good else "not ok") + f" {n} - {desc}")
    if not good and diag:
        for line in str(diag).splitlines():
            print("# " + line)


def entries(*args):
    """The entries journal-sample prints, each a dict of its fields."""
    p = subprocess.run([tc, "journal-sample", *args], capture_output=True, text=True)
    out = []
    for block in p.stderr.split("\n\n"):
        if not block.strip():
            continue
        e = {}
        for line in block.split("\n"):
            key, sep, value = line.partition("=")
            assert sep, f"not FIELD=value: {line!r}"
            e[key] = value
        out.append(e)
    return p.returncode, out


ids = {}
for line in subprocess.run([tc, "journal-ids"], capture_output=True, text=True, check=True).stdout.splitlines():
    name, mid, prio = line.split()
    ids[name] = (mid, int(prio))

print("TAP version 13")
LIBRARY_EVENTS = {"kill", "kill-dry-run", "pre-kill", "kill-averted", "lend-begin", "lend-end", "lend-expired",
                  "throttled", "empty-over-limit", "unkillable", "kernel-oom", "error", "gone", "reclaim"}
tap(LIBRARY_EVENTS <= set(ids), "a MESSAGE_ID for each of the library's event types",
    sorted(LIBRARY_EVENTS - set(ids)))
tap(len({m for m, _ in ids.values()}) == len(ids), "no two kinds share a MESSAGE_ID")

for fmt in ([], ["--json"]):
    what = "json" if fmt else "text"
    st, es = entries(*fmt)
    tap(st == 0 and len(es) > 20, f"{what}: journal-sample prints entries ({len(es)})")
    bad = [e for e in es if not re.fullmatch(r"[0-7]", e.get("PRIORITY", "")) or "MESSAGE" not in e]
    tap(not bad, f"{what}: every entry has PRIORITY= (0-7) and MESSAGE=", bad[:2])
    bad = [k for e in es for k in e if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", k)]
    tap(not bad, f"{what}: every field name is one journald takes", bad[:5])
    seen = set()
    for e in es:
        ev = e.get("MEMGUARD_EVENT")
        if ev in ids:
            seen.add(ev)
            if e.get("MESSAGE_ID") != ids[ev][0]:
                tap(False, f"{what}: {ev}: MESSAGE_ID={ids[ev][0]}", e)
                break
    else:
        tap(True, f"{what}: each event's entry carries its kind's MESSAGE_ID")
    tap(LIBRARY_EVENTS | {"watch", "unwatch", "reload", "dropped"} <= seen,
        f"{what}: an entry of every kind", sorted(set(ids) - seen))
    kills = [e for e in es if e.get("MEMGUARD_EVENT") == "kill"]
    want = {"MEMGUARD_CGROUP", "MEMGUARD_REASON", "MEMGUARD_LIMIT_BYTES", "MEMGUARD_USED_BYTES",
            "MEMGUARD_ANON_BYTES", "MEMGUARD_METHOD", "MEMGUARD_KILL_ID", "MEMGUARD_DRY_RUN"}
    tap(kills and all(want <= set(e) for e in kills) and all(e["PRIORITY"] == "4" for e in kills),
        f"{what}: a kill is a warning with the kill record's fields", kills[:1])
    pre = {e["MEMGUARD_CGROUP"]: e["MEMGUARD_KILL_ID"] for e in es
           if e.get("MEMGUARD_EVENT") == "pre-kill" and e["MEMGUARD_CGROUP"].endswith(("/a", "/b"))}
    # the first end of each guard's decision (a kill after an averted one is a decision of its own)
    ends = {}
    for e in es:
        cg = e.get("MEMGUARD_CGROUP", "")
        if e.get("MEMGUARD_EVENT") in ("kill", "kill-averted") and cg in pre:
            ends.setdefault(cg, e["MEMGUARD_KILL_ID"])
    tap(len(pre) == 2 and pre == ends and len(set(pre.values())) == 2,
        f"{what}: MEMGUARD_KILL_ID links each guard's pre-kill to its end", (pre, ends))
    logs = {e["PRIORITY"]: e["MESSAGE"] for e in es if "of the library" in e["MESSAGE"]}
    tap(logs.get("4", "").endswith("a warning of the library") and
        logs.get("6", "").endswith("information of the library"),
        f"{what}: the library's warnings and information kept, at priority 4 and 6", logs)
    tap(not any("debugging of the library" in e["MESSAGE"] for e in es), f"{what}: its debugging not")
    events = [e for e in es if e.get("MEMGUARD_EVENT") in LIBRARY_EVENTS and e.get("MEMGUARD_WHAT") != "log"]
    if fmt:
        tap(all(json.loads(e["MESSAGE"])["event"] == e["MEMGUARD_EVENT"] for e in events),
            "json: MESSAGE= is the event's JSON object")
    else:
        tap(all(e["MESSAGE"].startswith("memguard") for e in events), "text: MESSAGE= is the event's text line")
    by_id = {}
    for e in es:
        if "MESSAGE_ID" in e:
            by_id.setdefault(e["MESSAGE_ID"], []).append(set(e))
    if not fmt:
        text_fields = by_id

# The catalog: the same ids, a Subject each, and what its text fills in.
cat = {}
cur = None
for line in open(catalog_path, encoding="utf-8"):
    m = re.match(r"^-- ([0-9a-f]{32})$", line.rstrip("\n"))
    if m:
        cur = m.group(1)
        cat[cur] = ""
    elif cur:
        cat[cur] += line
code_ids = {m for m, _ in ids.values()}
tap(set(cat) == code_ids, "the catalog's MESSAGE_IDs are the code's",
    f"code only: {sorted(code_ids - set(cat))}, catalog only: {sorted(set(cat) - code_ids)}")
tap(all(re.search(r"^Subject: \S", t, re.M) and re.search(r"^Defined-By: memguard$", t, re.M) for t in cat.values()),
    "each catalog entry has a Subject and Defined-By: memguard")
missing = []
for mid, text in cat.items():
    for f in set(re.findall(r"@([A-Z0-9_]+)@", text)):
        if not any(f in fields for fields in text_fields.get(mid, [])):
            missing.append(f"{mid} @{f}@")
tap(not missing, "every @FIELD@ of the catalog is a field its entries carry", missing)

man = open(man_path, encoding="utf-8").read()
tap(all(mid in man for mid in code_ids), "memguard(1) lists every MESSAGE_ID",
    [f"{k} {v[0]}" for k, v in ids.items() if v[0] not in man])

jc = shutil.which("journalctl")
if not jc:
    n += 1
    print(f"ok {n} - journalctl --update-catalog takes the catalog # SKIP no journalctl (Debian: systemd)")
else:
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(f"{root}/usr/lib/systemd/catalog")
        shutil.copy(catalog_path, f"{root}/usr/lib/systemd/catalog/memguard.catalog")
        u = subprocess.run([jc, f"--root={root}", "--update-catalog"], capture_output=True, text=True)
        listed = subprocess.run([jc, f"--root={root}", "--list-catalog"], capture_output=True, text=True)
        got = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
        tap(u.returncode == 0 and not u.stderr.strip() and got == code_ids,
            f"journalctl --update-catalog takes the catalog ({len(got)} entries)", u.stderr + listed.stderr)

print(f"1..{n}")
sys.exit(1 if failed else 0)
