"""Public checks for the weighted-attention layer (part projection_removal): every number the
notebook states and every rule it gives.

Run them with `pytest` in this folder, or with the notebook's check cell. They
build your WeightedAttention through a probe (selfcheck/probes/projection_removal.py)
and need no corpus. A likely mistake is named only when your layer's answer shows it.
"""

import math

import numpy as np

from selfcheck.checks import CheckFailed, close, equal, gradient_mistake, implied_scale, scale_mistake, that, weight

E = 8
KINDS = [(), ("query",), ("key",), ("value",), ("query", "key", "value")]
CHAPTER_MODEL = {(): 109_889, ("query",): 101_569, ("key",): 101_569, ("value",): 101_569,
                 ("query", "key", "value"): 84_929}     # vocabulary 65, E = 64, two blocks: the notebook's counts


def _weights(rng, width=E):
    return {p: (rng.normal(0, 0.5, (width, width)), rng.normal(0, 0.5, width))
            for p in ("query", "key", "value", "out")}


def _read_back(student, width=6, tokens=4, seed=4):
    """Your layer's attention weights, read back through identity value and output projections
    (output row i is then sum_j A[i, j] x_j): (A, q, k)."""
    rng = np.random.default_rng(seed)
    weights = _weights(rng, width)
    weights.update({p: (np.eye(width), np.zeros(width)) for p in ("value", "out")})
    x = rng.normal(size=(1, tokens, width))
    out = np.asarray(student.probe("projection_removal", "forward", width, (), weights, x), dtype=float)
    that(out.shape == x.shape, f"the output should have the shape of x, {x.shape}, got {out.shape}")
    q, k = (x[0] @ weights[p][0] + weights[p][1] for p in ("query", "key"))
    return out[0] @ np.linalg.pinv(x[0]), q, k


def _weights_mistake(A):
    """(id, words) of the mistake that read-back weights show, or (None, None) when they show none."""
    n, tol = len(A), 1e-5
    if not np.isfinite(A[0]).all() and np.isfinite(A[1:]).all():
        return ("mask-without-diagonal", "the mask also blocks the diagonal (j < i instead of j <= i): the first "
                "position has nothing left to see, 0 / 0 = nan")
    if np.allclose(A, 1, atol=tol):
        return ("softmax-over-batch", "every weight is 1: the softmax ran over an axis of length 1 here, the batch "
                "(axis 0), instead of over the keys (axis -1)")
    above, below = A[np.triu_indices(n, k=1)], A[np.tril_indices(n, k=-1)]
    rows_sum_to_one = np.allclose(A.sum(axis=-1), 1, atol=tol)
    if np.allclose(above, 0, atol=tol) and not rows_sum_to_one and np.ptp(A.sum(axis=-1)) < tol:
        return None, None       # every row sums to one number: the values were scaled (see _value_scale)
    if np.allclose(below, 0, atol=tol) and np.allclose(A.sum(axis=0), 1, atol=tol) and not rows_sum_to_one:
        return ("weights-transposed-on-values", "the weights were transposed before they mixed the values "
                "(weights^T v): output i must be the sum over j of weights[i, j] v_j, that is weights @ v")
    if np.allclose(above, 0, atol=tol) and np.allclose(A.sum(axis=0), 1, atol=tol) and not rows_sum_to_one:
        return "softmax-over-queries", "the softmax ran over the queries (axis -2): each row must sum to 1 over its keys"
    if np.allclose(above, 0, atol=tol) and not rows_sum_to_one:
        return "mask-after-softmax", "the mask was applied after the softmax, so rows no longer sum to 1"
    if np.all(above < -1e8):
        return "mask-after-softmax", "the mask ran after the softmax: it wrote its fill value into the weights"
    if np.all(above > tol) and rows_sum_to_one:
        return "no-causal-mask", "the future is not blocked before the softmax: every key j > i keeps weight"
    return None, None


@weight(0)      # a shape alone is no attention: a layer that ignores the other positions has it too
def test_output_shape(student):
    """the layer maps x of shape (2, 5, 8) to an output of shape (2, 5, 8) in every mode"""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, E))
    for remove in KINDS:
        out = np.asarray(student.probe("projection_removal", "forward", E, remove, _weights(rng), x))
        that(out.shape == x.shape, f"WeightedAttention(8, remove={remove}) on x of shape (2, 5, 8) "
                                   f"gave shape {out.shape}; expected (2, 5, 8)")


NO_ATTENTION = ("the layer does not attend: output i is out(weights v) with the weights spread over "
                "every position j <= i, so it changes when an earlier x does")


def _changed_later(student, remove, weights, x, rng):
    """The positions i > 0 whose output stays the same when only x at position 0 changes."""
    earlier = x.copy()
    earlier[:, 0] = rng.normal(size=(x.shape[0], x.shape[2]))
    before = np.asarray(student.probe("projection_removal", "forward", E, remove, weights, x), dtype=float)
    after = np.asarray(student.probe("projection_removal", "forward", E, remove, weights, earlier), dtype=float)
    if before.shape != x.shape or after.shape != x.shape:
        return list(range(1, x.shape[1]))
    return [i for i in range(1, x.shape[1]) if np.allclose(before[:, i], after[:, i], rtol=1e-6, atol=1e-9)]


def _value_scale(A):
    """The factor c when every row of the read-back weights sums to the same c != 1 (the values or the
    output were multiplied by c), else None."""
    sums = A.sum(axis=-1)
    if np.isfinite(sums).all() and np.ptp(sums) < 1e-6 and abs(sums[0] - 1) > 1e-5:
        return float(sums[0])
    return None


def _why(student):
    """(id, words) of what the layer's own read-back weights show, or (None, None): a known pattern of the
    weights, or scores scaled by something other than sqrt(E)."""
    width = 6
    A, q, k = _read_back(student, width)
    key, hint = _weights_mistake(A)
    if key:
        return key, hint
    c = _value_scale(A)
    mistake = scale_mistake(A / (c or 1.0), q @ k.T, width, "E", number_of_tokens=len(A), chapter_width=64)
    if c is not None and mistake and mistake[0] == "scores-not-scaled" and abs(c * math.sqrt(width) - 1) < 1e-6:
        return "scale-after-softmax", (f"the scale 1 / sqrt(E) = {c:.4g} was applied after the softmax (to the weights, "
                                       "the values or the output) and the scores were not divided: divide the scores "
                                       "by sqrt(E) before the mask and the softmax")
    if c is not None:
        return ("scores-scaled-wrongly" if mistake else "values-scaled",
                f"the values (or the output) were multiplied by {c:.4g}: every row of the weights sums to it"
                + (f", and {mistake[1]}" if mistake else "; the scale 1 / sqrt(E) belongs to the scores alone"))
    return mistake or (None, None)


def test_causal(student):
    """position i sees the past, never the future: output i changes with x at 0, never with x after i"""
    rng = np.random.default_rng(1)
    weights = _weights(rng)
    x = rng.normal(size=(1, 6, E))
    later = x.copy()
    later[:, 3:] = rng.normal(size=(1, 3, E))
    before = np.asarray(student.probe("projection_removal", "forward", E, (), weights, x))
    after = np.asarray(student.probe("projection_removal", "forward", E, (), weights, later))
    try:
        close(after[:, :3], before[:, :3], "outputs at positions 0-2 after changing x at positions 3-5")
    except CheckFailed as failed:       # name a mistake only when the layer's own weights show it
        key, hint = _why(student)
        raise CheckFailed(failed.finding, hint, key) from None
    unchanged = _changed_later(student, (), weights, x, rng)
    if unchanged:                       # the layer's own weights say why, when they show a known mistake
        key, hint = _why(student)
        that(False, f"outputs at positions {unchanged} did not change when x at position 0 did",
             hint or NO_ATTENTION, key or "no-attention-at-all")


def test_parameter_counts(student):
    """each kept projection holds E*E + E parameters; a removed one holds none"""
    for remove in KINDS:
        info = student.probe("projection_removal", "describe", E, remove)
        kept = 4 - len(remove)
        equal(info["parameters"], kept * (E * E + E),
              f"parameters of WeightedAttention(8, remove={remove}) ({kept} Linear(8, 8) layers)",
              mistakes=[("removed-but-kept", "the removed projection's Linear is still in the layer: set the attribute to None "
                         "so its parameters are gone", 4 * (E * E + E))])


def test_gradients_reach_every_parameter(student):
    """backward() gives a gradient to x and to every kept projection's weight and bias"""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 3, 4))
    grads = student.probe("projection_removal", "gradients", 4, (), _weights(rng, 4), x, rng.normal(size=(1, 3, 4)))
    none = [key for key, g in grads.items() if g is None]
    that(not none, "no gradient reached " + ", ".join(none), *gradient_mistake(none)[::-1])
    for key, g in grads.items():
        that(np.abs(np.asarray(g)).max() > 0, f"the gradient of {key} is zero everywhere")


@weight(2)
def test_parameter_counts_of_the_chapter_model(student):
    """the chapter's model has 109,889 parameters, 101,569 without one projection, 84,929 without all three"""
    for remove, expected in CHAPTER_MODEL.items():
        equal(student.probe("projection_removal", "model_parameters", 65, 64, remove), expected,
              f"parameters of GPT(65, WeightedAttention, remove={remove})", source="the notebook",
              mistakes=[("removed-but-kept", "removed but parameters kept: the removed projection's Linear is still in the model "
                         "(set the attribute to None so its parameters are gone)", CHAPTER_MODEL[()])]
              if remove else [])


def test_a_removed_projection_is_x_itself(student):
    """with a projection removed, the layer equals your full layer with that projection's weight = I and bias = 0"""
    rng = np.random.default_rng(3)
    weights, x = _weights(rng), rng.normal(size=(1, 5, E))
    full = np.asarray(student.probe("projection_removal", "forward", E, (), weights, x))
    for removed in ("query", "key", "value"):
        identity = dict(weights, **{removed: (np.eye(E), np.zeros(E))})
        zeros = dict(weights, **{removed: (np.zeros((E, E)), np.zeros(E))})
        close(student.probe("projection_removal", "forward", E, (removed,), weights, x),
              student.probe("projection_removal", "forward", E, (), identity, x),
              f"WeightedAttention(8, remove=('{removed}',)) against your full layer with {removed} = identity",
              mistakes=[("removed-still-applied", f"the {removed} projection was still applied although it was "
                         "removed", full),
                        ("removed-as-zeros", "zeros (or nothing) were used in place of the removed projection, not x itself",
                         student.probe("projection_removal", "forward", E, (), zeros, x))])
        unchanged = _changed_later(student, (removed,), weights, x, rng)
        if unchanged:
            key, hint = _why(student)
            that(False, f"WeightedAttention(8, remove=('{removed}',)): outputs at positions {unchanged} did "
                        "not change when x at position 0 did", hint or NO_ATTENTION, key or "no-attention-at-all")


def test_attention_weights_read_back(student):
    """softmax(mask(q k^T / sqrt(E))) over the keys: the weights, read back through identity values and output"""
    width, tokens = 6, 4
    A, q, k = _read_back(student, width, tokens)
    blocked = A[np.triu_indices(tokens, k=1)]
    key, hint = _why(student) if _value_scale(A) else _weights_mistake(A)
    that(np.allclose(blocked, 0, atol=1e-5) and np.allclose(A.sum(axis=-1), 1, atol=1e-5),
         f"the attention weights (read back from the output) should be 0 above the diagonal and sum to 1 in "
         f"every row; yours have rows summing to {np.round(A.sum(axis=-1), 4).tolist()} and up to "
         f"{np.abs(blocked).max():.3g} above the diagonal", hint, key)
    found = implied_scale(A, q @ k.T)
    if found is None:
        transposed = implied_scale(A, k @ q.T) is not None
        that(False, "the attention weights (read back from the output) are not softmax(q k^T / sqrt(E)) along "
                    "each row",
             *(("the scores were k q^T (transposed): row i must hold q_i . k_j", "scores-transposed") if transposed
               else ("the softmax did not run over the keys (the last axis)", "softmax-over-queries")))
    mistake = scale_mistake(A, q @ k.T, width, "E", number_of_tokens=tokens, chapter_width=64)
    that(mistake is None, f"the attention weights (read back from the output) imply scores divided by "
                          f"{found:.4g}, expected sqrt(E) = sqrt(6) = 2.449", *(mistake or (None, None))[::-1])
