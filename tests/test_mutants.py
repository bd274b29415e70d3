"""The mutation check of the suites, for every graded part in course.yaml.

For each part, ``parts/<part>/mistakes.py`` lists realistic wrong implementations
(``MISTAKES``) and differently written correct ones (``CORRECT``), each replacing
whole solution cells of the reference. Every mistake must lose points in its part,
every correct variant must earn full marks, and neither may touch another part.
Every mistake the notebook warns about (``warned``) must fail a public check, so the
self-check catches it; every mistake's first line at grading must name it (the id its checks
recorded is its own); at least 90% of the held-out mistakes (``parts/<part>/held_out.py``,
never used to write a diagnosis) must be named the same way; and docs/mistakes.json, with
docs/mistakes.md rendered from it, must be current.

A submission's other parts are graded from a program in which this part's cells are
the reference's (selfcheck/program.py), so "only that part" is checked exactly and
cheaply: the program every other part runs must be identical to the reference's. The
part itself is graded for real (autograder/mistakes/catalogue.py), in a pool of two processes.
A further student per part has only that part written (every other part left as the
stub) and must still get full marks in it: no double jeopardy.

Every case is graded with numpy's and math's comparisons patched in the student's
process (``PATCH``): a verdict that were made there would turn mistakes into full marks.
"""

import json
import os

import pytest

from autograder.course import config
from autograder.mistakes import catalogue, cohort
from selfcheck.program import grade_id, program, read_notebook, source

pytestmark = [pytest.mark.slow, pytest.mark.corpus]   # grades every catalogued mistake

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


@pytest.fixture(scope="module")
def graded(tmp_path_factory, request):
    by_part = catalogue.grade(COURSE, tmp_path_factory.mktemp("mutants"), prepare=_patched)
    rows = [row for part_rows in by_part.values() for row in part_rows]
    caught = sum(1 for _, kind, *_, r in rows if kind == "mistake" and r["score"] < r["max_score"])
    passed = sum(1 for _, kind, *_, r in rows if kind == "correct" and r["score"] == r["max_score"])
    count = {kind: sum(1 for row in rows if row[1] == kind) for kind in ("mistake", "correct")}
    per_part = ", ".join(f"{p} {sum(1 for row in part_rows if row[1] == 'mistake')}"
                         for p, part_rows in by_part.items())
    warned = []
    for p, part_rows in by_part.items():
        catches = [len(r["public_failing"]) for _, kind, _, entry, _, r in part_rows
                   if kind == "mistake" and entry.get("warned")]
        if catches:
            warned.append(f"{p} {sum(1 for c in catches if c)}/{len(catches)} "
                          f"({min(catches)}-{max(catches)} public checks each)")
    request.config._course_summary = getattr(request.config, "_course_summary", []) + [
        f"mutation check: {caught} of {count['mistake']} mistakes caught, {passed} of {count['correct']} correct "
        f"solutions given full marks (mistakes per part: {per_part}); numpy's comparisons patched in every "
        "student process",
        "warned-about mistakes failing a public check: " + ", ".join(warned)]
    return by_part


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_every_part_has_a_catalogue(assignment, part):
    mistakes, correct = cohort.catalogue(COURSE, part.id)
    assert len(mistakes) >= 6, f"parts/{part.id}/mistakes.py: at least six MISTAKES"
    assert len(correct) >= 2, f"parts/{part.id}/mistakes.py: at least two CORRECT variants"
    assert any("hard" in name for name in mistakes), f"{part.id}: no hard-coded entry among the mistakes"


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_mistakes_lose_points_in_their_part_and_correct_code_earns_full_marks(graded, assignment, part):
    problems = []
    for _, kind, name, _, _, result in graded[part.id]:
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
    for _, kind, name, entry, path, _ in graded[part.id]:
        if kind == "mistake":
            outside = set(entry["cells"]) - set(part.cells)
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


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_the_self_check_catches_every_mistake_the_notebook_warns_about(graded, assignment, part):
    silent = [name for _, kind, name, entry, _, r in graded[part.id]
              if kind == "mistake" and entry.get("warned") and not r["public_failing"]]
    assert not silent, f"{part.id}: warned about in the notebook, but every public check passes: {silent}"


@pytest.mark.parametrize("assignment,part", PARTS, ids=[p.id for _, p in PARTS])
def test_every_mistake_s_first_line_names_it(graded, assignment, part):
    """The part's reason starts with the diagnosis of this very mistake: the id the checks recorded
    is the one the catalogue gives it (its name, or its ``mistake``)."""
    wrong = [(name, entry.get("mistake", name), r["mistake"], r["reason"][:160])
             for _, kind, name, entry, _, r in graded[part.id]
             if kind == "mistake" and not (r["reason"].startswith("Likely mistake:")
                                           and entry.get("mistake", name) in (r["mistake"] or "").split(" or "))]
    assert not wrong, f"{part.id}: feedback that does not name the mistake (name, expected, diagnosed, reason): {wrong}"


def test_the_first_sentence_names_at_least_90_percent_of_the_held_out_mistakes(graded, request):
    """Mistakes kept out of writing the diagnoses (parts/<part>/held_out.py): each loses points, and the
    first sentence of the part's reason names at least 90% of those written here and at least 95% of
    those taken from real public code (an entry with a source; 63 of 63 now, the last harvest 19 of 21
    at its first measure: docs/reference/tests.md keeps the history)."""
    data = catalogue.summary(COURSE, graded)
    real, of_real = data["held_out_named_real_code"]
    named, total = catalogue.named_share(data["parts"], "held_out", real_code=False)
    request.config._course_summary = getattr(request.config, "_course_summary", []) + [
        f"held-out mistakes named by the first sentence of the part's reason: {named} of {total} written here, "
        f"{real} of {of_real} taken from real public code"]
    free = [(p["part"], e["name"]) for p in data["parts"] for e in p["held_out"] if e["score"] >= e["max_score"]]
    assert total >= 20 and not free, f"held-out mistakes that got full marks: {free}"
    missed = [(p["part"], e["name"], e["mistake"], e["diagnosed"]) for p in data["parts"] for e in p["held_out"]
              if not catalogue.names_it(e) and not e.get("source")]
    assert named >= 0.9 * total, f"{named} of {total} held-out mistakes named; not named: {missed}"
    unnamed_real = [(p["part"], e["name"], e["mistake"], e["diagnosed"]) for p in data["parts"] for e in p["held_out"]
                    if not catalogue.names_it(e) and e.get("source")]
    assert of_real >= 60 and real >= 0.95 * of_real, \
        f"{real} of {of_real} held-out mistakes from real code named; not named: {unnamed_real}"


def test_the_catalogue_and_its_page_are_current(graded):
    data = catalogue.summary(COURSE, graded)
    fresh = {catalogue.DATA: json.dumps(data, indent=1, ensure_ascii=False) + "\n", catalogue.PAGE: catalogue.page(data)}
    for name, text in fresh.items():
        with open(os.path.join(COURSE.root, name), encoding="utf-8") as fh:
            committed = fh.read()
        assert catalogue.comparable(committed) == catalogue.comparable(text), \
            f"{name} is out of date: run `course mistakes` and commit it"


def test_a_layer_that_does_not_attend_earns_no_check_about_attention(graded):
    """A weighted-attention layer that never looks at another position (out(value(x))), and the
    untouched stub, pass no check of the layer's attention; a shape alone carries no points. Only
    the parameter counts (the removal switch, which that layer does write) may pass.

    Both are read from the catalogue's grading (``graded``: the mistake "no-attention-at-all" and the
    stub, each graded exactly as `course grade` grades that part), with numpy's comparisons patched
    in the student's process, which can only make more checks pass, never fewer."""
    counts = {"test_parameter_counts", "test_parameter_counts_of_the_chapter_model",
              "test_parameter_counts_random_widths"}
    rows = {name: (kind, result) for _, kind, name, _, _, result in graded["projection_removal"]}
    for name, kind in (("no-attention-at-all", "mistake"), ("projection_removal-untouched", "stub")):
        assert rows[name][0] == kind, (name, rows[name][0])
        checks = rows[name][1]["checks"]
        passed = {c.name for c in checks if c.status == "passed"}
        assert passed - {"test_output_shape"} <= counts, (name, sorted(passed))
        assert not [c for c in checks if c.name == "test_output_shape" and c.weight], name
