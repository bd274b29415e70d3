"""The exchange and the course folder on a server shared with students' own Unix accounts.

As root, the module makes a course as the README sets one up (a copy of the repository made
with the usual umask 022, `course exchange --setup --root`, nbgrader's release_assignment),
three real accounts hand in with nbgrader's submit, one of them (eva) attacks the exchange
and another (ben) forges his time, then the instructor collects and grades with the real
commands. Each test checks one promise against what that left: a malformed hand-in does not
stop collect, the exchange cannot be taken over, no student reads the course folder, and a
submission's time is the exchange's, the same in every export.
"""

import csv
import datetime
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
import yaml

from autograder import cli, pipeline
from autograder.course import config
from autograder.grade import submission_time
from autograder.mistakes import cohort
from selfcheck.program import grade_id, source

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)
STAMP = "2026-01-01 10:00:00.000000 UTC"

# what eva puts in inbound/ (which she may write but not list), besides her own hand-in
PLANT = """
import os, sys
inbound, me = sys.argv[1:]
def name(*fields):
    return os.path.join(inbound, "+".join(fields))
os.mkdir(name(me, "attention", "not-a-time", "x"))                 # a time nobody can parse
os.mkdir(name(me, "attention", ""))                                 # no time at all
os.mkdir(name(me + "\x1b[2J", "attention", %(stamp)r, "x"))       # a terminal's escape in the id
open(name(me, "attention", %(stamp)r, "file"), "w").close()         # not a folder
os.mkfifo(name(me, "attention", %(stamp)r, "fifo"))                 # would block whoever opens it
os.symlink("/", name(me, "attention", %(stamp)r, "link"))
deep = name(me, "attention", %(stamp)r, "deep")
os.makedirs(os.path.join(deep, *["d"] * 40))
""" % {"stamp": STAMP}
# the suffix that ends each name PLANT makes, as collect's warning quotes it
PLANTED = ("+not-a-time+x'", "+attention+'", "\\x1b[2J+attention+", "+file'", "+fifo'", "+link'", "+deep'")

# a student rewriting the time in their own hand-in (whose name nbgrader's submit printed)
FORGE = """
import os, sys
folder, text = sys.argv[1:]
with open(os.path.join(folder, "timestamp.txt"), "w") as fh:
    fh.write(text)
for dirpath, _, files in os.walk(folder):
    for f in files:
        os.utime(os.path.join(dirpath, f), (0, 0))
"""


def _csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def server(copy_course):
    """The term up to grading: {"course", "accounts", "exchange", "students" (ann, ben, eva),
    "collect" (nbgrader collect's CompletedProcess), "times" (before the hand-ins, after collect)}."""
    if os.geteuid() != 0:
        pytest.skip("creating real student accounts needs root (CI runs the tests as root)")
    if not shutil.which("useradd"):
        pytest.skip("useradd is not installed")
    from test_accounts import Accounts
    from test_batch import only_first
    folder = tempfile.mkdtemp(prefix="course-server-")
    os.chmod(folder, 0o755)
    accounts = Accounts(folder)
    umask = os.umask(0o022)                          # the README's set-up, with the usual umask
    try:
        root = os.path.join(folder, "attention")
        copy_course(root)
        path = os.path.join(root, "course.yaml")
        with open(path) as fh:
            raw = yaml.safe_load(fh)
        only_first(raw)
        with open(path, "w") as fh:
            yaml.safe_dump(raw, fh, sort_keys=False)
        exchange = os.path.join(folder, "srv", "exchange")
        assert cli.main(["--config", path, "exchange", root, "--setup", "--root", exchange]) == 0
        course = config.load(path)
        assignment = course.assignments[0]

        def instructor(*args):
            return subprocess.run([os.path.join(BIN, "nbgrader"), *args], cwd=root, capture_output=True,
                                  text=True, env=dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"]))
        assert instructor("release_assignment", assignment.id).returncode == 0

        ann, ben, eva = (accounts.add(s) for s in ("ann", "ben", "eva"))
        stub = cohort.stub(course, assignment)
        given = {grade_id(c): source(c) for c in stub["cells"] if grade_id(c)}
        second = assignment.parts[1]            # eva solves the first part only: graded in less time
        handed = {ann: stub, ben: stub,
                  eva: cohort.solved(course, assignment, {c: given[c] for c in second.cells})}
        started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        handins = {}
        for name, nb in handed.items():         # a notebook of their own, handed in with nbgrader's submit
            entry = pwd.getpwnam(name)
            desk = os.path.join(entry.pw_dir, assignment.id)
            os.makedirs(desk)
            with open(os.path.join(desk, assignment.notebook), "w") as fh:
                json.dump(nb, fh)
            for p in (desk, os.path.join(desk, assignment.notebook)):
                os.chown(p, entry.pw_uid, entry.pw_gid)
            done = accounts.nbgrader(name, course, "submit", assignment.id)
            handins[name] = re.search(r"Destination: (.+)", done.stdout + done.stderr).group(1).strip()
        forged = {ben: "1970-01-01 00:00:00.000000 UTC", eva: "not a time"}
        for name, text in forged.items():
            accounts.run(name, [sys.executable, "-c", FORGE, handins[name], text])
        inbound = os.path.join(exchange, course.course_id, "inbound")
        accounts.run(eva, [sys.executable, "-c", PLANT, inbound, eva])

        collect = instructor("collect", assignment.id)
        collected = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        submitted = os.path.join(root, "submitted")
        if os.path.isdir(submitted):
            pipeline.grade(course, submitted, root, jobs=2)
        yield {"course": course, "accounts": accounts, "exchange": exchange, "students": (ann, ben, eva),
               "collect": collect, "times": (started, collected)}
    finally:
        os.umask(umask)
        accounts.remove()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_malformed_hand_in_does_not_stop_collect(server):
    """Names nbgrader cannot parse, a file, a FIFO, a link and a folder nested too deep, all in
    inbound/ where any account may make them: each is left out with a warning naming it, and
    every student's own hand-in is collected."""
    collect, course = server["collect"], server["course"]
    log = collect.stdout + collect.stderr
    assert collect.returncode == 0, log
    refused = [line for line in log.splitlines() if "Not collecting" in line]
    for suffix in PLANTED:
        assert sum(suffix in line for line in refused) == 1, (suffix, log)
    assert len(refused) == len(PLANTED) and "\x1b" not in log, log
    submitted = os.path.join(course.root, "submitted")
    assert sorted(os.listdir(submitted)) == sorted(server["students"])
    ann = server["students"][0]
    with open(os.path.join(submitted, ann, "attention", "attention.ipynb")) as fh:
        assert json.load(fh) == cohort.stub(course, course.assignments[0])


def test_the_time_of_a_hand_in_is_the_exchange_s_in_every_export(server):
    """A time the student wrote into their hand-in (1970, or not a time at all) is not the
    recorded one: collect records when the exchange saw the hand-in, and grades.csv (nbgrader's
    gradebook) and totals.csv agree on the time and the score."""
    course, (started, collected) = server["course"], server["times"]
    grades = {r["student_id"]: r for r in _csv(os.path.join(course.root, "grades.csv"))}
    totals = {r["student_id"]: r for r in _csv(os.path.join(course.root, "totals.csv"))}
    for student in server["students"]:
        when = submission_time.read(os.path.join(course.root, "submitted", student, "attention"))
        assert when is not None and started <= when <= collected, (student, when)
        assert datetime.datetime.fromisoformat(grades[student]["timestamp"]) == when, grades[student]
        assert float(grades[student]["score"]) == float(totals[student]["attention"]), (grades, totals)
    eva = server["students"][2]
    assert float(totals[eva]["attention"]) == course.assignments[0].parts[0].points


def test_no_student_account_reads_the_course_folder(server, capsys):
    """After the README's set-up (a copy made with umask 022) and a collect and a grading run, a
    student's account can neither list nor read the course folder, its solutions and hidden
    suites, the hand-ins collected, the results or the gradebook; `course exchange` says so, and
    says loudly when the folder is opened again."""
    course, eva = server["course"], server["students"][2]
    ann = server["students"][0]
    root = course.root
    secrets = [root, os.path.join(root, "solutions", "attention", "attention.ipynb"),
               os.path.join(root, "parts", "softmax", "hidden.py"),
               os.path.join(root, "submitted", ann, "attention", "attention.ipynb"),
               os.path.join(root, "results", ann, "attention.json"), os.path.join(root, "gradebook.db"),
               os.path.join(root, "autograded"), os.path.join(root, "grades.csv")]
    for path in secrets:
        assert os.path.exists(path), path
    seen = server["accounts"].probe(eva, *secrets)
    assert all(v == {"list": False, "read": False} for v in seen.values()), seen
    capsys.readouterr()
    assert cli.main(["--config", course.path, "exchange", root]) == 0
    assert "exchange ready" in capsys.readouterr().out
    os.chmod(root, 0o755)
    try:
        assert cli.main(["--config", course.path, "exchange", root]) == 1
        said = capsys.readouterr()
        assert "exchange ready" not in said.out
        assert said.err.startswith(f"problem: {root}: mode 0755 lets other accounts read"), said.err
    finally:
        os.chmod(root, 0o700)


def test_a_student_cannot_take_over_the_exchange(server, capsys):
    """A student cannot rename the course's folder in the exchange's root (sticky, 1777) to put
    one of their own in its place; in an exchange left as nbgrader makes it (777), where they can,
    `course exchange` names every level that is wrong, in one line each."""
    course, accounts, eva = server["course"], server["accounts"], server["students"][2]
    root = server["exchange"]
    real, aside = os.path.join(root, course.course_id), os.path.join(root, "aside")
    takeover = ("import os, sys\nroot, course = sys.argv[1:]\n"
                "os.rename(os.path.join(root, course), os.path.join(root, 'aside'))\n"
                "for d in ('', 'outbound', 'inbound', 'feedback'):\n"
                "    os.makedirs(os.path.join(root, course, d), exist_ok=True)\n"
                "os.chmod(os.path.join(root, course, 'inbound'), 0o2733)\n")
    done = accounts.run(eva, [sys.executable, "-c", takeover, root, course.course_id], check=False)
    assert done.returncode != 0 and "PermissionError" in done.stderr, done.stderr
    assert os.stat(real).st_uid == 0 and not os.path.exists(aside)

    os.chmod(root, 0o777)                                  # nbgrader's own mode: no sticky bit
    try:
        accounts.run(eva, [sys.executable, "-c", takeover, root, course.course_id])
        capsys.readouterr()
        assert cli.main(["--config", course.path, "exchange", course.root]) == 1
        said = capsys.readouterr()
        assert "exchange ready" not in said.out, said.out
        problems = said.err.splitlines()
        assert problems[0].startswith(f"problem: {root}: mode 0777, not 1777"), problems
        assert problems[1].startswith(f"problem: {real}: owned by {eva}, not by root"), problems
        assert len(problems) == 2, problems
    finally:
        shutil.rmtree(real, ignore_errors=True)
        if os.path.exists(aside):
            os.rename(aside, real)
        os.chmod(root, 0o1777)
