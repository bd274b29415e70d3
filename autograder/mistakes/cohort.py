"""Submissions made to order: the reference, the untouched stub, and known mistakes.

The mistakes are the catalogue in ``parts/<part>/mistakes.py`` (each replaces
whole solution cells of the reference), so the demo cohort, the mutation
check and the catalogue of hostile notebooks all build notebooks one way.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
from typing import TYPE_CHECKING

from selfcheck.program import grade_id, is_solution, read_notebook, source

if TYPE_CHECKING:
    from autograder.course.config import Assignment, Course


def catalogue(course: Course, part_id: str, held_out: bool = False) -> tuple[dict, dict]:
    """The part's ``MISTAKES`` and ``CORRECT`` dictionaries (empty when it has none); with ``held_out``,
    those of ``parts/<part>/held_out.py``, the mistakes kept out of writing the diagnoses."""
    path = os.path.join(course.root, "parts", part_id, "held_out.py" if held_out else "mistakes.py")
    if not os.path.exists(path):
        return {}, {}
    spec = importlib.util.spec_from_file_location(f"mutants_{'held_out_' * held_out}{part_id}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MISTAKES, getattr(module, "CORRECT", {})


def _strip_markers(text):
    return "\n".join(line for line in text.splitlines()
                     if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line)


def _set_source(cell, text):
    cell["source"] = text.strip("\n")


def solved(course: Course, assignment: Assignment, replace: dict[str, str] | None = None) -> dict:
    """The released notebook filled in with the reference, with ``replace`` (cell -> code) applied."""
    release = read_notebook(course.release(assignment, assignment.notebook))
    reference = {grade_id(c): c for c in read_notebook(course.source(assignment, assignment.notebook))["cells"]
                 if grade_id(c)}
    nb = copy.deepcopy(release)
    for cell in nb["cells"]:
        gid = grade_id(cell)
        if is_solution(cell) and gid in reference:
            _set_source(cell, _strip_markers(source(reference[gid])))
        if replace and gid in replace:
            _set_source(cell, replace[gid])
    return nb


def stub(course: Course, assignment: Assignment) -> dict:
    return read_notebook(course.release(assignment, assignment.notebook))


def own(nb: dict, student: str) -> dict:
    """The notebook with a comment of ``student``'s in every solution cell: real students' code
    differs, and grading reuses a part's result for a program it graded before in the same process
    (autograder/grade/reuse.py), which a cohort of copies would measure instead of grading."""
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        if is_solution(cell):
            _set_source(cell, source(cell) + f"\n# {student}\n")
    return nb


def write(nb: dict, folder: str, student: str, assignment: Assignment, name: str | None = None) -> str:
    """Save a notebook as ``folder/<student>/<assignment>/<notebook>``."""
    path = os.path.join(folder, student, assignment.id, name or assignment.notebook)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(nb, fh, indent=1)
        fh.write("\n")
    return path


def demo_cohort(course: Course, folder: str) -> dict[str, str]:
    """The demo's students: who they are and what each one did."""
    students: dict[str, str] = {}
    for assignment in course.assignments:
        write(solved(course, assignment), folder, "reference", assignment)
        write(stub(course, assignment), folder, "untouched-stub", assignment)
        students["reference"] = "the reference solution: full marks"
        students["untouched-stub"] = "handed in the released notebook unchanged: zero"
        for part in assignment.parts:
            mistakes, _ = catalogue(course, part.id)
            for name, entry in mistakes.items():
                if entry.get("demo"):
                    write(solved(course, assignment, entry["cells"]), folder, name, assignment)
                    students[name] = f"one mistake in {part.id}"
    return students
