"""nbgrader's gradebook read back and written to: what people enter in formgrader.

What the exports read of it (the answers graded by hand in formgrader, any part's score
overridden there) is read by its tables (:mod:`autograder.nbgrader.gradebook_rows`); here are the
steps that go through nbgrader's API: whether it holds a release, the late penalties and the
roster written into it, and a hand grade entered as formgrader's API does (:func:`set_manual_grade`).
"""

import datetime
import json
import os
from collections.abc import Iterable
from typing import Any

from nbgrader import api
from nbgrader.api import Gradebook, MissingEntry, Notebook, SubmittedAssignment, SubmittedNotebook
from nbgrader.utils import is_grade, is_locked, is_solution, is_task

from autograder.course import late
from autograder.course.config import Assignment, Course
from autograder.course.roster import Student as Person
from autograder.nbgrader import alembic_head  # noqa: F401 - a new gradebook's schema version, read in this process
from autograder.nbgrader import shared_engine  # noqa: F401 - one engine per gradebook, its compiled statements kept
from autograder.nbgrader.settings import settings
from autograder.records.results import Submission


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
                known = gb.find_notebook(name, assignment.id)
                if gb.db.query(SubmittedAssignment.id).filter(    # one row looked at, not every hand-in read
                        SubmittedAssignment.assignment_id == known.assignment_id).first() is None:
                    continue
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
    formgrader show what every export of the course shows: read in two statements an assignment,
    and only the rows whose values change are written (what :func:`set_due` sets, row by row)."""
    from sqlalchemy import and_, bindparam, select, update
    by_key = {r.key: r for r in records}
    entries, hand_ins, notebooks = api.Assignment.__table__, SubmittedAssignment.__table__, SubmittedNotebook.__table__
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        db = gb.db
        for assignment in course.assignments:
            entry = db.execute(select(entries.c.id, entries.c.duedate).where(entries.c.name == assignment.id)).first()
            if entry is None:
                continue
            if entry.duedate != assignment.due:
                db.execute(update(entries).where(entries.c.id == entry.id).values(duedate=assignment.due))
            notebook = db.execute(select(Notebook.__table__.c.id).where(
                Notebook.__table__.c.assignment_id == entry.id,
                Notebook.__table__.c.name == os.path.splitext(assignment.notebook)[0])).scalar()
            rows = db.execute(select(hand_ins.c.id, hand_ins.c.student_id, hand_ins.c.timestamp, hand_ins.c.extension,
                                     notebooks.c.id, notebooks.c.late_submission_penalty).select_from(hand_ins.outerjoin(
                notebooks, and_(notebooks.c.assignment_id == hand_ins.c.id, notebooks.c.notebook_id == notebook)))
                .where(hand_ins.c.assignment_id == entry.id)).all()
            times, penalties = [], []
            for sub_id, student, timestamp, extension, nb_id, penalty in rows:
                deadline, source = late.due(course, student, assignment.id)
                extended = deadline - assignment.due if source == "extension" and assignment.due and deadline else None
                record = by_key.get((student, assignment.id))
                when = late.parse_time(record.submitted_at) if record is not None and record.submitted_at else timestamp
                if extended != extension or _naive(when) != _naive(timestamp):
                    times.append({"row": sub_id, "when": when, "extended": extended})
                if record is not None and nb_id is not None and (record.late_points or None) != penalty:
                    penalties.append({"row": nb_id, "penalty": record.late_points or None})
            if times:
                db.execute(update(hand_ins).where(hand_ins.c.id == bindparam("row")).values(
                    timestamp=bindparam("when"), extension=bindparam("extended")), times)
            if penalties:
                db.execute(update(notebooks).where(notebooks.c.id == bindparam("row")).values(
                    late_submission_penalty=bindparam("penalty")), penalties)
        db.commit()


def _naive(when: Any) -> Any:
    """A time as the gradebook keeps it: UTC, without a time zone."""
    return when.astimezone(datetime.timezone.utc).replace(tzinfo=None) if when is not None and when.tzinfo else when


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
