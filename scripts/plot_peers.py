#!/usr/bin/env python3
"""Draws a peer table of bench/peer_attention.py as a bar chart (PNG).

The table (peer_attention.py --out FILE.md) already joins Strata's
benchmark JSON with the peers' timings of the same run; this script reads
it back and draws, per shape, Strata's TFLOP/s beside each peer's, with
measured ceilings as horizontal lines. People read a chart faster than a
table; docs/log/cuda.md shows the result beside the table it was drawn from.

    /usr/bin/python3 scripts/plot_peers.py TABLE.md [TABLE2.md ...] --out chart.png \
        [--title "..."] [--ceiling "cuBLAS SGEMM=51.1" ...] [--only SHAPE ...]

Needs matplotlib (Debian: python3-matplotlib; the GPU machine's python3 has
it). Shapes in several tables are drawn once per table, in order.
"""
import argparse
import re
import sys

from md_table import table_rows

PEERS = ["sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "naive"]


def parse_table(path):
    """Rows of a peer table: (shape, strata TFLOP/s, {peer: TFLOP/s})."""
    header, cells_of_rows = table_rows(path, "shape")
    if header is None:
        sys.exit(f"{path}: no peer table (a '| shape | Strata ms | ...' header) found")
    rows = []
    for cells in cells_of_rows:
        rec = dict(zip(header, cells))
        try:
            strata = float(rec["Strata TFLOP/s"])
        except (KeyError, ValueError):
            continue
        peers = {}
        for p in PEERS:
            m = re.match(r"([0-9.]+)", rec.get(p, ""))
            if m:
                peers[p] = float(m.group(1))
        rows.append((rec["shape"], strata, peers))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="softmax attention, TFLOP/s (higher is better)")
    ap.add_argument("--ceiling", action="append", default=[], help="NAME=TFLOPS, a line")
    ap.add_argument("--only", nargs="*", help="shape names to keep")
    args = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for t in args.tables:
        rows += [r for r in parse_table(t) if not args.only or r[0] in args.only]
    if not rows:
        sys.exit("no rows to draw")
    peers = [p for p in PEERS if any(p in r[2] for r in rows)]
    series = ["Strata"] + peers
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(rows)), 5))
    for i, name in enumerate(series):
        xs, ys = [], []
        for j, (_, strata, pv) in enumerate(rows):
            v = strata if name == "Strata" else pv.get(name)
            if v is not None:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(v)
        ax.bar(xs, ys, width, label=name, color="black" if name == "Strata" else None)
    for c in args.ceiling:
        name, _, value = c.partition("=")
        ax.axhline(float(value), linestyle="--", linewidth=1, color="grey")
        ax.text(len(rows) - 0.5, float(value), f" {name} {value}", va="bottom", ha="right",
                fontsize=8, color="grey")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r[0] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("TFLOP/s")
    ax.set_title(args.title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}: {len(rows)} shapes, series {', '.join(series)}")


if __name__ == "__main__":
    main()
