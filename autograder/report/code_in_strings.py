"""Code a hand-in runs from strings (``exec``, ``eval``, ``compile``), read as the code it is.

Grading runs ``exec("def softmax(z): ...")`` as the function it defines, so a comparison of
hand-ins that saw only the call would miss a copy put in a string. :func:`strings_run` finds
every such call in a parsed cell and gives back the code of each one whose argument is known
without running anything: a literal, literals joined by ``+`` or ``"".join``, and
``base64.b64decode``, ``bytes.fromhex`` or ``.decode()`` of those. Code built any other way
(from a variable, read from a file) cannot be read here, and is named instead, for a person
to look at. The work is bounded: strings within strings are read ``MAX_DEPTH`` levels down,
and no more than ``MAX_CHARS`` characters of them in all.
"""

import ast
import base64
import binascii

RUNNERS = {"exec", "eval", "compile"}
MAX_DEPTH = 4
MAX_CHARS = 200_000


class _Unknown(Exception):
    """The value is not known without running the code."""


def _name(node):
    """``exec``, ``b64decode`` or ``fromhex`` for ``exec(...)``, ``base64.b64decode(...)``, ``bytes.fromhex``."""
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _value(node, budget):
    """The str or bytes ``node`` evaluates to, for the forms the module docstring names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        value = node.value
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        value = _value(node.left, budget) + _value(node.right, budget)
    elif isinstance(node, ast.Call) and _name(node) == "join" and len(node.args) == 1 \
            and isinstance(node.func, ast.Attribute) and isinstance(node.args[0], (ast.List, ast.Tuple)):
        value = _value(node.func.value, budget).join(_value(e, budget) for e in node.args[0].elts)
    elif isinstance(node, ast.Call) and _name(node) == "decode" and isinstance(node.func, ast.Attribute):
        value = _value(node.func.value, budget).decode()
    elif isinstance(node, ast.Call) and _name(node) in ("b64decode", "fromhex") and len(node.args) == 1:
        raw = _value(node.args[0], budget)
        try:
            value = base64.b64decode(raw) if _name(node) == "b64decode" else bytes.fromhex(raw)
        except (binascii.Error, ValueError, TypeError):
            raise _Unknown from None
    else:
        raise _Unknown
    budget[0] -= len(value)
    if budget[0] < 0:
        raise _Unknown
    return value


def may_run(code: str) -> bool:
    """Whether the text ``code`` names a function that runs strings (a quick test before a walk)."""
    return any(name in code for name in RUNNERS)


def strings_run(tree: ast.AST, depth: int = MAX_DEPTH,
                budget: list[int] | None = None) -> tuple[list[ast.Module], int]:
    """``(trees, unknown)``: the parsed code of every string the calls to exec, eval and compile
    in ``tree`` run (and of the strings those run in turn), and how many such calls run code
    that cannot be known without running it."""
    budget = [MAX_CHARS] if budget is None else budget
    trees: list[ast.Module] = []
    unknown = 0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RUNNERS
                and node.args):
            continue
        inner = node.args[0]
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in RUNNERS:
            continue            # eval(compile("...")): the inner call is read where the walk meets it
        try:
            text = _value(node.args[0], budget)
            if isinstance(text, bytes):
                text = text.decode()
            found = ast.parse(text, mode="eval" if node.func.id == "eval" else "exec")
        except (_Unknown, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            unknown += 1
            continue
        found = found if isinstance(found, ast.Module) else ast.Module([ast.Expr(found.body)], [])
        trees.append(found)
        if depth > 1:
            more, hidden = strings_run(found, depth - 1, budget)
            trees += more
            unknown += hidden
    return trees, unknown
