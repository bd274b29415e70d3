"""Hidden suite, part projection_removal (the WeightedAttention layer and its removal switch).

The student's layer runs in its own process and is reached through the probe
selfcheck/probes/projection_removal.py; the same probe functions run on the
reference layer here, in the grader's process. Random widths, inputs and
weights (set by attribute, so names do not matter) keep expected values
unpredictable; they are never printed. The short training run is seeded, so a
correct layer reproduces the reference's losses (stated tolerance below). A mode whose output the
forward check already found wrong is not trained: its losses could not be the reference's.
Grading never runs the student's own experiment.
"""

import contextlib
import ctypes
import math
import os

import numpy as np
import pytest

from autograder.grade import reference_answers
from selfcheck.checks import CheckFailed, central_differences, close, equal, gradient_mistake, that, weight
from selfcheck.probes import projection_removal as probe
from selfcheck.student import StudentError

RNG = np.random.default_rng(20261205)
PROJ = ("query", "key", "value")
MODES = {"full": (), "no-query": ("query",), "no-key": ("key",), "no-value": ("value",),
         "none-of-three": PROJ}
# The short training run: 300 steps of the chapter's model on the training split, test loss on
# the first 100 test batches; about one CPU second per variant. A correct layer written any
# way gives the reference's losses to within float32 rounding; the tolerance is below the
# gaps between variants at this budget (0.015 or more for the orderings below).
STEPS, TEST_BATCHES, LOG_EVERY = 300, 100, 50
SEED = int(RNG.choice(8))              # seeds 0-7 were checked to keep every ordering below
EPS = 3e-3      # the finite differences' step: it balances truncation and float32 rounding (measured)
TEST_TOLERANCE = 0.01                  # nats, on the test loss
CURVE_TOLERANCE = (0.005, 0.02)        # relative, absolute, on each 50-step mean training loss
# Orderings of the test loss that held in every one of seeds 0-7 at this budget.
ROBUST = [("full", "no-query"), ("full", "no-key"), ("no-value", "no-query"), ("no-value", "no-key"),
          ("full", "none-of-three"), ("no-value", "none-of-three")]


def random_weights(width, scale=0.6):
    return {p: (RNG.normal(0, scale, (width, width)), RNG.normal(0, scale, width))
            for p in PROJ + ("out",)}


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def attention(x, weights, remove=(), *, scale="sqrt", mask="before", axis=-1, out=True, value="value",
              transposed=False, mix_transposed=False, values_times=1.0):
    """The layer in plain numpy, with switches that reproduce the usual mistakes."""
    E = x.shape[-1]

    def project(name, source=None):
        W, b = weights[source or name]
        return x if name in remove else x @ W + b

    q, k = project("query"), project("key")
    v = project("value", value)
    scores = k @ np.swapaxes(q, -1, -2) if transposed else q @ np.swapaxes(k, -1, -2)
    scores = scores / {"sqrt": math.sqrt(E), "E": E, "none": 1.0, "8": 8.0, "times-sqrt": 1 / math.sqrt(E),
                       "fourth-root": E ** 0.25}[scale]
    T = x.shape[-2]
    keep = np.tril(np.ones((T, T), dtype=bool), k=-1 if mask == "strict" else 0)
    if mask == "strict":            # the diagonal blocked with -inf too: the first row has nothing left
        with np.errstate(invalid="ignore"):
            a = softmax(np.where(keep, scores, -np.inf), axis)
    elif mask == "before":
        a = softmax(np.where(keep, scores, -1e9), axis)
    elif mask == "after":
        a = np.where(keep, softmax(scores, axis), 0.0)
    else:
        a = softmax(scores, axis)
    mixed = (np.swapaxes(a, -1, -2) if mix_transposed else a) @ (v * values_times)
    W, b = weights["out"]
    return mixed @ W + b if out else mixed


def forward_mistakes(x, weights, remove):
    return [
        ("removed-still-applied", "the removed projection was still applied: `remove` made no difference", attention(x, weights)),
        ("scores-divided-by-width", "the scores were divided by E instead of sqrt(E)", attention(x, weights, remove, scale="E")),
        ("scores-scaled-wrongly", "the scores were divided by 8 = sqrt(64), the chapter's width, not sqrt of this layer's width",
         attention(x, weights, remove, scale="8")),
        ("scores-not-scaled", "the scores were not scaled at all", attention(x, weights, remove, scale="none")),
        ("no-causal-mask", "no causal mask: every position sees the future", attention(x, weights, remove, mask="none")),
        ("mask-after-softmax", "the mask was applied after the softmax, so rows no longer sum to 1",
         attention(x, weights, remove, mask="after")),
        ("softmax-over-queries", "the softmax ran over the queries (axis -2) instead of the keys (axis -1)",
         attention(x, weights, remove, axis=-2)),
        ("out-not-applied", "the output projection `out` was skipped", attention(x, weights, remove, out=False)),
        ("values-from-query", "the values came from the query projection", attention(x, weights, remove, value="query")),
        ("weights-transposed-on-values", "the weights were transposed before they mixed the values "
         "(weights^T v): output i must be sum over j of weights[i, j] v_j, weights @ v",
         attention(x, weights, remove, mix_transposed=True)),
        ("scores-transposed", "the scores were k q^T (transposed): position i then weighs keys by the wrong row",
         attention(x, weights, remove, transposed=True)),
        ("scores-scaled-wrongly", "the scores were multiplied by sqrt(E) (divided by E ** -0.5) instead of divided by it",
         attention(x, weights, remove, scale="times-sqrt")),
        ("scores-scaled-wrongly", "the scores were divided by E ** (1/4), with the values scaled by it too: 1 / sqrt(E) "
         "belongs to the scores alone (E ** -0.25 on q and on k, never on v)",
         attention(x, weights, remove, scale="fourth-root", values_times=x.shape[-1] ** -0.25)),
        ("softmax-over-batch", "the softmax ran over the batch (axis 0) instead of over the keys (axis -1)",
         attention(x, weights, remove, axis=0)),
        ("mask-without-diagonal", "the mask also blocks the diagonal (j < i instead of j <= i): the first position has "
         "nothing left to see, 0 / 0 = nan", attention(x, weights, remove, mask="strict")),
    ]


def width():
    return int(RNG.choice([5, 6, 7, 9, 10, 12]))


_WRONG = {}     # mode -> why this student's layer already gives the wrong output in it


@pytest.mark.parametrize("mode", list(MODES))
def test_forward_every_mode(student, reference, mode):
    """the layer's output in mode {mode} on random inputs and random weights, against the reference"""
    try:
        _forward(student, reference, mode)
    except (StudentError, CheckFailed) as wrong:
        _WRONG[mode] = wrong
        raise


def _forward(student, reference, mode):
    remove = MODES[mode]
    for trial in range(2):
        E, T = width(), int(RNG.integers(4, 8))
        weights = random_weights(E)
        x = RNG.normal(size=(2, T, E))
        got = student.probe("projection_removal", "forward", E, remove, weights, x)
        expected = probe.forward(vars(reference), E, remove, weights, x)
        close(got, expected, f"WeightedAttention({E}, remove={remove}) on a random x of shape (2, {T}, {E})",
              reveal=False, mistakes=[m for m in forward_mistakes(x, weights, remove) if mode != "full" or m[0] != "removed-still-applied"])


@pytest.mark.parametrize("mode", list(MODES))
def test_the_past_reaches_every_later_position(student, reference, mode):
    """in mode {mode}, changing x at one position j changes the output at every i > j, and none at i < j"""
    remove = MODES[mode]
    E, T = width(), int(RNG.integers(5, 8))
    weights = random_weights(E)
    x = RNG.normal(size=(2, T, E))
    j = int(RNG.integers(1, T - 2))
    moved = x.copy()
    moved[:, j] = RNG.normal(size=(2, E))
    before = np.asarray(student.probe("projection_removal", "forward", E, remove, weights, x), dtype=float)
    after = np.asarray(student.probe("projection_removal", "forward", E, remove, weights, moved), dtype=float)
    that(before.shape == x.shape == after.shape, f"WeightedAttention({E}, remove={remove}) should keep the "
                                                 f"shape of x, {x.shape}; got {before.shape}")
    same = [i for i in range(T) if np.allclose(before[:, i], after[:, i], rtol=1e-6, atol=1e-9)]
    that(all(i in same for i in range(j)), f"WeightedAttention({E}, remove={remove}): an output before "
                                          "position j changed when x at j did: position i sees the future")
    that(not [i for i in range(j + 1, T) if i in same],
         f"WeightedAttention({E}, remove={remove}): outputs after position j did not change when x at j did",
         "the layer does not attend: output i is out(weights v) with the weights spread over every position "
         "j <= i", "no-attention-at-all")


def test_parameter_counts_random_widths(student, reference):
    """parameters and kept projections of single layers of random widths"""
    for mode, remove in MODES.items():
        E = width()
        got = student.probe("projection_removal", "describe", E, remove)
        expected = probe.describe(vars(reference), E, remove)
        equal(got["parameters"], expected["parameters"], f"parameters of WeightedAttention({E}, remove={remove})",
              reveal=False,
              mistakes=[("removed-but-kept", "removed but parameters kept: the removed projection's Linear is still in the layer "
                         "(set the attribute to None so its parameters are gone)", 4 * (E * E + E))])
        kept = [p for p in got["kept"] if p in remove]
        that(not kept, f"WeightedAttention({E}, remove={remove}) still holds a {', '.join(kept)} Linear with "
                       "parameters: removed but parameters kept (set the attribute to None)")


@pytest.mark.parametrize("removed", PROJ)
def test_removed_projection_is_the_identity(student, reference, removed):
    """with the {removed} projection removed, the layer equals the full layer whose {removed} projection is the identity"""
    E, T = width(), int(RNG.integers(4, 8))
    weights = random_weights(E)
    x = RNG.normal(size=(2, T, E))
    identity = dict(weights, **{removed: (np.eye(E), np.zeros(E))})
    got = student.probe("projection_removal", "forward", E, (removed,), weights, x)
    expected = probe.forward(vars(reference), E, (), identity, x)
    close(got, expected, f"WeightedAttention({E}, remove=('{removed}',)) against the full layer with "
                         f"{removed} weight = I and bias = 0", reveal=False,
          mistakes=[("removed-still-applied", f"the {removed} projection was still applied although it was removed",
                     attention(x, weights)),
                    ("removed-as-zeros", "zeros (or nothing) were used in place of the removed projection, not x itself",
                     attention(x, dict(weights, **{removed: (np.zeros((E, E)), np.zeros(E))})))])


@weight(2)
@pytest.mark.parametrize("mode", ["full", "none-of-three"])
def test_gradients_finite_differences(student, reference, mode):
    """backward() through the layer in mode {mode}: against central finite differences and the reference's gradients"""
    remove = MODES[mode]
    E, T = 4, 4
    weights = random_weights(E)
    x, upstream = RNG.normal(size=(1, T, E)), RNG.normal(size=(1, T, E))
    got = student.probe("projection_removal", "gradients", E, remove, weights, x, upstream)
    expected = probe.gradients(vars(reference), E, remove, weights, x, upstream)
    that(isinstance(got, dict), f"WeightedAttention({E}, remove={remove}): the gradients could not be read")
    none = [key for key in expected if got.get(key) is None]
    that(not none, f"WeightedAttention({E}, remove={remove}): backward() left no gradient in "
                   + ", ".join(none), *gradient_mistake(none)[::-1])
    shapes = {key: np.shape(ref) for key, ref in expected.items()}
    values = student.probe("projection_removal", "objective", E, remove, weights, x, upstream, list(shapes), EPS)
    numeric = central_differences(values, shapes, EPS)
    # Rounding is relative to the largest gradient (the key's bias has none: softmax ignores it), and
    # central differences with this step are good to about 1e-4 of it even in float32.
    scale = max(float(np.max(np.abs(ref))) for ref in expected.values())
    for key, ref in expected.items():
        close(got[key], numeric[key],
              f"gradient of {key} from backward() against central finite differences of your forward pass",
              reveal=False, scale=scale, atol=1e-3 * scale)
        close(got[key], ref, f"gradient of {key} against the reference", reveal=False, scale=scale)


@contextlib.contextmanager
def one_blas_thread():
    """OpenBLAS on one thread for a block (as in the student's process, which starts with
    OPENBLAS_NUM_THREADS=1): at this model size more threads only spin and burn CPU time."""
    lib = None
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
        for path in paths:
            candidate = ctypes.CDLL(path)
            for prefix in ("scipy_openblas", "openblas"):
                for suffix in ("64_", ""):
                    if hasattr(candidate, f"{prefix}_set_num_threads{suffix}"):
                        lib = (getattr(candidate, f"{prefix}_set_num_threads{suffix}"),
                               getattr(candidate, f"{prefix}_get_num_threads{suffix}"))
                        break
                if lib:
                    break
            if lib:
                break
    except OSError:
        lib = None
    if lib is None:
        yield
        return
    before = lib[1]()
    lib[0](1)
    try:
        yield
    finally:
        lib[0](before)


def _reference_run(reference, mode):
    """The reference's short run, in this process; identical for every student and every batch, so
    kept per worker and on the grader's disk while the notebook, probe, framework and corpus that
    decide it are unchanged."""
    cache = vars(reference).setdefault("_projection_removal_runs", {})
    key = (mode, STEPS, SEED, TEST_BATCHES)
    if key not in cache:
        def run():
            with one_blas_thread():
                return probe.short_run(vars(reference), MODES[mode], STEPS, SEED, TEST_BATCHES, LOG_EVERY)
        depends = [vars(reference)["_notebook"], probe.__file__, probe._framework().__file__,
                   os.environ["TINYSHAKESPEARE"]]
        cache[key] = reference_answers.kept(["projection_removal short run", *key, LOG_EVERY], depends, run)
    return cache[key]


_RUNS = {}      # this student's short runs, or why each failed (the module is loaded afresh for every student)


@pytest.mark.parametrize("mode", list(MODES))
def test_short_training_run(student, reference, mode):
    """300 seeded training steps of the chapter's model with your layer in mode {mode}: losses against the reference run"""
    if mode in _WRONG:      # its losses cannot be the reference's: a second of training spared
        _RUNS[mode] = CheckFailed(f"not run: in mode {mode} the layer's output already differs from the "
                                  f"reference's (the check of its output says how), so its training run would too")
        raise _RUNS[mode]
    try:
        got = student.probe("projection_removal", "short_run", MODES[mode], STEPS, SEED, TEST_BATCHES, LOG_EVERY)
    except StudentError as exc:
        _RUNS[mode] = exc           # the orderings check reports the same reason
        raise
    _RUNS[mode] = got
    expected = _reference_run(reference, mode)
    what = f"{mode}, {STEPS} steps from seed {SEED}"
    losses = np.asarray(got["losses"], dtype=float)
    that(np.all(np.isfinite(losses)) and np.isfinite(got["test_loss"]),
         f"{what}: the training loss became nan or inf (is the mask applied before the softmax?)")
    close(got["losses"], expected["losses"], f"{what}: training loss, mean of every {LOG_EVERY} steps",
          reveal=False, rtol=CURVE_TOLERANCE[0], atol=CURVE_TOLERANCE[1])
    close(got["test_loss"], expected["test_loss"], f"{what}: test loss on the first {TEST_BATCHES} test batches",
          source=f"tolerance {TEST_TOLERANCE} nats", reveal=False, rtol=0, atol=TEST_TOLERANCE)


def test_short_run_orderings(student, reference):
    """the orderings of the variants' test losses that hold for every seed at 300 steps"""
    for mode in MODES:
        if isinstance(_RUNS.get(mode), (StudentError, CheckFailed)):
            raise _RUNS[mode]
    missing = [m for m in MODES if m not in _RUNS]
    that(not missing, "the short training runs of " + ", ".join(missing) + " did not finish")
    for lower, higher in ROBUST:
        a, b = _RUNS[lower]["test_loss"], _RUNS[higher]["test_loss"]
        that(a < b, f"after {STEPS} steps from seed {SEED}, {lower} should end below {higher} (it does for "
                    f"every seed with the reference layer); yours: {lower} {a:.4f}, {higher} {b:.4f}")
