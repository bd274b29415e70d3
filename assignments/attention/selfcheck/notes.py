"""What the self-check says around the checks: cells that did not load, parts that
lean on other parts, and the closing line.

Shared by ``pytest`` in the assignment folder (:mod:`selfcheck.plugin`) and the
notebook's check cells (:func:`selfcheck.check`), so both say the same thing.
"""

import ast
import inspect
import re
import textwrap
from collections.abc import Iterable
from typing import Any

from selfcheck.program import grade_id, is_solution, source

_WHERE = re.compile(r"\s*\(<cell [^>]*>, line (\d+)\)")


def load_failure(entry: dict, code: str | None = None) -> str:
    """One line for a cell that did not load: its name, the error and the line."""
    error = entry["error"]
    found = _WHERE.search(error)
    if found:                       # a SyntaxError: name the line, and show it when we have the code
        number = int(found.group(1))
        lines = (code or "").splitlines()
        shown = f": {lines[number - 1].strip()[:120]}" if 0 < number <= len(lines) else ""
        error = _WHERE.sub("", error) + f" (line {number}{shown})"
    return f"the cell '{entry['cell']}' did not load: {error}"


def syntax_errors(nb: dict) -> list[str]:
    """Load failures, as :func:`load_failure` entries, of the code cells that do not compile."""
    found = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code" or not is_solution(cell):
            continue
        label = grade_id(cell) or "a cell you added"
        try:
            compile(source(cell), f"<cell {label}>", "exec")
        except SyntaxError as exc:
            found.append(({"cell": label, "error": f"{type(exc).__name__}: {exc}"}, source(cell)))
    return [load_failure(entry, code) for entry, code in found]


def _defined(code: str, label: str) -> set[str]:
    """The functions and classes a cell defines; a cell that does not compile defines what it is named after."""
    tree = _parse(code)
    if tree is None:
        return {label}
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):     # a cell that does not compile
        return None


class Uses:
    """Which part defines each of the notebook's functions, and which names each one's body uses: what a
    check reaches of other parts, read from the functions it called rather than from all its part calls
    (a check of ``causal_mask`` alone never reaches ``softmax``, which ``masked_softmax`` calls)."""

    def __init__(self, nb: dict, parts: list[dict]):
        self._body: dict[str, set[str]] = {}        # function -> the names its body uses
        for cell in nb["cells"]:
            tree = _parse(source(cell)) if cell.get("cell_type") == "code" else None
            for node in tree.body if tree else []:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._body[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        code = {grade_id(c): source(c) for c in nb["cells"] if grade_id(c)}
        self._parts = [part["id"] for part in parts]
        self._owner = {name: part["id"] for part in parts for c in part["cells"]
                       for name in _defined(code.get(c, ""), c)}

    def of(self, part: str | None, called: Iterable[str] | None = None) -> dict[str, list[str]]:
        """other part -> its functions that the functions ``called`` reach, directly or through others; all
        that ``part``'s functions reach when ``called`` is None or holds a probe's measurement
        (``module.name``), which may call any of them."""
        start = set(called or ())
        if called is None or any("." in name for name in start):
            start |= {name for name, owner in self._owner.items() if owner == part}
        reached, todo = set(start), list(start)
        while todo:
            more = {n for n in self._body.get(todo.pop(), ()) if n in self._body or n in self._owner} - reached
            reached |= more
            todo.extend(more)
        return {other: sorted(n for n in reached if self._owner.get(n) == other) for other in self._parts
                if other != part and any(self._owner.get(n) == other for n in reached)}


def checked_names(fn: Any, _seen: set | None = None) -> set[str]:
    """The student's functions a check calls: ``student.<name>``, ``unchanged(student, "<name>", ...)`` and
    ``arrays(student, "<name>", ...)`` in its source and in the module's helpers it calls (an empty set
    when the source is not there)."""
    fn = getattr(fn, "func", fn)
    seen = _seen if _seen is not None else set()
    if fn in seen:
        return set()
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    names: set[str] = set()
    helpers = getattr(fn, "__globals__", {})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "student":
            names.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("unchanged", "arrays") and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                names.add(str(node.args[1].value))
            elif inspect.isfunction(helpers.get(node.func.id)):
                names |= checked_names(helpers[node.func.id], seen)
    return names


def leaning_on(used: dict[str, list[str]], failing: dict[str, set[str]]) -> str:
    """The sentence for a failing check that reached the functions ``used`` of other parts
    (:meth:`Uses.of`), when some of those parts fail public checks of their own, or ''.

    ``failing`` maps each other part that fails some public checks to the functions those checks
    call: only those are named (all the part's reached functions when the checks' source does not say)."""
    broken: list[tuple[str, list[str]]] = []
    for other, names in used.items():
        if other in failing:
            named = [n for n in names if n in failing[other]] if failing[other] else names
            if named:
                broken.append((other, named))
    if not broken:
        return ""
    said = "; ".join(f"{', '.join(f'`{n}`' for n in names)} from part {other}" for other, names in broken)
    return (f"This part uses your {said}, which fails some of its own public checks: fix that part "
            "first. (At grading, each part runs with the reference version of the other parts.)")


def finding(exc: BaseException) -> str:
    """What a failed check found, without its likely mistake: when a part this one uses fails its
    own checks, that is the likely cause, and a guess from this part's numbers would mislead."""
    return getattr(exc, "finding", None) or getattr(exc, "message", None) or str(exc)


def slow(calls: dict[str, float], per_call: float) -> list[str]:
    """A line for each call that came close to the limit grading holds every call to."""
    return [f"`{what}` used {seconds:.1f} s of CPU time in one call, more than half of the {per_call:g} s "
            f"a call may use: grading stops a call at {per_call:g} s, so make it quicker before you hand "
            "in (look for work repeated inside a loop)" for what, seconds in sorted(calls.items())]


def closing(passed: int, failed: int, hidden: str) -> str:
    """The self-check's last line: where the student stands, and what grading adds."""
    if failed:
        return (f"{passed} public check{'s' if passed != 1 else ''} passed, {failed} failed: fix "
                f"{'those' if failed != 1 else 'that'} first. "
                f"At grading {hidden} hidden checks also run, with inputs you have not seen.")
    return (f"all {passed} public checks pass, so every number the notebook states and "
            f"every rule it gives is met; only the unpredictable inputs are left: at grading {hidden} "
            "hidden checks run with inputs you have not seen.")


def unwritten(code: dict[str, str]) -> dict[str, str]:
    """function -> cell, for the functions of the solution cells that still raise NotImplementedError (the
    stub's line, kept), in the notebook's order."""
    found = {}
    for cell, text in code.items():
        if any(line.strip().startswith("raise NotImplementedError") for line in text.splitlines()):
            found.update({name: cell for name in sorted(_defined(text, cell))})
    return found


def not_written(functions: list[str], cells: dict[str, str], code: dict[str, str], count: int) -> str:
    """One paragraph for ``count`` failing checks that call only functions still raising NotImplementedError."""
    text = (f"{count} checks fail only because {', '.join(functions)} still raise NotImplementedError: write "
            "each where its cell says `# YOUR CODE HERE`, and delete the `raise NotImplementedError` line.")
    below = code_below(functions, cells, code)
    return f"{text} {below}" if below else text


def code_below(functions: Iterable[str], cells: dict[str, str], code: dict[str, str]) -> str:
    """The sentence for the cells of ``functions`` (function -> cell: :func:`unwritten`) that hold code below
    the stub's `raise NotImplementedError` line, or ''."""
    below = list(dict.fromkeys(cells[f] for f in functions if f in cells and _code_below_the_raise(code.get(cells[f], ""))))
    if not below:
        return ""
    return (f"The cell{'s' if len(below) > 1 else ''} {', '.join(below)} already hold{'' if len(below) > 1 else 's'} "
            "code below the `raise NotImplementedError` line, which never runs until the line is gone.")


def _code_below_the_raise(text: str) -> bool:
    """Code after the stub's `raise NotImplementedError` line (not a comment, not blank)."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.strip().startswith("raise NotImplementedError")), None)
    return at is not None and any(line.strip() and not line.strip().startswith("#") for line in lines[at + 1:])
