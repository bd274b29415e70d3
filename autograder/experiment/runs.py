"""One training run of the reference layer in one variant, and the setup every run trains with."""

from __future__ import annotations

import functools
import os
import platform
import sys
import time
from types import ModuleType
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from selfcheck.program import program, read_notebook

if TYPE_CHECKING:
    from autograder.course.config import Course

ASSIGNMENT = "weighted_attention"      # the assignment whose reference layer the experiment trains


def reference_namespace(notebook: str | os.PathLike) -> dict[str, Any]:
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
    the corpus (found on the course side, see autograder/course/corpus.py) and where results go."""

    def __init__(self, course: Course, corpus_path: str | None = None) -> None:
        self.course = course
        assignment = course.assignment(ASSIGNMENT)
        self.notebook = course.source(assignment, assignment.notebook)
        self.summary_out = Path(course.source(assignment, "reference_results.json"))
        self.default_out = Path(course.data("projection_removal.json"))
        self.corpus_path = corpus_path
        self._dataset = None

    @property
    def F(self) -> ModuleType:  # noqa: N802  (the notebook's own name for the framework)
        return reference_namespace(self.notebook)["F"]

    @property
    def WeightedAttention(self) -> type:  # noqa: N802
        return reference_namespace(self.notebook)["WeightedAttention"]

    def dataset(self) -> Any:
        """The chapter's dataset, loaded once per process."""
        if self._dataset is None:
            if self.corpus_path is None:
                from autograder.course import corpus
                self.corpus_path = corpus.find(self.course)
            self._dataset = self.F.CharDataset(self.F.load_corpus(self.corpus_path),
                                               context_size=CONFIG["context_size"],
                                               stride=CONFIG["stride"], batch_size=CONFIG["batch_size"])
        return self._dataset


_setup = None       # the Setup of this process's runs (workers get it from their initializer)


def use(setup: Setup) -> Setup:
    """Make ``setup`` the one this process's runs train with; returns it."""
    global _setup
    _setup = setup
    return setup


def current() -> Setup:
    """The Setup this process's runs train with (see :func:`use`)."""
    if _setup is None:
        raise RuntimeError("runs.use(Setup(course)) first: no course chosen")
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


def dataset() -> Any:
    """The chapter's dataset of the current setup, loaded once per process."""
    return current().dataset()


def environment() -> dict[str, str | None]:
    """The versions and platform a run recorded its numbers on."""
    return {"python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "machine": platform.machine(),
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}


def train_and_test(attention_cls: type, remove: Sequence[str], *, seed: int, steps: int | None = None,
                   epochs: float | None = None, test_batches: int | None = None, log_every: int = 100,
                   on_step: Callable[[int, float], None] | None = None) -> tuple[Any, dict, float, float]:
    """(model, training result, test loss, seconds evaluating) of one run of ``attention_cls``."""
    data = dataset()
    F = current().F
    model = F.GPT(data.vocab_size, attention_cls, tuple(remove), context_size=CONFIG["context_size"],
                  embed_size=CONFIG["embed_size"], n_blocks=CONFIG["n_blocks"], seed=seed)
    result = F.train(model, data, steps=steps, epochs=epochs, seed=seed, lr=CONFIG["lr"],
                     min_lr=CONFIG["min_lr"], warmup=CONFIG["warmup"], weight_decay=CONFIG["weight_decay"],
                     max_grad_norm=CONFIG["max_grad_norm"], log_every=log_every, on_step=on_step)
    start = time.perf_counter()
    test_loss = F.evaluate(model, data, max_batches=test_batches)
    return model, result, test_loss, time.perf_counter() - start


def short_run(attention_cls: type, remove: Sequence[str] = (), *, steps: int = SHORT_STEPS, seed: int = 0,
              test_batches: int = SHORT_TEST_BATCHES) -> dict:
    """Train `steps` steps with `attention_cls` and return its losses.

    The same seed gives the same initialisation of every shared tensor and the
    same batches as the reference run, so a correct layer reproduces the
    reference numbers closely. Costs a few seconds.

    Returns dict(losses=[mean training loss per 50 steps], test_loss=mean loss
    on the first `test_batches` test batches, steps, seconds (wall), cpu_seconds).
    """
    start, cpu = time.perf_counter(), time.process_time()
    _, result, test_loss, _ = train_and_test(attention_cls, remove, seed=seed, steps=steps,
                                             test_batches=test_batches, log_every=SHORT_LOG_EVERY)
    return {"losses": result["losses"], "test_loss": test_loss, "steps": steps,
            "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}
