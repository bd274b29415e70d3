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
``stand_ins.start(fds, names)``, started when the student's code first calls
one; the two processes talk over a pair of pipes made here, and a timeout of
the student's call ends both. At grading, ``jail`` is the sandbox of
``autograder/sandbox/``, which decides what each process can see
(:class:`selfcheck.launch.Jail`).
"""

import contextlib
import json
import math
import os
import select
import signal
import subprocess
import time
import uuid
from typing import Any

from selfcheck import causes, given, wire
from selfcheck.budget import WALL_FACTOR, Budget
from selfcheck.causes import said
from selfcheck.clock import Clock, tree_meter, tree_runnable
from selfcheck.launch import Jail, Unconfined
from selfcheck.limits import Limits
from selfcheck.program import Program

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LAUNCH = ("import sys; sys.path.insert(0, sys.argv[2]); "
           "from selfcheck.child import main; main(sys.argv[1])")
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TINYSHAKESPEARE")
_TOKEN = "SELFCHECK_STUDENT_TOKEN"
MAX_RESTARTS = 3        # crashes survived before the student's code counts as broken
MAX_TIMEOUTS = 2        # calls that may time out before the remaining ones are not run
STARTUP_SECONDS = 60    # for the process to say "ready" (a loaded machine, never the student's time)
RLIMIT_MARGIN = 5       # CPU seconds over a process's allowance before the kernel stops it (its start)
MESSAGE_CHARS = 2000    # of any message from the student's process


class StudentError(Exception):
    """Student code did not give an answer: kind is error, timeout, crashed or missing. ``cause``
    (see :mod:`selfcheck.causes`) names a known cause the error showed where it was raised; its
    ``diagnosis`` and ``mistake`` follow from it, and its text ends with the diagnosis."""

    def __init__(self, kind: str, message: str, cause: str | None = None) -> None:
        self.mistake, self.diagnosis = causes.diagnosis(cause)
        super().__init__(said(message, self.diagnosis))
        self.kind = kind
        self.message = message
        self.cause = cause if self.diagnosis else None


class InfrastructureError(Exception):
    """The process running the code could not be started: nothing to do with the code."""


def _kill_tagged(token):
    """SIGKILL every process whose environment carries ``token`` (descendants that left the group)."""
    needle = f"{_TOKEN}={token}".encode()
    for _ in range(3):      # a process may fork while the scan runs: scan until none is found
        found = False
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return
        for pid in pids:
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    tagged = needle in fh.read().split(b"\0")
            except OSError:
                continue
            if tagged:
                found = True
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return


def _signal_name(code):
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Student:
    """A notebook's code running in a process of its own."""

    def __init__(self, program: Any, *, workdir: str, limits: Limits, budget: bool = False,
                 jail: Jail | None = None, label: str = "your notebook", stand_ins: Any = None, serve: Any = None,
                 max_timeouts: int | None = MAX_TIMEOUTS):
        """``budget``: all the calls together may use ``limits.time_per_part`` (one part at grading;
        the student's own self-check runs every part in one process, the stand-ins answer for all)."""
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
        self._stand_ins = stand_ins          # starts the process answering other parts' functions
        self._serve = serve                  # (fds, names): this process is such a process
        self._pipes: list[int] = []          # our ends of the pipes for a stand-ins' process
        self._stand_in_process = None
        self.label = label
        self._proc = self._launch = None
        self._load = None               # the load request, while a begun process is not yet ready
        self._answers = None
        self._restarts = 0
        self._timeouts = 0
        self._max_timeouts = max_timeouts      # None: never give up on timeouts (the stand-ins)
        self._grader_seconds = 0.0      # of the current call: starting the stand-ins, never the student's
        self._meter = None              # the current process's CPU seconds so far, see _load_when_ready
        self._stand_in_base = 0.0       # the stand-ins' CPU time when they were ready
        self._token = uuid.uuid4().hex
        self.broken = None          # a StudentError that ends every later call
        self.load_errors: list[dict] = []   # cells that raised while loading

    # -- process lifetime -------------------------------------------------
    def _env(self):
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(HOME=self._workdir, PYTHONHASHSEED="0", MPLBACKEND="Agg",
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONDONTWRITEBYTECODE="1", TMPDIR=self._workdir)
        env[_TOKEN] = self._token
        return env

    def _spawn(self):
        try:
            self._launch = self._jail.launch(workdir=self._workdir, env=self._env(), code_root=_HERE,
                                             memory_mb=self.memory_mb, cpu_seconds=self._cpu_limit)
        except Exception as exc:  # noqa: BLE001 - no uid, no cgroup, no sandbox: ours to fix
            raise InfrastructureError(f"the sandbox could not be prepared: {exc}") from None
        launch = self._launch
        read_fd, write_fd = os.pipe()
        inherited = [write_fd]
        load = {"op": "load", "cells": self._cells, "workdir": launch.scratch}
        if self._serve is not None:
            fds, names = self._serve
            inherited += list(fds)
            load["serve"] = {"fds": list(fds), "names": list(names)}
        elif self._stand_ins is not None and any(len(c) > 2 for c in self._cells):
            to_r, to_w = os.pipe()
            back_r, back_w = os.pipe()
            self._pipes = [to_r, back_w]          # handed to the stand-ins' process when it starts
            inherited += [to_w, back_r]
            load["stand_in_fds"] = [to_w, back_r]
        cmd = launch.prefix + [launch.python, "-I", "-c", _LAUNCH, str(write_fd), launch.code_root]
        try:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=tuple(inherited), cwd=launch.workdir, env=launch.env, preexec_fn=launch.preexec)
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(read_fd)
            self.close()
            raise InfrastructureError(f"the process for {self.label} could not be started: {exc}") from None
        finally:
            for fd in inherited if self._serve is None else [write_fd]:
                os.close(fd)
        self._answers = os.fdopen(read_fd, "rb")
        self._chunks, self._size = [], 0
        self._load = load

    def _load_when_ready(self):
        """Wait for the started process to say "ready", then load the cells into it."""
        load, self._load = self._load, None
        launch = self._launch
        line = self._readline(Clock(None, None, STARTUP_SECONDS))
        if not line or not line.startswith(b'{"op": "ready"'):
            why = self._startup_failure()
            self.close()
            raise InfrastructureError(f"the sandbox for {self.label} did not start: {why}")
        pid = self._proc.pid
        self._meter = launch.cpu or (tree_meter(pid) if os.path.exists(f"/proc/{pid}/stat") else None)
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
        if self._proc is None and self.broken is None:
            self._restarts += 1
            self._spawn()

    def _start_stand_ins(self):
        """The student's code called another part's function for the first time."""
        if not self._pipes:
            return {"ok": False, "error": "no other part's functions are answered here"}
        names = [n for c in self._cells if len(c) > 2 for n in c[2]]
        self._stand_in_process = self._stand_ins.start(tuple(self._pipes), names)
        self._stand_in_base = self._stand_in_process.cpu_seconds() or 0.0
        for fd in self._pipes:
            os.close(fd)
        self._pipes = []
        return {"ok": True}

    def _startup_failure(self):
        """What the sandbox said on stderr before it died (bounded), or why we gave up."""
        if self._proc.poll() is None:
            return f"no answer within {STARTUP_SECONDS} s"
        try:
            os.set_blocking(self._proc.stderr.fileno(), False)
            said = (self._proc.stderr.read(4000) or b"").decode("utf-8", "replace").strip()
        except (OSError, TypeError):
            said = ""
        return wire.clean_text(said.splitlines()[-1] if said else f"it exited with {self._proc.returncode}", 300)

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
        if self._stand_in_process is not None:
            used += (self._stand_in_process.cpu_seconds() or 0.0) - self._stand_in_base
        return used

    def _charge(self):
        """Add the CPU time used since the last charge to the budget (calls, and threads left
        running between them)."""
        if self._meter is not None:
            self._budget.charge(self.cpu_seconds())

    def close(self) -> None:
        """Kill the process (and the stand-ins' process) and everything they started."""
        with contextlib.suppress(InfrastructureError):      # a count that fails must not stop the kill
            self._charge()
        self._meter = None
        if self._stand_in_process is not None:
            self._stand_in_process.close()
            self._stand_in_process = None
        for fd in self._pipes:
            os.close(fd)
        self._pipes = []
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            _kill_tagged(self._token)
            for stream in (proc.stdin, proc.stderr, self._answers):
                try:
                    stream.close()
                except (OSError, AttributeError):
                    pass
        if self._launch is not None:
            self._launch.release()
            self._launch = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- requests ---------------------------------------------------------
    def _readline(self, clock):
        """One line from the answer pipe (at most wire.MAX_BYTES), b"" at EOF, None once ``clock``
        has run out."""
        while True:
            if self._chunks and b"\n" in self._chunks[-1]:
                data = b"".join(self._chunks)
                line, _, rest = data.partition(b"\n")
                self._chunks, self._size = ([rest] if rest else []), len(rest)
                return line
            left = clock.wait()
            if left is None:
                return None
            ready, _, _ = select.select([self._answers], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._answers.fileno(), 1 << 20)
            if not chunk:
                return b""
            self._chunks.append(chunk)
            self._size += len(chunk)
            if self._size > wire.MAX_BYTES:
                self.close()
                raise StudentError("error", f"the answer was larger than {wire.MAX_BYTES >> 20} MB")

    def _died(self, what):
        code = self._proc.wait()
        sandboxed = bool(self._launch and self._launch.prefix)
        self.close()
        if sandboxed and code > 128:          # bubblewrap exits with 128 + the signal that killed it
            code = 128 - code
        if code < 0 and -code == signal.SIGXCPU:
            reason = "used more CPU time than allowed"
        elif code < 0:
            reason = (f"was killed by {_signal_name(code)} (often the memory limit of "
                      f"{self.memory_mb} MB)")
        else:
            reason = f"exited with status {code} (does the code call exit() or os._exit()?)"
        return StudentError("crashed", f"the process running your code {reason} while {what}")

    def _send(self, message, what):
        try:
            self._proc.stdin.write((json.dumps(message) + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(what) from None

    def _out_of_time(self, spent):
        self.broken = StudentError("timeout", f"not run: this part used up its {spent}: "
                                              "calls that each take long add up")

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
            self._out_of_time(spent)
            raise StudentError(self.broken.kind, self.broken.message)
        request["nonce"] = uuid.uuid4().hex
        # the calls of a part (or of a self-check) may wait, neither computing nor waiting for a CPU
        # (sleep, block on input), one call's limit in all: correct code never waits, and a part
        # whose calls each sleep just under the limit ends in seconds, not at its wall-clock backstop
        pid = self._proc.pid
        clock = self._budget.clock(self.cpu_seconds, lambda: tree_runnable(pid))
        self._grader_seconds = 0.0
        reply = None
        try:
            reply = self._exchange(request, clock, what)
        finally:
            took = time.monotonic() - clock.started - self._grader_seconds
            if reply is not None and self._proc is not None:
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
            answer = self._start_stand_ins()
            self._grader_seconds += time.monotonic() - began
            clock.extend(time.monotonic() - began)
            self._send(answer, what)

    def _ensure_running(self):
        if self.broken is not None:     # a fresh exception: re-raising one would grow its traceback
            raise StudentError(self.broken.kind, self.broken.message)
        if self._proc is not None:
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


class LocalStudent:
    """The same interface over a namespace in this process (the notebook's own check)."""

    def __init__(self, namespace: dict, per_call: float | None = None) -> None:
        self._ns = namespace
        self.load_errors: list = []
        self._budget = Budget(per_call or math.inf, None)      # no limit here: only what to warn of
        self.slow_calls = self._budget.slow

    def call(self, name: str, *args: Any, probe: str | None = None, **kwargs: Any) -> Any:
        args = wire.loads(wire.dumps(list(args)))
        kwargs = wire.loads(wire.dumps(kwargs))
        if probe:
            import importlib
            fn = getattr(importlib.import_module(f"selfcheck.probes.{probe}"), name)
            args = (self._ns, *args)
        else:
            fn = self._ns.get(name)
            if not callable(fn):
                raise StudentError("missing", f"your notebook defines no function `{name}`")
        started = time.process_time()
        try:
            value = fn(*args, **kwargs)
        except StudentError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StudentError("error", f"{type(exc).__name__}: {exc}", causes.of(exc)) from None
        self._budget.note(f"{probe + '.' if probe else ''}{name}", time.process_time() - started)
        try:
            return wire.loads(wire.dumps(value))
        except wire.WireError as exc:
            raise StudentError("error", f"`{name}` returned {exc}") from None

    def probe(self, module: str, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.call(name, *args, probe=module, **kwargs)

    def close(self) -> None:
        pass

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)
