"""Assertions that teach: each failure names the part, what was expected, what came back.

Every helper raises :class:`CheckFailed` (an ``AssertionError``) with a message
written for the student: the check in words, the expected value when it is a
chapter number (never when it comes from a hidden input), what came back, and
the likely mistake when the answer matches a known wrong implementation. The
likely mistake travels as data beside the words (``diagnosis`` and the catalogue's
``mistake`` id), so nothing downstream ever reads it back out of a message.
"""

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from selfcheck.causes import said

EPS32 = float(np.finfo(np.float32).eps)     # 1.19e-7: the precision a float32 result has
FLOAT32_ULPS = 64       # measured: see `tolerance`
RTOL = 1e-9             # float64 code, any order of summation
ATOL = 1e-12


class CheckFailed(AssertionError):
    """A check that ran and did not pass: ``finding`` says what came back; ``diagnosis`` (words) and
    ``mistake`` (the id under which the catalogue of mistakes lists it) name the mistake the answer
    shows, when it shows one."""

    def __init__(self, finding: str, diagnosis: str | None = None, mistake: str | None = None) -> None:
        super().__init__(said(finding, diagnosis))
        self.finding, self.diagnosis, self.mistake = finding, diagnosis, mistake


def label(doc: str | None, params: dict | None = None) -> str:
    """What a check checks, in words: the first line of its docstring, with a parametrised case's
    parameters filled in (``{case}``), so that every case of one test reads as its own check."""
    first = (doc or "").strip().splitlines()[0] if (doc or "").strip() else ""
    return first.format(**params) if params and "{" in first else first


def weight(n: float) -> Callable[[Callable], Callable]:
    """Decorator: this check counts ``n`` times in its part's partial credit."""
    def mark(fn: Callable) -> Callable:
        setattr(fn, "weight", n)
        return fn
    return mark


def _number(x, digits):
    if not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    if digits == 0:                                   # counts and booleans: 44,502,016
        return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 10.0 ** -digits):     # -8.556e+08, not -855612667.0000
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}f}"


def fmt(value: Any, digits: int = 4, limit: int = 12, start: int = 0) -> str:
    """A short, readable rendering of a number or an array (1.2e+09, not 1234567890.0000); a long
    array shows its shape and six entries from flat index ``start`` on."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        text = repr(value)
        return text if len(text) < 120 else text[:117] + "..."
    if arr.ndim == 0:
        return _number(float(arr), digits)
    if arr.size > limit:      # a long dump helps nobody: the shape and where it starts (or differs)
        head = ", ".join(_number(x, digits) for x in arr.ravel()[start:start + 6])
        shape = tuple(int(n) for n in arr.shape)
        if not start:
            return f"an array of shape {shape} starting [{head}, ...]"
        where = ", ".join(str(int(i)) for i in np.unravel_index(start, arr.shape))
        return f"an array of shape {shape} reading [{head}, ...] from index [{where}]"
    text = np.array2string(arr, separator=", ", max_line_width=10**6,
                           formatter={"float_kind": lambda x: _number(x, digits)})
    return text.replace("\n", " ")


def as_array(got: Any, what: str) -> np.ndarray:
    """The answer as a float array, or a failure that says what came back instead."""
    if got is None:
        raise CheckFailed(f"{what}: nothing came back (None). Is a `return` missing?")
    try:
        return np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what}: expected numbers, got {fmt(got)}") from None


def tolerance(expected: Any, *, scale: float | None = None, rtol: float = RTOL, atol: float = ATOL) -> float:
    """How far a correct answer may be from ``expected``, entry by entry.

    |got - expected| <= rtol |expected| + atol + FLOAT32_ULPS * EPS32 * scale.
    ``scale`` is the magnitude that bounds the rounding: the largest |expected|
    by default; a check passes a larger one when the rounding comes from larger
    inputs (a float32 score near 2000 is known only to 1e-4, and so is the
    softmax of such scores). FLOAT32_ULPS was measured: correct code cast to
    float32 on entry (each catalogue's float32 variant), on the hidden suites'
    random inputs drawn from 20 to 100 seeds, came within 24 of them at worst;
    every catalogued mistake is far outside.
    """
    exp = np.asarray(expected, dtype=float)
    finite = np.abs(exp[np.isfinite(exp)])
    if scale is None:
        scale = float(finite.max()) if finite.size else 0.0
    return rtol * np.abs(exp) + atol + FLOAT32_ULPS * EPS32 * float(scale)


def _within(got, expected, **tol):
    exp = np.asarray(expected, dtype=float)
    if got.shape != exp.shape:
        return False
    same_inf = np.isinf(exp) & (got == exp)
    with np.errstate(all="ignore"):
        return bool(np.all(same_inf | (np.abs(got - exp) <= tolerance(exp, **tol))))


def _first_difference(got, expected, **tol):
    """The flat index of the first entry outside the tolerance (0 when there is none)."""
    with np.errstate(all="ignore"):
        same = (np.isinf(expected) & (got == expected)) | (np.abs(got - expected) <= tolerance(expected, **tol))
    wrong = np.flatnonzero(~same)
    return int(wrong[0]) if wrong.size else 0


def _matches(got, candidate, **tol):
    try:
        cand = np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    if cand.shape != got.shape:
        return False
    if np.isnan(cand).any() or np.isnan(got).any():
        return bool(np.array_equal(np.isnan(cand), np.isnan(got))) and _within(
            np.nan_to_num(got), np.nan_to_num(cand), **tol)
    return _within(got, cand, **tol)


def close(got: Any, expected: Any, what: str, *, source: str | None = None, reveal: bool = True,
          mistakes: Sequence[tuple] = (), scale: float | None = None, rtol: float = RTOL,
          atol: float = ATOL) -> np.ndarray:
    """``got`` equals ``expected`` within :func:`tolerance`, with the same shape.

    ``source`` names where the expected value comes from (e.g. "chapter, step 1");
    ``reveal=False`` keeps a hidden input's expected value out of the message;
    ``mistakes`` is a list of ``(mistake id, description, value a mistaken version
    returns)``: those the answer matches (same tolerance) are named, and only then;
    when several match, the input cannot tell them apart and all are named.
    """
    arr = as_array(got, what)
    tol: dict[str, Any] = {"scale": scale, "rtol": rtol, "atol": atol}
    if _within(arr, expected, **tol):
        return arr
    exp = np.asarray(expected, dtype=float)
    start = _first_difference(arr, exp, **tol) if arr.shape == exp.shape else 0
    if reveal:
        wanted = f"expected {fmt(exp, start=start)}" + (f" ({source})" if source else "")
    else:
        wanted = "did not match the reference" + (f" ({source})" if source else "")
    parts = [f"{what}: {wanted}, got {fmt(arr, start=start)}."]
    if arr.shape != exp.shape:
        parts.append(f"The shape is {tuple(int(n) for n in arr.shape)}, expected "
                     f"{tuple(int(n) for n in exp.shape)}.")
    elif np.isnan(arr).any():
        parts.append("The answer contains nan.")
    elif reveal:      # a hidden expected value shows in any number made from it, even a difference
        with np.errstate(all="ignore"):
            err = float(np.nanmax(np.abs(arr - exp)))
        parts.append(f"Largest difference {fmt(err, 3)}, allowed {fmt(float(np.max(tolerance(exp, **tol))), 2)}.")
    named = list(dict.fromkeys((key, text) for key, text, value in mistakes if text and _matches(arr, value, **tol)))
    raise CheckFailed(" ".join(parts), "; or ".join(dict.fromkeys(text for _, text in named)) or None,
                      " or ".join(dict.fromkeys(key for key, _ in named)) or None)


def equal(got: Any, expected: Any, what: str, *, source: str | None = None, reveal: bool = True,
          mistakes: Sequence[tuple] = ()) -> None:
    """Exact equality, for integers, booleans and strings."""
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        same = np.shape(got) == np.shape(expected) and bool(np.all(np.asarray(got) == expected))
    else:
        same = bool(got == expected) and isinstance(got, bool) == isinstance(expected, bool)
    if same:
        return got
    wanted = (f"expected {fmt(expected, 0) if np.ndim(expected) else _plain(expected)}"
              if reveal else "did not match the reference")
    if source:
        wanted += f" ({source})"
    text = f"{what}: {wanted}, got {fmt(got, 0) if np.ndim(got) else _plain(got)}."
    named = [(key, description) for key, description, value in mistakes
             if value is not None and np.shape(got) == np.shape(value) and bool(np.all(np.asarray(got) == value))]
    raise CheckFailed(text, "; or ".join(dict.fromkeys(text for _, text in named)) or None,
                      " or ".join(dict.fromkeys(key for key, _ in named)) or None)


def _plain(value):
    """Whole numbers with thousands separators (44,502,016), anything else as Python shows it."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)) and float(value).is_integer() and abs(value) < 2**63:
        return f"{int(value):,}"
    return repr(value)


def that(condition: Any, message: str, diagnosis: str | None = None, mistake: str | None = None) -> None:
    """A property check: ``message`` says what should hold and what came back; ``diagnosis`` and
    ``mistake`` name the mistake that breaks it, when the check knows it."""
    if not condition:
        raise CheckFailed(message, diagnosis, mistake)


def implied_scale(weights: Any, raw_scores: Any) -> float | None:
    """What the raw scores were divided by, read back from softmax weights; None when unreadable.

    Within a row, log w_j - log w_k = (s_j - s_k) / scale for any two keys with
    weight. Only weights that really are such a softmax give a number; equal weights
    for scores that differ give infinity (the scores were multiplied by 0).
    """
    try:
        w = np.atleast_2d(np.asarray(weights, dtype=float))
        s = np.atleast_2d(np.asarray(raw_scores, dtype=float))
    except (TypeError, ValueError):
        return None
    if w.shape != s.shape:
        return None
    found = []
    with np.errstate(all="ignore"):
        for wr, sr in zip(w.reshape(-1, w.shape[-1]), s.reshape(-1, s.shape[-1])):
            keep = wr > 1e-3 * wr.max()    # tiny weights carry too few digits, in float32 above all
            if keep.sum() < 2:
                continue
            dl, ds = np.log(wr[keep]), sr[keep]
            dl, ds = dl - dl.mean(), ds - ds.mean()
            if np.abs(ds).max() < 1e-6:
                continue
            if np.abs(dl).max() < 1e-9:         # equal weights that sum to 1 for different scores: scale 0
                if abs(wr.sum() - 1) < 1e-6:
                    found.append(math.inf)
                continue
            scale = float(ds @ ds / (ds @ dl))
            if not np.isfinite(scale) or np.abs(dl - ds / scale).max() > 1e-3 * (1 + np.abs(dl).max()):
                return None
            found.append(scale)
    return statistics.median(found) if found else None     # np.median would import numpy.ma: 20 ms


def _the_scores_themselves(w: np.ndarray, s: np.ndarray) -> bool:
    """Every row of the weights ``w`` is its scores ``s`` times one number, the blocked ones (0 or not
    finite) aside: no softmax was taken."""
    rows = 0
    for wr, sr in zip(w.reshape(-1, w.shape[-1]), s.reshape(-1, s.shape[-1])):
        keep = np.isfinite(wr) & (wr != 0)
        if keep.sum() < 2 or np.ptp(sr[keep]) < 1e-9:
            continue
        c = float(wr[keep] @ sr[keep] / (sr[keep] @ sr[keep]))
        if not c or np.abs(wr[keep] - c * sr[keep]).max() > 1e-6 * np.abs(wr[keep]).max():
            return False
        rows += 1
    return rows > 0


def scale_mistake(weights: Any, raw_scores: Any, d_k: int, width: str = "d_k",
                  **others: int) -> tuple[str, str] | None:
    """The likely mistake when the weights show scores divided by something other than sqrt(d_k),
    or no softmax taken at all (the weights are the scores times a number).

    ``others`` names sizes a student may have used instead, for example
    ``n_tokens=5`` or ``d_model=4``; returns (mistake id, words), or None when the scale is right
    or unreadable.
    """
    try:
        w, s = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (weights, raw_scores))
    except (TypeError, ValueError):
        return None
    if w.shape == s.shape and _the_scores_themselves(w, s):
        return "no-softmax", ("the weights are the scores themselves (times a number), not their softmax: take the "
                              "softmax of the scaled scores, so each row is positive and sums to 1")
    found = implied_scale(weights, raw_scores)
    right = d_k ** 0.5
    if found is None or abs(found - right) <= 1e-3 * right:
        return None
    names = [(1.0, "not divided at all", "scores-not-scaled"),
             (float(d_k), f"divided by {width} = {d_k}", "scores-divided-by-width"),
             (2.0 / d_k, f"multiplied by {width} / 2 = {d_k / 2:g} ({width} ** 1 / 2 is ({width} ** 1) / 2)",
              "scores-scaled-wrongly"),
             (1.0 / right, f"multiplied by sqrt({width}) (divided by {width} ** -0.5) instead of divided by it",
              "scores-scaled-wrongly")]
    names += [(size ** 0.5, f"divided by sqrt({name.replace('_', ' ')}) = sqrt({size})", "scores-scaled-wrongly")
              for name, size in others.items()]
    named = ([("multiplied by 0 (a scale of 0), so every weight is the same", "scores-scaled-wrongly")]
             if math.isinf(found) else
             [(text, key) for value, text, key in names if abs(found - value) <= 1e-3 * value])
    what = "; or ".join(text for text, _ in named) if named else f"divided by {found:.4g}"
    key = " or ".join(dict.fromkeys(key for _, key in named)) or "scores-scaled-wrongly"
    return key, (f"the scores were {what}: divide them by the square root of the width {width}, "
                 f"sqrt({d_k}) = {right:.4g}")


ENTROPY_UNITS = (("entropy-in-nats", "natural log instead of log2 (that is nats, not bits)", math.log(2)),
                 ("entropy-log10", "log10 instead of log2", math.log10(2)),
                 ("entropy-sign", "the minus sign is missing", -1.0))


def entropy_mistake(got: Any, bits: float, n: int = 0) -> list[tuple]:
    """[(mistake id, words, ``got``)] when ``got`` is the entropy ``bits`` of ``n`` weights in another log's
    unit, with the sign lost, averaged over the weights or divided by its maximum, read from their ratio
    to a thousandth: an epsilon added inside the log moves it a little, and is named too."""
    try:
        value = float(got)
    except (TypeError, ValueError):
        return []
    ratio = value / bits if bits and math.isfinite(value) else math.nan
    sizes = [("entropy-averaged", f"the terms -p log2 p were averaged over the {n} weights, not summed", 1 / n),
             ("entropy-normalised", f"the entropy was divided by log2({n}), the most {n} weights can have: that is "
                                    "a share of the maximum, not bits", 1 / math.log2(n))] if n > 1 else []
    for key, words, factor in (*ENTROPY_UNITS, *sizes):
        if abs(ratio - factor) <= 1e-3 * abs(factor):
            if abs(ratio - factor) > 1e-7 * abs(factor):
                words += ", and a little off: something was added inside the log (an epsilon); leave the zero weights out instead"
            return [(key, words, value)]
    return []


def _same(sent, back):
    try:
        back = np.asarray(back, dtype=sent.dtype)
    except (TypeError, ValueError):
        return False
    return back.shape == sent.shape and np.array_equal(back, sent, equal_nan=sent.dtype.kind == "f")


def central_differences(values: Any, shapes: Any, eps: float) -> Any:
    """Numerical gradients from measured values: ``values`` holds, for each key of ``shapes`` and
    each flat index, f(+eps) then f(-eps), in that order (see the projection_removal probes)."""
    values = np.asarray(values, dtype=float)
    out, i = {}, 0
    for key, shape in shapes.items():
        n = int(np.prod(shape, dtype=np.int64))
        pairs = values[i:i + 2 * n].reshape(n, 2) if n else np.zeros((0, 2))
        out[key] = ((pairs[:, 0] - pairs[:, 1]) / (2 * eps)).reshape(shape)
        i += 2 * n
    return out


def gradient_mistake(none: Sequence[str]) -> tuple[str | None, str | None]:
    """(mistake id, words) for the parameters that got no gradient (their names, such as "out.weight"):
    one projection that takes no part in the output, or else a graph cut by leaving the framework."""
    owners = {key.split(".")[0] for key in none}
    name = owners.pop() if len(owners) == 1 else None
    if name and sorted(none) == [f"{name}.bias", f"{name}.weight"]:
        if name == "out":
            return "out-not-applied", "`out` is not applied last: output = out(weights v)"
        return f"{name}-unused", (f"the {name} projection takes no part in the output (no gradient reached it): "
                                  f"{name[0]} must be self.{name}(x) unless {name} is removed")
    return "graph-cut", ("the forward pass left the framework (numpy on .data, or a Tensor made from a numpy "
                         "array), which cuts the graph; every kept projection must take part in the output through "
                         "Tensor operations (@, .transpose, *, the mask and softmax layers)")


def unchanged(student: Any, name: str, *args: Any, what: str | None = None) -> Any:
    """Call ``name`` and check it left its array arguments as they were; returns its answer.

    The student's process sends back the arguments as they are after the call;
    they are compared here with what was sent."""
    got, after = student.probe("common", "call_keeping_arguments", name, *args)
    if not isinstance(after, list) or len(after) != len(args):
        raise CheckFailed(f"{what or name}: the call did not report its arguments back")
    if any(isinstance(a, np.ndarray) and not _same(a, b) for a, b in zip(args, after)):
        raise CheckFailed(f"{what or name}: the function changed its input array in place (for example "
                          "`z -= ...` where `z = z - z.max(...)` makes a new one).",
                          "the function changes an array it was given (in place); work on a copy", "in-place")
    return got


def arrays(student: Any, name: str, *args: Any, what: str, pair: bool = False) -> Any:
    """Call ``name`` with plain lists, as the notebooks allow, and check it returns a numpy array
    (with ``pair``, two of them); returns its answer. A call that fails is named a list problem
    only when the same call with arrays works."""
    from selfcheck.errors import StudentError
    try:
        got = getattr(student, name)(*args)
    except StudentError as exc:
        if exc.kind != "error" or exc.diagnosis:
            raise
        try:
            getattr(student, name)(*(np.asarray(a) for a in args))
        except StudentError:
            raise exc from None                 # it fails with arrays too: not about lists
        raise CheckFailed(f"{what}: the call with plain lists failed: {exc.message}",
                          f"{name} must accept anything np.asarray accepts: convert its inputs with np.asarray "
                          "first (a list has no @, .shape or .max)", "inputs-not-arrays") from None
    if pair:
        that(isinstance(got, (tuple, list)) and len(got) == 2, f"{what}: expected a pair, got {fmt(got)}")
    for value in (got if pair else (got,)):
        that(isinstance(value, np.ndarray), f"{what}: expected a numpy array, got a {type(value).__name__}",
             f"{name} must return numpy arrays (np.asarray(...) or numpy operations), not "
             f"{type(value).__name__}s", "returns-non-arrays")
    return got
