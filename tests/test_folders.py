"""The folder a command runs in: a `course` command outside a course folder stops with one line
and creates, writes or locks nothing there; a new grading folder is made only where --out names
it; Ctrl-C in any stage of `course grade` says what to run and leaves no scratch behind."""

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from autograder import cli
from autograder.course import folders
from autograder.grade import reuse
from autograder.mistakes import cohort
from autograder.nbgrader import settings
from test_accounts import accounts  # noqa: E402,F401 (a fixture)

BIN = os.path.dirname(sys.executable)


def _env(**more):
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), MPLBACKEND="Agg", **more)


@contextlib.contextmanager
def _open_folder(kind):
    """A folder other accounts can read, as they can /tmp's scratch folders, a home or the
    exchange's parent (/srv): (the folder, the files already in it)."""
    top = tempfile.mkdtemp(prefix="course-folders-")
    os.chmod(top, 0o755)
    folder = os.path.join(top, kind)
    os.makedirs(folder, mode=0o755)
    os.chmod(folder, 0o755)
    if kind in ("home", "scratch"):
        with open(os.path.join(folder, ".bashrc" if kind == "home" else "notes.txt"), "w") as fh:
            fh.write("someone's\n")
    if kind == "srv":
        os.makedirs(os.path.join(folder, "exchange"))
        os.chmod(os.path.join(folder, "exchange"), 0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(top)


def _state(folder):
    """Every path in ``folder`` with its mode."""
    found = {".": stat.S_IMODE(os.stat(folder).st_mode)}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(top, name)
            found[os.path.relpath(path, folder)] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


COMMANDS = [["status"], ["export"], ["regrade"], ["report"], ["history", "ann"], ["exchange"],
            ["exchange", "--setup"], ["grade", "SUBMITTED"]]


@pytest.mark.parametrize("kind", ["scratch", "home", "srv"])
def test_a_command_outside_a_course_folder_stops_with_one_line_and_changes_nothing(kind, monkeypatch, capsys):
    with _open_folder(kind) as folder:
        monkeypatch.chdir(folder)
        before = _state(folder)
        for argv in COMMANDS:
            argv = [os.path.join(folder, "exchange") if a == "SUBMITTED" else a for a in argv]
            assert cli.main(argv) == 2, argv
            said = capsys.readouterr()
            assert said.out == "" and said.err.count("\n") == 1, (argv, said)
            assert said.err.startswith(f"error: {folder} is not a course folder: "), said.err
            assert "course.yaml" in said.err and "grading folder" in said.err
            assert _state(folder) == before, argv       # no gradebook.db, no results, no chmod
        # named explicitly, such a folder is not one either, and is not made one
        assert cli.main(["status", folder]) == 2 and cli.main(["export", folder]) == 2
        capsys.readouterr()
        # --out naming it: a folder others can read is never locked to make it a grading folder
        assert cli.main(["grade", os.path.join(folder, "submitted"), "--out", folder]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "other accounts can read or write in it" in err and "does not exist yet" in err, err
        assert _state(folder) == before


def test_the_course_folder_and_its_grading_folders_are_course_folders(course, tmp_path):
    assert folders.is_course_folder(course, course.root)
    assert not folders.is_course_folder(course, str(tmp_path))
    settings.write_course_folder(course, str(tmp_path / "new"))
    assert folders.is_course_folder(course, str(tmp_path / "new")) and folders.keeps_private(str(tmp_path / "new"))
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o700
    # a folder of an earlier version (its nbgrader_config.py imports the bridge) is one too
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "nbgrader_config.py").write_text(
        "# Written by `course grade`: this folder holds one batch's working state.\nimport os\n"
        "from autograder.nbgrader_bridge import configure\n\n"
        "configure(get_config(), out=os.path.dirname(os.path.abspath(__file__)),  # noqa: F821\n"
        f"          course_yaml={course.path!r})\n")
    assert folders.is_course_folder(course, str(tmp_path / "old")) and folders.keeps_private(str(tmp_path / "old"))


@pytest.mark.slow
def test_an_existing_folder_becomes_a_grading_folder_with_its_mode_kept(course, tmp_path):
    """A folder no other account can read may be named by --out: it is made a grading folder, and
    neither that nor any nbgrader command in it changes its mode."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    os.chmod(folder, 0o750)                     # tmp_path is 0700: nobody else reaches it
    settings.write_course_folder(course, str(folder))
    assert folders.is_course_folder(course, str(folder)) and not folders.keeps_private(str(folder))
    from traitlets.config import Config
    cfg = Config()
    exec(compile((folder / "nbgrader_config.py").read_text(), str(folder / "nbgrader_config.py"), "exec"),
         {"get_config": lambda: cfg, "__file__": str(folder / "nbgrader_config.py")})
    assert cfg.CourseDirectory.root == str(folder)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o750


def _small(course, submitted, students=3):
    assignment = course.assignments[0]
    for i in range(students):
        nb = cohort.solved(course, assignment) if i % 2 == 0 else cohort.stub(course, assignment)
        cohort.write(nb, str(submitted), f"s{i}", assignment)
    return assignment


@pytest.mark.slow
def test_grading_from_another_folder_needs_out_and_says_the_totals_are_its_own(course, tmp_path):
    submitted = tmp_path / "course" / "submitted"
    _small(course, submitted, students=1)
    with _open_folder("scratch") as scratch:
        before = _state(scratch)
        done = subprocess.run([os.path.join(BIN, "course"), "grade", str(submitted)], cwd=scratch, env=_env(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--out DIR" in done.stderr, done.stderr
        assert _state(scratch) == before
        out = os.path.join(scratch, "grading")
        done = subprocess.run([os.path.join(BIN, "course"), "grade", str(submitted), "--out", out, "--jobs", "1"],
                              cwd=scratch, env=_env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"note: {out} is a new grading folder, with a gradebook of its own" in done.stderr
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o700 and _state(scratch)["."] == before["."]
        assert os.path.exists(os.path.join(out, "totals.csv"))
        done = subprocess.run([os.path.join(BIN, "course"), "status"], cwd=out, env=_env(), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr


# --- Ctrl-C in every stage of `course grade` --------------------------------------------------------

def _journal(out):
    try:
        with open(os.path.join(out, "results", ".batch.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def _mtime(path):
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


def _interrupt(cmd, cwd, scratch, when):
    """Run ``cmd``, Ctrl-C it (SIGINT to its process group, as a terminal does) once ``when()``;
    returns (returncode, stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(TMPDIR=scratch), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline and not when():
        time.sleep(0.01)
    assert proc.poll() is None, "the stage was over before it could be interrupted: " + proc.stderr.read()[-2000:]
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


@pytest.mark.slow
def test_ctrl_c_in_any_stage_says_what_to_run_and_leaves_no_scratch(course, tmp_path, monkeypatch):
    monkeypatch.delenv(reuse.STORE, raising=False)       # graded, not read back: each stage must last
    submitted, out = tmp_path / "submitted", str(tmp_path / "out")
    assignment = _small(course, submitted)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    cmd = [os.path.join(BIN, "course"), "grade", str(submitted), "--out", out, "--jobs", "1"]
    results = os.path.join(out, "results")
    parts, report = os.path.join(out, "parts.csv"), os.path.join(out, "cohort_report.html")
    stages = {    # each run carries on from the one before; the exports' first file is parts.csv, the last the report
        "grade": lambda: os.path.isdir(results) and any(not p.startswith(".") for p in os.listdir(results)),
        "gradebook": lambda: _journal(out).get("finished") and _mtime(parts) is None,
        "exports": lambda: _mtime(parts) is not None and _mtime(report) is None,
    }
    for stage, when in stages.items():
        code, err = _interrupt(cmd, str(tmp_path), str(scratch), when)
        assert code == 130, (stage, err[-3000:])
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (stage, err[-3000:])
        last = err.strip().splitlines()[-1]
        assert last.startswith("interrupted: ") and "course grade" in last, (stage, last)
        assert os.listdir(scratch) == [], (stage, os.listdir(scratch))
    # what it said to run finishes the batch: every hand-in in the gradebook and the exports
    done = subprocess.run(cmd, cwd=str(tmp_path), env=_env(TMPDIR=str(scratch)), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not os.path.exists(os.path.join(results, ".exporting")) and os.listdir(scratch) == []
    import csv
    with open(os.path.join(out, "grades.csv")) as fh:
        assert sorted(r["student_id"] for r in csv.DictReader(fh)) == ["s0", "s1", "s2"]
    for student in ("s0", "s1", "s2"):
        assert os.path.exists(os.path.join(out, "autograded", student, assignment.id, assignment.notebook))
        assert os.path.exists(os.path.join(out, "reports", student, f"{assignment.id}.html"))


# --- what an instructor types ------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("step", [["collect", "attention"], ["release_feedback", "attention"]])
def test_nbgrader_after_a_course_yaml_typo_says_its_one_line_only(course_copy, step):
    """nbgrader's exchange steps in the course folder stop at course.yaml's one line: nbgrader's
    own exchange (/usr/local/share/nbgrader/exchange) is neither named nor made."""
    copy = course_copy()
    path = os.path.join(copy.root, "course.yaml")
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(text.replace("course_id:", "course_idd:", 1))
    done = subprocess.run([os.path.join(BIN, "nbgrader"), *step], cwd=copy.root, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: course.yaml.course_idd: unknown key"), lines


@pytest.mark.slow
def test_exchange_setup_on_a_root_of_roots_says_whose_it_must_be(copy_course, accounts):
    """An instructor without root, on an exchange root root made 0755: one line, no traceback."""
    import pwd
    teacher = accounts.add("tea")
    entry = pwd.getpwnam(teacher)
    root = os.path.join(accounts.folder, "course")
    copy_course(root)
    for top, dirs, files in os.walk(root):
        for path in [top] + [os.path.join(top, name) for name in dirs + files]:
            os.lchown(path, entry.pw_uid, entry.pw_gid)
    exchange = os.path.join(accounts.folder, "srv", "exchange")
    os.makedirs(exchange)
    os.chmod(exchange, 0o755)
    done = accounts.run(teacher, [os.path.join(BIN, "course"), "--config", os.path.join(root, "course.yaml"),
                                  "exchange", root, "--setup", "--root", exchange], check=False, cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert (f"the exchange's root {exchange} is root's with mode 0755; it must be {teacher}'s, or root's with "
            f"mode 1777 (as root: chmod 1777 {exchange})") in done.stderr, done.stderr
    assert os.listdir(exchange) == []


def test_an_empty_shared_folder_keeps_its_mode_and_is_refused_as_a_grading_folder(course, tmp_path, capsys):
    """`--out` an empty folder others may write in (a shared 1777 one) is refused in one line, its
    mode untouched; an empty folder of one's own, 0755, is made the grading folder (0700)."""
    shared, own = tmp_path / "shared", tmp_path / "own"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert cli.main(["grade", str(tmp_path / "nothing"), "--out", str(shared)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "other accounts can read or write in it" in err, err
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777 and not os.listdir(shared)
    own.mkdir()
    os.chmod(own, 0o755)
    assert folders._fresh(str(own))      # grading locks it: no other account was using it
