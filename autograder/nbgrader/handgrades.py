"""The TA's hand grades across nbgrader's autograde: graded stays graded, a changed answer is flagged.

nbgrader's autograde (its SaveAutoGrades) marks every grade that has a ``manual_score`` as
needing manual grading again, each time it runs, whatever changed: one new hand-in, graded with
the whole assignment, would put the whole class back on formgrader's "needs manual grade" list.
For each autograde run (:class:`autograder.nbgrader.converters.SafeAutograde`, so ``course
grade``, ``course regrade``, ``nbgrader autograde`` and formgrader's Autograde button alike)
:func:`kept` reads, before anything changes, the run's students' hand grades the TA finished and
what each was given for; SaveGrades (:mod:`autograder.nbgrader.preprocessors.savegrades`) then
calls :func:`still_graded` in the same commit that writes a notebook's autograded scores, so
nbgrader's gradebook, the one place hand grades live, never holds the flag nbgrader would set:

* a hand grade whose answer is the one graded (the written cell's text in the autograded
  notebook formgrader showed the TA, or for a test cell scored by hand, the same autograded
  score) stays graded, as the TA left it;
* a hand grade whose answer changed (a resubmission) is flagged, ``needs_manual_grade`` as
  nbgrader sets it, with its score and comment kept for the TA to confirm or change in formgrader
  (which clears the flag); ``course status`` lists it. A grade flagged before stays flagged.

A run stopped halfway (a worker killed, Ctrl-C, a step failing after the scores were written)
leaves each notebook as its commit left it: no finished hand grade is flagged by it.
"""

import contextlib
import glob
import json
import os
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from nbgrader import api
from nbgrader.api import BaseCell, Grade, Gradebook, Notebook, SubmittedAssignment, SubmittedNotebook
from nbgrader.coursedir import CourseDirectory

Key = tuple[str, str, str]        # (student, notebook, grade id)
PREVIOUS = ".course-previous-"    # autograded/.course-previous-<pid>-*: one run's folders set aside
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
    """grade id -> source of each solution cell in the student's autograded notebook, or in the
    one an autograde running or stopped has set aside (autograded/.course-previous-*/, see
    :class:`autograder.nbgrader.converters.SafeAutograde`); {} when there is none."""
    folder = coursedir.format_path(coursedir.autograded_directory, student, assignment)
    aside = glob.glob(os.path.join(glob.escape(os.path.dirname(os.path.dirname(folder))), PREVIOUS + "*",
                                   glob.escape(student), glob.escape(assignment), glob.escape(f"{notebook}.ipynb")))
    for path in [os.path.join(folder, f"{notebook}.ipynb"), *sorted(aside)]:
        try:
            with open(path, encoding="utf-8") as fh:
                return _answers_in(json.load(fh).get("cells", []))
        except (OSError, ValueError, AttributeError):
            continue
    return {}


def _answers_in(cells: Any) -> dict[str, str]:
    """grade id -> source of each solution cell of ``cells`` (a notebook's, read or in memory)."""
    found = {}
    for cell in cells if isinstance(cells, list) else []:
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
        if isinstance(meta, dict) and meta.get("solution") and meta.get("grade_id"):
            source = cell.get("source", "")
            found[meta["grade_id"]] = "".join(source) if isinstance(source, list) else str(source)
    return found


def _given_for(answers: dict[str, str], cell: str, grade: Grade) -> tuple[str, Any]:
    """What a hand grade is given for: its written answer's text, or a test cell's autograded score."""
    text = answers.get(cell)
    return ("answer", text) if text is not None else ("auto", grade.auto_score)


def _before(coursedir: CourseDirectory, students: Collection[str]) -> dict[Key, Any]:
    """Each hand grade of ``students`` the TA has finished (not flagged), with what it was given for."""
    answers: dict[tuple[str, str], dict[str, str]] = {}
    found: dict[Key, Any] = {}
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        for (student, notebook, cell), grade in _hand_graded(gb, coursedir, students).items():
            if grade.needs_manual_grade:
                continue
            if (student, notebook) not in answers:
                answers[student, notebook] = _answers(coursedir, coursedir.assignment_id, student, notebook)
            seen = _given_for(answers[student, notebook], cell, grade)
            if seen[1] is not None:
                found[student, notebook, cell] = seen
    return found


_RUNS: dict[tuple[str, str], dict[Key, Any]] = {}     # (gradebook, assignment) -> its run's finished grades


@contextlib.contextmanager
def kept(coursedir: CourseDirectory, students: Collection[str]) -> Iterator[None]:
    """Within one autograde run of ``students``: their finished hand grades, read before anything
    changes, for :func:`still_graded`."""
    run = (str(coursedir.db_url), coursedir.assignment_id)
    _RUNS[run] = _before(coursedir, students)
    try:
        yield
    finally:
        _RUNS.pop(run, None)


def still_graded(db_url: str, assignment: str, student: str, notebook: str, cells: Any,
                 grades: Mapping[str, Grade]) -> None:
    """Before the commit that writes one notebook's autograded scores (``grades``, by cell name;
    ``cells``, the autograded notebook's): each hand grade the TA finished whose answer is the
    one graded is not flagged."""
    finished = _RUNS.get((str(db_url), assignment))
    if not finished:
        return
    answers = _answers_in(cells)
    for cell, grade in grades.items():
        seen = finished.get((student, notebook, cell))
        if seen is not None and grade.needs_manual_grade and _given_for(answers, cell, grade) == seen:
            grade.needs_manual_grade = False
