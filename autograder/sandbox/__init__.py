"""Where a student's code runs at grading: a bubblewrap sandbox, or a clearly weaker mode.

The student's process (:class:`selfcheck.student.Student`) is started inside
bubblewrap (``bwrap``), never with a privilege over anything on the host:

* **an unprivileged user.** When the grader runs as root (as CI and many course
  servers do), the process first drops to a user of its own, leased for the
  life of the sandbox from ``SANDBOX_UIDS`` (ids no account uses, so no file on
  the host belongs to them), with no supplementary groups, no capabilities and
  ``no_new_privs``; only then does it start bubblewrap, which runs without
  privileges like any user's. Run as root, bubblewrap would map root into the
  sandbox with every capability, and the code inside could remount the
  read-only binds writable. Run by an ordinary user, the process is that user
  in a user namespace of its own, with no capability over the host;
* **a private view of the disk.** The root is an empty tmpfs holding only what
  the code needs, read-only: the system's ``/usr`` (and ``/bin``, ``/lib``...),
  the Python installation and the course's virtual environment, the
  ``selfcheck`` package (the process's side of the wire) and the corpus. The
  only writable places are ``/scratch`` (its working folder, ``HOME`` and
  ``TMPDIR``, holding the released support files read-only) and ``/dev/shm``,
  both small tmpfs mounts of their own (``SCRATCH_MB``, ``SHM_MB``), so
  filling them fills neither the host's disk nor its memory. ``solutions/``,
  ``tests/``, the gradebook and every other submission are not there at all;
* **new PID, user, network, IPC, UTS and cgroup namespaces**: when the part is
  done the grader kills the sandbox's init and the kernel kills everything in
  the namespace, including processes that double-forked or called ``setsid``;
  no network; ``--disable-userns`` forbids nested user namespaces (where the
  code would hold capabilities again);
* **limits the kernel enforces per sandbox**: the address space of every
  process (``course.yaml`` memory_mb), CPU seconds (the part's budget), file
  size and no core files; and, as root, the number of processes of the
  sandbox's own user (``RLIMIT_NPROC``) and a cgroup per sandbox capping
  processes and memory, tmpfs included, and CPU at ``CPU_CORES`` for all its
  processes together, so that one submission's many processes slow no other
  sandbox (cgroup v1 ``pids``, ``memory``, ``cpu`` and ``cpuacct``, or v2,
  where writable). The cgroup also counts the CPU time the limits of
  :class:`selfcheck.student.Student` read (``Launch.cpu``).

Where a path the sandbox needs is hidden from an unprivileged user (a Python
installed under ``/root``, which is ``0700``), the process mounts it, while
still root and in a private mount namespace that vanishes with it, on a folder
that user can reach, and bubblewrap binds it from there.

When bubblewrap is missing or cannot create namespaces (some containers
forbid them), :func:`jail` returns a :class:`WeakJail` and says so once on
stderr: the student's code then runs as the grader's own user with the same
rlimits, its own session and a scan that kills every process carrying the
part's token, but it *can read and write whatever the grader can*.
"""

import ctypes
import fcntl
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

from selfcheck.student import Launch, limited, rlimits

BANNER_WEAK = ("WEAKER MODE: bubblewrap is not available ({why}); students' code runs WITHOUT "
               "filesystem isolation (it can read solutions/, tests/ and other submissions). "
               "Install it (Debian/Ubuntu: apt-get install bubblewrap) before grading real submissions.")

CODE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSIDE_CODE = "/opt/grader"             # where the selfcheck package appears in the sandbox
INSIDE_CORPUS = "/opt/data"             # where the corpus appears in the sandbox
INSIDE_VENV = "/opt/venv"               # where the course's virtual environment appears
SCRATCH = "/scratch"                    # the student's working folder inside the sandbox
SCRATCH_MB = 64                         # size of the scratch tmpfs
SHM_MB = 16                             # size of /dev/shm inside the sandbox
FILE_MB = 64                            # largest file a student's process may write
MAX_PROCESSES = 64                      # processes and threads per sandbox (as root)
CPU_CORES = 1                           # CPU one sandbox may use, all its processes together (as root)
CPU_PERIOD_US = 100_000                 # the cgroup's accounting period for that share
SANDBOX_UIDS = range(1_879_048_192, 1_879_048_192 + 256)   # leased one per sandbox, as root
STATE = "/run/attention-course-sandbox"  # uid leases and staging folders, as root
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
        "/etc/localtime", "/etc/nsswitch.conf")

_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_NO_NEW_PRIVS = 38


class SandboxError(RuntimeError):
    """The sandbox could not be set up: the grader's failure, never the student's."""


def corpus_path(course=None):
    """The corpus file students' code may read, or None."""
    if course is None:
        from autograder import config
        course = config.load()
    from autograder import corpus
    try:
        found = corpus.find(course)
    except RuntimeError:
        return None          # `course grade` stops earlier with the reason
    return os.path.realpath(found) if found else None


def _limits(memory_mb, cpu_seconds, processes=None):
    """The rlimits every process of a sandbox inherits."""
    out = rlimits(memory_mb, cpu_seconds) + [(resource.RLIMIT_FSIZE, (FILE_MB << 20, FILE_MB << 20))]
    if processes:
        out.append((resource.RLIMIT_NPROC, (processes, processes)))
    return out


# --- as root: a user of its own, a cgroup of its own, paths it can reach ------------------------

class _Lease:
    """One uid of ``SANDBOX_UIDS``, held (by an flock) while its sandbox lives."""

    def __init__(self):
        folder = os.path.join(STATE, "uids")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        for uid in SANDBOX_UIDS:
            fd = os.open(os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            kill_user(uid)           # a grader that died may have left one behind
            return
        raise SandboxError(f"all {len(SANDBOX_UIDS)} sandbox user ids are in use")

    def release(self):
        kill_user(self.uid)
        os.close(self._fd)


def kill_user(uid):
    """SIGKILL every process whose real uid is ``uid`` (a sandbox's leftovers, as root).

    Normally there are none: killing bubblewrap ends its PID namespace and the
    kernel kills everything in it; this catches what a dying grader left."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def _cgroup_roots():
    """{controller: folder under which this process may make a cgroup}: pids, memory, cpu and
    cpuacct (cgroup v1), or all of them in one folder (``"v2"``)."""
    roots = {}
    try:
        with open("/proc/self/cgroup") as fh:
            mine = {controller: path for line in fh if line.count(":") >= 2
                    for controllers, path in [line.rstrip("\n").split(":", 2)[1:]]
                    for controller in controllers.split(",")}
    except OSError:
        return roots
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):          # cgroup v2 only
        base = "/sys/fs/cgroup" + mine.get("", "/")
        if os.access(base, os.W_OK):
            roots["v2"] = base
        return roots
    for controller in ("pids", "memory", "cpu", "cpuacct"):            # cgroup v1
        base = f"/sys/fs/cgroup/{controller}" + mine.get(controller, "/")
        if os.path.isdir(base) and os.access(base, os.W_OK):
            roots[controller] = base
    return roots


def _delegate(base, controllers):
    """cgroup v2: let ``base``'s children use ``controllers`` (refused when processes live in
    ``base`` itself and it is not the root: then the limits it cannot give are left out)."""
    try:
        with open(os.path.join(base, "cgroup.controllers")) as fh:
            available = set(fh.read().split())
        with open(os.path.join(base, "cgroup.subtree_control")) as fh:
            missing = (available & set(controllers)) - set(fh.read().split())
        if missing:
            with open(os.path.join(base, "cgroup.subtree_control"), "w") as fh:
                fh.write(" ".join("+" + c for c in sorted(missing)))
    except OSError:
        pass


class _Cgroup:
    """A cgroup (v1 pids, memory, cpu and cpuacct, or v2) capping one sandbox's processes and
    memory, and its CPU at ``CPU_CORES``, and counting the CPU time its processes use."""

    def __init__(self, name, memory_bytes):
        self.folders = []
        self._usage = None          # (file, seconds per unit) of the CPU time used
        quota = CPU_CORES * CPU_PERIOD_US
        settings = {"v2": {"pids.max": MAX_PROCESSES, "memory.max": memory_bytes, "memory.swap.max": 0,
                           "cpu.max": f"{quota} {CPU_PERIOD_US}"},
                    "pids": {"pids.max": MAX_PROCESSES},
                    "memory": {"memory.limit_in_bytes": memory_bytes},
                    "cpu": {"cpu.cfs_period_us": CPU_PERIOD_US, "cpu.cfs_quota_us": quota},
                    "cpuacct": {}}
        usage = {"v2": ("cpu.stat", 1e-6), "cpuacct": ("cpuacct.usage", 1e-9)}
        try:
            for controller, base in _cgroup_roots().items():
                if controller == "v2":
                    _delegate(base, ("cpu", "memory", "pids"))
                folder = os.path.join(base, name)
                os.makedirs(folder, exist_ok=True)
                if os.path.realpath(folder) not in map(os.path.realpath, self.folders):   # co-mounted
                    self.folders.append(folder)
                for key, value in settings[controller].items():
                    path = os.path.join(folder, key)
                    if os.path.exists(path):
                        with open(path, "w") as fh:
                            fh.write(str(value))
                if controller in usage:
                    self._usage = (os.path.join(folder, usage[controller][0]), usage[controller][1])
        except OSError:
            self.folders, self._usage = [], None

    def join_paths(self):
        return [os.path.join(f, "cgroup.procs") for f in self.folders]

    def cpu_seconds(self):
        """CPU time used by every process that was ever in the cgroup (its folder is reused)."""
        path, unit = self._usage
        with open(path) as fh:
            text = fh.read()
        if path.endswith("cpu.stat"):
            text = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec "))
        return int(text) * unit

    def counts_cpu(self):
        return self._usage is not None

    def remove(self):
        """Kill what is left in the cgroup; its folder stays, for the next sandbox of this uid."""
        for folder in self.folders:
            try:
                with open(os.path.join(folder, "cgroup.procs")) as fh:
                    pids = [int(p) for p in fh.read().split()]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def _reachable(path):
    """Whether a user that is neither owner nor group can walk down to ``path``."""
    parts = os.path.realpath(path).split(os.sep)
    for i in range(2, len(parts)):
        try:
            if not os.stat(os.sep.join(parts[:i])).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _readable(path):
    """Whether that user may read ``path`` itself (and list it, for a folder)."""
    mode = os.stat(path).st_mode
    return bool(mode & 0o004) and (not os.path.isdir(path) or bool(mode & 0o001))


@functools.lru_cache(maxsize=None)
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _privileged_preexec(uid, limits, cgroup_procs, stages):
    """After fork, as root: cgroup, private mounts, rlimits, then become ``uid`` for good."""
    def run():
        os.setsid()
        for path in cgroup_procs:
            with open(path, "w") as fh:
                fh.write("0")
        libc = _libc()
        if stages:
            if libc.unshare(_CLONE_NEWNS) != 0:
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
            if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
                raise OSError(ctypes.get_errno(), "make / private")
            for source, stage in stages:
                if libc.mount(source.encode(), stage.encode(), None, _MS_BIND | _MS_REC, None) != 0:
                    raise OSError(ctypes.get_errno(), f"bind {source}")
        for kind, value in limits:
            resource.setrlimit(kind, value)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)          # root's capabilities are gone from here on
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    return run


class BwrapJail:
    """Starts each student process inside bubblewrap, unprivileged."""

    mode = "bubblewrap"
    isolated = True

    def __init__(self, bwrap, corpus=None):
        self.bwrap = bwrap
        self.corpus = corpus
        self.privileged = os.geteuid() == 0

    def _python_paths(self):
        paths = []
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
            for q in (p, os.path.realpath(p)):
                if q and q not in paths and q != "/" and not q.startswith(_SYSTEM):
                    paths.append(q)
        return paths

    def _binds(self, code_root):
        """(host path, inside path) of every read-only bind, and the Python to run inside."""
        binds, python = [], sys.executable
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

    def launch(self, *, workdir, env, code_root, memory_mb, cpu_seconds):
        """A :class:`Launch` for one process whose support files are the files in ``workdir``."""
        binds, python = self._binds(code_root)
        for name in sorted(os.listdir(workdir)):
            path = os.path.join(workdir, name)
            if os.path.isfile(path) and not os.path.islink(path):
                binds.append((path, f"{SCRATCH}/{name}"))
        env = dict(env, HOME=SCRATCH, TMPDIR=SCRATCH, MPLCONFIGDIR=SCRATCH)
        if self.corpus:
            env["TINYSHAKESPEARE"] = f"{INSIDE_CORPUS}/{os.path.basename(self.corpus)}"
        lease = cgroup = None
        stages = []
        if self.privileged:
            binds, stages = _stage(binds)
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
            lease = _Lease()
            try:
                # above the per-process limit (one process meets MemoryError first, cleanly), with
                # room for the tmpfs mounts; many processes together meet the cgroup's
                cgroup = _Cgroup(f"attention-course-{lease.uid}",
                                 (int(memory_mb) + SCRATCH_MB + SHM_MB + 128) << 20)
                limits = _limits(memory_mb, cpu_seconds, processes=MAX_PROCESSES)
                preexec = _privileged_preexec(lease.uid, limits, cgroup.join_paths(), stages)
            except BaseException:
                lease.release()
                raise
        else:
            preexec = limited(_limits(memory_mb, cpu_seconds))

        def release():
            if cgroup is not None:
                cgroup.remove()
            if lease is not None:
                lease.release()
        cpu = cgroup.cpu_seconds if cgroup is not None and cgroup.counts_cpu() else None
        return Launch(cmd, env, INSIDE_CODE, python, preexec, workdir="/", scratch=SCRATCH, release=release,
                      cpu=cpu)


def _stage(binds):
    """Binds whose source an unprivileged user cannot reach go through a staging folder that
    the process mounts, while still root, in its private mount namespace."""
    folder = os.path.join(STATE, "stage")
    os.makedirs(folder, mode=0o755, exist_ok=True)
    os.chmod(STATE, 0o755)
    out, stages, staged = [], [], {}
    for source, inside in binds:
        if not _readable(source):
            raise SandboxError(f"{source} is not readable by other users, so the sandbox's "
                               "unprivileged user cannot use it (chmod o+rX)")
        if _reachable(source):
            out.append((source, inside))
            continue
        directory = source if os.path.isdir(source) else os.path.dirname(source)
        if directory not in staged:
            stage = os.path.join(folder, str(len(staged)))
            os.makedirs(stage, mode=0o755, exist_ok=True)
            staged[directory] = stage
            stages.append((directory, stage))
        stage = staged[directory]
        out.append((stage if directory == source else os.path.join(stage, os.path.basename(source)), inside))
    return out, stages


class WeakJail:
    """No filesystem isolation: rlimits, own session and kill-by-token only."""

    mode = "weaker"
    isolated = False

    def __init__(self, why, corpus=None):
        self.why = why
        self.corpus = corpus

    def launch(self, *, workdir, env, code_root, memory_mb, cpu_seconds):
        env = dict(env, TMPDIR=workdir, MPLCONFIGDIR=workdir)
        if self.corpus:
            env["TINYSHAKESPEARE"] = self.corpus
        return Launch([], env, code_root, sys.executable, limited(_limits(memory_mb, cpu_seconds)),
                      workdir=workdir, scratch=workdir)


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
    if not bwrap:
        return BANNER_WEAK.format(why=why)
    if os.geteuid() == 0:
        roots = _cgroup_roots()
        if "v2" in roots:
            _delegate(roots["v2"], ("cpu", "memory", "pids"))
            with open(os.path.join(roots["v2"], "cgroup.subtree_control")) as fh:
                delegated = fh.read().split()
            roots = [c for c in ("pids", "memory", "cpu") if c in delegated]
            version = "v2"
        else:
            version = "v1"
        kinds = (", ".join(c if c != "cpu" else f"cpu ({CPU_CORES} core)" for c in roots) + f" (cgroup {version})"
                 if roots else "none (no writable cgroup here)")
        return ("isolation: bubblewrap sandbox run as a leased unprivileged uid (no capabilities), "
                f"private filesystem view, PID/user/network namespaces, at most {MAX_PROCESSES} "
                f"processes per sandbox, cgroup limits: {kinds}")
    return ("isolation: bubblewrap sandbox as the grader's own user (no capabilities), private "
            "filesystem view, PID/user/network namespaces; no per-sandbox process, memory or CPU "
            "cgroup (grading as an ordinary user)")
