"""Adding a graded part is the README's four steps and no code change: this test takes them.

In a copy of the course it adds a toy part, ``layer_norm``, to the first assignment: a
solution cell and its check cell in the solution notebook, a public test file beside it,
a hidden suite and an entry in course.yaml. Then `course release` and `course grade` run
as an instructor runs them, and the part must be everywhere the other parts are: parts.csv,
nbgrader's grades.csv and its gradebook.
"""

import csv
import os

import pytest

from autograder import cli
from autograder.mistakes import cohort

pytestmark = pytest.mark.slow

SOLUTION = '''def layer_norm(x, eps=1e-5):
    """Each row of x shifted to mean 0 and scaled to variance 1."""
    ### BEGIN SOLUTION
    x = np.asarray(x, dtype=float)
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)
    ### END SOLUTION'''

PUBLIC = '''"""Public checks for the layer norm: what the notebook states."""

import numpy as np

from selfcheck.checks import close


def test_layer_norm_rows(student):
    """layer_norm of two rows: each row has mean 0 and variance 1"""
    y = np.asarray(student.layer_norm(np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 5.0]])), dtype=float)
    close(y.mean(axis=-1), np.zeros(2), "layer_norm(x).mean(axis=-1)")
    close(y.var(axis=-1), np.ones(2), "layer_norm(x).var(axis=-1)", rtol=1e-3)
'''

HIDDEN = '''"""Hidden checks for the layer norm: random sizes, compared with the reference."""

import numpy as np

from selfcheck.checks import close

RNG = np.random.default_rng(7)


def test_layer_norm_random(student, reference):
    """layer_norm of a random 5 x 7 array"""
    x = RNG.normal(3, 2, size=(5, 7))
    close(student.layer_norm(x), reference.layer_norm(x), "layer_norm(x) of a random 5 x 7 x",
          reveal=False)
'''


def _cell(grade_id, text, **nbgrader):
    import nbformat      # seconds to import: not while make check collects this slow module
    cell = nbformat.v4.new_code_cell(text)
    cell.id = grade_id.replace("_", "-")
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, **nbgrader}
    return cell


def _csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_a_part_added_by_the_readme_steps_is_released_graded_and_exported(course_copy, tmp_path):
    def one_assignment(raw):          # the first assignment only: a release of it is a third of the time
        first = next(iter(raw["assignments"]))
        raw["assignments"] = {first: raw["assignments"][first]}
    course = course_copy(one_assignment)
    assignment = course.assignments[0]
    folder = os.path.join(course.root, "solutions", assignment.id)

    # 1. a solution cell and the part's check cell in the solution notebook
    import nbformat
    path = os.path.join(folder, assignment.notebook)
    nb = nbformat.read(path, as_version=4)
    nb.cells += [_cell("layer_norm", SOLUTION, solution=True, grade=False, locked=False),
                 _cell("check_layer_norm", 'from selfcheck import check\n\ncheck("layer_norm")',
                       solution=False, grade=True, locked=True, points=2)]
    nbformat.write(nb, path)
    # 2. the public checks, in the part's folder (released beside the notebook)
    os.makedirs(os.path.join(course.root, "parts", "layer_norm"))
    with open(os.path.join(course.root, "parts", "layer_norm", "public.py"), "w") as fh:
        fh.write(PUBLIC)
    # 3. the hidden suite
    with open(os.path.join(course.root, "parts", "layer_norm", "hidden.py"), "w") as fh:
        fh.write(HIDDEN)

    # 4. the entry in course.yaml
    def add_part(raw):
        raw["assignments"][assignment.id]["parts"]["layer_norm"] = {
            "title": "layer normalisation", "points": 2, "cells": ["layer_norm"],
            "tests": "parts/layer_norm/hidden.py"}
    course = course_copy(add_part)
    assignment = course.assignments[0]
    assert assignment.parts[-1].id == "layer_norm"

    assert cli.main(["--config", course.path, "release"]) == 0
    released = os.path.join(course.root, "assignments", assignment.id)
    assert os.path.exists(os.path.join(released, "test_layer_norm.py"))
    assert "### BEGIN SOLUTION" not in open(os.path.join(released, assignment.notebook)).read()

    submitted, out = tmp_path / "submitted", tmp_path / "out"
    cohort.write(cohort.solved(course, assignment), str(submitted), "solved", assignment)
    cohort.write(cohort.stub(course, assignment), str(submitted), "stub", assignment)
    assert cli.main(["--config", course.path, "grade", str(submitted), "--out", str(out), "--jobs", "1"]) == 0

    rows = {r["student"]: r for r in _csv(out / "parts.csv") if r["part"] == "layer_norm"}
    assert (float(rows["solved"]["score"]), rows["solved"]["status"]) == (2.0, "passed")
    assert float(rows["stub"]["score"]) == 0.0
    autograded = sum(p.points for p in assignment.parts)
    exported = {r["student_id"]: float(r["score"]) for r in _csv(out / "grades.csv")}
    assert exported == {"solved": autograded, "stub": 0.0}

    from nbgrader.api import Gradebook
    from autograder.nbgrader import settings
    notebook = os.path.splitext(assignment.notebook)[0]
    with Gradebook(settings.settings(course, str(out)).CourseDirectory.db_url, course.course_id) as gb:
        assert gb.find_grade_cell("check_layer_norm", notebook, assignment.id).max_score == 2
        scores = {s: gb.find_grade("check_layer_norm", notebook, assignment.id, s).score for s in ("solved", "stub")}
    assert scores == {"solved": 2.0, "stub": 0.0}
