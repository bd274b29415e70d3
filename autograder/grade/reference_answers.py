"""The reference solution's answers, computed once per grading worker rather than once per student,
and its long ones (the training runs) once per machine.

The suites give every student the same inputs (their seeds are fixed, and their modules are
loaded afresh for each student), so the reference's answer to a call is the same each time: a
worker keeps it. Only calls on plain data are kept (numbers, strings, arrays and lists, tuples
and dicts of them), only answers that are plain data, and never for a function seen to change
its arguments (its effect would be lost). Each caller gets a copy of its own.
"""

import copy
import functools
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)


def _plain(value: object, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype != object
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def remembered(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` answering a call it has answered before from memory."""
    answers: dict[bytes, object] = {}
    changes_its_arguments = False

    @functools.wraps(fn)
    def call(*args, **kwargs):
        nonlocal changes_its_arguments
        if changes_its_arguments or not _plain((args, kwargs)):
            return fn(*args, **kwargs)
        key = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        if key not in answers:
            value = fn(*args, **kwargs)
            if pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL) != key:
                changes_its_arguments = True
                return value
            if not _plain(value):
                return value
            answers[key] = copy.deepcopy(value)
            return value
        return copy.deepcopy(answers[key])
    return call


def cache_folder() -> str:
    """Where answers kept across batches lie: the grader's own, never inside a sandbox."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "attention-course", "reference-answers")


def file_digest(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def kept(what: object, depends_on: list[str], compute: Callable[[], Any]) -> Any:
    """``compute()`` (a JSON answer) once per machine for ``what`` (plain data) as long as the
    files in ``depends_on`` (and numpy's version) are unchanged; a kept answer that cannot be
    read is computed again."""
    key = json.dumps([what, [file_digest(p) for p in depends_on], np.__version__], sort_keys=True, default=str)
    path = os.path.join(cache_folder(), hashlib.sha256(key.encode()).hexdigest() + ".json")
    try:
        with open(path) as fh:
            found = json.load(fh)
        if found.get("key") == key:
            return found["value"]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    value = compute()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".part")
        with os.fdopen(fd, "w") as fh:
            json.dump({"key": key, "value": value}, fh)
        os.replace(temporary, path)
    except OSError:
        pass            # not kept: computed again next time
    return value
