"""Which of a notebook's cells run when it is checked, and in what form.

A check runs a notebook's definitions, not its demonstrations: cells whose
grade id starts with ``show_`` (plots, printed tables) or ``run_`` (the long
experiments) never run, and test cells are replaced by the suites. Given the
released notebook, locked cells come from it rather than from the submission,
so an edited given cell changes nothing; the checker also runs them on its own
side (:attr:`Program.given`), so a student's cell that redefines a given
function cannot change what a check of the given code sees. When a part is
graded, the functions of the notebook's *other* parts are stand-ins: names
whose calls go to the grader, which answers from the reference solution in a
process of its own, so one mistake costs points in one part only and no
solution source ever enters the student's process. Cells a student added
contribute their imports and definitions only.
"""

import ast
import json
import re
from collections.abc import Callable, Collection
from typing import Any
from dataclasses import dataclass, field

SKIP_PREFIXES = ("show_", "run_")
MAX_NOTEBOOK_BYTES = 32 << 20
# a hand-in is read, parsed and built into a program in the grader, before any sandbox: these bound
# that work (the releases hold about 30 cells and 10,000 characters of code)
MAX_CELLS = 1_000
MAX_CODE_CHARS = 1_000_000


class NotebookError(Exception):
    """The file is not a notebook this course can read."""


def read_notebook(path: str) -> dict:
    """Load a notebook file, with a one-line reason when it is malformed."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_NOTEBOOK_BYTES + 1)
    except FileNotFoundError:
        raise NotebookError(f"no notebook at {path}") from None
    return parse_notebook(raw)


def parse_notebook(raw: bytes) -> dict:
    """A notebook from its bytes, with a one-line reason when it is not one."""
    if not raw.strip():
        raise NotebookError("the notebook file is empty")
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"the notebook is larger than {MAX_NOTEBOOK_BYTES >> 20} MB "
                            "(clear the outputs of big plots and save it again)")
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"the notebook is not valid JSON ({str(exc)[:200]})") from None
    except RecursionError:
        raise NotebookError("the notebook is not a notebook: its JSON is nested too deeply") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("the file is JSON but not a notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        found = nb.get("nbformat")
        raise NotebookError(f"the notebook has nbformat {found if isinstance(found, int) else '(none)'}; "
                            "version 4 is expected (save it from a current Jupyter)")
    if len(nb["cells"]) > MAX_CELLS:
        raise NotebookError(f"the notebook has {len(nb['cells']):,} cells; at most {MAX_CELLS:,} are read "
                            "(delete the cells you added that the answers do not need)")
    try:
        json.dumps(nb, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise NotebookError("the notebook holds text that is not valid Unicode (a lone surrogate); "
                            "save it again from Jupyter") from None
    code_chars = 0
    for number, cell in enumerate(nb["cells"], start=1):
        if (not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str)
                or not isinstance(cell.get("source", ""), (str, list))
                or not isinstance(cell.get("metadata", {}), dict)):
            raise NotebookError(f"cell {number} of the notebook is malformed")
        if cell["cell_type"] == "code":
            code_chars += len(source(cell))
            if code_chars > MAX_CODE_CHARS:
                raise NotebookError(f"the notebook's code cells hold more than {MAX_CODE_CHARS:,} characters "
                                    f"(by cell {number}); delete the code the answers do not need")
        problem = _nbgrader_problem(cell.get("metadata", {}).get("nbgrader"))
        if problem:
            raise NotebookError(f"cell {number} has nbgrader metadata that is not valid ({problem}); "
                                "start again from the released notebook and copy your code into it")
    return nb


_GRADE_ID = re.compile(r"[a-zA-Z0-9_\-]*")


def _nbgrader_problem(data):
    """What is wrong with a cell's nbgrader metadata, as nbgrader itself would refuse it, or None."""
    if data is None:
        return None
    if not isinstance(data, dict):
        return "not a mapping"
    if "grade_id" in data and not (isinstance(data["grade_id"], str) and _GRADE_ID.fullmatch(data["grade_id"])):
        return "grade_id"
    for key in ("grade", "solution", "locked", "task"):
        if key in data and not isinstance(data[key], bool):
            return key
    if "points" in data and (isinstance(data["points"], bool) or not isinstance(data["points"], (int, float))):
        return "points"
    return None


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(str(line) for line in src) if isinstance(src, list) else str(src)


def meta(cell: dict) -> dict:
    data = cell.get("metadata", {}).get("nbgrader")
    return data if isinstance(data, dict) else {}


def grade_id(cell: dict) -> str | None:
    gid = meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def is_test(cell: dict) -> bool:
    m = meta(cell)
    return bool(m.get("grade")) and not m.get("solution")


def is_solution(cell: dict) -> bool:
    return bool(meta(cell).get("solution"))


def _runs(cell):
    gid = grade_id(cell) or ""
    return cell.get("cell_type") == "code" and not is_test(cell) and not gid.startswith(SKIP_PREFIXES)


# a cell larger than this is padding, not an answer: parsing it costs the grader ~500 bytes a character
MAX_PARSED_CHARS = 200_000


def _parse(code):
    """A cell's syntax tree, or None when it does not parse (too deep or too large counts as that:
    this runs in the grader, on any cell a student wrote)."""
    if len(code) > MAX_PARSED_CHARS:
        return None
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def definitions_only(code: str) -> str:
    """Keep a student-added cell's imports, functions and classes, nothing else.

    Their own source text is kept, never rewritten from the syntax tree: writing a tree back out
    recurses once a level, so a deep expression would stop the grader, not the student's code."""
    tree = _parse(code)
    if tree is None:
        return ""
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    segment = _segments(code)
    kept = []
    for node in tree.body:
        if isinstance(node, keep):
            decorators = [f"@{segment(d)}\n" for d in getattr(node, "decorator_list", [])]
            kept.append("".join(decorators) + segment(node))
    return "\n".join(kept)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _segments(code: str) -> Callable[[ast.AST], str]:
    """``ast.get_source_segment(code, node)`` for many nodes of one cell, the cell split into lines
    once (as that function splits it: only at \\r, \\n and \\r\\n), not once a node: a cell of
    thousands of small functions would cost the grader time quadratic in its length."""
    lines = _LINE.findall(code)

    def segment(node: Any) -> str:
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
        return (lines[first].encode()[node.col_offset:].decode() + "".join(lines[first + 1:last])
                + lines[last].encode()[:node.end_col_offset].decode())
    return segment


def solution_ids(nb: dict) -> list[str | None]:
    return [grade_id(c) for c in nb["cells"] if c.get("cell_type") == "code" and is_solution(c)]


def defined_names(code: str, kinds: tuple[type, ...] = (
        ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)) -> list[str]:
    """The top-level names a cell defines (functions, classes, assignments), in order."""
    tree = _parse(code)
    if tree is None:
        return []
    names = []
    for node in tree.body:
        if not isinstance(node, kinds):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return [n for i, n in enumerate(names) if n not in names[:i]]


@dataclass
class Program:
    """What one check runs.

    ``cells`` run in the student's process, in order: ``(label, code)``, or
    ``(label, None, names)`` for a stand-in, whose functions ``names`` the
    grader answers (the cells of other parts the graded one does not use are
    left out). ``given`` are the locked cells the checker also runs on its
    own side. ``missing`` are solution cells of the part the submission no
    longer has.
    """

    cells: list = field(default_factory=list)
    given: list = field(default_factory=list)
    missing: list = field(default_factory=list)

    @property
    def given_names(self) -> list[str]:
        return [n for _, code in self.given for n in defined_names(code)]


def program(student: dict, release: dict | None = None, own: Collection[str] | None = None,
            stand_ins: Collection[str] = ()) -> Program:
    """The :class:`Program` of a submitted notebook.

    ``student`` is the submitted notebook; ``release`` the released one (the
    backbone: its order and its locked cells win). Without a release (the
    reference solution, a student's own self-check in their folder) the
    notebook's locked cells are its given cells, which the checker runs on its
    own side: the grader never builds a hand-in's program so. With ``own`` (the solution
    cells of the part being graded), the solution cells in ``stand_ins`` (of
    the parts it uses) are stand-ins for the functions the released cell
    declares, and every other part's cells do not run. A released cell's answer is the first
    cell of its grade id in its type, the one nbgrader's copy of the hand-in gives the id
    (autograder/nbgrader/staging.py), so formgrader shows the code graded: code moved into a
    markdown cell is text, and a code cell of another type's id one the student added.
    """
    if release is None:
        prog = Program()
        for cell in student["cells"]:
            if not _runs(cell):
                continue
            gid = grade_id(cell)
            code = source(cell) if gid else definitions_only(source(cell))
            prog.cells.append((gid or "a cell you added", code))
            if gid and not is_solution(cell) and meta(cell).get("locked"):
                prog.given.append((gid, code))
        return prog

    known = {grade_id(c): c.get("cell_type") for c in release["cells"] if grade_id(c)}
    by_id: dict[str | None, dict] = {}
    added: dict[str | None, list[str]] = {None: []}   # student-added cells, after the known cell they follow
    last = None
    for cell in student["cells"]:
        gid = grade_id(cell)
        if gid in known and cell.get("cell_type") == known[gid]:
            by_id.setdefault(gid, cell)
            last = gid
        elif cell.get("cell_type") == "code" and not is_test(cell):
            added.setdefault(last, []).append(definitions_only(source(cell)))

    prog = Program(cells=[("a cell you added", code) for code in added[None] if code])
    for cell in release["cells"]:
        gid = grade_id(cell)
        if _runs(cell):
            if not is_solution(cell):
                prog.cells.append((gid, source(cell)))
                prog.given.append((gid, source(cell)))
            elif own is not None and gid not in own:
                if gid in stand_ins:
                    names = defined_names(source(cell), (ast.FunctionDef,))
                    prog.cells.append((f"{gid} (another part)", None, names))
            elif gid in by_id:
                prog.cells.append((gid, source(by_id[gid])))
            else:
                prog.missing.append(gid)
        prog.cells.extend(("a cell you added", code) for code in added.get(gid, []) if code)
    return prog
