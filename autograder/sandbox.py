"""Where a student's code runs at grading: a bubblewrap sandbox, or a clearly weaker mode.

The student's process (:class:`selfcheck.student.Student`) is started inside
bubblewrap (``bwrap``) with

* a **new mount namespace** whose root is an empty tmpfs holding only what the
  code needs, read-only: the system's ``/usr`` (and ``/bin``, ``/lib``...),
  the Python installation and the course's virtual environment, the
  ``selfcheck`` package (the process's side of the wire), and the corpus file.
  The part's scratch folder (the released support files, e.g. ``framework.py``,
  copied beside the notebook's code) is the only writable place, and it is
  also ``HOME`` and ``TMPDIR``. ``solutions/``, ``tests/``, ``data/``, the
  gradebook, ``submitted/``, ``autograded/`` and every other student's scratch
  folder are not there at all;
* a **new PID namespace** (``--unshare-pid``): the process is PID 1's child in
  a namespace of its own, so when bubblewrap's init goes (the grader kills it
  when a part is done, and ``--die-with-parent`` kills it if the grader dies),
  the kernel kills every process in the namespace, including ones that
  double-forked or called ``setsid`` to leave the process group;
* new **user, network, IPC, UTS and cgroup namespaces** (``--unshare-all``):
  no network, no capabilities over the host, its own hostname;
* ``--new-session``, so it cannot push keystrokes into the grader's terminal.

The operating-system limits (address space from ``course.yaml`` memory_mb,
CPU seconds, file size, no core files) are set by the runner on the process
before bubblewrap starts and are inherited by everything inside.

Bubblewrap was chosen because it needs no daemon and no configuration, works
unprivileged or as root, is packaged by every distribution (Debian:
``apt-get install bubblewrap``) and composes all of the above in one exec.
When it is missing or cannot create namespaces (some containers forbid them),
:func:`jail` returns a :class:`WeakJail` and says so once on stderr: then the
student's code runs as the grader's user with the same limits, its own
session and a scan that kills every process carrying the part's token, but it
*can read and write whatever the grader can*.
"""

import functools
import os
import shutil
import subprocess
import sys

BANNER_FULL = "isolation: bubblewrap sandbox (private filesystem view, PID/user/network namespaces)"
BANNER_WEAK = ("WEAKER MODE: bubblewrap is not available ({why}); students' code runs WITHOUT "
               "filesystem isolation (it can read solutions/, tests/ and other submissions). "
               "Install it (Debian/Ubuntu: apt-get install bubblewrap) before grading real submissions.")

CODE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSIDE_CODE = "/opt/grader"             # where the selfcheck package appears in the sandbox
INSIDE_CORPUS = "/opt/data"             # where the corpus appears in the sandbox
INSIDE_VENV = "/opt/venv"               # where the course's virtual environment appears
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
        "/etc/localtime", "/etc/nsswitch.conf")


def corpus_path(course=None):
    """The corpus file students' code may read (found as the framework finds it), or None."""
    if course is None:
        from autograder import config
        course = config.load()
    from autograder import corpus
    try:
        found = corpus.find(course)
    except RuntimeError:
        return None          # `course grade` stops earlier with the reason
    return os.path.realpath(found) if found else None


class BwrapJail:
    """Builds the bubblewrap command line for one student process."""

    mode = "bubblewrap"
    isolated = True

    def __init__(self, bwrap, corpus=None):
        self.bwrap = bwrap
        self.corpus = corpus

    def _python_paths(self):
        paths = []
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
            for q in (p, os.path.realpath(p)):
                if q and q not in paths and q != "/" and not q.startswith(_SYSTEM):
                    paths.append(q)
        return paths

    def wrap(self, *, workdir, env, code_root):
        """(command prefix, environment, where ``code_root`` appears inside, the Python to run)."""
        cmd = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session",
               "--hostname", "student", "--tmpfs", "/", "--proc", "/proc", "--dev", "/dev"]
        for path in _SYSTEM:
            if os.path.islink(path):
                cmd += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                cmd += ["--ro-bind", path, path]
        for path in _ETC:
            if os.path.exists(path):
                cmd += ["--ro-bind", path, path]
        python = sys.executable
        for path in self._python_paths():
            if path == sys.prefix and sys.prefix != sys.base_prefix:
                # the virtual environment, away from the course folder it may live in
                cmd += ["--ro-bind", path, INSIDE_VENV]
                python = os.path.join(INSIDE_VENV, os.path.relpath(sys.executable, sys.prefix))
            else:
                cmd += ["--ro-bind", path, path]
        cmd += ["--ro-bind", os.path.join(code_root, "selfcheck"), INSIDE_CODE + "/selfcheck"]
        env = dict(env)
        if self.corpus:
            inside = f"{INSIDE_CORPUS}/{os.path.basename(self.corpus)}"
            cmd += ["--ro-bind", self.corpus, inside]
            env["TINYSHAKESPEARE"] = inside
        cmd += ["--bind", workdir, workdir, "--chdir", workdir]
        env.update(HOME=workdir, TMPDIR=workdir, MPLCONFIGDIR=workdir)
        cmd += ["--remount-ro", "/"]        # the scratch folder is the only writable place
        return cmd + ["--"], env, INSIDE_CODE, python


class WeakJail:
    """No filesystem isolation: limits, own session and kill-by-token only."""

    mode = "weaker"
    isolated = False

    def __init__(self, why, corpus=None):
        self.why = why
        self.corpus = corpus

    def wrap(self, *, workdir, env, code_root):
        env = dict(env, TMPDIR=workdir, MPLCONFIGDIR=workdir)
        if self.corpus:
            env["TINYSHAKESPEARE"] = self.corpus
        return [], env, code_root, sys.executable


def _probe(bwrap):
    """None when bubblewrap can start this Python with numpy in a sandbox, else why not."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as scratch:
        prefix, env, _, python = BwrapJail(bwrap).wrap(workdir=scratch, env={"PATH": "/usr/bin:/bin"},
                                                       code_root=CODE_ROOT)
        try:
            done = subprocess.run(prefix + [python, "-I", "-c", "import numpy"], env=env,
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{bwrap} failed: {exc}"
    if done.returncode != 0:
        return f"{bwrap} cannot create a sandbox here: {(done.stderr.strip() or 'no message').splitlines()[-1]}"
    return None


@functools.lru_cache(maxsize=None)
def _detect():
    if os.environ.get("COURSE_SANDBOX", "").lower() in ("off", "weak", "none", "0"):
        return None, "COURSE_SANDBOX=off"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "no `bwrap` on PATH"
    why = _probe(bwrap)
    return (bwrap, None) if why is None else (None, why)


_ANNOUNCED = set()


def jail(course=None, *, announce=True):
    """The strongest jail this machine supports, announcing the weaker mode once per process."""
    bwrap, why = _detect()
    corpus = corpus_path(course)
    if bwrap:
        return BwrapJail(bwrap, corpus)
    if announce and os.getpid() not in _ANNOUNCED:
        _ANNOUNCED.add(os.getpid())
        print(BANNER_WEAK.format(why=why), file=sys.stderr, flush=True)
    return WeakJail(why, corpus)


def describe():
    """One line for logs and test summaries: which isolation grading uses here."""
    bwrap, why = _detect()
    return BANNER_FULL if bwrap else BANNER_WEAK.format(why=why)
