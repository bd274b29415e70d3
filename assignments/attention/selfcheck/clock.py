"""When a call into a student's process must end: CPU time, with a wall-clock backstop.

A call is timed by the CPU time its processes use, so a call that a loaded machine slows down
is not cut short. The count is the sandbox's own where it has one (its cgroup, as root), else
that of the process tree read from ``/proc`` (:func:`tree_meter`); where neither exists the
limit is wall-clock time. The wall clock ends a call that waits, sleeps or is blocked.
"""

import os
import time
from collections.abc import Callable

POLL_SECONDS = (0.05, 1.0)    # how often a running call's CPU time is read, at least and at most
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_LISTS_CHILDREN = os.path.exists("/proc/thread-self/children")     # CONFIG_PROC_CHILDREN

Meter = Callable[[], float]     # CPU seconds used so far


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _walk_cpu_seconds(root: int) -> float | None:
    """:func:`tree_cpu_seconds` read from ``root``'s own processes: each one's threads list its
    children."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        stat = _read(f"/proc/{pid}/stat")
        if stat is None:
            if pid == root:
                return None
            continue                # ended meanwhile: once waited for, its time is its parent's
        total += sum(int(f) for f in stat.rsplit(b")", 1)[1].split()[11:15])     # utime stime cutime cstime
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            todo += [int(child) for child in (_read(f"/proc/{pid}/task/{tid}/children") or b"").split()]
    return total / _TICKS


def _scan_cpu_seconds(root: int) -> float | None:
    """:func:`tree_cpu_seconds` from every process in /proc, for a kernel whose threads do not list
    their children."""
    children: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
        used[int(name)] = sum(int(f) for f in fields[11:15])      # utime stime cutime cstime
    if root not in used:
        return None
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0)
        todo += children.get(pid, [])
    return total / _TICKS


def tree_cpu_seconds(root: int) -> float | None:
    """CPU seconds used by process ``root`` and its descendants, those alive and those one of
    them waited for, from /proc; None when ``root`` is not there. A call reads it several times:
    it reads ``root``'s processes alone where the kernel lists a thread's children (reading every
    process costs milliseconds on a machine running hundreds)."""
    return _walk_cpu_seconds(root) if _LISTS_CHILDREN else _scan_cpu_seconds(root)


def tree_meter(root: int) -> Meter:
    """``tree_cpu_seconds(root)`` that never goes back: the count drops when the tree ends, or a
    child exits that nobody waits for, and CPU time once used stays used."""
    last = [0.0]

    def meter() -> float:
        now = tree_cpu_seconds(root)
        if now is not None and now > last[0]:
            last[0] = now
        return last[0]
    return meter


class Clock:
    """When one call must end: once its processes have used ``cpu`` seconds of CPU time since
    the meter read ``first`` (``meter`` None: wall-clock time only) or after ``wall`` seconds,
    whichever comes first."""

    def __init__(self, meter: Meter | None, cpu: float | None, wall: float, first: float = 0.0):
        self.meter, self.cpu, self.wall, self.first = meter, cpu, wall, first
        self.started = time.monotonic()
        self._end = self.started + wall
        self._look = self.started               # when to read the meter next
        self.used = 0.0                         # CPU seconds, when last read
        self.expired: str | None = None         # "cpu" or "wall", once the call has run out

    def wait(self) -> float | None:
        """Seconds to wait before looking again; None once a limit is reached."""
        now = time.monotonic()
        if now >= self._end:
            self.expired = "wall"
            if self.meter is not None:
                self.used = self.meter() - self.first
            return None
        if self.meter is None or self.cpu is None:
            return self._end - now
        if now >= self._look:
            self.used = self.meter() - self.first
            left = self.cpu - self.used
            if left <= 0:
                self.expired = "cpu"
                return None
            # every core could be busy: look again before the rest could have been used
            self._look = now + min(max(left / (os.cpu_count() or 1), POLL_SECONDS[0]), POLL_SECONDS[1])
        return min(self._end, self._look) - now

    def extend(self, seconds: float) -> None:
        """Time the call spent waiting on the grader (starting the stand-ins) is never its own."""
        self._end += seconds
        self._look += seconds
