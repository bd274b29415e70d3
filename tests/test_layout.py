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
    """The module of ours that ``name`` is or lies in (``autograder.records.store.write`` -> ``autograder.records.store``)."""
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


# (room, the rooms of ours it may import, why): each room stands on the ones below it; the
# command line (cli), the pipeline and `course status` are the only modules that join them
ROOMS = [
    ("selfcheck", ["selfcheck"], "the self-check kit is released to students alone"),
    ("autograder.errors", [], "the course's errors stand on nothing"),
    ("autograder.records.results", ["selfcheck.causes"],
     "the one typed record stands on nothing of the grader (its words for a failure are the checks')"),
    ("autograder.records", ["autograder.records", "selfcheck.causes"],
     "storing results knows the record, not how it was made or shown"),
    ("autograder.untrusted", ["autograder.errors", "autograder.records.store", "selfcheck.wire"],
     "the guard at every edge knows how to write text, nothing of grades"),
    ("autograder.course", ["autograder.course", "autograder.errors", "autograder.untrusted", "autograder.records",
                           "selfcheck"], "course.yaml and what stands beside it are read before anything runs"),
    ("autograder.sandbox", ["autograder.sandbox", "autograder.course", "selfcheck"],
     "the sandbox runs a process; it knows nothing of grades"),
    ("autograder.grade.suites", ["autograder.grade.suites", "autograder.grade.reference_answers", "autograder.grade.reuse",
                                 "autograder.grade.versions", "autograder.grade.handin", "autograder.course",
                                 "autograder.records", "autograder.sandbox", "selfcheck"],
     "one part's suites know nothing of a batch"),
    ("autograder.grade", ["autograder.grade", "autograder.course", "autograder.records", "autograder.sandbox",
                          "autograder.errors", "autograder.untrusted", "selfcheck"],
     "grading makes results; others show and record them"),
    ("autograder.mistakes", ["autograder.mistakes", "autograder.grade", "autograder.course", "selfcheck"],
     "the catalogue is graded like any submission"),
    ("autograder.export.outputs", ["autograder.course", "autograder.records"],
     "what an export is knows the course and the record, nothing of how they are written"),
    ("autograder.export", ["autograder.export", "autograder.course", "autograder.records", "autograder.untrusted"],
     "the exports are made from the records alone"),
    ("autograder.report", ["autograder.report", "autograder.export", "autograder.grade", "autograder.mistakes",
                           "autograder.course", "autograder.records", "autograder.untrusted", "selfcheck"],
     "the pages are made from the records and the hand-ins, never from nbgrader"),
    ("autograder.nbgrader", ["autograder.nbgrader", "autograder.grade",
                             "autograder.export.outputs",
                             "autograder.course", "autograder.records", "autograder.errors", "autograder.untrusted",
                             "autograder.lazy_iri", "selfcheck"],
     "nbgrader's extensions are called by the course's commands, never the other way round"),
    ("autograder.release", ["autograder.release", "autograder.nbgrader.apps", "autograder.nbgrader.selfcheck_kit",
                            "autograder.grade.suites",
                            "autograder.course", "autograder.errors", "selfcheck"],
     "a release is made from the solutions, through nbgrader"),
    ("autograder.hub", ["autograder.hub", "autograder.course", "autograder.nbgrader"],
     "the hub's code serves notebooks; it never grades"),
    ("autograder.experiment", ["autograder.experiment", "autograder.course", "selfcheck"],
     "the chapter's experiment runs on its own"),
]
# module -> the only modules that import it: the command line parses, its commands print and run
# the pipeline, which runs the stages
ENTRIES = {"autograder.cli": {"autograder.__main__"}, "autograder.commands": {"autograder.cli"},
           "autograder.pipeline": {"autograder.commands"}, "autograder.status": {"autograder.commands", "autograder.pipeline"}}


def test_no_module_of_the_grader_or_the_self_check_kit_is_over_400_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
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
    assert "selfcheck.limits" in GRAPH["autograder.course.config"]


def _room(module):
    """The most specific room of ROOMS that ``module`` lies in, or None (an entry point)."""
    found = [room for room in ROOMS if _under(module, room[0])]
    return max(found, key=lambda room: len(room[0]), default=None)


@pytest.mark.parametrize("room, allowed, why", ROOMS, ids=[room for room, _, _ in ROOMS])
def test_each_room_stands_on_the_rooms_below_it(room, allowed, why):
    broken = [f"{module} imports {target}"
              for module, targets in GRAPH.items() if _room(module) and _room(module)[0] == room
              for target in targets if not any(_under(target, prefix) for prefix in allowed)]
    assert not broken, f"{why}:\n" + "\n".join(broken)


def test_every_module_is_in_a_room_or_an_entry_point():
    """The grader's top level holds only what joins the rooms (and the shims nothing imports)."""
    loose = sorted(m for m in MODULES if _room(m) is None)
    assert loose == ["autograder", "autograder.__main__", "autograder.cli", "autograder.commands", "autograder.lazy_iri",
                     "autograder.nbgrader_bridge", "autograder.pipeline", "autograder.status"], loose


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_the_command_line_and_the_pipeline_are_imported_from_one_place(entry):
    assert {module for module, targets in GRAPH.items() if entry in targets} == ENTRIES[entry]

