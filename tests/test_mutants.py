"""The mutation check of the hidden suites, for every graded part in course.yaml.

For each part, ``tests/mutants/<part>.py`` lists realistic wrong implementations
(``MISTAKES``) and differently written correct ones (``CORRECT``), each replacing
whole solution cells of the reference. Every mistake must lose points in its part,
every correct variant must earn full marks, and neither may touch another part.

A submission's other parts are graded from a program in which this part's cells are
the reference's (selfcheck/program.py), so "only that part" is checked exactly and
cheaply: the program every other part runs must be identical to the reference's. The
part itself is graded for real by ``grade_submission``, in a pool of two processes.
A further student per part has only that part written (every other part left as the
stub) and must still get full marks in it: no double jeopardy.

Every case is graded with numpy's and math's comparisons patched in the student's
process (``PATCH``): a verdict that were made there would turn mistakes into full marks.
"""

import concurrent.futures as cf
import dataclasses
import multiprocessing

import pytest

from autograder import cohort, config
from autograder.grading import grade_submission
from selfcheck.program import grade_id, program, read_notebook, source

COURSE = config.load()
PARTS = [(a, p) for a in COURSE.assignments for p in a.parts]
PATCH = """
import math as _math
import numpy as _np
_np.allclose = lambda *a, **k: True
_np.isclose = lambda a, b, *r, **k: _np.ones(_np.broadcast(_np.asarray(a), _np.asarray(b)).shape, dtype=bool)
_np.array_equal = _np.array_equiv = lambda *a, **k: True
for _name in dir(_np.testing):
    if _name.startswith("assert_"):
        setattr(_np.testing, _name, lambda *a, **k: None)
_math.isclose = lambda *a, **k: True
"""


def _patched(nb, part):
    """The notebook with PATCH run first in the part's first solution cell."""
    for cell in nb["cells"]:
        if grade_id(cell) == part.cells[0]:
            cell["source"] = PATCH + source(cell)
    return nb


def _only(course, assignment, part):
    """The course seen as if ``assignment`` had this one part (grading the rest is not needed)."""
    narrowed = dataclasses.replace(assignment, parts=[part])
    return dataclasses.replace(course, assignments=[narrowed if a.id == assignment.id else a
                                                    for a in course.assignments])


def _grade(task):
    course, assignment_id, student, path = task
    record = grade_submission(course, assignment_id, student, path)
    part = record["parts"][0]
    result = {k: part[k] for k in ("part", "score", "max_score", "status", "reason")}
    result["hidden"] = {c["name"] for c in part["checks"] if c["visibility"] == "hidden"}
    result["failing"] = {c["name"] for c in part["checks"] if c["status"] != "passed"}
    return result


def _cases(assignment, part):
    """(kind, name, cells) of the part: its mistakes, its correct variants, and 'only this part'."""
    mistakes, correct = cohort.catalogue(COURSE, part.id)
    cases = [("mistake", name, entry["cells"]) for name, entry in mistakes.items()]
    cases += [("correct", name, entry.get("cells", entry)) for name, entry in correct.items()]
    release = read_notebook(COURSE.release(assignment, assignment.notebook))
    stubs = {grade_id(c): source(c) for c in release["cells"] if grade_id(c)}
    others = [cell for other in assignment.parts if other.id != part.id for cell in other.cells]
    cases.append(("correct", f"only-{part.id}-written", {cell: stubs[cell] for cell in others}))
    cases.append(("stub", f"{part.id}-untouched", {cell: stubs[cell] for cell in part.cells}))
    return cases


@pytest.fixture(scope="module")
def graded(tmp_path_factory, request):
    folder = tmp_path_factory.mktemp("mutants")
    tasks, meta = [], []
    for assignment, part in PARTS:
        narrowed = _only(COURSE, assignment, part)
        for kind, name, cells in _cases(assignment, part):
            student = f"{part.id}--{name}"
            nb = _patched(cohort.solved(COURSE, assignment, cells), part)
            path = cohort.write(nb, str(folder), student, assignment)
            tasks.append((narrowed, assignment.id, student, path))
            meta.append((assignment, part, kind, name, cells, path))
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork")) as pool:
        results = list(pool.map(_grade, tasks))
    by_part = {}
    for (assignment, part, kind, name, cells, path), result in zip(meta, results):
        by_part.setdefault(part.id, []).append((assignment, kind, name, cells, path, result))
    caught = sum(1 for rows in by_part.values() for _, kind, _, _, _, r in rows
                 if kind == "mistake" and r["score"] < r["max_score"])
    mistakes = sum(1 for rows in by_part.values() for row in rows if row[1] == "mistake")
    passed = sum(1 for rows in by_part.values() for _, kind, _, _, _, r in rows
                 if kind == "correct" and r["score"] == r["max_score"])
    correct = sum(1 for rows in by_part.values() for row in rows if row[1] == "correct")
    per_part = ", ".join(f"{p} {sum(1 for row in rows if row[1] == 'mistake')}"
                         for p, rows in by_part.items())
    request.config._course_summary = getattr(request.config, "_course_summary", []) + [
        f"mutation check: {caught} of {mistakes} mistakes caught, {passed} of {correct} correct "
        f"solutions given full marks (mistakes per part: {per_part}); numpy's comparisons patched "
        "in every student process"]
    return by_part


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_every_part_has_a_catalogue(assignment, part):
    mistakes, correct = cohort.catalogue(COURSE, part.id)
    assert len(mistakes) >= 6, f"tests/mutants/{part.id}.py: at least six MISTAKES"
    assert len(correct) >= 2, f"tests/mutants/{part.id}.py: at least two CORRECT variants"
    assert any("hard" in name for name in mistakes), f"{part.id}: no hard-coded entry among the mistakes"


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_mistakes_lose_points_in_their_part_and_correct_code_earns_full_marks(graded, assignment, part):
    problems = []
    for _, kind, name, cells, _, result in graded[part.id]:
        if kind == "mistake" and not result["score"] < result["max_score"]:
            problems.append(f"mistake {name!r} got full marks")
        if kind == "correct" and result["score"] != result["max_score"]:
            problems.append(f"correct {name!r} got {result['score']:g}/{result['max_score']:g}: "
                            f"{result['reason'][:300]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_a_mistake_never_reaches_another_part(graded, assignment, part):
    """Every other part runs exactly the program it runs for the reference solution."""
    release = read_notebook(COURSE.release(assignment, assignment.notebook))
    solved = cohort.solved(COURSE, assignment)
    for _, kind, name, cells, path, _ in graded[part.id]:
        if kind == "mistake":
            outside = set(cells) - set(part.cells)
            assert not outside, f"{name}: replaces cells of other parts: {sorted(outside)}"
        nb = read_notebook(path)
        for other in assignment.parts:
            if other.id == part.id:
                continue
            own = set(other.cells)
            if name.startswith("only-"):
                continue        # other parts are stubs on purpose; this case checks its own part
            uses = assignment.stand_in_cells(other)
            assert program(nb, release, own, uses) == program(solved, release, own, uses), \
                (name, other.id)


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_every_hidden_check_can_fail(graded, assignment, part):
    """Each hidden check fails on the untouched stub and on at least one catalogued mistake."""
    rows = graded[part.id]
    hidden = set().union(*(r["hidden"] for *_, r in rows))
    stub = next(r for _, kind, *_, r in rows if kind == "stub")
    caught = set().union(*(r["failing"] for _, kind, *_, r in rows if kind == "mistake"))
    assert hidden, f"{part.id}: no hidden checks ran"
    assert not hidden - stub["failing"], f"{part.id}: pass on the stub: {sorted(hidden - stub['failing'])}"
    assert not hidden - caught, f"{part.id}: no catalogued mistake fails {sorted(hidden - caught)}"
