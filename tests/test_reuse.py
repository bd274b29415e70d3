"""A part graded again on the same program in one process takes the first result
(autograder/grade/reuse.py), and only a result the machine had no say in is kept."""

import pytest

from autograder.grade import suites
from autograder.grade.submission import grade_submission
from autograder.mistakes import cohort

pytestmark = pytest.mark.slow       # grades notebooks in real student processes

KILLED = '''import os, signal


def softmax(z, axis=-1):
    os.kill(os.getpid(), signal.SIGKILL)      # as the host's out-of-memory killer would
'''


def _softmax(course, folder, student, nb):
    assignment = course.assignment("attention")
    path = cohort.write(nb, str(folder), student, assignment)
    return grade_submission(course, assignment.id, student, path, only={"softmax"}).parts[0]


def test_a_copy_takes_the_first_result_and_a_killed_process_is_never_kept(course, tmp_path, monkeypatch):
    from autograder.grade import reuse
    monkeypatch.delenv(reuse.STORE, raising=False)      # this process's memory alone: no earlier run's
    graded = []                     # each part graded for real, in a student process
    run = suites._run
    monkeypatch.setattr(suites, "_run", lambda *args: graded.append(args[2].id) or run(*args))
    solved = cohort.solved(course, course.assignment("attention"))
    first = _softmax(course, tmp_path, "ada", solved)
    copy = _softmax(course, tmp_path, "bob", solved)             # the same program: not graded again
    assert (copy.score, copy.reason, copy.checks) == (first.score, first.reason, first.checks)
    assert len(graded) <= 1, graded          # none when an earlier test in this process graded it
    before = len(graded)
    own = _softmax(course, tmp_path, "cy", cohort.own(solved, "cy"))   # a comment of its own: graded
    assert own.score == first.score and len(graded) == before + 1
    before = len(graded)
    killed = cohort.solved(course, course.assignment("attention"), {"softmax": KILLED})
    for student in ("dee", "eve"):
        result = _softmax(course, tmp_path, student, killed)
        assert result.score == 0 and "SIGKILL" in " ".join(c.message for c in result.checks), result.reason
    assert len(graded) == before + 2, "a part whose process was killed was kept for its copies"


def test_processes_share_results_through_the_cache_folder_and_a_killed_one_is_never_written(
        course, tmp_path, monkeypatch):
    """With $COURSE_GRADE_CACHE set, a part another process graded is read back, not graded again;
    a process that was killed leaves nothing there for the next."""
    import subprocess
    import sys
    from autograder.grade import reuse
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv(reuse.STORE, str(cache))
    monkeypatch.setattr(reuse, "_KEPT", {})              # nothing graded in this process yet
    assignment = course.assignment("attention")
    own = cohort.own(cohort.solved(course, assignment), "shared-through-the-folder")
    path = cohort.write(own, str(tmp_path / "submitted"), "ada", assignment)
    killed = cohort.write(cohort.solved(course, assignment, {"softmax": KILLED}), str(tmp_path / "submitted"),
                          "dee", assignment)
    script = ("import sys; from autograder.course import config; from autograder.grade.submission import "
              "grade_submission as g; c = config.load(); [g(c, 'attention', s, p, only={'softmax'}) "
              "for s, p in zip(sys.argv[1::2], sys.argv[2::2])]")
    done = subprocess.run([sys.executable, "-c", script, "ada", path, "dee", killed], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(cache.glob("*.json"))) == 1, sorted(cache.iterdir())
    graded = []
    run = suites._run
    monkeypatch.setattr(suites, "_run", lambda *args: graded.append(args[2].id) or run(*args))
    there = grade_submission(course, assignment.id, "bob", path, only={"softmax"}).parts[0]
    assert graded == [] and there.score == 4
    assert grade_submission(course, assignment.id, "eve", killed, only={"softmax"}).parts[0].score == 0
    assert graded == ["softmax"], "a killed process's result was read back"


def test_suites_that_run_no_check_are_the_graders_error_never_a_zero_nor_kept(course_copy, tmp_path, monkeypatch):
    """A hidden suite pytest cannot collect (a file broken, an import failing, pytest itself
    refusing) runs no check: the part is the grader's error, graded again on the next run, and no
    result of it is kept for a copy or a later run."""
    from autograder.grade import reuse
    from selfcheck.errors import InfrastructureError
    monkeypatch.setenv("PYTEST_ADDOPTS", "--junitxml=report.xml")     # the grader's own, not the suites'
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv(reuse.STORE, str(cache))
    monkeypatch.setattr(reuse, "_KEPT", {})
    broken = course_copy()
    with open(broken.root + "/" + broken.assignment("attention").part("softmax").hidden, "a") as fh:
        fh.write("\nthis line does not parse\n")
    with pytest.raises(InfrastructureError, match="ran no check .*SyntaxError"):   # a batch: a grader-error
        _softmax(broken, tmp_path, "ada", cohort.solved(broken, broken.assignment("attention")))
    assert not list(cache.iterdir()) and not reuse._KEPT
