"""A part's result, reused when the same program is graded again in the same process.

What decides a part's verdict is its program (the cells the student's process runs, which other
parts' functions are stood in for, the given cells), the part's version (its suites, points,
the reference and the limits: :func:`autograder.grade.versions.suite_versions`), the grader's
version and the sandbox it runs in. The hidden checks' inputs are seeded, so the same program
meets the same numbers and gets the same verdict. A batch grades one program many times over:
a part copied from a classmate or the chapter, a part left as the reference's beside a mistake
in another (then graded with the reference standing in for the broken one, tens of thousands of
calls), the catalogues' cases. After the first, each takes the first's result.

A result in which the student's process died or ran out of time is never kept (the machine had a
say: its load, its memory), nor is a grader failure (it raises). Code that draws its own random
numbers gets one draw for all its copies. This process's memory holds the results: a batch's
workers each keep their own, and `course grade --force` starts new ones. Where
``$COURSE_GRADE_CACHE`` names a folder, each result is also kept there, one file a key, for every
process that has it set: the repository's tests set one for each run (tests/conftest.py), so the
same notebooks graded by many test files are graded once. Only the grading account may be able to
write there: a result read from it is believed.
"""

import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata

from autograder.course.config import Assignment, Course, Part
from autograder.grade.versions import grader_version, suite_versions
from autograder.records.results import Check, PartResult
from selfcheck.launch import Jail
from selfcheck.program import Program

KEPT = 1_000                     # results one process keeps at most (tens of kB each)
_KEPT: dict[str, PartResult] = {}
STORE = "COURSE_GRADE_CACHE"      # the variable naming a folder of results shared by processes


def key(course: Course, assignment: Assignment, part: Part, prog: Program, jail: Jail, public_only: bool) -> str:
    """Everything the verdict depends on, hashed."""
    sandbox = [type(jail).__qualname__, sorted((k, str(v)) for k, v in vars(jail).items()), os.geteuid(),
               sys.version, metadata.version("numpy")]     # what the student's process runs on, as installed now
    blob = json.dumps([grader_version(), suite_versions(course, assignment.id)[part.id], part.id,
                       dataclasses.asdict(prog), sandbox, public_only, os.environ.get("TINYSHAKESPEARE")],
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _stored(found: str) -> PartResult | None:
    """The result a process kept in ``$COURSE_GRADE_CACHE`` under ``found``, or None."""
    folder = os.environ.get(STORE)
    if not folder:
        return None
    try:
        path = os.path.join(folder, f"{found}.json")
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        with contextlib.suppress(OSError):
            os.utime(path)          # read: kept from pruning (:func:`prune`)
        return PartResult(**{**data, "checks": [Check(**c) for c in data["checks"]]})
    except (OSError, ValueError, TypeError, KeyError):      # none, unreadable, or of another version
        return None


def _store(found: str, result: PartResult) -> None:
    """Keep ``result`` in ``$COURSE_GRADE_CACHE`` too, written whole or not at all (best effort)."""
    folder = os.environ.get(STORE)
    if not folder:
        return
    path = os.path.join(folder, f"{found}.json")
    with contextlib.suppress(OSError):
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".part", encoding="utf-8") as fh:
            json.dump(dataclasses.asdict(result), fh)
        os.replace(fh.name, path)


def prune(folder: str, days: float) -> None:
    """Remove the results in ``folder`` not read or written for ``days``: a folder kept from run to
    run gathers a set for every version of the grader."""
    cutoff = time.time() - days * 86400
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)


def graded(found: str, grade: Callable[[], tuple[PartResult, bool]]) -> PartResult:
    """The result kept under ``found``, or ``grade()``'s: (result, whether it may be reused)."""
    started = time.monotonic()
    kept = _KEPT.get(found) or _stored(found)
    if kept is not None:
        result = copy.deepcopy(kept)
        result.seconds = round(time.monotonic() - started, 2)      # what this grading cost
        if len(_KEPT) < KEPT:
            _KEPT[found] = kept
        return result
    result, reusable = grade()
    if reusable:
        if len(_KEPT) < KEPT:
            _KEPT[found] = copy.deepcopy(result)
        _store(found, result)
    return result
