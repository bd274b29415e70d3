"""nbgrader's gradebook read back and written to: what people enter in formgrader.

The totals, the Gradescope file and the feedback pages include the answers graded by hand in
formgrader and any part's score overridden there (:func:`scores`); tests enter a hand grade as
formgrader's API does (:func:`set_manual_grade`).
"""

import json
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from nbgrader import api
from nbgrader.api import (BaseCell, Comment, Grade, Gradebook, MissingEntry, Notebook, SubmittedAssignment,
                          SubmittedNotebook)
from nbgrader.utils import is_grade, is_locked, is_solution, is_task
from sqlalchemy import case, func
from sqlalchemy.orm import undefer

from autograder.course import late
from autograder.course.config import Assignment, Course
from autograder.course.roster import Student as Person
from autograder.nbgrader import alembic_head  # noqa: F401 - a new gradebook's schema version, read in this process
from autograder.nbgrader import shared_engine  # noqa: F401 - one engine per gradebook, its compiled statements kept
from autograder.nbgrader.settings import settings
from autograder.records.results import Submission


def scores(course: Course, out: str, student: str | None = None) -> dict[tuple[str, str], dict]:
    """Everything nbgrader's gradebook holds for each submission (``student``'s alone when given),
    hand-graded answers included, in a few queries whatever the class's size.

    Returns ``{(student, assignment): {"score", "max_score", "penalty", "needs_manual_grade",
    "written": {grade id: {"score", "max_score", "graded", "stale", "comment"}}, "overrides": {part: score},
    "overrides_to_confirm": [part]}}``; ``overrides`` are parts whose autograded score was changed in
    formgrader (``overrides_to_confirm`` those graded differently since, flagged); ``score`` is what
    ``nbgrader export`` reports (autograded plus hand-graded, minus any late penalty). A written
    answer is ``graded`` when formgrader does not list it as needing a manual grade; ``stale`` when
    it has a hand score given to an earlier answer (kept in ``score``, as nbgrader's export keeps
    it, until the TA confirms or changes it in formgrader).
    """
    found = {}
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        for assignment in course.assignments:
            try:
                max_score = float(gb.find_assignment(assignment.id).max_score or 0.0)
            except MissingEntry:
                continue
            notebook = os.path.splitext(assignment.notebook)[0]
            checks = {part.check_cell: part.id for part in assignment.parts}
            grades = _each_student(gb, Grade, assignment.id, notebook, [*assignment.written, *checks], student)
            comments = _each_student(gb, Comment, assignment.id, notebook, list(assignment.written), student)
            for who, (score, penalty, needs_manual, _) in totals(gb, assignment.id, student).items():
                written: dict[str, dict] = {}
                for cell, points in assignment.written.items():
                    grade = grades.get((who, cell))
                    if grade is None:
                        written[cell] = {"score": 0.0, "max_score": float(points), "graded": False}
                        continue
                    # formgrader saves a score and clears the flag; a flag beside a score is a hand
                    # grade whose answer changed since (autograder/nbgrader/handgrades.py): to confirm
                    stale = grade.manual_score is not None and grade.needs_manual_grade
                    # the TA's comment in formgrader, which the student should get with the score
                    comment = comments.get((who, cell))
                    written[cell] = {"score": float(grade.score or 0.0), "max_score": float(grade.max_score),
                                     "graded": not grade.needs_manual_grade, "stale": bool(stale),
                                     "comment": (comment and comment.manual_comment) or ""}
                overrides = {}      # a part's score an instructor set by hand in formgrader
                to_confirm = []     # ... whose autograded score has changed since
                for cell, part in checks.items():
                    grade = grades.get((who, cell))
                    if grade is not None and grade.manual_score is not None:
                        overrides[part] = float(grade.manual_score)
                        if grade.needs_manual_grade:
                            to_confirm.append(part)
                found[who, assignment.id] = {
                    "score": score, "max_score": max_score, "penalty": penalty,
                    "needs_manual_grade": needs_manual, "written": written,
                    "overrides": overrides, "overrides_to_confirm": to_confirm}
    return found


class Totals(NamedTuple):
    """A hand-in's totals as nbgrader's SubmittedAssignment columns define them."""
    score: float
    penalty: float
    needs_manual_grade: bool
    timestamp: Any


def totals(gb: Gradebook, assignment: str, student: str | None = None) -> dict[str, Totals]:
    """``{student: Totals}`` of each hand-in of ``assignment`` (``student``'s alone when given), in two
    grouped queries: nbgrader's own columns are deferred, a correlated query per hand-in on first
    reading, which SQLite answers in time quadratic in the class (52 s for 5,000 hand-ins)."""
    mine = [api.Assignment.name == assignment, *([SubmittedAssignment.student_id == student] if student else [])]

    def per_hand_in(*columns: Any, grades: bool = False) -> Any:
        query = (gb.db.query(SubmittedAssignment.student_id, *columns)
                 .join(api.Assignment, api.Assignment.id == SubmittedAssignment.assignment_id)
                 .outerjoin(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id))
        if grades:
            query = query.outerjoin(Grade, Grade.notebook_id == SubmittedNotebook.id)
        return query.filter(*mine).group_by(SubmittedAssignment.id, SubmittedAssignment.student_id)
    penalties = dict(per_hand_in(func.coalesce(func.sum(SubmittedNotebook.late_submission_penalty), 0.0)))
    graded = per_hand_in(func.coalesce(func.sum(Grade.score), 0.0), func.max(case((Grade.needs_manual_grade, 1), else_=0)),
                         func.max(SubmittedAssignment.timestamp), grades=True)
    return {who: Totals(float(score or 0.0), float(penalties.get(who) or 0.0), bool(needs), when)
            for who, score, needs, when in graded}


def _each_student(gb: Gradebook, model: Any, assignment: str, notebook: str, cells: list[str],
                  student: str | None = None) -> dict:
    """``{(student, cell): row}``: the gradebook's ``model`` rows (Grade or Comment) of ``cells`` in
    every hand-in of ``notebook`` (``student``'s alone when given), in one query where ``find_grade``
    and ``find_comment`` make one each (and a grade's deferred ``max_score`` one more)."""
    rows = (gb.db.query(model, BaseCell.name, SubmittedAssignment.student_id)
            .join(BaseCell, BaseCell.id == model.cell_id)
            .join(SubmittedNotebook, SubmittedNotebook.id == model.notebook_id)
            .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
            .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
            .join(api.Assignment, api.Assignment.id == SubmittedAssignment.assignment_id)
            .filter(api.Assignment.name == assignment, Notebook.name == notebook, BaseCell.name.in_(cells),
                    *([SubmittedAssignment.student_id == student] if student else [])))
    if model is Grade:
        rows = rows.options(undefer(Grade.max_score))
    return {(who, cell): row for row, cell, who in rows}


def gradebook_left_behind(course: Course, out: str) -> str | None:
    """Why ``out``'s own SQLite gradebook would be lost (None when it would not): course.yaml's
    ``db_url`` points elsewhere, so every export would read a gradebook without its hand grades."""
    path = os.path.join(out, "gradebook.db")
    if not course.db_url or not os.path.exists(path) or os.path.abspath(path) in course.db_url:
        return None
    return (f"{path} holds this folder's gradebook (the hand grades too) but course.yaml's db_url points at "
            "another: copy it there first (sqlite3 gradebook.db .dump, or pgloader for PostgreSQL), then rename "
            "gradebook.db to gradebook.db.moved; or take db_url: out of course.yaml")


def release_mismatch(course: Course, out: str) -> str | None:
    """Why ``out``'s gradebook cannot take the release in ``assignments/`` (None when it can):
    an assignment with hand-ins whose released notebook has other grade or solution cells than
    the gradebook's, which nbgrader refuses to change, so grading would score parts it cannot
    record."""
    from selfcheck.program import read_notebook
    if not course.db_url and not os.path.exists(os.path.join(out, "gradebook.db")):
        return None
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        for assignment in course.assignments:
            name = os.path.splitext(assignment.notebook)[0]
            try:
                if not gb.assignment_submissions(assignment.id):
                    continue
                known = gb.find_notebook(name, assignment.id)
            except MissingEntry:
                continue
            cells = {c.name for c in known.grade_cells} | {c.name for c in known.solution_cells}
            nb = read_notebook(course.release(assignment, assignment.notebook))
            released = {c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"]
                        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                        and (c["metadata"]["nbgrader"].get("grade") or c["metadata"]["nbgrader"].get("solution"))}
            if released != cells:
                changed = sorted(released ^ cells)
                return (f"the release of {assignment.id} and the gradebook in {out} disagree ({', '.join(changed)}): "
                        "nbgrader cannot change the cells of an assignment that has hand-ins; put the "
                        "release back (git checkout assignments/ solutions/) or grade into a new folder")
    return None


def holds_release(course: Course, assignment: Assignment, out: str) -> bool:
    """Whether ``out``'s gradebook already holds the release of ``assignment`` in ``assignments/``
    as nbgrader's generate_assignment records it (so generating it again would change nothing):
    the same notebooks, each with the same kernel and the same source cells (type, locked, text,
    checksum), grade and task cells (points, type) and solution cells. Read from the gradebook's
    own records, so a release that changed anything, points included, is registered again."""
    import nbformat
    folder = course.release(assignment)
    if not os.path.isdir(folder) or (not course.db_url and not os.path.exists(os.path.join(out, "gradebook.db"))):
        return False
    released = {os.path.splitext(name)[0]: _as_recorded(nbformat.read(os.path.join(folder, name), as_version=4))
                for name in sorted(os.listdir(folder)) if name.endswith(".ipynb")}
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        try:
            notebooks = gb.find_assignment(assignment.id).notebooks
        except MissingEntry:
            return False
        held = {nb.name: {"kernel": json.loads(nb.kernelspec or "{}"),
                          "source": {c.name: (c.cell_type, c.locked, c.source, c.checksum) for c in nb.source_cells},
                          "grade": {c.name: (c.max_score, c.cell_type) for c in nb.grade_cells},
                          "task": {c.name: (c.max_score, c.cell_type) for c in nb.task_cells},
                          "solution": {c.name for c in nb.solution_cells}} for nb in notebooks}
    return held == released


def _as_recorded(nb: Any) -> dict:
    """A released notebook's cells as nbgrader's SaveCells records them in the gradebook."""
    marked = [c for c in nb.cells if "nbgrader" in c.metadata]
    return {"kernel": nb.metadata.get("kernelspec", {}),
            "source": {c.metadata.nbgrader["grade_id"]: (c.cell_type, is_locked(c), c.source,
                                                        c.metadata.nbgrader.get("checksum"))
                       for c in marked if is_grade(c) or is_solution(c) or is_locked(c) or is_task(c)},
            "grade": {c.metadata.nbgrader["grade_id"]: (float(c.metadata.nbgrader["points"]), c.cell_type)
                      for c in marked if is_grade(c)},
            "task": {c.metadata.nbgrader["grade_id"]: (float(c.metadata.nbgrader["points"]), c.cell_type)
                     for c in marked if is_task(c)},
            "solution": {c.metadata.nbgrader["grade_id"] for c in marked if is_solution(c)}}


def set_due(course: Course, entry: Any, submission: Any) -> None:
    """course.yaml's due date on nbgrader's assignment ``entry``, and the student's extension (as
    nbgrader keeps one: time added to it) on their ``submission``."""
    entry.duedate = course.assignment(entry.name).due
    deadline, source = late.due(course, submission.student_id, entry.name)
    submission.extension = deadline - entry.duedate if source == "extension" and entry.duedate else None


def write_late(course: Course, out: str, records: Iterable[Submission]) -> None:
    """Put course.yaml's due dates, each student's extension, each hand-in's time and the late
    penalty of its record (:mod:`autograder.course.late`) in the gradebook, so nbgrader's export and
    formgrader show what every export of the course shows."""
    by_key = {r.key: r for r in records}
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        for assignment in course.assignments:
            try:
                entry = gb.find_assignment(assignment.id)
            except MissingEntry:
                continue
            entry.duedate = assignment.due
            notebook = os.path.splitext(assignment.notebook)[0]
            notebooks = dict(gb.db.query(SubmittedAssignment.student_id, SubmittedNotebook)   # one query, not one a hand-in
                             .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                             .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
                             .filter(SubmittedAssignment.assignment_id == entry.id, Notebook.name == notebook))
            for sub in gb.db.query(SubmittedAssignment).filter(SubmittedAssignment.assignment_id == entry.id):
                set_due(course, entry, sub)
                record = by_key.get((sub.student_id, assignment.id))
                if record is None:
                    continue
                if record.submitted_at:
                    sub.timestamp = late.parse_time(record.submitted_at)
                if sub.student_id in notebooks:
                    notebooks[sub.student_id].late_submission_penalty = record.late_points or None
        gb.db.commit()


def set_manual_grade(course: Course, out: str, student: str, assignment_id: str, cell: str, score: float,
                     comment: str | None = None) -> None:
    """Enter a hand grade as formgrader does (its API sets ``manual_score`` on the grade)."""
    assignment = course.assignment(assignment_id)
    notebook = os.path.splitext(assignment.notebook)[0]
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        grade = gb.find_grade(cell, notebook, assignment_id, student)
        grade.manual_score = float(score)
        grade.needs_manual_grade = False      # formgrader's API clears it with every score it saves
        if comment is not None:
            gb.find_comment(cell, notebook, assignment_id, student).manual_comment = comment
        gb.db.commit()


def fill_students(course: Course, out: str, roster: dict[str, Person]) -> None:
    """Put the roster's names and emails in nbgrader's student table of ``out``'s gradebook."""
    if not roster:
        return
    from nbgrader.api import Student as GradebookStudent
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        known = {s.id: s for s in gb.db.query(GradebookStudent)}       # one query and one commit, not one of each a student
        for entry in roster.values():
            names = {"first_name": entry.first_name or None, "last_name": entry.last_name or None,
                     "email": entry.email or None}
            if entry.id in known:
                for key, value in names.items():
                    setattr(known[entry.id], key, value)
            else:
                gb.db.add(GradebookStudent(id=entry.id, **names))
        gb.db.commit()
