"""nbgrader and Jupyter start in half the time: jsonschema's IRI grammars are built when first used.

jsonschema, which nbformat and so nbgrader and every Jupyter server load, imports
``rfc3987_syntax`` (installed with Jupyter) for its IRI format check the moment it loads, and that
module builds about forty Lark grammars as it loads: more than half of the seconds each
``nbgrader`` command and each lab or formgrader takes to start, for a check none of them makes.
Importing this module, before jsonschema is loaded, puts in that module's place one that loads
the real module the first time anything of it is used, so answers are the same.

The course's commands import it with ``autograder.nbgrader``; ``make`` also writes a ``.pth``
file into the environment (:func:`install`) so that plain ``nbgrader`` and ``jupyter`` commands,
which never import the course first, start as fast. That file holds :func:`defer`'s own source, not
an import of this module: the course folder may belong to the grading account, and root's
interpreters must never run a file that account can change.
"""

import importlib
import importlib.util
import inspect
import os
import sys
import sysconfig
import types
from typing import Any

NAME = "rfc3987_syntax"
PTH = "attention_course_lazy_iri.pth"


def defer() -> None:
    """Stand a loader in for ``rfc3987_syntax`` until something of it is used."""
    if "jsonschema" in sys.modules or NAME in sys.modules or importlib.util.find_spec(NAME) is None:
        return
    stub = types.ModuleType(NAME)
    real: list[types.ModuleType] = []

    def load(attribute: str) -> Any:
        if attribute.startswith("__"):      # the import system's questions (is it a package?)
            raise AttributeError(attribute)
        if not real:
            if sys.modules.get(NAME) is stub:
                del sys.modules[NAME]
            real.append(importlib.import_module(NAME))
        return getattr(real[0], attribute)

    def is_valid_syntax(*args: Any, **kwargs: Any) -> Any:       # what jsonschema takes from it
        return load("is_valid_syntax")(*args, **kwargs)
    stub.__getattr__ = load          # type: ignore[method-assign]
    stub.is_valid_syntax = is_valid_syntax      # type: ignore[attr-defined]
    sys.modules[NAME] = stub


def pth_line() -> str:
    """The one line Python's site runs at every start: :func:`defer`, self-contained."""
    code = (f"import importlib, importlib.util, sys, types\nfrom typing import Any\nNAME = {NAME!r}\n"
            + inspect.getsource(defer) + "try:\n    defer()\nexcept Exception:\n    pass\n")
    return f"import sys; exec({code!r}, {{}})\n"


def install() -> str:
    """Write the ``.pth`` file into this interpreter's site-packages; returns its path."""
    path = os.path.join(sysconfig.get_paths()["purelib"], PTH)
    with open(path, "w") as fh:
        fh.write(pth_line())
    return path


defer()
