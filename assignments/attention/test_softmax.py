"""Public checks for part 1 (softmax, entropy_bits, attend): properties, not answers.

Run them with `pytest` in this folder, or with the notebook's check cell.
"""

import math

import numpy as np

from selfcheck.checks import close, that


def test_softmax_rows_sum_to_one(student):
    """softmax of a 3 x 5 array: every row sums to 1 and every weight is in [0, 1]"""
    z = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [0.5, 0.5, 0.5, 0.5, 0.5], [-3.0, 0.0, 3.0, 1.0, 2.0]])
    close(np.sum(student.softmax(z), axis=-1), np.ones(3), "softmax(z).sum(axis=-1) for a 3 x 5 z")
    p = np.asarray(student.softmax(z), dtype=float)
    that(((p >= 0) & (p <= 1)).all(), f"softmax weights must lie in [0, 1], got {p.min():.3g} .. {p.max():.3g}")


def test_softmax_shift_invariance(student):
    """softmax(z + 100) equals softmax(z): adding a constant to every score changes nothing"""
    z = np.array([0.3, -1.2, 2.0, 0.0])
    close(student.softmax(z + 100.0), student.softmax(z), "softmax(z + 100) against softmax(z)")


def test_softmax_large_scores(student):
    """scores in the thousands give finite weights (subtract the maximum before exp)"""
    got = student.softmax(np.array([1000.0, 1001.0, 1002.0]))
    ref = np.exp([-2.0, -1.0, 0.0]) / np.exp([-2.0, -1.0, 0.0]).sum()
    close(got, ref, "softmax([1000, 1001, 1002])",
          mistakes=[("computing exp(z) before subtracting the maximum overflows to inf, and inf/inf is nan",
                     np.full(3, np.nan))])


def test_softmax_minus_inf_is_exactly_zero(student):
    """a score of -inf gets a weight of exactly 0"""
    p = np.asarray(student.softmax(np.array([1.0, -np.inf, 2.0])), dtype=float)
    that(p.shape == (3,) and p[1] == 0.0, f"softmax([1, -inf, 2])[1] should be exactly 0, got {p[1:2]}")


def test_softmax_axis(student):
    """softmax(z, axis=0) normalises columns; the shape never changes"""
    z = np.arange(12.0).reshape(3, 4) / 5
    got = student.softmax(z, axis=0)
    close(np.asarray(got).sum(axis=0), np.ones(4), "softmax(z, axis=0).sum(axis=0) for a 3 x 4 z")


def test_entropy_extremes(student):
    """entropy_bits: 2 bits for four equal weights, 0 bits for a one-hot vector"""
    close(student.entropy_bits(np.full(4, 0.25)), 2.0, "entropy_bits([.25, .25, .25, .25])",
          mistakes=[("natural log instead of log2 (that is nats, not bits)", math.log(4))])
    close(student.entropy_bits(np.array([0.0, 1.0, 0.0])), 0.0, "entropy_bits([0, 1, 0])",
          mistakes=[("0 * log(0) is nan: leave the zero weights out", np.nan)])


def test_attend_shapes(student):
    """attend(q, K, V) with 5 keys of width 3 and values of width 2: alpha has 5 weights summing to 1, output 2 numbers"""
    rng = np.random.default_rng(1)
    alpha, output = student.attend(rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=(5, 2)))
    that(np.shape(alpha) == (5,), f"alpha should have shape (5,), got {np.shape(alpha)}")
    that(np.shape(output) == (2,), f"output should have shape (2,), got {np.shape(output)}")
    close(np.sum(alpha), 1.0, "sum of alpha")
