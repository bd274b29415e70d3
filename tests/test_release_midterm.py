"""A release nbgrader refuses mid-term (a cell added once there are hand-ins) changes nothing,
says nbgrader's own reason, and grading refuses while a release and a gradebook disagree."""

import hashlib
import os

import pytest

from autograder import cli
from autograder.mistakes import cohort

pytestmark = pytest.mark.slow


def _tree(folder):
    found = {}
    for dirpath, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                found[os.path.relpath(os.path.join(dirpath, name), folder)] = hashlib.sha256(fh.read()).hexdigest()
    return found


def _one_assignment(raw):
    first = next(iter(raw["assignments"]))
    raw["assignments"] = {first: raw["assignments"][first]}


def test_a_refused_release_leaves_the_course_as_it_was_and_grading_refuses_a_half_release(
        course_copy, tmp_path, capsys):
    import nbformat
    from nbgrader.api import Gradebook

    from autograder.nbgrader import apps, settings
    course = course_copy(_one_assignment)
    assignment = course.assignments[0]
    apps.register(course, assignment, course.root)          # released, and a student has handed in
    with Gradebook(settings.settings(course).CourseDirectory.db_url, course.course_id) as gb:
        gb.add_student("ann")
        gb.add_submission(assignment.id, "ann")

    # a new written answer in the solution notebook and course.yaml
    path = course.source(assignment, assignment.notebook)
    nb = nbformat.read(path, as_version=4)
    cell = nbformat.v4.new_markdown_cell("YOUR ANSWER HERE")
    cell.metadata["nbgrader"] = {"grade_id": "answer_extra", "schema_version": 3, "solution": True,
                                 "grade": True, "locked": False, "points": 1}
    nb.cells.append(cell)
    nbformat.write(nb, path)
    course = course_copy(lambda raw: raw["assignments"][assignment.id]["written"].update(answer_extra=1))
    before = {name: _tree(os.path.join(course.root, name)) for name in ("assignments", "solutions")}
    capsys.readouterr()
    assert cli.main(["--config", course.path, "release"]) == 1
    said = capsys.readouterr().err
    assert "Cannot add or remove cells" in said and "the above traceback" not in said and said.count("\n") == 1
    assert "assignments/ and solutions/ are as they were" in said
    assert {name: _tree(os.path.join(course.root, name)) for name in before} == before

    # a release half made by hand: the released notebook has the cell, the gradebook not
    released = course.release(assignment, assignment.notebook)
    nb = nbformat.read(released, as_version=4)
    nb.cells.append(cell)
    nbformat.write(nb, released)
    submitted = tmp_path / "submitted"
    cohort.write(cohort.solved(course, assignment), str(submitted), "ann", assignment)
    assert cli.main(["--config", course.path, "grade", str(submitted), "--out", course.root]) == 2
    said = capsys.readouterr().err.strip()
    assert "\n" not in said and "disagree (answer_extra)" in said
    assert not os.path.exists(os.path.join(course.root, "results"))
