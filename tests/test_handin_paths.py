"""Every command that reads a hand-in reads it through one reader, and never through a link.

The hand-ins here are laid out as a careless or hostile course folder can hold them: a student's
folder that is a link to ``solutions/``, an assignment folder linked to the solution's, a notebook
that is a link or a FIFO, an extra file that is a link, a ``notes.html`` with a script beside an
honest notebook. Real commands read them: ``nbgrader autograde``, ``nbgrader generate_feedback``,
formgrader, ``nbgrader collect`` and ``course check``, as root when the tests are. None of them
gives a linked hand-in marks, puts a line of the solution in what it writes, carries a file the
release does not declare, or hangs.
"""

import html
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from autograder.course import config
from autograder.mistakes import cohort
from autograder.nbgrader import apps, exchange, gradebook_rows, settings
from autograder.release import assignments
from test_accounts import accounts  # noqa: E402,F401 (a fixture)
from test_nbgrader_paths import _call, _env, formgrader  # noqa: E402

pytestmark = pytest.mark.slow

BIN = os.path.dirname(sys.executable)
NOTES = '<html><script>document.title = "HOSTILE-NOTES"</script>my notes</html>'
FULL = "honest"
REFUSED = ("linked-student", "linked-folder", "linked-notebook", "fifo-notebook")


def _run(args, cwd, timeout=600):
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


def _hand_in(course, submitted, student, assignment, nb, extra=None):
    """``submitted/<student>/<assignment>/``: the released folder with ``nb`` (and ``extra`` files) in it."""
    dest = os.path.join(submitted, student, assignment.id)
    shutil.copytree(course.release(assignment), dest, ignore=shutil.ignore_patterns("__pycache__"))
    cohort.write(nb, submitted, student, assignment)
    for name, text in (extra or {}).items():
        with open(os.path.join(dest, name), "w") as fh:
            fh.write(text)
    return dest


def _leaked(course, assignment, folder):
    """Lines of the solution that the files under ``folder`` show (tags and escapes undone)."""
    lines = assignments._solution_lines(course, assignment)
    found = set()
    for top, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(top, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if name.endswith(".ipynb"):
                text = "\n".join("".join(c.get("source", "")) for c in json.loads(text)["cells"])
            elif name.endswith(".html"):
                text = html.unescape(re.sub(r"<[^>]+>", "", text))
            found |= {line for line in lines if line in text}
    return found


@pytest.fixture(scope="module")
def assignment(course):
    return course.assignment("attention")


@pytest.fixture(scope="module")
def folder(course, assignment, tmp_path_factory):
    """A course folder whose submitted/ holds an honest hand-in and every linked layout; then
    ``nbgrader autograde`` and ``nbgrader generate_feedback`` run there: (folder, their outputs)."""
    folder = tmp_path_factory.mktemp("handins")
    submitted = folder / "submitted"
    settings.write_course_folder(course, str(folder))
    apps.register(course, assignment, str(folder))
    solutions, solution = course.source(assignment), course.source(assignment, assignment.notebook)
    _hand_in(course, submitted, FULL, assignment, cohort.solved(course, assignment), {"notes.html": NOTES})
    os.symlink(os.path.dirname(solutions), submitted / "linked-student")
    (submitted / "linked-folder").mkdir()
    os.symlink(solutions, submitted / "linked-folder" / assignment.id)
    dest = _hand_in(course, submitted, "linked-notebook", assignment, cohort.stub(course, assignment))
    os.remove(os.path.join(dest, assignment.notebook))
    os.symlink(solution, os.path.join(dest, assignment.notebook))
    dest = _hand_in(course, submitted, "fifo-notebook", assignment, cohort.stub(course, assignment))
    os.remove(os.path.join(dest, assignment.notebook))
    os.mkfifo(os.path.join(dest, assignment.notebook))
    dest = _hand_in(course, submitted, "linked-extra", assignment, cohort.stub(course, assignment))
    os.symlink(solution, os.path.join(dest, "stolen.html"))
    autograde = _run([os.path.join(BIN, "nbgrader"), "autograde", assignment.id], folder)
    # a notebook put in autograded/ as a link (by hand, or by an older grader) is never rendered
    planted = folder / "autograded" / "linked-notebook" / assignment.id / assignment.notebook
    if planted.exists():
        planted.unlink()
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(solution)
    feedback = _run([os.path.join(BIN, "nbgrader"), "generate_feedback", assignment.id, "--force"], folder)
    return folder, autograde, feedback


def _gradebook(course, folder):
    return {s: entry["score"] for (s, a), entry in gradebook_rows.scores(course, str(folder)).items()}


def test_nbgrader_autograde_gives_no_linked_hand_in_marks(course, assignment, folder):
    folder, autograde, _ = folder
    assert autograde.returncode == 0, autograde.stderr[-3000:]
    scores = _gradebook(course, folder)
    assert scores[FULL] == sum(p.points for p in assignment.parts), scores
    for student in REFUSED:
        assert scores.get(student, 0.0) == 0.0, (student, scores)
    for student in ("linked-notebook", "fifo-notebook"):       # graded: 0, with the reason
        with open(folder / "results" / student / f"{assignment.id}.json") as fh:
            reason = json.load(fh)["problem"]
        assert ("symbolic link" if student == "linked-notebook" else "not a regular file") in reason, reason
    for student in ("linked-student", "linked-folder"):         # left out, named
        assert f"submitted/{student}" in autograde.stderr, autograde.stderr[-3000:]


def test_autograded_holds_only_what_the_release_declares(course, assignment, folder):
    folder, autograde, _ = folder
    assert not _leaked(course, assignment, folder / "autograded" / "linked-folder")
    for student in os.listdir(folder / "autograded"):
        if student not in (FULL, "linked-notebook"):     # the solved one, and the link planted after
            assert not _leaked(course, assignment, folder / "autograded" / student), student
        names = set(os.listdir(folder / "autograded" / student / assignment.id))
        assert names <= set(os.listdir(course.source(assignment))) | {"timestamp.txt"}, (student, names)
    for student, extra in ((FULL, "notes.html"), ("linked-extra", "stolen.html")):
        said = f"Left out of submitted/{student}/attention (not a regular file of the release): {extra}\n"
        assert said in autograde.stderr, autograde.stderr[-3000:]


def test_nbgrader_feedback_never_shows_the_solution(course, assignment, folder):
    folder, _, feedback = folder
    pages = folder / "feedback"
    assert (pages / FULL / assignment.id / "attention.html").exists(), feedback.stderr[-3000:]
    assert not (pages / "linked-notebook").exists()
    assert "autograded/linked-notebook/attention/attention.ipynb is a symbolic link" in feedback.stderr
    for student in os.listdir(pages):
        assert student == FULL or not _leaked(course, assignment, pages / student), student
        assert not [n for n in os.listdir(pages / student / assignment.id) if n.endswith(".html")
                    and n != "attention.html"], student


def test_formgrader_serves_no_handed_in_page(course, assignment, folder, tmp_path):
    """The TA's formgrader, logged in, asks for the honest student's handed-in notes.html."""
    import urllib.error
    import urllib.request
    folder, _, _ = folder
    token = "handin-formgrader-token"
    with formgrader(folder, token, tmp_path / "runtime") as base:
        notebooks = _call(f"{base}/formgrader/api/submitted_notebooks/{assignment.id}/attention", token)
        honest = next(n["id"] for n in notebooks if n["student"] == FULL)
        served = []
        for name in ("notes.html", "attention.ipynb"):
            request = urllib.request.Request(f"{base}/formgrader/submissions/{honest}/{name}",
                                             headers={"Authorization": f"token {token}"})
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    served.append((name, response.status, response.headers.get("Content-Type", "")))
            except urllib.error.HTTPError as exc:
                served.append((name, exc.code, ""))
    assert served[0] == ("notes.html", 404, ""), served
    assert served[1][1] == 200 and "html" not in served[1][2], served      # the notebook itself is there


def test_course_check_refuses_a_linked_hand_in(course, assignment, folder):
    folder, _, _ = folder
    path = folder / "submitted" / "linked-folder" / assignment.id / assignment.notebook
    proc = _run([os.path.join(BIN, "course"), "--config", course.path, "check", str(path)], folder)
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert "linked-folder/attention is a symbolic link" in proc.stderr, proc.stderr


def test_course_check_never_runs_a_cell_the_student_marked_given(course, assignment, tmp_path):
    """A cell the student adds and marks locked is the student's code: it runs in the sandbox (where
    it cannot write outside its scratch folder), never as a given cell in the checker's process."""
    from autograder import sandbox
    marker = tmp_path / "ran-outside-the-sandbox"
    nb = cohort.solved(course, assignment)
    reference = next(c for c in nb["cells"] if (c["metadata"].get("nbgrader") or {}).get("grade_id") == "softmax")
    plant = (f"try:\n    open({str(marker)!r}, 'w').write(str(__import__('os').getuid()))\n"
             "except OSError:\n    pass\n")
    code = plant + "".join(reference["source"]).replace("def softmax(z, axis=-1):",
                                                        "def softmax(z, axis=-1):\n" + "".join(
                                                            "    " + line + "\n" for line in plant.splitlines()))
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "planted-given", "outputs": [],
                        "source": code, "metadata": {"nbgrader": {"grade_id": "my_helpers", "locked": True,
                                                                  "solution": False, "grade": False}}})
    path = cohort.write(nb, str(tmp_path), "student", assignment)
    proc = _run([os.path.join(BIN, "course"), "--config", course.path, "check", path], tmp_path)
    if not sandbox.jail(announce=False).isolated:
        pytest.xfail(sandbox.describe())
    assert not marker.exists(), f"written by uid {marker.read_text()}"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    for part in assignment.parts:
        assert f"{part.id}: " in proc.stdout and " public checks pass" in proc.stdout


def test_collect_carries_only_what_the_release_declares(course, assignment, tmp_path):
    """``nbgrader collect``: the notebook and the release's files come, a handed-in page does not,
    and the command names what it left out."""
    settings.write_course_folder(course, str(tmp_path))
    exchange.setup(course, str(tmp_path))
    inbound = tmp_path / "exchange" / course.course_id / "inbound"
    name = f"{FULL}+{assignment.id}+2026-12-01 10:00:00.000000 UTC+abc123"
    _hand_in(course, str(inbound / "tmp"), FULL, assignment, cohort.solved(course, assignment), {"notes.html": NOTES})
    os.rename(inbound / "tmp" / FULL / assignment.id, inbound / name)
    shutil.rmtree(inbound / "tmp")
    (inbound / name / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    (inbound / name / "submission_secret.txt").write_text("5e" * 64)
    planted = "\nopen('/tmp/ran-as-whoever-runs-pytest', 'w')\n"     # a student's edits of the release's kit
    for kit in ("conftest.py", "test_softmax.py", os.path.join("selfcheck", "checks.py")):
        with open(inbound / name / kit, "a") as fh:
            fh.write(planted)
    proc = _run([os.path.join(BIN, "nbgrader"), "collect", assignment.id], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    collected = tmp_path / "submitted" / FULL / assignment.id
    assert (collected / assignment.notebook).exists() and (collected / "test_softmax.py").exists()
    for kit in ("conftest.py", "test_softmax.py", os.path.join("selfcheck", "checks.py")):
        with open(collected / kit) as mine, open(os.path.join(course.release(assignment), kit)) as theirs:
            assert mine.read() == theirs.read(), kit                    # the release's, not the student's
    # the release's own files a hand-in carries are expected: one line for the class, none per hand-in
    assert proc.stderr.count("Left out of") == 1, proc.stderr[-3000:]       # notes.html, below
    summary = next(line for line in proc.stderr.splitlines() if "carried their own copy" in line)
    assert "1 hand-in carried their own copy of the release's conftest.py" in summary, summary
    assert "selfcheck/" in summary and "test_softmax.py" in summary and "collected in its place" in summary
    assert not (collected / "notes.html").exists()
    assert (collected / "submission_secret.txt").read_text() == "5e" * 64   # release_feedback's
    assert "notes.html (not part of the release)" in proc.stderr, proc.stderr[-3000:]


# hand-in names and file names a terminal would run: a title change, a cleared screen, a
# clipboard write (OSC 52), hidden text, reversed text
ESCAPES = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "\x1b]52;c;cHduZWQ=\x07", "\x1b[8mhidden\x1b[0m", "\u202e"]
RAW = ("\x1b", "\x07", "\u202e")


def test_collect_shows_the_names_students_chose_as_text(course, assignment, tmp_path):
    """``nbgrader collect`` logs the hand-in folder's name and the files it leaves out, both a
    student's choice: each control character reaches the terminal as a visible escape, and a
    hand-in whose name's random end (or any of it) holds one is left out, named."""
    settings.write_course_folder(course, str(tmp_path))
    exchange.setup(course, str(tmp_path))
    inbound = tmp_path / "exchange" / course.course_id / "inbound"
    stamp = "2026-12-01 10:00:00.000000 UTC"
    names = {FULL: f"{FULL}+{assignment.id}+{stamp}+abc123",
             "mallory": f"mallory+{assignment.id}+{stamp}+{ESCAPES[0]}{ESCAPES[2]}",
             "trudy": f"trudy+{assignment.id}+{stamp}\x1b[2J+abc123"}
    for student, name in names.items():
        _hand_in(course, str(inbound / "tmp"), student, assignment, cohort.solved(course, assignment))
        os.rename(inbound / "tmp" / student / assignment.id, inbound / name)
        shutil.rmtree(inbound / "tmp")
    for attack in ESCAPES:
        (inbound / names[FULL] / f"{attack}notes.txt").write_text("x")
    proc = _run([os.path.join(BIN, "nbgrader"), "collect", assignment.id], tmp_path)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert not [c for c in RAW if c in said], said[-3000:]
    for attack in ESCAPES:
        shown = f"{attack}notes.txt".encode("unicode_escape").decode()
        assert f"Left out of {inbound / names[FULL]}: {shown} (not part of the release)" in said, (shown, said[-3000:])
    assert sorted(os.listdir(tmp_path / "submitted")) == [FULL]
    assert "the random end of its name" in said and "\\x1b]0;pwned\\x07" in said, said[-3000:]
    assert f"Not collecting {str(inbound / names['trudy'])!r}" in said, said[-3000:]


def test_collect_as_an_ordinary_instructor_leaves_out_a_hand_in_it_cannot_read(course, assignment, accounts):
    """An instructor collecting without root meets what a student may make of their own hand-in: a
    folder it may list but not search, an unreadable notebook, an unreadable secret. Each
    is left out, named, with the reason; the honest classmate's hand-in is collected."""
    teacher = accounts.add("tea")
    folder = os.path.join(accounts.folder, "course")
    os.makedirs(folder)
    settings.write_course_folder(course, folder)
    exchange.setup(course, folder)
    inbound = os.path.join(folder, "exchange", course.course_id, "inbound")
    stamp = "2026-12-01 10:00:00.000000 UTC"
    names = {}
    for student in (FULL, "unsearchable", "unreadable-notebook", "unreadable-secret"):
        names[student] = name = f"{student}+{assignment.id}+{stamp}+abc123"
        _hand_in(course, os.path.join(inbound, "tmp"), student, assignment, cohort.solved(course, assignment))
        os.rename(os.path.join(inbound, "tmp", student, assignment.id), os.path.join(inbound, name))
    shutil.rmtree(os.path.join(inbound, "tmp"))
    entry = pwd.getpwnam(teacher)
    for top, dirs, files in os.walk(folder):
        for path in [top] + [os.path.join(top, f) for f in files]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
    os.chmod(os.path.join(inbound, names["unsearchable"]), 0o400)
    os.chmod(os.path.join(inbound, names["unreadable-notebook"], assignment.notebook), 0o000)
    with open(os.path.join(inbound, names["unreadable-secret"], "submission_secret.txt"), "w") as fh:
        fh.write("5e" * 64)
    os.chown(os.path.join(inbound, names["unreadable-secret"], "submission_secret.txt"), entry.pw_uid, entry.pw_gid)
    os.chmod(os.path.join(inbound, names["unreadable-secret"], "submission_secret.txt"), 0o000)
    done = accounts.run(teacher, [os.path.join(BIN, "nbgrader"), "collect", assignment.id], check=False, cwd=folder)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert os.path.isfile(os.path.join(folder, "submitted", FULL, assignment.id, assignment.notebook)), said[-3000:]
    for student in ("unsearchable", "unreadable-notebook", "unreadable-secret"):
        assert f"Not collecting {os.path.join(inbound, names[student])}: " in said, (student, said[-3000:])
        assert not os.path.exists(os.path.join(folder, "submitted", student)), student
    assert "Permission denied" in said, said[-3000:]


def test_one_students_secret_never_stops_the_release_of_feedback(course, assignment, tmp_path):
    """The secret nbgrader's submit writes alone names a hand-in's released feedback. One that is
    empty, missing, not text or not submit's token costs its own student their page, and one two
    students hold (copied from a classmate) costs both theirs, never landing on the other's: each
    with a warning naming the student, on every run; the classmates' feedback is released."""
    import hashlib
    settings.write_course_folder(course, str(tmp_path))
    exchange.setup(course, str(tmp_path))
    submitted = tmp_path / "submitted"
    secrets = {FULL: b"0f" * 64, "empty-secret": b"", "binary-secret": b"\xff\xfe\x00",
               "no-secret": None, "chosen-secret": b"any text a student likes",
               "copied-secret": b"a1" * 64, "copied-from": b"a1" * 64}
    for student, secret in secrets.items():
        nb = cohort.solved(course, assignment) if student == FULL else cohort.stub(course, assignment)
        dest = _hand_in(course, str(submitted), student, assignment, nb,
                        {"timestamp.txt": "2026-12-01 10:00:00.000000 UTC"})
        if secret is not None:
            with open(os.path.join(dest, "submission_secret.txt"), "wb") as fh:
                fh.write(secret)
    graded = _run([os.path.join(BIN, "course"), "--config", course.path, "grade", str(submitted),
                   "--out", str(tmp_path)], tmp_path)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    feedback = _run([os.path.join(BIN, "nbgrader"), "generate_feedback", assignment.id, "--force"], tmp_path)
    assert feedback.returncode == 0, feedback.stderr[-3000:]
    released = tmp_path / "exchange" / course.course_id / "feedback"
    notebook = os.path.splitext(assignment.notebook)[0]
    page = released / (hashlib.md5(secrets[FULL] + notebook.encode()).hexdigest() + ".html")
    for _ in range(2):                  # the bad secrets are still there on the next run
        done = _run([os.path.join(BIN, "nbgrader"), "release_feedback", assignment.id], tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert page.exists(), done.stderr[-3000:]
        for student in ("empty-secret", "binary-secret", "no-secret", "chosen-secret", "copied-secret",
                        "copied-from"):
            assert f"Not releasing the feedback of '{student}'" in done.stderr, (student, done.stderr[-3000:])
        assert "also the one of 'copied-from'" in done.stderr, done.stderr[-3000:]
    assert sorted(os.listdir(released)) == [page.name]


def test_a_notebook_nbformat_would_refuse_has_the_same_score_in_every_export(course, assignment, tmp_path):
    """A correct notebook whose code cells carry fields nbformat's schema refuses: `course grade`
    gives it full marks, and so do nbgrader's gradebook, grades.csv and autograded/ (formgrader's
    view), never a 0 from nbgrader refusing the file."""
    import csv
    nb = cohort.solved(course, assignment)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["execution_count"] = "not-a-number"
            cell.pop("outputs", None)
            cell["bogus_key"] = 1
    nb["metadata"]["kernelspec"] = 5
    submitted = tmp_path / "submitted"
    cohort.write(nb, str(submitted), "odd-fields", assignment)
    done = _run([os.path.join(BIN, "course"), "--config", course.path, "grade", str(submitted),
                 "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    full = sum(p.points for p in assignment.parts)
    with open(tmp_path / "out" / "totals.csv") as fh:
        assert float(next(csv.DictReader(fh))[assignment.id]) == full
    with open(tmp_path / "out" / "grades.csv") as fh:
        row = next(r for r in csv.DictReader(fh) if r["student_id"] == "odd-fields")
    assert float(row["raw_score"]) == full, row
    assert (tmp_path / "out" / "autograded" / "odd-fields" / assignment.id / assignment.notebook).exists()


def test_collect_refuses_a_hand_in_carrying_a_classmates_secret(course, assignment, tmp_path):
    """A student who copied a classmate's submission secret (from a home left open) hands in with
    it: release_feedback would name both feedback pages alike, one replacing the other. Collect
    keeps the earlier hand-in, leaves the copy out, naming both students, and collects that
    student's own earlier hand-in instead."""
    settings.write_course_folder(course, str(tmp_path))
    exchange.setup(course, str(tmp_path))
    inbound = tmp_path / "exchange" / course.course_id / "inbound"
    nb = cohort.solved(course, assignment)
    copied = "f00d" * 32

    def submit(student, when, secret):
        name = f"{student}+{assignment.id}+2026-12-01 {when}.000000 UTC+{secret[:6]}"
        _hand_in(course, str(inbound / "tmp"), student, assignment, nb)
        os.rename(inbound / "tmp" / student / assignment.id, inbound / name)
        shutil.rmtree(inbound / "tmp")
        (inbound / name / "timestamp.txt").write_text(f"2026-12-01 {when}.000000 UTC")
        (inbound / name / "submission_secret.txt").write_text(secret)
        time.sleep(0.05)                    # the exchange's times tell the hand-ins apart
        return name

    submit("mallory", "09:00:00", "be" * 64)          # mallory's own, earlier
    alice = submit("alice", "10:00:00", copied)
    mallory = submit("mallory", "11:00:00", copied)   # her latest, with alice's secret
    proc = _run([os.path.join(BIN, "nbgrader"), "collect", assignment.id], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    submitted = tmp_path / "submitted"
    assert (submitted / "alice" / assignment.id / "submission_secret.txt").read_text() == copied
    assert (submitted / "mallory" / assignment.id / "submission_secret.txt").read_text() == "be" * 64
    warning = next(line for line in proc.stderr.splitlines() if "submission secret" in line)
    assert mallory in warning and "alice's hand-in" in warning and alice in warning, warning

    # handed in again after alice's was collected, the copy is still refused
    submit("mallory", "12:00:00", copied)
    proc = _run([os.path.join(BIN, "nbgrader"), "collect", "--update", assignment.id], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (submitted / "mallory" / assignment.id / "submission_secret.txt").read_text() == "be" * 64
    assert "alice's hand-in" in proc.stderr, proc.stderr[-3000:]


def test_an_exchange_on_tmpfs_is_refused_and_collect_from_one_says_so(course, assignment, course_copy, capsys):
    """tmpfs never records a write made through a memory mapping, so a notebook mapped before the
    deadline and changed through the mapping after it keeps its on-time ctime: `course exchange
    --setup` refuses such a root in one line and makes nothing, `course exchange` names one made by
    hand as a problem, and nbgrader's collect from it warns that the times may be too early. An
    exchange no other account can reach (one account's course) may be there."""
    from autograder import cli
    from autograder.grade import submission_time
    if submission_time.filesystem("/dev/shm") != "tmpfs":
        pytest.skip("/dev/shm is not tmpfs here")
    copy = course_copy()
    with open(copy.path) as fh:
        before = fh.read()
    shm = tempfile.mkdtemp(prefix="exchange-", dir="/dev/shm")
    os.chmod(shm, 0o755)                # where students reach it; inside a private folder none hands in
    try:
        root = os.path.join(shm, "exchange")
        assert cli.main(["--config", copy.path, "exchange", copy.root, "--setup", "--root", root]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"error: {root} is on tmpfs, which never records a write made " \
            "through a memory mapping" in err and "ext4, xfs, btrfs or NFS" in err, err
        assert os.listdir(shm) == [] and open(copy.path).read() == before
        # a filesystem the course knows neither way is named too, as one to check
        assert "/proc is on proc, which the course does not know to record" in submission_time.ctime_doubt("/proc")
        copy = config.write_exchange_root(copy, root)         # made by hand, level by level
        for path, mode, _ in exchange.levels(copy):
            os.makedirs(path)
            os.chmod(path, mode)
        inbound = os.path.join(root, copy.course_id, "inbound")
        assert cli.main(["--config", copy.path, "exchange", copy.root]) == 1
        assert f"problem: {inbound} is on tmpfs" in capsys.readouterr().err
        name = f"{FULL}+{assignment.id}+2026-12-01 10:00:00.000000 UTC+abc123"
        _hand_in(copy, os.path.join(inbound, "tmp"), FULL, assignment, cohort.solved(copy, assignment))
        os.rename(os.path.join(inbound, "tmp", FULL, assignment.id), os.path.join(inbound, name))
        shutil.rmtree(os.path.join(inbound, "tmp"))
        proc = _run([os.path.join(BIN, "nbgrader"), "collect", assignment.id], copy.root)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"The hand-ins' times may be too early: {inbound} is on tmpfs" in proc.stderr, proc.stderr[-3000:]
        assert os.path.isdir(os.path.join(copy.root, "submitted", FULL, assignment.id))
        # on one account, inside a folder no other account passes, nobody else hands in: no problem
        mine = os.path.join(shm, "mine")
        os.mkdir(mine, 0o700)
        capsys.readouterr()
        assert cli.main(["--config", copy.path, "exchange", copy.root, "--setup", "--root", f"{mine}/x"]) == 0
        assert "tmpfs" not in capsys.readouterr().err
    finally:
        shutil.rmtree(shm, ignore_errors=True)
