"""When a call into a student's process must end: CPU time, a bound on waiting, and a wall-clock
backstop.

A call is timed by the CPU time its processes use, so a call that a loaded machine slows down
is not cut short. The count is the sandbox's own where it has one (its cgroup, as root), else
that of the process tree read from ``/proc`` (:func:`tree_meter`); where neither exists the
limit is wall-clock time. Time in which the processes neither compute nor wait for a CPU (they
sleep, or block on input) is counted apart (:func:`tree_runnable`) and has a bound of its own,
so a call that waits ends long before the wall-clock backstop.
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


def _tasks(root: int) -> list[int] | None:
    """``root`` and its descendants, each once (a thread's ``children`` lists them); None when
    ``root`` is not there."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            if pid == root:
                return None
            continue
        found.append(pid)
        for tid in tids:
            todo += [int(child) for child in (_read(f"/proc/{pid}/task/{tid}/children") or b"").split()]
    return found


def tree_runnable(root: int) -> bool:
    """Whether any thread of ``root``'s processes is running or waiting for a CPU (state R): a
    tree of which none is sleeps, or blocks on input. True when it cannot be told."""
    pids = _tasks(root) if _LISTS_CHILDREN else None
    if not pids:
        return True
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stat = _read(f"/proc/{pid}/task/{tid}/stat")
            if stat is not None and stat.rsplit(b")", 1)[1].split()[:1] == [b"R"]:
                return True
    return False


def _walk_cpu_seconds(root: int) -> float | None:
    """:func:`tree_cpu_seconds` read from ``root``'s own processes: each one's threads list its
    children."""
    pids = _tasks(root)
    if pids is None:
        return None
    total = 0
    for pid in pids:
        stat = _read(f"/proc/{pid}/stat")
        if stat is not None:    # ended meanwhile: once waited for, its time is its parent's
            total += sum(int(f) for f in stat.rsplit(b")", 1)[1].split()[11:15])     # utime stime cutime cstime
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
    the meter read ``first`` (``meter`` None: wall-clock time only), once they have waited
    ``wait`` seconds without computing (``runnable`` tells whether any of them computes or waits
    for a CPU), or after ``wall`` seconds, whichever comes first."""

    def __init__(self, meter: Meter | None, cpu: float | None, wall: float, first: float = 0.0,
                 runnable: Callable[[], bool] | None = None, wait: float | None = None):
        self.meter, self.cpu, self.wall, self.first = meter, cpu, wall, first
        self.runnable, self.wait_limit = runnable, wait
        self.started = time.monotonic()
        self._end = self.started + wall
        self._look = self.started               # when to read the meter next
        self.used = 0.0                         # CPU seconds, when last read
        self.waited = 0.0                       # seconds in which no process computed
        self._last = (self.started, 0.0)        # (when, CPU seconds) of the last look
        self.expired: str | None = None         # "cpu", "wait" or "wall", once the call has run out

    def _count_waiting(self, now: float) -> None:
        """Add the time since the last look to ``waited`` when it was spent mostly without CPU
        time and no process is runnable now."""
        when, used = self._last
        self._last = (now, self.used)
        if self.runnable is None or now <= when:
            return
        computed = self.used - used
        if computed < 0.5 * (now - when) and not self.runnable():
            self.waited += now - when - computed

    def finish(self) -> None:
        """The call returned: count its last stretch of waiting (for the part's bound)."""
        if self.meter is not None and self.runnable is not None:
            self.used = self.meter() - self.first
            self._count_waiting(time.monotonic())

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
            self._count_waiting(now)
            if self.wait_limit is not None and self.waited >= self.wait_limit:
                self.expired = "wait"
                return None
            # every core could be busy: look again before the rest could have been used (or
            # before the waiting that is left could have been waited)
            soon = left / (os.cpu_count() or 1)
            if self.wait_limit is not None:
                soon = min(soon, self.wait_limit - self.waited)
            self._look = now + min(max(soon, POLL_SECONDS[0]), POLL_SECONDS[1])
        return min(self._end, self._look) - now

    def extend(self, seconds: float) -> None:
        """Time the call spent waiting on the grader (starting the stand-ins) is never its own."""
        self._end += seconds
        self._look += seconds
        self._last = (self._last[0] + seconds, self._last[1])
