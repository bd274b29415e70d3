"""The student's handle over a namespace in this process: the notebook's own check cells call the
functions the kernel defined, with the same interface, errors and slow-call notes as
:class:`selfcheck.student.Student`, and answers that cross as plain data all the same."""

import math
import time
from typing import Any

from selfcheck import causes, wire
from selfcheck.budget import Budget
from selfcheck.errors import StudentError


class LocalStudent:
    """The same interface over a namespace in this process (the notebook's own check)."""

    def __init__(self, namespace: dict, per_call: float | None = None) -> None:
        self._ns = namespace
        self.load_errors: list = []
        self._budget = Budget(per_call or math.inf, None)      # no limit here: only what to warn of
        self.slow_calls = self._budget.slow
        self.unwritten: set[str] = set()     # the functions a call found still raising NotImplementedError
        self.called: set[str] = set()        # the names called since the caller emptied it: what one check used

    def call(self, name: str, *args: Any, probe: str | None = None, **kwargs: Any) -> Any:
        self.called.add(f"{probe}.{name}" if probe else name)
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
            if type(exc) is NotImplementedError and exc.__traceback__ is not None:
                last = exc.__traceback__
                while last.tb_next is not None:
                    last = last.tb_next
                self.unwritten.add(last.tb_frame.f_code.co_name)
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
