#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The analysis of bench-ablation's CSV (docs/benchmarks.md, "Seed 002's
ablation, reproduced"), as seed 002 defines it, python3's standard library
only.

  ablation-report.py CSV [--svg OUT.svg] [--svg-swapless OUT.svg]
                     [--resamples N] [--seed N]
  ablation-report.py --self-test

Swap ablation (mode "swap"): matched triplets, one case per arm (static,
delayed, reclaim) of one regime and repeat.  For each canary (compute,
SQLite) and comparator (static, delayed), the log of the reclaim-to-
comparator ratio of pressure-phase p99 response time per triplet; the
estimate is the mean over regimes (strata, equal weight) of the mean within
each, back-transformed.  Uncertainty: repeats resampled with replacement
within each regime (the same draw for all four comparisons), N resamples
(default 4000, at least 2000) with a fixed seed; percentile intervals at
98.75 % each, so that the four hold together at a 95 % family-wise target
(0.05 / 4 per comparison).  The rule: a general responsiveness benefit only
if all four upper bounds are below 1 and all four estimates at most 0.95; an
interval entirely above 1 is harm for that comparison.  A triplet with a
case whose status is not "ok" (an infrastructure failure) is left out and
listed; OOM kills, failed or partial doses are outcomes and stay.

Swapless pair (mode "swapless"): pairs (none, headroom) of one regime and
repeat, the headroom-to-none ratio for each canary, the same method with
two comparisons (97.5 % each); the rule applied by analogy (the seeds
define none for this pair).

Secondary figures: medians per arm of memory PSI some and full, refaults,
swap-out and zram, wake and service p99, deadline misses, the dose's
execution; median paired differences of p95 and p99 (microseconds); p99
medians per regime and arm.
"""

import argparse
import csv
import math
import os
import random
import statistics
import sys
import tempfile
import xml.etree.ElementTree as ET

CANARIES = ("compute", "sqlite")
# Seed 002's Table 4: (canary, comparator) -> (ratio, low, high), in its order.
SEED = [
    (("compute", "static"), (0.938, 0.906, 0.971)),
    (("compute", "delayed"), (0.704, 0.675, 0.735)),
    (("sqlite", "delayed"), (0.765, 0.726, 0.806)),
    (("sqlite", "static"), (0.993, 0.968, 1.020)),
]
PRIMARY = [k for k, _ in SEED]
SWAP_ARMS = ("static", "delayed", "reclaim")
SWAPLESS_ARMS = ("none", "headroom")
BENEFIT_MAX = 0.95  # every estimate at least a 5 % reduction
FAMILY_ALPHA = 0.05
MIN_RESAMPLES = 2000


# ---- reading --------------------------------------------------------------

def read_rows(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    rows = []
    for r in csv.DictReader(lines):
        if r.get("mode") in ("swap", "swapless"):  # a header repeated by a concatenation is skipped
            rows.append(r)
    return rows


def num(r, key):
    try:
        return float(r.get(key, ""))
    except ValueError:
        return float("nan")


def matched(rows, mode, arms):
    """{regime: [ {arm: row} ... ]} of complete sets, and what was left out."""
    groups = {}
    for r in rows:
        if r["mode"] != mode:
            continue
        key = (r["regime"], r["repeat"])
        g = groups.setdefault(key, {})
        if r["arm"] in g:
            g.setdefault("_dup", []).append(r["arm"])
        g[r["arm"]] = r
    strata, left_out = {}, []
    for (regime, repeat), g in sorted(groups.items()):
        why = None
        if "_dup" in g:
            why = "arm twice: " + ",".join(g["_dup"])
        elif any(a not in g for a in arms):
            why = "missing " + ",".join(a for a in arms if a not in g)
        else:
            bad = [f"{a}: {g[a]['status']}" for a in arms if g[a]["status"] != "ok"]
            if bad:
                why = "; ".join(bad)
            elif any(not num(g[a], f"{c}_p99_us") > 0 for a in arms for c in CANARIES):
                why = "a p99 of 0 (no requests in the pressure phase)"
        if why:
            left_out.append((regime, repeat, why))
        else:
            strata.setdefault(regime, []).append({a: g[a] for a in arms})
    return strata, left_out


# ---- the estimate and its intervals ----------------------------------------------

def log_ratios(strata, comparisons, treat):
    """{regime: [[d per comparison] per set]}: ln(treat p99 / comparator p99)."""
    out = {}
    for regime, sets in strata.items():
        out[regime] = [[math.log(num(s[treat], f"{c}_p99_us") / num(s[k], f"{c}_p99_us")) for c, k in comparisons]
                       for s in sets]
    return out


def estimate(d, picks=None):
    """Mean over strata (equal weight) of the mean within each, per comparison."""
    regimes = sorted(d)
    m = len(next(iter(d.values()))[0])
    est = []
    for j in range(m):
        means = []
        for g in regimes:
            rows = d[g] if picks is None else [d[g][i] for i in picks[g]]
            means.append(sum(r[j] for r in rows) / len(rows))
        est.append(sum(means) / len(means))
    return est


def quantile(sorted_v, q):
    """Linear interpolation between order statistics (R's type 7)."""
    if not sorted_v:
        return float("nan")
    h = (len(sorted_v) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (h - lo) * (sorted_v[hi] - sorted_v[lo])


def bootstrap(d, resamples, seed, level):
    rng = random.Random(seed)
    regimes = sorted(d)
    m = len(next(iter(d.values()))[0])
    draws = [[] for _ in range(m)]
    for _ in range(resamples):
        picks = {g: [rng.randrange(len(d[g])) for _ in d[g]] for g in regimes}
        for j, v in enumerate(estimate(d, picks)):
            draws[j].append(v)
    a = (1 - level) / 2
    out = []
    for j in range(m):
        v = sorted(draws[j])
        out.append((quantile(v, a), quantile(v, 1 - a)))
    return out


def analyse(strata, comparisons, treat, resamples, seed):
    """[(comparison, ratio, low, high)] and the level used."""
    if not strata:
        return [], None
    level = 1 - FAMILY_ALPHA / len(comparisons)
    d = log_ratios(strata, comparisons, treat)
    est = estimate(d)
    ci = bootstrap(d, resamples, seed, level)
    return [(comparisons[j], math.exp(est[j]), math.exp(ci[j][0]), math.exp(ci[j][1])) for j in range(len(est))], level


def verdict(results):
    """(benefit, [comparisons with harm])"""
    benefit = bool(results) and all(hi < 1 and r <= BENEFIT_MAX for _, r, _, hi in results)
    harm = [c for c, _, lo, _ in results if lo > 1]
    return benefit, harm


# ---- printing ------------------------------------------------------------------

def own_direct_steal(r):
    """Pages reclaim took in the pressured cgroup's own allocations: 7.x
    counts memory.reclaim's apart (pgsteal_proactive); before, a dose's
    pages are in pgsteal_direct and are taken out (its pgsteal rise, which
    also holds the actor's reclaim during the write: so this errs low)."""
    direct = num(r, "pgsteal_direct")
    if math.isnan(direct):
        return float("nan")
    if num(r, "pgsteal_proactive") > 0 or not num(r, "doses") > 0:
        return direct
    return max(0.0, direct - num(r, "dose_achieved_kib") / 4)

def med(rows, key, scale=1.0):
    v = [num(r, key) for r in rows]
    v = [x for x in v if not math.isnan(x)]
    return statistics.median(v) / scale if v else float("nan")


def fmt(x, digits=1):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def print_primary(title, results, level, strata, left_out, seed_ref):
    print(f"## {title}\n")
    n_sets = sum(len(v) for v in strata.values())
    per = ", ".join(f"{g} {len(v)}" for g, v in sorted(strata.items()))
    print(f"{n_sets} matched sets used ({per or 'none'}); {len(left_out)} left out.")
    if any(len(v) < 2 for v in strata.values()):
        print("- a regime with a single set does not vary under resampling: its share of each interval is a point")
    for regime, repeat, why in left_out:
        print(f"- left out: regime {regime}, repeat {repeat}: {why}")
    if not results:
        print("\nno complete set: nothing to estimate\n")
        return
    print(f"\nratios of pressure-phase p99 response, {level * 100:.2f} % simultaneous bootstrap intervals "
          f"(family-wise {100 * (1 - FAMILY_ALPHA):.0f} %)\n")
    hdr = "| canary | comparison | ratio | interval |" + (" seed 002 |" if seed_ref else "")
    print(hdr)
    print("|" + "---|" * (hdr.count("|") - 1))
    for (c, k), r, lo, hi in results:
        ref = dict(seed_ref).get((c, k)) if seed_ref else None
        line = f"| {c} | {k} | {r:.3f} | [{lo:.3f}, {hi:.3f}] |"
        if seed_ref:
            line += f" {ref[0]:.3f} [{ref[1]:.3f}, {ref[2]:.3f}] |" if ref else " - |"
        print(line)
    benefit, harm = verdict(results)
    n = len(results)
    print(f"\nrule (all {n} upper bounds < 1 and all {n} estimates <= {BENEFIT_MAX}): "
          + ("a general responsiveness benefit" if benefit else "no general responsiveness benefit"))
    print("harm (an interval entirely above 1): "
          + (", ".join(f"{c}/{k}" for c, k in harm) if harm else "none detected"))
    print()


def print_secondary(rows, arms, pairs, treat, swapless):
    by_arm = {a: [r for r in rows if r["arm"] == a and r["status"] == "ok"] for a in arms}
    for r in rows:
        r["_own_steal"] = str(own_direct_steal(r))
    print("### secondary: medians per arm (cases with status ok)\n")
    cols = [("cases", None), ("PSI some s", ("psi_some_us", 1e6)), ("PSI full s", ("psi_full_us", 1e6)),
            ("fg some s", ("fg_some_us", 1e6)), ("refaults", ("refaults", 1)),
            ("pgscan_direct", ("pgscan_direct", 1)), ("pgsteal_direct", ("pgsteal_direct", 1)),
            ("pgsteal_proactive", ("pgsteal_proactive", 1)), ("own direct steal", ("_own_steal", 1))]
    if not swapless:
        cols += [("swap-out KiB", ("swapout_kib", 1)), ("swap peak KiB", ("swap_peak_kib", 1)),
                 ("zram orig KiB", ("zram_orig_kib", 1))]
    print("| arm | " + " | ".join(c for c, _ in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for a in arms:
        cells = [str(len(by_arm[a]))] + [fmt(med(by_arm[a], k, s), 3 if s == 1e6 else 0) for _, (k, s) in cols[1:]]
        print(f"| {a} | " + " | ".join(cells) + " |")
    print("\n| arm | canary | p50 ms | p95 ms | p99 ms | wake p99 ms | service p99 ms | misses (sum) |")
    print("|---|---|---|---|---|---|---|---|")
    for a in arms:
        for c in CANARIES:
            rs = by_arm[a]
            misses = sum(int(num(r, f"{c}_misses")) for r in rs if not math.isnan(num(r, f"{c}_misses")))
            print(f"| {a} | {c} | {fmt(med(rs, f'{c}_p50_us', 1e3), 2)} | {fmt(med(rs, f'{c}_p95_us', 1e3), 2)} | "
                  f"{fmt(med(rs, f'{c}_p99_us', 1e3), 2)} | {fmt(med(rs, f'{c}_wake_p99_us', 1e3), 2)} | "
                  f"{fmt(med(rs, f'{c}_service_p99_us', 1e3), 2)} | {misses} |")
    # the actuator's execution
    dosed = [r for r in by_arm[treat] if num(r, "doses") > 0]
    print(f"\n{treat}: {len(dosed)} of {len(by_arm[treat])} cases dosed; doses (median) "
          f"{fmt(med(by_arm[treat], 'doses'), 0)}, counted {sum(int(num(r, 'doses_counted')) for r in dosed)}, "
          f"achieved/asked (median) "
          f"{fmt(statistics.median([num(r, 'dose_achieved_kib') / num(r, 'dose_asked_kib') for r in dosed]) if dosed else None, 3)}, "
          f"longest write {fmt(max([num(r, 'dose_max_us') for r in dosed]) / 1e3 if dosed else None, 1)} ms, "
          f"first dose (median) {fmt(med(dosed, 'dose_first_ms', 1e3), 1)} s into the pressure phase"
          + ("" if swapless else f"; the predicate (observer) fired in "
             f"{sum(1 for r in rows if r['status'] == 'ok' and num(r, 'trigger_ms') >= 0)} of "
             f"{sum(1 for r in rows if r['status'] == 'ok')} cases, median "
             f"{fmt(med([r for r in rows if num(r, 'trigger_ms') >= 0], 'trigger_ms', 1e3), 1)} s"))
    print("own direct steal: pgsteal_direct, less the doses' achieved pages where the kernel has no "
          "pgsteal_proactive (6.1, 6.12 count memory.reclaim's reclaim as direct), in 4 KiB pages: a lower bound "
          "of the actor's own, since a dose's pgsteal rise includes the actor's reclaim during the write")
    ooms = sum(int(num(r, "oom_kills")) for r in rows if not math.isnan(num(r, "oom_kills")))
    print(f"OOM kills in all cases: {ooms}")
    # paired absolute differences
    if pairs:
        print(f"\n### secondary: median paired differences, {treat} minus comparator (microseconds)\n")
        print("| canary | comparator | p95 | p99 |")
        print("|---|---|---|---|")
        for c in CANARIES:
            for k in arms:
                if k == treat:
                    continue
                d95 = [num(s[treat], f"{c}_p95_us") - num(s[k], f"{c}_p95_us") for g in pairs.values() for s in g]
                d99 = [num(s[treat], f"{c}_p99_us") - num(s[k], f"{c}_p99_us") for g in pairs.values() for s in g]
                print(f"| {c} | {k} | {fmt(statistics.median(d95), 0)} | {fmt(statistics.median(d99), 0)} |")
    # per regime
    regimes = sorted({r["regime"] for r in rows})
    print("\n### descriptive: median p99 (ms) per regime and arm, unpaired\n")
    print("| regime | canary | " + " | ".join(arms) + " |")
    print("|---|---|" + "---|" * len(arms))
    for g in regimes:
        for c in CANARIES:
            cells = [fmt(med([r for r in by_arm[a] if r["regime"] == g], f"{c}_p99_us", 1e3), 2) for a in arms]
            print(f"| {g} | {c} | " + " | ".join(cells) + " |")
    print()


# ---- the picture ------------------------------------------------------------------

def svg(path, title, results, seed_ref, level):
    """A forest plot: each comparison's ratio and interval on a log axis,
    seed 002's beside it where given."""
    rows = []
    for (c, k), r, lo, hi in results:
        rows.append((f"{c} / {k}", "this run", r, lo, hi, "#1f5fa8"))
        ref = dict(seed_ref).get((c, k)) if seed_ref else None
        if ref:
            rows.append(("", "seed 002", ref[0], ref[1], ref[2], "#8a8a8a"))
    vals = [v for row in rows for v in row[2:5] if v > 0 and math.isfinite(v)] + [1.0]
    lo_v, hi_v = min(vals + [0.6]) * 0.95, max(vals + [1.2]) * 1.05
    width, left, right, top, row_h = 820, 230, 170, 60, 26
    height = top + row_h * len(rows) + 70
    plot_w = width - left - right

    def x(v):
        return left + plot_w * (math.log(v) - math.log(lo_v)) / (math.log(hi_v) - math.log(lo_v))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
           f'<text x="{width / 2}" y="40" text-anchor="middle" fill="#555">ratio of p99 response '
           f'(below 1 favours the treatment), {level * 100:.2f} % simultaneous intervals, log scale</text>']
    y_end = top + row_h * len(rows)
    for v, dash in ((1.0, ""), (BENEFIT_MAX, ' stroke-dasharray="4,3"')):
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 8}" x2="{x(v):.1f}" y2="{y_end}" stroke="#444"{dash}/>')
    ticks = [t for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.1, 1.2, 1.5, 2.0, 3.0) if lo_v <= t <= hi_v]
    for t in ticks:
        out.append(f'<line x1="{x(t):.1f}" y1="{y_end}" x2="{x(t):.1f}" y2="{y_end + 5}" stroke="#444"/>')
        out.append(f'<text x="{x(t):.1f}" y="{y_end + 18}" text-anchor="middle">{t:g}</text>')
    for i, (label, who, r, lo, hi, colour) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        if label:
            out.append(f'<text x="8" y="{y + 4:.1f}">{escape(label)}</text>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" fill="{colour}">{who}</text>')
        out.append(f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" stroke="{colour}" '
                   f'stroke-width="2"/>')
        out.append(f'<circle cx="{x(r):.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
        out.append(f'<text x="{width - right + 16}" y="{y + 4:.1f}" fill="{colour}" font-size="11">'
                   f'{r:.3f} [{lo:.3f}, {hi:.3f}]</text>')
    out.append(f'<text x="{x(1.0):.1f}" y="{y_end + 36}" text-anchor="middle" fill="#555">1: no difference; '
               f'dashed: {BENEFIT_MAX} (the rule\'s 5 % reduction)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---- the report -------------------------------------------------------------------

def report(path, svg_path, svg_swapless, resamples, seed):
    rows = read_rows(path)
    swap = [r for r in rows if r["mode"] == "swap"]
    swapless = [r for r in rows if r["mode"] == "swapless"]
    if not rows:
        print(f"{path}: no case lines", file=sys.stderr)
        return 1
    print(f"# bench-ablation: {len(swap)} swap cases, {len(swapless)} swapless cases "
          f"({resamples} resamples, seed {seed})\n")
    kernels = sorted({r["kernel"] for r in rows})
    print(f"kernels: {', '.join(kernels)}; phases (s): "
          f"{', '.join(sorted({r['warmup_s'] + '/' + r['pressure_s'] + '/' + r['recovery_s'] for r in rows}))}\n")
    if swap:
        strata, left_out = matched(swap, "swap", SWAP_ARMS)
        res, level = analyse(strata, PRIMARY, "reclaim", resamples, seed)
        print_primary("Seed 002's ablation: bounded reclaim against static zram and delayed activation", res, level,
                      strata, left_out, SEED)
        print_secondary(swap, SWAP_ARMS, strata, "reclaim", False)
        if res and svg_path:
            svg(svg_path, "bounded reclaim / comparator, p99 response (seed 002's ablation)", res, SEED, level)
            print(f"picture: {svg_path}\n")
    if swapless:
        comps = [(c, "none") for c in CANARIES]
        strata, left_out = matched(swapless, "swapless", SWAPLESS_ARMS)
        res, level = analyse(strata, comps, "headroom", resamples, seed)
        print_primary("The swapless pair: the headroom rule against none (the rule by analogy)", res, level,
                      strata, left_out, None)
        print_secondary(swapless, SWAPLESS_ARMS, strata, "headroom", True)
        if res and svg_swapless:
            svg(svg_swapless, "headroom rule / none, p99 response (swapless pair)", res, None, level)
            print(f"picture: {svg_swapless}\n")
    return 0


# ---- the self-test ------------------------------------------------------------------

FIELDS = None


def synth_row(mode, arm, regime, repeat, p99, status="ok", **extra):
    r = {"mode": mode, "arm": arm, "regime": regime, "repeat": str(repeat), "pos": "0", "kernel": "synthetic",
         "contents": regime[0], "rate_mibps": regime[1:], "status": status, "warmup_s": "10", "pressure_s": "30",
         "recovery_s": "10"}
    for c in CANARIES:
        for k in ("p50", "p95", "p99", "wake_p50", "wake_p95", "wake_p99", "service_p50", "service_p95",
                  "service_p99"):
            r[f"{c}_{k}_us"] = repr(p99[c] * (0.5 if k.endswith("p50") else 0.8 if k.endswith("p95") else 1))
        r[f"{c}_misses"] = "0"
    for k in ("psi_some_us", "psi_full_us", "fg_some_us", "refaults", "pgscan_direct", "pgsteal_direct",
              "swapout_kib", "swap_peak_kib", "zram_orig_kib", "doses", "doses_counted", "dose_asked_kib",
              "dose_achieved_kib", "dose_max_us", "oom_kills"):
        r[k] = "0"
    r["trigger_ms"] = r["dose_first_ms"] = "-1"
    if arm in ("reclaim", "headroom"):
        r.update(doses="1", doses_counted="1", dose_asked_kib="98304", dose_achieved_kib="90000",
                 dose_max_us="200000", dose_first_ms="5000")
    r.update(extra)
    return r


def synth(path, truth, repeats, noise, rng, regimes=("s16", "r16", "s64", "r64"), drop=None, swapless=False):
    """Triplets (or pairs) whose reclaim/comparator p99 ratio per canary and
    comparator is truth[(canary, comparator)] times exp(N(0, noise))."""
    rows = []
    for g in regimes:
        for i in range(repeats):
            base = {c: rng.uniform(5000, 50000) for c in CANARIES}
            if swapless:
                treat = {c: base[c] * truth[(c, "none")] * math.exp(rng.gauss(0, noise)) for c in CANARIES}
                rows += [synth_row("swapless", "none", g, i, base), synth_row("swapless", "headroom", g, i, treat)]
                continue
            # reclaim's p99 drawn, then each comparator's from its ratio
            treat = base
            st = {c: treat[c] / (truth[(c, "static")] * math.exp(rng.gauss(0, noise))) for c in CANARIES}
            de = {c: treat[c] / (truth[(c, "delayed")] * math.exp(rng.gauss(0, noise))) for c in CANARIES}
            status = "ok"
            if drop and (g, i) == drop:
                status = "canary-setup:Connection-timed-out"
            rows += [synth_row("swap", "static", g, i, st), synth_row("swap", "delayed", g, i, de, status=status),
                     synth_row("swap", "reclaim", g, i, treat)]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    return rows


def self_test():
    failures = []
    checks = 0

    def check(cond, what):
        nonlocal checks
        checks += 1
        if not cond:
            failures.append(what)
            print(f"not ok {checks} - {what}")
        else:
            print(f"ok {checks} - {what}")

    rng = random.Random(7)
    tmp = tempfile.mkdtemp(prefix="ablation-report-test-")
    path = os.path.join(tmp, "a.csv")

    # 1. the quantile rule
    check(quantile([1, 2, 3, 4], 0.5) == 2.5 and quantile([5], 0.3) == 5 and quantile([0, 10], 0.25) == 2.5,
          "quantile interpolates between order statistics")

    # 2. the rule at its edges, on made-up results
    def res4(last):
        return [(PRIMARY[0], 0.90, 0.85, 0.99), (PRIMARY[1], 0.70, 0.65, 0.75), (PRIMARY[2], 0.80, 0.75, 0.85),
                (PRIMARY[3],) + last]
    check(verdict(res4((0.95, 0.90, 0.999))) == (True, []), "rule: every upper bound < 1, every estimate <= 0.95: benefit")
    check(not verdict(res4((0.90, 0.80, 1.0)))[0], "rule: an upper bound of exactly 1 is no benefit")
    check(not verdict(res4((0.951, 0.90, 0.99)))[0], "rule: an estimate of 0.951 is no benefit")
    check(verdict(res4((1.1, 1.0, 1.2)))[1] == [] and verdict(res4((1.1, 1.001, 1.2)))[1] == [PRIMARY[3]],
          "harm only for an interval entirely above 1 (a lower bound of exactly 1 is not)")

    # 2b. noise-free data: the estimate is the true ratio, the interval a point
    truth = {("compute", "static"): 0.8, ("compute", "delayed"): 0.7, ("sqlite", "delayed"): 0.75,
             ("sqlite", "static"): 0.85}
    synth(path, truth, 3, 0.0, rng)
    strata, left = matched(read_rows(path), "swap", SWAP_ARMS)
    res, level = analyse(strata, PRIMARY, "reclaim", MIN_RESAMPLES, 1)
    check(len(res) == 4 and all(abs(r - truth[c]) < 1e-9 and abs(lo - r) < 1e-9 and abs(hi - r) < 1e-9
                                for c, r, lo, hi in res), "noise-free ratios come back exactly, with point intervals")
    check(abs(level - 0.9875) < 1e-12, "four comparisons: 98.75 % intervals")
    check([c for c, *_ in res] == PRIMARY, "the comparisons in seed 002's order")

    # 3. noisy data with a clear benefit: estimates near the truth, covered, the rule says benefit
    synth(path, truth, 12, 0.03, rng)
    strata, left = matched(read_rows(path), "swap", SWAP_ARMS)
    res, level = analyse(strata, PRIMARY, "reclaim", MIN_RESAMPLES, 1)
    check(all(abs(r / truth[c] - 1) < 0.03 for c, r, _, _ in res), "estimates within 3 % of the truth (48 triplets)")
    check(all(lo < truth[c] < hi for c, _, lo, hi in res), "every interval covers the truth")
    check(all(hi / lo < 1.1 for _, _, lo, hi in res), "intervals are narrow at 3 % noise")
    benefit, harm = verdict(res)
    check(benefit and not harm, "all four below 0.95 with upper bounds below 1: benefit, no harm")

    # 4. seed 002's outcome: one comparison whose interval spans 1
    t2 = dict(truth)
    t2[("sqlite", "static")] = 0.995
    synth(path, t2, 12, 0.05, rng)
    res, _ = analyse(matched(read_rows(path), "swap", SWAP_ARMS)[0], PRIMARY, "reclaim", MIN_RESAMPLES, 1)
    benefit, harm = verdict(res)
    sq = [x for x in res if x[0] == ("sqlite", "static")][0]
    check(sq[2] < 1 < sq[3] and not benefit and not harm, "an interval spanning 1: no benefit, no harm")

    # 5. harm
    t3 = dict(truth)
    t3[("sqlite", "static")] = 1.3
    synth(path, t3, 12, 0.03, rng)
    res, _ = analyse(matched(read_rows(path), "swap", SWAP_ARMS)[0], PRIMARY, "reclaim", MIN_RESAMPLES, 1)
    benefit, harm = verdict(res)
    check(not benefit and harm == [("sqlite", "static")], "an interval above 1: harm for that comparison alone")

    # 6. an estimate below 1 but above 0.95 with a tight interval: no benefit by the 5 % clause
    t4 = dict(truth)
    t4[("compute", "static")] = 0.97
    synth(path, t4, 12, 0.005, rng)
    res, _ = analyse(matched(read_rows(path), "swap", SWAP_ARMS)[0], PRIMARY, "reclaim", MIN_RESAMPLES, 1)
    cs = res[0]
    benefit, _ = verdict(res)
    check(cs[3] < 1 and cs[1] > BENEFIT_MAX and not benefit, "upper bound below 1 but a 3 % reduction: no benefit")

    # 7. strata weigh alike: 10 triplets at 0.5 in one regime, 2 at 1.0 in another
    rows = []
    for g, n, ratio in (("s16", 10, 0.5), ("r64", 2, 1.0)):
        for i in range(n):
            p = {c: 10000.0 for c in CANARIES}
            rows += [synth_row("swap", a, g, i, p) for a in ("static", "delayed")]
            rows.append(synth_row("swap", "reclaim", g, i, {c: 10000.0 * ratio for c in CANARIES}))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    res, _ = analyse(matched(read_rows(path), "swap", SWAP_ARMS)[0], PRIMARY, "reclaim", MIN_RESAMPLES, 1)
    check(all(abs(r - math.sqrt(0.5)) < 1e-9 for _, r, _, _ in res),
          "regimes weigh alike: exp(mean(ln 0.5, ln 1)) = 0.707, not the pooled 0.561")

    # 8. a triplet with a failed case is left out and listed; the others stay
    synth(path, truth, 3, 0.0, rng, drop=("r16", 1))
    strata, left = matched(read_rows(path), "swap", SWAP_ARMS)
    check(sum(len(v) for v in strata.values()) == 11 and len(left) == 1 and left[0][:2] == ("r16", "1"),
          "an infrastructure failure drops its triplet alone")

    # 9. the same seed gives the same intervals; another seed other ones
    synth(path, truth, 6, 0.05, rng)
    strata = matched(read_rows(path), "swap", SWAP_ARMS)[0]
    a = analyse(strata, PRIMARY, "reclaim", MIN_RESAMPLES, 3)[0]
    b = analyse(strata, PRIMARY, "reclaim", MIN_RESAMPLES, 3)[0]
    c = analyse(strata, PRIMARY, "reclaim", MIN_RESAMPLES, 4)[0]
    check(a == b and a != c, "a fixed seed reproduces the intervals")

    # 10. the swapless pair: two comparisons at 97.5 %
    tl = {("compute", "none"): 0.9, ("sqlite", "none"): 0.6}
    synth(path, tl, 10, 0.02, rng, regimes=("f16", "f64"), swapless=True)
    strata, _ = matched(read_rows(path), "swapless", SWAPLESS_ARMS)
    res, level = analyse(strata, [(c, "none") for c in CANARIES], "headroom", MIN_RESAMPLES, 1)
    check(abs(level - 0.975) < 1e-12 and all(lo < tl[c] < hi for c, _, lo, hi in res),
          "swapless: 97.5 % intervals covering the truth")

    # 11. the whole report runs, and its pictures are SVG
    synth(path, truth, 4, 0.03, rng)
    rows = read_rows(path)
    tl_rows = synth(os.path.join(tmp, "b.csv"), tl, 4, 0.02, rng, regimes=("f16",), swapless=True)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(tl_rows[0].keys()))
        w.writerows(tl_rows)
    s1, s2 = os.path.join(tmp, "a.svg"), os.path.join(tmp, "b.svg")
    devnull = open(os.devnull, "w")
    saved, sys.stdout = sys.stdout, devnull
    try:
        rc = report(path, s1, s2, MIN_RESAMPLES, 1)
    finally:
        sys.stdout = saved
        devnull.close()
    ok = rc == 0
    for s, n_dots in ((s1, 8), (s2, 2)):
        try:
            root = ET.parse(s).getroot()
            ok = ok and root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}circle")) == n_dots
        except (OSError, ET.ParseError):
            ok = False
    check(ok, "the report runs on both modes and draws its two pictures (seed 002's four beside the run's)")

    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    print(f"self-test: {checks - len(failures)} of {checks} checks passed")
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", nargs="?")
    p.add_argument("--svg", help="the swap ablation's picture (default: CSV with .svg)")
    p.add_argument("--svg-swapless", help="the swapless pair's picture (default: CSV with -swapless.svg)")
    p.add_argument("--resamples", type=int, default=4000)
    p.add_argument("--seed", type=int, default=20020)
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if not a.csv:
        p.error("a CSV, or --self-test")
    if a.resamples < MIN_RESAMPLES:
        p.error(f"at least {MIN_RESAMPLES} resamples")
    base = os.path.splitext(a.csv)[0]
    return report(a.csv, a.svg or base + ".svg", a.svg_swapless or base + "-swapless.svg", a.resamples, a.seed)


if __name__ == "__main__":
    sys.exit(main())
