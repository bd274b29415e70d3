"""grades.csv, nbgrader's own export (``nbgrader export``, through the course's SafeCsvExport), as
one of the course's exports; nbgrader is loaded only when it is written (it takes seconds)."""

from __future__ import annotations

from autograder.export.outputs import Export, Inputs, Output


def _write(inputs: Inputs) -> str:
    from autograder.nbgrader import apps
    return apps.export(inputs.course, inputs.out)


EXPORT = Export("nbgrader", (
    Output("nbgrader", "grades.csv", "nbgrader's export, as `nbgrader export` writes it",
               "nbgrader's own export: one row per student and assignment, hand grades and "
               "`late_submission_penalty` included, `timestamp` the time collect recorded",
               ids=("student_id", "email")),   # SafeCsvExport.IDS, which loads nbgrader (tests/test_nbgrader_units.py)
), _write, order=50)
