#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The picture of docs/benchmarks.md's table 1b: one tick per actor on fixture
# trees, memguard against the stdio and openat baselines, fast and slow path:
# instructions per tick (callgrind) and ns per tick (median), each on a log
# axis (the figures span 300 to 140,000).  Read from the table itself, so
# the picture is the doc's own figures; SVG by hand, python3's standard
# library only.  --check: exit 1 if OUT is not what the table gives now
# (the unit suite's bench-plot runs it, so a table changed without its
# picture fails).
#
#   tools/bench/plot-tick.py docs/benchmarks.md docs/benchmarks-tick.svg
#   tools/bench/plot-tick.py --check docs/benchmarks.md docs/benchmarks-tick.svg
import math
import sys

HEADING = "### 1b, 1d."
ACTORS = [("memguard", "#1f77b4"), ("stdio", "#d62728"), ("openat", "#7f7f7f")]
MODES = ["fast", "slow"]
PANELS = [("instructions", "instructions per tick (callgrind)"), ("ns", "ns per tick (median)")]


def read_table(md):
    """{(actor, mode): {"instructions": n, "ns": n}} from the table under HEADING."""
    lines = md.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(HEADING))
    except StopIteration:
        sys.exit(f"plot-tick.py: no section starting {HEADING!r}")
    header, rows = None, {}
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            if header:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-"):
            continue
        row = dict(zip(header, cells))
        try:
            rows[(row["actor"], row["mode"])] = {"instructions": int(row["instructions"].replace(",", "")),
                                                 "ns": int(row["ns"].replace(",", ""))}
        except (KeyError, ValueError):
            sys.exit(f"plot-tick.py: a row of {HEADING!r} without its instructions and ns: {line!r}")
    missing = [(a, m) for a, _ in ACTORS for m in MODES if (a, m) not in rows]
    if missing:
        sys.exit(f"plot-tick.py: the table has no row for {missing}")
    return rows


def decades(lo, hi):
    """Powers of ten around [lo, hi]."""
    return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))


def svg(rows):
    W, H, top, bottom, left, gap = 880, 390, 66, 310, 80, 80
    pw = (W - left - gap - 20) / 2
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
           'font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">One tick per actor on fixture trees (table 1b): memguard '
           'against the baselines</text>']
    for p, (key, title) in enumerate(PANELS):
        x0 = left + p * (pw + gap)
        vals = [rows[(a, m)][key] for a, _ in ACTORS for m in MODES]
        lo, hi = decades(min(vals), max(vals))

        def y(v):
            return bottom - (bottom - top) * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

        out.append(f'<text x="{x0:.1f}" y="{top - 12}" font-size="13">{title}, log scale</text>')
        t = lo
        while t <= hi:
            out.append(f'<line x1="{x0:.1f}" y1="{y(t):.1f}" x2="{x0 + pw:.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                       f'<text x="{x0 - 6:.1f}" y="{y(t) + 4:.1f}" text-anchor="end">{t:,}</text>')
            t *= 10
        group = pw / len(MODES)
        bw = group / (len(ACTORS) + 1)
        for g, mode in enumerate(MODES):
            gx = x0 + g * group + bw / 2
            out.append(f'<text x="{x0 + g * group + group / 2:.1f}" y="{bottom + 18}" text-anchor="middle">'
                       f'{mode} path</text>')
            base = rows[("memguard", mode)][key]
            for i, (actor, color) in enumerate(ACTORS):
                v = rows[(actor, mode)][key]
                bx = gx + i * bw
                out.append(f'<rect x="{bx:.1f}" y="{y(v):.1f}" width="{bw - 2:.1f}" height="{bottom - y(v):.1f}" '
                           f'fill="{color}"/>')
                out.append(f'<text x="{bx + (bw - 2) / 2:.1f}" y="{y(v) - 4:.1f}" text-anchor="middle" '
                           f'font-size="10">{v:,}</text>')
                if actor != "memguard":
                    out.append(f'<text x="{bx + (bw - 2) / 2:.1f}" y="{y(v) - 16:.1f}" text-anchor="middle" '
                               f'font-size="10" fill="#555">{v / base:.1f}x</text>')
        out.append(f'<rect x="{x0:.1f}" y="{top}" width="{pw:.1f}" height="{bottom - top}" fill="none" '
                   'stroke="black"/>')
    for i, (actor, color) in enumerate(ACTORS):
        lx = left + i * 260
        what = {"memguard": "memguard (preads into kept fds)", "stdio": "stdio (systemd-oomd, senpai)",
                "openat": "openat (Meta's oomd)"}[actor]
        out.append(f'<rect x="{lx}" y="{bottom + 36}" width="12" height="10" fill="{color}"/>'
                   f'<text x="{lx + 18}" y="{bottom + 45}">{what}</text>')
    out.append(f'<text x="{left}" y="{bottom + 70}" fill="#555">Nx: the baseline over memguard in the same mode. '
               'Drawn by tools/bench/plot-tick.py from the table</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) != 2:
        sys.exit("usage: plot-tick.py [--check] BENCHMARKS.md OUT.svg")
    with open(args[0], encoding="utf-8") as f:
        text = svg(read_table(f.read()))
    if check:
        try:
            with open(args[1], encoding="utf-8") as f:
                same = f.read() == text
        except OSError as e:
            sys.exit(f"plot-tick.py: {args[1]}: {e.strerror}")
        if not same:
            sys.exit(f"plot-tick.py: {args[1]} is not what {args[0]}'s table 1b gives: run "
                     f"tools/bench/plot-tick.py {args[0]} {args[1]}")
        print(f"{args[1]}: up to date with {args[0]}")
        return 0
    with open(args[1], "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
