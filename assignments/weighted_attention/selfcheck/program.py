"""Which of a notebook's cells run when it is checked, and in what form.

A check runs a notebook's definitions, not its demonstrations: cells whose
grade id starts with ``show_`` (plots, printed tables) or ``run_`` (the long
experiments) never run, and test cells are replaced by the suites. Given the
released notebook, locked cells come from it rather than from the submission,
so an edited given cell changes nothing. Given the reference notebook, the
solution cells of the *other* parts come from it, so one mistake costs points
in one part only. Cells a student added contribute their imports and
definitions only.
"""

import ast
import json

SKIP_PREFIXES = ("show_", "run_")


class NotebookError(Exception):
    """The file is not a notebook this course can read."""


def read_notebook(path):
    """Load a notebook file, with a one-line reason when it is malformed."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise NotebookError(f"no notebook at {path}") from None
    if not raw.strip():
        raise NotebookError("the notebook file is empty")
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"the notebook is not valid JSON ({exc})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("the file is JSON but not a notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        raise NotebookError(f"the notebook has nbformat {nb.get('nbformat')!r}; "
                            "version 4 is expected (save it from a current Jupyter)")
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or "cell_type" not in cell:
            raise NotebookError("the notebook has a malformed cell")
    return nb


def source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def meta(cell):
    data = cell.get("metadata", {}).get("nbgrader")
    return data if isinstance(data, dict) else {}


def grade_id(cell):
    return meta(cell).get("grade_id")


def is_test(cell):
    m = meta(cell)
    return bool(m.get("grade")) and not m.get("solution")


def is_solution(cell):
    return bool(meta(cell).get("solution"))


def _runs(cell):
    gid = grade_id(cell) or ""
    return cell.get("cell_type") == "code" and not is_test(cell) and not gid.startswith(SKIP_PREFIXES)


def definitions_only(code):
    """Keep a student-added cell's imports, functions and classes, nothing else."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    tree.body = [node for node in tree.body if isinstance(node, keep)]
    return ast.unparse(tree)


def solution_ids(nb):
    return [grade_id(c) for c in nb["cells"] if c.get("cell_type") == "code" and is_solution(c)]


def program(student, release=None, reference=None, own=None):
    """The cells to execute, as ``(label, source)`` pairs, and the ids missing.

    ``student`` is the submitted notebook; ``release`` the released one (the
    backbone: its order and its locked cells win); ``reference`` the solution
    notebook, whose solution cells stand in for every part not in ``own``.
    Returns ``(cells, missing)`` where ``missing`` lists solution cells of
    ``own`` that the submission no longer has.
    """
    if release is None:
        cells = []
        for cell in student["cells"]:
            if not _runs(cell):
                continue
            gid = grade_id(cell)
            code = source(cell) if gid else definitions_only(source(cell))
            cells.append((gid or "a cell you added", code))
        return cells, []

    known = {grade_id(c) for c in release["cells"] if grade_id(c)}
    by_id = {}
    added = {None: []}          # student-added cells, after the known cell they follow
    last = None
    for cell in student["cells"]:
        gid = grade_id(cell)
        if gid in known:
            by_id.setdefault(gid, cell)
            last = gid
        elif cell.get("cell_type") == "code" and not is_test(cell):
            added.setdefault(last, []).append(definitions_only(source(cell)))
    refs = {grade_id(c): c for c in (reference or {"cells": []})["cells"] if grade_id(c)}

    cells = [("a cell you added", code) for code in added[None] if code]
    missing = []
    for cell in release["cells"]:
        gid = grade_id(cell)
        if _runs(cell):
            if not is_solution(cell):
                cells.append((gid, source(cell)))
            elif own is not None and gid not in own and gid in refs:
                cells.append((gid + " (reference)", source(refs[gid])))
            elif gid in by_id:
                cells.append((gid, source(by_id[gid])))
            elif own is None or gid in own:
                missing.append(gid)
        cells.extend(("a cell you added", code) for code in added.get(gid, []) if code)
    return cells, missing
