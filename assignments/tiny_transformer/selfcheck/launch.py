"""How a process that runs a student's code is started: the jail that decides what it can see,
and the limits the kernel holds it to.

Every jail answers :meth:`Jail.launch` with a :class:`Launch`. At grading the jails are the
grader's sandboxes (``autograder/sandbox/``: bubblewrap, or the weaker mode); on a student's own
machine, running their own self-check, it is :class:`Unconfined`. This module is part of the
student's kit, so it imports nothing of the grader: the sandboxes follow the interface declared
here.
"""

import os
import resource
import sys
from collections.abc import Callable
from typing import Protocol

RLimit = tuple[int, tuple[int, int]]     # (resource.RLIMIT_..., (soft, hard))
# a jail that caps its processes from inside (selfcheck.child sets RLIMIT_NPROC to it, first)
MAX_PROCESSES_VARIABLE = "COURSE_SANDBOX_PROCESSES"


class Launch:
    """How to start one process: the command before ours, its environment, where our code and
    its working folder are as the process sees them, and what to release when it is gone."""

    def __init__(self, prefix: list[str], env: dict[str, str], code_root: str, python: str,
                 preexec: Callable[[], None], *, workdir: str, scratch: str,
                 release: Callable[[], None] | None = None, cpu: Callable[[], float] | None = None):
        self.prefix, self.env, self.code_root, self.python = prefix, env, code_root, python
        self.preexec, self.workdir, self.scratch = preexec, workdir, scratch
        self._release = release
        self.cpu = cpu          # CPU seconds the sandbox's processes used so far, if it counts them

    def release(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None


class Jail(Protocol):
    """Where a student's process runs."""

    isolated: bool      # whether the process is kept from the host's files (a sandbox)

    def launch(self, *, workdir: str, env: dict[str, str], code_root: str, memory_mb: int,
               cpu_seconds: int) -> Launch:
        """How to start one process working in ``workdir``, with ``memory_mb`` of address space and
        ``cpu_seconds`` of CPU time at most (its rlimits)."""
        ...


def rlimits(memory_mb: int, cpu_seconds: int) -> list[RLimit]:
    """The limits every process running a student's code gets: address space, CPU, no core."""
    mem = int(memory_mb) << 20
    return [(resource.RLIMIT_AS, (mem, mem)), (resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5)),
            (resource.RLIMIT_CORE, (0, 0))]


def limited(limits: list[RLimit]) -> Callable[[], None]:
    """A preexec function: a session of its own, then ``limits``."""
    def apply() -> None:
        os.setsid()
        for kind, value in limits:
            resource.setrlimit(kind, value)
    return apply


class Unconfined:
    """No sandbox: a student's own machine running their own self-check, with rlimits."""

    isolated = False

    def launch(self, *, workdir: str, env: dict[str, str], code_root: str, memory_mb: int,
               cpu_seconds: int) -> Launch:
        return Launch([], dict(env, TMPDIR=workdir), code_root, sys.executable,
                      limited(rlimits(memory_mb, cpu_seconds)), workdir=workdir, scratch=workdir)
