"""Hidden suite, part 2 (causal_mask, masked_softmax, softmax_then_mask, scale_experiment).

What a student cannot predict: random sizes, batches of shape (..., n, n), masks
that are not causal, and the scale experiment at unpredictable seeds and sizes.
The chapter's tables and the notebook's rules are checked by the public suite
(parts/causal_mask/public.py), which grading runs too. Expected
values of random inputs are never printed.

The scale experiment draws random numbers, so its facts are judged as the
public checks judge them at seed 0 (selfcheck/scale_experiment.py), with ranges
a correct implementation meets with any order of draws.
"""

import numpy as np
import pytest

from autograder.course.chapter import get
from selfcheck import scale_experiment as scale
from selfcheck.checks import CheckFailed, close, equal, that, weight
from selfcheck.student import StudentError

SCALE = get("attention.scale")
RNG = np.random.default_rng(20261204)
SEEDS = [int(s) for s in np.random.default_rng(9061).integers(1, 10**6, size=5)]   # for the experiment


def lower(n):
    return np.tril(np.ones((n, n), dtype=bool))


def softmax_rows(z):
    z = np.asarray(z, dtype=float)
    top = np.max(np.where(np.isneginf(z), -np.inf, z), axis=-1, keepdims=True)
    e = np.exp(z - top)
    return e / np.sum(e, axis=-1, keepdims=True)


def with_fill(z, mask, fill):
    return softmax_rows(np.where(mask, z, fill))


def mask_mistakes(z, mask):
    """What the usual wrong versions of masked_softmax give for these inputs."""
    m = np.broadcast_to(mask, np.shape(z))
    return [
        ("mask-after-softmax", "the softmax ran before the mask (softmax, then zero the blocked weights): rows no longer sum "
         "to 1; set the blocked scores to -inf first, then take the softmax", softmax_rows(z) * m),
        ("mask-fill-not-minus-inf", "the blocked scores were set to 0 (or the scores were multiplied by the mask): e^0 = 1, so "
         "blocked positions still get weight; set them to -inf", with_fill(z, m, 0.0)),
        ("mask-fill-not-minus-inf", "the blocked scores were set to -1, which still leaves them weight; use -inf (or a huge negative "
         "number such as -1e9)", with_fill(z, m, -1.0)),
        ("mask-fill-not-minus-inf", "the mask was added to the scores (True counts 1, False 0), so blocked positions "
         "keep their scores and their weight; set them to -inf", softmax_rows(np.asarray(z, dtype=float) + m)),
        ("mask-inverted", "the mask was used the wrong way round: True marks what may be seen, so keep the scores where "
         "the mask is True and block where it is False", with_fill(z, ~m, -np.inf)),
        ("mask-transposed", "the mask was transposed (rows are queries, columns are keys)",
         with_fill(z, np.swapaxes(m, -1, -2), -np.inf)),
        ("masked-softmax-wrong-axis", "the softmax ran over the wrong axis (it must normalise each row, the last axis)",
         np.swapaxes(softmax_rows(np.swapaxes(np.where(m, z, -np.inf), -1, -2)), -1, -2)),
        ("mask-argument-ignored", "the mask argument was ignored (a causal mask was built inside the function)",
         with_fill(z, lower(np.shape(z)[-1]), -np.inf)),
        ("mask-argument-ignored", NOT_APPLIED, softmax_rows(z)),
    ]


NOT_APPLIED = ("the mask was not applied: the weights are the softmax of the whole rows, blocked positions included; set "
               "the scores where `mask` is False to -inf, for scores of any number of axes")


def causal_mistakes(n):
    ones = np.ones((n, n), dtype=bool)
    return [("mask-transposed", "the mask is transposed: it marks j >= i (np.triu); a position may see the past, j <= i",
             np.triu(ones)),
            ("mask-without-diagonal", "the diagonal is missing: a position may attend to itself (j <= i, not j < i)",
             np.tril(ones, k=-1)),
            ("mask-inverted", "the mask marks the blocked positions; it should be True where attending is allowed",
             np.triu(ones, k=1))]


def call(student, name, *args, hint=None):
    """Call into the student's code; an exception on a batch gets a hint about batches (``hint``:
    the mistake's id and words)."""
    try:
        return getattr(student, name)(*args)
    except StudentError as exc:
        if hint is None or exc.kind != "error" or "not written yet" in exc.message:
            raise
        raise CheckFailed(f"{name} raised {exc.message}", hint[1], hint[0]) from None


BATCH_HINT = ("masked-softmax-2d-only", "the code assumes 2-D scores; let numpy broadcast the mask over the "
              "leading axes (np.where(mask, scores, -np.inf) does) and take the softmax along the last axis")


# ------------------------------------------------------------------ causal_mask

def test_causal_mask_is_boolean(student):
    """causal_mask returns booleans (dtype bool), ready for np.where and ~"""
    n = int(RNG.integers(5, 12))
    got = np.asarray(student.causal_mask(n))
    that(got.dtype == bool,
         f"causal_mask({n}) should have dtype bool, got {got.dtype}",
         f"the mask holds {got.dtype.kind == 'f' and 'floats (np.tril(np.ones((n, n))) does)' or got.dtype.name + ' numbers'}; "
         "pass dtype=bool (with a mask of numbers, ~mask and boolean indexing do not do what they should)",
         "mask-not-boolean")


def test_causal_mask_random_sizes(student):
    """causal_mask for sizes 1, 2 and random larger ones"""
    for n in (1, 2, int(RNG.integers(3, 10)), int(RNG.integers(20, 61))):
        got = np.asarray(student.causal_mask(n))
        that(got.shape == (n, n), f"causal_mask({n}) should have shape ({n}, {n}), got {got.shape}")
        equal(got.astype(bool), lower(n), f"causal_mask({n})", reveal=False, mistakes=causal_mistakes(n))


# --------------------------------------------------------------- masked_softmax

def test_masked_softmax_random(student, reference):
    """masked_softmax of random n x n scores with a causal mask"""
    for n in (1, int(RNG.integers(3, 8)), int(RNG.integers(9, 17))):
        z = RNG.normal(0, 2, size=(n, n))
        mask = lower(n)
        close(student.masked_softmax(z, mask), reference.masked_softmax(z, mask),
              f"masked_softmax of random {n} x {n} scores", reveal=False, mistakes=mask_mistakes(z, mask))


@weight(2)
def test_masked_softmax_batches(student, reference):
    """masked_softmax of batches (b, n, n) and (b, h, n, n) with one (n, n) causal mask"""
    for shape in [(int(RNG.integers(2, 5)),), (int(RNG.integers(2, 4)), int(RNG.integers(2, 4)))]:
        n = int(RNG.integers(3, 8))
        z = RNG.normal(0, 2, size=shape + (n, n))
        mask = lower(n)
        got = call(student, "masked_softmax", z, mask, hint=BATCH_HINT)
        arr = np.asarray(got, dtype=float)
        mistakes = mask_mistakes(z, mask)
        if arr.shape != z.shape:
            mistakes = [("masked-softmax-2d-only", "the answer lost the batch axes: it must have the shape of `scores`", arr)]
        close(got, reference.masked_softmax(z, mask), f"masked_softmax of a batch of shape {z.shape}",
              reveal=False, mistakes=mistakes)


def test_masked_softmax_any_mask(student, reference):
    """masked_softmax with a mask that is not causal (it uses the mask it is given)"""
    n = int(RNG.integers(5, 9))
    z = RNG.normal(0, 2, size=(n, n))
    mask = RNG.random((n, n)) < 0.5
    mask[np.arange(n), RNG.integers(0, n, size=n)] = True        # every row allows something
    close(student.masked_softmax(z, mask), reference.masked_softmax(z, mask),
          f"masked_softmax of {n} x {n} scores with a random (not causal) mask", reveal=False,
          mistakes=mask_mistakes(z, mask))


def test_masked_softmax_mask_per_item(student, reference):
    """masked_softmax of a batch whose mask has the full shape (..., n, n): one mask per item"""
    b, n = int(RNG.integers(2, 5)), int(RNG.integers(3, 7))
    z = RNG.normal(0, 2, size=(b, n, n))
    mask = RNG.random((b, n, n)) < 0.6
    mask |= np.eye(n, dtype=bool)
    got = call(student, "masked_softmax", z, mask, hint=BATCH_HINT)
    close(got, reference.masked_softmax(z, mask), f"masked_softmax of shape {z.shape} with a mask of "
          f"shape {mask.shape}", reveal=False, mistakes=mask_mistakes(z, mask))


def test_masked_softmax_large_scores(student, reference):
    """masked_softmax of scores near 1000 stays finite (the softmax subtracts the row maximum)"""
    n = int(RNG.integers(4, 8))
    z = 1000 + RNG.normal(0, 3, size=(n, n))
    mask = lower(n)
    close(student.masked_softmax(z, mask), reference.masked_softmax(z, mask),
          "masked_softmax of scores near 1000", reveal=False, scale=1020,
          mistakes=[("softmax-no-max-shift", "exp of scores near 1000 overflows: subtract each row's maximum first (your softmax "
                     "from Part 1 does)", np.full((n, n), np.nan))] + mask_mistakes(z, mask))


def test_masked_softmax_float32(student, reference):
    """masked_softmax accepts float32 scores"""
    n = int(RNG.integers(3, 7))
    z = RNG.normal(0, 2, size=(2, n, n)).astype(np.float32)
    mask = lower(n)
    close(call(student, "masked_softmax", z, mask, hint=BATCH_HINT), reference.masked_softmax(z, mask),
          "masked_softmax of float32 scores", reveal=False,
          mistakes=mask_mistakes(z.astype(float), mask))


# ----------------------------------------------------------- softmax_then_mask

def wrong_order_mistakes(z, mask):
    right = with_fill(z, mask, -np.inf)
    full = softmax_rows(z)
    return [("wrong-order-is-right-order", "that is the right order (mask, then softmax), whose rows all sum to 1; this function "
             "shows the wrong order: softmax over the whole row first, then zero the blocked weights",
             right.sum(axis=-1)),
            ("row-sums-down-columns", "the sums ran down the columns instead of along the rows", (full * mask).sum(axis=0)),
            ("wrong-order-not-zeroed", "the weights were never zeroed: a full softmax row sums to 1", full.sum(axis=-1)),
            ("mask-transposed", "the mask was transposed (rows are queries, columns are keys)", (full * mask.T).sum(axis=-1))]


def test_softmax_then_mask_random(student, reference):
    """softmax_then_mask of random scores with a causal mask: weights and row sums"""
    for n in (int(RNG.integers(3, 7)), int(RNG.integers(8, 14))):
        z = RNG.normal(0, 2, size=(n, n))
        mask = lower(n)
        weights, sums = student.softmax_then_mask(z, mask)
        ref_weights, ref_sums = reference.softmax_then_mask(z, mask)
        close(sums, ref_sums, f"the wrong order's row sums for random {n} x {n} scores", reveal=False,
              mistakes=wrong_order_mistakes(z, mask))
        close(weights, ref_weights, f"the wrong order's weights for random {n} x {n} scores", reveal=False,
              mistakes=[("wrong-order-is-right-order", "that is the right order (mask, then softmax)", with_fill(z, mask, -np.inf))])


# ------------------------------------------------------------ scale_experiment

@pytest.fixture(scope="module")
def runs():
    """The experiment's calls in this grading run (several checks read the same one)."""
    return {}


def run_scale(student, runs, d_values, **kwargs):
    """One call of the student's experiment, made once per grading run."""
    key = (tuple(d_values), tuple(sorted(kwargs.items())))
    if key not in runs:
        try:
            runs[key] = ("ok", student.scale_experiment(list(d_values), **kwargs))
        except StudentError as exc:
            runs[key] = ("error", exc)
    kind, value = runs[key]
    if kind == "error":
        raise value
    return scale.columns(value, len(d_values))


def test_scale_result_columns(student, runs):
    """scale_experiment returns the five columns, one entry per d_k, in the order given"""
    d_values = [int(d) for d in RNG.choice([2, 8, 32, 128, 512], size=3, replace=False)]
    result = run_scale(student, runs, d_values, trials=20, seed=SEEDS[4])
    close(result["d_k"], d_values, "result['d_k']",
          mistakes=[("experiment-copied-table", "the d_k column does not follow d_values (a table copied from the chapter?)",
                     [row["d_k"] for row in SCALE["rows"][:3]])])


@weight(2)
def test_scale_entropy_raw_collapses_scaled_stays(student, runs):
    """raw entropy collapses (chapter: 1.78 bits at d_k = 4, 0.13 at 1024); scaled stays near 2.48"""
    scale.entropy(run_scale(student, runs, (4, 64, 1024), trials=200, seed=SEEDS[0]))


def test_scale_largest_raw_weight(student, runs):
    """the largest raw weight grows toward 1 (chapter: 0.55 at d_k = 4, 0.96 at 1024)"""
    scale.largest_weight(run_scale(student, runs, (4, 64, 1024), trials=200, seed=SEEDS[0]))


# the run with two keys that the spread needs (the hints tell its mistakes apart there) is also
# the n_keys check's: 2,000 trials, where 300 would do for that check alone
TWO_KEYS = {"n_keys": 2, "trials": 2000, "seed": SEEDS[3]}


def test_scale_spread_grows_like_sqrt_dk(student, runs):
    """the spread of q.k grows like sqrt(d_k): about 0.90 sqrt(d_k) (chapter: 0.88 to 0.91)"""
    scale.spread(run_scale(student, runs, (64, 256), trials=500, seed=SEEDS[1]), (64, 256),
                 run_scale(student, runs, (16,), **TWO_KEYS))


def test_scale_uses_n_keys(student, reference, runs):
    """scale_experiment uses n_keys: 2 and 32 keys instead of 8"""
    for n_keys, tolerance, how in ((2, 0.07, TWO_KEYS), (32, 0.10, {"n_keys": 32, "trials": 300, "seed": SEEDS[2]})):
        r = run_scale(student, runs, (16,), **how)
        expected = float(reference.scale_experiment([16], n_keys=n_keys, trials=3000, seed=7)["entropy_scaled"][0])
        value = float(r["entropy_scaled"][0])
        what = f"mean scaled entropy over {n_keys} keys at d_k = 16"
        scale.at_most_log2(value, n_keys, what)
        if abs(value - expected) > tolerance:
            raise CheckFailed(f"{what}: did not match the reference within {tolerance:g} bits "
                              f"(the spread between seeds is under a fifth of that), got {value:.4f}")
