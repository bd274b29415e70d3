"""Late hand-ins: each student's due date, and what a late hand-in loses.

course.yaml gives the policy (``late:``), each assignment's ``due:`` and each student's
``extensions:``; a hand-in's time is the one collect recorded (:mod:`autograder.grade.submission_time`),
which its student cannot choose. The penalty is worked out again at every export from that time
and course.yaml as it is then (:func:`assess`), never kept from an earlier run, so a moved
deadline or a new extension is right everywhere at the next `course regrade` or `course export`
without any suite running again. nbgrader's own autograde takes its penalty from
:func:`points_taken` too (:class:`autograder.nbgrader.preprocessors.CourseLatePenalties`).
"""

from __future__ import annotations

import datetime
import math
from typing import TYPE_CHECKING

from autograder.records.results import Lateness

if TYPE_CHECKING:
    from autograder.course.config import Course, LatePolicy
    from autograder.records.results import Submission

DAY = 86400.0


def due(course: Course, student: str, assignment_id: str) -> tuple[datetime.datetime | None, str]:
    """The student's due date for the assignment (UTC, no time zone) and where it comes from."""
    extended = course.extensions.get(student, {}).get(assignment_id)
    if extended is not None:
        return extended, "extension"
    return course.assignment(assignment_id).due, "due"


def rule(policy: LatePolicy | None) -> str:
    """The policy in words, as every export shows it."""
    if policy is None or (not policy.penalty_per_day and policy.zero_after_days is None):
        return "no late penalty"
    words = [f"{policy.penalty_per_day:.0%} per started day late, at most {policy.max_penalty:.0%}"]
    if policy.zero_after_days is not None:
        words.append(f"0 after {policy.zero_after_days:g} days")
    if policy.grace_minutes:
        words.append(f"{policy.grace_minutes:g} minutes' grace")
    return "; ".join(words)


def fraction(policy: LatePolicy | None, seconds_late: float) -> float:
    """The share of the points earned that a hand-in ``seconds_late`` after its due date loses."""
    if policy is None or seconds_late <= policy.grace_minutes * 60:
        return 0.0
    if policy.zero_after_days is not None and seconds_late > policy.zero_after_days * DAY:
        return 1.0
    return min(policy.max_penalty, policy.penalty_per_day * math.ceil(seconds_late / DAY))


def points_taken(policy: LatePolicy | None, seconds_late: float, earned: float) -> float:
    """The points a late hand-in loses: its fraction of what it earned, to three decimals."""
    return round(fraction(policy, seconds_late) * max(earned, 0.0), 3)


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
                    minutes_late=round(seconds / 60, 1), rule=rule(course.late),
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
