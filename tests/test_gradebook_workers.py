"""The gradebook stage shares its hand-ins among two forked processes (autograder/nbgrader/apps.py):
every student is autograded once, in shares large enough to be worth a process, and a share that
fails in a worker is autograded again in the batch's own process before anything is called a warning.
A batch's forked workers, grading's and the gradebook's, end with it (autograder/grade/forked.py)."""

import os
import signal
import subprocess
import sys
import time

import pytest
from nbgrader.api import Gradebook

from autograder import pipeline
from autograder.course import config
from autograder.errors import NbgraderError
from autograder.mistakes import cohort
from autograder.nbgrader import apps

COURSE = config.load()
ATTENTION = COURSE.assignment("attention")


def test_students_are_shared_out_once_each_and_small_batches_are_not_split():
    shares = apps._shares({f"s{i:02d}" for i in range(11)}, 2)
    assert len(shares) == 2 and sorted(s for share in shares for s in share) == [f"s{i:02d}" for i in range(11)]
    assert apps._shares({"a", "b", "c"}, 2) == [{"a", "b", "c"}]          # fewer than two shares' worth
    assert apps._shares(None, 2) == [None]                                   # every staged student: one run
    assert apps._shares({f"s{i}" for i in range(40)}, 1) == [{f"s{i}" for i in range(40)}]


def test_a_share_that_fails_in_a_worker_is_autograded_again_here_and_only_nbgraders_failure_is_a_warning(
        monkeypatch, tmp_path):
    parent, done = os.getpid(), tmp_path / "done"
    done.mkdir()

    def autograde(course, assignment, out, only=None):
        if os.getpid() != parent:                       # every worker's gradebook is "busy"
            raise NbgraderError("nbgrader autograde attention failed: database is locked")
        if "broken" in only:
            raise NbgraderError("nbgrader autograde attention failed: a cell was deleted")
        for student in only:
            (done / student).write_text("")
    monkeypatch.setattr(apps, "autograde", autograde)
    students = {f"s{i:02d}" for i in range(12)}
    runs = [(ATTENTION, students), (ATTENTION, {"broken", "x1"})]
    warnings = apps.autograde_all(COURSE, str(tmp_path), runs, workers=2)
    assert sorted(os.listdir(done)) == sorted(students)
    assert warnings == ["nbgrader autograde attention failed: a cell was deleted"], warnings


_BATCH = """
import os, sys, time
from autograder.grade import forked
pool = forked.pool(1)
print(pool.submit(os.getpid).result(), flush=True)
pool.submit(time.sleep, 120)
time.sleep(120)
"""


def _ended(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in fh)
    except FileNotFoundError:
        return True


def test_a_batchs_workers_end_when_a_supervisor_ends_the_batch_alone():
    """SIGTERM to the command's process only (not its group, as Ctrl-C is) ends its workers too."""
    batch = subprocess.Popen([sys.executable, "-c", _BATCH], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             start_new_session=True)
    worker = int(batch.stdout.readline())
    try:
        batch.send_signal(signal.SIGTERM)
        batch.wait(timeout=30)
        deadline = time.monotonic() + 10
        while not _ended(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _ended(worker), "the worker outlived the batch"
    finally:
        batch.kill()
        if not _ended(worker):
            os.kill(worker, signal.SIGKILL)


@pytest.mark.slow
def test_a_student_of_two_assignments_autograded_in_both_workers_at_once_is_made_once(tmp_path, monkeypatch):
    """Two assignments' shares run side by side with the same four students: the gradebook gets each
    student once, from the batch's process, and no share fails in a worker on a student the other made."""
    students = [f"s{i}" for i in range(4)]
    assignments = COURSE.assignments[:2]
    for assignment in assignments:
        for student in students:
            cohort.write(cohort.solved(COURSE, assignment), str(tmp_path / "submitted"), student, assignment)
    parent, here = os.getpid(), []
    autograde = apps.autograde

    def recorded(course, assignment, out, only=None):     # the workers are forked: they run it too
        if os.getpid() == parent:
            here.append((assignment.id, sorted(only)))
        else:       # the race needs a moment to show; its cause is always there: a student not made yet
            with Gradebook(apps.settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
                missing = set(only) - {student.id for student in gb.students}
            if missing:
                raise NbgraderError(f"{sorted(missing)} not in the gradebook before the workers started")
        return autograde(course, assignment, out, only=only)
    monkeypatch.setattr(apps, "autograde", recorded)
    out = str(tmp_path / "out")
    batch = pipeline.grade(COURSE, str(tmp_path / "submitted"), out, jobs=2)
    assert not [w for w in batch.warnings if "nbgrader" in w], batch.warnings
    assert here == [], f"autograded again in the batch's process after failing in a worker: {here}"
    with Gradebook(apps.settings(COURSE, out).CourseDirectory.db_url, COURSE.course_id) as gb:
        assert sorted(s.id for s in gb.students) == students
        for assignment in assignments:
            assert sorted(s.student.id for s in gb.assignment_submissions(assignment.id)) == students


@pytest.mark.slow
def test_a_hand_in_the_grader_failed_on_is_neither_asked_of_nbgrader_nor_recorded(tmp_path, monkeypatch):
    """Its assignment's run holds no one else: nothing goes to nbgrader (which would say no notebook
    matched), no warning, and its student is not in the gradebook."""
    from autograder.grade import grading
    assignment = COURSE.assignments[1]
    cohort.write(cohort.solved(COURSE, assignment), str(tmp_path / "submitted"), "unlucky", assignment)

    def broken(*_):
        raise RuntimeError("the sandbox did not start")
    monkeypatch.setattr(grading, "grade_submission", broken)     # the workers are forked: theirs too
    out = str(tmp_path / "out")
    batch = pipeline.grade(COURSE, str(tmp_path / "submitted"), out, jobs=2)
    assert [r.grader_error for r in batch.records] == [True]
    assert not [w for w in batch.warnings if "nbgrader" in w], batch.warnings
    with Gradebook(apps.settings(COURSE, out).CourseDirectory.db_url, COURSE.course_id) as gb:
        assert [s.id for s in gb.students] == []
