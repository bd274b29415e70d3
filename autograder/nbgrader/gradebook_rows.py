"""nbgrader's gradebook read back from its tables, without loading nbgrader.

What people enter in formgrader (hand-graded answers, a part's score set by hand, comments) and
what nbgrader's export reports of each hand-in, read with a few SQL statements whatever the
class's size, as plain rows: ``course status`` and ``course history`` start without nbgrader
(its package loads its server extensions, over a second), and a term's 5,000 hand-ins are read
without an ORM object each. The tables and columns are nbgrader's (:data:`TABLES`, checked against
nbgrader's own in tests/test_term_scale.py), and every score is nbgrader's own expression of it
(:data:`SCORE`), summed by the database as nbgrader's ``SubmittedAssignment.score`` sums it.
"""

import functools
import os
from typing import Any, NamedTuple

from sqlalchemy import Boolean, DateTime, Float, String, Text, case, column, create_engine, func, literal_column, table
from sqlalchemy.engine import Connection, Engine

from autograder.course.config import Course
from autograder.nbgrader.settings import settings

ASSIGNMENT = table("assignment", column("id", String), column("name", String))
NOTEBOOK = table("notebook", column("id", String), column("name", String), column("assignment_id", String))
CELL = table("base_cell", column("id", String), column("name", String), column("notebook_id", String))
GRADE_CELL = table("grade_cells", column("id", String), column("max_score", Float))
TASK_CELL = table("task_cells", column("id", String), column("max_score", Float))
SUBMISSION = table("submitted_assignment", column("id", String), column("assignment_id", String),
                   column("student_id", String), column("timestamp", DateTime))
SUBMITTED_NOTEBOOK = table("submitted_notebook", column("id", String), column("assignment_id", String),
                           column("notebook_id", String), column("late_submission_penalty", Float))
GRADE = table("grade", column("id", String), column("cell_id", String), column("notebook_id", String),
              column("auto_score", Float), column("manual_score", Float), column("extra_credit", Float),
              column("needs_manual_grade", Boolean))
COMMENT = table("comment", column("id", String), column("cell_id", String), column("notebook_id", String),
                column("manual_comment", Text))
TABLES = (ASSIGNMENT, NOTEBOOK, CELL, GRADE_CELL, TASK_CELL, SUBMISSION, SUBMITTED_NOTEBOOK, GRADE, COMMENT)

_EXTRA = case((GRADE.c.extra_credit.isnot(None), GRADE.c.extra_credit), else_=literal_column("0.0"))
# nbgrader's Grade.score: the hand score, else the autograder's, with any extra credit
SCORE = case((GRADE.c.manual_score.isnot(None), GRADE.c.manual_score + _EXTRA),
             (GRADE.c.auto_score.isnot(None), GRADE.c.auto_score + _EXTRA), else_=literal_column("0.0"))
# nbgrader's Grade.max_score: its grade cell's points, or its task cell's
MAX_SCORE = func.coalesce(GRADE_CELL.c.max_score, TASK_CELL.c.max_score, 0.0)


@functools.cache
def engine(url: str) -> Engine:
    """One engine per gradebook in a process (its compiled statements kept)."""
    return create_engine(url)


def url(course: Course, out: str) -> str:
    return str(settings(course, out).CourseDirectory.db_url)


class Totals(NamedTuple):
    """A hand-in's totals as nbgrader's SubmittedAssignment columns define them."""
    score: float
    penalty: float
    needs_manual_grade: bool
    timestamp: Any


def _hand_ins(assignment: str, student: str | None) -> Any:
    """The join of ``assignment``'s hand-ins (``student``'s alone when given) and their notebooks."""
    joined = (SUBMISSION.join(ASSIGNMENT, ASSIGNMENT.c.id == SUBMISSION.c.assignment_id)
              .outerjoin(SUBMITTED_NOTEBOOK, SUBMITTED_NOTEBOOK.c.assignment_id == SUBMISSION.c.id))
    return joined, [ASSIGNMENT.c.name == assignment, *([SUBMISSION.c.student_id == student] if student else [])]


def totals(db: Connection | Any, assignment: str, student: str | None = None) -> dict[str, Totals]:
    """``{student: Totals}`` of each hand-in of ``assignment`` (``student``'s alone when given), in two
    grouped statements (``db``: a connection or nbgrader's session). nbgrader's own columns are
    deferred, a correlated query per hand-in on first reading, which SQLite answers in time
    quadratic in the class (52 s for 5,000 hand-ins)."""
    from sqlalchemy import select
    joined, mine = _hand_ins(assignment, student)
    groups = (SUBMISSION.c.id, SUBMISSION.c.student_id)
    penalties = {who: penalty for who, penalty in db.execute(
        select(SUBMISSION.c.student_id, func.coalesce(func.sum(SUBMITTED_NOTEBOOK.c.late_submission_penalty), 0.0))
        .select_from(joined).where(*mine).group_by(*groups))}
    graded = db.execute(select(SUBMISSION.c.student_id, func.coalesce(func.sum(SCORE), 0.0),
                               func.max(case((GRADE.c.needs_manual_grade, 1), else_=0)), func.max(SUBMISSION.c.timestamp))
                        .select_from(joined.outerjoin(GRADE, GRADE.c.notebook_id == SUBMITTED_NOTEBOOK.c.id))
                        .where(*mine).group_by(*groups)).all()
    return {who: Totals(float(score or 0.0), float(penalties.get(who) or 0.0), bool(needs), when)
            for who, score, needs, when in graded}


def notebook_score(db: Connection | Any, submitted_notebook: str, notebook: str) -> float:
    """nbgrader's ``SubmittedNotebook.score`` of the hand-in's notebook ``submitted_notebook`` (of
    the released ``notebook``), asked through the grade table's index on (cell, notebook): nbgrader's
    own column asks by the notebook alone, which no index holds, so it read every grade of the class
    for each hand-in autograded (a millisecond a hand-in at 2,000 students, and growing)."""
    from sqlalchemy import select
    cells = select(CELL.c.id).where(CELL.c.notebook_id == notebook)
    return float(db.execute(select(func.coalesce(func.sum(SCORE), 0.0)).where(
        GRADE.c.notebook_id == submitted_notebook, GRADE.c.cell_id.in_(cells))).scalar() or 0.0)


def _cells(db: Connection, model: Any, assignment: str, notebook: str, cells: list[str], student: str | None,
           *columns: Any) -> dict[tuple[str, str], Any]:
    """``{(student, cell): row}``: ``columns`` of the ``model`` rows (grade or comment) of ``cells``
    in every hand-in of ``notebook`` (``student``'s alone when given), in one statement."""
    from sqlalchemy import select
    joined = (model.join(CELL, CELL.c.id == model.c.cell_id)
              .join(SUBMITTED_NOTEBOOK, SUBMITTED_NOTEBOOK.c.id == model.c.notebook_id)
              .join(NOTEBOOK, NOTEBOOK.c.id == SUBMITTED_NOTEBOOK.c.notebook_id)
              .join(SUBMISSION, SUBMISSION.c.id == SUBMITTED_NOTEBOOK.c.assignment_id)
              .join(ASSIGNMENT, ASSIGNMENT.c.id == SUBMISSION.c.assignment_id))
    if model is GRADE:
        joined = (joined.outerjoin(GRADE_CELL, GRADE_CELL.c.id == GRADE.c.cell_id)
                  .outerjoin(TASK_CELL, TASK_CELL.c.id == GRADE.c.cell_id))
    rows = db.execute(select(SUBMISSION.c.student_id, CELL.c.name, *columns).select_from(joined).where(
        ASSIGNMENT.c.name == assignment, NOTEBOOK.c.name == notebook, CELL.c.name.in_(cells),
        *([SUBMISSION.c.student_id == student] if student else []))).all()
    return {(who, cell): row for who, cell, *row in rows}


def _max_scores(db: Connection) -> dict[str, float]:
    """Each assignment's points as nbgrader's ``Assignment.max_score`` sums them."""
    from sqlalchemy import select
    points = func.coalesce(GRADE_CELL.c.max_score, TASK_CELL.c.max_score, 0.0)
    rows = db.execute(select(ASSIGNMENT.c.name, func.sum(points)).select_from(
        ASSIGNMENT.outerjoin(NOTEBOOK, NOTEBOOK.c.assignment_id == ASSIGNMENT.c.id)
        .outerjoin(CELL, CELL.c.notebook_id == NOTEBOOK.c.id)
        .outerjoin(GRADE_CELL, GRADE_CELL.c.id == CELL.c.id).outerjoin(TASK_CELL, TASK_CELL.c.id == CELL.c.id))
        .group_by(ASSIGNMENT.c.id, ASSIGNMENT.c.name))
    return {name: float(total or 0.0) for name, total in rows}


def scores(course: Course, out: str, student: str | None = None) -> dict[tuple[str, str], dict]:
    """Everything nbgrader's gradebook holds for each submission (``student``'s alone when given),
    hand-graded answers included, in a few statements whatever the class's size.

    Returns ``{(student, assignment): {"score", "max_score", "penalty", "needs_manual_grade",
    "written": {grade id: {"score", "max_score", "graded", "stale", "comment"}}, "overrides": {part: score},
    "overrides_to_confirm": [part]}}``; ``overrides`` are parts whose autograded score was changed in
    formgrader (``overrides_to_confirm`` those graded differently since, flagged); ``score`` is what
    ``nbgrader export`` reports (autograded plus hand-graded, minus any late penalty). A written
    answer is ``graded`` when formgrader does not list it as needing a manual grade; ``stale`` when
    it has a hand score given to an earlier answer (kept in ``score``, as nbgrader's export keeps
    it, until the TA confirms or changes it in formgrader). Nothing when there is no gradebook yet.
    """
    where = url(course, out)
    if where.startswith("sqlite:///") and not os.path.exists(where[len("sqlite:///"):].split("?")[0]):
        return {}       # nothing graded by hand yet (and no gradebook made by reading one)
    found = {}
    with engine(where).connect() as db:
        max_scores = _max_scores(db)
        for assignment in course.assignments:
            if assignment.id not in max_scores:
                continue
            notebook = os.path.splitext(assignment.notebook)[0]
            checks = {part.check_cell: part.id for part in assignment.parts}
            grades = _cells(db, GRADE, assignment.id, notebook, [*assignment.written, *checks], student, SCORE,
                            MAX_SCORE, GRADE.c.manual_score, GRADE.c.needs_manual_grade)
            comments = _cells(db, COMMENT, assignment.id, notebook, list(assignment.written), student,
                              COMMENT.c.manual_comment)
            for who, (score, penalty, needs_manual, _) in totals(db, assignment.id, student).items():
                written: dict[str, dict] = {}
                for cell, points in assignment.written.items():
                    grade = grades.get((who, cell))
                    if grade is None:
                        written[cell] = {"score": 0.0, "max_score": float(points), "graded": False}
                        continue
                    cell_score, cell_max, manual, flagged = grade
                    # formgrader saves a score and clears the flag; a flag beside a score is a hand
                    # grade whose answer changed since (autograder/nbgrader/handgrades.py): to confirm
                    comment = comments.get((who, cell))
                    written[cell] = {"score": float(cell_score or 0.0), "max_score": float(cell_max),
                                     "graded": not flagged, "stale": manual is not None and bool(flagged),
                                     "comment": (comment and comment[0]) or ""}   # the TA's, for the student
                overrides = {}      # a part's score an instructor set by hand in formgrader
                to_confirm = []     # ... whose autograded score has changed since
                for cell, part in checks.items():
                    grade = grades.get((who, cell))
                    if grade is not None and grade[2] is not None:
                        overrides[part] = float(grade[2])
                        if grade[3]:
                            to_confirm.append(part)
                found[who, assignment.id] = {
                    "score": score, "max_score": max_scores[assignment.id], "penalty": penalty,
                    "needs_manual_grade": needs_manual, "written": written,
                    "overrides": overrides, "overrides_to_confirm": to_confirm}
    return found
