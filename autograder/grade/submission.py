"""One submission graded: each part of its notebook against the part's suites.

Each part runs in a fresh student process of its own, with the released notebook's locked cells
and the reference solution standing in for the other parts (:mod:`autograder.grade.suites`).
Every part ends with a score and a reason, whatever the notebook does.
"""

import hashlib
import os
import shutil
import tempfile

from autograder.course.config import Assignment, Course, Part
from autograder.grade import handin, suites
from autograder.grade.versions import grader_version, support_files
from autograder.records.results import NOT_ATTEMPTED, PartResult, Submission
from selfcheck.launch import Jail
from selfcheck.program import NotebookError, parse_notebook, program, read_notebook, solution_ids


def zero(part: Part, status: str, reason: str) -> PartResult:
    return PartResult(part.id, 0.0, part.points, status, reason)


def _support_files(course: Course, assignment: Assignment, workdir: str) -> None:
    """The released files a notebook imports (never the student's copies of them).

    They are public, so the folder is readable by everyone: the sandbox's
    unprivileged user binds them read-only into its scratch folder."""
    os.chmod(workdir, 0o755)
    for path in support_files(course, assignment):
        shutil.copy(path, workdir)


def not_this_assignment(nb: dict, release: dict) -> str | None:
    """None when ``nb`` is plausibly this assignment's notebook, else the reason it is not."""
    expected = set(solution_ids(release))
    found = set(solution_ids(nb)) & expected
    if expected and not found:
        return "this is not this assignment's notebook (none of its solution cells are in it)"
    return None


def not_attempted(nb: dict, release: dict, own: set[str], stand_ins: set[str]) -> bool:
    """True when grading a part would run exactly what the release runs: its cells as released
    and no cell of the student's own (a 0, and not a failure of the student's code)."""
    return (program(nb, release, own=own, stand_ins=stand_ins).cells
            == program(release, release, own=own, stand_ins=stand_ins).cells)


def grade_submission(course: Course, assignment_id: str, student_id: str, path: str, jail: Jail | None = None,
                     only: set[str] | None = None, passed: frozenset[str] = frozenset()) -> Submission:
    """The result record of one submission: every part scored (or the parts in ``only``), with reasons.
    ``passed``: parts left out of ``only`` that are known to earn full marks (their cells are the
    reference's), so the parts using them run the student's own code of them, as a whole grading would.

    Raises InfrastructureError when the sandbox failed (the grader's problem:
    nothing may be concluded about the student)."""
    assignment = course.assignment(assignment_id)
    record = Submission(student_id, assignment_id, os.path.basename(path), grader=grader_version())
    try:
        raw = handin.read_submission(path)
        record.sha256 = hashlib.sha256(raw).hexdigest()
        nb = parse_notebook(raw)
        release = read_notebook(course.release(assignment, assignment.notebook))
        problem = not_this_assignment(nb, release)
    except NotebookError as exc:
        problem = f"your notebook could not be read: {exc}"
    if problem:
        record.problem = problem
        record.parts = [zero(p, "error", problem) for p in assignment.parts
                        if only is None or p.id in only]
        return record
    parts = []
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        os.chmod(scratch, 0o755)
        full = set(passed)      # parts that earned full marks: the parts using them run the student's own
        for part in assignment.parts:
            if only is not None and part.id not in only:
                continue
            own = [used for used in part.uses if used in full]
            result = _grade_part(course, assignment, part, nb, release, own, scratch, jail)
            if own and any(check.status == "timeout" for check in result.checks):
                result = _better_with_stand_ins(result, _grade_part(course, assignment, part, nb, release, [],
                                                                    scratch, jail), own)
            parts.append(result)
            if result.status == "passed":
                full.add(part.id)
    record.parts = parts
    return record


def _grade_part(course: Course, assignment: Assignment, part: Part, nb: dict, release: dict, own: list[str],
                scratch: str, jail: Jail | None) -> PartResult:
    """One part, running the student's own code of the parts in ``own`` and the reference's of the
    other parts it uses."""
    mine = {cell for used in own for cell in assignment.part(used).cells}
    own_cells, stand_ins = set(part.cells) | mine, assignment.stand_in_cells(part) - mine
    prog = program(nb, release, own=own_cells, stand_ins=stand_ins)
    if prog.missing:
        return zero(part, "missing", "the solution cell(s) " + ", ".join(f"'{m}'" for m in prog.missing)
                     + " are gone from your notebook, so this part could not be checked")
    if not_attempted(nb, release, own_cells, stand_ins):
        return zero(part, NOT_ATTEMPTED, "not attempted: its cells are as released, not written yet")
    workdir = tempfile.mkdtemp(prefix=f"{part.id}-", dir=scratch)
    _support_files(course, assignment, workdir)
    return suites.run_part(course, assignment, part, prog, workdir, jail=jail)


def _better_with_stand_ins(own_result: PartResult, stand_ins: PartResult, own: list[str]) -> PartResult:
    """A part that ran on the student's own code of other parts and ran out of time, against the same
    part graded with the reference standing in for them: the better of the two, saying why.

    A slow but correct function of one part must not cost another part its points. Only a timeout
    is graded again: the parts it uses earned full marks, so with time to spare their answers are
    the reference's, and a second run (tens of thousands of calls to the stand-ins, for the scale
    experiment) would find the same mistakes."""
    if stand_ins.score <= own_result.score:
        return own_result
    parts = ", ".join(own)
    stand_ins.reason = (f"{stand_ins.reason}, graded with the reference standing in for part {parts}: "
                        f"with your own part {parts} it scored {own_result.score:g}/{own_result.max_score:g} "
                        f"({own_result.reason})")
    return stand_ins


def check_notebook(course: Course, assignment: Assignment, path: str, jail: Jail | None = None) -> list[PartResult]:
    """A student's self-check from the grader's side: the public checks only, on the notebook's
    own functions everywhere (as ``pytest`` in the student's folder), in the grading sandbox.

    The given cells are the release's, as at grading: a cell the student marks as given is the
    student's code and runs only in the sandbox, never on this side."""
    nb = parse_notebook(handin.read_submission(path))
    prog = program(nb, read_notebook(course.release(assignment, assignment.notebook)))
    parts = []
    with tempfile.TemporaryDirectory(prefix="check-") as scratch:
        os.chmod(scratch, 0o755)
        for part in assignment.parts:
            workdir = os.path.join(scratch, part.id)
            os.makedirs(workdir)
            _support_files(course, assignment, workdir)
            parts.append(suites.run_part(course, assignment, part, prog, workdir, jail=jail, public_only=True))
    return parts
