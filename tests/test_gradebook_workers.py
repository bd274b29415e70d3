"""The gradebook stage shares its hand-ins among two forked processes (autograder/nbgrader/apps.py):
every student is autograded once, in shares large enough to be worth a process, and a share that
fails in a worker is autograded again in the batch's own process before anything is called a warning."""

import os

from autograder.course import config
from autograder.errors import NbgraderError
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
