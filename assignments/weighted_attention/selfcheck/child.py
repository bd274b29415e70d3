"""The student's side of a check: run the cells, then answer calls with plain data.

Started by :mod:`selfcheck.student` as a process of its own. It says "ready"
before any student code runs (so a process that never gets that far is the
grader's failure, not the student's), then reads requests as JSON lines on
stdin; answers go out on a private pipe, so whatever the student's code prints
cannot be taken for an answer. Only plain data leaves (see
:mod:`selfcheck.wire`); every comparison happens in the parent.

A stand-in (another part's function, when one part is graded) is a function
here whose calls travel, as plain data, to a process of the grader's that runs
the reference solution (started on the first call), over a pair of pipes the
parent handed over: the code behind it never enters this process. That
process runs this same module, serving only the names it stands in for.
"""

import _signal  # type: ignore[import-not-found]  # signal's own wrapper makes enums: 60 us a call
import _thread
import importlib
import io
import json
import linecache
import os
import resource
import signal
import sys
import traceback
from typing import IO

import numpy  # noqa: F401 - loaded before "ready": a numpy that does not load is the grader's failure

from selfcheck import causes, packing, wire
from selfcheck.launch import MAX_PROCESSES_VARIABLE

PRINT_TAIL = 2000
STOPPED = "stopped answering"     # a stand-in's channel is gone: no later call of the part is answered


class StandInError(Exception):
    """A stand-in for another part's function could not answer."""


class _Tail(io.TextIOBase):
    """A stdout that keeps only the end of what was printed (bounded memory)."""

    def __init__(self):
        self.text = ""

    def writable(self):
        return True

    def write(self, s):
        self.text = (self.text + str(s))[-PRINT_TAIL:]
        return len(s)


def _describe(exc, filename="<cell"):
    """The exception and the student's own frames, nothing of ours."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(filename)]
    if type(exc) is NotImplementedError:
        cell = frames[-1].filename.strip("<>").removeprefix("cell ") if frames else "?"
        return f"not written yet (the cell '{cell}' still raises NotImplementedError)"
    where = ""
    if frames:
        f = frames[-1]
        where = f" (in {f.filename.strip('<>')}, line {f.lineno}: {(f.line or '').strip()[:120]})"
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError):
        text += " (the code needed more memory than the grader allows"
        text += f": {_memory_limit()})" if _memory_limit() else ")"
    return text[:600] + where


def _memory_limit():
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return ""
    return "" if limit == resource.RLIM_INFINITY else f"{limit >> 20} MB"


class _Channel:
    """The streams to the parent (requests in, answers out) and to the stand-ins' process."""

    def __init__(self, requests, answers):
        self.requests, self.answers = requests, answers
        self.stand_ins: tuple[IO[bytes], IO[bytes]] | None = None   # (to, from): the stand-ins' pipes
        self.started = False
        self.pid = os.getpid()
        self.turn = _thread.allocate_lock()   # one call at a time on the pipes, whatever the threads
        self.holder: int | None = None        # the thread making the call under way
        self.broken = ""                      # why no call can be answered any more

    def send(self, message):
        self.answers.write(json.dumps(message) + "\n")
        self.answers.flush()

    def receive(self):
        line = self.requests.readline()
        if not line:
            raise SystemExit(0)            # the parent is gone
        return json.loads(line)

    def stand_in(self, name, cell):
        def call(*args, **kwargs):
            try:
                message = packing.pack_call(name, args, kwargs)
            except wire.WireError as exc:
                raise TypeError(f"`{name}` is another part's function, answered by the grader: "
                                f"it takes numbers, arrays, strings, lists, tuples and dicts, not {exc}") from None
            if len(message) > wire.MAX_BYTES:
                raise StandInError(f"{_answered(name)} takes at most "
                                   f"{wire.MAX_BYTES >> 20} MB of arguments a call; these came to "
                                   f"{len(message) / 2 ** 20:.0f} MB")
            if os.getpid() != self.pid:
                raise StandInError(f"{_answered(name)} can be called "
                                   "only from the process the notebook's code runs in, not from one it forked")
            if self.holder == _thread.get_ident():
                raise StandInError(f"{_answered(name)} was called while "
                                   "a call to it was under way in the same thread (from __del__ or a signal handler?)")
            held = _signal.pthread_sigmask(_signal.SIG_BLOCK, _HELD)   # their handlers run after it
            try:
                with self.turn:
                    reply = self._answer(name, message)
            finally:
                _signal.pthread_sigmask(_signal.SIG_SETMASK, held)
            ok, value = reply
            if not ok:
                raise StandInError(f"{_answered(name)}: {value}")
            return value
        call.__name__ = call.__qualname__ = name
        call.__doc__ = f"Stands in for `{name}` of cell '{cell}': the grader's process answers each call."
        return call

    def _answer(self, name, message):
        """The answer to one call, its turn on the channel taken."""
        if self.broken:
            raise StandInError(self.broken)
        self.holder = _thread.get_ident()
        try:
            reply = self._exchange(name, message)
        except BaseException:
            # cut short between its question and its answer: the next call would read this one's
            self.broken = (f"{_answered(name)} {STOPPED}: "
                           "an earlier call to it was cut short by an exception raised while it waited")
            raise
        finally:
            self.holder = None
        if reply is None:
            self.broken = (f"{_answered(name)} {STOPPED}: "
                           "it ran out of memory or time on the arguments it was given")
            raise StandInError(self.broken)
        return reply

    def _exchange(self, name, message):
        """One call's question and answer on the stand-ins' pipes (the stand-ins' process started on
        the first): the answer, or None when the channel failed."""
        if not self.started:          # the grader starts the stand-ins' process on demand
            self.send({"op": "stand-ins"})
            reply = self.receive()
            if not reply.get("ok"):
                return False, f"not available: {reply.get('error')}"
            self.started = True
        assert self.stand_ins is not None, "stand-ins are loaded only with their pipes"
        to, back = self.stand_ins
        try:
            to.write(packing.FRAME.pack(len(message)) + message)
            to.flush()
            return _read_frame(back)
        except (OSError, wire.WireError):
            return None


def _answered(name):
    return f"`{name}` (another part's function, answered by the grader)"


# the signals a student's code may handle in Python (an alarm, say), held back while a call waits for
# its answer so that no handler cuts it short; never the CPU limit's, nor a fault's
_HELD = frozenset(int(n) for n in signal.valid_signals() - {
    signal.SIGKILL, signal.SIGSTOP, signal.SIGXCPU, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE,
    signal.SIGILL, signal.SIGTRAP, signal.SIGSYS, signal.SIGABRT})


def _read_frame(stream):
    """One message of the stand-ins' channel, unpacked (a WireError when malformed); None at the end
    of the stream or past the largest message."""
    head = stream.read(packing.FRAME.size)
    if len(head) < packing.FRAME.size:
        return None
    size = packing.FRAME.unpack(head)[0]
    if size > wire.MAX_BYTES:              # past what the channel carries: it ends here
        return None
    body = stream.read(size)
    if len(body) < size:
        return None
    return packing.unpack(body)


def _serve(ns, names, fds):
    """The stand-ins' process: answer calls to ``names`` from the pipes, plain data only (packed
    by :func:`selfcheck.packing.pack`: these calls can number tens of thousands)."""
    requests, replies = os.fdopen(fds[0], "rb"), os.fdopen(fds[1], "wb")
    while True:
        try:
            request = _read_frame(requests)
            if request is None:
                return
            name, args, kwargs = request
            if name not in names:
                raise NameError(f"no stand-in named {str(name)[:80]!r}")
            reply = packing.pack_answer(ns[name](*args, **kwargs))
            if len(reply) > wire.MAX_BYTES:     # the student's side would not read it
                raise ValueError(f"its answer came to {len(reply) / 2 ** 20:.0f} MB, more than the "
                                 f"{wire.MAX_BYTES >> 20} MB a call's answer may be")
        except BaseException as exc:  # noqa: BLE001 - the type and message only, never a frame
            reply = packing.pack((False, f"{type(exc).__name__}: {str(exc)[:300]}"))
        replies.write(packing.FRAME.pack(len(reply)) + reply)
        replies.flush()


def _load(ns, cells, workdir, channel, stand_in_fds=None):
    if workdir and workdir not in sys.path:
        sys.path.insert(0, workdir)
    if stand_in_fds:
        channel.stand_ins = (os.fdopen(stand_in_fds[0], "wb"), os.fdopen(stand_in_fds[1], "rb"))
    errors = []
    for cell in cells:
        label, code = cell[0], cell[1]
        if code is None:                      # a stand-in: names the grader answers
            for name in cell[2]:
                ns[name] = channel.stand_in(name, label)
            continue
        name = f"<cell {label}>"
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        try:
            exec(compile(code, name, "exec"), ns)
        except SystemExit as exc:
            errors.append({"cell": label, "error": f"the cell called sys.exit({exc.code!r})"})
        except SyntaxError as exc:
            text = (exc.text or "").strip()[:120]
            errors.append({"cell": label, "line": exc.lineno,
                           "error": f"{type(exc).__name__}: {exc.msg} (in cell {label}, line {exc.lineno}"
                                    + (f": {text})" if text else ")")})
        except BaseException as exc:  # noqa: BLE001 - a student's cell may raise anything
            errors.append({"cell": label, "error": _describe(exc)})
    return {"errors": errors}


def _call(ns, request):
    if request.get("probe"):
        module = importlib.import_module(f"selfcheck.probes.{request['probe']}")
        fn = getattr(module, request["name"])
        args = [ns] + list(wire.decode(request.get("args", [])))
    else:
        fn = ns.get(request["name"])
        if not callable(fn):
            return {"ok": False, "kind": "missing",
                    "error": f"your notebook defines no function `{request['name']}`"}
        args = wire.decode(request.get("args", []))
    kwargs = wire.decode(request.get("kwargs", {"__dict__": {}}))
    try:
        value = fn(*args, **kwargs)
    except SystemExit as exc:
        return {"ok": False, "kind": "error", "error": f"the code called sys.exit({exc.code!r})"}
    except BaseException as exc:  # noqa: BLE001
        if type(exc) is NameError and str(exc).startswith("your notebook defines no function"):
            return {"ok": False, "kind": "missing", "error": str(exc)}     # said by a probe
        return {"ok": False, "kind": "error", "error": _describe(exc), "cause": causes.of(exc)}
    try:
        return {"ok": True, "value": wire.encode(value)}
    except wire.WireError as exc:
        return {"ok": False, "kind": "error", "error": f"`{request['name']}` returned {exc}"}


def main(answer_fd: str) -> None:
    processes = os.environ.pop(MAX_PROCESSES_VARIABLE, "")
    if processes:                             # the sandbox's own user's processes, whoever grades
        resource.setrlimit(resource.RLIMIT_NPROC, (int(processes), int(processes)))
    answers = os.fdopen(int(answer_fd), "w", buffering=1)
    channel = _Channel(sys.stdin, answers)
    channel.send({"op": "ready"})
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)                       # from here on, nothing reaches the parent's stderr
    sys.stdin = io.StringIO("")
    sys.stdout = sys.stderr = _Tail()
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        request = channel.receive()
        try:
            if request["op"] == "load":
                reply = {"ok": True, **_load(ns, request["cells"], request.get("workdir"), channel,
                                             request.get("stand_in_fds"))}
            else:
                reply = _call(ns, request)
        except BaseException as exc:  # noqa: BLE001 - keep answering whatever happens
            reply = {"ok": False, "kind": "error", "error": _describe(exc, "")}
        reply["nonce"] = request.get("nonce")
        reply["printed"] = sys.stdout.text[-500:] if isinstance(sys.stdout, _Tail) else ""
        channel.send(reply)
        if request.get("serve"):          # the stand-ins' process: from here on, only them
            _serve(ns, set(request["serve"]["names"]), request["serve"]["fds"])
            return


if __name__ == "__main__":
    main(sys.argv[1])
