"""Release: solutions/ -> assignments/ through nbgrader, plus the self-check kit.

``nbgrader generate_assignment`` strips the solutions and copies the public
tests; then each released folder gets a copy of the :mod:`selfcheck` runner,
a ``conftest.py`` that loads it and a manifest, so ``pytest`` works there with
nothing else installed but numpy and pytest. Points are written into the
solution notebooks from course.yaml first, so course.yaml stays the only
place they are set.
"""

import contextlib
import filecmp
import io
import json
import os
import re
import shutil
import tempfile

import nbformat
import pytest

from autograder import chapter, nbgrader_bridge
from selfcheck.program import source

SELFCHECK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "selfcheck")
CONFTEST = ('"""Lets `pytest` here run the public checks against the notebook in this folder."""\n\n'
            'pytest_plugins = ["selfcheck.plugin"]\n')
PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\n"
MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS")


def sync_points(course, assignment):
    """Write course.yaml's points into the solution notebook's grade cells."""
    path = course.source(assignment, assignment.notebook)
    nb = nbformat.read(path, as_version=4)
    wanted = {f"check_{p.id}": p.points for p in assignment.parts}
    wanted.update(assignment.written)
    changed = False
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if meta.get("grade") and gid in wanted and meta.get("points") != wanted[gid]:
            meta["points"] = wanted[gid]
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed


def count_tests(path):
    """How many checks pytest collects from a suite (parametrised cases included)."""
    class Count:
        n = 0

        def pytest_collection_modifyitems(self, items):
            Count.n = len(items)

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main([path, "--collect-only", "-q", "--noconftest", "-p", "no:cacheprovider",
                     "--import-mode=importlib", "-o", "addopts="], plugins=[Count()])
    return Count.n


def vendor(course, assignment, folder):
    """Add the self-check kit to a released folder."""
    kit = os.path.join(folder, "selfcheck")
    if os.path.exists(kit):
        shutil.rmtree(kit)
    shutil.copytree(SELFCHECK, kit, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    manifest = {
        "assignment": assignment.id, "notebook": assignment.notebook,
        "time_per_test": course.time_per_test, "memory_mb": course.memory_mb,
        "parts": [{"id": p.id, "title": p.title, "points": p.points, "cells": list(p.cells),
                   "tests": f"test_{p.id}.py",
                   "hidden_checks": count_tests(os.path.join(course.root, p.hidden))}
                  for p in assignment.parts],
    }
    with open(os.path.join(kit, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    with open(os.path.join(kit, "chapter_numbers.json"), "w") as fh:   # the public checks' targets
        json.dump(chapter.numbers(), fh)
        fh.write("\n")
    with open(os.path.join(folder, "conftest.py"), "w") as fh:
        fh.write(CONFTEST)
    with open(os.path.join(folder, "pytest.ini"), "w") as fh:
        fh.write(PYTEST_INI)


def release(course, into=None, out=None):
    """Generate every assignment's release (into ``assignments/`` unless told otherwise)."""
    for assignment in course.assignments:
        sync_points(course, assignment)
        target = into or os.path.join(course.root, "assignments")
        nbgrader_bridge.generate(course, assignment, release_dir=target, out=out)
        vendor(course, assignment, os.path.join(target, assignment.id))


def differences(course):
    """Files where the committed release differs from a fresh one (empty when in sync)."""
    with tempfile.TemporaryDirectory() as tmp:
        release(course, into=os.path.join(tmp, "release"), out=tmp)
        fresh, committed = os.path.join(tmp, "release"), os.path.join(course.root, "assignments")
        diffs = []

        def walk(cmp, prefix=""):
            for name in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files:
                if name != "__pycache__":
                    diffs.append(os.path.join(prefix, name))
            for name, sub in cmp.subdirs.items():
                if name != "__pycache__":
                    walk(sub, os.path.join(prefix, name))

        walk(filecmp.dircmp(fresh, committed, ignore=["__pycache__", ".ipynb_checkpoints"]))
        return sorted(diffs)


def _solution_lines(course, assignment):
    """Distinctive lines of the reference solution (what must never be released)."""
    nb = nbformat.read(course.source(assignment, assignment.notebook), as_version=4)
    lines = set()
    for cell in nb.cells:
        inside = False
        for line in source(cell).splitlines():
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) >= 25:
                lines.add(line.strip())
    return lines


def _hidden_lines(course):
    """Distinctive lines of the hidden suites that no public suite has too (those are released anyway)."""
    lines, public = set(), ""
    for assignment in course.assignments:
        for part in assignment.parts:
            with open(os.path.join(course.root, part.hidden)) as fh:
                lines |= {l.strip() for l in fh if len(l.strip()) >= 30 and not l.strip().startswith(("#", "import", "from", '"""'))}
            with open(os.path.join(course.root, part.public)) as fh:
                public += fh.read()
    return {line for line in lines if line not in public}


def leaks(course, folder=None):
    """(file, what leaked) for every released file holding solution or hidden-test text."""
    folder = folder or os.path.join(course.root, "assignments")
    hidden = _hidden_lines(course)
    found = []
    for assignment in course.assignments:
        solution = _solution_lines(course, assignment)
        for dirpath, _, files in os.walk(os.path.join(folder, assignment.id)):
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                rel = os.path.relpath(path, folder)
                if MARKERS.search(text):
                    found.append((rel, "a solution or hidden-test marker"))
                for line in solution | hidden:
                    if line in text:
                        kind = "solution code" if line in solution else "hidden test text"
                        found.append((rel, f"{kind}: {line[:60]}"))
    return found
