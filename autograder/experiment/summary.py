"""What a budget's runs say: the paired comparison of the variants, printed, and the summary the
notebook shows beside the student's own run (reference_results.json)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from autograder.experiment.runs import CHAPTER_TEST_LOSS, VARIANTS, Setup, current


def summarise(losses: Mapping[str, Mapping[int, float]]) -> dict | None:
    """losses: {variant: {seed: test_loss}} -> per-variant stats, ranking, robust orderings.

    Only seeds that have every variant count (the comparisons are paired).
    """
    variants = list(losses)
    seeds = sorted(set.intersection(*[set(losses[v]) for v in variants])) if variants else []
    if not seeds:
        return None  # no seed has every variant yet
    stats: dict[str, dict[str, Any]] = {}
    for v in variants:
        values = np.array([losses[v][s] for s in seeds])
        stats[v] = {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                    "min": float(values.min()), "max": float(values.max()),
                    "per_seed": {str(s): float(losses[v][s]) for s in seeds}}
    ranking = sorted(variants, key=lambda v: stats[v]["mean"])
    pairs = []
    for a, b in itertools.combinations(variants, 2):
        diffs = np.array([losses[a][s] - losses[b][s] for s in seeds])
        lower, higher = (a, b) if diffs.mean() < 0 else (b, a)
        wins = int(np.sum(diffs < 0)) if lower == a else int(np.sum(diffs > 0))
        pairs.append({"lower": lower, "higher": higher, "seeds_agreeing": wins, "seeds": len(seeds),
                      "robust": wins == len(seeds), "mean_difference": float(abs(diffs.mean())),
                      "smallest_difference": float(np.min(np.abs(diffs))) if wins == len(seeds) else 0.0})
    robust = [f"{p['lower']} < {p['higher']}" for p in pairs if p["robust"]]
    return {"seeds": seeds, "per_variant": stats, "ranking_by_mean": ranking, "pairs": pairs,
            "robust_orderings": robust}


def reference_summary(results: Mapping, setup: Setup | None = None) -> dict:
    """The small summary shipped beside the notebook: per budget, each variant's losses and curves."""
    setup = setup or current()
    budgets = []
    for key, curve_key in (("short_budget", "losses"), ("full_budget", "train_loss_curve")):
        part = results.get(key)
        if not part or not part.get("summary"):
            continue
        summary = part["summary"]
        variants = {}
        for v in [v for v in VARIANTS if v in summary["per_variant"]]:
            stats = summary["per_variant"][v]
            runs = [r for r in part["runs"] if r["variant"] == v and r["seed"] in summary["seeds"]]
            variants[v] = {"mean": round(stats["mean"], 4), "min": round(stats["min"], 4),
                           "max": round(stats["max"], 4),
                           "per_seed": [round(stats["per_seed"][str(s)], 4) for s in summary["seeds"]],
                           "parameters": setup.F.GPT(results["config"]["vocab_size"], setup.WeightedAttention,
                                               VARIANTS[v]).num_parameters(),
                           "curves": [[round(x, 4) for x in r[curve_key]] for r in runs]}
        budgets.append({"title": part["title"], "steps": part["steps"], "seeds": summary["seeds"],
                        "test_batches": part["test_batches"], "log_every": part["log_every"],
                        "robust_orderings": summary["robust_orderings"], "variants": variants})
    return {"about": "summary of data/projection_removal.json, written by autograder/experiment/ "
                     "(course experiment); do not edit by hand",
            "chapter_test_loss": results.get("chapter_test_loss", CHAPTER_TEST_LOSS), "budgets": budgets}


def write_summary(results: Mapping) -> Path:
    """Write the notebook's reference_results.json from ``results``; returns its path."""
    path = current().summary_out
    path.write_text(json.dumps(reference_summary(results), indent=1) + "\n")
    return path


def print_summary(label: str, part: Mapping) -> None:
    """A budget's test losses by variant and its robust orderings, on stdout."""
    summary = part["summary"]
    if summary is None:
        print(f"{label}: no seed with every variant yet")
        return
    print(f"{label}: test loss by variant ({len(summary['seeds'])} seeds, {part['wall_seconds']} s wall)")
    for v in summary["ranking_by_mean"]:
        s = summary["per_variant"][v]
        print(f"  {v:14s} mean {s['mean']:.4f}  min {s['min']:.4f}  max {s['max']:.4f}  "
              + " ".join(f"{x:.4f}" for x in s["per_seed"].values()))
    print("  robust orderings (every seed agrees): " + ("; ".join(summary["robust_orderings"]) or "none"))
