"""Failures that show their own cause: numpy's shape errors in the student's code, and ``~`` on a
mask that is not boolean.

The process that ran the student's code names the cause of an exception it caught, one
word of the closed list below, decided on the exception object where it was raised; the
check that receives it takes the words a student reads from here. The cause travels as
data beside the error's message, and a message is never read to find one. Every failure,
a check's or the student's process's, reads as :func:`said` puts it.
"""

# cause -> (mistake id, the likely mistake in words)
DIAGNOSES = {
    "broadcast": ("shapes-need-keepdims", "the shapes do not line up: a max or a sum over an axis needs "
                                          "keepdims=True to broadcast back against the array"),
    "matmul": ("matmul-shapes", "the shapes of a matrix product do not line up: the heads go side by side "
                                "(along axis 1, the columns), and x's rows are the tokens"),
    "invert": ("mask-not-boolean", "~ (not) was applied to an array that is not boolean: a mask made by "
                                   "np.tril(np.ones(...)) holds floats; make it with dtype=bool, or compare"),
}


def of(exc: BaseException) -> str | None:
    """The cause of ``exc`` when it is one of numpy's shape errors or ``~`` on a non-boolean
    array, else None."""
    text = str(exc)
    if type(exc) is TypeError and text.startswith("ufunc 'invert' not supported for the input types"):
        return "invert"
    if type(exc) is not ValueError:
        return None
    if "could not be broadcast together" in text:
        return "broadcast"
    if "mismatch in its core dimension" in text:
        return "matmul"
    return None


def said(finding: str, diagnosis: str | None) -> str:
    """A failure as the student reads it: what came back, then the likely mistake."""
    return f"{finding.rstrip('.')}. Likely mistake: {diagnosis}." if diagnosis else finding


def diagnosis(cause: str | None) -> tuple[str | None, str | None]:
    """(mistake id, words) for a cause reported by the student's process; (None, None) for any other."""
    found = DIAGNOSES.get(cause or "")
    return found if found else (None, None)
