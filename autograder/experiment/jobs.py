"""Every (variant, seed) run of a budget as a job, run in worker processes with a progress line."""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from autograder.experiment.runs import (VARIANTS, Setup, current, dataset, environment, short_run,
                                        train_and_test, use)

_progress_queue = None     # where this process's jobs report their steps (the parent draws the line)


def _init_worker(queue, course_and_corpus=None):
    global _progress_queue
    _progress_queue = queue
    if course_and_corpus is not None:       # a spawned worker starts with nothing: the same course
        use(Setup(*course_and_corpus))


def _report(key, step):
    if _progress_queue is not None:
        _progress_queue.put((key, step))


def full_job(job: tuple) -> dict:
    """One run of the chapter's budget: job = (variant, seed, epochs, log_every)."""
    variant, seed, epochs, log_every = job
    key = (variant, seed)
    start, cpu = time.perf_counter(), time.process_time()
    every = 250

    def on_step(step, loss):
        if step % every == 0:
            _report(key, step)

    setup = current()
    model, result, test_loss, eval_seconds = train_and_test(
        setup.WeightedAttention, VARIANTS[variant], seed=seed, epochs=epochs, log_every=log_every, on_step=on_step)
    _report(key, result["steps"])
    return {"variant": variant, "seed": seed, "removed": list(VARIANTS[variant]),
            "parameters": model.num_parameters(), "test_loss": test_loss,
            "train_loss_curve": [round(x, 5) for x in result["losses"]], "log_every": log_every,
            "steps": result["steps"], "epochs": epochs, "train_seconds": round(result["seconds"], 2),
            "eval_seconds": round(eval_seconds, 2), "wall_seconds": round(time.perf_counter() - start, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "sample": setup.F.sample(model, dataset(), "ROMEO:", 120, seed=seed), **environment()}


def short_job(job: tuple) -> dict:
    """One run of the short budget: job = (variant, seed, steps, test_batches)."""
    variant, seed, steps, test_batches = job
    out = short_run(current().WeightedAttention, VARIANTS[variant], steps=steps, seed=seed, test_batches=test_batches)
    _report((variant, seed), steps)
    return {"variant": variant, "seed": seed, **out}


def run_jobs(function: Callable[[tuple], dict], jobs: Sequence[tuple], steps_per_job: int, n_workers: int,
             label: str, on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Run jobs in `n_workers` processes, drawing a progress line on stderr.

    on_result(result) is called in this process as each job finishes.
    """
    total = steps_per_job * len(jobs)
    done: dict[tuple, int] = {}
    results: list[dict] = []
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
        queue: Any = _QueueList()
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
        setup = (current().course, current().corpus_path) if method == "spawn" else None
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
