"""Public checks for part 2 (causal_mask, masked_softmax, softmax_then_mask, scale_experiment):
properties, not answers.

Run them with `pytest` in this folder, or with the notebook's check cell.
"""

import math

import numpy as np

from selfcheck.checks import close, that

SCORES = np.array([[0.3, -1.0, 2.2, 0.5, 1.1],
                   [1.4, 0.2, -0.7, 0.0, 2.5],
                   [-0.2, 0.9, 0.4, 1.6, -1.3],
                   [2.0, 2.0, -0.5, 0.1, 0.8],
                   [0.6, -0.4, 1.2, -2.1, 0.3]])


def _lower(n):
    return np.arange(n)[:, None] >= np.arange(n)[None, :]


def _softmax_rows(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_causal_mask_shape_and_type(student):
    """causal_mask(5) is a 5 x 5 array of booleans"""
    m = np.asarray(student.causal_mask(5))
    that(m.shape == (5, 5), f"causal_mask(5) should have shape (5, 5), got {m.shape}")
    that(m.dtype == bool, f"causal_mask(5) should hold booleans (dtype bool), got dtype {m.dtype}; "
                          "np.ones(..., dtype=bool) or a comparison gives booleans")


def test_causal_mask_first_and_last_rows(student):
    """the first position sees only itself; the last sees every position"""
    m = np.asarray(student.causal_mask(6)).astype(bool)
    that(m[0].tolist() == [True] + [False] * 5,
         f"row 0 of causal_mask(6) should be [True, False, False, False, False, False], got {m[0].tolist()}"
         + (" (the diagonal counts: a position may see itself)" if not m[0, 0] else "")
         + (" (True marks what a position may see: the past, j <= i)" if m[0, 1:].any() else ""))
    that(m[-1].all(), f"the last row of causal_mask(6) should be all True, got {m[-1].tolist()}")


def test_masked_softmax_rows_sum_to_one(student):
    """masked_softmax of a 5 x 5 example with a causal mask: rows sum to 1, blocked weights are 0"""
    mask = _lower(5)
    got = student.masked_softmax(SCORES, mask)
    wrong = (_softmax_rows(SCORES) * mask).sum(axis=-1)
    close(np.sum(got, axis=-1), np.ones(5), "the row sums of masked_softmax",
          mistakes=[("the softmax ran before the mask: zeroing weights afterwards throws their share "
                     "away; set blocked scores to -inf first", wrong)])
    w = np.asarray(got, dtype=float)
    that(np.all(np.abs(w[~mask]) < 1e-12),
         f"blocked positions (mask False) must get weight 0, got up to {np.abs(w[~mask]).max():.3g}. "
         "A blocked score set to 0 (or -1) still counts e^0 = 1 (or e^-1) in the softmax: use -inf")


def test_masked_softmax_keeps_a_batch_shape(student):
    """masked_softmax of a batch of shape (2, 3, 4, 4) with one (4, 4) mask keeps the shape"""
    z = np.arange(2 * 3 * 4 * 4, dtype=float).reshape(2, 3, 4, 4) % 7 / 3
    got = np.asarray(student.masked_softmax(z, _lower(4)), dtype=float)
    that(got.shape == z.shape, f"masked_softmax of shape {z.shape} should keep it, got {got.shape}")
    close(got.sum(axis=-1), np.ones((2, 3, 4)), "the row sums of the batch",
          mistakes=[("the softmax ran before the mask: set blocked scores to -inf first",
                     (_softmax_rows(z) * _lower(4)).sum(axis=-1))])


def test_softmax_then_mask_loses_weight(student):
    """softmax_then_mask: the first row keeps less than all of its weight, the last row all of it"""
    weights, sums = student.softmax_then_mask(SCORES, _lower(5))
    weights, sums = np.asarray(weights, dtype=float), np.asarray(sums, dtype=float)
    that(weights.shape == (5, 5) and sums.shape == (5,),
         f"expected weights of shape (5, 5) and row sums of shape (5,), got {weights.shape} and {sums.shape}")
    close(sums, weights.sum(axis=-1), "row_sums against the sums of the returned weights' rows")
    that(sums[0] < 1 - 1e-6, f"row 0 keeps only its own weight and should sum to less than 1, got {sums[0]:.4f}; "
                             "this is the wrong order on purpose: softmax first, then zero")
    close(sums[-1], 1.0, "the last row's sum (nothing is blocked there)")


def test_scale_experiment_result(student):
    """scale_experiment([4, 256], trials=50): five columns, raw entropy falls, scaled entropy stays up"""
    result = student.scale_experiment([4, 256], trials=50, seed=1)
    that(isinstance(result, dict), f"scale_experiment should return a dict, got {type(result).__name__}")
    keys = ["d_k", "sd", "entropy_raw", "entropy_scaled", "max_alpha_raw"]
    missing = [k for k in keys if k not in result]
    that(not missing, f"the result has no {', '.join(map(repr, missing))} (keys expected: {', '.join(keys)})")
    for key in keys:
        that(np.shape(result[key]) == (2,), f"result[{key!r}] should hold one number per d (shape (2,)), "
                                            f"got shape {np.shape(result[key])}")
    close(result["d_k"], [4, 256], "result['d_k']")
    for key in ("entropy_raw", "entropy_scaled"):
        values = np.asarray(result[key], dtype=float)
        that(np.all((values >= 0) & (values <= math.log2(8) + 1e-9)),
             f"result[{key!r}] should lie between 0 and log2(8) = 3 bits, got {values.round(4).tolist()}")
    raw, scaled = np.asarray(result["entropy_raw"]), np.asarray(result["entropy_scaled"])
    that(raw[1] < raw[0], f"the raw entropy should fall as d_k grows, got {raw.round(4).tolist()}")
    that(scaled[1] > 2.0, f"the scaled entropy at d_k = 256 should stay near 2.5 bits, got {scaled[1]:.4f}"
                          " (are the scores divided by sqrt(d_k)?)")
