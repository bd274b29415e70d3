"""nbgrader's gradebook read back and written to: what people enter in formgrader.

The totals, the Gradescope file and the feedback pages include the answers graded by hand in
formgrader and any part's score overridden there (:func:`scores`); tests enter a hand grade as
formgrader's API does (:func:`set_manual_grade`).
"""

import os

from nbgrader.api import Gradebook, MissingEntry

from autograder.nbgrader import alembic_head  # noqa: F401 - a new gradebook's schema version, read in this process
from autograder.config import Course
from autograder.nbgrader.settings import settings


def scores(course: Course, out: str) -> dict[tuple[str, str], dict]:
    """Everything nbgrader's gradebook holds for each submission, hand-graded answers included.

    Returns ``{(student, assignment): {"score", "max_score", "penalty", "needs_manual_grade",
    "written": {grade id: {"score", "max_score", "graded", "comment"}}, "overrides": {part: score}}}``;
    ``overrides`` are parts whose autograded score was changed in formgrader; ``score`` is what
    ``nbgrader export`` reports (autograded plus hand-graded, minus any late penalty).
    """
    found = {}
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        for assignment in course.assignments:
            try:
                gb.find_assignment(assignment.id)
            except MissingEntry:
                continue
            notebook = os.path.splitext(assignment.notebook)[0]
            for sub in gb.assignment_submissions(assignment.id):
                written: dict[str, dict] = {}
                for cell, points in assignment.written.items():
                    try:
                        grade = gb.find_grade(cell, notebook, assignment.id, sub.student_id)
                    except MissingEntry:
                        written[cell] = {"score": 0.0, "max_score": float(points), "graded": False}
                        continue
                    graded = grade.manual_score is not None or not grade.needs_manual_grade
                    try:        # the TA's comment in formgrader, which the student should get with the score
                        comment = gb.find_comment(cell, notebook, assignment.id, sub.student_id).manual_comment
                    except MissingEntry:
                        comment = None
                    written[cell] = {"score": float(grade.score or 0.0), "max_score": float(grade.max_score),
                                     "graded": bool(graded), "comment": comment or ""}
                overrides = {}      # a part's score an instructor set by hand in formgrader
                for part in assignment.parts:
                    try:
                        grade = gb.find_grade(part.check_cell, notebook, assignment.id, sub.student_id)
                    except MissingEntry:
                        continue
                    if grade.manual_score is not None:
                        overrides[part.id] = float(grade.manual_score)
                found[sub.student_id, assignment.id] = {
                    "score": float(sub.score or 0.0), "max_score": float(sub.max_score or 0.0),
                    "penalty": float(sub.late_submission_penalty or 0.0),
                    "needs_manual_grade": bool(sub.needs_manual_grade), "written": written,
                    "overrides": overrides}
    return found


def set_manual_grade(course: Course, out: str, student: str, assignment_id: str, cell: str, score: float,
                     comment: str | None = None) -> None:
    """Enter a hand grade as formgrader does (its API sets ``manual_score`` on the grade)."""
    assignment = course.assignment(assignment_id)
    notebook = os.path.splitext(assignment.notebook)[0]
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        grade = gb.find_grade(cell, notebook, assignment_id, student)
        grade.manual_score = float(score)
        if comment is not None:
            gb.find_comment(cell, notebook, assignment_id, student).manual_comment = comment
        gb.db.commit()
