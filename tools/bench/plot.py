#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The pictures beside the tables people compare, each drawn from the table
# itself (so a picture is its doc's own figures); SVG by hand, python3's
# standard library only.
#
#   tick      docs/benchmarks.md table 1b -> docs/benchmarks-tick.svg: one tick
#             per actor, memguard against the stdio and openat floors, fast
#             and slow path, instructions and ns on log axes
#   verdict   docs/testing.md's disk cases -> docs/testing-verdict.svg: onset
#             to kill per case and kernel, the deciding signals beside each
#             bar, the 30 s bound, the survivors beside the killed
#   snapshot  docs/benchmarks.md's snapshot sections -> docs/benchmarks-snapshot.svg:
#             write throughput against the O_DIRECT copy, restore time
#             against the O_DIRECT read of the same bytes, per kernel
#   scale     docs/benchmarks.md section 2 -> docs/benchmarks-scale.svg: CPU
#             per actor of a set of N guards against the floor (the same
#             reads alone), natively and in the VM
#
#   tools/bench/plot.py [--check] [--root DIR] [FIGURE...]   (all by default)
#
# --check: exit 1 if a picture is not what its table gives now (the unit
# suite's bench-plot runs it, so a table changed without its picture fails).
import math
import os
import re
import sys

KCOLORS = {"6.1": "#1f77b4", "6.12": "#ff7f0e", "7.2": "#2ca02c"}


def fail(msg):
    sys.exit(f"plot.py: {msg}")


def section(md, heading, what):
    """The lines from the first line starting with heading to the next heading of its level or above."""
    lines = md.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    except StopIteration:
        fail(f"{what}: no section starting {heading!r}")
    level = len(heading) - len(heading.lstrip("#"))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level), len(lines))
    return lines[start:end]


def tables(lines):
    """Every markdown table in lines: a list of (header, rows), each row a list of cells."""
    out, header, rows = [], None, []
    for line in lines + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                rows.append(cells)
            continue
        if header is not None:
            out.append((header, rows))
        header, rows = None, []
    return out


def number(text):
    return float(text.replace(",", ""))


def svg_open(w, h, title):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
            'font-size="12">', '<rect width="100%" height="100%" fill="white"/>',
            f'<text x="20" y="22" font-size="14">{esc(title)}</text>']


def esc(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def legend(out, x, y, items):
    for label, color in items:
        out.append(f'<rect x="{x}" y="{y - 9}" width="12" height="10" fill="{color}"/>'
                   f'<text x="{x + 18}" y="{y}">{esc(label)}</text>')
        x += 26 + 7 * len(label)


# ---- tick: table 1b of docs/benchmarks.md -----------------------------------

TICK_ACTORS = [("memguard", "#1f77b4", "memguard (preads into kept fds)"),
               ("stdio", "#d62728", "stdio (systemd-oomd, senpai)"),
               ("openat", "#7f7f7f", "openat (Meta's oomd)")]
TICK_MODES = ["fast", "slow"]
TICK_PANELS = [("instructions", "instructions per tick (callgrind)"), ("ns", "ns per tick (median)")]


def tick(md):
    found = tables(section(md, "### 1b, 1d.", "benchmarks.md"))
    if not found:
        fail("benchmarks.md: no table under '### 1b, 1d.'")
    header, cells = found[0]
    rows = {}
    for c in cells:
        row = dict(zip(header, c))
        try:
            rows[(row["actor"], row["mode"])] = {"instructions": number(row["instructions"]), "ns": number(row["ns"])}
        except (KeyError, ValueError):
            fail(f"benchmarks.md: a row of table 1b without its instructions and ns: {c!r}")
    missing = [(a, m) for a, _, _ in TICK_ACTORS for m in TICK_MODES if (a, m) not in rows]
    if missing:
        fail(f"benchmarks.md: table 1b has no row for {missing}")

    W, H, top, bottom, left, gap = 880, 390, 66, 310, 80, 80
    pw = (W - left - gap - 20) / 2
    out = svg_open(W, H, "One tick per actor on fixture trees (table 1b): memguard against the baselines")
    for p, (key, title) in enumerate(TICK_PANELS):
        x0 = left + p * (pw + gap)
        vals = [rows[(a, m)][key] for a, _, _ in TICK_ACTORS for m in TICK_MODES]
        lo, hi = 10 ** math.floor(math.log10(min(vals))), 10 ** math.ceil(math.log10(max(vals)))

        def y(v):
            return bottom - (bottom - top) * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

        out.append(f'<text x="{x0:.1f}" y="{top - 12}" font-size="13">{title}, log scale</text>')
        t = lo
        while t <= hi:
            out.append(f'<line x1="{x0:.1f}" y1="{y(t):.1f}" x2="{x0 + pw:.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                       f'<text x="{x0 - 6:.1f}" y="{y(t) + 4:.1f}" text-anchor="end">{t:,}</text>')
            t *= 10
        group = pw / len(TICK_MODES)
        bw = group / (len(TICK_ACTORS) + 1)
        for g, mode in enumerate(TICK_MODES):
            gx = x0 + g * group + bw / 2
            out.append(f'<text x="{x0 + g * group + group / 2:.1f}" y="{bottom + 18}" text-anchor="middle">'
                       f'{mode} path</text>')
            base = rows[("memguard", mode)][key]
            for i, (actor, color, _) in enumerate(TICK_ACTORS):
                v = rows[(actor, mode)][key]
                bx = gx + i * bw
                out.append(f'<rect x="{bx:.1f}" y="{y(v):.1f}" width="{bw - 2:.1f}" height="{bottom - y(v):.1f}" '
                           f'fill="{color}"/>')
                out.append(f'<text x="{bx + (bw - 2) / 2:.1f}" y="{y(v) - 4:.1f}" text-anchor="middle" '
                           f'font-size="10">{v:,.0f}</text>')
                if actor != "memguard":
                    out.append(f'<text x="{bx + (bw - 2) / 2:.1f}" y="{y(v) - 16:.1f}" text-anchor="middle" '
                               f'font-size="10" fill="#555">{v / base:.1f}x</text>')
        out.append(f'<rect x="{x0:.1f}" y="{top}" width="{pw:.1f}" height="{bottom - top}" fill="none" '
                   'stroke="black"/>')
    legend(out, left, bottom + 45, [(label, color) for _, color, label in TICK_ACTORS])
    out.append(f'<text x="{left}" y="{bottom + 70}" fill="#555">Nx: the baseline over memguard in the same mode. '
               'Drawn by tools/bench/plot.py from the table</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- verdict: docs/testing.md's disk cases ----------------------------------

SIGNALS = re.compile(r"\b((?:memory|io|refault)(?:\+(?:memory|io|refault))*)\b")
SECONDS = re.compile(r"(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))? s\b")
BOUND_S = 30


def verdict_cell(cell):
    """('killed', lo, hi, signals) | ('spared',) | ('skipped',) | None (not run)."""
    if not cell:
        return None
    if cell.startswith("spared") or cell.startswith("neither killed"):
        return ("spared",)
    if cell.startswith("skipped"):
        return ("skipped",)
    head = cell.split(";")[0]
    times = [number(x) for m in SECONDS.finditer(head) for x in m.groups() if x]
    if not times:
        fail(f"testing.md: a disk case's cell neither spared, skipped nor a time: {cell!r}")
    sig = SIGNALS.search(head)
    return ("killed", min(times), max(times), sig.group(1) if sig else "")


def verdict(md):
    found = [t for t in tables(section(md, "### At any disk speed", "testing.md")) if t[0][0] == "case (disk)"]
    if not found:
        fail("testing.md: no 'case (disk)' table under '### At any disk speed'")
    header, cells = found[0]
    kernels = header[1:]
    for k in kernels:
        if k not in KCOLORS:
            fail(f"testing.md: a kernel the picture has no colour for: {k!r}")
    rows = [(c[0], [verdict_cell(x) for x in c[1:]]) for c in cells]

    W, left, top, lane, pad = 980, 250, 70, 13, 8
    plot_w = 560
    heights = [len(kernels) * lane + pad for _ in rows]
    H = top + sum(heights) + 70
    out = svg_open(W, H, "The disk cases (docs/testing.md): onset to kill per case and kernel, and who was spared")

    def x(s):
        return left + plot_w * s / BOUND_S

    for s in range(0, BOUND_S + 1, 5):
        out.append(f'<line x1="{x(s):.1f}" y1="{top - 6}" x2="{x(s):.1f}" y2="{H - 64}" stroke="#ddd"/>'
                   f'<text x="{x(s):.1f}" y="{top - 10}" text-anchor="middle">{s} s</text>')
    out.append(f'<line x1="{x(BOUND_S):.1f}" y1="{top - 6}" x2="{x(BOUND_S):.1f}" y2="{H - 64}" stroke="#d62728" '
               'stroke-width="2"/>')
    out.append(f'<text x="{x(BOUND_S) + 6:.1f}" y="{top + 8}" fill="#d62728">the tests\' bound</text>')
    y0 = top
    for (case, vals), h in zip(rows, heights):
        out.append(f'<line x1="20" y1="{y0 + h - pad / 2:.1f}" x2="{W - 20}" y2="{y0 + h - pad / 2:.1f}" '
                   'stroke="#eee"/>')
        out.append(f'<text x="{left - 8}" y="{y0 + len(kernels) * lane / 2 + 4:.1f}" text-anchor="end">'
                   f'{esc(case)}</text>')
        for i, (k, v) in enumerate(zip(kernels, vals)):
            yb = y0 + i * lane
            color = KCOLORS[k]
            if v is None:
                out.append(f'<text x="{left + 4}" y="{yb + 10}" font-size="10" fill="#999">{k}: not run</text>')
            elif v[0] == "spared":
                out.append(f'<circle cx="{left + 6}" cy="{yb + 6}" r="4" fill="none" stroke="{color}" '
                           f'stroke-width="2"/><text x="{left + 16}" y="{yb + 10}" font-size="10">{k}: spared</text>')
            elif v[0] == "skipped":
                out.append(f'<text x="{left + 4}" y="{yb + 10}" font-size="10" fill="#999">{k}: skipped</text>')
            else:
                _, lo, hi, sig = v
                out.append(f'<rect x="{left}" y="{yb + 1}" width="{x(hi) - left:.1f}" height="{lane - 3}" '
                           f'fill="{color}"/>')
                if lo != hi:
                    out.append(f'<line x1="{x(lo):.1f}" y1="{yb}" x2="{x(lo):.1f}" y2="{yb + lane - 1}" '
                               'stroke="white" stroke-width="2"/>')
                span = f"{lo:g}-{hi:g} s" if lo != hi else f"{hi:g} s"
                out.append(f'<text x="{x(hi) + 4:.1f}" y="{yb + 10}" font-size="10">{k}: {span}'
                           f'{", " + sig if sig else ""}</text>')
        y0 += h
    legend(out, left, H - 44, [(k, KCOLORS[k]) for k in kernels])
    out.append(f'<text x="{left}" y="{H - 26}" fill="#555">A bar: killed, onset to kill (a white tick: the fastest '
               'of several); beside it what decided (memory / io pressure,</text>')
    out.append(f'<text x="{left}" y="{H - 10}" fill="#555">refault: the re-read rule). A circle: not killed. '
               'Drawn by tools/bench/plot.py from the table</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- snapshot: docs/benchmarks.md's snapshot write and restore --------------

WRITE_ROWS = [("[o_direct]", "O_DIRECT copy", "#7f7f7f"), ("[direct]", "memguard", "#1f77b4"),
              ("[buffered]", "buffered baseline", "#d62728")]
RESTORE_ROWS = [("its data bytes", "O_DIRECT read of the same bytes", "#7f7f7f"),
                ("memguard's files", "memguard restore", "#1f77b4"),
                ("buffered baseline's files", "baseline's files restored", "#d62728")]
KERNEL_OF = re.compile(r"\(VM (\d+\.\d+)")


def snapshot_tables(md, heading_start, first_col, wanted):
    """{kernel: {label: (p50, p99)}} from every section heading_start... (VM K...)."""
    out = {}
    lines = md.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith(heading_start):
            continue
        m = KERNEL_OF.search(line)
        if not m:
            fail(f"benchmarks.md: no kernel in {line!r}")
        found = [t for t in tables(section("\n".join(lines[i:]), heading_start, "benchmarks.md"))
                 if t[0][0] == first_col]
        if not found:
            fail(f"benchmarks.md: no {first_col!r} table under {line!r}")
        header, cells = found[0]
        col = header.index("ms p50 / p90 / p99")
        got = {}
        for c in cells:
            for key, label, _ in wanted:
                if key in c[0]:
                    p = [number(x) for x in c[col].split("/")]
                    got[label] = (p[0], p[2])
        if len(got) != len(wanted):
            fail(f"benchmarks.md: {line!r} lacks a row of {[w[1] for w in wanted]}")
        out[m.group(1)] = got
    if not out:
        fail(f"benchmarks.md: no section starting {heading_start!r}")
    return out


def snapshot(md):
    writes = snapshot_tables(md, "#### Snapshot write, ", "writer", WRITE_ROWS)
    restores = snapshot_tables(md, "#### Snapshot restore, ", "reader", RESTORE_ROWS)
    size_w = re.search(r"#### Snapshot write, \d+ cycles of a (\d+) MiB image", md)
    size_r = re.search(r"#### Snapshot restore, \d+ cycles of \d+ files of (\d+) MiB", md)
    if not size_w or not size_r:
        fail("benchmarks.md: the snapshot headings do not give the image sizes")
    mib_w, mib_r = number(size_w.group(1)), number(size_r.group(1))
    panels = [("write: MB/s, p50 bar, p99 tick (higher is better)", writes, WRITE_ROWS, mib_w),
              ("restore: MB/s, p50 bar, p99 tick (higher is better)", restores, RESTORE_ROWS, mib_r)]

    W, H, top, bottom, left, gap = 900, 420, 70, 320, 70, 70
    pw = (W - left - gap - 20) / 2
    out = svg_open(W, H, "Snapshot write and restore against the disk's O_DIRECT copy (docs/benchmarks.md)")
    for p, (title, data, wanted, mib) in enumerate(panels):
        x0 = left + p * (pw + gap)
        mbs = {k: {label: (mib * 1.048576 / (v[0] / 1000), mib * 1.048576 / (v[1] / 1000))
                   for label, v in d.items()} for k, d in data.items()}
        hi = max(v[0] for d in mbs.values() for v in d.values())
        hi = math.ceil(hi * 1.25 / 20) * 20

        def y(v):
            return bottom - (bottom - top) * v / hi

        out.append(f'<text x="{x0:.1f}" y="{top - 14}" font-size="13">{title}</text>')
        for t in range(0, int(hi) + 1, 20):
            out.append(f'<line x1="{x0:.1f}" y1="{y(t):.1f}" x2="{x0 + pw:.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                       f'<text x="{x0 - 6:.1f}" y="{y(t) + 4:.1f}" text-anchor="end">{t}</text>')
        kernels = sorted(mbs, key=lambda k: [int(n) for n in k.split(".")])
        group = pw / len(kernels)
        bw = group / (len(wanted) + 1)
        for g, k in enumerate(kernels):
            out.append(f'<text x="{x0 + g * group + group / 2:.1f}" y="{bottom + 18}" text-anchor="middle">'
                       f'{k}</text>')
            base = mbs[k][wanted[0][1]][0]
            for i, (_, label, color) in enumerate(wanted):
                v50, v99 = mbs[k][label]
                bx = x0 + g * group + bw / 2 + i * bw
                out.append(f'<rect x="{bx:.1f}" y="{y(v50):.1f}" width="{bw - 3:.1f}" height="{bottom - y(v50):.1f}" '
                           f'fill="{color}"/><line x1="{bx:.1f}" y1="{y(v99):.1f}" x2="{bx + bw - 3:.1f}" '
                           f'y2="{y(v99):.1f}" stroke="black" stroke-width="2"/>')
                out.append(f'<text x="{bx + (bw - 3) / 2:.1f}" y="{min(y(v50), y(v99)) - 16:.1f}" '
                           f'text-anchor="middle" font-size="10">{v50:.1f}</text>')
                out.append(f'<text x="{bx + (bw - 3) / 2:.1f}" y="{min(y(v50), y(v99)) - 4:.1f}" '
                           f'text-anchor="middle" font-size="10" fill="#555">{100 * v50 / base:.0f} %</text>')
        out.append(f'<rect x="{x0:.1f}" y="{top}" width="{pw:.1f}" height="{bottom - top}" fill="none" '
                   'stroke="black"/>')
        legend(out, x0, bottom + 40, [(label, color) for _, label, color in wanted[:2]])
        legend(out, x0, bottom + 56, [(label, color) for _, label, color in wanted[2:]])
    out.append(f'<text x="{left}" y="{H - 26}" fill="#555">MB/s (10^6 B): the {mib_w:g} MiB image written, the '
               f'{mib_r:g} MiB slice restored (its holes are not read); %: of the grey bar of its kernel.</text>')
    out.append(f'<text x="{left}" y="{H - 10}" fill="#555">Drawn by tools/bench/plot.py from the tables</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- scale: section 2 of docs/benchmarks.md, the set against the floor ----

def scale(md):
    rows = []
    for header, cells in tables(section(md, "### 2. One thread, N guards", "benchmarks.md")):
        if "reads alone CPU %" not in header:
            continue
        for c in cells:
            row = dict(zip(header, c))
            try:
                n = number(row["guards"])
                rows.append((f"{row['where']}, {row['guards']}", n, number(row["memguard CPU %"]),
                             number(row["reads alone CPU %"]), row["memguard / floor"]))
            except (KeyError, ValueError):
                fail(f"benchmarks.md: a floor row of section 2 without guards and both CPU %: {c!r}")
    if not rows:
        fail("benchmarks.md: no table of the floor ('reads alone CPU %') in section 2")
    # CPU per actor: microseconds of CPU per second per guard (% of a core x 10^4 / guards)
    per = [(label, m * 1e4 / n, f * 1e4 / n, ratio) for label, n, m, f, ratio in rows]

    W, left, top, lane, pad = 1060, 330, 60, 14, 10
    plot_w = 520
    H = top + len(per) * (2 * lane + pad) + 70
    hi = 10 ** math.ceil(math.log10(max(max(m, f) for _, m, f, _ in per)))
    lo = 10 ** math.floor(math.log10(min(min(m, f) for _, m, f, _ in per)))
    out = svg_open(W, H, "CPU per actor: a set of N guards against the floor, the same reads alone (section 2)")

    def x(v):
        return left + plot_w * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    t = lo
    while t <= hi:
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{H - 64}" stroke="#ddd"/>'
                   f'<text x="{x(t):.1f}" y="{top - 10}" text-anchor="middle">{t:g} µs/s</text>')
        t *= 10
    y0 = top
    for label, m, f, ratio in per:
        out.append(f'<text x="{left - 8}" y="{y0 + lane + 4:.1f}" text-anchor="end">{esc(label)}</text>')
        for i, (v, color) in enumerate([(m, "#1f77b4"), (f, "#7f7f7f")]):
            yb = y0 + i * lane
            out.append(f'<rect x="{x(lo):.1f}" y="{yb + 1}" width="{x(v) - x(lo):.1f}" height="{lane - 3}" '
                       f'fill="{color}"/><text x="{x(v) + 4:.1f}" y="{yb + 10}" font-size="10">{v:.2f}'
                       f'{f"  ({ratio} the floor, per read)" if i == 0 else ""}</text>')
        y0 += 2 * lane + pad
    legend(out, left, H - 44, [("memguard's set", "#1f77b4"), ("the floor: the same reads alone", "#7f7f7f")])
    out.append(f'<text x="{left}" y="{H - 26}" fill="#555">Microseconds of CPU per second per actor (% of one core '
               'x 10^4 / guards), log scale; a 250 ms tick,</text>')
    out.append(f'<text x="{left}" y="{H - 10}" fill="#555">mostly the fast path; VM rows under TCG. Drawn by '
               'tools/bench/plot.py from the tables</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


FIGURES = {"tick": ("docs/benchmarks.md", "docs/benchmarks-tick.svg", tick),
           "verdict": ("docs/testing.md", "docs/testing-verdict.svg", verdict),
           "snapshot": ("docs/benchmarks.md", "docs/benchmarks-snapshot.svg", snapshot),
           "scale": ("docs/benchmarks.md", "docs/benchmarks-scale.svg", scale)}


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if args[:1] == ["--root"]:
        if len(args) < 2:
            fail("--root needs a directory")
        root, args = args[1], args[2:]
    for name in args:
        if name not in FIGURES:
            fail(f"no figure {name!r} (usage: plot.py [--check] [--root DIR] [{'|'.join(FIGURES)}...])")
    bad = 0
    for name in args or list(FIGURES):
        src, dst, draw = FIGURES[name]
        with open(os.path.join(root, src), encoding="utf-8") as f:
            text = draw(f.read())
        path = os.path.join(root, dst)
        if not check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            continue
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == text
        except OSError as e:
            fail(f"{dst}: {e.strerror}")
        if same:
            print(f"{dst}: up to date with {src}")
        else:
            print(f"plot.py: {dst} is not what {src} gives: run tools/bench/plot.py {name}", file=sys.stderr)
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
