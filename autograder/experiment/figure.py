"""The experiment's figure, data/projection_removal.png: per budget, the training curves and the
test losses of every variant and seed."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from autograder.experiment.runs import CHAPTER_TEST_LOSS, VARIANTS


def plot(results: Mapping, path: str | Path) -> bool:
    """Draw the budgets of ``results`` that have a summary into ``path``; False when nothing was drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no figure written ({path})", file=sys.stderr)
        return False
    full = results.get("full_budget")
    short = results.get("short_budget")
    panels = [p for p in (full, short) if p and p.get("summary")]
    if not panels:
        return False
    fig, axes = plt.subplots(len(panels), 2, figsize=(12, 4.6 * len(panels)), squeeze=False)
    colors = dict(zip(VARIANTS, ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#7f7f7f"]))
    for row, part in zip(axes, panels):
        runs = part["runs"]
        variants = [v for v in VARIANTS if any(r["variant"] == v for r in runs)]
        curve_key = "train_loss_curve" if part is full else "losses"
        every = part["log_every"]
        ax = row[0]
        for v in variants:
            curves = np.array([r[curve_key] for r in runs if r["variant"] == v])
            x = np.arange(1, curves.shape[1] + 1) * every
            ax.plot(x, curves.mean(axis=0), color=colors[v], label=v, lw=1.4)
            if len(curves) > 1:
                ax.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=colors[v], alpha=0.2, lw=0)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"training loss (mean of each {every} steps)")
        ax.set_title(f"{part['title']}: training loss\n(mean over seeds, band: min to max)", fontsize=10)
        # the first steps start far above the rest (about 20 nats): show from 10% of training on
        n = len(runs[0][curve_key])
        top = max(r[curve_key][max(1, n // 10)] for r in runs)
        lows = [min(r[curve_key]) for r in runs]
        ax.set_ylim(min(lows) - 0.05, top + 0.1)
        ax.legend()
        ax.grid(alpha=0.3)

        ax = row[1]
        stats = part["summary"]["per_variant"]
        means = [stats[v]["mean"] for v in variants]
        errs = np.array([[stats[v]["mean"] - stats[v]["min"], stats[v]["max"] - stats[v]["mean"]] for v in variants]).T
        ax.bar(variants, means, color=[colors[v] for v in variants], alpha=0.75, yerr=errs, capsize=5)
        lo = min(stats[v]["min"] for v in variants)
        hi = max(stats[v]["max"] for v in variants)
        bottom = lo - 0.25 * (hi - lo) - 0.02
        for i, v in enumerate(variants):
            seeds = stats[v]["per_seed"]
            ax.plot([i] * len(seeds), list(seeds.values()), "k.", ms=5)
            ax.text(i, bottom + 0.03 * (hi - bottom), f"{stats[v]['mean']:.3f}", ha="center", va="bottom",
                    fontsize=10, color="white", fontweight="bold")
        if part is full:
            ax.axhline(CHAPTER_TEST_LOSS, color="k", ls="--", lw=1,
                       label=f"chapter's full model: {CHAPTER_TEST_LOSS:.3f}")
            ax.legend(loc="upper left")
        ax.set_ylim(bottom, hi + 0.3 * (hi - lo) + 0.02)
        ax.set_ylabel("test loss (nats per character)")
        ax.set_title(f"{part['title']}: test loss, {len(part['summary']['seeds'])} seeds\n"
                     "(bar: mean, whiskers: min to max, dots: seeds)", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("Removing one projection of the weighted attention (paired: same seed, same batches)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
