"""One sandboxed Python process running :mod:`selfcheck.child`: started, read line by line, and
killed with everything it started.

It knows nothing of calls, limits or budgets (:mod:`selfcheck.student` does, and decides when
to kill it): it starts the process in the jail (:class:`selfcheck.launch.Jail`), says whether it
came up, hands over the lines it writes (at most ``wire.MAX_BYTES`` in all) until a clock runs
out, says how it died, and kills it, every process it started included, even those that left its
process group.
"""

import contextlib
import json
import os
import select
import signal
import subprocess
import uuid
from collections.abc import Callable
from typing import IO, Any, cast

from selfcheck import wire
from selfcheck.clock import Clock, tree_meter
from selfcheck.errors import InfrastructureError, StudentError
from selfcheck.launch import Jail, Launch

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LAUNCH = ("import sys; sys.path.insert(0, sys.argv[2]); "
           "from selfcheck.child import main; main(sys.argv[1])")
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TINYSHAKESPEARE")
_TOKEN = "SELFCHECK_STUDENT_TOKEN"
STARTUP_SECONDS = 60    # for the process to say "ready" (a loaded machine, never the student's time)
MESSAGE_CHARS = 2000    # of any message from the student's process


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


# how a process that met the memory limit dies (killed outright, or at an allocation that failed)
_MEMORY_SIGNALS = {signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS}


def _signal_name(code):
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Process:
    """The process itself, from its start to its kill."""

    def __init__(self, *, jail: Jail, workdir: str, memory_mb: int, cpu_seconds: int, label: str,
                 pass_fds: list[int]) -> None:
        """Start it (without waiting for it): ``pass_fds`` are inherited (the caller closes its
        copies); ``cpu_seconds`` is the kernel's limit on all the CPU time it may use."""
        self.label, self.memory_mb = label, memory_mb
        self._token = uuid.uuid4().hex
        self.workdir = workdir
        try:
            self._launch: Launch | None = jail.launch(workdir=workdir, env=self._env(), code_root=_HERE,
                                       memory_mb=memory_mb, cpu_seconds=cpu_seconds)
        except Exception as exc:  # noqa: BLE001 - no uid, no cgroup, no sandbox: ours to fix
            raise InfrastructureError(f"the sandbox could not be prepared: {exc}") from None
        launch = self._launch
        read_fd, write_fd = os.pipe()
        cmd = launch.prefix + [launch.python, "-I", "-c", _LAUNCH, str(write_fd), launch.code_root]
        self._killed = False
        try:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(write_fd, *pass_fds), cwd=launch.workdir, env=launch.env, preexec_fn=launch.preexec)
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(read_fd)
            self._killed = True
            launch.release()
            raise InfrastructureError(f"the process for {label} could not be started: {exc}") from None
        finally:
            os.close(write_fd)
        self._stdin, self._stderr = cast(IO[bytes], self._proc.stdin), cast(IO[bytes], self._proc.stderr)
        self._answers = os.fdopen(read_fd, "rb")
        self._chunks: list[bytes] = []
        self._size = 0

    @property
    def scratch(self) -> str:
        """The folder the code may write in, as the process sees it."""
        return self._launch.scratch if self._launch else ""

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _env(self):
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(HOME=self.workdir, PYTHONHASHSEED="0", MPLBACKEND="Agg",
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONDONTWRITEBYTECODE="1", TMPDIR=self.workdir)
        env[_TOKEN] = self._token
        return env

    def wait_ready(self) -> str | None:
        """Wait for the process to say "ready": None once it has, else why it did not."""
        line = self.readline(Clock(None, None, STARTUP_SECONDS))
        if not line or not line.startswith(b'{"op": "ready"'):
            return self._startup_failure()
        return None

    def meter(self) -> Callable[[], float] | None:
        """The process's CPU seconds so far, with everything it started: the sandbox's own count
        where it has one (its cgroup), else read from /proc; None where neither exists."""
        pid = self._proc.pid
        counted = self._launch.cpu if self._launch else None
        return counted or (tree_meter(pid) if os.path.exists(f"/proc/{pid}/stat") else None)

    def _startup_failure(self):
        """What the sandbox said on stderr before it died (bounded), or why we gave up."""
        if self._proc.poll() is None:
            return f"no answer within {STARTUP_SECONDS} s"
        try:
            os.set_blocking(self._stderr.fileno(), False)
            said = (self._stderr.read(4000) or b"").decode("utf-8", "replace").strip()
        except (OSError, TypeError):
            said = ""
        return wire.clean_text(said.splitlines()[-1] if said else f"it exited with {self._proc.returncode}", 300)

    def readline(self, clock: Clock) -> bytes | None:
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
                raise StudentError("error", f"the answer was larger than {wire.MAX_BYTES >> 20} MB")

    def send(self, message: Any) -> None:
        """One request, as a line of JSON (OSError once the process is gone)."""
        self._stdin.write((json.dumps(message) + "\n").encode())
        self._stdin.flush()

    def died(self, what: str) -> StudentError:
        """How the process ended (it has, or is ending) while ``what``, as the student reads it."""
        code = self._proc.wait()
        sandboxed = bool(self._launch and self._launch.prefix)
        if sandboxed and code > 128:          # bubblewrap exits with 128 + the signal that killed it
            code = 128 - code
        if code < 0 and -code == signal.SIGXCPU:
            reason = "used more CPU time than allowed"
        elif code < 0 and -code in _MEMORY_SIGNALS:
            reason = (f"was killed by {_signal_name(code)} (often the memory limit of "
                      f"{self.memory_mb} MB)")
        elif code < 0:
            reason = (f"was killed by {_signal_name(code)} (a signal the code sent itself or set up, "
                      "an alarm or a timer, with no handler to catch it?)")
        else:
            reason = f"exited with status {code} (does the code call exit() or os._exit()?)"
        return StudentError("crashed", f"the process running your code {reason} while {what}")

    def close(self) -> None:
        """Kill the process and everything it started; give the sandbox back."""
        if not self._killed:
            self._killed = True
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait()
            _kill_tagged(self._token)
            for stream in (self._stdin, self._stderr, self._answers):
                with contextlib.suppress(OSError):
                    stream.close()
        if self._launch is not None:
            self._launch.release()
            self._launch = None

    @property
    def running(self) -> bool:
        """Started and not yet killed."""
        return not self._killed
