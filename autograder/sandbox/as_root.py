"""As root, before a sandbox starts: a user of its own, paths it can reach, no privilege left.

Each sandbox leases a user id of ``SANDBOX_UIDS`` (ids no account uses, so no file on the host
belongs to them) for its life. Its first process joins the sandbox's cgroup, then drops to that
uid with no supplementary groups, no capabilities and ``no_new_privs``, and only then starts
bubblewrap, unprivileged. Where a path the sandbox needs is hidden from an unprivileged user (a
Python installed under ``/root``, which is ``0700``), that process mounts it, while still root
and in a private mount namespace that vanishes with it, on a staging folder the user can reach,
and bubblewrap binds it from there.
"""

import ctypes
import fcntl
import functools
import os
import resource
import signal
from collections.abc import Callable

from selfcheck.launch import RLimit

SANDBOX_UIDS = range(1_879_048_192, 1_879_048_192 + 256)   # leased one per sandbox, as root
STATE = "/run/attention-course-sandbox"  # uid leases and staging folders, as root

_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_NO_NEW_PRIVS = 38


class SandboxError(RuntimeError):
    """The sandbox could not be set up: the grader's failure, never the student's."""


class Lease:
    """One uid of ``SANDBOX_UIDS``, held (by an flock) while its sandbox lives."""

    def __init__(self) -> None:
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

    def release(self) -> None:
        kill_user(self.uid)
        os.close(self._fd)


def kill_user(uid: int) -> None:
    """SIGKILL every process whose real uid is ``uid`` (a sandbox's leftovers, as root).

    Normally there are none: killing bubblewrap ends its PID namespace and the
    kernel kills everything in it; this catches what a dying grader left."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def _reachable(path: str) -> bool:
    """Whether a user that is neither owner nor group can walk down to ``path``."""
    parts = os.path.realpath(path).split(os.sep)
    for i in range(2, len(parts)):
        try:
            if not os.stat(os.sep.join(parts[:i])).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _readable(path: str) -> bool:
    """Whether that user may read ``path`` itself (and list it, for a folder)."""
    mode = os.stat(path).st_mode
    return bool(mode & 0o004) and (not os.path.isdir(path) or bool(mode & 0o001))


@functools.lru_cache(maxsize=None)
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def privileged_preexec(uid: int, limits: list[RLimit], cgroup_procs: list[str],
                        stages: list[tuple[str, str]]) -> Callable[[], None]:
    """After fork, as root: cgroup, private mounts, rlimits, then become ``uid`` for good."""
    def run() -> None:
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
            for source, mount in stages:
                if libc.mount(source.encode(), mount.encode(), None, _MS_BIND | _MS_REC, None) != 0:
                    raise OSError(ctypes.get_errno(), f"bind {source}")
        for kind, value in limits:
            resource.setrlimit(kind, value)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)          # root's capabilities are gone from here on
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    return run


def stage_binds(binds: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Binds whose source an unprivileged user cannot reach go through a staging folder that
    the process mounts, while still root, in its private mount namespace."""
    folder = os.path.join(STATE, "stage")
    os.makedirs(folder, mode=0o755, exist_ok=True)
    os.chmod(STATE, 0o755)
    out: list[tuple[str, str]] = []
    stages: list[tuple[str, str]] = []
    staged: dict[str, str] = {}
    for source, inside in binds:
        if not _readable(source):
            raise SandboxError(f"{source} is not readable by other users, so the sandbox's "
                               "unprivileged user cannot use it (chmod o+rX)")
        if _reachable(source):
            out.append((source, inside))
            continue
        directory = source if os.path.isdir(source) else os.path.dirname(source)
        if directory not in staged:
            staged[directory] = os.path.join(folder, str(len(staged)))
            os.makedirs(staged[directory], mode=0o755, exist_ok=True)
            stages.append((directory, staged[directory]))
        mount = staged[directory]
        out.append((mount if directory == source else os.path.join(mount, os.path.basename(source)), inside))
    return out, stages
