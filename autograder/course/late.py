"""Late hand-ins: each student's due date, and what a late hand-in loses.

course.yaml gives the policy (``late:``, whose rules are the classes of
:mod:`autograder.course.late_rules`), each assignment's ``due:`` and each student's
``extensions:``; a hand-in's time is the one collect recorded
(:mod:`autograder.grade.submission_time`), which its student cannot choose. :func:`assess` gives
the one verdict, a typed :class:`~autograder.records.results.Lateness`, worked out again at every
export from that time and course.yaml as it is then, never kept from an earlier run, so a moved
deadline or a new extension is right everywhere at the next `course regrade` or `course export`
without any suite running again; nbgrader's own autograde takes it too
(:class:`autograder.nbgrader.preprocessors.CourseLatePenalties`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from autograder.records.results import Lateness

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.course.late_rules import LatePolicy
    from autograder.records.results import Submission


def due(course: Course, student: str, assignment_id: str) -> tuple[datetime.datetime | None, str]:
    """The student's due date for the assignment (UTC, no time zone) and where it comes from."""
    extended = course.extensions.get(student, {}).get(assignment_id)
    if extended is not None:
        return extended, "extension"
    return course.assignment(assignment_id).due, "due"


def fraction(policy: LatePolicy | None, seconds_late: float) -> float:
    """The share of the points earned that a hand-in ``seconds_late`` after its due date loses."""
    return policy.fraction(seconds_late) if policy else 0.0


def points_taken(policy: LatePolicy | None, seconds_late: float, earned: float) -> float:
    """The points a late hand-in loses: its fraction of what it earned, to three decimals."""
    return round(fraction(policy, seconds_late) * max(earned, 0.0), 3)


def forgiven_until(course: Course, student: str, assignment_id: str) -> datetime.datetime | None:
    """The last moment the student's hand-in loses nothing: their due date and the policy's grace."""
    deadline, _ = due(course, student, assignment_id)
    if deadline is None:
        return None
    return deadline + datetime.timedelta(seconds=course.late.forgives() if course.late else 0.0)


def parse_time(text: str | None) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(text) if text else None


def assess(course: Course, student: str, assignment_id: str, submitted_at: str | None,
           earned: float) -> Lateness | None:
    """What lateness costs one hand-in on its ``earned`` points: the one verdict its record, every
    export and nbgrader's own autograde (CourseLatePenalties) take; None when it was on time (or
    its assignment has no due date, or its time is unknown)."""
    when = parse_time(submitted_at)
    deadline, source = due(course, student, assignment_id)
    if when is None or deadline is None or when <= deadline:
        return None
    seconds = (when - deadline).total_seconds()
    return Lateness(due=deadline.isoformat() + "+00:00", due_from=source, submitted=when.isoformat() + "+00:00",
                    minutes_late=round(seconds / 60, 1),
                    rule=course.late.words() if course.late else "no late penalty",
                    fraction=fraction(course.late, seconds), points=points_taken(course.late, seconds, earned))


def describe(late: Lateness | None) -> str:
    """One line for a student or an instructor: how late, against which date, what it cost."""
    if not late:
        return ""
    minutes = late.minutes_late
    how = f"{minutes:g} minutes" if minutes < 120 else (f"{minutes / 60:.1f} hours" if minutes < 2880
                                                         else f"{minutes / 1440:.1f} days")
    which = "your extended due date" if late.due_from == "extension" else "the due date"
    cost = (f"late penalty {late.points:g} points ({late.fraction:.0%} of the points earned)"
            if late.points else "no penalty" + (" (within the grace)" if not late.fraction else ""))
    return f"handed in {how} after {which} ({late.due}): {cost}; rule: {late.rule}"


def of_record(course: Course, record: Submission, earned: float) -> Lateness | None:
    """The late penalty of ``record`` by course.yaml as it is now, on its ``earned`` points
    (hand grades included); None for a grader error, whose score is nobody's."""
    if record.grader_error:
        return None
    return assess(course, record.student, record.assignment, record.submitted_at, earned)
