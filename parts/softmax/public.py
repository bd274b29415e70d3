"""Public checks for part 1 (softmax, entropy_bits, attend): every number the notebook states
and every rule it gives. Run them with `pytest` in this folder, or with the notebook's check cell.

The chapter's numbers come from selfcheck/chapter_numbers.json; a likely mistake is
named only when your answer itself shows it.
"""

import math

import numpy as np
import pytest

from selfcheck.chapter import get
from selfcheck.checks import CheckFailed, arrays, close, entropy_mistake, scale_mistake, that, unchanged, weight
from selfcheck.student import StudentError

ONE = get("attention.one_query")
SELECT = get("attention.select")


def softmax_rows(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _axis_mistakes(p, axis):
    """What the sums of a softmax along the wrong axis (or over everything) look like."""
    p = np.asarray(p, dtype=float)
    found = []
    if p.ndim > 1 and np.isclose(p.sum(), 1.0):     # the whole array sums to 1, its slices do not
        found.append(("softmax-global-sum", "the sum ran over the whole array, not along `axis`", p.sum(axis=axis)))
    if p.ndim > 1:
        other = 0 if axis in (-1, p.ndim - 1) else -1
        if np.allclose(p.sum(axis=other), 1.0):
            found.append(("softmax-wrong-axis", f"the softmax normalised along axis {other}, not along `axis` (use it for the max "
                          "and the sum, with keepdims=True)", p.sum(axis=axis)))
    return found


def test_softmax_rows_sum_to_one(student):
    """softmax of a 3 x 5 array: every row sums to 1 and every weight is in [0, 1]"""
    z = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [0.5, 0.5, 0.5, 0.5, 0.5], [-3.0, 0.0, 3.0, 1.0, 2.0]])
    p = np.asarray(student.softmax(z), dtype=float)
    that(p.shape == z.shape, f"softmax of a 3 x 5 array should have shape (3, 5), got {p.shape}")
    close(p.sum(axis=-1), np.ones(3), "softmax(z).sum(axis=-1) for a 3 x 5 z", mistakes=_axis_mistakes(p, -1))
    that(((p >= 0) & (p <= 1)).all(), f"softmax weights must lie in [0, 1], got {p.min():.3g} .. {p.max():.3g}")


def test_softmax_axis(student):
    """softmax(z, axis=0) normalises columns; the shape never changes"""
    z = np.arange(12.0).reshape(3, 4) / 5
    p = np.asarray(student.softmax(z, axis=0), dtype=float)
    that(p.shape == z.shape, f"softmax(z, axis=0) of a 3 x 4 array should keep its shape, got {p.shape}")
    close(p.sum(axis=0), np.ones(4), "softmax(z, axis=0).sum(axis=0) for a 3 x 4 z", mistakes=_axis_mistakes(p, 0))


def test_softmax_shift_invariance(student):
    """softmax(z + 100) equals softmax(z): adding a constant to every score changes nothing"""
    z = np.array([0.3, -1.2, 2.0, 0.0])
    close(student.softmax(z + 100.0), student.softmax(z), "softmax(z + 100) against softmax(z)", scale=102)


def test_softmax_large_scores(student):
    """scores in the thousands give finite weights (subtract the maximum before exp)"""
    got = student.softmax(np.array([1000.0, 1001.0, 1002.0]))
    e = np.exp([-2.0, -1.0, 0.0])
    close(got, e / e.sum(), "softmax([1000, 1001, 1002])", scale=1002,
          mistakes=[("softmax-no-max-shift", "computing exp(z) before subtracting the maximum overflows to inf, and inf/inf is nan",
                     np.full(3, np.nan))])


def test_softmax_shifts_each_row_by_its_own_maximum(student):
    """rows far apart, [[1000, 1001], [0, 1]]: each row is shifted by its own maximum, so both are finite"""
    z = np.array([[1000.0, 1001.0], [0.0, 1.0]])
    e = np.exp([-1.0, 0.0])
    with np.errstate(all="ignore"):
        one_max = np.exp(z - z.max()) / np.exp(z - z.max()).sum(axis=-1, keepdims=True)
    close(student.softmax(z), np.tile(e / e.sum(), (2, 1)), "softmax([[1000, 1001], [0, 1]])", scale=1001,
          mistakes=[("softmax-global-max", "one maximum was subtracted for the whole array: the row far below it "
                     "underflows to 0 / 0 = nan; subtract each row's own maximum, z.max(axis=axis, keepdims=True)",
                     one_max),
                    ("softmax-no-max-shift", "computing exp(z) before subtracting the maximum overflows to inf, "
                     "and inf/inf is nan", np.array([[np.nan, np.nan], e / e.sum()]))])


def test_softmax_minus_inf_is_exactly_zero(student):
    """a score of -inf gets a weight of exactly 0"""
    p = np.asarray(student.softmax(np.array([1.0, -np.inf, 2.0])), dtype=float)
    that(p.shape == (3,) and p[1] == 0.0, f"softmax([1, -inf, 2])[1] should be exactly 0, got {p[1:2]}")


def test_softmax_and_entropy_leave_their_input_alone(student):
    """softmax and entropy_bits do not change the array they are given"""
    unchanged(student, "softmax", np.array([[2.0, 0.5, -1.0], [0.0, 3.0, 1.0]]), what="softmax")
    unchanged(student, "entropy_bits", np.array([0.5, 0.0, 0.25, 0.25]), what="entropy_bits")


def test_entropy_extremes(student):
    """entropy_bits: 2 bits for four equal weights, 0 bits for a one-hot vector"""
    got = student.entropy_bits(np.full(4, 0.25))
    close(got, 2.0, "entropy_bits([.25, .25, .25, .25])",
          mistakes=[("entropy-not-summed", "entropy_bits returns one number, the sum of -p log2 p over the entries",
                     np.full(4, 0.5)), *(entropy_mistake(got, 2.0, 4) if np.ndim(got) == 0 else [])])
    close(student.entropy_bits(np.array([0.0, 1.0, 0.0])), 0.0, "entropy_bits([0, 1, 0])", atol=1e-9,
          mistakes=[("entropy-keeps-zeros", "0 * log(0) is nan: leave the zero weights out", np.nan)])


def test_attend_shapes(student):
    """attend(q, K, V) with 5 keys of width 3 and values of width 2: 5 weights, scaled by sqrt(d_k) = sqrt(3), output 2 numbers"""
    rng = np.random.default_rng(1)
    q, K, V = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    try:
        alpha, output = student.attend(q, K, V)
    except StudentError as exc:
        if exc.kind == "error" and _written_in(student):
            raise CheckFailed(f"attend(q, K, V) with 5 keys raised {exc.message}", HARD_CODED,
                              "hard-coded-chapter") from None
        raise
    hints = [(np.shape(alpha) == (2,) and np.shape(output) == (5,), "attend-swapped-pair",
              "the pair is (alpha, output), in that order"),
             (np.shape(alpha) == (3,) and np.allclose(alpha, ONE["alpha"]), "hard-coded-chapter", HARD_CODED),
             (np.shape(output) == (3,), "attend-mixes-keys",
              "the output mixes the keys (alpha @ K), not the values (alpha @ V)")]
    key, hint = next(((key, text) for condition, key, text in hints if condition), (None, None))
    that(np.shape(alpha) == (5,), f"alpha should have shape (5,) (one weight per key), got {np.shape(alpha)}",
         hint, key)
    that(np.shape(output) == (2,), f"output should have shape (2,) (the width of the values), got "
                                   f"{np.shape(output)}", hint, key)
    raw = K @ q             # the chapter's examples have as many keys as d_k: here they differ
    mistake = scale_mistake(alpha, raw, 3, n_keys=5)
    close(np.sum(alpha), 1.0, "sum of alpha", mistakes=[("softmax-wrong-axis", ONE_AXIS, 5.0)]
          if np.allclose(alpha, 1.0) else [(*mistake, np.sum(alpha))] if mistake else [])
    weights = np.exp(raw / np.sqrt(3) - np.max(raw / np.sqrt(3)))
    close(alpha, weights / weights.sum(), "alpha for 5 keys of width 3", source="softmax of K q / sqrt(3)",
          mistakes=[(*mistake, alpha)] if mistake else [])


ONE_AXIS = ("every weight is 1: the softmax ran along an axis of length 1 (scores shaped (n, 1)); take it over "
            "the keys, the n scores K @ q")


HARD_CODED = "the answer does not depend on the input: the chapter's numbers are written in, not computed"


def _written_in(student):
    """attend gives one answer for two different sets of three keys: its weights do not depend on them."""
    try:
        first, second = (np.asarray(student.attend(np.array([0.3, -0.2, 0.5]), keys, np.eye(3))[0], dtype=float)
                         for keys in (np.eye(3), np.eye(3)[::-1] * 2))
    except (StudentError, TypeError, ValueError):
        return False
    return first.shape == second.shape == (3,) and bool(np.allclose(first, second))


def test_softmax_and_attend_take_lists_and_return_arrays(student):
    """softmax and attend take plain lists (anything np.asarray accepts) and return numpy arrays"""
    p = arrays(student, "softmax", [[1.0, 2.0, 3.0]], what="softmax([[1.0, 2.0, 3.0]])")
    close(p, softmax_rows([[1.0, 2.0, 3.0]]), "softmax([[1.0, 2.0, 3.0]])")
    alpha, output = arrays(student, "attend", [1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [3.0]], pair=True,
                           what="attend(q, K, V) with q, K and V lists")
    weights = softmax_rows([[1 / math.sqrt(2), 0.0]])[0]
    close(alpha, weights, "alpha for two keys given as lists")
    close(output, [weights @ [1.0, 3.0]], "output for two keys given as lists")


def test_attend_leaves_its_inputs_alone(student):
    """attend does not change q, K or V"""
    rng = np.random.default_rng(7)
    unchanged(student, "attend", rng.normal(size=3), rng.normal(size=(4, 3)), rng.normal(size=(4, 2)),
              what="attend")


def _check_query(student, q, K, V, chapter, name, source):
    alpha, output = student.attend(np.array(q), np.array(K), np.array(V))
    raw = np.array(K) @ np.array(q)
    mistake = scale_mistake(alpha, raw, len(q), n_keys=len(K))
    close(alpha, chapter["alpha"], f"alpha for {name}", source=source,
          mistakes=[(*mistake, alpha)] if mistake else [("softmax-wrong-axis", ONE_AXIS, np.ones(len(K))),
                                                        *([("hard-coded-chapter", HARD_CODED, alpha)]
                                                          if _written_in(student) else [])])
    close(output, chapter["output"], f"output for {name}", source=source,
          mistakes=[("attend-output-transposed", "the output should be alpha @ V (weights times values), not V @ alpha",
                     np.array(V) @ np.array(chapter["alpha"]))])
    got = student.entropy_bits(np.array(chapter["alpha"]))
    close(got, chapter["entropy_bits"], f"entropy of alpha for {name}", source=source,
          mistakes=entropy_mistake(got, chapter["entropy_bits"], len(chapter["alpha"])) if np.ndim(got) == 0 else [])


@weight(3)
def test_chapter_one_query(student):
    """the chapter's query 'who' against 'is', 'the', 'best': weights 0.3369, 0.3019, 0.3611, entropy 1.5811 bits"""
    _check_query(student, ONE["query"], ONE["keys"], ONE["values"], ONE, "the query 'who'", "the notebook's table")


SELECTING = {"animal": "the animal query puts 85% of its weight on 'dog'",
             "verb": "the verb query puts 83% of its weight on 'barked'",
             "undecided": "the undecided query spreads its weight evenly over the three keys, 1.585 bits"}


@pytest.mark.parametrize("case", list(SELECTING.values()), ids=list(SELECTING))
def test_chapter_selecting_queries(student, case):
    """the chapter's selecting queries: {case}"""
    query = SELECT["queries"][list(SELECTING.values()).index(case)]
    _check_query(student, query["query"], SELECT["keys"], SELECT["values"], query, query["name"],
                 "the chapter's selecting queries")
