#!/usr/bin/env python3
"""Draws `strata train`'s log (train_log.csv: step, loss, val_loss, lr,
grad_norm, tokens_per_s) as a PNG: the training and validation loss over the
steps, with the learning rate on a second axis (docs/guide/training.md).

usage: plot_training.py OUT_DIR_OR_CSV [--out PNG]   (default: train_log.png beside the CSV)
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", help="the out folder of strata train, or its train_log.csv")
    ap.add_argument("--out", help="the PNG to write (default: train_log.png beside the CSV)")
    a = ap.parse_args()
    path = os.path.join(a.log, "train_log.csv") if os.path.isdir(a.log) else a.log
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_training.py: matplotlib is missing (apt install python3-matplotlib)")
    steps, loss, val_steps, val, lr = [], [], [], [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            s = int(row["step"])
            steps.append(s)
            loss.append(float(row["loss"]) if row["loss"] else float("nan"))
            lr.append(float(row["lr"]))
            if row["val_loss"]:
                val_steps.append(s)
                val.append(float(row["val_loss"]))
    if not steps:
        sys.exit(f"plot_training.py: {path} holds no steps")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(steps, loss, label="training loss", linewidth=1)
    if val:
        ax.plot(val_steps, val, "o-", label="validation loss", markersize=3)
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy (nats per token)")
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(steps, lr, color="grey", linestyle="--", linewidth=0.8, label="learning rate")
    ax2.set_ylabel("learning rate")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right")
    ax.set_title(os.path.basename(os.path.dirname(os.path.abspath(path))) or path)
    fig.tight_layout()
    out = a.out or os.path.join(os.path.dirname(path), "train_log.png")
    fig.savefig(out, dpi=120)
    print(f"plot_training.py: wrote {out}")


if __name__ == "__main__":
    main()
