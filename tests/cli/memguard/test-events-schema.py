#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The JSON events of the memguard command against events.schema.json: one of
# each type, printed by the code run and watch print with
# (`memguard-test-commands event-sample --json`), and any JSON lines of files given after it (the VM
# test's output).  With python3-jsonschema the schema is checked by it
# (Draft 2020-12); without, by the small validator below, which knows the
# keywords the schema uses and refuses any other.  Lines the schema must
# refuse (no time, a local time, a required field missing) prove the check
# can fail; a line with a field added must pass (format_version 1 may gain
# fields); kill_id must link a pre-kill to its kill.  TAP on stdout.
#
#   tests/cli/memguard/test-events-schema.py SCHEMA MEMGUARD-TEST-COMMANDS [FILE...]
#   (SCHEMA: tools/memguard/events.schema.json)
import copy
import errno
import json
import re
import subprocess
import sys

schema_path, mg = sys.argv[1], sys.argv[2]
schema = json.load(open(schema_path))
n = failed = 0


def tap(good, desc):
    global n, failed
    n += 1
    failed += not good
    print(("ok" if good else "not ok") + f" {n} - {desc}")


TYPES = {"object": dict, "string": str, "boolean": bool, "array": list, "null": type(None)}
KNOWN = {"$schema", "$id", "title", "description", "type", "properties", "required", "additionalProperties",
         "allOf", "if", "then", "enum", "const", "pattern", "minimum", "maximum", "items", "maxItems",
         "minLength", "maxLength"}


def is_type(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def errors(s, v, at="$"):
    """The fallback validator: a list of messages, empty if v is valid."""
    unknown = set(s) - KNOWN
    if unknown:
        return [f"{at}: schema keyword(s) this validator does not know: {sorted(unknown)}"]
    out = []
    if "type" in s:
        ts = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(is_type(v, t) for t in ts):
            return [f"{at}: {v!r} is not of type {ts}"]
    if "const" in s and v != s["const"]:
        out.append(f"{at}: {v!r} is not {s['const']!r}")
    if "enum" in s and v not in s["enum"]:
        out.append(f"{at}: {v!r} is not one of {s['enum']}")
    if isinstance(v, str):
        if "pattern" in s and not re.search(s["pattern"], v):
            out.append(f"{at}: {v!r} does not match {s['pattern']}")
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", len(v)):
            out.append(f"{at}: {v!r} has the wrong length")
    if isinstance(v, int) and not isinstance(v, bool):
        if v < s.get("minimum", v) or v > s.get("maximum", v):
            out.append(f"{at}: {v} out of range")
    if isinstance(v, list):
        if len(v) > s.get("maxItems", len(v)):
            out.append(f"{at}: too many items")
        for i, x in enumerate(v):
            out += errors(s.get("items", {}), x, f"{at}[{i}]")
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                out.append(f"{at}: '{k}' is a required property")
        props = s.get("properties", {})
        for k, x in v.items():
            if k in props:
                out += errors(props[k], x, f"{at}.{k}")
            elif s.get("additionalProperties", True) is False:
                out.append(f"{at}: additional property '{k}'")
    for sub in s.get("allOf", []):
        out += errors(sub, v, at)
    if "if" in s and not errors(s["if"], v, at):
        out += errors(s.get("then", {}), v, at)
    return out


try:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)
    _v = jsonschema.Draft202012Validator(schema)
    validator = "python3-jsonschema"

    def check(obj):
        return [e.message for e in _v.iter_errors(obj)]
except ImportError:
    validator = "the test's own validator"

    def check(obj):
        return errors(schema, obj)

print("TAP version 13")
print(f"# validating with {validator}")
p = subprocess.run([mg, "event-sample", "--json"], capture_output=True, text=True)
tap(p.returncode == 0 and p.stdout == "", f"event-sample --json exits 0 (got {p.returncode})")
lines = [l for l in p.stderr.splitlines() if l]
objs = []
for l in lines:
    try:
        objs.append(json.loads(l))
    except ValueError as e:
        tap(False, f"parses: {l[:60]}: {e}")
tap(len(objs) == len(lines) and objs, f"every line is one JSON object ({len(lines)} lines)")
for o in objs:
    errs = check(o)
    tap(not errs, f"{o.get('event')}{' (' + o['what'] + ')' if 'what' in o else ''} matches the schema" +
        ("".join("\n# " + e for e in errs)))
seen = {o.get("event") for o in objs}
declared = set(schema["properties"]["event"]["enum"])
tap(seen == declared, f"the sample has every event the schema declares (missing: {sorted(declared - seen)}, "
    f"undeclared: {sorted(seen - declared)})")
throttled = next((o for o in objs if o.get("event") == "throttled"), {})
tap(throttled.get("est_delay_usec") == 414000 and throttled.get("overage_permyriad") == 764,
    "the throttle event carries its figures")
# The sample's two reclaim doses: one on pressure to a sibling that
# counted, one on headroom the kernel cut short (-EAGAIN).
reclaims = {o.get("why"): o for o in objs if o.get("event") == "reclaim"}
rp, rh = reclaims.get("pressure", {}), reclaims.get("headroom", {})
tap(rp.get("target", "").endswith("/background") and rp.get("asked_bytes") == 64 << 20 and
    rp.get("achieved_bytes") == 60 << 20 and rp.get("duration_usec") == 85250 and rp.get("counted") is True and
    rp.get("error") is None and rp.get("errno") is None,
    f"a pressure dose: its target, asked, achieved, duration, counted, no error ({rp})")
tap(rp.get("windows") == 3 and rp.get("some_usec") == [12000, 15300, 20100] and rp.get("full_usec") == [0, 1000, 2500]
    and rp.get("current_bytes") is None and rp.get("file_bytes") is None,
    "a pressure dose: the stall of each window, oldest first; no headroom figures")
tap(rh.get("error") == "Resource temporarily unavailable" and rh.get("errno") == 11 and rh.get("counted") is False and
    rh.get("current_bytes") == 250 << 20 and rh.get("file_bytes") == 40 << 20 and rh.get("windows") is None and
    rh.get("some_usec") is None and rh.get("full_usec") is None and rh.get("target") == rh.get("cgroup"),
    f"a headroom dose: its error and errno, not counted, memory.current and the file cache; no windows ({rh})")

# What the schema must refuse.
kill = next(o for o in objs if o.get("event") == "kill")
bad = []
for desc, mutate in [
    ("no time", lambda o: o.pop("time")),
    ("a local time with an offset", lambda o: o.__setitem__("time", "2026-12-01T23:45:12.345+01:00")),
    ("a time without milliseconds", lambda o: o.__setitem__("time", "2026-12-01T22:45:12Z")),
    ("another format_version", lambda o: o.__setitem__("format_version", 2)),
    ("a byte count as a string", lambda o: o.__setitem__("used_bytes", "83886080")),
    ("an unknown reason", lambda o: o.__setitem__("reason", "boredom")),
]:
    o = copy.deepcopy(kill)
    mutate(o)
    tap(bool(check(o)), f"refused: a kill with {desc}")
tap(bool(check({"event": "frobnicated", "time": kill["time"], "format_version": 1})), "refused: an unknown event")
for desc, mutate in [
    ("an unknown why", lambda o: o.__setitem__("why", "boredom")),
    ("a window's stall as a string", lambda o: o.__setitem__("some_usec", ["12000"])),
    ("more windows than a predicate spans", lambda o: o.__setitem__("some_usec", [1] * 9)),
    ("counted as a number", lambda o: o.__setitem__("counted", 1)),
    ("no target", lambda o: o.pop("target")),
]:
    o = copy.deepcopy(rp)
    mutate(o)
    tap(bool(check(o)), f"refused: a reclaim with {desc}")

# Format version 1 may gain fields (docs/api-stability.md): a reader that
# validates against this schema must not refuse a newer memguard's lines,
# so every event stays valid with a field added, and every field the
# schema requires is refused when missing.
branches = {b["if"]["properties"]["event"]["const"]: b["then"] for b in schema["allOf"]}
tap(all("additionalProperties" not in t or t["additionalProperties"] is True for t in branches.values()) and
    schema.get("additionalProperties", True) is True, "the schema is open to added fields on every event")
for o in objs:
    ev = o.get("event")
    x = copy.deepcopy(o)
    x["added_in_a_later_release"] = {"any": [1, "value"]}
    errs = check(x)
    tap(not errs, f"accepted: {ev} with a field added" + "".join("\n# " + e for e in errs))
for ev, t in sorted(branches.items()):
    o = next((o for o in objs if o.get("event") == ev), None)
    if o is None:
        continue
    kept = [k for k in t.get("required", []) if not check({f: v for f, v in o.items() if f != k})]
    tap(not kept, f"refused: {ev} without any one of its {len(t.get('required', []))} required fields"
        f" (accepted without: {kept})")
# The schema no longer refuses a field it does not list: that the printer
# prints only fields the schema documents is checked here instead.
for o in objs:
    props = set(schema["properties"]) | set(branches.get(o.get("event"), {}).get("properties", {}))
    extra = sorted(set(o) - props)
    tap(not extra, f"{o.get('event')}: every field is in the schema (not: {extra})")

# kill_id links a decision's events: a pre-kill and the kill, kill-dry-run
# or kill-averted of the same guard that follows it; the sample
# interleaves two guards' decisions (cgroups .../a and .../b).
# A park continues its decision: the park and the thaw (or kill) that ends
# it carry one id, and so does watch's park-hook event between them.
DECISION = ("pre-kill", "kill", "kill-dry-run", "kill-averted", "park", "thaw")
dec = [o for o in objs if o.get("event") in DECISION]
tap(dec and all(isinstance(o.get("kill_id"), int) and o["kill_id"] >= 1 for o in dec),
    "every pre-kill, kill, kill-dry-run, kill-averted, park and thaw event has a kill_id")
tap(all("kill_id" not in o for o in objs if o.get("event") not in DECISION + ("park-hook",)),
    "no other event has a kill_id")
by_id = {}
for o in dec:
    by_id.setdefault(o.get("kill_id"), []).append(o)
shapes = sorted(tuple(o["event"] for o in v) for v in by_id.values())
tap(all(s in (("kill",), ("kill-dry-run",), ("pre-kill", "kill"), ("pre-kill", "kill-averted"),
              ("pre-kill", "kill-dry-run"), ("park", "thaw"), ("park", "kill"), ("pre-kill", "park", "thaw"),
              ("pre-kill", "park", "kill")) for s in shapes),
    f"each kill_id is one decision: a pre-kill and its end, or a kill alone (got {shapes})")
tap(all(len({o["cgroup"] for o in v}) == 1 for v in by_id.values()), "the events of one kill_id are of one cgroup")
ends = {o["cgroup"].rsplit("/", 1)[-1]: o for o in dec if o["event"] == "kill-averted"}
pres = {o["cgroup"].rsplit("/", 1)[-1]: o for o in dec if o["event"] == "pre-kill"}
tap("a" in ends and "a" in pres and ends["a"]["kill_id"] == pres["a"]["kill_id"] and
    "b" in pres and pres["b"]["kill_id"] != pres["a"]["kill_id"],
    "interleaved: guard a's kill-averted carries a's pre-kill id, not b's, which came between")

# Parking (watch --park-hook): the park's record, its thaw, a kill that
# ended a park by its deadline, the hook's runs.
park = next((o for o in objs if o.get("event") == "park"), {})
thaw = next((o for o in objs if o.get("event") == "thaw"), {})
tap(park.get("park_id") == 3 and park.get("park_end") == "open" and park.get("parked_ms") is None and
    park.get("frozen_after_ms") == 10 and park.get("hook_timeout_ms") == 30000 and
    thaw.get("park_id") == 3 and thaw.get("park_end") == "thaw" and thaw.get("parked_ms") == 2000 and
    thaw.get("kill_id") == park.get("kill_id"),
    f"a park and its thaw: one park_id and kill_id, how long it was frozen ({park}, {thaw})")
pk = [o for o in objs if o.get("event") == "kill" and o.get("park_id")]
tap(len(pk) == 1 and pk[0]["park_end"] == "deadline" and pk[0]["parked_ms"] == 33750,
    f"a kill that ended a park says how ({pk})")
tap(all(o.get("park_id") is None and o.get("park_end") is None for o in objs
        if o.get("event") in ("kill", "kill-dry-run") and o not in pk), "a kill that was no park's: its park fields null")
hooks = {o["result"]: o for o in objs if o.get("event") == "park-hook"}
tap(set(hooks) == {"saved", "thaw", "timeout", "cancelled", "error"}, f"the sample's hook runs ({sorted(hooks)})")
h = hooks.get("saved", {})
tap(h.get("exit_status") == 0 and h.get("action") == "kill" and h.get("output") == "snapshot written\nsaved to /var/snap/3\n"
    and h.get("duration_ms") == 2150, f"a hook that saved the actor: exit 0, a kill, its output ({h})")
h = hooks.get("thaw", {})
tap(h.get("exit_status") == 10 and h.get("action") == "thaw" and h.get("limit_bytes") == 512 << 20 and
    h.get("limit_source") == "xattr", f"a thaw into the limit read again ({h})")
h = hooks.get("timeout", {})
tap(h.get("exit_status") is None and h.get("action") == "kill" and h.get("output_bytes") == 90000,
    f"a timeout: no exit status, a kill ({h})")
h = hooks.get("cancelled", {})
tap(h.get("action") == "none" and h.get("park_end") == "deadline", f"a run cancelled by the park's deadline ({h})")
h = hooks.get("error", {})
tap(h.get("errno") == errno.EUSERS and h.get("exit_status") is None and h.get("action") == "kill",
    f"a run past the runner's bound of runs at once: not run (EUSERS), a kill ({h})")

# Lines from the kernel suite's runs of the tool ("# json: {...}" or bare).
for path in sys.argv[3:]:
    got = 0
    for l in open(path, errors="replace"):
        l = l.strip()
        if l.startswith("# json: "):
            l = l[len("# json: "):]
        if not l.startswith('{"event"'):
            continue
        got += 1
        errs = check(json.loads(l))
        tap(not errs, f"{path}: {l[:70]}" + "".join("\n# " + e for e in errs))
    tap(got > 0, f"{path}: has event lines ({got})")

print(f"1..{n}")
sys.exit(1 if failed else 0)
