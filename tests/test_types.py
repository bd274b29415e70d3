"""The type check: mypy over autograder/ and selfcheck/, configured in pyproject.toml, and
type hints on every public function there (mypy checks what they say).

Its cache (.mypy_cache) makes a run after the first take a second or two.
"""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# modules whose functions are still to be annotated
NOT_YET: set[str] = set()


def test_the_grader_and_the_self_check_kit_type_check():
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert "No module named mypy" not in run.stderr, "the type checker is missing: pip install -e '.[check]'"
    assert run.returncode == 0, run.stdout + run.stderr


def unannotated(tree, where=""):
    """``name:line`` of each public function or method below ``tree`` missing a parameter's or
    its return's type (``__init__`` returns nothing to annotate)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            found += unannotated(node, f"{where}{node.name}.")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (not node.name.startswith("_") or node.name == "__init__"):
            args = node.args
            params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
            if any(a.annotation is None for a in params if a.arg not in ("self", "cls")) or \
                    (node.returns is None and node.name != "__init__"):
                found.append(f"{where}{node.name}:{node.lineno}")
    return found


def test_public_functions_carry_type_hints():
    missing = {}
    for package in ("autograder", "selfcheck"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name not in NOT_YET and (found := unannotated(ast.parse(path.read_text(encoding="utf-8")))):
                missing[name] = found
    assert not missing, missing


def test_a_function_without_hints_is_found():
    tree = ast.parse("def f(x: int) -> int: ...\ndef g(x): ...\ndef _h(x): ...\n"
                     "class C:\n    def __init__(self, y: int): ...\n    def m(self) -> None: ...\n"
                     "    def n(self, z: int): ...\n")
    assert unannotated(tree) == ["g:2", "C.n:7"]
