#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The JSON events of the memguard command against events.schema.json: one of
# each type, printed by the code run and watch print with
# (`memguard-test-commands event-sample --json`), and any JSON lines of files given after it (the VM
# test's output).  With python3-jsonschema the schema is checked by it
# (Draft 2020-12); without, by the small validator below, which knows the
# keywords the schema uses and refuses any other.  Lines the schema must
# refuse (no time, a field it does not know, a local time) prove the check
# can fail.  TAP on stdout.
#
#   tests/cli/memguard/test-events-schema.py SCHEMA MEMGUARD-TEST-COMMANDS [FILE...]
#   (SCHEMA: tools/memguard/events.schema.json)
import copy
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

# What the schema must refuse.
kill = next(o for o in objs if o.get("event") == "kill")
bad = []
for desc, mutate in [
    ("no time", lambda o: o.pop("time")),
    ("a local time with an offset", lambda o: o.__setitem__("time", "2026-12-01T23:45:12.345+01:00")),
    ("a time without milliseconds", lambda o: o.__setitem__("time", "2026-12-01T22:45:12Z")),
    ("another format_version", lambda o: o.__setitem__("format_version", 2)),
    ("a field the schema does not know", lambda o: o.__setitem__("surprise", 1)),
    ("a byte count as a string", lambda o: o.__setitem__("used_bytes", "83886080")),
    ("an unknown reason", lambda o: o.__setitem__("reason", "boredom")),
]:
    o = copy.deepcopy(kill)
    mutate(o)
    tap(bool(check(o)), f"refused: a kill with {desc}")
tap(bool(check({"event": "frobnicated", "time": kill["time"], "format_version": 1})), "refused: an unknown event")

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
