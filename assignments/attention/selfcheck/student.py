"""The grader's handle on a student's code: calls that cross into another process.

``Student(program, ...)`` starts a fresh Python process (lazily, on the first
call), runs the program's cells there, and turns attribute access into remote
calls: ``student.softmax(z)`` sends ``z`` as plain data, waits at most the time
limit, and returns the plain-data answer. A name the notebook's *given* cells
define (``student.tiny_forward``) runs the given code on this side instead,
calling the student's functions remotely, so no student cell can replace it.

Limits (:class:`selfcheck.limits.Limits`) are CPU time, so a call slowed down
by a loaded machine is not cut short: each call may use ``time_per_test``
seconds of CPU time, and, with a ``budget``, all of one handle's processes
together ``time_per_part`` seconds (what its processes use between calls
counts too). The CPU time is the sandbox's own count where it has one
(``Launch.cpu``: its cgroup, as root), else that of the process and its
descendants read from ``/proc`` (children that exit unwaited-for, or leave the
tree, are missed there: the wall clock below still ends the call); where
neither exists (no ``/proc``) the limits are wall-clock seconds
(:mod:`selfcheck.clock`). A wall-clock backstop, ``WALL_FACTOR`` times each limit, ends a call, and a part, that
waits, sleeps or is blocked. After ``MAX_TIMEOUTS`` timed-out calls, or once
the budget is spent, every later call fails at once (status timeout, "not
run"). The process is killed, with every process it started, on a timeout or
when the check is done. A crash or a timeout becomes a
:class:`StudentError` with a reason a student can act on; a process that
never said "ready" (the sandbox could not start it) is an
:class:`InfrastructureError`: the grader's failure, never the student's.

The functions of other parts (stand-ins) are answered by a second process,
``stand_ins.start(fds, names)``, started before each student process
(:mod:`selfcheck.stand_in_link`); a timeout of the student's call ends both.
The process itself, its start, its lines and its death, is
:class:`selfcheck.process.Process`; at grading, ``jail`` is the sandbox of
``autograder/sandbox/``, which decides what each process can see
(:class:`selfcheck.launch.Jail`). The notebook's own check cells use
:class:`selfcheck.local_student.LocalStudent` instead, over the kernel's namespace.
"""

import contextlib
import math
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from selfcheck import given, wire
from selfcheck.budget import WALL_FACTOR, Budget
from selfcheck.clock import tree_runnable
from selfcheck.errors import InfrastructureError, StudentError
from selfcheck.launch import Jail, Unconfined
from selfcheck.limits import Limits
from selfcheck.process import MESSAGE_CHARS, Process
from selfcheck.program import Program
from selfcheck.stand_in_link import StandInLink

MAX_RESTARTS = 3        # crashes survived before the student's code counts as broken
MAX_TIMEOUTS = 2        # calls that may time out before the remaining ones are not run
RLIMIT_MARGIN = 5       # CPU seconds over a process's allowance before the kernel stops it (its start)


class Student:
    """A notebook's code running in a process of its own."""

    def __init__(self, program: Any, *, workdir: str, limits: Limits, budget: bool = False,
                 jail: Jail | None = None, label: str = "your notebook", stand_ins: Any = None, serve: Any = None,
                 max_timeouts: int | None = MAX_TIMEOUTS):
        """``budget``: all the calls together may use ``limits.time_per_part`` (one part at grading;
        the student's own self-check runs every part in one process, the stand-ins answer for all).
        ``serve``: (fds, names), this process answers other parts' functions on those pipes."""
        if not isinstance(program, Program):
            program = Program(cells=[tuple(c) for c in program])
        self._cells = [list(c) for c in program.cells]
        self._given_cells = list(program.given)
        self._given_names = set(program.given_names)
        self._given: dict[str, Any] | None = None
        self._workdir = os.path.abspath(workdir)
        self._budget = Budget(float(limits.time_per_test), float(limits.time_per_part) if budget else None)
        self.memory_mb = int(limits.memory_mb)
        # the most CPU time one process may use in all (RLIMIT_CPU): a part's
        self._cpu_limit = math.ceil(limits.time_per_part) + RLIMIT_MARGIN
        self._jail = jail or Unconfined()
        names = [n for c in self._cells if len(c) > 2 for n in c[2]]
        self._link = StandInLink(stand_ins, names) if stand_ins is not None and names else None
        self._serve = serve
        self.label = label
        self._process: Process | None = None
        self._load: dict | None = None      # the load request, while a begun process is not yet ready
        self._restarts = 0
        self._timeouts = 0
        self._max_timeouts = max_timeouts      # None: never give up on timeouts (the stand-ins)
        self._grader_seconds = 0.0      # of the current call: starting the stand-ins, never the student's
        self._meter: Callable[[], float] | None = None      # the current process's CPU seconds so far
        self.broken: StudentError | None = None      # ends every later call
        self.starved = False                # a call or the part was ended by the wall clock with CPU
                                            # time left: the machine's load decided (grading retries it)
        self.load_errors: list[dict] = []   # cells that raised while loading
        self.called: set[str] = set()       # the names called since the caller emptied it: what one check used

    # -- process lifetime -------------------------------------------------
    @property
    def _alive(self) -> bool:
        return self._process is not None and self._process.running

    @property
    def _proc(self) -> Process:
        """The current process (a request is made only once there is one)."""
        if self._process is None:
            raise InfrastructureError(f"no process for {self.label}")
        return self._process

    def _spawn(self):
        """Start a process (not waiting for it) and make the load request it gets once ready."""
        load: dict[str, Any] = {"op": "load", "cells": self._cells}
        inherited: list[int] = []
        if self._serve is not None:
            fds, names = self._serve
            inherited = list(fds)       # the student's process's pipes: its parent closes them
            load["serve"] = {"fds": list(fds), "names": list(names)}
        try:
            if self._serve is None and self._link is not None:
                inherited = self._link.child_ends()
                load["stand_in_fds"] = inherited
            self._process = Process(jail=self._jail, workdir=self._workdir, memory_mb=self.memory_mb,
                                    cpu_seconds=self._cpu_limit, label=self.label, pass_fds=inherited)
        except InfrastructureError:
            self.close()
            raise
        finally:
            if self._serve is None:
                for fd in inherited:
                    os.close(fd)
        load["workdir"] = self._proc.scratch
        self._load = load

    def _load_when_ready(self):
        """Wait for the started process to say "ready", then load the cells into it."""
        load, self._load = self._load, None
        why = self._proc.wait_ready()
        if why is not None:
            self.close()
            raise InfrastructureError(f"the sandbox for {self.label} did not start: {why}")
        self._meter = self._proc.meter()
        self._budget.by_cpu = self._meter is not None
        self._budget.seen = self.cpu_seconds() or 0.0
        reply = self._request(load, what="loading " + self.label)
        self.load_errors = [dict(e, error=wire.clean_text(e.get("error", ""), MESSAGE_CHARS),
                                 cell=wire.clean_text(e.get("cell", ""), 200))
                            for e in reply.get("errors", []) if isinstance(e, dict)]

    def start_now(self) -> None:
        """Start the process now (a stand-ins' process is started before it is needed)."""
        self._ensure_running()

    def start_early(self) -> None:
        """Start the process without waiting for it: Python and numpy load in it while the caller
        does something else (collects the suites); the cells load at the first call."""
        if not self._alive and self.broken is None:
            self._restarts += 1
            self._spawn()

    def runnable(self) -> bool:
        """Whether a process of this handle's computes or waits for a CPU now (one that waits for a
        CPU on a loaded machine is not waiting of its own)."""
        return self._alive and tree_runnable(self._proc.pid)

    @property
    def slow_calls(self) -> dict[str, float]:
        """Calls that used more than half of their limit: call -> seconds (the most it took)."""
        return self._budget.slow

    def cpu_seconds(self) -> float | None:
        """CPU seconds the current process (with everything it started) has used, as its sandbox
        counts them, and the stand-ins it called since they were ready; None: not counted here."""
        if self._meter is None:
            return None
        try:
            used = self._meter()
        except OSError as exc:
            raise InfrastructureError(f"the sandbox's CPU time could not be read: {exc}") from None
        return used + (self._link.cpu_seconds() if self._link else 0.0)

    def _charge(self):
        """Add the CPU time used since the last charge to the budget (calls, and threads left
        running between them)."""
        used = self.cpu_seconds()
        if used is not None:
            self._budget.charge(used)

    def close(self) -> None:
        """Kill the process (and the stand-ins' process) and everything they started."""
        with contextlib.suppress(InfrastructureError):      # a count that fails must not stop the kill
            self._charge()
        self._meter = None
        if self._link is not None:
            self._link.close()
        if self._process is not None:
            self._process.close()
            self._process = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- requests ---------------------------------------------------------
    def _died(self, what):
        error = self._proc.died(what)
        self.close()
        return error

    def _send(self, message, what):
        try:
            self._proc.send(message)
        except OSError:
            raise self._died(what) from None

    def _readline(self, clock):
        try:
            return self._proc.readline(clock)
        except StudentError:        # an answer too large to read
            self.close()
            raise

    def _out_of_time(self, spent: str) -> StudentError:
        self.starved |= self._budget.starved()
        self.broken = StudentError("timeout", f"not run: this part used up its {spent}: "
                                              "calls that each take long add up")
        return self.broken

    def _timed_out(self, what, clock):
        self.close()
        self._timeouts += 1
        spent = self._budget.used_up()
        if spent:
            self._out_of_time(spent)
            return StudentError("timeout", f"{what} ran past this part's {spent}")
        if clock.expired == "wait":
            self._out_of_time(f"waiting budget of {self._budget.per_call:g} s")
            return StudentError("timeout", f"{what} waited {self._budget.waited:.1f} s without computing (it sleeps, "
                                           "or blocks on input or on another process): past this part's "
                                           f"waiting budget of {self._budget.per_call:g} s")
        if clock.expired == "cpu":
            took = f"took more than {clock.cpu:g} s of CPU time (an endless loop, or far too slow)"
        elif self._budget.by_cpu:
            self.starved = True
            took = (f"did not finish within {clock.wall:g} s of wall-clock time (it used {clock.used:.1f} s "
                    f"of its {clock.cpu:g} s of CPU time: it waits, sleeps, or could not get a CPU)")
        else:
            took = f"took longer than {clock.wall:g} s (an endless loop, or far too slow)"
        error = StudentError("timeout", f"{what} {took}")
        if self._max_timeouts is not None and self._timeouts >= self._max_timeouts:
            limit = (f"{self._budget.per_call:g} s of CPU time, or {WALL_FACTOR * self._budget.per_call:g} s of "
                     "wall-clock time," if self._budget.by_cpu else f"{self._budget.per_call:g} s")
            self.broken = StudentError(
                "timeout", f"not run: {self._timeouts} earlier calls took more than {limit} each "
                           "(an endless loop, or far too slow), so the rest of this part was stopped")
        return error

    def _request(self, request, *, what):
        self._charge()                       # what its processes used since the last call counts too
        spent = self._budget.used_up()
        if spent:
            broken = self._out_of_time(spent)
            raise StudentError(broken.kind, broken.message)
        request["nonce"] = uuid.uuid4().hex
        # the calls of a part (or of a self-check) may wait, neither computing nor waiting for a CPU
        # (sleep, block on input), one call's limit in all: correct code never waits, and a part
        # whose calls each sleep just under the limit ends in seconds, not at its wall-clock backstop;
        # a call that waits for the stand-ins' answer waits for them to compute, which is no waiting
        pid = self._proc.pid
        clock = self._budget.clock(lambda: self.cpu_seconds() or 0.0,
                                   lambda: tree_runnable(pid) or bool(self._link and self._link.runnable()))
        self._grader_seconds = 0.0
        reply = None
        try:
            reply = self._exchange(request, clock, what)
        finally:
            took = time.monotonic() - clock.started - self._grader_seconds
            if reply is not None and self._alive:
                clock.finish()
            self._budget.account(took, clock.waited)
            self._charge()
        if reply is None:
            raise self._timed_out(what, clock)
        self._budget.note(what.removeprefix("running "), clock.used if self._budget.by_cpu else took)
        if not isinstance(reply, dict) or reply.get("nonce") != request["nonce"]:
            self.close()
            raise StudentError("error", f"{what} gave an answer out of turn")
        return reply

    def _exchange(self, request, clock, what):
        """Send a request and wait for its reply, answering stand-in calls meanwhile; None once
        ``clock`` has run out."""
        self._send(request, what)
        while True:
            line = self._readline(clock)
            if line is None:
                return None
            if line == b"":
                raise self._died(what)
            try:
                reply = wire.parse(line)
            except wire.WireError as exc:
                self.close()
                raise StudentError("error", f"{what} sent back {exc}") from None
            if not (isinstance(reply, dict) and reply.get("op") == "stand-ins"):
                return reply
            began = time.monotonic()
            answer = self._link.start() if self._link else {"ok": False, "error": "no other part's functions "
                                                                                  "are answered here"}
            self._grader_seconds += time.monotonic() - began
            clock.extend(time.monotonic() - began)
            self._send(answer, what)

    def _ensure_running(self):
        if self.broken is not None:     # a fresh exception: re-raising one would grow its traceback
            raise StudentError(self.broken.kind, self.broken.message)
        if self._alive:
            if self._load is not None:      # begun, not yet ready
                self._load_or_break()
            return
        if self._max_timeouts is not None and self._restarts > MAX_RESTARTS:
            self.broken = StudentError("crashed", "your code stopped responding too many times")
            raise self.broken
        self._restarts += 1
        self._spawn()
        self._load_or_break()

    def _load_or_break(self):
        try:
            self._load_when_ready()
        except StudentError as exc:
            self.broken = exc
            raise

    def call(self, name: str, *args: Any, probe: str | None = None, **kwargs: Any) -> Any:
        """Call ``name`` in the student's process and return its plain-data answer."""
        self.called.add(f"{probe}.{name}" if probe else name)
        self._ensure_running()
        what = f"running {probe + '.' if probe else ''}{name}"
        reply = self._request({"op": "call", "name": name, "probe": probe,
                               "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs)},
                              what=what)
        if not reply.get("ok"):
            kind = reply.get("kind") if reply.get("kind") in ("error", "missing") else "error"
            raise StudentError(kind, wire.clean_text(reply.get("error"), MESSAGE_CHARS), reply.get("cause"))
        try:
            return wire.decode(reply.get("value"))
        except wire.WireError as exc:
            raise StudentError("error", f"`{name}` returned {exc}") from None

    def probe(self, module: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run a measurement from ``selfcheck.probes.<module>`` beside the student's code."""
        return self.call(name, *args, probe=module, **kwargs)

    def given(self) -> Any:
        """The given cells, run on this side, calling the student's functions remotely."""
        if self._given is None:
            self._given = given.namespace(self, self._cells, self._given_cells, self._workdir, StudentError)
        return self._given

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._given_names:
            return self.given()[name]
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)
