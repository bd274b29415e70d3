"""The gradebook on PostgreSQL (course.yaml's db_url): a throwaway server, and every number the
same as with the embedded SQLite gradebook.

The server runs as an unprivileged user (PostgreSQL refuses root) on a unix socket in a
temporary folder, never on a network port.
"""

import contextlib
import csv
import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

from autograder import cli, pipeline, store
from autograder.nbgrader import gradebook

from test_batch import _small_cohort  # noqa: E402

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)


def _initdb():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb")]
    return os.path.dirname(found[-1]) if found[-1] else None


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server for this module: the SQLAlchemy URL of an empty database on it."""
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed: pip install -e '.[postgres]' "
                                           "(make test does)")
    pg = _initdb()
    if pg is None:
        pytest.skip("PostgreSQL is not installed (make test installs Debian's postgresql when root)")
    user = "nobody" if os.geteuid() == 0 else None
    folder = tempfile.mkdtemp(prefix="course-pg-")
    os.chmod(folder, 0o755)
    data, socket_dir = os.path.join(folder, "data"), os.path.join(folder, "socket")
    os.makedirs(socket_dir)
    if user:
        entry = pwd.getpwnam(user)
        for path in (folder, socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def run(*argv):
        cmd = (["runuser", "-u", user, "--"] if user else []) + list(argv)
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=folder)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"

    run(os.path.join(pg, "initdb"), "-D", data, "-U", "grader", "--auth=trust", "-E", "UTF8")
    run(os.path.join(pg, "pg_ctl"), "-D", data, "-w", "-l", os.path.join(folder, "server.log"),
        "-o", f"-k {socket_dir} -c listen_addresses=''", "start")
    try:
        run(os.path.join(pg, "createdb"), "-h", socket_dir, "-U", "grader", "gradebook")
        yield f"postgresql+psycopg2://grader@/gradebook?host={socket_dir}"
    finally:
        with contextlib.suppress(AssertionError):
            run(os.path.join(pg, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


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

    assert gradebook.scores(pg_course, str(pg)) == gradebook.scores(course, str(lite))
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
