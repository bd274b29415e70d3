"""Grading that cannot be fooled, hung or broken.

The catalogue in tests/fixtures/hostile/catalogue.py (one submission per hostile or
malformed behaviour, with the grade each must get) is graded in ONE batch by
`course grade`, together with honest students, and every claim is read back from what
that run wrote: parts.csv, nbgrader's gradebook, the submissions folder, the disk and
the process table. The tests after it check the runner's guarantees directly.
"""

import contextlib
import csv
import hashlib
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from autograder import sandbox

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_catalogue():
    path = os.path.join(HERE, "fixtures", "hostile", "catalogue.py")
    spec = importlib.util.spec_from_file_location("hostile_catalogue", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CATALOGUE = _load_catalogue()
ISOLATED = sandbox.jail(announce=False).isolated


def _sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


@pytest.fixture(scope="module")
def batch(course, tmp_path_factory):
    """The catalogue, the reference, a control and a victim, graded by one `course grade`."""
    from autograder import cli
    folder = tmp_path_factory.mktemp("hostile")
    submitted, out = folder / "submitted", folder / "graded"
    token = "left-behind-" + uuid.uuid4().hex[:10]
    expectations = CATALOGUE.build(course, str(submitted), str(out), token)
    victim = submitted / "victim" / "attention" / "attention.ipynb"
    victim_sha = _sha(victim)
    printed, errors = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        code = cli.main(["grade", str(submitted), "--out", str(out), "--jobs", "2"])
    seconds = time.monotonic() - started
    time.sleep(CATALOGUE.LEFT_BEHIND_DELAY + 1.0)     # a surviving process would have written by now
    with open(out / "parts.csv") as fh:
        rows = list(csv.DictReader(fh))
    sys.__stdout__.write(f"\n[hostile catalogue: {len(expectations) + len(CATALOGUE.HONEST)} "
                         f"submissions graded in {seconds:.0f} s, bound {CATALOGUE.BOUND_SECONDS} s; "
                         f"{sandbox.describe()}]\n")
    return dict(folder=folder, submitted=submitted, out=out, token=token, rows=rows, code=code,
                seconds=seconds, expectations=expectations, printed=printed.getvalue(),
                errors=errors.getvalue(), victim=victim, victim_sha=victim_sha)


def _rows(batch, student):
    rows = {r["part"]: r for r in batch["rows"] if r["student"] == student}
    assert rows, f"no grades for {student}"
    return rows


def test_the_batch_finishes_within_its_bound(batch):
    assert batch["code"] == 0, batch["errors"][-2000:]
    assert batch["seconds"] < CATALOGUE.BOUND_SECONDS, batch["seconds"]


@pytest.mark.parametrize("name", list(CATALOGUE.ENTRIES))
def test_hostile_submission_gets_its_grade(course, batch, name):
    expect = batch["expectations"][name]
    if expect.get("isolation") and not ISOLATED:
        pytest.xfail("WEAKER MODE: without the sandbox a submission can read the solutions")
    rows = _rows(batch, name)
    control = _rows(batch, "control-wrong")[CATALOGUE.TARGET]
    assignment = course.assignment("attention")
    assert set(rows) == {p.id for p in assignment.parts}
    for part_id, row in rows.items():
        score, top = float(row["score"]), float(row["max_score"])
        if part_id != CATALOGUE.TARGET and not expect.get("all_parts"):
            assert (score, row["status"]) == (top, "passed"), (name, part_id, row)
            continue
        assert row["status"] == expect["status"], (name, row)
        want = expect["score"]
        if want == "full":
            assert score == top, (name, row)
        elif want == "control":
            assert score == float(control["score"]) < top, (name, row, control)
        elif want == "less":
            assert 0 < score < top, (name, row)
        else:
            assert score == want, (name, row)
        for words in expect.get("reason", []):
            assert words in row["reason"], (name, words, row["reason"])


def test_course_grade_prints_every_submission_and_its_status(batch):
    for name, expect in batch["expectations"].items():
        assert name in batch["printed"], name
    assert "timeout" in batch["printed"] and "missing" in batch["printed"]


def test_honest_grades_are_exactly_what_they_are_alone(course, batch):
    """The hostile students never touch another grade: each honest one, graded again alone, agrees."""
    import concurrent.futures as cf
    import multiprocessing
    from autograder.grading import grade_submission
    students = ["reference", "control-wrong"]
    paths = [str(batch["submitted"] / s / "attention" / "attention.ipynb") for s in students]
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        records = list(pool.map(grade_submission, [course] * 2, ["attention"] * 2, students, paths))
    for student, record in zip(students, records):
        alone = {p["part"]: (p["score"], p["status"]) for p in record["parts"]}
        rows = _rows(batch, student)
        assert {k: (float(r["score"]), r["status"]) for k, r in rows.items()} == alone, student
    if not ISOLATED and _sha(batch["victim"]) != batch["victim_sha"]:
        pytest.xfail("WEAKER MODE: a submission could overwrite another student's notebook")
    for student in ("reference", "victim"):     # the victim is a copy of the reference
        assert all(r["status"] == "passed" and float(r["score"]) == float(r["max_score"])
                   for r in _rows(batch, student).values()), student


def test_no_file_of_another_student_or_outside_the_scratch_folder_was_written(batch):
    if not ISOLATED:
        pytest.xfail("WEAKER MODE: students' code can write wherever the grader can")
    assert _sha(batch["victim"]) == batch["victim_sha"]
    assert not (batch["out"] / "planted-by-snoop.txt").exists()


def test_nothing_left_behind(batch):
    """The processes that left the group are gone and the file they would write is nowhere."""
    token = batch["token"]
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    alive.append(pid)
        except OSError:
            pass
    assert not alive, f"processes of the left-behind submission still run: {alive}"
    found = []
    for top in {str(batch["folder"]), "/tmp", tempfile.gettempdir()}:
        for root, dirs, files in os.walk(top):
            found += [os.path.join(root, f) for f in files if token in f]
    assert not found, found


def test_gradebook_restores_tampered_test_cells(course, batch):
    """nbgrader's own record: an edited or deleted test cell scores what the suites said, out of
    course.yaml's points, never what the notebook claimed."""
    from nbgrader.api import Gradebook
    from autograder import nbgrader_bridge
    points = course.assignment("attention").part(CATALOGUE.TARGET).points
    cfg = nbgrader_bridge.settings(course, str(batch["out"]))
    control = float(_rows(batch, "control-wrong")[CATALOGUE.TARGET]["score"])
    want = {"edits-test-cell": control, "deletes-test-cell": points, "reference": points,
            "control-wrong": control, "deletes-solution-cell": 0.0}
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        for student, score in want.items():
            grade = gb.find_grade(f"check_{CATALOGUE.TARGET}", "attention", "attention", student)
            assert grade.max_score == points, (student, batch["errors"][-3000:])
            assert grade.score == pytest.approx(score), (student, grade.score)
        for name, expect in batch["expectations"].items():
            if expect.get("all_parts"):
                sub = gb.find_submission("attention", name)
                assert sub.score == 0.0, name


def test_the_catalogue_covers_every_behaviour():
    wanted = {"loops-forever", "eats-memory", "sys-exit", "os-exit", "prints-50mb", "patches-numpy",
              "replaces-pytest", "rewrites-display-hooks", "hard-codes-chapter", "edits-test-cell",
              "deletes-test-cell", "deletes-solution-cell", "snoops-on-disk", "left-behind-process",
              "invalid-json", "empty-file", "wrong-nbformat", "wrong-assignment"}
    assert wanted <= set(CATALOGUE.ENTRIES)


# --- the runner's guarantees, one at a time ------------------------------------------------

def _student(workdir, code, **kw):
    from selfcheck.student import Student
    return Student([("probe", code)], workdir=str(workdir), jail=sandbox.jail(announce=False), **kw)


REACH = '''
import os
def can_read(path):
    try:
        with open(path, "rb") as fh:
            fh.read(1)
        return True
    except OSError:
        return False
def can_list(path):
    try:
        os.listdir(path)
        return True
    except OSError:
        return False
def can_write(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return True
    except OSError:
        return False
def corpus_size():
    with open(os.environ["TINYSHAKESPEARE"], "rb") as fh:
        return len(fh.read())
def support():
    import framework_stub
    return framework_stub.VALUE
'''


def test_students_code_sees_only_its_folder(course, tmp_path):
    if not ISOLATED:
        pytest.xfail(sandbox.describe())
    mine, other = tmp_path / "mine", tmp_path / "other-student"
    mine.mkdir()
    other.mkdir()
    (other / "attention.ipynb").write_text("{}")
    (mine / "framework_stub.py").write_text("VALUE = 42\n")
    root = course.root
    secrets = [os.path.join(root, "solutions", "attention", "attention.ipynb"),
               os.path.join(root, "tests", "hidden", "test_softmax.py"),
               os.path.join(root, "data", "chapter_numbers.yaml"),
               os.path.join(root, "course.yaml"), str(other / "attention.ipynb"),
               "/etc/passwd", "/root/.bash_history"]
    student = _student(mine, REACH)
    try:
        for path in secrets:
            assert student.can_read(path) is False, path
        for path in (root, os.path.join(root, "solutions"), os.path.join(root, "tests"), str(other)):
            assert student.can_list(path) is False, path
        assert student.can_write(str(mine / "scratch.txt")) is True
        for path in (str(other / "x"), os.path.join(root, "x"), "/tmp/x", "/x", "/usr/x"):
            assert student.can_write(path) is False, path
        assert student.support() == 42                    # released files beside the notebook
        corpus = sandbox.corpus_path(course)
        if corpus:
            assert student.corpus_size() == os.path.getsize(corpus)
    finally:
        student.close()
    assert not os.path.exists(os.path.join(root, "x"))


def test_a_call_that_never_returns_costs_at_most_two_time_limits(tmp_path):
    """A part whose every call hangs stops after two timeouts: N checks never cost N time limits."""
    from selfcheck.student import MAX_TIMEOUTS, StudentError
    student = _student(tmp_path, "def spin():\n    while True:\n        pass\n", time_limit=1.0)
    kinds, started = [], time.monotonic()
    try:
        for _ in range(8):
            with pytest.raises(StudentError) as info:
                student.spin()
            kinds.append((info.value.kind, info.value.message))
    finally:
        student.close()
    elapsed = time.monotonic() - started
    assert elapsed < MAX_TIMEOUTS * 1.0 + 3.0, elapsed
    assert all(kind == "timeout" for kind, _ in kinds)
    assert "longer than 1 s" in kinds[0][1] and "not run" in kinds[-1][1]


def test_memory_limit_is_the_operating_systems(tmp_path):
    from selfcheck.student import StudentError
    student = _student(tmp_path, "def grab(mb):\n    return len(bytearray(mb << 20))\n", memory_mb=400)
    try:
        assert student.grab(50) == 50 << 20
        with pytest.raises(StudentError) as info:
            student.grab(600)
        assert "MemoryError" in info.value.message and "400 MB" in info.value.message
    finally:
        student.close()


def test_a_part_without_a_verdict_scores_zero_in_nbgrader(tmp_path):
    """ApplyResults writes an error into a test cell it has no verdict for: nbgrader scores it 0."""
    import nbformat
    from autograder.nbgrader_bridge import ApplyResults
    cell = nbformat.v4.new_code_cell("check('softmax')", metadata={"nbgrader": {
        "grade": True, "solution": False, "grade_id": "check_softmax", "points": 4}})
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb, _ = ApplyResults(results_dir=str(tmp_path)).preprocess(
        nb, {"nbgrader": {"student": "nobody", "assignment": "attention"}})
    assert [o["output_type"] for o in nb.cells[0].outputs] == ["error"]


def test_weaker_mode_is_announced(capsys, monkeypatch):
    monkeypatch.setenv("COURSE_SANDBOX", "off")
    sandbox._detect.cache_clear()
    sandbox._ANNOUNCED.clear()
    try:
        jail = sandbox.jail()
        assert jail.isolated is False
        assert "WEAKER MODE" in capsys.readouterr().err
    finally:
        monkeypatch.delenv("COURSE_SANDBOX")
        sandbox._detect.cache_clear()


def test_make_installs_the_sandbox():
    with open(os.path.join(HERE, "..", "Makefile")) as fh:
        text = fh.read()
    assert "bubblewrap" in text and "sandbox" in text.split("test:")[1].splitlines()[0]
    assert subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0 or not ISOLATED
