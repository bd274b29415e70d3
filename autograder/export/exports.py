"""The files an instructor exports: parts.csv (one row per part), totals.csv for an LMS, and a
Gradescope ``results.json`` per submission.

Every text field is quoted and spreadsheet-safe (:func:`autograder.untrusted.cell`), so a
student's text that a spreadsheet would run as a formula is stored as text, and every id is
written unchanged (:func:`autograder.untrusted.id_cell`), so an LMS matches it.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from autograder import untrusted
from autograder.course import late

if TYPE_CHECKING:
    from autograder.course.config import Assignment, Course
    from autograder.records.results import PartResult, Submission

COLUMNS = ("student", "assignment", "part", "score", "max_score", "status", "reason")


def rows(records: Iterable[Submission]) -> Iterator[dict]:
    """parts.csv's rows: one per part of each record (COLUMNS)."""
    for record in sorted(records, key=lambda r: r.key):
        for part in record.parts:
            yield {"student": record.student, "assignment": record.assignment,
                   "part": part.part, "max_score": part.max_score, "status": part.status,
                   "score": part.score if part.graded else "",
                   "reason": part.reason}


def write_grades(out: str, records: Iterable[Submission]) -> str:
    return untrusted.write_csv(os.path.join(out, "parts.csv"), COLUMNS, rows(records), ids=("student",))


def totals(course: Course, records: Collection[Submission], gradebook: Mapping | None = None) -> list[dict]:
    """One row per student: id, total, the most possible, and each assignment's score.

    Every export takes a submission's autograded score from its result record, the one
    source of those; the gradebook adds only what people decided in formgrader: the answers
    graded by hand and a part's score overridden by hand. The late penalty is the record's
    (:mod:`autograder.course.late`, worked out at this export), which the gradebook holds too, so
    nbgrader's own export, grades.csv, gives the same scores.
    Only assignments somebody has handed in count: the others are left empty and stay out
    of ``max_total`` until they are released and handed in. A student's assignment not handed
    in is 0 once it is due for them (their extension and the grace past); before, it is left
    empty and out of their ``max_total``, so an LMS import changes nothing.
    """
    gradebook = gradebook or {}
    by_key = {r.key: r for r in records}
    handed_in = {r.assignment for r in records}
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    out = []
    for student in sorted({r.student for r in records}):
        row: dict[str, Any] = {"student_id": student}
        counted = []
        for a in course.assignments:
            record = by_key.get((student, a.id))
            if a.id not in handed_in or (record is not None and record.grader_error):
                row[a.id] = ""          # nobody has handed it in yet, or the grader failed: grade again
                continue
            if record is None:          # a 0 once it is due (the grace past), nothing until then
                row[a.id] = "" if still_open(course, student, a.id, now) else 0.0
            else:
                row[a.id] = round(earned(record, gradebook.get(record.key)) - record.late_points, 3)
                row[late_column(a)] = record.late_points or ""
            if row[a.id] != "":
                counted.append(a)
        row["total"] = round(sum(row[a.id] for a in counted), 3)
        row["max_total"] = sum(max_points(a) for a in counted)
        out.append(row)
    return out


def still_open(course: Course, student: str, assignment_id: str, now: datetime.datetime) -> bool:
    """Whether the student may still hand the assignment in without a penalty: its due date (their
    extension's) and the grace are still ahead (UTC, no time zone, as course.yaml's dates are read)."""
    deadline, _ = late.due(course, student, assignment_id)
    grace = datetime.timedelta(minutes=course.late.grace_minutes if course.late else 0)
    return deadline is not None and now <= deadline + grace


def earned(record: Submission, nbgrader: Mapping | None = None) -> float:
    """A submission's points before any late penalty: its parts (overrides applied) and its
    answers graded by hand."""
    nbgrader = nbgrader or {}
    by_hand = sum(w["score"] for w in nbgrader.get("written", {}).values())
    return sum(scored(p, nbgrader.get("overrides")) for p in record.parts) + by_hand


def late_column(assignment: Assignment) -> str:
    return f"{assignment.id}_late_penalty"


def scored(part: PartResult, overrides: Mapping[str, float] | None = None) -> float:
    """A part's score: the grader's, unless an instructor overrode it in formgrader."""
    return (overrides or {}).get(part.part, part.score)


def max_points(assignment: Assignment) -> float:
    return sum(p.points for p in assignment.parts) + sum(assignment.written.values())


def totals_columns(course: Course) -> list[str]:
    return (["student_id", "total", "max_total"] + [a.id for a in course.assignments]
            + [late_column(a) for a in course.assignments])


def write_totals(out: str, course: Course, records: Collection[Submission], gradebook: Mapping | None = None) -> str:
    return untrusted.write_csv(os.path.join(out, "totals.csv"), totals_columns(course),
                     ({k: (f"{v:g}" if isinstance(v, float) else v) for k, v in row.items()}
                      for row in totals(course, records, gradebook)), ids=("student_id",))


def part_output(part: PartResult) -> str:
    """A part's reason, then one line per check (and its message when it failed)."""
    lines = [part.reason]
    for check in part.checks:
        mark = "ok  " if check.status == "passed" else "FAIL"
        lines.append(f"{mark} [{check.visibility}] {check.doc}")
        if check.status != "passed":
            lines.append(f"     {check.said}")
    return "\n".join(lines)


def _test(name, number, score, top, output, tags, graded=True):
    """One Gradescope test. Its ``status`` knows only passed and failed: full marks pass, a 0
    fails, and partial credit (or anything not graded yet) has no status, so Gradescope shows
    the score itself and the output says which it is."""
    test = {"name": name, "number": number, "score": score, "max_score": top, "output": output,
            "visibility": "visible", "tags": tags}
    if graded and score >= top:
        test["status"] = "passed"
    elif graded and score <= 0:
        test["status"] = "failed"
    elif graded:
        test["output"] = f"partial credit: {score:g} of {top:g}\n{output}"
    return test


def gradescope(record: Submission, course: Course | None = None, written: Mapping | None = None,
               overrides: Mapping[str, float] | None = None) -> dict:
    """A Gradescope autograder ``results.json`` for one submission.

    One test per graded part (its score, partial credit included) and one per
    hand-graded answer (from the gradebook; 0 until graded), and the late penalty's negative
    points when it took any (a hand-in within the grace only says so in ``output``); ``score``
    is their sum.
    """
    titles = {} if course is None else \
        {given.id: given.title for given in course.assignment(record.assignment).parts}
    tests = []
    for part in record.parts:
        output = part_output(part)
        if part.part in (overrides or {}):
            output = f"score set by hand in formgrader (the grader gave {part.score:g})\n{output}"
        tests.append(_test(f"{part.part}: {titles.get(part.part, part.part)}", part.part,
                           scored(part, overrides), part.max_score, output,
                           [record.assignment, part.status], graded=part.graded))
    for cell, grade in (written or {}).items():
        comment = f": {grade['comment']}" if grade.get("comment") else ""
        said = ("graded by hand in formgrader" + comment if grade["graded"] else
                "graded by hand for an earlier answer, to be confirmed" + comment if grade.get("stale")
                else "not graded yet")
        tests.append(_test(f"{cell} (graded by hand)", cell, grade["score"], grade["max_score"], said,
                           [record.assignment, "written"], graded=grade["graded"]))
    if record.late_points:      # within the grace a hand-in loses nothing: no test of 0 points
        tests.append({"name": "late penalty", "number": "late", "score": -record.late_points, "max_score": 0,
                      "output": late.describe(record.late), "visibility": "visible",
                      "tags": [record.assignment, "late"]})
    output = (f"Could not be graded: {record.problem}" if record.problem
              else f"{record.assignment}: graded by the course's hidden and public suites")
    if record.late and not record.late_points:
        output += f"\n{late.describe(record.late)}"
    return {"score": round(sum(t["score"] for t in tests), 3), "output": output,
            "visibility": "visible", "stdout_visibility": "hidden",
            "execution_time": round(record.seconds if record.seconds is not None
                                    else sum(p.seconds for p in record.parts), 2),
            "tests": tests,
            "extra_data": {"student": record.student, "assignment": record.assignment,
                           "sha256": record.sha256, "grader": record.grader,
                           "suites": record.suites}}


def write_gradescope(out: str, course: Course, records: Iterable[Submission], gradebook: Mapping | None = None) -> str:
    """gradescope/<student>/<assignment>/results.json for each record; a file that would not change is
    not written again (reading it is a fraction of writing it, and its time says when it last changed)."""
    folder = os.path.join(out, "gradescope")
    for record in records:
        nbgrader = (gradebook or {}).get((record.student, record.assignment), {})
        path = os.path.join(folder, record.student, record.assignment, "results.json")
        text = json.dumps(gradescope(record, course, nbgrader.get("written"), nbgrader.get("overrides")), indent=1)
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except OSError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return folder
