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
    "matmul": ("matmul-shapes", "the shapes of a matrix product do not line up: in a @ b, a's last axis must be "
                                "as long as b's first (of its last two); check which operand comes first and "
                                "which one is transposed"),
    "invert": ("mask-not-boolean", "~ (not) was applied to an array that is not boolean: a mask made by "
                                   "np.tril(np.ones(...)) holds floats; make it with dtype=bool, or compare"),
}
# a matrix product that failed inside one of the graded functions: what its products are
MATMUL_IN = {
    "attend": "the scores are K @ q (one per key) and the output alpha @ V (the weights first, mixing the rows "
              "of V), not V @ alpha",
    "project_qkv": "the tokens are the rows of x, so Q = x @ W_q with W_q as it is given, (n, d_model) @ "
                   "(d_model, d_k): not x @ W_q.T and not W_q @ x",
    "causal_attention": "the scores are Q @ K^T, (n, d_k) @ (d_k, n) (K.T reverses every axis of an array with "
                        "more than two: np.swapaxes(K, -1, -2) swaps the last two), and the output is weights @ V, "
                        "(n, n) @ (n, d_v)",
    "multi_head_attention": "the heads' outputs go side by side, np.concatenate(outputs, axis=-1), one row per "
                            "token and h x d_v columns, which is what W_o's rows expect",
    "forward": "the scores are q @ k.transpose(-2, -1), (B, T, E) @ (B, E, T), and the output weights @ v, "
               "(B, T, T) @ (B, T, E), before `out`",
}
for _name, _words in MATMUL_IN.items():
    DIAGNOSES[f"matmul-in-{_name}"] = ("matmul-shapes", f"the shapes of a matrix product in {_name} do not line "
                                                        f"up: {_words}")


def _raised_in(exc: BaseException) -> str | None:
    """The innermost graded function (one of MATMUL_IN) that ``exc`` passed through, from its traceback;
    the course's framework, whose Linear has a forward too, does not count."""
    found, tb = None, exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in MATMUL_IN and not code.co_filename.endswith("framework.py"):
            found = code.co_name
        tb = tb.tb_next
    return found


def of(exc: BaseException) -> str | None:
    """The cause of ``exc`` when it is one of numpy's shape errors or ``~`` on a non-boolean
    array, else None; a matrix product names the graded function it failed in."""
    text = str(exc)
    if type(exc) is TypeError and text.startswith("ufunc 'invert' not supported for the input types"):
        return "invert"
    if type(exc) is not ValueError:
        return None
    if "could not be broadcast together" in text:
        return "broadcast"
    if "mismatch in its core dimension" in text:
        where = _raised_in(exc)
        return f"matmul-in-{where}" if where else "matmul"
    return None


def said(finding: str, diagnosis: str | None) -> str:
    """A failure as the student reads it: what came back, then the likely mistake."""
    return f"{finding.rstrip('.')}. Likely mistake: {diagnosis}." if diagnosis else finding


def diagnosis(cause: str | None) -> tuple[str | None, str | None]:
    """(mistake id, words) for a cause reported by the student's process; (None, None) for any other."""
    found = DIAGNOSES.get(cause or "")
    return found if found else (None, None)
