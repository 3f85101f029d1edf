#!/usr/bin/env python3
"""Draws a training-speed table of bench/peer_train.py as a bar chart (PNG).

The table (peer_train.py --out FILE.md, which scripts/gpu_train_bench.sh
writes) joins Strata's bench_train JSON with PyTorch's steps of the same
run; this draws, per case, Strata's tokens/s beside eager's and
torch.compile's, each bar labelled with its value. docs/guide/training.md
shows the chart beside its table.

    /usr/bin/python3 scripts/plot_train_speed.py TABLE.md --out chart.png [--title "..."]

Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import sys

from md_table import table_rows

MODES = [("strata tok/s", "Strata"), ("eager tok/s", "PyTorch eager"),
         ("compile tok/s", "torch.compile")]


def parse_table(path):
    """(case label, {series: tokens/s}) per row of the table."""
    header, rows = table_rows(path, "case")
    out = []
    for cells in rows:
        values = {}
        for col, name in MODES:  # the first column of that name ("MFU", "GiB" repeat)
            if col in header:
                try:
                    values[name] = float(cells[header.index(col)])
                except ValueError:
                    pass
        out.append((f"{cells[0]}\n{cells[1]}", values))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="Training step, tokens/s (higher is better)")
    a = ap.parse_args()
    rows = parse_table(a.table)
    if not rows:
        sys.exit(f"plot_train_speed: no rows in {a.table}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = [name for _, name in MODES if any(name in v for _, v in rows)]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(2.6 * len(rows) + 2, 4.2))
    for k, name in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(rows))]
        # Each case on its own scale: tokens/s relative to the case's best.
        ys = [v.get(name, 0) / max(v.values()) for _, v in rows]
        bars = ax.bar(xs, ys, width, label=name)
        for b, (_, v) in zip(bars, rows):
            if name in v:
                t = v[name]
                ax.annotate(f"{t / 1e6:.2f}M" if t >= 1e6 else f"{t / 1e3:.0f}k",
                            (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([label for label, _ in rows], fontsize=9)
    ax.set_ylabel("tokens/s relative to the case's fastest")
    ax.set_ylim(0, 1.3)
    ax.set_title(a.title)
    ax.legend(fontsize=8, loc="upper center", ncol=len(series))
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"plot_train_speed: {len(rows)} cases -> {a.out}")


if __name__ == "__main__":
    main()
