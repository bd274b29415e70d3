"""What a result was graded with, and whether it still holds.

Every record carries the grader's version (a hash of the code that turns a notebook into a
verdict) and each part's version (a hash of everything else that decides its score). A
submission is graded again when its notebook, the grader or a part's version changed since its
last result (:func:`stale`); a Dask worker grades only when its versions are the client's.
"""

import dataclasses
import glob
import hashlib
import json
import os

import selfcheck
from autograder.course.config import Assignment, Course
from autograder.grade import handin
from autograder.records.results import Submission
from selfcheck.program import NotebookError, program, read_notebook

GRADER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # autograder/
# selfcheck modules that never decide a verdict: the notebooks' pictures and the plugin of the
# student's own `pytest`; changing them must not mark every result stale
STUDENT_SIDE = ("plots.py", "plugin.py")
# the grader's own modules that do, below autograder/: reading a hand-in, grading it, a part's
# suites, the sandbox
GRADER = tuple(os.path.join(*p) for p in (("grade", "handin.py"), ("grade", "grading.py"), ("grade", "submission.py"),
                                          ("grade", "suites.py"), ("sandbox", "*.py")))


def file_hash(*paths: str) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()[:12]


def support_files(course: Course, assignment: Assignment) -> list[str]:
    """The released files a notebook imports, such as ``framework.py`` (never the public tests,
    never the kit's ``conftest.py``): each part's process gets them, and they decide its score."""
    release = course.release(assignment)
    return sorted(os.path.join(release, name) for name in os.listdir(release)
                  if os.path.isfile(os.path.join(release, name)) and name.endswith(".py")
                  and not name.startswith("test_") and name != "conftest.py")


def grader_version() -> str:
    """A hash of the code that turns a notebook into a verdict."""
    kit = os.path.dirname(os.path.abspath(selfcheck.__file__))
    files = sorted(path for path in glob.glob(os.path.join(kit, "**", "*.py"), recursive=True)
                   if os.path.relpath(path, kit) not in STUDENT_SIDE)
    return file_hash(*files, *matching(GRADER_ROOT, GRADER))


def matching(root: str, patterns: tuple[str, ...]) -> list[str]:
    """The files below ``root`` each pattern names, in order; a pattern that names none is a
    file moved without its hash list (it would stop changing the hash), so it raises."""
    files = []
    for pattern in patterns:
        found = sorted(f for f in glob.glob(os.path.join(root, pattern)) if os.path.isfile(f))
        if not found:
            raise FileNotFoundError(f"{pattern}: no such file below {root}")
        files += found
    return files


def _inputs(course: Course, assignment: Assignment) -> list[str]:
    """Every file :func:`suite_versions` reads for ``assignment``."""
    files = [course.source(assignment, assignment.notebook), course.release(assignment, assignment.notebook),
             course.data("chapter_numbers.yaml"), *support_files(course, assignment)]
    for part in assignment.parts:
        files += [os.path.join(course.root, part.public), os.path.join(course.root, part.hidden)]
    return files


_KNOWN: dict[tuple, dict[str, str]] = {}


def suite_versions(course: Course, assignment_id: str) -> dict[str, str]:
    """part -> the version of everything that decides its score, as it is now.

    Its public and hidden suites, its points and cells, the versions of the parts
    it uses (whether they pass decides whose code of theirs it runs), the course's
    limits, the chapter's numbers, and the assignment's code that runs beside the
    student's: the reference solution (the stand-ins, and what hidden checks
    compare with), the released notebook's given cells and its support files. A
    change to any of them marks earlier results of the part stale; notebook prose
    does not. Worked out once per process while none of those files changes (a batch
    asks for every submission, a Dask worker for every task).
    """
    assignment = course.assignment(assignment_id)
    stats = []
    for path in _inputs(course, assignment):
        info = os.stat(path)
        stats.append((path, info.st_mtime_ns, info.st_size, info.st_ino))
    key = (assignment_id, dataclasses.astuple(course.limits), repr(assignment), tuple(stats))
    if key not in _KNOWN:
        _KNOWN[key] = _suite_versions(course, assignment)
    return dict(_KNOWN[key])


def _suite_versions(course: Course, assignment: Assignment) -> dict[str, str]:
    reference = program(read_notebook(course.source(assignment, assignment.notebook))).cells
    given = program(read_notebook(course.release(assignment, assignment.notebook))).cells
    support = support_files(course, assignment)
    shared = json.dumps({"limits": dataclasses.astuple(course.limits),
                         "reference": reference, "given": given,
                         "support": file_hash(*support) if support else None,
                         "numbers": file_hash(course.data("chapter_numbers.yaml"))})
    versions: dict[str, str] = {}
    for part in assignment.parts:
        own = json.dumps({"suites": file_hash(os.path.join(course.root, part.public),
                                              os.path.join(course.root, part.hidden)),
                          "points": part.points, "cells": part.cells,
                          "uses": {used: versions.get(used) for used in part.uses}})
        versions[part.id] = hashlib.sha256((shared + own).encode()).hexdigest()[:12]
    return versions


def file_sha256(path: str) -> str | None:
    """The sha256 of a submitted notebook as the grader reads it, or None when it cannot."""
    try:
        return hashlib.sha256(handin.read_submission(path)).hexdigest()
    except NotebookError:
        return None


STAGED = ".course-staged.json"   # beside a copy staged for nbgrader: the hand-in's sha256, and the copy's


def staged_sha256(path: str) -> str | None:
    """The sha256 of the hand-in that the copy at ``path`` was staged from for nbgrader
    (:func:`autograder.nbgrader.staging.stage` rebuilds a hand-in, so its bytes differ), while
    the copy is as staged; None for any other file."""
    try:
        with open(os.path.join(os.path.dirname(path), STAGED), encoding="utf-8") as fh:
            kept = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or not isinstance(kept.get("handin"), str) or kept.get("copy") != file_sha256(path):
        return None
    return kept["handin"]


def stale(course: Course, record: Submission | None, path: str, grader: str | None = None,
          sha256: str | None = None, suites: dict[str, dict[str, str]] | None = None) -> str | None:
    """None when ``record`` is a finished grading of the notebook at ``path`` (whose sha256 is
    ``sha256`` when given) by today's grader, suites, points and limits; otherwise the reason it
    must be graded (again). ``suites``: each assignment's :func:`suite_versions`, from a caller that
    goes over many hand-ins and works them out once."""
    if record is None:
        return "not graded yet"
    if record.grader_error:
        return "the grader failed on it last time"
    if record.sha256 != (sha256 or file_sha256(path)):
        return "the notebook changed"
    if record.grader != (grader or grader_version()):
        return "the grader changed"
    if record.suites != ((suites or {}).get(record.assignment) or suite_versions(course, record.assignment)):
        points = {p.id: p.points for p in course.assignment(record.assignment).parts}
        moved = [f"{p.part} {p.max_score:g} -> {points[p.part]:g}"
                 for p in record.parts if p.part in points and p.max_score != points[p.part]]
        if moved:
            return "points changed (" + ", ".join(moved) + ")"
        return "what decides a part's score changed (its suites, the limits or the reference)"
    return None
