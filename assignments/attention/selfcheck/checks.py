"""Assertions that teach: each failure names the part, what was expected, what came back.

Every helper raises :class:`CheckFailed` (an ``AssertionError``) with a message
written for the student: the check in words, the expected value when it is a
chapter number (never when it comes from a hidden input), what came back, and
the likely mistake when the answer matches a known wrong implementation.
"""

import numpy as np

RTOL = 1e-5     # loose enough for float32 and any order of summation
ATOL = 1e-7


class CheckFailed(AssertionError):
    """A check that ran and did not pass."""


def weight(n):
    """Decorator: this check counts ``n`` times in its part's partial credit."""
    def mark(fn):
        fn.weight = n
        return fn
    return mark


def fmt(value, digits=4, limit=12):
    """A short, readable rendering of a number or an array."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        text = repr(value)
        return text if len(text) < 120 else text[:117] + "..."
    if arr.ndim == 0:
        return f"{float(arr):.{digits}f}"
    if arr.size > limit:      # a long dump helps nobody: the shape and where it starts
        head = ", ".join(f"{x:.{digits}f}" for x in arr.ravel()[:6])
        return f"an array of shape {tuple(int(n) for n in arr.shape)} starting [{head}, ...]"
    text = np.array2string(arr, separator=", ", max_line_width=10**6,
                           formatter={"float_kind": lambda x: f"{x:.{digits}f}"})
    return text.replace("\n", " ")


def as_array(got, what):
    """The answer as a float array, or a failure that says what came back instead."""
    if got is None:
        raise CheckFailed(f"{what}: nothing came back (None). Is a `return` missing?")
    try:
        return np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what}: expected numbers, got {fmt(got)}") from None


def _matches(got, candidate, rtol, atol):
    try:
        cand = np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return cand.shape == got.shape and np.allclose(got, cand, rtol=rtol, atol=atol, equal_nan=True)


def close(got, expected, what, *, source=None, reveal=True, mistakes=(), rtol=RTOL, atol=ATOL):
    """``got`` equals ``expected`` within tolerance, with the same shape.

    ``source`` names where the expected value comes from (e.g. "chapter, step 1");
    ``reveal=False`` keeps a hidden input's expected value out of the message;
    ``mistakes`` is a list of ``(description, value a mistaken version returns)``.
    """
    arr = as_array(got, what)
    exp = np.asarray(expected, dtype=float)
    if arr.shape == exp.shape and np.allclose(arr, exp, rtol=rtol, atol=atol, equal_nan=False):
        return arr
    if reveal:
        wanted = f"expected {fmt(exp)}" + (f" ({source})" if source else "")
    else:
        wanted = "did not match the reference" + (f" ({source})" if source else "")
    parts = [f"{what}: {wanted}, got {fmt(arr)}."]
    if arr.shape != exp.shape:
        parts.append(f"The shape is {arr.shape}, expected {exp.shape}.")
    elif np.isnan(arr).any():
        parts.append("The answer contains nan.")
    else:
        err = np.max(np.abs(arr - exp))
        parts.append(f"Largest difference {err:.3g} (tolerance {rtol:g} relative, {atol:g} absolute).")
    for description, value in mistakes:
        if _matches(arr, value, max(rtol, 1e-6), max(atol, 1e-9)):
            parts.append(f"Likely mistake: {description}.")
            break
    raise CheckFailed(" ".join(parts))


def equal(got, expected, what, *, source=None, reveal=True, mistakes=()):
    """Exact equality, for integers, booleans and strings."""
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        same = np.shape(got) == np.shape(expected) and bool(np.all(np.asarray(got) == expected))
    else:
        same = bool(got == expected) and isinstance(got, bool) == isinstance(expected, bool)
    if same:
        return got
    wanted = (f"expected {fmt(expected, 0) if np.ndim(expected) else expected!r}"
              if reveal else "did not match the reference")
    if source:
        wanted += f" ({source})"
    text = f"{what}: {wanted}, got {fmt(got, 0) if np.ndim(got) else got!r}."
    for description, value in mistakes:
        if np.shape(got) == np.shape(value) and bool(np.all(np.asarray(got) == value)):
            text += f" Likely mistake: {description}."
            break
    raise CheckFailed(text)


def that(condition, message):
    """A property check: ``message`` says what should hold and what came back."""
    if not condition:
        raise CheckFailed(message)


def _same(sent, back):
    try:
        back = np.asarray(back, dtype=sent.dtype)
    except (TypeError, ValueError):
        return False
    return back.shape == sent.shape and np.array_equal(back, sent, equal_nan=sent.dtype.kind == "f")


def central_differences(values, shapes, eps):
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


def unchanged(student, name, *args, what=None):
    """Call ``name`` and check it left its array arguments as they were; returns its answer.

    The student's process sends back the arguments as they are after the call;
    they are compared here with what was sent."""
    got, after = student.probe("common", "call_keeping_arguments", name, *args)
    if not isinstance(after, list) or len(after) != len(args):
        raise CheckFailed(f"{what or name}: the call did not report its arguments back")
    if any(isinstance(a, np.ndarray) and not _same(a, b) for a, b in zip(args, after)):
        raise CheckFailed(f"{what or name}: the function changed its input array in place; "
                          "work on a copy (for example `z = z - z.max(...)`, not `z -= ...`).")
    return got
