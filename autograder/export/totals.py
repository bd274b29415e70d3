"""totals.csv for an LMS: one row per student, autograded and hand-graded points less the late
penalty; the totals the Canvas and Moodle files are made from.

Every text field is quoted and spreadsheet-safe (:func:`autograder.untrusted.cell`), and every id
is written unchanged (:func:`autograder.untrusted.id_cell`), so an LMS matches it.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from autograder import untrusted
from autograder.course import late

if TYPE_CHECKING:
    from autograder.course.config import Assignment, Course
    from autograder.records.results import PartResult, Submission

from autograder.export.outputs import Export, Output

TOTALS = Output("totals", "totals.csv", "for the LMS; hand-graded answers included",
                "`student_id,total,max_total,<assignment>...,<assignment>_late_penalty...`, one row per student: "
                "autograded and hand-graded points less the late penalty", ids=("student_id",))


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
    until = late.forgiven_until(course, student, assignment_id)
    return until is not None and now <= until


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
    return untrusted.write_csv(os.path.join(out, TOTALS.path), totals_columns(course),
                     ({k: (f"{v:g}" if isinstance(v, float) else v) for k, v in row.items()}
                      for row in totals(course, records, gradebook)), ids=TOTALS.ids)


EXPORT = Export("totals", (TOTALS,), lambda i: write_totals(i.out, i.course, i.records, i.gradebook), order=20)
