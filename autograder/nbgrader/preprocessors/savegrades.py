"""nbgrader's SaveAutoGrades, with the notebook's grades and comments read once and committed once.

nbgrader's SaveAutoGrades looks each grade and comment up with a query of its own and commits
after each: about nine lookups and nine commits a notebook, each lookup reading every student's
row of its cell (the gradebook has no index by notebook alone), so the stage's cost per hand-in
grew with the class, and on PostgreSQL every one of them is a round trip. Here the notebook's
grades and comments are read in one query each, through the (cell, notebook) index, and the
notebook's scores and comments are committed together at its end. What is written is nbgrader's
own: its ``_add_score`` and ``_add_comment`` run unchanged on the very objects its lookups return,
except the flag it sets on every hand grade, which a hand grade the TA finished for the same
answer does not get (:mod:`autograder.nbgrader.handgrades`), in the same commit.
"""

from typing import Any

from nbformat import NotebookNode
from nbgrader.api import BaseCell, Comment, Grade, Gradebook, GradeCell, SolutionCell, TaskCell
from nbgrader.preprocessors import NbGraderPreprocessor, SaveAutoGrades
from sqlalchemy import select

from autograder.nbgrader import handgrades


class SaveGrades(SaveAutoGrades):
    """SaveAutoGrades whose lookups answer from the notebook's rows, read once, and whose commits
    are one, when the notebook is done."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources["nbgrader"]
        self.notebook_id, self.assignment_id = info["notebook"], info["assignment"]
        self.student_id, self.db_url = info["student"], info["db_url"]
        with Gradebook(self.db_url) as gb:
            rows = self.gradebook = _RowsReadOnce(gb, self.notebook_id, self.assignment_id, self.student_id)
            nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)    # each cell, as nbgrader's
            # the TA's finished hand grades of unchanged answers are not flagged, in the same commit
            handgrades.still_graded(self.db_url, self.assignment_id, self.student_id, self.notebook_id,
                                    nb.cells, rows.grades)
            gb.db.commit()
        return nb, resources


def _polymorphic(model: Any) -> str:
    return model.__mapper__.polymorphic_identity


class _RowsReadOnce:
    """The Gradebook for one hand-in's notebook: ``find_grade`` and ``find_comment`` answer from
    its rows (nbgrader's own objects, looked up by cell name with nbgrader's precedence: a grade
    or solution cell before a task cell), ``db.commit`` only flushes (the preprocessor commits
    once), and all else is the Gradebook's, which also answers any name the rows do not hold
    (with nbgrader's MissingEntry)."""

    def __init__(self, gradebook: Gradebook, notebook: str, assignment: str, student: str) -> None:
        self._gradebook, self._key = gradebook, (notebook, assignment, student)
        self.db = _FlushOnCommit(gradebook.db)
        submitted = gradebook.find_submission_notebook(notebook, assignment, student)
        cells = select(BaseCell.id).where(BaseCell.notebook_id == submitted.notebook_id)
        self.grades = self._by_name(Grade, submitted.id, cells, GradeCell)
        self._comments = self._by_name(Comment, submitted.id, cells, SolutionCell)

    def _by_name(self, model: Any, submitted: str, cells: Any, first: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        rows = (self._gradebook.db.query(model, BaseCell.name, BaseCell.type)
                .join(BaseCell, BaseCell.id == model.cell_id)
                .filter(model.notebook_id == submitted, model.cell_id.in_(cells)).all())
        for kind in (_polymorphic(first), _polymorphic(TaskCell)):      # the first found is kept
            for row, name, cell_type in rows:
                if cell_type == kind:
                    found.setdefault(name, row)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    def find_grade(self, cell: str, notebook: str, assignment: str, student: str) -> Any:
        if (notebook, assignment, student) == self._key and cell in self.grades:
            return self.grades[cell]
        return self._gradebook.find_grade(cell, notebook, assignment, student)

    def find_comment(self, cell: str, notebook: str, assignment: str, student: str) -> Any:
        if (notebook, assignment, student) == self._key and cell in self._comments:
            return self._comments[cell]
        return self._gradebook.find_comment(cell, notebook, assignment, student)


class _FlushOnCommit:
    """A session whose ``commit`` is a flush: the notebook's changes are sent as nbgrader makes
    them, and committed together by :class:`SaveGrades`."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def commit(self) -> None:
        self._session.flush()
