"""The files grades leave the course in: parts.csv, totals.csv, Gradescope, Canvas, Moodle.

A module here that declares an ``EXPORT`` is an export: :func:`found` finds it, so a new one
(a Blackboard file, say) is one module and its test (docs/how-to/new-export.md).
"""

import importlib
import pkgutil

from autograder.export.outputs import Export


def found() -> tuple[Export, ...]:
    """Every ``EXPORT`` declared by a module of this package."""
    exports = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(module, "EXPORT", None), Export):
            exports.append(module.EXPORT)
    return tuple(exports)
