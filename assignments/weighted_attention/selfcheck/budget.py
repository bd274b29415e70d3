"""The time one handle on a student's code may use: each call ``time_per_test`` seconds, and with a
part's budget all its calls together ``time_per_part`` (:mod:`selfcheck.student`).

The seconds are CPU seconds where the process's CPU time can be read (``by_cpu``), wall-clock ones
where it cannot; a wall-clock backstop of ``WALL_FACTOR`` times each limit ends a call, and a part,
that waits, sleeps or is blocked, and the calls of a part may wait (neither computing nor waiting
for a CPU) one call's limit in all.
"""

from __future__ import annotations

from collections.abc import Callable

from selfcheck.clock import Clock

WALL_FACTOR = 3         # a call, and a part, may run this many times its CPU limit in wall-clock time
SLOW_SHARE = 0.5        # a call that uses more than this share of its limit is named to the student


class Budget:
    """What a handle's calls have used so far, and the clock its next call runs on."""

    def __init__(self, per_call: float, total: float | None) -> None:
        self.per_call = per_call        # seconds one call may use
        self.total = total              # seconds all the calls may use together; None: no such limit
        self.by_cpu: bool | None = None  # whether the limits count CPU time (known once a process is ready)
        self.spent = 0.0                # of ``total``: CPU seconds (wall-clock ones without a meter)
        self.wall = 0.0                 # wall-clock seconds of all calls, for the part's backstop
        self.waited = 0.0               # seconds the calls spent waiting without computing
        self.seen = 0.0                 # the CPU meter when last charged
        self.slow: dict[str, float] = {}    # call -> the most seconds it used, past SLOW_SHARE of its limit

    def charge(self, cpu_now: float) -> None:
        """Add the CPU time used since the last charge (calls, and threads left running between them)."""
        self.spent += cpu_now - self.seen
        self.seen = cpu_now

    def used_up(self) -> str:
        """Which budget of the part is used up ("" while there is time left)."""
        if self.total is None:
            return ""
        if self.spent >= self.total:
            return f"time budget of {self.total:g} s" + (" of CPU time" if self.by_cpu else "")
        if self.by_cpu and self.wall >= WALL_FACTOR * self.total:
            return (f"time budget of {WALL_FACTOR * self.total:g} s of wall-clock time, {WALL_FACTOR} times "
                    f"its {self.total:g} s of CPU time")
        return ""

    def starved(self) -> bool:
        """Whether the part's wall-clock backstop ended it before its CPU time ran out: it could not
        get a CPU (the machine was busy), which says nothing of the code."""
        return bool(self.by_cpu and self.total is not None and self.spent < self.total
                    and self.wall >= WALL_FACTOR * self.total)

    def clock(self, cpu_seconds: Callable[[], float], runnable: Callable[[], bool]) -> Clock:
        """The clock of the next call: the per-call limit, or what is left of the part's."""
        cpu, wall = self.per_call, self.per_call
        if self.total is not None:
            cpu = min(cpu, self.total - self.spent)
            wall = cpu if not self.by_cpu else min(wall, self.total - self.wall / WALL_FACTOR)
        if self.by_cpu:
            return Clock(cpu_seconds, cpu, WALL_FACTOR * wall, first=self.seen, runnable=runnable,
                         wait=self.per_call - self.waited)
        return Clock(None, cpu, wall)

    def note(self, what: str, used: float) -> None:
        """A call finished after ``used`` seconds: kept when that is close to the limit, so the
        self-check can warn before grading stops it."""
        if used > SLOW_SHARE * self.per_call:
            self.slow[what] = max(used, self.slow.get(what, 0.0))

    def account(self, took: float, waited: float) -> None:
        """A call ended after ``took`` wall-clock seconds of the student's, ``waited`` of them waiting."""
        self.wall += took
        self.waited += waited
        if not self.by_cpu:
            self.spent += took
