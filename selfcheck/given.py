"""The notebook's *given* cells, run on the grader's side: they call the student's functions
remotely (:class:`selfcheck.student.Student`), so no student cell can replace them, and each answer
they compute on must be chapter-sized, since that computing happens in the grader's process."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from selfcheck.program import defined_names

GIVEN_MAX_NUMBERS = 100_000   # in one answer the given code computes on


def size(value: Any) -> int:
    """How many numbers a plain-data value holds."""
    if hasattr(value, "size") and hasattr(value, "shape"):
        return int(value.size)
    if isinstance(value, (list, tuple)):
        return sum(size(v) for v in value)
    if isinstance(value, dict):
        return sum(size(v) for v in value.values())
    return 1


def namespace(student: Any, cells: list[list], given_cells: list[tuple[str, str]], workdir: str,
              error: Callable[[str, str], Exception]) -> dict[str, Any]:
    """The given cells run in a namespace whose student functions (the other parts', and this
    notebook's solution cells') are remote calls into ``student``'s process; an answer too large
    raises ``error(kind, message)``."""
    given = {label for label, _ in given_cells}
    solution = {n for c in cells if len(c) == 2 and c[0] not in given and c[1] for n in defined_names(c[1])}
    ns: dict[str, Any] = {"__name__": "given"}
    for name in {n for c in cells if len(c) > 2 for n in c[2]} | solution:
        ns[name] = _remote(student, name, error)
    sys.path.insert(0, workdir)
    try:
        for label, code in given_cells:
            exec(compile(code, f"<given {label}>", "exec"), ns)
    finally:
        sys.path.remove(workdir)
    return ns


def _remote(student: Any, name: str, error: Callable[[str, str], Exception]) -> Any:
    """The student's ``name`` as the given code calls it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        value = student.call(name, *args, **kwargs)
        if size(value) > GIVEN_MAX_NUMBERS:
            raise error("error", f"`{name}` returned {size(value):,} numbers where the given "
                                   f"code expects a few (at most {GIVEN_MAX_NUMBERS:,})")
        return value
    call.__name__ = name
    return call
