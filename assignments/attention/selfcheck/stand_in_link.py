"""The link between a student's process and the process that answers the functions of other parts
(the stand-ins): two pipes made with each student process, the stand-ins' process started with it,
before the student's code runs (code that used up the processes its account may start must not
keep the grader's from starting), and the CPU time it uses since then."""

import os
from typing import Any


class StandInLink:
    """``factory.start(fds, names)`` starts the stand-ins' process on our ends of the pipes and
    returns a handle with ``cpu_seconds()``, ``runnable()`` and ``close()``."""

    def __init__(self, factory: Any, names: list[str]) -> None:
        self._factory, self._names = factory, names
        self._process: Any = None
        self._base = 0.0                 # its CPU seconds when it was ready

    def child_ends(self) -> list[int]:
        """New pipes for a new student process, the stand-ins' process started on its ends: the
        ends the student's process inherits (the caller closes its copies once it has started)."""
        self.close()
        to_r, to_w = os.pipe()
        back_r, back_w = os.pipe()
        try:
            self._process = self._factory.start((to_r, back_w), self._names)
        except BaseException:
            for fd in (to_w, back_r):
                os.close(fd)
            raise
        finally:
            for fd in (to_r, back_w):
                os.close(fd)
        self._base = self._process.cpu_seconds() or 0.0
        return [to_w, back_r]

    def start(self) -> dict:
        """The student's code called another part's function for the first time: the reply to send."""
        if self._process is None:
            return {"ok": False, "error": "no other part's functions are answered here"}
        return {"ok": True}

    def cpu_seconds(self) -> float:
        """CPU seconds the stand-ins' process used since it was ready (0 when it never started)."""
        if self._process is None:
            return 0.0
        return (self._process.cpu_seconds() or 0.0) - self._base

    def runnable(self) -> bool:
        """Whether the stand-ins' process computes or waits for a CPU now."""
        return self._process is not None and self._process.runnable()

    def close(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None
