"""The code's shape, read from its source with ast (milliseconds): small modules, no import
circle, and the layers README's "How a submission is graded" describes.

Every import counts, a function's or a type checker's as much as a module's: each is a
dependency a reader has to follow.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "selfcheck")
MAX_LINES = 400


def _modules():
    """dotted name -> path, for every module of the course's packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _ours(name):
    """The module of ours that ``name`` is or lies in (``autograder.store.write`` -> ``autograder.store``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module):
    """The modules of ours that ``module`` imports, anywhere in it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(_ours(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(above + ([node.module] if node.module else []))
            # `from a import b` imports the module a.b when there is one, else a name of a
            found.update(_ours(f"{base}.{alias.name}") for alias in node.names)
    found.discard(None)
    found.discard(module)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def _cycle(graph):
    """One import circle as a list of modules, or None."""
    state = {}                      # module -> "open" while on the path, "done" after

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def _under(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


# (who, what it must not import, why): the layers of README's "How a submission is graded"
LAYERS = [
    ("selfcheck", ["autograder"], "the self-check kit is released to students alone"),
    ("autograder.results", ["autograder", "selfcheck.student", "selfcheck.child", "selfcheck.launch"],
     "the one typed record stands on nothing of the grader (its words for a failure are the checks')"),
    ("autograder.store", ["autograder.grading", "autograder.versions", "autograder.suites",
                          "autograder.reporting", "autograder.nbgrader", "autograder.pipeline"],
     "storing results knows the record, not how it was made or shown"),
    ("autograder.sandbox", ["autograder.grading", "autograder.suites", "autograder.store",
                            "autograder.versions", "autograder.reporting", "autograder.nbgrader",
                            "autograder.pipeline", "autograder.cli"],
     "the sandbox runs a process; it knows nothing of grades"),
    ("autograder.grading", ["autograder.reporting", "autograder.nbgrader", "autograder.pipeline",
                            "autograder.cli"], "grading makes results; others show and record them"),
    ("autograder.reporting", ["autograder.nbgrader", "autograder.sandbox", "autograder.pipeline",
                              "autograder.cli"], "the exports and pages are made from results alone"),
    ("autograder.nbgrader", ["autograder.release", "autograder.pipeline", "autograder.cli"],
     "nbgrader's extensions are called by the course's commands, never the other way round"),
    ("autograder.suites", ["autograder.grading"], "one part's suites know nothing of a batch"),
]
# module -> the only modules that import it: the command line parses and prints, and runs the
# pipeline, which runs the stages
ENTRIES = {"autograder.cli": {"autograder.__main__"}, "autograder.pipeline": {"autograder.cli"}}


def test_no_module_of_the_grader_is_over_400_lines():
    long = {name: n for name, path in MODULES.items() if _under(name, "autograder")
            and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these along their seams: {long}"


def test_no_import_circle():
    assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH))


def test_a_circle_is_found():
    """The search above finds a circle where there is one, however long."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_relative_and_lazy_imports_are_read():
    """Imports in a function and relative ones are dependencies too."""
    assert "autograder.sandbox.jails" in GRAPH["autograder.sandbox"]
    assert "selfcheck.limits" in GRAPH["autograder.config"]


@pytest.mark.parametrize("who, forbidden, why", LAYERS, ids=[f"{w}-{f[0]}" for w, f, _ in LAYERS])
def test_the_layers_of_how_a_submission_is_graded(who, forbidden, why):
    broken = [f"{module} imports {target}"
              for module, targets in GRAPH.items() if _under(module, who)
              for target in targets for prefix in forbidden
              if _under(target, prefix) and not _under(target, who)]
    assert not broken, f"{why}:\n" + "\n".join(broken)


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_the_command_line_and_the_pipeline_are_imported_from_one_place(entry):
    assert {module for module, targets in GRAPH.items() if entry in targets} == ENTRIES[entry]

