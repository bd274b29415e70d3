"""Pictures for the notebooks' show cells: plain functions, matplotlib imported only when drawing.

Importing this module costs nothing and grading never needs it; where there is
no display (a terminal, a CI machine), the headless Agg backend is used. Each
function draws on ``ax`` when given one (so a notebook can put several side by
side) or on a new figure, and returns the axes it drew on.
"""

import math
import os
import sys

import numpy as np


def _pyplot():
    """matplotlib.pyplot, switched to Agg first when nothing could show a window."""
    import matplotlib
    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        in_kernel = "ipykernel" in sys.modules
        display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        if not in_kernel and not display and sys.platform.startswith("linux"):
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _axes(ax, figsize):
    if ax is not None:
        return ax
    plt = _pyplot()
    _, ax = plt.subplots(figsize=figsize)
    return ax


def parameter_bars(counts, title=None, ax=None):
    """Bar chart of where a model's parameters sit.

    ``counts`` maps a group name (embeddings, attention, feed-forward, norms, ...)
    to its number of parameters, for the whole model. Each bar is labelled with
    its count and its share of the total, so groups too small to see still show.
    """
    names = [str(name) for name in counts]
    values = [int(counts[name]) for name in counts]
    total = sum(values) or 1
    ax = _axes(ax, (6, 3.5))
    bars = ax.bar(range(len(values)), values, color="#4c72b0")
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(names)
    ax.set_ylabel("parameters")
    for bar, value in zip(bars, values):
        share = 100 * value / total
        ax.annotate(f"{value:,}\n{share:.1f}%" if share >= 0.1 or share == 0 else f"{value:,}\n{share:.2g}%",
                    (bar.get_x() + bar.get_width() / 2, value),
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, max(values + [1]) * 1.25)
    ax.set_title(f"{title + ': ' if title else ''}{total:,} parameters")
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def attention_heatmap(weights, tokens=None, ax=None, title=None, *, sums=True, digits=2):
    """Attention weights as a grid: queries down the side, keys along the top.

    ``weights`` is (n, n), row i holding query i's weights over the keys;
    ``tokens`` names the n positions (default 0 .. n-1). Cells with a weight of
    exactly 0, or not a number, are left blank (white): for a causal mask these
    are the blocked positions. Each other cell shows its value; with ``sums``,
    each row's sum is written to its right, so rows that do not sum to 1 stand out.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"attention_heatmap needs a 2-D array of weights, got shape {w.shape}")
    rows, cols = w.shape
    if tokens is None:
        tokens = [str(i) for i in range(max(rows, cols))]
    tokens = [str(t) for t in tokens]
    if len(tokens) < max(rows, cols):
        raise ValueError(f"{len(tokens)} tokens for a {rows} x {cols} grid of weights")
    plt = _pyplot()
    own_figure = ax is None
    ax = _axes(ax, (1.2 * cols + 2.6, 1.0 * rows + 1.6))
    blank = ~np.isfinite(w) | (w == 0)
    shown = np.ma.masked_array(np.where(blank, 0.0, w), mask=blank)
    cmap = plt.get_cmap("Blues").with_extremes(bad="white")
    image = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0)
    for i in range(rows):
        for j in range(cols):
            if not blank[i, j]:
                ax.text(j, i, f"{w[i, j]:.{digits}f}", ha="center", va="center", fontsize=10,
                        color="white" if w[i, j] > 0.55 else "black")
    if sums:
        beside = ax.get_yaxis_transform()          # x in axes fraction, y in rows
        for i in range(rows):
            total = np.nansum(np.where(np.isfinite(w[i]), w[i], 0.0))
            ax.text(1.03, i, f"sum {total:.4f}", transform=beside, ha="left", va="center", fontsize=9,
                    color="black" if abs(total - 1.0) < 1e-6 else "firebrick")
    ax.set_xticks(range(cols))
    ax.set_xticklabels(tokens[:cols])
    ax.set_yticks(range(rows))
    ax.set_yticklabels(tokens[:rows])
    ax.xaxis.tick_top()
    ax.set_xlabel("key (attended to)")
    ax.xaxis.set_label_position("top")
    ax.set_ylabel("query (attending)")
    ax.set_xticks(np.arange(-0.5, cols), minor=True)
    ax.set_yticks(np.arange(-0.5, rows), minor=True)
    ax.grid(which="minor", color="0.85", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    if title:
        ax.set_title(title, pad=32)
    ax.figure.colorbar(image, ax=ax, fraction=0.04, pad=0.2 if sums else 0.03, label="weight")
    if own_figure:
        ax.figure.tight_layout()
    return ax


def entropy_curves(d_values, raw, scaled, ax=None, *, n_keys=8):
    """Entropy of the softmax weights against d_k: raw scores against scores / sqrt(d_k).

    ``d_values`` are the key widths (drawn on a log-2 axis), ``raw`` and ``scaled``
    the mean entropies in bits; a dashed line marks the most there can be,
    log2(n_keys) bits, when every key gets the same weight.
    """
    d = np.asarray(d_values, dtype=float)
    raw = np.asarray(raw, dtype=float)
    scaled = np.asarray(scaled, dtype=float)
    if not (d.shape == raw.shape == scaled.shape and d.ndim == 1):
        raise ValueError(f"d_values, raw and scaled must be 1-D and the same length, "
                         f"got shapes {d.shape}, {raw.shape}, {scaled.shape}")
    own_figure = ax is None
    ax = _axes(ax, (6.4, 4.0))
    top = math.log2(n_keys)
    ax.axhline(top, color="0.45", linestyle="--", linewidth=1)
    ax.text(d[0], top, f" maximum, log2({n_keys}) = {top:g} bits", va="bottom", ha="left",
            fontsize=9, color="0.35")
    ax.plot(d, scaled, marker="o", color="tab:blue", label=r"scaled: softmax($q\cdot k / \sqrt{d_k}$)")
    ax.plot(d, raw, marker="s", color="tab:red", label=r"raw: softmax($q\cdot k$)")
    for x, y in zip(d, raw):
        ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, -14), ha="center",
                    fontsize=8, color="tab:red")
    for x, y in zip(d, scaled):
        ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, 7), ha="center",
                    fontsize=8, color="tab:blue")
    ax.set_xscale("log", base=2)
    ax.set_xticks(d)
    ax.set_xticklabels([f"{int(x)}" if float(x).is_integer() else f"{x:g}" for x in d])
    ax.minorticks_off()
    ax.set_ylim(-0.08 * top, top * 1.12)
    ax.set_yticks(np.arange(0, math.floor(top) + 1))
    ax.set_xlabel(r"$d_k$, the width of queries and keys")
    ax.set_ylabel("entropy of the weights (bits)")
    ax.set_title(f"Mean entropy over {n_keys} random keys")
    ax.legend(loc="center right", frameon=False)
    if own_figure:
        ax.figure.tight_layout()
    return ax
