"""The gradebook on PostgreSQL (course.yaml's db_url): a throwaway server
(tests/postgres_server.py), and every number the same as with the embedded SQLite gradebook."""

import csv
import glob
import os
import shutil
import subprocess
import sys

import pytest

from autograder import cli, pipeline
from autograder.nbgrader import gradebook, gradebook_rows
from autograder.records import store

import postgres_server  # noqa: E402 - tests/postgres_server.py
from test_batch import _small_cohort  # noqa: E402

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server for this module: the SQLAlchemy URL of an empty database on it."""
    why = postgres_server.usable()
    if why:
        pytest.skip(why)
    with postgres_server.server() as make_database:
        yield make_database("gradebook")


def _rows(path, drop=()):
    with open(path) as fh:
        return [{k: v for k, v in row.items() if k not in drop} for row in csv.DictReader(fh)]


def test_grading_and_every_export_give_the_same_numbers_as_sqlite(course, course_copy, postgres, tmp_path):
    submitted = tmp_path / "submitted"
    made = _small_cohort(course, submitted, mistakes=1)
    lite = tmp_path / "sqlite"
    pipeline.grade(course, str(submitted), str(lite), jobs=2)

    def on_postgres(raw):
        raw["db_url"] = postgres
    pg_course = course_copy(on_postgres)
    pg = tmp_path / "postgres"
    shutil.copytree(lite / "results", pg / "results")     # the same verdicts; only the gradebook differs
    batch = pipeline.grade(pg_course, str(submitted), str(pg), jobs=2)
    assert batch.graded == [] and len(batch.skipped) == len(made)
    assert not (pg / "gradebook.db").exists()

    # hand grades, entered as formgrader enters them, reach the totals from either gradebook
    student, assignment = made[0]
    cell = next(iter(course.assignment(assignment).written))
    for which, folder in ((course, lite), (pg_course, pg)):
        gradebook.set_manual_grade(which, str(folder), student, assignment, cell, 1)
        assert cli.main(["--config", which.path, "export", str(folder)]) == 0

    assert gradebook_rows.scores(pg_course, str(pg)) == gradebook_rows.scores(course, str(lite))
    for name in ("grades.csv", "totals.csv"):
        assert _rows(pg / name) == _rows(lite / name), name
    assert _rows(pg / "parts.csv") == _rows(lite / "parts.csv")
    for path in glob.glob(str(lite / "gradescope" / "*" / "*" / "results.json")):
        assert (pg / os.path.relpath(path, lite)).read_text() == open(path).read()

    # nbgrader's own commands in the grading folder (formgrader's among them) read the same database
    os.remove(pg / "grades.csv")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), "export"], cwd=pg, capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _rows(pg / "grades.csv") == _rows(lite / "grades.csv")
    assert store.read_journal(str(pg))["finished"]
