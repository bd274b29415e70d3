"""The self-check kit: what a released assignment folder needs so that ``pytest`` runs there.

Each released folder gets its parts' public checks (``parts/<part>/public.py``, as
``test_<part>.py``), the :mod:`selfcheck` modules they use (:func:`kit_modules`), a
manifest of its parts and limits, the chapter's numbers when its checks use them, and a
``conftest.py`` that loads the runner, so ``pytest`` works there with nothing else installed
but numpy and pytest. ``course release`` adds it to the release it builds
(:mod:`autograder.release.assignments`), and nbgrader's own generate_assignment through the
AddSelfCheckKit preprocessor, so both releases are the same.
"""

import ast
import contextlib
import dataclasses
import io
import json
import os
import shutil

import pytest

import selfcheck
import selfcheck.manifest
from autograder.course import chapter
from autograder.course.config import Assignment, Course
from autograder.grade.suites import PYTEST_LEAN, forget
from selfcheck.program import read_notebook, source

SELFCHECK = os.path.dirname(os.path.abspath(selfcheck.__file__))
RUNNER = ("__init__", "plugin", "child")     # `pytest`, the check cells, the student's process
CONFTEST = ('"""Lets `pytest` here run the public checks against the notebook in this folder."""\n\n'
            'pytest_plugins = ["selfcheck.plugin"]\n')
# pytest in the folder runs as grading runs the suites (PYTEST_LEAN): the kit's plugin alone, none found
# among the installed packages (loading them took longer than the checks), no assertion rewriting (the
# checks raise CheckFailed; bytecode is not cached in a read-only folder, so the kit would be rewritten
# at every run), no garbage collection at the end. --disable-plugin-autoload needs pytest 8.4:
# minversion says so to an older one, where the option would be an unknown argument.
PYTEST_INI = ("[pytest]\n"
              "minversion = 8.4\n"
              f"addopts = {' '.join(PYTEST_LEAN)}\n")


def count_tests(path: str) -> int:
    """How many checks pytest collects from a suite (parametrised cases included)."""
    class Count:
        n = 0

        def pytest_collection_modifyitems(self, items):
            Count.n = len(items)

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main([path, "--collect-only", "-q", "--noconftest", "-p", "no:cacheprovider",
                     "--import-mode=importlib", "-o", "addopts="], plugins=[Count()])
    forget([path])              # a grading later in this process imports it afresh
    return Count.n


def _selfcheck_uses(code: str) -> set[str]:
    """The selfcheck modules a piece of code names: what it imports from the package, and the probes
    it asks for (``student.probe("<name>", ...)`` runs ``selfcheck.probes.<name>``)."""
    used = set()
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            used |= {a.name[len("selfcheck."):] for a in node.names if a.name.startswith("selfcheck.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "selfcheck":
                used |= {a.name for a in node.names}
            elif node.module.startswith("selfcheck."):
                used.add(node.module[len("selfcheck."):])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "probe"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            used.add(f"probes.{node.args[0].value}")
    return used


def kit_modules(course: Course, assignment: Assignment) -> list[str]:
    """The selfcheck files (paths inside the package) an assignment's folder needs.

    The runner, what the assignment's public tests and notebook use, and in turn
    what those modules use; names that are no module of the package (a function
    imported from it) drop out. A probe brings its package's ``__init__.py``.
    """
    def path(name):
        for candidate in (name.replace(".", os.sep) + ".py", os.path.join(name.replace(".", os.sep), "__init__.py")):
            if os.path.isfile(os.path.join(SELFCHECK, candidate)):
                return candidate
        return None

    wanted = set(RUNNER)
    for part in assignment.parts:
        with open(os.path.join(course.root, part.public)) as fh:
            wanted |= _selfcheck_uses(fh.read())
    nb = read_notebook(course.source(assignment, assignment.notebook))
    wanted |= {name for cell in nb["cells"] if cell.get("cell_type") == "code"
               for name in _selfcheck_uses(source(cell))}
    files, todo = set(), list(wanted)
    while todo:
        name = todo.pop()
        found = path(name)
        if found is None or found in files:
            continue
        files.add(found)
        if "." in name:
            todo.append(name.rsplit(".", 1)[0])
        with open(os.path.join(SELFCHECK, found)) as fh:
            todo += _selfcheck_uses(fh.read())
    return sorted(files)


def vendor(course: Course, assignment: Assignment, folder: str) -> None:
    """Add the self-check kit to a released folder: the public checks, the modules they need, its
    manifest and numbers."""
    os.makedirs(folder, exist_ok=True)
    for part in assignment.parts:
        shutil.copy(os.path.join(course.root, part.public), os.path.join(folder, part.public_file))
    kit = os.path.join(folder, "selfcheck")
    if os.path.exists(kit):
        shutil.rmtree(kit)
    modules = kit_modules(course, assignment)
    for name in modules:
        os.makedirs(os.path.dirname(os.path.join(kit, name)), exist_ok=True)
        shutil.copy(os.path.join(SELFCHECK, name), os.path.join(kit, name))
    manifest = {
        "assignment": assignment.id, "notebook": assignment.notebook,
        "limits": dataclasses.asdict(course.limits),
        "parts": [{"id": p.id, "title": p.title, "points": p.points, "cells": list(p.cells),
                   "check_cell": p.check_cell, "tests": p.public_file,
                   "hidden_checks": count_tests(os.path.join(course.root, p.hidden))}
                  for p in assignment.parts],
    }
    with open(os.path.join(kit, selfcheck.manifest.NAME), "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    if "chapter.py" in modules:          # the public checks' targets
        with open(os.path.join(kit, "chapter_numbers.json"), "w") as fh:
            json.dump(chapter.numbers(), fh)
            fh.write("\n")
    with open(os.path.join(folder, "conftest.py"), "w") as fh:
        fh.write(CONFTEST)
    with open(os.path.join(folder, "pytest.ini"), "w") as fh:
        fh.write(PYTEST_INI)
