"""The reference projection-removal experiment (graded part 5).

Trains the chapter's model (batch 4, context 32, E 64, 2 blocks, AdamW with
warmup-cosine) with the reference attention layer in five variants:

    full           query, key, value and output projections
    no-query       x used as the query
    no-key         x used as the key
    no-value       x used as the value
    none-of-three  x used as query, key and value (only the output projection is left)

Every variant is trained with the same seeds, so for one seed all variants see
the same batches in the same order and every tensor they share starts from the
same values (the framework draws each tensor from a stream keyed by seed and
name). Differences between variants are then paired differences.

Two budgets:
  * the chapter's: 2 epochs (31,368 steps), test loss on all 1,742 test
    batches; a few minutes per run.
  * a short one for graders, `short_run()`: a few hundred steps and part of
    the test set, a few seconds per run.

    course experiment                      # both, 3 seeds, 2 jobs
    course experiment --part short --seeds 0-9
    course experiment --plot-only          # redraw the figure from the JSON

Writes data/projection_removal.json and data/projection_removal.png (the
figure needs matplotlib), and the summary the notebook shows beside the
student's own run, solutions/weighted_attention/reference_results.json
(derived from the JSON, never edited by hand). The JSON is merged: running one
part keeps the other. `course experiment` (or `make experiment`) runs this.

The reference layer is the solution notebook's WeightedAttention. Importing
this module loads nothing: a :class:`Setup` names the course, and the notebook
and the corpus are loaded on first use.
"""

import os

# One BLAS thread per process, set before numpy loads: the jobs run in
# parallel processes, and at this size a second thread does not help anyway.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from selfcheck.program import program, read_notebook  # noqa: E402

ASSIGNMENT = "weighted_attention"      # the assignment whose reference layer the experiment trains


def reference_namespace(notebook):
    """The solution notebook's definitions: its imports and the reference WeightedAttention.

    The notebook is the one source of the reference layer; this runs its code
    cells the way grading does (no show_ or run_ cells), with framework.py
    from the notebook's folder. Once per process and notebook.
    """
    return _namespace(os.path.abspath(notebook))


@functools.lru_cache(maxsize=None)
def _namespace(notebook):
    notebook = Path(notebook)
    cells = program(read_notebook(str(notebook))).cells
    ns = {"__name__": "reference_weighted_attention"}
    sys.path.insert(0, str(notebook.parent))
    try:
        for label, code in cells:
            exec(compile(code, f"<reference {label}>", "exec"), ns)
    finally:
        sys.path.remove(str(notebook.parent))
    return ns


class Setup:
    """What a run trains with, from one course: the solution notebook's framework and layer,
    the corpus (found on the course side, see autograder/corpus.py) and where results go."""

    def __init__(self, course, corpus_path=None):
        self.course = course
        assignment = course.assignment(ASSIGNMENT)
        self.notebook = course.source(assignment, assignment.notebook)
        self.summary_out = Path(course.source(assignment, "reference_results.json"))
        self.default_out = Path(course.data("projection_removal.json"))
        self.corpus_path = corpus_path
        self._dataset = None

    @property
    def F(self):  # noqa: N802  (the notebook's own name for the framework)
        return reference_namespace(self.notebook)["F"]

    @property
    def WeightedAttention(self):  # noqa: N802
        return reference_namespace(self.notebook)["WeightedAttention"]

    def dataset(self):
        """The chapter's dataset, loaded once per process."""
        if self._dataset is None:
            if self.corpus_path is None:
                from autograder import corpus
                self.corpus_path = corpus.find(self.course)
            self._dataset = self.F.CharDataset(self.F.load_corpus(self.corpus_path),
                                               context_size=CONFIG["context_size"],
                                               stride=CONFIG["stride"], batch_size=CONFIG["batch_size"])
        return self._dataset


_setup = None       # the Setup of this process's runs (workers get it from their initializer)


def use(setup):
    """Make ``setup`` the one this process's runs train with; returns it."""
    global _setup
    _setup = setup
    return setup


def _current():
    if _setup is None:
        raise RuntimeError("experiment.use(Setup(course)) first: no course chosen")
    return _setup


VARIANTS = {
    "full": (),
    "no-query": ("query",),
    "no-key": ("key",),
    "no-value": ("value",),
    "none-of-three": ("query", "key", "value"),
}
CONFIG = dict(batch_size=4, context_size=32, stride=16, embed_size=64, n_blocks=2,
              lr=1e-3, min_lr=1e-4, warmup=100, weight_decay=0.01, max_grad_norm=1.0)
CHAPTER_TEST_LOSS = 1.9071517813219405

# The grader's budget: about 2-3 s per run on one core of the course machine.
SHORT_STEPS = 600
SHORT_TEST_BATCHES = 300
SHORT_LOG_EVERY = 50

def dataset():
    """The chapter's dataset of the current setup, loaded once per process."""
    return _current().dataset()


def environment():
    return {"python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "machine": platform.machine(),
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}


def _train_and_test(attention_cls, remove, *, seed, steps=None, epochs=None, test_batches=None,
                    log_every=100, on_step=None):
    data = dataset()
    F = _current().F
    model = F.GPT(data.vocab_size, attention_cls, tuple(remove), context_size=CONFIG["context_size"],
                  embed_size=CONFIG["embed_size"], n_blocks=CONFIG["n_blocks"], seed=seed)
    result = F.train(model, data, steps=steps, epochs=epochs, seed=seed, lr=CONFIG["lr"],
                     min_lr=CONFIG["min_lr"], warmup=CONFIG["warmup"], weight_decay=CONFIG["weight_decay"],
                     max_grad_norm=CONFIG["max_grad_norm"], log_every=log_every, on_step=on_step)
    start = time.perf_counter()
    test_loss = F.evaluate(model, data, max_batches=test_batches)
    return model, result, test_loss, time.perf_counter() - start


def short_run(attention_cls, remove=(), *, steps=SHORT_STEPS, seed=0, test_batches=SHORT_TEST_BATCHES):
    """Train `steps` steps with `attention_cls` and return its losses.

    The same seed gives the same initialisation of every shared tensor and the
    same batches as the reference run, so a correct layer reproduces the
    reference numbers closely. Costs a few seconds.

    Returns dict(losses=[mean training loss per 50 steps], test_loss=mean loss
    on the first `test_batches` test batches, steps, seconds (wall), cpu_seconds).
    """
    start, cpu = time.perf_counter(), time.process_time()
    _, result, test_loss, _ = _train_and_test(attention_cls, remove, seed=seed, steps=steps,
                                              test_batches=test_batches, log_every=SHORT_LOG_EVERY)
    return {"losses": result["losses"], "test_loss": test_loss, "steps": steps,
            "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}


# ---------------------------------------------------------------------------
# running many (variant, seed) jobs with a progress line
# ---------------------------------------------------------------------------

_progress_queue = None


def _init_worker(queue, course_and_corpus=None):
    global _progress_queue
    _progress_queue = queue
    if course_and_corpus is not None:       # a spawned worker starts with nothing: the same course
        use(Setup(*course_and_corpus))


def _report(key, step):
    if _progress_queue is not None:
        _progress_queue.put((key, step))


def _full_job(job):
    variant, seed, epochs, log_every = job
    key = (variant, seed)
    start, cpu = time.perf_counter(), time.process_time()
    every = 250

    def on_step(step, loss):
        if step % every == 0:
            _report(key, step)

    setup = _current()
    model, result, test_loss, eval_seconds = _train_and_test(
        setup.WeightedAttention, VARIANTS[variant], seed=seed, epochs=epochs, log_every=log_every, on_step=on_step)
    _report(key, result["steps"])
    return {"variant": variant, "seed": seed, "removed": list(VARIANTS[variant]),
            "parameters": model.num_parameters(), "test_loss": test_loss,
            "train_loss_curve": [round(x, 5) for x in result["losses"]], "log_every": log_every,
            "steps": result["steps"], "epochs": epochs, "train_seconds": round(result["seconds"], 2),
            "eval_seconds": round(eval_seconds, 2), "wall_seconds": round(time.perf_counter() - start, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "sample": setup.F.sample(model, dataset(), "ROMEO:", 120, seed=seed), **environment()}


def _short_job(job):
    variant, seed, steps, test_batches = job
    out = short_run(_current().WeightedAttention, VARIANTS[variant], steps=steps, seed=seed, test_batches=test_batches)
    _report((variant, seed), steps)
    return {"variant": variant, "seed": seed, **out}


def run_jobs(function, jobs, steps_per_job, n_workers, label, on_result=None):
    """Run jobs in `n_workers` processes, drawing a progress line on stderr.

    on_result(result) is called in this process as each job finishes.
    """
    total = steps_per_job * len(jobs)
    done = {}
    results = []
    start = time.perf_counter()
    tty = sys.stderr.isatty()
    last_print = [0.0, -1]

    def show(final=False):
        steps = sum(done.values())
        frac = steps / total if total else 1.0
        elapsed = time.perf_counter() - start
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        line = (f"{label} [{bar}] {100 * frac:5.1f}%  {len(results)}/{len(jobs)} runs  "
                f"elapsed {elapsed / 60:5.1f} min  eta {eta / 60:5.1f} min")
        now = time.perf_counter()
        if tty:
            if final or now - last_print[0] > 0.5:
                sys.stderr.write("\r" + line + ("\n" if final else ""))
                sys.stderr.flush()
                last_print[0] = now
        elif (final and last_print[1] < 20) or int(20 * frac) > last_print[1]:  # a line every 5% in a log
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            last_print[1] = int(20 * frac)

    def drain(queue):
        while True:
            try:
                key, step = queue.get_nowait()
            except Exception:
                return
            done[key] = max(done.get(key, 0), step)

    if n_workers <= 1:
        queue = _QueueList()
        _init_worker(queue)
        for job in jobs:
            results.append(function(job))
            if on_result is not None:
                on_result(results[-1])
            drain(queue)
            show()
        _init_worker(None)
    else:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        queue = ctx.Queue()
        setup = (_current().course, _current().corpus_path) if method == "spawn" else None
        with ctx.Pool(n_workers, initializer=_init_worker, initargs=(queue, setup)) as pool:
            pending = [pool.apply_async(function, (job,)) for job in jobs]
            while pending:
                time.sleep(0.5)
                drain(queue)
                for p in [p for p in pending if p.ready()]:
                    results.append(p.get())
                    pending.remove(p)
                    if on_result is not None:
                        on_result(results[-1])
                show()
        drain(queue)
    show(final=True)
    return results


class _QueueList(list):
    """A stand-in for a multiprocessing queue when everything runs in one process."""

    def put(self, item):
        self.append(item)

    def get_nowait(self):
        if not self:
            raise IndexError
        return self.pop(0)


# ---------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------

def summarise(losses):
    """losses: {variant: {seed: test_loss}} -> per-variant stats, ranking, robust orderings.

    Only seeds that have every variant count (the comparisons are paired).
    """
    variants = list(losses)
    seeds = sorted(set.intersection(*[set(losses[v]) for v in variants])) if variants else []
    if not seeds:
        return None  # no seed has every variant yet
    stats = {}
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


def parse_seeds(text):
    """'0,1,2' or '0-4' or '3' -> list of ints ('3' alone means seeds 0, 1, 2)."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    if "," in text:
        return [int(s) for s in text.split(",") if s]
    return list(range(int(text)))


def reference_summary(results, setup=None):
    """The small summary shipped beside the notebook: per budget, each variant's losses and curves."""
    setup = setup or _current()
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
    return {"about": "summary of data/projection_removal.json, written by autograder/experiment.py "
                     "(course experiment); do not edit by hand",
            "chapter_test_loss": results.get("chapter_test_loss", CHAPTER_TEST_LOSS), "budgets": budgets}


def write_summary(results):
    path = _current().summary_out
    path.write_text(json.dumps(reference_summary(results), indent=1) + "\n")
    return path


# ---------------------------------------------------------------------------
# figure
# ---------------------------------------------------------------------------

def plot(results, path):
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


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------

def main(argv, course):
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
        runs = run_jobs(_short_job, jobs, args.short_steps, args.jobs, "short budget")
        wall = time.perf_counter() - start
        runs.sort(key=lambda r: (list(VARIANTS).index(r["variant"]), r["seed"]))
        losses = {v: {r["seed"]: r["test_loss"] for r in runs if r["variant"] == v} for v in variants}
        results["short_budget"] = {
            "title": f"short budget ({args.short_steps} steps)", "steps": args.short_steps,
            "log_every": SHORT_LOG_EVERY, "test_batches": SHORT_TEST_BATCHES,
            "how": "short_run(WeightedAttention, remove, steps=..., seed=...) in autograder/experiment.py",
            "seconds_per_run_median": round(float(np.median([r["seconds"] for r in runs])), 2),
            "cpu_seconds_per_run_median": round(float(np.median([r["cpu_seconds"] for r in runs])), 2),
            "wall_seconds": round(wall, 1), "jobs": args.jobs,
            "runs": [{**r, "losses": [round(x, 5) for x in r["losses"]], "seconds": round(r["seconds"], 2),
                      "cpu_seconds": round(r["cpu_seconds"], 2)}
                     for r in runs],
            "summary": summarise(losses)}
        _save(results, out)
        _print_summary("short budget", results["short_budget"])
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

        run_jobs(_full_job, jobs, steps_per_run, args.jobs, "full budget", on_result=record)
        record()
        _print_summary("full budget", results["full_budget"])

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


def _print_summary(label, part):
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

