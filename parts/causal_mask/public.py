"""Public checks for part 2 (causal_mask, masked_softmax, softmax_then_mask, scale_experiment):
every number the notebook states and every rule it gives.

Run them with `pytest` in this folder, or with the notebook's check cell. The chapter's
numbers come from selfcheck/chapter_numbers.json; a likely mistake is named only when
your answer itself shows it.
"""

import math

import numpy as np

from selfcheck import scale_experiment as scale
from selfcheck.chapter import get
from selfcheck.checks import CheckFailed, arrays, close, that, unchanged, weight
from selfcheck.student import StudentError

MASK = get("attention.mask")
SCORES = np.array([[0.3, -1.0, 2.2, 0.5, 1.1],
                   [1.4, 0.2, -0.7, 0.0, 2.5],
                   [-0.2, 0.9, 0.4, 1.6, -1.3],
                   [2.0, 2.0, -0.5, 0.1, 0.8],
                   [0.6, -0.4, 1.2, -2.1, 0.3]])


def _softmax_rows(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _lower(n):
    return np.arange(n)[:, None] >= np.arange(n)[None, :]


def _blocked_kept_a_score(w, scores, allowed):
    """The weights are a softmax in which the blocked scores stayed finite (set to a number, multiplied
    by the mask, the mask added): the allowed weights of every row keep the ratios e^(s_j - s_k) of
    their scores, and the blocked ones hold some weight."""
    w, scores = np.asarray(w, dtype=float), np.broadcast_to(np.asarray(scores, dtype=float), np.shape(w))
    blocked = w[~allowed]
    if not (np.all(np.isfinite(w)) and np.all(blocked >= 0) and np.any(blocked > 0)):
        return False
    with np.errstate(divide="ignore"):
        rest = np.log(w) - scores                     # log w_j - s_j: one number per row where allowed
    for row, keep in zip(rest.reshape(-1, w.shape[-1]), allowed.reshape(-1, w.shape[-1])):
        if keep.sum() > 1 and not np.ptp(row[keep]) < 1e-6:
            return False
    return True


def _masked_weights(student, scores, mask, what):
    """masked_softmax's answer, judged by what any masked softmax must show: blocked weights are
    exactly 0 and every row sums to 1; the likely mistake is read from how it fails."""
    w = np.asarray(student.masked_softmax(scores, mask), dtype=float)
    that(w.shape == np.shape(scores), f"{what}: the answer should have the shape of the scores, "
                                      f"{np.shape(scores)}, got {w.shape}")
    allowed = np.broadcast_to(mask, w.shape)
    leak = np.abs(w[~allowed]).max() if (~allowed).any() else 0.0
    causal = np.broadcast_to(_lower(w.shape[-1]), w.shape)
    if leak > 0:
        first = np.broadcast_to(np.reshape(allowed, (-1,) + allowed.shape[-2:])[0], w.shape)
        hints = [(np.ndim(mask) > 2 and np.all(w[~first] == 0), "mask-first-item-only",
                  "one mask (the first item's) was used for every item; a mask of the full shape gives each "
                  "item its own (np.where broadcasts it)"),
                 (np.all(w[~causal] == 0), "mask-argument-ignored", "the mask argument was ignored (a causal "
                                                                   "mask was built inside): use the `mask` you are given"),
                 (np.allclose(w, _softmax_rows(scores), rtol=1e-6, atol=1e-12), "mask-argument-ignored",
                  "the mask was not applied: the weights are the softmax of the whole rows, blocked positions "
                  "included; set the scores where `mask` is False to -inf, for scores of any number of axes"),
                 (_blocked_kept_a_score(w, scores, allowed), "mask-fill-not-minus-inf",
                  "the blocked scores stayed finite (set to 0 or another number, multiplied by the mask, or the "
                  "mask added to them), so they still get weight: set blocked scores to -inf"),
                 (np.all(~np.isfinite(w[~allowed]) | (w[~allowed] < 0)), "mask-after-softmax",
                  "the mask ran after the softmax: it wrote its fill value into the weights; set the blocked "
                  "scores to -inf first, then take the softmax")]
        key, hint = next(((key, text) for condition, key, text in hints if condition), (None, None))
        that(False, f"{what}: blocked positions (mask False) must get weight 0, got up to {leak:.3g}.", hint, key)
    sums = w.sum(axis=-1)
    close(sums, np.ones(sums.shape), f"{what}: the row sums",
          mistakes=[("mask-after-softmax", "the softmax ran before the mask: zeroing weights afterwards throws their share away; "
                     "set the blocked scores to -inf first, then take the softmax", sums)]
          if np.all(sums < 1 + 1e-6) else [])
    return w


def test_causal_mask_shape_and_type(student):
    """causal_mask(5) is a 5 x 5 array of booleans"""
    m = np.asarray(student.causal_mask(5))
    that(m.shape == (5, 5), f"causal_mask(5) should have shape (5, 5), got {m.shape}",
         *(("the answer does not depend on n: the chapter's mask is written in, not computed", "hard-coded-chapter")
           if m.shape == (4, 4) else ()))
    that(m.dtype == bool, f"causal_mask(5) should hold booleans (dtype bool), got dtype {m.dtype}",
         f"the mask holds {m.dtype.kind == 'f' and 'floats (np.tril(np.ones((n, n))) does)' or m.dtype.name + ' numbers'}; "
         "np.ones(..., dtype=bool) or a comparison gives booleans",
         "mask-not-boolean")


def test_causal_mask_first_and_last_rows(student):
    """the first position sees only itself; the last sees every position"""
    m = np.asarray(student.causal_mask(6)).astype(bool)
    hints = [(np.array_equal(m, ~_lower(6)), "mask-inverted", "the mask is inverted: it is True where a position may "
              "not look (the future, np.triu(..., k=1)); True marks what a position may see, j <= i"),
             (not m[0, 0], "mask-without-diagonal", "the diagonal is missing: a position may see itself (j <= i, "
                                                    "not j < i)"),
             (m[0, 1] and not m[0, 2:].any(), "mask-off-by-one", "the mask is off by one: it lets position i see i + 1"),
             (m[0].all() and not m[-1, :-1].any(), "mask-transposed", "the mask is transposed: True marks what a "
                                                  "position may see, the past, j <= i (np.tril, not np.triu)"),
             (m[0, 1:].any(), "mask-sees-future", "True marks what a position may see: the past, j <= i")]
    key, hint = next(((key, text) for condition, key, text in hints if condition), (None, None))
    that(m[0].tolist() == [True] + [False] * 5,
         f"row 0 of causal_mask(6) should be [True, False, False, False, False, False], got {m[0].tolist()}",
         hint, key)
    that(m[-1].all(), f"the last row of causal_mask(6) should be all True, got {m[-1].tolist()}", hint, key)


def test_masked_softmax_rows_sum_to_one(student):
    """masked_softmax of a 5 x 5 example with a causal mask: rows sum to 1, blocked weights are 0"""
    _masked_weights(student, SCORES, _lower(5), "masked_softmax of a 5 x 5 example")


@weight(2)
def test_chapter_masked_softmax(student):
    """'the dog barked loudly': 'the' keeps weight 1, 'dog' splits 0.1824 / 0.8176, every row sums to 1"""
    S, mask = np.array(MASK["scores"]), np.array(MASK["mask_allowed"])
    w = _masked_weights(student, S, mask, "masked_softmax of 'the dog barked loudly'")
    close(w, MASK["masked_softmax"], "masked_softmax of 'the dog barked loudly'", source="the notebook's table")


def test_masked_softmax_keeps_a_batch_shape(student):
    """masked_softmax of a batch of shape (2, 3, 4, 4) with one (4, 4) mask keeps the shape"""
    z = np.arange(2 * 3 * 4 * 4, dtype=float).reshape(2, 3, 4, 4) % 7 / 3
    try:
        _masked_weights(student, z, _lower(4), "masked_softmax of a batch of shape (2, 3, 4, 4)")
    except StudentError as exc:
        if exc.kind != "error" or exc.diagnosis:
            raise
        student.masked_softmax(SCORES, _lower(5))       # one 5 x 5 example works: only the batch fails
        raise CheckFailed(f"masked_softmax of a batch of shape (2, 3, 4, 4) raised {exc.message}",
                          "the code assumes 2-D scores; let numpy broadcast the mask over the leading axes "
                          "(np.where(mask, scores, -np.inf) does) and take the softmax along the last axis",
                          "masked-softmax-2d-only") from None


def test_masked_softmax_uses_the_mask_it_is_given(student):
    """masks that are not causal, one for all and one per item of a batch: blocked weights are 0"""
    ends = np.zeros((5, 5), dtype=bool)
    ends[:, [0, -1]] = True             # every row sees the first and the last position
    _masked_weights(student, SCORES, ends, "masked_softmax with a mask that is not causal")
    per_item = np.stack([_lower(5), ends])
    _masked_weights(student, np.stack([SCORES, SCORES]), per_item,
                    "masked_softmax of a batch of 2 with a mask per item, shape (2, 5, 5)")


def test_inputs_left_alone(student):
    """masked_softmax and softmax_then_mask change neither the scores nor the mask ("leave `scores` as it was")"""
    unchanged(student, "masked_softmax", SCORES.copy(), _lower(5), what="masked_softmax")
    unchanged(student, "softmax_then_mask", SCORES.copy(), _lower(5), what="softmax_then_mask")


def test_masked_softmax_and_the_experiment_return_arrays(student):
    """masked_softmax takes plain lists and returns a numpy array; scale_experiment returns five 1-D numpy arrays"""
    weights = arrays(student, "masked_softmax", [[0.0, 1.0], [1.0, 0.0]], [[True, False], [True, True]],
                     what="masked_softmax(scores, mask) with both given as lists")
    close(weights, [[1.0, 0.0], [1 / (1 + math.exp(-1)), 1 / (1 + math.exp(1))]],
          "masked_softmax of the 2 x 2 scores [[0, 1], [1, 0]] given as lists")
    result = student.scale_experiment([4, 16], trials=10, seed=0)
    that(isinstance(result, dict), f"scale_experiment should return a dict of columns, got {type(result).__name__}")
    other = {k: type(result.get(k)).__name__ for k in scale.COLUMNS
             if not (isinstance(result.get(k), np.ndarray) and result[k].ndim == 1)}
    that(not other, "scale_experiment([4, 16])'s columns should be 1-D numpy arrays; got "
         + ", ".join(f"{k}: {kind}" for k, kind in other.items()),
         "return each of the five columns as a 1-D numpy array (np.array(values)), not a list", "experiment-columns-not-arrays")


@weight(2)
def test_chapter_softmax_then_mask(student):
    """softmax_then_mask of 'the dog barked loudly': row sums 0.4551, 0.6742, 0.8122 and 1.0000"""
    S, mask = np.array(MASK["scores"]), np.array(MASK["mask_allowed"])
    result = student.softmax_then_mask(S, mask)
    that(isinstance(result, (tuple, list)) and len(result) == 2,
         "softmax_then_mask should return the pair (weights, row_sums)")
    weights, sums = result
    wrong = np.array(MASK["wrong_order"])
    close(weights, wrong, "the wrong order's weights for 'the dog barked loudly'", source="chapter, step 4",
          mistakes=[("wrong-order-is-right-order", "that is the right order (mask, then softmax); this function shows the wrong one: softmax "
                     "over the whole row, then zero the blocked weights", MASK["masked_softmax"]),
                    ("wrong-order-not-zeroed", "the blocked weights were not zeroed", MASK["unmasked_softmax"])])
    close(sums, MASK["wrong_order_row_sums"], "the wrong order's row sums", source="the notebook",
          mistakes=[("row-sums-down-columns", "the sums ran down the columns; row_sums[i] is the sum of row i", wrong.sum(axis=0))])


@weight(2)
def test_scale_experiment_shows_the_chapter_s_facts(student):
    """scale_experiment([4, 64, 1024], seed=0): raw entropy 1.78 -> 0.13 bits, scaled near 2.48, top weight 0.96"""
    r = scale.columns(student.scale_experiment([4, 64, 1024], trials=200, seed=0), 3)
    close(r["d_k"], [4, 64, 1024], "result['d_k'] (one entry per d, in the order given)")
    scale.entropy(r)
    scale.largest_weight(r)


def test_scale_experiment_spread(student):
    """the spread of q.k grows like sqrt(d_k): about 0.9 sqrt(d_k) with 8 keys (each trial's s.std(), averaged)"""
    r = scale.columns(student.scale_experiment([64, 256], trials=300, seed=0), 2)
    two_keys = scale.columns(student.scale_experiment([16], n_keys=2, trials=2000, seed=0), 1)
    scale.spread(r, [64, 256], two_keys)


def test_scale_experiment_seed(student):
    """one generator from `seed`: the same seed gives the same numbers, another seed others"""
    first, again, other = (scale.columns(student.scale_experiment([8, 32], trials=30, seed=s), 2) for s in (0, 0, 1))
    that(all(np.array_equal(first[k], again[k]) for k in scale.COLUMNS),
         "two runs with the same seed gave different numbers",
         "the generator ignores `seed`; make it with np.random.default_rng(seed)", "experiment-ignores-seed")
    that(not np.array_equal(first["entropy_raw"], other["entropy_raw"]),
         "two different seeds gave the same numbers",
         "the generator's seed is fixed; make it with np.random.default_rng(seed)", "experiment-fixed-seed")
    twice = scale.columns(student.scale_experiment([8, 8], trials=30, seed=0), 2)
    that(twice["entropy_raw"][0] != twice["entropy_raw"][1],
         "scale_experiment([8, 8]) gave the same numbers for both entries: the second d repeated the first's draws",
         "make one generator, rng = np.random.default_rng(seed), before the loop over d_values: a new one for each d "
         "draws the same numbers again", "experiment-generator-per-d")


def test_scale_experiment_n_keys(student):
    """n_keys keys per trial: with 2 keys the entropy is at most 1 bit"""
    r = scale.columns(student.scale_experiment([16], n_keys=2, trials=50, seed=0), 1)
    scale.at_most_log2(float(r["entropy_scaled"][0]), 2, "mean scaled entropy over 2 keys at d_k = 16")
