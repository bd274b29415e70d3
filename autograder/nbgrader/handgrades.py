"""The TA's hand grades across nbgrader's autograde: graded stays graded, a changed answer is flagged.

nbgrader's autograde (its SaveAutoGrades) marks every grade that has a ``manual_score`` as
needing manual grading again, each time it runs, whatever changed: one new hand-in, graded with
the whole assignment, would put the whole class back on formgrader's "needs manual grade" list.
Around each autograde (:class:`autograder.nbgrader.converters.SafeAutograde`, so ``course grade``,
``course regrade``, ``nbgrader autograde`` and formgrader's Autograde button alike) this keeps
what the TA did, in nbgrader's gradebook, the one place hand grades live:

* a hand grade whose answer is the one graded (the written cell's text in the autograded
  notebook formgrader showed the TA, or for a test cell scored by hand, the same autograded
  score) is graded again, as the TA left it;
* a hand grade whose answer changed (a resubmission) stays flagged, ``needs_manual_grade`` as
  nbgrader set it, with its score and comment kept for the TA to confirm or change in formgrader
  (which clears the flag); ``course status`` lists it. A grade flagged before stays flagged.
"""

import json
import os
from collections.abc import Collection
from typing import Any

from nbgrader import api
from nbgrader.api import BaseCell, Grade, Gradebook, Notebook, SubmittedAssignment, SubmittedNotebook
from nbgrader.coursedir import CourseDirectory

Key = tuple[str, str, str]        # (student, notebook, grade id)
NAMED = 500     # at most this many students are named to the database; more are picked out here


def _hand_graded(gb: Gradebook, coursedir: CourseDirectory, students: Collection[str]) -> dict[Key, Grade]:
    """Every grade of the assignment that has a hand score, of ``students`` (those autograde
    reads): a batch of new hand-ins reads its own students' rows, not the class's."""
    rows = (gb.db.query(Grade, BaseCell.name, Notebook.name, SubmittedAssignment.student_id)
            .join(BaseCell, BaseCell.id == Grade.cell_id)
            .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id)
            .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
            .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
            .join(api.Assignment, api.Assignment.id == SubmittedAssignment.assignment_id)
            .filter(api.Assignment.name == coursedir.assignment_id, Grade.manual_score.isnot(None)))
    if len(students) <= NAMED:
        rows = rows.filter(SubmittedAssignment.student_id.in_(sorted(students)))
    return {(student, notebook, cell): grade for grade, cell, notebook, student in rows if student in students}


def _answers(coursedir: CourseDirectory, assignment: str, student: str, notebook: str) -> dict[str, str]:
    """grade id -> source of each solution cell in the student's autograded notebook ({} when none)."""
    path = os.path.join(coursedir.format_path(coursedir.autograded_directory, student, assignment),
                        f"{notebook}.ipynb")
    try:
        with open(path, encoding="utf-8") as fh:
            cells = json.load(fh).get("cells", [])
    except (OSError, ValueError):
        return {}
    found = {}
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
        if meta.get("solution") and meta.get("grade_id"):
            source = cell.get("source", "")
            found[meta["grade_id"]] = "".join(source) if isinstance(source, list) else str(source)
    return found


def _as_graded(coursedir: CourseDirectory, assignment: str, grades: dict[Key, Grade]) -> dict[Key, Any]:
    """What each hand grade was given for: its written answer's text, or a test cell's autograded score."""
    answers: dict[tuple[str, str], dict[str, str]] = {}
    found: dict[Key, Any] = {}
    for (student, notebook, cell), grade in grades.items():
        if (student, notebook) not in answers:
            answers[student, notebook] = _answers(coursedir, assignment, student, notebook)
        text = answers[student, notebook].get(cell)
        found[student, notebook, cell] = ("answer", text) if text is not None else ("auto", grade.auto_score)
    return found


def before(coursedir: CourseDirectory, students: Collection[str]) -> dict[Key, Any]:
    """Before autograde of ``students``: each of their hand grades the TA has finished (not
    flagged), with what it was given for."""
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        done = {key: grade for key, grade in _hand_graded(gb, coursedir, students).items()
                if not grade.needs_manual_grade}
        return {key: seen for key, seen in _as_graded(coursedir, coursedir.assignment_id, done).items()
                if seen[1] is not None}


def after(coursedir: CourseDirectory, finished: dict[Key, Any], students: Collection[str]) -> None:
    """After autograde of ``students``: each hand grade of ``finished`` whose answer is unchanged
    is graded again."""
    if not finished:
        return
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        now = {key: grade for key, grade in _hand_graded(gb, coursedir, students).items()
               if key in finished and grade.needs_manual_grade}
        for key, seen in _as_graded(coursedir, coursedir.assignment_id, now).items():
            if seen == finished[key]:
                now[key].needs_manual_grade = False
        gb.db.commit()
