"""Which core grading runs on: each local grading worker keeps to one, and so do the processes it
starts, so a student's process and the stand-ins' process answering its calls take turns on one
core. On two cores at rest, each of those calls woke the other core from idle, and a part whose
experiment makes thousands of them took two to three times as long. As root, each sandbox's cgroup
holds its processes to its worker's cores (autograder/sandbox/cgroup.py), so a student's code
cannot widen them onto a neighbour's. Workers take the idlest cores first, so batches side by side
(a hub's, a test run's) spread over the cores rather than all starting on the first.
"""

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import time
from collections.abc import Iterator

from autograder.grade import forked


def pool(workers: int) -> cf.ProcessPoolExecutor:
    """``workers`` forked grading processes, each kept to one core, the idlest first (and ended
    with this process: :mod:`autograder.grade.forked`)."""
    return forked.pool(workers, _take_one, (idlest_first(), multiprocessing.get_context("fork").Value("i", 0)))


@contextlib.contextmanager
def on_idlest() -> Iterator[None]:
    """This thread, and the processes it starts, on the idlest core for a block (a cluster
    worker's grading of one hand-in)."""
    found = idlest_first()
    before = os.sched_getaffinity(0) if found else set()
    _keep_to(found[:1])
    try:
        yield
    finally:
        _keep_to(sorted(before))


def idlest_first(window: float = 0.05) -> list[int]:
    """The cores this process may use, the idlest over ``window`` seconds first ([] where the
    system says neither which nor how idle)."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    allowed = sorted(os.sched_getaffinity(0))

    def idle() -> dict[int, int]:
        with open("/proc/stat") as fh:     # cpuN user nice system idle iowait ...
            return {int(f[0][3:]): int(f[4]) + int(f[5]) for f in (line.split() for line in fh)
                    if f[0].startswith("cpu") and f[0][3:].isdigit()}
    try:
        before = idle()
        time.sleep(window)
        after = idle()
    except (OSError, ValueError, IndexError):
        return allowed
    return sorted(allowed, key=lambda cpu: -(after.get(cpu, 0) - before.get(cpu, 0)))


def _take_one(found: list[int], taken: "multiprocessing.sharedctypes.Synchronized[int]") -> None:
    """A pool worker's start: the next core of ``found`` in turn."""
    if found:
        with taken.get_lock():
            turn, taken.value = taken.value, taken.value + 1
        _keep_to([found[turn % len(found)]])


def _keep_to(found: list[int]) -> None:
    if found:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, set(found))
