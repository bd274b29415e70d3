"""A term through nbgrader's exchange with real Unix accounts, one per student, as on a hub.

As root, the test creates the accounts (removed at the end, whatever happens) and runs
every student command as that student: release, fetch, submit (one student also submits
under a classmate's name), collect, `course grade`, feedback released and fetched. It checks
what the README promises: no student can list the hand-ins (and so find another's), the impostor's
hand-in is refused at collect while the real student's is kept, a hand-in submitted with the
course's configuration for students (the hub's) is its student's and the instructor's alone, and a
notebook a classmate put into one nbgrader's own submit left open is left out, named; a hand-in renamed to end in
terminal escapes is left out, the file names students chose reach the instructor's terminal
as visible escapes, and each feedback page reaches its own student only.
"""

import contextlib
import ctypes
import fcntl
import glob
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from autograder import cli, pipeline, sandbox
from autograder.course import config
from autograder.mistakes import cohort

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)
PROBE = """
import json, os, sys
def can(f, *a):
    try:
        f(*a)
        return True
    except OSError:
        return False
print(json.dumps({p: {"list": can(os.listdir, p), "read": can(lambda q: open(q, "rb").read(), p)}
                  for p in sys.argv[1:]}))
"""


def _closed_on_the_way(path):
    """The outermost folder on the way to ``path`` that other accounts cannot pass through (no
    execute bit for others: /root, or a clone in a ``mktemp -d`` folder), or None."""
    parts = path.split(os.sep)
    for depth in range(2, len(parts) + 1):
        folder = os.sep.join(parts[:depth])
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


@contextlib.contextmanager
def python_shown():
    """A preexec function for a process whose accounts must run Python and the course: it puts
    the process in a private mount namespace where only what they need shows, readable by all
    (here /root, which holds Python, is 0700). Its children inherit that view."""
    libc = ctypes.CDLL(None, use_errno=True)
    needed = [os.path.realpath(p) for p in (sys.base_prefix, config.ROOT)]
    blocked = sorted({closed for closed in map(_closed_on_the_way, needed) if closed})
    stages = {d: tempfile.mkdtemp(prefix="as-student-") for d in blocked}

    def show():
        assert libc.unshare(0x00020000) == 0                     # CLONE_NEWNS
        libc.mount(b"none", b"/", None, 16384 | (1 << 18), None)  # MS_REC | MS_PRIVATE
        for folder, stage in stages.items():                     # only what Python needs shows
            libc.mount(folder.encode(), stage.encode(), None, 4096 | 16384, None)
            libc.mount(b"tmpfs", folder.encode(), b"tmpfs", 0, b"mode=755")
            for path in needed:
                if path.startswith(folder + os.sep):
                    os.makedirs(path, exist_ok=True)
                    inner = os.path.join(stage, os.path.relpath(path, folder))
                    libc.mount(inner.encode(), path.encode(), None, 4096 | 16384, None)
    try:
        yield show
    finally:
        for stage in stages.values():
            os.rmdir(stage)


ESCAPING = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07.txt"    # a title, a clear screen, the clipboard
# a classmate who learned hand-in folders' names puts their own notebook in each
REPLACE = """
import os, shutil, sys
for folder in sys.argv[2:]:
    try:
        os.unlink(os.path.join(folder, os.path.basename(sys.argv[1])))
        shutil.copy(sys.argv[1], folder)
        print("replaced")
    except OSError:
        print("refused")
"""
OWNER = "owner.pid"     # in each run's folder of homes: the pid of the test run that made them


def _alive(folder):
    try:
        with open(os.path.join(folder, OWNER)) as fh:
            os.kill(int(fh.read()), 0)
        return True
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def passwd_held():
    """The account tools' turn: useradd and userdel refuse, rather than wait, while another holds
    /etc/passwd's lock, and the tests making accounts run in two workers at once."""
    with open(os.path.join(tempfile.gettempdir(), "course-tests-accounts.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def sweep_left_behind():
    """Removes the accounts, their processes and the course groups of an earlier run that was
    killed outright (SIGKILL, a machine restarted), which no ``finally`` outlives: accounts named
    ``cs<tag><short>`` whose homes lie in a ``course-term-*`` folder no live run owns."""
    dead = {}
    for entry in pwd.getpwall():
        found = re.fullmatch(r"cs(\d{5})[a-z]+", entry.pw_name)
        folder = os.path.dirname(entry.pw_dir)
        if found and os.path.basename(folder).startswith("course-term-") and not _alive(folder):
            dead.setdefault(found[1], []).append(entry)
    with passwd_held():
        _remove_dead(dead)


def userdel(name, *options):
    """Kill the account's processes and remove it and its group, retrying for a while and then by
    force (userdel refuses an account whose killed process is not reaped yet, and its parent may
    never reap it): None once it is gone, else what userdel last said. Call it with `passwd_held`."""
    said = None
    for attempt in range(30):
        try:
            sandbox.kill_user(pwd.getpwnam(name).pw_uid)
        except KeyError:
            said = None
            break
        force = ["--force"] if attempt >= 20 else []
        done = subprocess.run(["userdel", *options, *force, name], capture_output=True, text=True)
        said = done.stderr.strip() or f"userdel exited {done.returncode}"
        if done.returncode:
            time.sleep(0.2)
    subprocess.run(["groupdel", name], capture_output=True)
    return said


def _remove_dead(dead):
    for tag, entries in dead.items():
        for entry in entries:
            userdel(entry.pw_name)
            shutil.rmtree(os.path.dirname(entry.pw_dir), ignore_errors=True)
        for group in (f"nbgrader-attention-{tag}", f"formgrade-attention-{tag}"):   # test_hub's course
            subprocess.run(["groupdel", group], capture_output=True)


class Accounts:
    """Real accounts whose homes are in ``folder``, each running Python and the course as itself
    (`python_shown`)."""

    def __init__(self, folder):
        self.folder, self.names = folder, []
        self.tag = f"{os.getpid() % 100000:05d}"
        with open(os.path.join(folder, OWNER), "w") as fh:
            fh.write(str(os.getpid()))
        sweep_left_behind()

    def add(self, short):
        name = f"cs{self.tag}{short}"
        home = os.path.join(self.folder, name)
        with passwd_held():
            subprocess.run(["useradd", "-M", "-U", "-d", home, "-s", "/bin/sh", name], check=True,
                           capture_output=True)
        self.names.append(name)
        entry = pwd.getpwnam(name)
        os.makedirs(home)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        os.chmod(home, 0o700)
        return name

    @contextlib.contextmanager
    def _as(self, name, cwd=None, env=None):
        """The keyword arguments of a process run as ``name`` (in its home, unless ``cwd``), with
        ``env`` added to its environment."""
        entry = pwd.getpwnam(name)

        def preexec():
            show()
            os.setgroups([])
            os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
            os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)
        env = {"PATH": BIN + os.pathsep + "/usr/bin:/bin", "HOME": entry.pw_dir, "USER": name,
               "LOGNAME": name, "MPLBACKEND": "Agg", **(env or {})}
        with python_shown() as show:
            yield {"env": env, "cwd": cwd or entry.pw_dir, "text": True, "preexec_fn": preexec}

    def run(self, name, argv, check=True, cwd=None, env=None):
        with self._as(name, cwd, env) as how:
            done = subprocess.run(argv, capture_output=True, timeout=300, **how)
        assert not check or done.returncode == 0, f"{name}: {' '.join(argv)}\n{done.stdout}\n{done.stderr}"
        return done

    @contextlib.contextmanager
    def started(self, name, argv):
        """``argv`` running as ``name``, its stdin and stdout piped to the test: a Popen."""
        with self._as(name) as how, subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                     **how) as proc:
            try:
                yield proc
            finally:
                proc.kill()

    def nbgrader(self, name, course, *args, check=True, env=None):
        return self.run(name, [os.path.join(BIN, "nbgrader"), *args, f"--course={course.course_id}",
                               f"--Exchange.root={course.exchange_root}"], check=check, env=env)

    def probe(self, name, *paths):
        return json.loads(self.run(name, [sys.executable, "-c", PROBE, *paths]).stdout)

    def remove(self):
        """Remove every account; returns what userdel last said of each one still there."""
        with passwd_held():
            said = {name: userdel(name) for name in self.names}
        return {name: words for name, words in said.items() if words is not None}


@pytest.fixture
def accounts():
    if os.geteuid() != 0:
        pytest.skip("creating real student accounts needs root (CI runs the tests as root)")
    if not shutil.which("useradd"):
        pytest.skip("useradd is not installed")
    folder = tempfile.mkdtemp(prefix="course-term-")
    os.chmod(folder, 0o755)
    made = Accounts(folder)
    try:
        yield made
    finally:
        left = made.remove()
        shutil.rmtree(folder, ignore_errors=True)
        assert not left, f"accounts the test made are still there: {left}"


def test_a_term_through_the_exchange_with_real_accounts(course, course_copy, accounts, capsys):
    from test_batch import only_first
    copy = course_copy(only_first)
    assignment = copy.assignments[0]
    exchange = os.path.join(accounts.folder, "exchange")
    assert cli.main(["--config", copy.path, "exchange", copy.root, "--setup", "--root", exchange]) == 0
    copy = config.load(copy.path)

    def instructor(*args):
        done = subprocess.run([os.path.join(BIN, "nbgrader"), *args], cwd=copy.root, capture_output=True,
                              text=True, env=dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"]))
        assert done.returncode == 0, f"nbgrader {' '.join(args)}\n{done.stdout}\n{done.stderr}"
        return done
    instructor("release_assignment", assignment.id)

    ada, bob, eve = (accounts.add(s) for s in ("ada", "bob", "eve"))
    for name, nb in ((ada, cohort.solved(copy, assignment)), (bob, cohort.stub(copy, assignment)),
                     (eve, cohort.stub(copy, assignment))):
        accounts.nbgrader(name, copy, "fetch_assignment", assignment.id)
        entry = pwd.getpwnam(name)
        path = os.path.join(entry.pw_dir, assignment.id, assignment.notebook)
        assert os.stat(path).st_uid == entry.pw_uid
        with open(path, "w") as fh:
            json.dump(nb, fh)
    # a file name that is a terminal escape (a title change, a cleared screen), which collect names
    planted = os.path.join(pwd.getpwnam(ada).pw_dir, assignment.id, ESCAPING)
    with open(planted, "w") as fh:
        fh.write("x")
    os.chown(planted, pwd.getpwnam(ada).pw_uid, pwd.getpwnam(ada).pw_gid)
    # ada submits as the hub's servers do, with the course's configuration for students; bob with
    # nbgrader's own, which leaves his hand-in writable by every account
    students = {"JUPYTER_CONFIG_PATH": os.path.join(config.ROOT, "deploy", "jupyter", "course"),
                "COURSE_EXCHANGE_ROOT": exchange, "COURSE_ID": copy.course_id}
    accounts.nbgrader(ada, copy, "submit", assignment.id, env=students)
    accounts.nbgrader(bob, copy, "submit", assignment.id)
    accounts.nbgrader(eve, copy, "submit", assignment.id)
    accounts.nbgrader(eve, copy, "submit", assignment.id, f"--student={ada}")   # later than ada's

    inbound = os.path.join(exchange, copy.course_id, "inbound")
    handed_in = sorted(glob.glob(os.path.join(inbound, "*")))
    assert len(handed_in) == 4
    ada_own = [p for p in handed_in if os.stat(p).st_uid == pwd.getpwnam(ada).pw_uid]
    bobs = [p for p in handed_in if os.path.basename(p).startswith(bob + "+")]
    # nbgrader's protection: inbound/ cannot be listed, and a hand-in is reached only by its name,
    # which ends in 72 random bits; so no student finds, and so reads, another's
    seen = accounts.probe(eve, inbound)
    assert seen[inbound] == {"list": False, "read": False}, seen
    suffixes = [os.path.basename(p).rsplit("+", 1)[1] for p in handed_in]
    assert len(set(suffixes)) == 4 and all(len(x) == 12 for x in suffixes)
    assert ada_own and bobs
    # eve, who learned both names, tries to put her own solved notebook in their place: ada's
    # hand-in is hers and the instructor's alone, bob's lets eve in
    assert stat.S_IMODE(os.stat(ada_own[0]).st_mode) == 0o770
    secret = os.path.join(ada_own[0], "submission_secret.txt")
    assert accounts.probe(eve, ada_own[0], secret) == {ada_own[0]: {"list": False, "read": False},
                                                        secret: {"list": False, "read": False}}
    forged = os.path.join(pwd.getpwnam(eve).pw_dir, assignment.notebook)
    with open(forged, "w") as fh:
        json.dump(cohort.solved(copy, assignment), fh)
    os.chown(forged, pwd.getpwnam(eve).pw_uid, pwd.getpwnam(eve).pw_gid)
    replaced = accounts.run(eve, [sys.executable, "-c", REPLACE, forged, ada_own[0], bobs[0]]).stdout.split()
    assert replaced == ["refused", "replaced"], replaced
    # eve renames her own hand-in (the folder is hers, inbound/ lets her) to end in escapes
    eves = next(p for p in handed_in if os.path.basename(p).startswith(eve + "+"))
    accounts.run(eve, [sys.executable, "-c", "import os, sys; os.rename(*sys.argv[1:])", eves,
                       eves.rsplit("+", 1)[0] + "+\x1b]0;pwned\x07\x1b[2J"])

    collected = instructor("collect", assignment.id)
    said = collected.stdout + collected.stderr
    assert "owned by" in said          # eve's hand-in, refused by name
    # the notebook eve put in bob's hand-in is left out, named; collect says bob's was open to all
    assert f"Left out of {bobs[0]}: {assignment.notebook} (owned by {eve}, not by {bob})" in said, said[-3000:]
    assert "1 hand-in could be changed by every account" in said, said[-3000:]
    # what the students named reaches the instructor's terminal as text, and eve's renamed
    # hand-in is left out
    assert not [c for c in ("\x1b", "\x07") if c in said], said[-3000:]
    assert f": {ESCAPING.encode('unicode_escape').decode()} (not part of the release)" in said, said[-3000:]
    assert "the random end of its name, '\\x1b]0;pwned\\x07\\x1b[2J'" in said, said[-3000:]
    submitted = os.path.join(copy.root, "submitted")
    assert sorted(os.listdir(submitted)) == sorted([ada, bob])

    batch = pipeline.grade(copy, submitted, copy.root, jobs=2)
    scores = {r.student: r.score for r in batch.records}
    full = sum(p.points for p in assignment.parts)
    assert scores == {ada: full, bob: 0}              # ada's own notebook, not eve's stub; not eve's in bob's
    assert not any(r.grader_error for r in batch.records)
    assert "no notebook" in next(r.problem for r in batch.records if r.student == bob)

    instructor("generate_feedback", assignment.id)
    instructor("release_feedback", assignment.id)
    feedback = os.path.join(exchange, copy.course_id, "feedback")
    assert not accounts.probe(eve, feedback)[feedback]["list"]
    accounts.nbgrader(ada, copy, "fetch_feedback", assignment.id)
    pages = glob.glob(os.path.join(pwd.getpwnam(ada).pw_dir, assignment.id, "feedback", "*", "*.html"))
    assert len(pages) == 1, pages
    text = open(pages[0]).read()
    for part in assignment.parts:               # the verdicts of ada's own notebook
        assert f"{part.id}: {part.points:g} / {part.points:g}" in text
    accounts.nbgrader(eve, copy, "fetch_feedback", assignment.id, f"--student={ada}", check=False)
    assert not glob.glob(os.path.join(pwd.getpwnam(eve).pw_dir, assignment.id, "feedback", "*", "*.html"))
    # every hand-in takes inbound/'s group, which may read the private ones: one holding a
    # student is a problem `course exchange` names
    os.chown(inbound, -1, pwd.getpwnam(eve).pw_gid)
    capsys.readouterr()
    assert cli.main(["--config", copy.path, "exchange", copy.root]) == 1
    assert f"problem: {inbound}: its group {eve} holds {eve}: every hand-in takes" in capsys.readouterr().err
