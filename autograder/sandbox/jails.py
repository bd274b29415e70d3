"""The two jails a student's process can run in: bubblewrap, unprivileged, or the weaker mode.

Both follow :class:`selfcheck.launch.Jail`. :class:`BwrapJail` gives the process a private view
of the disk: the root is an empty tmpfs holding only what the code needs, read-only (the
system's ``/usr``, ``/bin``, ``/lib``..., the Python installation and the course's virtual
environment, the ``selfcheck`` package and the corpus); the only writable places are
``/scratch`` (its working folder, ``HOME`` and ``TMPDIR``, holding the released support files
read-only) and ``/dev/shm``, both small tmpfs mounts of their own (``SCRATCH_MB``, ``SHM_MB``),
so filling them fills neither the host's disk nor its memory. As root it leases a user and a
cgroup for each process (autograder/sandbox/as_root.py, autograder/sandbox/cgroup.py).
:class:`WeakJail` gives only the rlimits and a session of its own.
"""

import os
import resource
import sys

from autograder.sandbox.as_root import Lease, privileged_preexec, stage_binds
from autograder.sandbox.cgroup import MAX_PROCESSES, Cgroup
from selfcheck.launch import MAX_PROCESSES_VARIABLE, Launch, RLimit, limited, rlimits

INSIDE_CODE = "/opt/grader"             # where the selfcheck package appears in the sandbox
INSIDE_CORPUS = "/opt/data"             # where the corpus appears in the sandbox
INSIDE_VENV = "/opt/venv"               # where the course's virtual environment appears
SCRATCH = "/scratch"                    # the student's working folder inside the sandbox
SCRATCH_MB = 64                         # size of the scratch tmpfs
SHM_MB = 16                             # size of /dev/shm inside the sandbox
FILE_MB = 64                            # largest file a student's process may write
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
        "/etc/localtime", "/etc/nsswitch.conf")


def _limits(memory_mb: int, cpu_seconds: int, processes: int | None = None) -> list[RLimit]:
    """The rlimits every process of a sandbox inherits."""
    out = rlimits(memory_mb, cpu_seconds) + [(resource.RLIMIT_FSIZE, (FILE_MB << 20, FILE_MB << 20))]
    if processes:
        out.append((resource.RLIMIT_NPROC, (processes, processes)))
    return out


class BwrapJail:
    """Starts each student process inside bubblewrap, unprivileged."""

    isolated = True

    def __init__(self, bwrap: str, corpus: str | None = None):
        self.bwrap = bwrap
        self.corpus = corpus
        self.privileged = os.geteuid() == 0

    def _python_paths(self) -> list[str]:
        paths: list[str] = []
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
            for q in (p, os.path.realpath(p)):
                if q and q not in paths and q != "/" and not q.startswith(_SYSTEM):
                    paths.append(q)
        return paths

    def _binds(self, code_root: str) -> tuple[list[tuple[str, str]], str]:
        """(host path, inside path) of every read-only bind, and the Python to run inside."""
        binds: list[tuple[str, str]] = []
        python = sys.executable
        for path in _ETC:
            if os.path.exists(path):
                binds.append((path, path))
        for path in self._python_paths():
            if path == sys.prefix and sys.prefix != sys.base_prefix:
                # the virtual environment, away from the course folder it may live in
                binds.append((path, INSIDE_VENV))
                python = os.path.join(INSIDE_VENV, os.path.relpath(sys.executable, sys.prefix))
            else:
                binds.append((path, path))
        binds.append((os.path.join(code_root, "selfcheck"), INSIDE_CODE + "/selfcheck"))
        if self.corpus:
            binds.append((self.corpus, f"{INSIDE_CORPUS}/{os.path.basename(self.corpus)}"))
        return binds, python

    def launch(self, *, workdir: str, env: dict[str, str], code_root: str, memory_mb: int,
               cpu_seconds: int) -> Launch:
        """A :class:`Launch` for one process whose support files are the files in ``workdir``."""
        binds, python = self._binds(code_root)
        for name in sorted(os.listdir(workdir)):
            path = os.path.join(workdir, name)
            if os.path.isfile(path) and not os.path.islink(path):
                binds.append((path, f"{SCRATCH}/{name}"))
        env = dict(env, HOME=SCRATCH, TMPDIR=SCRATCH, MPLCONFIGDIR=SCRATCH)
        if self.corpus:
            env["TINYSHAKESPEARE"] = f"{INSIDE_CORPUS}/{os.path.basename(self.corpus)}"
        lease: Lease | None = None
        cgroup: Cgroup | None = None
        stages: list[tuple[str, str]] = []
        if self.privileged:
            binds, stages = stage_binds(binds)
        cmd = [self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
               "--new-session", "--hostname", "student", "--tmpfs", "/", "--proc", "/proc",
               "--dev", "/dev", "--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        for path in _SYSTEM:
            if os.path.islink(path):
                cmd += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                cmd += ["--ro-bind", path, path]
        scratch_done = False
        for source, inside in binds:
            if inside.startswith(SCRATCH + "/") and not scratch_done:
                cmd += ["--size", str(SCRATCH_MB << 20), "--tmpfs", SCRATCH]
                scratch_done = True
            cmd += ["--ro-bind", source, inside]
        if not scratch_done:
            cmd += ["--size", str(SCRATCH_MB << 20), "--tmpfs", SCRATCH]
        cmd += ["--chdir", SCRATCH, "--remount-ro", "/", "--"]
        if self.privileged:
            lease = Lease()
            try:
                # above the per-process limit (one process meets MemoryError first, cleanly), with
                # room for the tmpfs mounts; many processes together meet the cgroup's
                cgroup = Cgroup(f"attention-course-{lease.uid}",
                                (int(memory_mb) + SCRATCH_MB + SHM_MB + 128) << 20)
                limits = _limits(memory_mb, cpu_seconds, processes=MAX_PROCESSES)
                preexec = privileged_preexec(lease.uid, limits, cgroup.join_paths(), stages)
            except BaseException:
                lease.release()
                raise
        else:
            preexec = limited(_limits(memory_mb, cpu_seconds))
            # counted in the sandbox's own user namespace, so set inside it (selfcheck.child): set
            # here, it would count every process of the grader's user
            env[MAX_PROCESSES_VARIABLE] = str(MAX_PROCESSES)

        def release() -> None:
            if cgroup is not None:
                cgroup.remove()
            if lease is not None:
                lease.release()
        cpu = cgroup.cpu_seconds if cgroup is not None and cgroup.counts_cpu() else None
        return Launch(cmd, env, INSIDE_CODE, python, preexec, workdir="/", scratch=SCRATCH, release=release,
                      cpu=cpu)


class WeakJail:
    """No filesystem isolation: rlimits, own session and kill-by-token only."""

    isolated = False

    def __init__(self, corpus: str | None = None):
        self.corpus = corpus

    def launch(self, *, workdir: str, env: dict[str, str], code_root: str, memory_mb: int,
               cpu_seconds: int) -> Launch:
        env = dict(env, TMPDIR=workdir, MPLCONFIGDIR=workdir)
        if self.corpus:
            env["TINYSHAKESPEARE"] = self.corpus
        return Launch([], env, code_root, sys.executable, limited(_limits(memory_mb, cpu_seconds)),
                      workdir=workdir, scratch=workdir)
