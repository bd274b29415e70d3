"""The grader's handle on a student's code: calls that cross into another process.

``Student(cells, ...)`` starts a fresh Python process (lazily, on the first
call), runs the notebook's cells there, and turns attribute access into remote
calls: ``student.softmax(z)`` sends ``z`` as plain data, waits at most the time
limit, and returns the plain-data answer. The process is killed, with every
process it started, on a timeout or when the check is done; a crash or a
timeout becomes a :class:`StudentError` with a reason a student can act on.
After ``MAX_TIMEOUTS`` timed-out calls every later call fails at once (status
timeout, "not run"), so code that hangs in every call costs two time limits,
not one per check. At grading, ``jail`` is the sandbox of
``autograder/sandbox.py``, which decides what the process can see.
"""

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
import uuid

from selfcheck import wire

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LAUNCH = ("import sys; sys.path.insert(0, sys.argv[2]); "
           "from selfcheck.child import main; main(sys.argv[1])")
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TINYSHAKESPEARE")
_TOKEN = "SELFCHECK_STUDENT_TOKEN"
MAX_RESTARTS = 3        # crashes survived before the student's code counts as broken
MAX_TIMEOUTS = 2        # calls that may time out before the remaining ones are not run


class StudentError(Exception):
    """Student code did not give an answer: kind is error, timeout, crashed or missing."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def _limits(memory_mb, cpu_seconds, file_mb):
    def apply():
        os.setsid()
        mem = int(memory_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb << 20, file_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


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

    def __init__(self, cells, *, workdir, time_limit=10.0, memory_mb=1024,
                 cpu_limit=120, jail=None, label="your notebook"):
        self._cells = [list(c) for c in cells]
        self._workdir = os.path.abspath(workdir)
        self.time_limit = float(time_limit)
        self.memory_mb = int(memory_mb)
        self._cpu = int(cpu_limit)
        self._jail = jail if hasattr(jail, "wrap") else list(jail or [])
        self.label = label
        self._proc = None
        self._answers = None
        self._restarts = 0
        self._timeouts = 0
        self._token = uuid.uuid4().hex
        self.broken = None          # a StudentError that ends every later call
        self.load_errors = []       # cells that raised while loading

    # -- process lifetime -------------------------------------------------
    def _env(self):
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(HOME=self._workdir, PYTHONHASHSEED="0", MPLBACKEND="Agg",
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONDONTWRITEBYTECODE="1", TMPDIR=self._workdir)
        env[_TOKEN] = self._token
        return env

    def _start(self):
        env, here, python = self._env(), _HERE, sys.executable
        if hasattr(self._jail, "wrap"):     # a sandbox (autograder.sandbox): its own view of the disk
            prefix, env, here, python = self._jail.wrap(workdir=self._workdir, env=env, code_root=_HERE)
        else:
            prefix = list(self._jail)
        read_fd, write_fd = os.pipe()
        cmd = prefix + [python, "-I", "-c", _LAUNCH, str(write_fd), here]
        try:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(write_fd,), cwd=self._workdir, env=env,
                preexec_fn=_limits(self.memory_mb, self._cpu, 64))
        finally:
            os.close(write_fd)
        self._answers = os.fdopen(read_fd, "rb")
        self._buffer = b""
        reply = self._request({"op": "load", "cells": self._cells, "workdir": self._workdir},
                              what="loading " + self.label)
        self.load_errors = reply.get("errors", [])

    def close(self):
        """Kill the process and everything it started."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        _kill_tagged(self._token)
        for stream in (proc.stdin, self._answers):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- requests ---------------------------------------------------------
    def _readline(self, deadline):
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._answers], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._answers.fileno(), 1 << 20)
            if not chunk:
                return b""
            self._buffer += chunk
            if len(self._buffer) > 256 << 20:
                raise StudentError("error", "the answer was larger than 256 MB")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _died(self, what):
        code = self._proc.wait()
        self.close()
        if code < 0 and -code == signal.SIGXCPU:
            reason = "used more CPU time than allowed"
        elif code < 0:
            reason = (f"was killed by {_signal_name(code)} (often the memory limit of "
                      f"{self.memory_mb} MB)")
        else:
            reason = f"exited with status {code} (does the code call exit() or os._exit()?)"
        return StudentError("crashed", f"the process running your code {reason} while {what}")

    def _request(self, request, *, what):
        request["nonce"] = uuid.uuid4().hex
        try:
            self._proc.stdin.write((json.dumps(request) + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(what) from None
        line = self._readline(time.monotonic() + self.time_limit)
        if line is None:
            self.close()
            self._timeouts += 1
            error = StudentError("timeout", f"{what} took longer than {self.time_limit:g} s "
                                            "(an endless loop, or far too slow)")
            if self._timeouts >= MAX_TIMEOUTS:
                self.broken = StudentError(
                    "timeout", f"not run: {self._timeouts} earlier calls took longer than "
                               f"{self.time_limit:g} s each (an endless loop, or far too slow), "
                               "so the rest of this part was stopped")
            raise error
        if line == b"":
            raise self._died(what)
        try:
            reply = json.loads(line)
        except ValueError:
            self.close()
            raise StudentError("error", f"{what} gave an unreadable answer") from None
        if not isinstance(reply, dict) or reply.get("nonce") != request["nonce"]:
            self.close()
            raise StudentError("error", f"{what} gave an answer out of turn")
        return reply

    def _ensure(self):
        if self.broken is not None:     # a fresh exception: re-raising one would grow its traceback
            raise StudentError(self.broken.kind, self.broken.message)
        if self._proc is not None:
            return
        if self._restarts > MAX_RESTARTS:
            self.broken = StudentError("crashed", "your code stopped responding too many times")
            raise self.broken
        self._restarts += 1
        try:
            self._start()
        except StudentError as exc:
            self.broken = exc
            raise

    def call(self, name, *args, probe=None, **kwargs):
        """Call ``name`` in the student's process and return its plain-data answer."""
        self._ensure()
        what = f"running {probe + '.' if probe else ''}{name}"
        reply = self._request({"op": "call", "name": name, "probe": probe,
                               "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs)},
                              what=what)
        if not reply.get("ok"):
            raise StudentError(reply.get("kind", "error"), str(reply.get("error"))[:2000])
        try:
            return wire.decode(reply.get("value"))
        except wire.WireError as exc:
            raise StudentError("error", f"`{name}` returned {exc}") from None

    def probe(self, module, name, *args, **kwargs):
        """Run a check helper from ``selfcheck.probes.<module>`` beside the student's code."""
        return self.call(name, *args, probe=module, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)


class LocalStudent:
    """The same interface over a namespace in this process (the notebook's own check)."""

    def __init__(self, namespace):
        self._ns = namespace
        self.load_errors = []

    def call(self, name, *args, probe=None, **kwargs):
        if probe:
            import importlib
            probe_fn = getattr(importlib.import_module(f"selfcheck.probes.{probe}"), name)
            fn = lambda *a, **k: probe_fn(self._ns, *a, **k)   # noqa: E731 - the namespace stays here, off the wire
        else:
            fn = self._ns.get(name)
            if not callable(fn):
                raise StudentError("missing", f"your notebook defines no function `{name}`")
        try:
            value = fn(*wire.loads(wire.dumps(list(args))), **wire.loads(wire.dumps(kwargs)))
        except StudentError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StudentError("error", f"{type(exc).__name__}: {exc}") from None
        try:
            return wire.loads(wire.dumps(value))
        except wire.WireError as exc:
            raise StudentError("error", f"`{name}` returned {exc}") from None

    def probe(self, module, name, *args, **kwargs):
        return self.call(name, *args, probe=module, **kwargs)

    def close(self):
        pass

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)
