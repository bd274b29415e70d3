"""`course experiment`: the short budget, then the chapter's, their runs merged into the results
JSON (the chapter's saved run by run, so an interrupted run loses nothing), the figure and the
notebook's summary."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autograder.experiment.figure import plot
from autograder.experiment.jobs import full_job, run_jobs, short_job
from autograder.experiment.runs import (CHAPTER_TEST_LOSS, CONFIG, SHORT_LOG_EVERY, SHORT_STEPS,
                                        SHORT_TEST_BATCHES, VARIANTS, Setup, dataset, environment, use)
from autograder.experiment.summary import print_summary, summarise, write_summary

if TYPE_CHECKING:
    from autograder.course.config import Course


def parse_seeds(text: str) -> list[int]:
    """'0,1,2' or '0-4' or '3' -> list of ints ('3' alone means seeds 0, 1, 2)."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    if "," in text:
        return [int(s) for s in text.split(",") if s]
    return list(range(int(text)))


def main(argv: Sequence[str], course: Course) -> dict:
    """`course experiment ARGS`: the experiment of ``course``."""
    setup = use(Setup(course))
    parser = argparse.ArgumentParser(description="Projection-removal experiment (reference run).")
    parser.add_argument("--epochs", type=float, default=2, help="epochs of the chapter budget (default 2)")
    parser.add_argument("--seeds", default="3", help="'3' = seeds 0,1,2; or '0-4'; or '0,5,7' (default 3)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated subset of " + ", ".join(VARIANTS))
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes (default 2)")
    parser.add_argument("--out", type=Path, default=setup.default_out, help="results JSON; the PNG goes beside it")
    parser.add_argument("--part", choices=["both", "full", "short"], default="both")
    parser.add_argument("--short-seeds", default="10", help="seeds of the short budget (default 10)")
    parser.add_argument("--short-steps", type=int, default=SHORT_STEPS)
    parser.add_argument("--log-every", type=int, default=500, help="loss-curve resolution of the full budget")
    parser.add_argument("--plot-only", action="store_true", help="only redraw the figure from the JSON")
    parser.add_argument("--fresh", action="store_true", help="rerun full-budget runs already in the JSON")
    args = parser.parse_args(argv)

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {list(VARIANTS)}")
    out = Path(args.out)
    figure = out.with_suffix(".png")
    results = json.loads(out.read_text()) if out.exists() else {}
    if args.plot_only:
        plot(results, figure)
        if out.resolve() == setup.default_out.resolve():
            write_summary(results)
        return results

    dataset()  # load once before forking, and fail early if the corpus is missing
    results["experiment"] = "projection removal: full, no-query, no-key, no-value, none-of-three"
    results["config"] = dict(CONFIG, train_batches_per_epoch=dataset().n_train_batches,
                             test_batches=dataset().n_test_batches, vocab_size=dataset().vocab_size,
                             init="Linear W ~ N(0, 2/fan_in), b ~ U[0,1); embeddings N(0, 0.02^2); "
                                  "one random stream per (seed, tensor name)",
                             batch_order="shuffled per epoch by a generator seeded with (seed, epoch)")
    results["environment"] = environment()
    results["chapter_test_loss"] = CHAPTER_TEST_LOSS

    # The short budget first (minutes), then the chapter's (an hour or more):
    # the full-budget runs are saved one by one, and a rerun skips those done.
    if args.part in ("both", "short"):
        seeds = parse_seeds(args.short_seeds)
        jobs = [(v, s, args.short_steps, SHORT_TEST_BATCHES) for s in seeds for v in variants]
        start = time.perf_counter()
        runs = run_jobs(short_job, jobs, args.short_steps, args.jobs, "short budget")
        wall = time.perf_counter() - start
        runs.sort(key=lambda r: (list(VARIANTS).index(r["variant"]), r["seed"]))
        losses = {v: {r["seed"]: r["test_loss"] for r in runs if r["variant"] == v} for v in variants}
        results["short_budget"] = {
            "title": f"short budget ({args.short_steps} steps)", "steps": args.short_steps,
            "log_every": SHORT_LOG_EVERY, "test_batches": SHORT_TEST_BATCHES,
            "how": "short_run(WeightedAttention, remove, steps=..., seed=...) in autograder/experiment/runs.py",
            "seconds_per_run_median": round(float(np.median([r["seconds"] for r in runs])), 2),
            "cpu_seconds_per_run_median": round(float(np.median([r["cpu_seconds"] for r in runs])), 2),
            "wall_seconds": round(wall, 1), "jobs": args.jobs,
            "runs": [{**r, "losses": [round(x, 5) for x in r["losses"]], "seconds": round(r["seconds"], 2),
                      "cpu_seconds": round(r["cpu_seconds"], 2)}
                     for r in runs],
            "summary": summarise(losses)}
        _save(results, out)
        print_summary("short budget", results["short_budget"])
        plot(results, figure)

    if args.part in ("both", "full"):
        seeds = parse_seeds(args.seeds)
        epochs = int(args.epochs) if float(args.epochs).is_integer() else args.epochs
        steps_per_run = int(round(epochs * dataset().n_train_batches))  # as train() counts them
        previous = results.get("full_budget") or {}
        same = (not args.fresh and previous.get("epochs") == epochs
                and previous.get("log_every") == args.log_every)
        wanted = {(v, s) for s in seeds for v in variants}
        runs = [r for r in previous.get("runs", []) if same and (r["variant"], r["seed"]) in wanted]
        done = {(r["variant"], r["seed"]) for r in runs}
        jobs = [(v, s, epochs, args.log_every) for s in seeds for v in variants if (v, s) not in done]
        if done:
            print(f"full budget: {len(done)} runs already in {out}, {len(jobs)} to go", file=sys.stderr)
        start = time.perf_counter()
        wall_before = previous.get("wall_seconds", 0.0) if same else 0.0

        def record(new_run=None):
            if new_run is not None:
                runs.append(new_run)
            runs.sort(key=lambda r: (list(VARIANTS).index(r["variant"]), r["seed"]))
            losses = {v: {r["seed"]: r["test_loss"] for r in runs if r["variant"] == v} for v in variants}
            results["full_budget"] = {
                "title": f"{epochs} epochs ({steps_per_run} steps)", "epochs": epochs, "steps": steps_per_run,
                "log_every": args.log_every, "test_batches": dataset().n_test_batches, "jobs": args.jobs,
                "complete": len(runs) == len(wanted),
                "wall_seconds": round(wall_before + time.perf_counter() - start, 1),
                "cpu_seconds": round(sum(r["cpu_seconds"] for r in runs), 1),
                "runs": list(runs), "summary": summarise(losses)}
            _save(results, out)

        run_jobs(full_job, jobs, steps_per_run, args.jobs, "full budget", on_result=record)
        record()
        print_summary("full budget", results["full_budget"])

    plot(results, figure)
    wrote = [out] + ([figure] if figure.exists() else [])
    if out.resolve() == setup.default_out.resolve():      # the notebook's copy follows the repository's results only
        wrote.append(write_summary(results))
    print("wrote " + ", ".join(str(p) for p in wrote))
    return results


def _save(results, out):
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.part")
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    tmp.replace(out)
