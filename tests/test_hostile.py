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
import re
import subprocess
import shutil
import sys
import tempfile
import time
import uuid

import pytest

from autograder import sandbox

pytestmark = [pytest.mark.slow, pytest.mark.corpus,   # one graded batch of hostile notebooks,
              pytest.mark.usefixtures("graded_for_real")]    # each honest one graded beside them

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
def hostile_course(tmp_path_factory):
    """A copy of the course whose parts have ``PART_BUDGET`` seconds each, so the submission that
    is slow in every call costs that budget, not the course's larger one."""
    import yaml
    from autograder.course import config, corpus
    root = tmp_path_factory.mktemp("course")
    for name in ("solutions", "assignments", "parts", "data"):
        shutil.copytree(os.path.join(config.ROOT, name), root / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.png", "projection_removal.json"))
    with open(os.path.join(config.ROOT, "course.yaml")) as fh:
        raw = yaml.safe_load(fh)
    raw["limits"]["time_per_part"] = CATALOGUE.PART_BUDGET
    with open(root / "course.yaml", "w") as fh:
        yaml.safe_dump(raw, fh)
    os.environ.setdefault("TINYSHAKESPEARE", corpus.find(config.load()))
    return config.load(str(root / "course.yaml"))


@pytest.fixture(scope="module")
def batch(hostile_course, tmp_path_factory, request):
    """The catalogue and the honest students, graded by one `course grade --jobs 2`."""
    from autograder import cli
    course = hostile_course
    folder = tmp_path_factory.mktemp("hostile")
    submitted, out = folder / "submitted", folder / "graded"
    token = "left-behind-" + uuid.uuid4().hex[:10]
    expectations = CATALOGUE.build(course, str(submitted), str(out), token)
    victim = submitted / "victim" / "attention" / "attention.ipynb"
    victim_sha = _sha(victim)
    printed, errors = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        code = cli.main(["--config", course.path, "grade", str(submitted), "--out", str(out), "--jobs", "2"])
    seconds = time.monotonic() - started
    time.sleep(CATALOGUE.LEFT_BEHIND_DELAY + 1.0)     # a surviving process would have written by now
    with open(out / "parts.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    request.config._course_summary = getattr(request.config, "_course_summary", []) + [
        f"hostile catalogue: {len(expectations) + len(CATALOGUE.HONEST)} submissions graded in "
        f"{seconds:.0f} s, bound {CATALOGUE.BOUND_SECONDS} s"]
    return dict(folder=folder, submitted=submitted, out=out, token=token, rows=rows, code=code,
                seconds=seconds, expectations=expectations, printed=printed.getvalue(),
                errors=errors.getvalue(), victim=victim, victim_sha=victim_sha, course=course)


def _rows(batch, student, assignment=None):
    """The parts.csv rows of a student (its id as it is)."""
    rows = {r["part"]: r for r in batch["rows"]
            if r["student"] == student and assignment in (None, r["assignment"])}
    assert rows, f"no grades for {student}"
    return rows


def test_the_batch_finishes_within_its_bound(batch):
    assert batch["code"] == 0, batch["errors"][-2000:]
    assert batch["seconds"] < CATALOGUE.BOUND_SECONDS, batch["seconds"]


@pytest.mark.parametrize("name", list(CATALOGUE.ENTRIES))
def test_hostile_submission_gets_its_grade(batch, name):
    course = batch["course"]
    expect = batch["expectations"][name]
    if expect.get("refused"):
        assert not [r for r in batch["rows"] if r["student"] == name], name
        said = [line for line in batch["printed"].splitlines() if name in line and "left out" in line]
        assert said and all(w in said[0] for w in expect["refused"]), (name, said)
        return
    if expect.get("isolation") and not ISOLATED:
        pytest.xfail("WEAKER MODE: without the sandbox a submission can read the solutions")
    assignment = course.assignment(expect.get("assignment", "attention"))
    target = expect.get("part", CATALOGUE.TARGET)
    rows = _rows(batch, name, assignment.id)
    control = _rows(batch, expect.get("control", "control-wrong"), assignment.id)[target]
    assert set(rows) == {p.id for p in assignment.parts}
    for part_id, row in rows.items():
        score, top = float(row["score"]), float(row["max_score"])
        if part_id != target and not expect.get("all_parts"):
            assert (score, row["status"]) == (top, "passed"), (name, part_id, row)
            continue
        statuses = expect["status"] if isinstance(expect["status"], tuple) else (expect["status"],)
        assert row["status"] in statuses, (name, row)
        want = expect["score"]
        if want == "full":
            assert score == top, (name, row)
        elif want == "control":
            assert score == float(control["score"]) < top, (name, row, control)
        elif want == "at most control":
            assert score <= float(control["score"]) < top, (name, row, control)
        elif want == "less":
            assert 0 < score < top, (name, row)
        else:
            assert score == want, (name, row)
        for words in expect.get("reason", []):
            assert words in row["reason"], (name, words, row["reason"])


def test_course_grade_prints_every_submission_and_its_status(batch):
    for name, expect in batch["expectations"].items():
        assert name in batch["printed"], name
    refused_ids = [n for n, e in batch["expectations"].items() if "not a usable student id" in e.get("refused", [])]
    assert batch["printed"].count("not a usable student id") == len(CATALOGUE.BAD_FOLDER_NAMES) + len(refused_ids)
    assert "timeout" in batch["printed"] and "missing" in batch["printed"]


def test_nothing_printed_runs_in_the_graders_terminal(batch):
    """File names that are terminal escapes (a title, a cleared screen, a clipboard write, hidden
    text) and error messages holding them reach `course grade`'s output as visible text."""
    said = batch["printed"] + batch["errors"]
    assert not [c for c in CATALOGUE.ESCAPES if c in said], [said[max(0, said.find(c) - 200):said.find(c) + 50]
                                                            for c in CATALOGUE.ESCAPES if c in said]
    line = next(x for x in batch["printed"].splitlines() if "left out of escapes-in-file-names/" in x)
    for name in CATALOGUE.ESCAPING_NAMES:
        assert name.encode("unicode_escape").decode() in line, (name, line)


def test_honest_grades_are_exactly_what_they_are_alone(batch):
    """The hostile students never touch another grade: each honest one, graded again alone, agrees."""
    import concurrent.futures as cf
    import multiprocessing
    from autograder.grade.submission import grade_submission
    course = batch["course"]
    honest = list(CATALOGUE.HONEST.items())
    paths = [str(batch["submitted"] / s / a / course.assignment(a).notebook) for s, (a, _) in honest]
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        records = list(pool.map(grade_submission, [course] * len(honest), [a for _, (a, _) in honest],
                                [s for s, _ in honest], paths))
    for (student, (assignment, _)), record in zip(honest, records):
        alone = {p.part: (p.score, p.status) for p in record.parts}
        rows = _rows(batch, student, assignment)
        assert {k: (float(r["score"]), r["status"]) for k, r in rows.items()} == alone, student
    if not ISOLATED and _sha(batch["victim"]) != batch["victim_sha"]:
        pytest.xfail("WEAKER MODE: a submission could overwrite another student's notebook")
    neighbour = f"spins-in-{CATALOGUE.SPINNERS}-processes-neighbour"   # trained models beside the spinner
    for student in ("reference", "victim", "reference-tiny", neighbour):   # the victim: a copy of the reference
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


def test_gradebook_restores_tampered_test_cells(batch):
    """nbgrader's own record: an edited or deleted test cell scores what the suites said, out of
    course.yaml's points, never what the notebook claimed."""
    from nbgrader.api import Gradebook
    from autograder.nbgrader.settings import settings
    course = batch["course"]
    points = course.assignment("attention").part(CATALOGUE.TARGET).points
    cfg = settings(course, str(batch["out"]))
    control = float(_rows(batch, "control-wrong")[CATALOGUE.TARGET]["score"])
    want = {"edits-test-cell": control, "deletes-test-cell": points, "reference": points,
            "control-wrong": control, "deletes-solution-cell": 0.0}
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        for student, score in want.items():
            grade = gb.find_grade(course.assignment("attention").part(CATALOGUE.TARGET).check_cell, "attention",
                                  "attention", student)
            assert grade.max_score == points, (student, batch["errors"][-3000:])
            assert grade.score == pytest.approx(score), (student, grade.score)
        for name, expect in batch["expectations"].items():
            if expect.get("all_parts"):
                sub = gb.find_submission("attention", name)
                assert sub.score == 0.0, name


def test_the_gradebook_agrees_with_the_results(batch):
    """nbgrader's gradebook holds every part's score as the course grader recorded it, out of
    course.yaml's points, whatever a hand-in's metadata claimed (points, duplicate grade ids)."""
    from nbgrader.api import Gradebook
    from autograder.nbgrader.settings import settings
    course = batch["course"]
    cfg = settings(course, str(batch["out"]))
    disagree = []
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        for row in batch["rows"]:
            notebook = os.path.splitext(course.assignment(row["assignment"]).notebook)[0]
            grade = gb.find_grade(course.assignment(row["assignment"]).part(row["part"]).check_cell, notebook,
                                  row["assignment"], row["student"])
            if (grade.score, grade.max_score) != (float(row["score"]), float(row["max_score"])):
                disagree.append((row["student"], row["part"], grade.score, grade.max_score, row["score"]))
    assert not disagree, disagree


def test_nbgrader_carries_only_what_the_release_declares(batch):
    """A page handed in beside the notebook never reaches autograded/ (which formgrader serves),
    and the batch says it left it out."""
    course = batch["course"]
    for student in os.listdir(batch["out"] / "autograded"):
        for assignment in os.listdir(batch["out"] / "autograded" / student):
            names = set(os.listdir(batch["out"] / "autograded" / student / assignment))
            assert names <= set(os.listdir(course.source(course.assignment(assignment)))) | {"timestamp.txt"}, \
                (student, names)
    assert "left out of hands-in-a-page/attention: notes.html (not a regular file of the release)" in batch["printed"]


def test_no_escape_to_the_host(batch):
    """The remount attack planted nothing in the venv and ran nothing outside its sandbox."""
    import glob
    planted = glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", CATALOGUE.PTH_NAME))
    assert not planted, planted
    assert not os.path.exists("/tmp/hostile-escaped")


def test_every_export_holds_clean_spreadsheet_safe_text(batch):
    """Odd text from a submission reaches no export unclean, no export is cut short, every text
    field is quoted, no piece a spreadsheet could split off (at ; , a tab or a newline) starts a
    formula, and every student id is written unchanged: -john@x.edu as it is. Every CSV among the
    outputs is read, its id columns the ones its Output names, so a new CSV export is checked too."""
    import unicodedata
    from autograder import pipeline
    out = batch["out"]
    students = {r["student"] for r in batch["rows"]}
    assert "-john@x.edu" in students
    csvs = [output for output in pipeline.OUTPUTS if output.path.endswith(".csv")]
    assert {"parts.csv", "totals.csv", "grades.csv"} <= {output.path for output in csvs}
    for output in csvs:
        name = output.path
        with open(out / name, encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        with open(out / name, encoding="utf-8", newline="") as fh:      # every unquoted field is a number
            list(csv.reader(fh, quoting=csv.QUOTE_NONNUMERIC))
        id_columns = [rows[0].index(column) for column in output.ids]
        cells = [cell for row in rows for i, cell in enumerate(row) if i not in id_columns]
        assert not [c for c in cells if any(unicodedata.category(ch) in ("Cc", "Cs") and ch not in "\n\t"
                                            for ch in c)], name
        assert not [c for c in cells if "\u202e" in c], name
        pieces = [p.lstrip(" \t") for c in cells for p in re.split(r"[;,\t\n\r]", c)]
        assert not [p for p in pieces if p.startswith(("=", "+", "-", "@"))
                    and not re.fullmatch(r"[+-]([\d.]+(e[+-]?\d+)?|inf|nan)[ )\]}]*", p, re.I)], name
        ids = {row[i] for row in rows[1:] for i in id_columns} - {""}
        if not ids:
            continue                # no roster: moodle_grades.csv has no e-mail nor ID number to match by
        assert "-john@x.edu" in ids and "'-john@x.edu" not in ids, name
        assert students <= ids, (name, students - ids)
    odd = _rows(batch, "odd-text-in-errors")[CATALOGUE.TARGET]["reason"]
    assert "lone surrogate" in odd and "\ufffd" in odd
    assert ";'=1+2;'@SUM(1+1);'=cmd|" in odd, odd


def test_no_solution_source_reaches_a_student(batch):
    """The other parts' reference code is not in the student's process: a submission that hunts
    for it there and raises what it finds shows nothing of it."""
    from autograder.release import assignments
    course = batch["course"]
    from selfcheck.program import grade_id, read_notebook, source
    assignment = course.assignment("attention")
    # the page shows the student's own written answers (here the model answers, handed in)
    handed_in = read_notebook(str(batch["submitted"] / "reads-the-stand-ins" / "attention" / "attention.ipynb"))
    own = "\n".join(source(c) for c in handed_in["cells"] if grade_id(c) in assignment.written)
    lines = [line for line in assignments._solution_lines(course, assignment) if line not in own]
    seen = " ".join(r["reason"] for r in _rows(batch, "reads-the-stand-ins").values())
    with open(batch["out"] / "reports" / "reads-the-stand-ins" / "attention.html", encoding="utf-8") as fh:
        seen += fh.read()
    with open(batch["out"] / "results" / "reads-the-stand-ins" / "attention.json", encoding="utf-8") as fh:
        seen += fh.read()
    leaked = [line for line in lines if line in seen]
    assert not leaked, leaked


def test_a_part_ends_within_its_budget(batch):
    """A part whose calls sleep (no CPU time) ends at its budget's wall-clock backstop."""
    import json
    from selfcheck.student import WALL_FACTOR
    with open(batch["out"] / "results" / "slow-calls" / "attention.json") as fh:
        record = json.load(fh)
    part = next(p for p in record["parts"] if p["part"] == CATALOGUE.TARGET)
    assert part["seconds"] < WALL_FACTOR * CATALOGUE.PART_BUDGET + 10, part["seconds"]
    assert any("not run" in c["message"] for c in part["checks"]), part["reason"]


def test_nbgrader_feedback_is_sanitised(batch):
    """A written answer's <script> and event handlers never reach nbgrader's feedback page."""
    from autograder.nbgrader import apps
    course = batch["course"]
    for student in ("script-in-answer", "hostile-attachments"):
        apps.generate_feedback(course, course.assignment("attention"), str(batch["out"]), student)
        with open(batch["out"] / "feedback" / student / "attention" / "attention.html", encoding="utf-8") as fh:
            page = fh.read()
        with open(batch["out"] / "autograded" / student / "attention" / "attention.ipynb", encoding="utf-8") as fh:
            autograded = fh.read()      # what formgrader shows the instructor
        with open(batch["out"] / "reports" / student / "attention.html", encoding="utf-8") as fh:
            course_page = fh.read()     # the course's own page, the answer in it
        for text in (page, autograded, course_page):
            assert "the keys are alike" in text, student
            assert not re.search(r"<script[^>]*>[^<]*HOSTILE", text), "a student's script survived"
            assert not re.search(r"<[a-zA-Z]+\s[^>]*\bon\w+\s*=", text), "an event handler survived"
            assert not re.search(r"(href|src)\s*=\s*[\"']?\s*javascript:", text), "a javascript: link survived"
            assert "data:image/svg" not in text and "data:text" not in text, "an attachment that is no image"
            assert "attachment:" not in text.replace('"attachments"', ""), "an attachment left for a renderer"
        if student == "hostile-attachments":
            for text in (page, course_page):
                assert "(image a.svg not shown: an SVG image can carry a script" in text
                assert "(image c.png not shown: not a PNG image)" in text


def test_collect_never_follows_a_link(course, tmp_path):
    """nbgrader collect, as the course configures it: a hand-in that is a link, or becomes one
    between listing and copying, or holds links, or is owned by another user, never brings in
    anything but the student's own regular files."""
    from autograder.nbgrader import exchange
    from autograder.nbgrader.plugins import SafeCollect
    from autograder.nbgrader.settings import settings
    from nbgrader.coursedir import CourseDirectory
    root = tmp_path / "exchange"
    exchange.setup(course, str(tmp_path))      # the exchange is <folder>/exchange
    inbound = root / course.course_id / "inbound"
    solutions = course.source(course.assignment("attention"))
    stamp = "2026-12-01 10:00:00.000000 UTC"
    owners = ("carol", "nobody") if os.geteuid() == 0 else ()   # giving a file away takes root
    for name in ("alice", "bob") + owners:
        folder = inbound / f"{name}+attention+{stamp}+x"
        folder.mkdir()
        (folder / "attention.ipynb").write_text("{}")
    (inbound / f"alice+attention+{stamp}+x" / "stolen.ipynb").symlink_to(
        os.path.join(solutions, "attention.ipynb"))
    os.symlink(solutions, inbound / f"dave+attention+{stamp}+x")
    for name in owners:                                     # carol's hand-in was made by someone else
        for path in (inbound / f"{name}+attention+{stamp}+x", inbound / f"{name}+attention+{stamp}+x" / "attention.ipynb"):
            os.chown(path, 65534, 65534)
    cfg = settings(course, str(tmp_path))
    cfg.Exchange.root = str(root)
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id = "attention"
    collect = SafeCollect(coursedir=coursedir, config=cfg)
    collect.init_src()
    collect.init_dest()
    bob = inbound / f"bob+attention+{stamp}+x"              # swapped for a link after the listing
    os.rename(bob, tmp_path / "bob-real")
    os.symlink(solutions, bob)
    collect.copy_files()
    submitted = tmp_path / "submitted"
    assert sorted(os.listdir(submitted)) == ["alice"] + ["nobody"] * bool(owners), os.listdir(submitted)
    kit = set(os.listdir(course.release(course.assignment("attention")))) - {"attention.ipynb", "__pycache__"}
    assert sorted(os.listdir(submitted / "alice" / "attention")) == sorted({"attention.ipynb", "timestamp.txt"} | kit)
    for folder, _, files in os.walk(submitted):
        assert not any(os.path.islink(os.path.join(folder, f)) for f in files)


def test_the_catalogue_covers_every_behaviour():
    wanted = {"loops-forever", "eats-memory", "sys-exit", "os-exit", "prints-50mb", "patches-numpy",
              "replaces-pytest", "rewrites-display-hooks", "hard-codes-chapter", "edits-test-cell",
              "deletes-test-cell", "deletes-solution-cell", "snoops-on-disk", "left-behind-process",
              "invalid-json", "empty-file", "wrong-nbformat", "wrong-assignment",
              "remounts-the-sandbox", "mutates-input-under-patched-numpy", "exhausts-pids", "fills-tmpfs",
              "many-processes-eat-memory", "slow-calls", "odd-text-in-errors", "huge-reply",
              "reads-the-stand-ins", "symlink-to-solutions", "folder-symlink", "deeply-nested-notebook",
              "=1+2", "'-john@x.edu", "j\u0430ne", "-john@x.edu", "escapes-in-file-names", "script-in-answer", "shadows-given-model", "stand-in-as-oracle", "malformed-metadata",
              "batch.json", "given-amplifier", "adds-a-given-cell", "hands-in-a-page", "inflated-duplicate-ids",
              "fifo-notebook", "student-folder-symlink"}
    assert wanted <= set(CATALOGUE.ENTRIES)


# --- the runner's guarantees, one at a time ------------------------------------------------

def _student(workdir, code, *, time_limit=10.0, budget=None, memory_mb=1024):
    """The process of a student whose code is ``code``: ``time_limit`` of CPU time per call and,
    with a ``budget``, that much for all the calls together, as a part has at grading."""
    from selfcheck.limits import Limits
    from selfcheck.student import Student
    limits = Limits(time_per_test=time_limit, time_per_part=budget or time_limit, memory_mb=memory_mb)
    return Student([("probe", code)], workdir=str(workdir), limits=limits, budget=budget is not None,
                   jail=sandbox.jail(announce=False))


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
               os.path.join(root, "parts", "softmax", "hidden.py"),
               os.path.join(root, "data", "chapter_numbers.yaml"),
               os.path.join(root, "course.yaml"), str(other / "attention.ipynb"),
               "/etc/passwd", "/root/.bash_history"]
    student = _student(mine, REACH)
    try:
        for path in secrets:
            assert student.can_read(path) is False, path
        for path in (root, os.path.join(root, "solutions"), os.path.join(root, "parts"), str(other)):
            assert student.can_list(path) is False, path
        assert student.can_write("scratch.txt") is True          # its own folder, a tmpfs
        for path in (str(mine / "x"), str(other / "x"), os.path.join(root, "x"), "/tmp/x", "/x",
                     "/usr/x", "/dev/x", "framework_stub.py"):
            assert student.can_write(path) is False, path
        assert student.support() == 42                    # released files beside the notebook
        corpus = sandbox.corpus_path(course)
        if corpus:
            assert student.corpus_size() == os.path.getsize(corpus)
    finally:
        student.close()
    assert not os.path.exists(os.path.join(root, "x"))
    assert (mine / "framework_stub.py").read_text() == "VALUE = 42\n"


PRIVILEGE = '''
import ctypes, os
def report():
    libc = ctypes.CDLL(None, use_errno=True)
    caps = {line.split(":")[0]: int(line.split()[1], 16) for line in open("/proc/self/status")
            if line.startswith("Cap")}
    remounted = [p for p in ("/", "/usr", "/opt/venv", "/opt/grader", "/scratch")
                 if libc.mount(None, p.encode(), None, 32 | 4096, None) == 0
                 or libc.mount(None, p.encode(), None, 32, None) == 0]
    written = []
    for path in ("/x", "/usr/x", "/opt/venv/x", "/opt/grader/x", "/dev/x", "/proc/sys/kernel/core_pattern"):
        try:
            with open(path, "w") as fh:
                fh.write("x")
            written.append(path)
        except OSError:
            pass
    with open("mine.txt", "w") as fh:
        fh.write("x")
    return {"uid": os.getuid(), "euid": os.geteuid(), "groups": os.getgroups(), "caps": caps,
            "remounted": remounted, "userns": libc.unshare(0x10000000) == 0,
            "setuid": libc.setuid(0) == 0, "written": written, "scratch": os.getcwd()}
'''

AS_USER = '''
import json, os, sys, tempfile
from autograder import sandbox
from selfcheck.limits import Limits
from selfcheck.student import Student
folder = tempfile.mkdtemp()
os.chmod(folder, 0o755)
with Student([("probe", sys.argv[1])], workdir=folder, limits=Limits(time_per_test=10, time_per_part=10, memory_mb=1024),
             jail=sandbox.jail(announce=False)) as student:
    print(json.dumps({"isolated": sandbox.jail(announce=False).isolated, **student.report()}))
'''


def _as_ordinary_user(uid, argv, env):
    """Run ``argv`` as ``uid`` (no groups, no capabilities), where the course and the Python
    installation are reachable (`python_shown`: as root, a folder such as /root is 0700, which an
    ordinary user's Python would not be installed behind)."""
    from test_accounts import python_shown
    with python_shown() as show:
        def preexec():
            show()
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, preexec_fn=preexec)


def _report_of(argv, who):
    """The JSON that ``argv`` prints last, run by the grader's user or (as root) by nobody."""
    import json
    if who == "root" or os.geteuid() != 0:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    else:
        home = tempfile.mkdtemp()
        os.chown(home, 65534, 65534)
        env = {"PATH": os.environ["PATH"], "HOME": home, "TMPDIR": home, "PYTHONPATH": os.path.dirname(HERE)}
        try:
            done = _as_ordinary_user(65534, argv, env)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("who", ["root", "ordinary user"])
def test_students_code_holds_no_privilege(tmp_path, who):
    """Run as root (as CI and many servers run the grader) and as an ordinary user, the student's
    process has no capability, cannot remount, cannot make a user namespace, cannot become root,
    and can write its scratch folder only."""
    if not ISOLATED:
        pytest.xfail(sandbox.describe())
    if who == "root":
        if os.geteuid() != 0:
            pytest.skip("the grader does not run as root here")
        with _student(tmp_path, PRIVILEGE) as student:
            report = student.report()
        assert report["uid"] in sandbox.SANDBOX_UIDS
    else:
        report = _report_of([sys.executable, "-c", AS_USER, PRIVILEGE], who)
        assert report.pop("isolated"), "bubblewrap did not start for an ordinary user"
        assert report["uid"] == (65534 if os.geteuid() == 0 else os.getuid())
    assert report["euid"] == report["uid"] and report["uid"] != 0
    assert not any(report["caps"][k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")), report
    assert report["remounted"] == [] and report["written"] == [], report
    assert not report["userns"] and not report["setuid"], report
    assert report["scratch"] == sandbox.SCRATCH


SPIN = """
import os, resource, time
def work(seconds):
    \"\"\"Spin for ``seconds`` of this process's CPU time.\"\"\"
    began = time.process_time()
    while time.process_time() - began < seconds:
        pass
    return 1
def nap(seconds):
    time.sleep(seconds)
    return 1
def spin():
    while True:
        pass
def spinners(n, seconds):
    \"\"\"``n`` processes spinning for ``seconds`` of wall-clock time: (their CPU seconds, wall seconds).\"\"\"
    began = time.monotonic()
    for _ in range(n):
        if os.fork() == 0:
            while time.monotonic() - began < seconds:
                pass
            os._exit(0)
    for _ in range(n):
        os.wait()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime, time.monotonic() - began
"""


@pytest.mark.parametrize("kind", ["work", "nap"])
def test_a_part_has_a_total_time_budget(tmp_path, kind):
    """Calls that each stay under the per-call limit still end when the part's budget is spent:
    its CPU time for calls that compute; for calls that sleep, its waiting budget (one call's
    limit in all), long before the wall-clock backstop of three times the part's CPU budget."""
    from selfcheck.student import StudentError
    student = _student(tmp_path, SPIN, time_limit=1.0, budget=3.0)
    answers, started = [], time.monotonic()
    try:
        for _ in range(10):
            try:
                answers.append(getattr(student, kind)(0.8))
            except StudentError as exc:
                answers.append((exc.kind, exc.message))
    finally:
        student.close()
    took = time.monotonic() - started
    done = {"work": 3, "nap": 1}[kind]    # 3 s of CPU time: 3 calls; 1 s of waiting: 1 nap of 0.8 s
    assert answers[:done] == [1] * done, answers
    assert all(kind == "timeout" and "budget" in message for kind, message in answers[done:]), answers
    assert all("not run" in message for _, message in answers[done + 1:]), answers
    if kind == "nap":
        assert "waited" in answers[done][1] and "waiting budget of 1 s" in answers[done][1], answers
        assert took < 3.0, took           # was the wall-clock backstop: 9 s
    else:
        assert took < 3 * 3.0 + 3.0


def test_a_sandbox_that_cannot_start_is_the_graders_failure(course, tmp_path, monkeypatch, capsys):
    """When the sandbox cannot start, nothing is recorded as the student's score: the part is not
    graded, parts.csv leaves the score empty, and the next run grades it again."""
    from autograder import cli
    from autograder.grade import submission, versions
    from autograder.mistakes import cohort
    from autograder.records import store
    from selfcheck.student import InfrastructureError

    class Broken:
        isolated = True

        def launch(self, **_):
            raise OSError("fork: Resource temporarily unavailable")

    monkeypatch.setattr(sandbox, "jail", lambda *a, **k: Broken())
    assignment = course.assignment("attention")
    path = cohort.write(cohort.solved(course, assignment), str(tmp_path / "in"), "honest", assignment)
    with pytest.raises(InfrastructureError):
        submission.grade_submission(course, "attention", "honest", path)
    out = tmp_path / "out"
    assert cli.main(["grade", str(tmp_path / "in"), "--out", str(out), "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "by a failure of the grader" in printed, printed
    with open(out / "parts.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["status"] == "grader-error" and r["score"] == "" for r in rows), rows
    record = store.read_result(str(out), "honest", "attention")
    assert versions.stale(course, record, path) == "the grader failed on it last time"


def test_course_check_runs_in_the_sandbox(course, tmp_path):
    """`course check` runs a notebook's code as grading does: it cannot read the hidden suites or
    write into the release it is checked against."""
    from autograder import cli
    from autograder.mistakes import cohort
    if not ISOLATED:
        pytest.xfail(sandbox.describe())
    assignment = course.assignment("attention")
    hidden = os.path.join(course.root, "parts", "softmax", "hidden.py")
    target = course.release(assignment, "test_softmax.py")
    before = _sha(target)
    prefix = (f"for _p in ({hidden!r}, {target!r}):\n"
              "    try:\n        open(_p, 'a').write('# planted\\n')\n    except OSError:\n        pass\n"
              f"try:\n    _SEEN = open({hidden!r}).read()\nexcept OSError:\n    _SEEN = ''\n")
    cells = cohort.solved(course, assignment)
    for cell in cells["cells"]:
        if (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id") == "softmax":
            src = "".join(cell["source"])
            cell["source"] = prefix + src.replace("return e / np.sum(e, axis=axis, keepdims=True)",
                                                  "assert not _SEEN, 'read the hidden suite'\n"
                                                  "    return e / np.sum(e, axis=axis, keepdims=True)")
    path = cohort.write(cells, str(tmp_path), "student", assignment)
    assert cli.main(["check", path]) == 0
    assert _sha(target) == before
    with open(hidden) as fh:
        assert "# planted" not in fh.read()


def test_a_call_that_never_returns_costs_at_most_two_time_limits(tmp_path):
    """A part whose every call hangs stops after two timeouts: N checks never cost N time limits."""
    from selfcheck.student import MAX_TIMEOUTS, StudentError
    from selfcheck.student import WALL_FACTOR
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
    assert elapsed < MAX_TIMEOUTS * WALL_FACTOR * 1.0 + 3.0, elapsed
    assert all(kind == "timeout" for kind, _ in kinds)
    assert "1 s of CPU time" in kinds[0][1] and "not run" in kinds[-1][1], kinds


def test_a_process_its_own_alarm_ends_is_not_said_to_have_met_the_memory_limit(tmp_path):
    """Killed by a signal the code set up itself (an alarm with no handler), the process is said to
    be, with the alarm named, not the memory limit the grader would have guessed."""
    from selfcheck.student import StudentError
    student = _student(tmp_path, "import signal, time\ndef wait():\n    signal.setitimer(signal.ITIMER_REAL, 0.05)\n"
                                 "    time.sleep(5)\n")
    try:
        with pytest.raises(StudentError) as info:
            student.wait()
    finally:
        student.close()
    assert "SIGALRM" in info.value.message and "alarm" in info.value.message, info.value.message
    assert "memory" not in info.value.message, info.value.message


def test_a_sandbox_gets_one_core_whatever_it_forks(tmp_path):
    """As root, all the processes of one sandbox share one core (its cgroup's CPU quota), so a
    submission that forks cannot take the machine from its neighbours; the sandbox's CPU count,
    which the limits read, holds every one of them."""
    with open("/proc/cgroups") as fh:           # subsys_name hierarchy num_cgroups enabled
        cpu = [line.split() for line in fh if line.startswith("cpu\t")]
    if not ISOLATED or os.geteuid() != 0 or not cpu or cpu[0][3] != "1":
        pytest.skip(f"the CPU cap is a cgroup's, set by a grader that runs as root: {sandbox.describe()}")
    with _student(tmp_path, SPIN, time_limit=30.0) as student:
        student.start_now()
        before = student.cpu_seconds()
        used, wall = student.spinners(8, 2.0)
        counted = student.cpu_seconds() - before
    assert used / wall < sandbox.CPU_CORES + 0.3, (used, wall)
    assert counted >= 0.95 * used, (counted, used)


WIDEN = """
import os
def widen():
    \"\"\"Ask for every core of the machine, then say which this process may use.\"\"\"
    try:
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    except OSError:
        pass
    return sorted(os.sched_getaffinity(0))
"""


def test_a_sandbox_keeps_to_its_workers_core_whatever_it_asks(tmp_path):
    """As root, a sandbox keeps to the core of the grading worker that starts it (its cgroup's
    cpuset): a student's code that widens its own affinity cannot spin on a classmate's core."""
    if not ISOLATED or os.geteuid() != 0 or len(os.sched_getaffinity(0)) < 2 or not sandbox.cgroup.roots().get(
            "cpuset", sandbox.cgroup.roots().get("v2")):
        pytest.skip(f"the cores are a cgroup's cpuset, set by a grader that runs as root: {sandbox.describe()}")
    core = max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})          # as a grading worker keeps to its core
    try:
        with _student(tmp_path, WIDEN) as student:
            assert student.widen() == [core]
    finally:
        os.sched_setaffinity(0, before)


LOADED = """
import json, os, subprocess, sys, tempfile, time
from autograder import sandbox
from selfcheck.limits import Limits
from selfcheck.student import Student, StudentError
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})         # one core, and four spinning on it,
load = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(4)]                                          # each its own session, as users' are
folder = tempfile.mkdtemp()
os.chmod(folder, 0o755)
out = {}
try:
    with Student([("probe", sys.argv[1])], workdir=folder, limits=Limits(time_per_test=1, time_per_part=1, memory_mb=1024),
                 jail=sandbox.jail(announce=False)) as student:
        student.start_now()
        for name, args in (("work", [0.3]), ("spin", [])):
            began = time.monotonic()
            try:
                out[name] = getattr(student, name)(*args)
            except StudentError as exc:
                out[name] = [exc.kind, exc.message]
            out[name + " seconds"] = time.monotonic() - began
finally:
    for proc in load:
        proc.kill()
        proc.wait()
print(json.dumps(out))
"""


@pytest.mark.parametrize("who", ["root", "ordinary user"])
def test_limits_are_cpu_time_not_the_machines_load(who):
    """On a core shared with four spinning processes, a call that needs 0.3 s of CPU time runs
    past its 1 s limit in wall-clock time and still returns its answer; a call that spins is a
    timeout, named as one, within the wall-clock backstop."""
    from selfcheck.student import WALL_FACTOR
    if who == "root" and os.geteuid() != 0:
        pytest.skip("the grader does not run as root here")
    report = _report_of([sys.executable, "-c", LOADED, SPIN], who)
    assert report["work seconds"] > 1.0, report         # the load slowed it past the limit ...
    assert report["work"] == 1, report                 # ... and it is not a timeout
    kind, message = report["spin"]
    assert kind == "timeout" and message.startswith("running spin") and "CPU time" in message, report
    assert report["spin seconds"] < WALL_FACTOR * 1.0 + 2.0, report


SLEEPS = """import time
import numpy as np


def softmax(z, axis=-1):
    time.sleep(5)
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""


def test_a_part_the_machines_load_cut_short_is_graded_once_more(course, tmp_path, monkeypatch):
    """A call the wall clock ends while its code had CPU time left could not get a CPU (another
    job's load, seen here as a sleep that looks runnable): its part is graded once more, and never
    kept. A part whose CPU time ran out is the code's own doing."""
    import dataclasses
    from autograder.grade import reuse, suites
    from autograder.grade.submission import grade_submission
    from autograder.mistakes import cohort
    from selfcheck import student as student_module
    from selfcheck.budget import Budget
    monkeypatch.delenv(reuse.STORE, raising=False)
    monkeypatch.setattr(reuse, "_KEPT", {})
    monkeypatch.setattr(student_module, "tree_runnable", lambda pid: True)
    runs = []
    run = suites._run
    monkeypatch.setattr(suites, "_run", lambda *args: runs.append(args[2].id) or run(*args))
    quick = dataclasses.replace(course, limits=dataclasses.replace(course.limits, time_per_test=1, time_per_part=1))
    assignment = quick.assignment("attention")
    path = cohort.write(cohort.solved(quick, assignment, {"softmax": SLEEPS}), str(tmp_path), "starved", assignment)
    part = grade_submission(quick, assignment.id, "starved", path, only={"softmax"}).parts[0]
    assert runs == ["softmax", "softmax"] and not reuse._KEPT, runs
    assert part.status == "timeout" and "wall-clock" in part.reason, part.reason
    budget = Budget(1, 4)
    budget.by_cpu, budget.wall = True, 12.0
    for spent, starved in ((1.0, True), (4.0, False)):
        budget.spent = spent
        assert budget.starved() is starved, spent


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
