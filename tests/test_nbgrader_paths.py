"""Every path an instructor may take grades alike, with real nbgrader and a real Jupyter server.

`course grade`, plain `nbgrader autograde`, formgrader's Autograde button (through its HTTP
API) and `nbgrader validate` on the same notebooks: the untouched stub scores 0, the solved
notebook full marks, a catalogued mistake the same partial credit everywhere, and a stub
that patches the check in its kernel still 0. Hand-ins are whole assignment folders, as
nbgrader's exchange delivers them, so the self-check kit is there for a kernel to call.
"""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from autograder import cli, pipeline
from autograder.mistakes import cohort
from autograder.records import store

pytestmark = pytest.mark.slow

BIN = os.path.dirname(sys.executable)
CHEAT = "\nimport selfcheck\nselfcheck.check = lambda *args, **kwargs: None\n"


def _env(**extra):
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), MPLBACKEND="Agg", **extra)


def _notebooks(course, assignment):
    """student -> notebook: the stub, the solution, one catalogued mistake, a stub that cheats."""
    part = assignment.parts[0]
    mistake = next(e for e in cohort.catalogue(course, part.id)[0].values() if e.get("demo"))
    cheat = cohort.stub(course, assignment)
    cell = next(c for c in cheat["cells"] if (c.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
                == part.cells[0])
    cell["source"] = "".join(cell["source"]) + CHEAT
    return {"stub": cohort.stub(course, assignment), "solved": cohort.solved(course, assignment),
            "mistake": cohort.solved(course, assignment, mistake["cells"]), "cheat": cheat}


def _hand_in(course, folder, student, assignment, nb):
    """``folder/<student>/<assignment>/``: the released folder with the student's notebook in it."""
    dest = os.path.join(folder, student, assignment.id)
    shutil.copytree(course.release(assignment), dest, ignore=shutil.ignore_patterns("__pycache__"))
    cohort.write(nb, folder, student, assignment)
    return os.path.join(dest, assignment.notebook)


def _auto_scores(course, folder):
    """(student, assignment) -> the autograded score nbgrader's gradebook holds."""
    from autograder.nbgrader import gradebook_rows
    return {key: round(entry["score"], 3) for key, entry in gradebook_rows.scores(course, folder).items()}


@pytest.fixture(scope="module")
def assignment(course):
    return course.assignments[0]


@pytest.fixture(scope="module")
def by_course_grade(course, assignment, tmp_path_factory):
    """The four notebooks graded by `course grade`: (student -> score in the gradebook)."""
    folder = tmp_path_factory.mktemp("course-grade")
    for student, nb in _notebooks(course, assignment).items():
        _hand_in(course, str(folder / "submitted"), student, assignment, nb)
    pipeline.grade(course, str(folder / "submitted"), str(folder), jobs=2)
    return {s: score for (s, a), score in _auto_scores(course, str(folder)).items() if a == assignment.id}


@pytest.fixture(scope="module")
def nbgrader_folder(course, assignment, tmp_path_factory):
    """A course folder in which nbgrader's own commands are run, the assignment in its gradebook."""
    from autograder.nbgrader import apps, settings
    folder = tmp_path_factory.mktemp("nbgrader")
    settings.write_course_folder(course, str(folder))
    apps.register(course, assignment, str(folder))
    return folder


def test_the_scores_course_grade_gives(course, assignment, by_course_grade):
    full = sum(p.points for p in assignment.parts)
    assert by_course_grade["stub"] == 0 and by_course_grade["cheat"] == 0
    assert by_course_grade["solved"] == full
    assert 0 < by_course_grade["mistake"] < full


def test_nbgrader_autograde_after_course_grade_takes_the_course_s_results_for_the_copies_it_staged(
        course, assignment, tmp_path):
    """`course grade` from a folder of hand-ins stages each one for nbgrader, rebuilt (its bytes
    differ). nbgrader's own autograde in the grading folder afterwards (formgrader's Autograde
    button alike) must apply the course's results to those copies, not grade them again: a
    rebuilt copy can grade differently, and its time is the one of the last grading."""
    hand_ins, out = tmp_path / "hand-ins", tmp_path / "out"
    notebooks = _notebooks(course, assignment)
    for student in ("solved", "mistake"):
        _hand_in(course, str(hand_ins), student, assignment, notebooks[student])
    pipeline.grade(course, str(hand_ins), str(out), jobs=2)
    before = {s: store.read_result(str(out), s, assignment.id) for s in ("solved", "mistake")}
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), "autograde", assignment.id, "--force"], cwd=out,
                          env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "with the course's suites" not in proc.stderr, "a staged copy was graded again"
    assert {s: store.read_result(str(out), s, assignment.id) for s in before} == before


def test_plain_nbgrader_autograde_grades_with_the_course_grader(course, assignment, nbgrader_folder,
                                                                by_course_grade):
    for student, nb in _notebooks(course, assignment).items():
        _hand_in(course, str(nbgrader_folder / "submitted"), student, assignment, nb)
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), "autograde", assignment.id], cwd=nbgrader_folder,
                          env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "with the course's suites" in proc.stderr
    scores = {s: score for (s, a), score in _auto_scores(course, str(nbgrader_folder)).items()
              if a == assignment.id}
    assert scores == by_course_grade
    # it wrote the results `course grade` writes, so the course's exports agree with nbgrader
    assert cli.main(["export", str(nbgrader_folder)]) == 0
    with open(nbgrader_folder / "results" / "mistake" / f"{assignment.id}.json") as fh:
        assert sum(p["score"] for p in json.load(fh)["parts"]) == pytest.approx(by_course_grade["mistake"])


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def formgrader(folder, token, runtime):
    """A Jupyter server, formgrader with it, serving ``folder`` to ``token``: its base URL."""
    port = _free_port()
    server = subprocess.Popen(
        [os.path.join(BIN, "jupyter"), "server", "--allow-root", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}"],
        cwd=folder, env=_env(JUPYTER_RUNTIME_DIR=str(runtime)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _call(f"{base}/api/status", token)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the Jupyter server did not start"
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=60)


def _call(url, token, method="GET"):
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None,
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def test_formgraders_autograde_button_grades_with_the_course_grader(course, assignment, nbgrader_folder,
                                                                    by_course_grade, tmp_path):
    notebooks = _notebooks(course, assignment)
    for student in ("stub", "solved", "cheat"):
        _hand_in(course, str(nbgrader_folder / "submitted"), f"fg-{student}", assignment, notebooks[student])
    token = "formgrader-test-token"
    with formgrader(nbgrader_folder, token, tmp_path / "runtime") as base:
        for student in ("stub", "solved", "cheat"):
            pressed = _call(f"{base}/formgrader/api/submission/{assignment.id}/fg-{student}/autograde", token,
                            method="POST")
            assert pressed["success"], pressed.get("error", "")[-3000:]
        listed = _call(f"{base}/formgrader/api/submissions/{assignment.id}", token)
    scores = {row["student"]: row["code_score"] for row in listed}
    for student in ("stub", "solved", "cheat"):
        assert scores[f"fg-{student}"] == by_course_grade[student], student
        assert (nbgrader_folder / "results" / f"fg-{student}" / f"{assignment.id}.json").exists()


def test_nbgrader_validate_fails_the_stub_and_passes_the_solution(course, tmp_path, monkeypatch):
    from nbgrader.validator import Validator
    monkeypatch.chdir(tmp_path)
    # the kernels run every cell; without the corpus the experiment cells stop at once, not after 30 s
    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    for assignment in course.assignments:
        for student in ("stub", "solved"):
            nb = cohort.stub(course, assignment) if student == "stub" else cohort.solved(course, assignment)
            path = _hand_in(course, str(tmp_path), student, assignment, nb)
            result = Validator().validate(path)
            checks = [c for c in result.get("failed", []) if "check(" in c.get("source", "")]
            if student == "stub":
                assert len(checks) == len(assignment.parts), (assignment.id, result)
                assert "SelfCheckFailed" in checks[0]["error"]
            else:
                assert result == {}, (assignment.id, result)
