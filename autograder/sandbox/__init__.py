"""Where a student's code runs at grading: a bubblewrap sandbox, or a clearly weaker mode.

The student's process (:class:`selfcheck.student.Student`) is started inside
bubblewrap (``bwrap``), never with a privilege over anything on the host:

* **an unprivileged user.** When the grader runs as root (as CI and many course
  servers do), the process first drops to a user of its own, leased for the
  life of the sandbox, with no supplementary groups, no capabilities and
  ``no_new_privs``; only then does it start bubblewrap, which runs without
  privileges like any user's (:mod:`autograder.sandbox.as_root`). Run as root,
  bubblewrap would map root into the sandbox with every capability, and the
  code inside could remount the read-only binds writable. Run by an ordinary
  user, the process is that user in a user namespace of its own, with no
  capability over the host;
* **a private view of the disk** (:mod:`autograder.sandbox.jails`): only what
  the code needs, read-only, and two small tmpfs mounts to write in.
  ``solutions/``, ``parts/`` (the hidden suites), the gradebook and every other submission are not
  there at all;
* **new PID, user, network, IPC, UTS and cgroup namespaces**: when the part is
  done the grader kills the sandbox's init and the kernel kills everything in
  the namespace, including processes that double-forked or called ``setsid``;
  no network; ``--disable-userns`` forbids nested user namespaces (where the
  code would hold capabilities again);
* **limits the kernel enforces per sandbox**: the address space of every
  process (``course.yaml`` memory_mb), CPU seconds (the part's budget), file
  size and no core files; the number of processes (``RLIMIT_NPROC``): as root,
  of the sandbox's own leased user, with a cgroup per sandbox capping
  processes, memory and CPU (:mod:`autograder.sandbox.cgroup`), which also
  counts the CPU time the limits of :class:`selfcheck.student.Student` read
  (``Launch.cpu``); otherwise, of the sandbox's own user namespace, set inside
  it by :mod:`selfcheck.child` (set outside, the limit would count every
  process of the grader's user).

When bubblewrap is missing or cannot create namespaces (some containers
forbid them), :func:`jail` returns a :class:`WeakJail` and says so once on
stderr: the student's code then runs as the grader's own user with the same
rlimits, its own session and a scan that kills every process carrying the
part's token, but it *can read and write whatever the grader can*.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

from autograder.sandbox import cgroup
from autograder.sandbox.as_root import SANDBOX_UIDS, SandboxError, kill_user
from autograder.sandbox.cgroup import CPU_CORES, MAX_PROCESSES
from autograder.sandbox.jails import SCRATCH, BwrapJail, WeakJail

if TYPE_CHECKING:
    from autograder.course.config import Course

__all__ = ["CPU_CORES", "SANDBOX_UIDS", "SCRATCH", "SandboxError", "corpus_path", "describe", "jail", "kill_user"]

BANNER_WEAK = ("WEAKER MODE: bubblewrap is not available ({why}); students' code runs WITHOUT "
               "filesystem isolation (it can read solutions/, the hidden suites and other submissions). "
               "Install it (Debian/Ubuntu: apt-get install bubblewrap) before grading real submissions.")

CODE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def corpus_path(course: Course | None = None) -> str | None:
    """The corpus file students' code may read (the private verified copy), or None."""
    if course is None:
        from autograder.course import config
        course = config.load()
    from autograder.course import corpus
    try:
        found = corpus.private(course)
    except RuntimeError:
        return None          # `course grade` stops earlier with the reason
    return os.path.realpath(found) if found else None


def _probe(bwrap):
    """None when bubblewrap can start this Python with numpy in a sandbox, else why not."""
    with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as scratch:
        launch = None
        try:
            launch = BwrapJail(bwrap).launch(workdir=scratch, env={"PATH": "/usr/bin:/bin"},
                                             code_root=CODE_ROOT, memory_mb=1024, cpu_seconds=60)
            done = subprocess.run(launch.prefix + [launch.python, "-I", "-c", "import numpy"],
                                  env=launch.env, capture_output=True, text=True, timeout=60,
                                  preexec_fn=launch.preexec, cwd=launch.workdir)
        except (OSError, subprocess.SubprocessError, SandboxError) as exc:
            return f"{bwrap} failed: {exc}"
        finally:
            if launch is not None:
                launch.release()
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


_ANNOUNCED: set[int] = set()


def jail(course: Course | None = None, *, announce: bool = True) -> BwrapJail | WeakJail:
    """The strongest jail this machine supports, announcing the weaker mode once per process."""
    bwrap, why = _detect()
    corpus = corpus_path(course)
    if bwrap:
        return BwrapJail(bwrap, corpus)
    if announce and os.getpid() not in _ANNOUNCED:
        _ANNOUNCED.add(os.getpid())
        print(BANNER_WEAK.format(why=why), file=sys.stderr, flush=True)
    return WeakJail(corpus)


def describe() -> str:
    """One line for logs and test summaries: which isolation grading uses here."""
    bwrap, why = _detect()
    if not bwrap:
        return BANNER_WEAK.format(why=why)
    if os.geteuid() == 0:
        roots = cgroup.roots()
        if "v2" in roots:
            cgroup.delegate(roots["v2"], cgroup.CONTROLLERS)
            with open(os.path.join(roots["v2"], "cgroup.subtree_control")) as fh:
                delegated = fh.read().split()
            limited: list[str] = [c for c in ("pids", "memory", "cpu") if c in delegated]
            version = "v2"
        else:
            limited = list(roots)
            version = "v1"
        kinds = (", ".join(c if c != "cpu" else f"cpu ({CPU_CORES} core)" for c in limited) + f" (cgroup {version})"
                 if limited else "none (no writable cgroup here)")
        return ("isolation: bubblewrap sandbox run as a leased unprivileged uid (no capabilities), "
                f"private filesystem view, PID/user/network namespaces, at most {MAX_PROCESSES} "
                f"processes per sandbox, cgroup limits: {kinds}")
    return ("isolation: bubblewrap sandbox as the grader's own user (no capabilities), private "
            f"filesystem view, PID/user/network namespaces, at most {MAX_PROCESSES} processes per "
            "sandbox; no per-sandbox memory or CPU cgroup (grading as an ordinary user)")
