#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `watch --metrics` text through the real Prometheus components it is made
# for: Debian's prometheus-node-exporter reads it with its textfile
# collector (--collector.textfile.directory, every other collector off) and
# is scraped over loopback on a free port; every memguard sample of the file
# must come out of the scrape with its labels and value, with
# node_textfile_scrape_error 0, and `promtool check metrics` (Debian's
# prometheus) must pass on what the scrape gives of memguard's families.  A
# file replaced as watch replaces it (written aside, renamed over) is read
# anew at the next scrape; watch's FILE.tmp is not read; a broken file is a
# scrape error (the check can fail).  Each part is a TAP skip, with the
# reason, where its binary is missing.  Connects to 127.0.0.1 only.
#
#   tests/cli/memguard/test-metrics-scrape.py MEMGUARD-TEST-COMMANDS
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

spec = importlib.util.spec_from_file_location(
    "metrics_format", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test-metrics-format.py"))
fmt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fmt)

n = failed = 0


def tap(good, desc):
    global n, failed
    n += 1
    failed += not good
    print(("ok" if good else "not ok") + f" {n} - {desc}", flush=True)


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}", flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def start_exporter(binary, textdir, log):
    """node_exporter with the textfile collector alone on a free loopback port: (process, url) or (None, why)."""
    why = "did not start"
    for _ in range(3):  # a port taken between the probe and the bind: another one
        port = free_port()
        p = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                              "--collector.textfile", f"--collector.textfile.directory={textdir}"],
                             stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and p.poll() is None:
            try:
                get(url, timeout=1)
                return p, url
            except OSError:
                time.sleep(0.1)
        if p.poll() is None:
            p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        why = f"exited {p.returncode}" if p.returncode is not None else "no answer in 10 s"
    return None, why


def memguard_part(text):
    """The memguard_ families of a scrape (HELP, TYPE and samples), as a text of their own."""
    return "".join(line + "\n" for line in text.split("\n")
                   if line.startswith("memguard_") or line.startswith("# HELP memguard_")
                   or line.startswith("# TYPE memguard_"))


def normal(samples):
    """Samples with le as a number: node_exporter writes the bounds its own way."""
    out = {}
    for (name, labels), v in samples.items():
        out[(name, tuple(sorted((k, str(float(x)) if k == "le" else x) for k, x in labels)))] = v
    return out


def scrape_value(text, name, labels=()):
    for line in text.split("\n"):
        if line.startswith(name + " ") or line.startswith(name + "{"):
            if all(f'{k}="{v}"' in line for k, v in labels):
                return float(line.rsplit(" ", 1)[1])
    return None


def replace(path, text):
    """As watch's writer does: path.tmp written, then renamed over path."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def main():
    print("TAP version 13")
    mg = sys.argv[1]
    full = subprocess.run([mg, "metrics-sample", "--pre-kill-defer"], capture_output=True, check=True).stdout.decode()
    none = subprocess.run([mg, "metrics-sample", "--cgroups", "none"], capture_output=True,
                          check=True).stdout.decode()
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if not binary:
        why = "no node_exporter (Debian: prometheus-node-exporter)"
        for desc in ["node_exporter's textfile collector reads the file", "every sample comes out of the scrape",
                     "promtool check metrics on the scrape", "a replaced file is read anew",
                     "a broken file is a scrape error"]:
            skip(desc, why)
        print(f"1..{n}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memguard-scrape-") as tmp:
        textdir = os.path.join(tmp, "textfile")
        os.mkdir(textdir)
        prom = os.path.join(textdir, "memguard.prom")
        replace(prom, full)
        # what watch's writer leaves while it writes: not a .prom, not read
        with open(prom + ".tmp", "w") as f:
            f.write("half a file {")
        with open(os.path.join(tmp, "exporter.log"), "wb") as log:
            p, url = start_exporter(binary, textdir, log)
            if not p:
                tap(False, f"{os.path.basename(binary)} answers on 127.0.0.1 ({url})")
                print(f"1..{n}")
                return 1
            try:
                text = get(url)
                tap(scrape_value(text, "node_textfile_scrape_error") == 0,
                    f"{os.path.basename(binary)} on 127.0.0.1 (textfile collector alone): node_textfile_scrape_error 0"
                    " (watch's memguard.prom.tmp beside it not read)")
                part = memguard_part(text)
                errs, types, got, _ = fmt.parse(part)
                _, want_types, want, _ = fmt.parse(full)
                got_n, want_n = normal(got), normal(want)
                missing = [k for k in want_n if k not in got_n]
                wrong = [(k, want_n[k], got_n[k]) for k in want_n if k in got_n and got_n[k] != want_n[k]]
                extra = [k for k in got_n if k not in want_n]
                tap(not missing and not wrong and not extra and len(want_n) > 200,
                    f"every one of the file's {len(want_n)} samples comes out of the scrape, labels and value"
                    + "".join(f"\n# missing {k}" for k in missing[:5]) + "".join(f"\n# {k}: {a} != {b}" for k, a, b in
                                                                             wrong[:5])
                    + "".join(f"\n# extra {k}" for k in extra[:5]))
                tap(types == want_types, "... each family with the file's TYPE (the histogram a histogram)")
                tap(not errs, "the scrape's memguard families pass the format's rules" +
                    "".join("\n# " + e for e in errs[:10]))
                tap(any(k[0] == "memguard_memory_max_bytes" and v == float("inf") for k, v in got.items()),
                    "memory_max_bytes +Inf comes through as +Inf")
                if shutil.which("promtool"):
                    pt = subprocess.run(["promtool", "check", "metrics"], input=part, capture_output=True, text=True)
                    tap(pt.returncode == 0, "promtool check metrics on the scrape's memguard families" +
                        "".join("\n# " + line for line in (pt.stdout + pt.stderr).splitlines()))
                else:
                    skip("promtool check metrics on the scrape", "no promtool (Debian: prometheus)")
                # the next interval's file, replaced as watch replaces it
                replace(prom, none)
                text = get(url)
                _, _, got, _ = fmt.parse(memguard_part(text))
                tap(scrape_value(text, "node_textfile_scrape_error") == 0 and
                    not any("cgroup" in dict(k[1]) for k in got) and ("memguard_node_used_bytes", ()) in got and
                    got.get(("memguard_metrics_cgroups", ())) == 0,
                    "a file replaced (--metrics-cgroups none) is read anew: node families, no cgroup's series")
                # a broken file: the collector says so, the check can fail
                replace(prom, full.replace("memguard_cgroups 8\n", "memguard_cgroups eight\n"))
                text = get(url)
                tap(scrape_value(text, "node_textfile_scrape_error") == 1 and memguard_part(text) == "",
                    "a broken file is node_textfile_scrape_error 1, none of its samples scraped")
            finally:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if failed:
            with open(os.path.join(tmp, "exporter.log"), "rb") as f:
                for line in f.read().decode("utf-8", "replace").splitlines()[-20:]:
                    print("# node_exporter: " + line)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
