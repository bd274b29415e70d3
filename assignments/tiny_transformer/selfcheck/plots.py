"""Pictures for the notebooks' show cells: plain functions, matplotlib imported only when drawing.

Importing this module costs nothing and grading never needs it; where there is
no display (a terminal, a CI machine), the headless Agg backend is used. Each
function draws on ``ax`` when given one (so a notebook can put several side by
side) or on a new figure, and returns the axes it drew on.
"""

import math
import os
import sys

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_Axes = Any     # matplotlib's Axes, imported only when drawing


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


def parameter_bars(counts: Mapping[str, int], title: str | None = None, ax: _Axes | None = None) -> _Axes:
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


def attention_heatmap(weights: np.ndarray, tokens: Sequence[str] | None = None, ax: _Axes | None = None,
                      title: str | None = None, *, sums: bool = True, digits: int = 2) -> _Axes:
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


def entropy_curves(d_values: Sequence[int], raw: Any, scaled: Any,
                   ax: _Axes | None = None, *, n_keys: int = 8) -> _Axes:
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


def _runs(values):
    """One curve (or loss) or several, one per seed, as a 2-D (or 1-D) float array."""
    arr = np.asarray(values, dtype=float)
    return arr if arr.ndim == 2 else arr[None, :] if arr.ndim == 1 else arr.reshape(1, -1)


def loss_curves(curves: Mapping[str, Sequence], log_every: int = 100, ax: _Axes | None = None,
                title: str | None = None, *, skip: float = 0.1) -> _Axes:
    """Training-loss curves of several model variants on one set of axes.

    ``curves`` maps a variant to its curve (the mean loss of every ``log_every``
    steps) or to a list of curves, one per seed: then the line is their mean and
    a band spans the lowest to the highest. The first ``skip`` of training (10%, at least one point)
    starts far above the rest and is left out of the y range, not of the lines; ``skip=0`` keeps
    every point in range, the starting loss included.
    """
    own_figure = ax is None
    ax = _axes(ax, (6.4, 4.2))
    lows, tops = [], []
    for name, values in curves.items():
        runs = _runs(values)
        x = np.arange(1, runs.shape[1] + 1) * log_every
        mean = runs.mean(axis=0)
        (line,) = ax.plot(x, mean, lw=1.4, label=str(name))
        if len(runs) > 1:
            ax.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=line.get_color(), alpha=0.2, lw=0)
        start = min(max(1, int(skip * runs.shape[1])), runs.shape[1] - 1) if skip > 0 else 0
        lows.append(np.nanmin(runs))
        tops.append(np.nanmax(runs[:, start:]))
    if lows and np.isfinite(lows).all() and np.isfinite(tops).all():
        span = max(tops) - min(lows)
        ax.set_ylim(min(lows) - 0.05 * span - 0.01, max(tops) + 0.05 * span + 0.01)
    ax.set_xlabel("training step")
    ax.set_ylabel(f"training loss (mean of each {log_every} steps)")
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    if own_figure:
        ax.figure.tight_layout()
    return ax


def loss_bars(losses: Mapping[str, float | Sequence[float]], ax: _Axes | None = None, title: str | None = None,
              *, reference: Any = None, digits: int = 3) -> _Axes:
    """Final test loss of each variant as a bar, labelled with its value.

    ``losses`` maps a variant to a loss or to a list of losses (one per seed;
    the bar is their mean, a dot marks each seed and whiskers span the lowest to
    the highest). The y axis starts near the lowest loss, so differences of a
    few hundredths are visible. ``reference`` is an optional ``(label, value)``
    drawn as a dashed line, e.g. the chapter's full model.
    """
    own_figure = ax is None
    names = [str(name) for name in losses]
    runs = [np.atleast_1d(np.asarray(losses[name], dtype=float)) for name in losses]
    means = np.array([r.mean() for r in runs])
    ax = _axes(ax, (6.4, 4.2))
    lo = min(float(r.min()) for r in runs)
    hi = max(float(r.max()) for r in runs)
    if reference is not None:
        lo, hi = min(lo, reference[1]), max(hi, reference[1])
    span = max(hi - lo, 0.02)
    bottom = lo - 0.3 * span
    errors = np.array([[m - r.min(), r.max() - m] for m, r in zip(means, runs)]).T
    bars = ax.bar(range(len(names)), means - bottom, bottom=bottom, color="#4c72b0", alpha=0.8,
                  yerr=errors if any(len(r) > 1 for r in runs) else None, capsize=4)
    for i, (bar, r) in enumerate(zip(bars, runs)):
        if len(r) > 1:
            ax.plot([i] * len(r), r, "k.", ms=4)
        ax.annotate(f"{means[i]:.{digits}f}", (bar.get_x() + bar.get_width() / 2, bottom + 0.04 * span),
                    ha="center", va="bottom", fontsize=9, color="white", fontweight="bold")
    if reference is not None:
        ax.axhline(reference[1], color="k", ls="--", lw=1, label=f"{reference[0]}: {reference[1]:.{digits}f}")
        ax.legend(loc="upper left", frameon=False)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylim(bottom, hi + 0.25 * span)
    ax.set_ylabel("test loss (nats per character)")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    if own_figure:
        ax.figure.tight_layout()
    return ax
