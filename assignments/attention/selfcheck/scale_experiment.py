"""The scale experiment's facts as the notebook states them, judged one way at every seed.

The public checks judge a student's ``scale_experiment`` at seed 0 and the
hidden ones at seeds nobody can predict, with these same functions. Each range
is at least five standard deviations of the trial-to-trial spread wide
(measured over 3,000 seeds), so a correct experiment with any order of draws
passes; each hint is given only when the numbers show that mistake.
"""

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from selfcheck.checks import CheckFailed, as_array, fmt, that

COLUMNS = ("d_k", "sd", "entropy_raw", "entropy_scaled", "max_alpha_raw")
NATS = math.log(2)      # an entropy in nats is the entropy in bits times ln 2


def columns(result: Any, n: int) -> dict[str, np.ndarray]:
    """The five columns as arrays of length ``n``, or a failure saying what is missing."""
    that(isinstance(result, dict), f"scale_experiment should return a dict of columns, got {fmt(result)}")
    missing = [k for k in COLUMNS if k not in result]
    that(not missing, f"scale_experiment's result has no {', '.join(map(repr, missing))} "
                      f"(expected the keys {', '.join(COLUMNS)})")
    out: dict[str, np.ndarray] = {}
    for key in COLUMNS:
        out[key] = as_array(result[key], f"scale_experiment's result[{key!r}]")
        that(out[key].shape == (n,), f"result[{key!r}] should hold one number per d_k (shape ({n},)), "
                                     f"got shape {out[key].shape}")
    return out


def within(value: float, low: float, high: float, what: str,
           hints: Iterable[tuple[bool, str, str]] = ()) -> None:
    if low <= value <= high:
        return
    text = f"{what}: expected between {low:g} and {high:g}, got {value:.4f}."
    raise CheckFailed(text, *next(((hint, key) for condition, key, hint in hints if condition), ()))


def _in_nats(raw, scaled):
    return 1.60 * NATS <= raw[0] <= 2.10 * NATS and all(2.35 * NATS <= s <= 2.66 * NATS for s in scaled)


def entropy(r: dict[str, np.ndarray]) -> None:
    """Raw entropy collapses (1.78 bits at d_k = 4, 0.13 at 1024); scaled stays near 2.48 (d_k 4, 64, 1024)."""
    raw, scaled = r["entropy_raw"], r["entropy_scaled"]
    swapped = scaled[2] < 1.0 and raw[2] > 2.0
    nats = (_in_nats(raw, scaled), "experiment-entropy-in-nats", "the entropies are in nats, not bits: entropy_bits needs log2, not the "
                                   "natural log")
    within(raw[0], 1.60, 2.10, "mean raw entropy at d_k = 4 (chapter: 1.7771 bits)",
           hints=[nats, (swapped, "experiment-columns-swapped", "the raw and scaled columns are swapped"),
                  (raw[0] > 2.1 and raw[2] > 1.0, "experiment-raw-scaled", "the 'raw' scores were scaled; raw means softmax(K @ q) as it is")])
    within(raw[2], 0.01, 0.21, "mean raw entropy at d_k = 1024 (chapter: 0.1333 bits)",
           hints=[(swapped, "experiment-columns-swapped", "the raw and scaled columns are swapped"),
                  (raw[2] > 1.0, "experiment-raw-scaled", "the 'raw' scores were scaled; raw means softmax(K @ q) as it is")])
    that(raw[0] > raw[1] > raw[2], f"the raw entropy should fall as d_k grows (4, 64, 1024), got {fmt(raw)}")
    for d, value in zip((4, 64, 1024), scaled):
        within(value, 2.35, 2.66, f"mean scaled entropy at d_k = {d} (chapter: 2.46 to 2.50 bits at every d_k)",
               hints=[nats, (swapped, "experiment-columns-swapped", "the raw and scaled columns are swapped"),
                      (value < 2.35 and scaled[2] < scaled[0] - 0.3, "experiment-scaled-not-scaled",
                       "the scaled scores were not divided by sqrt(d_k) (or by something that does not "
                       "grow like it, such as sqrt(n_keys)): the entropy still falls as d_k grows"),
                      (value > 2.66, "experiment-scaled-too-much", "the scores were divided by more than sqrt(d_k) (by d_k?): the weights "
                                     "flatten toward uniform, 3 bits")])


def largest_weight(r: dict[str, np.ndarray]) -> None:
    """The largest raw weight grows toward 1 (0.55 at d_k = 4, 0.96 at 1024; d_k 4, 64, 1024)."""
    top = r["max_alpha_raw"]
    hint = [(top[2] < 0.5, "experiment-top-weight-scaled", "the largest weight was taken from the scaled softmax; this column is the raw one")]
    within(top[0], 0.45, 0.62, "mean largest raw weight at d_k = 4 (chapter: 0.5492)", hints=hint)
    within(top[2], 0.93, 1.0, "mean largest raw weight at d_k = 1024 (chapter: 0.9611)", hints=hint)


def _two_key_hints(two: float) -> list[tuple[bool, str, str]]:
    """What the spread with two keys points to: each way of measuring it gives its own number there
    (with eight keys, ddof=1 and pooling all trials give nearly the same one)."""
    return [(0.70 <= two <= 0.84, "experiment-std-ddof",
             f"the standard deviation used ddof=1 (with 2 keys it came out {two:.2f}, sqrt(2) times the "
             "0.55 of numpy's default); the experiment takes the population standard deviation, s.std()"),
            (0.93 <= two <= 1.07, "experiment-spread-pooled",
             f"the spread was measured over all trials' scores together (with 2 keys it came out {two:.2f}, "
             "where each trial's own s.std() averages 0.55); take s.std() of each trial's scores and average those"),
            (0.41 <= two <= 0.49, "experiment-spread-median",
             f"the trials' spreads were combined with the median (with 2 keys it came out {two:.2f}, where their "
             "mean is 0.55); average them with np.mean")]


def spread(r: dict[str, np.ndarray], d_values: Sequence[int], two_keys: dict[str, np.ndarray]) -> None:
    """The spread of q.k is about 0.90 sqrt(d_k) (0.88 to 0.91 in the chapter); ``two_keys`` is a run with
    n_keys=2 at d_k = 16, where each trial's population sd averages about 0.55 sqrt(d_k)."""
    ratio = r["sd"] / np.sqrt(np.asarray(d_values, dtype=float))
    mean = float(np.mean(ratio))
    two = float(two_keys["sd"][0]) / 4.0
    within(mean, 0.86, 0.94, f"mean of sd / sqrt(d_k) over d_k = {', '.join(map(str, d_values))} "
                             "(chapter: 0.900 and 0.905)",
           hints=[(abs(ratio[-1] - ratio[0]) > 0.3 or mean < 0.2, "experiment-spread-of-scaled",
                   "sd should be the spread of the raw scores K @ q, which grows like sqrt(d_k) "
                   "(the spread of the scaled scores stays near 0.9)")] + _two_key_hints(two))
    within(two, 0.51, 0.59, "mean of sd / sqrt(d_k) with n_keys=2 at d_k = 16 (each trial's s.std() of its two "
                            "scores: about 0.55)", hints=_two_key_hints(two))


def at_most_log2(value: float, n_keys: int, what: str) -> None:
    that(value <= math.log2(n_keys) + 1e-9,
         f"{what}: {n_keys} keys have at most log2({n_keys}) = {math.log2(n_keys):g} bits, got {value:.4f}",
         "the number of keys is fixed at 8 instead of n_keys", "experiment-fixed-keys")
