"""The student's side of a check: run the cells, then answer calls with plain data.

Started by :mod:`selfcheck.student` as a process of its own. Requests arrive
as JSON lines on stdin; answers go out on a private pipe, so whatever the
student's code prints cannot be taken for an answer. Only plain data leaves
(see :mod:`selfcheck.wire`); every comparison happens in the parent.
"""

import importlib
import io
import json
import linecache
import os
import sys
import traceback

from selfcheck import wire

PRINT_TAIL = 2000


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
    if type(exc) is NotImplementedError:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(filename)]
        cell = frames[-1].filename.strip("<>").removeprefix("cell ") if frames else "?"
        return f"not written yet (the cell '{cell}' still raises NotImplementedError)"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(filename)]
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


def _load(ns, cells, workdir):
    if workdir and workdir not in sys.path:
        sys.path.insert(0, workdir)
    errors = []
    for label, code in cells:
        name = f"<cell {label}>"
        if not label.endswith("(reference)"):    # a stand-in's source is not the student's to read
            linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        try:
            exec(compile(code, name, "exec"), ns)
        except SystemExit as exc:
            errors.append({"cell": label, "error": f"the cell called sys.exit({exc.code!r})"})
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
        return {"ok": False, "kind": "error", "error": _describe(exc)}
    try:
        return {"ok": True, "value": wire.encode(value)}
    except wire.WireError as exc:
        return {"ok": False, "kind": "error", "error": f"`{request['name']}` returned {exc}"}


def main(answer_fd):
    answers = os.fdopen(int(answer_fd), "w", buffering=1)
    requests = sys.stdin
    sys.stdin = io.StringIO("")
    sys.stdout = sys.stderr = _Tail()
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    for line in requests:
        request = json.loads(line)
        try:
            if request["op"] == "load":
                reply = {"ok": True, **_load(ns, request["cells"], request.get("workdir"))}
            else:
                reply = _call(ns, request)
        except BaseException as exc:  # noqa: BLE001 - keep answering whatever happens
            reply = {"ok": False, "kind": "error", "error": _describe(exc, "")}
        reply["nonce"] = request.get("nonce")
        reply["printed"] = sys.stdout.text[-500:] if isinstance(sys.stdout, _Tail) else ""
        answers.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
