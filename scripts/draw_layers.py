#!/usr/bin/env python3
"""Draws docs/guide/layers.png: Strata's layers, one box per CMake target
the build enforces, and an arrow for each "may include" between them
(docs/guide/architecture.md explains the picture).

    /usr/bin/python3 scripts/draw_layers.py [--out docs/guide/layers.png]

Needs matplotlib (Debian: python3-matplotlib). Run it again after a layer
or a target changes, and commit the PNG with the change.
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

# Box fill per kind of layer.
LIB = "#dbe8f6"      # library layers in the umbrella target
BACKEND = "#e4f2de"  # backends, reached through the registry
TOOL = "#f6ead8"     # built on the library, not part of it
EDGE = "#33414e"


def box(ax, x, y, w, h, title, target, body, fill):
    """A layer: folder in bold, its CMake target in monospace, one line of what it holds."""
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                fc=fill, ec=EDGE, lw=1.4))
    cx = x + w / 2
    ax.text(cx, y + h - 0.22, title, ha="center", va="top", fontsize=11.5, weight="bold")
    ax.text(cx, y + h - 0.52, target, ha="center", va="top", fontsize=9, family="monospace",
            color="#1d4f91")
    if body:
        ax.text(cx, y + 0.12, body, ha="center", va="bottom", fontsize=8.2, color="#333333",
                linespacing=1.25)


def arrow(ax, start, end, dashed=False, label=None, label_at=None):
    """start -> end: the start's code may include the end's headers (dashed: calls, no include)."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, lw=1.5,
                                 color="#6a4f9c" if dashed else EDGE,
                                 linestyle=(0, (4, 3)) if dashed else "-",
                                 shrinkA=2, shrinkB=2))
    if label:
        lx, ly = label_at or ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        ax.text(lx, ly, label, ha="center", va="center", fontsize=7.8,
                color="#6a4f9c" if dashed else EDGE,
                bbox=dict(fc="white", ec="none", pad=1.0))


def draw(out):
    fig, ax = plt.subplots(figsize=(11, 7.6))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 7.6)
    ax.axis("off")

    # Bottom: core. Middle: ops beside the backends. Above: nn and the harness. Top: the tool.
    box(ax, 0.9, 0.3, 9.8, 1.15, "core/", "strata_core",
        "Tensor, Storage, DType, Device, Error, Registry, DeviceRuntime seam,\n"
        "Stream / Graph, Tuning switchboard", LIB)
    box(ax, 0.9, 2.05, 4.3, 1.55, "ops/", "strata_ops  (+ strata_ops_api)",
        "front ends: validate, build IterArgs /\nMatmulArgs / AttentionArgs, dispatch", LIB)
    box(ax, 6.0, 2.75, 1.45, 0.85, "reference", "", "", BACKEND)
    box(ax, 7.6, 2.75, 1.45, 0.85, "cpu", "", "", BACKEND)
    box(ax, 9.2, 2.75, 1.5, 0.85, "cuda", "", "", BACKEND)
    for x, name in ((6.725, "_reference"), (8.325, "_cpu"), (9.95, "_cuda")):
        ax.text(x, 2.86, "strata_backend\n" + name, ha="center", va="bottom", fontsize=7.2,
                family="monospace", color="#1d4f91", linespacing=1.0)
    box(ax, 6.0, 2.05, 4.7, 0.58, "", "", "", BACKEND)
    ax.text(8.35, 2.34, "backends/register_backends.cpp   strata_backends", ha="center",
            va="center", fontsize=8.4, family="monospace", color="#1d4f91")
    ax.text(8.35, 3.78, "backends/   (kernels; only they see backends/)", ha="center",
            va="bottom", fontsize=9, weight="bold")
    box(ax, 0.9, 4.25, 4.3, 1.3, "nn/", "strata_nn",
        "modules, DecoderLM, KV cache, safetensors,\nHugging Face weights, generate", LIB)
    box(ax, 6.0, 4.25, 4.7, 1.3, "harness/", "strata_harness  (not installed)",
        "cross-backend runners: attention harness,\nop runner and catalog", TOOL)
    box(ax, 0.9, 6.15, 9.8, 1.15, "app/   (also tests/, bench/, examples/)",
        "strata_cli  ->  build/app/strata",
        "the strata tool: info, attention, check, generate, forward", TOOL)

    # may include
    arrow(ax, (3.05, 2.05), (3.05, 1.45))                      # ops -> core
    arrow(ax, (3.05, 4.25), (3.05, 3.6))                       # nn -> ops
    arrow(ax, (6.6, 4.25), (4.6, 3.6))                         # harness -> ops
    arrow(ax, (3.05, 6.15), (3.05, 5.55))                      # app -> nn
    arrow(ax, (8.35, 6.15), (8.35, 5.55))                      # app -> harness
    arrow(ax, (8.35, 2.05), (8.35, 1.45))                      # backends -> core
    arrow(ax, (6.0, 3.42), (5.2, 3.42), label="argument\nstructs",
          label_at=(5.6, 3.12))                                # backends -> ops_api
    # calls, no include
    arrow(ax, (5.2, 2.88), (6.0, 2.88), dashed=True, label="find()", label_at=(5.6, 2.62))

    # The umbrella target.
    ax.plot([0.55, 0.45, 0.45, 0.55], [0.3, 0.3, 5.55, 5.55], color="#1d4f91", lw=1.6)
    ax.text(0.3, 2.9, "strata  (umbrella: strata_nn + strata_ops + strata_core)",
            rotation=90, ha="center", va="center", fontsize=9, family="monospace",
            color="#1d4f91")

    ax.text(5.8, 0.02, "solid arrow: may include    dashed: calls through the registry, "
            "no include (the backends fill it at first use)", ha="center", va="bottom",
            fontsize=8.4, color="#444444")
    fig.tight_layout(pad=0.3)
    fig.savefig(out, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/guide/layers.png")
    draw(p.parse_args().out)


if __name__ == "__main__":
    main()
