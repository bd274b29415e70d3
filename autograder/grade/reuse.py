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
numbers gets one draw for all its copies. Only this process's memory holds the results: a batch's
workers each keep their own, and `course grade --force` starts new ones.
"""

import copy
import dataclasses
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from importlib import metadata

from autograder.course.config import Assignment, Course, Part
from autograder.grade.versions import grader_version, suite_versions
from autograder.records.results import PartResult
from selfcheck.launch import Jail
from selfcheck.program import Program

KEPT = 1_000                     # results one process keeps at most (tens of kB each)
_KEPT: dict[str, PartResult] = {}


def key(course: Course, assignment: Assignment, part: Part, prog: Program, jail: Jail, public_only: bool) -> str:
    """Everything the verdict depends on, hashed."""
    sandbox = [type(jail).__qualname__, sorted((k, str(v)) for k, v in vars(jail).items()), os.geteuid(),
               sys.version, metadata.version("numpy")]     # what the student's process runs on, as installed now
    blob = json.dumps([grader_version(), suite_versions(course, assignment.id)[part.id], part.id,
                       dataclasses.asdict(prog), sandbox, public_only, os.environ.get("TINYSHAKESPEARE")],
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def graded(found: str, grade: Callable[[], tuple[PartResult, bool]]) -> PartResult:
    """The result kept under ``found``, or ``grade()``'s: (result, whether it may be reused)."""
    started = time.monotonic()
    if found in _KEPT:
        result = copy.deepcopy(_KEPT[found])
        result.seconds = round(time.monotonic() - started, 2)      # what this grading cost
        return result
    result, reusable = grade()
    if reusable and len(_KEPT) < KEPT:
        _KEPT[found] = copy.deepcopy(result)
    return result
