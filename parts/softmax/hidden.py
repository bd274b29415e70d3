"""Hidden suite, part 1 (softmax, entropy_bits, attend): inputs a student cannot predict.

The chapter's numbers and the notebook's rules are checked by the public suite
(parts/softmax/public.py), which grading runs too; this one adds
random shapes, axes, sizes and scales. Their expected values are never printed.
"""

import math

import numpy as np

from selfcheck.checks import close, entropy_mistake, scale_mistake, that, weight

RNG = np.random.default_rng(20261129)


def naive_softmax(z, axis=-1):
    e = np.exp(np.asarray(z, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_axis(z, axis):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def global_softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()


@weight(2)
def test_softmax_random_shapes(student, reference):
    """softmax on random arrays of 1 to 4 dimensions, along every axis"""
    for trial in range(6):
        shape = tuple(int(n) for n in RNG.integers(2, 6, size=RNG.integers(1, 5)))
        z = RNG.normal(0, 3, size=shape)
        axis = int(RNG.integers(-len(shape), len(shape)))
        other = (axis + 1) % len(shape) if len(shape) > 1 else None
        mistakes = [("softmax-global-sum", "the sum ran over the whole array instead of along `axis`", global_softmax(z))]
        if other is not None:
            mistakes.append(("softmax-wrong-axis", "the softmax ran along the wrong axis (use the `axis` argument for max and sum)",
                             softmax_axis(z, other)))
            mistakes.append(("softmax-wrong-axis", "the max or sum ignored `axis` (always the last axis)", softmax_axis(z, -1)))
            mistakes.append(("softmax-wrong-axis", "the max or sum ignored `axis` (always axis 0)", softmax_axis(z, 0)))
        close(student.softmax(z, axis), reference.softmax(z, axis),
              f"softmax of a random array of shape {shape} along axis {axis}", reveal=False,
              mistakes=mistakes)


@weight(2)
def test_softmax_large_random_scores(student, reference):
    """softmax of random scores in the thousands is finite and correct"""
    z = RNG.normal(0, 1, size=(4, 7)) * 50 + 2000
    close(student.softmax(z), reference.softmax(z), "softmax of scores near 2000", reveal=False, scale=2100,
          mistakes=[("softmax-no-max-shift", "exp(z) overflows without subtracting the maximum first, giving nan", naive_softmax(z))])
    z = -z      # large positive scores passed: a shift that fails here stops at 0 on its way down
    close(student.softmax(z), reference.softmax(z), "softmax of scores near -2000", reveal=False, scale=2100,
          mistakes=[("softmax-shift-floored-at-zero", "large positive scores work but large negative ones underflow to "
                     "0 / 0 = nan: the shift stopped at 0 (a maximum started at 0, or np.maximum(..., 0)); subtract each "
                     "slice's own maximum, also when it is negative", naive_softmax(z))])


def test_softmax_rows_at_different_scales(student, reference):
    """softmax of random rows hundreds apart, along either axis: each slice is shifted by its own maximum"""
    z = RNG.normal(0, 1, size=(5, 4)) + RNG.permutation(np.arange(5) * 400.0)[:, None]
    for axis, scores in ((-1, z), (0, z.T)):
        with np.errstate(all="ignore"):
            e = np.exp(scores - scores.max())
            one_max = e / e.sum(axis=axis, keepdims=True)
        close(student.softmax(scores, axis), reference.softmax(scores, axis),
              f"softmax along axis {axis} of slices hundreds apart", reveal=False, scale=2100,
              mistakes=[("softmax-global-max", "one maximum was subtracted for the whole array: a slice far below it "
                         "underflows to 0 / 0 = nan; subtract each slice's own maximum, "
                         "z.max(axis=axis, keepdims=True)", one_max)])


def test_softmax_masked_entries(student, reference):
    """-inf entries in random rows get exactly zero weight and the rest renormalise"""
    z = RNG.normal(size=(5, 6))
    z[RNG.random(z.shape) < 0.4] = -np.inf
    z[:, 0] = RNG.normal(size=5)          # every row keeps at least one finite score
    got = np.asarray(student.softmax(z), dtype=float)
    that(got.shape == z.shape and np.all(got[np.isneginf(z)] == 0.0),
         "softmax: entries with a score of -inf must get a weight of exactly 0")
    close(got, reference.softmax(z), "softmax of rows with -inf entries", reveal=False)


def test_softmax_float32_and_integers(student, reference):
    """softmax accepts float32 and integer input"""
    z = RNG.normal(size=(3, 4)).astype(np.float32)
    close(student.softmax(z), reference.softmax(z), "softmax of a float32 array", reveal=False)
    z = np.array([[1, 2, 3], [3, 3, 3]])
    close(student.softmax(z), reference.softmax(z), "softmax of an integer array", reveal=False,
          mistakes=[("softmax-integer-input", "integer input was not converted to float", np.zeros((2, 3)))])


def test_entropy_random(student, reference):
    """entropy_bits of random distributions, some with zero weights"""
    for n in (2, 5, 9):
        p = RNG.random(n)
        p[: n // 3] = 0.0
        p = RNG.permutation(p / p.sum())
        expected = reference.entropy_bits(p)
        q = p[p > 0]
        got = student.entropy_bits(p)
        close(got, expected, f"entropy_bits of a random distribution over {n}", reveal=False,
              mistakes=[("entropy-keeps-zeros", "zero weights were not left out (0 * log 0 gives nan)", np.nan),
                        ("entropy-unweighted", "sum of -log2 p without weighting by p", -np.log2(q).sum()),
                        *(entropy_mistake(got, expected, n) if np.ndim(got) == 0 else [])])


@weight(2)
def test_attend_random(student, reference):
    """attend with random sizes: n keys, query width d_k, value width d_v"""
    for trial in range(4):
        n, d_k, d_v = (int(x) for x in RNG.integers(2, 9, size=3))
        q, K, V = RNG.normal(size=d_k), RNG.normal(size=(n, d_k)), RNG.normal(size=(n, d_v))
        alpha, output = student.attend(q, K, V)
        ref_alpha, ref_out = reference.attend(q, K, V)
        mistakes = [("scores-not-scaled", "the scores were not divided by sqrt(d_k)", softmax_axis(K @ q, -1)),
                    ("scores-divided-by-width", "the scores were divided by d_k instead of sqrt(d_k)", softmax_axis(K @ q / d_k, -1)),
                    ("scores-scaled-wrongly", "the scale used the number of keys instead of the query width d_k",
                     softmax_axis(K @ q / math.sqrt(n), -1)),
                    ("scores-scaled-wrongly", "the scores were multiplied by 0 (a scale of 0), so every weight is the same",
                     np.full(n, 1 / n)),
                    ("softmax-wrong-axis", "every weight is 1: the softmax ran along an axis of length 1 (scores shaped "
                     "(n, 1)); take it over the keys, the n scores K @ q", np.ones(n))]
        reading = scale_mistake(alpha, K @ q, d_k)
        if reading and reading[0] == "no-softmax":
            mistakes.append((*reading, alpha))
        close(alpha, ref_alpha, f"alpha for {n} random keys of width {d_k}", reveal=False, mistakes=mistakes)
        close(output, ref_out, f"output for {n} random keys, values of width {d_v}", reveal=False,
              mistakes=[("attend-mixes-keys", "the output mixes the keys, not the values", ref_alpha @ K if d_k == d_v else np.nan)])
