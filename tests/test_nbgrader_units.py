"""The course's nbgrader preprocessors on tiny in-memory notebooks, as nbgrader tests its own:
restoring a deleted test cell (RestoreCells) and writing the grader's verdicts into test cells
(ApplyResults). No gradebook, no kernel, no course folder."""

import types

import pytest

from autograder import store
from autograder.results import Submission

# slow only in that importing nbgrader costs seconds of CPU, which alone would take `make check`
# past its 30 seconds on a busy machine (so it is imported in the tests, not when collecting);
# run them with `pytest tests/test_nbgrader_units.py`
pytestmark = pytest.mark.slow


def _cell(gid, code="", **nbgrader):
    from nbformat.v4 import new_code_cell
    return new_code_cell(code, metadata={"nbgrader": {"grade_id": gid, "grade": False, "solution": False,
                                                      "locked": False, **nbgrader}})


def _ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def _source(name, source="check('x')"):
    return types.SimpleNamespace(name=name, cell_type="code", locked=True, checksum="c", source=source)


def test_a_deleted_check_cell_comes_back_after_the_nearest_earlier_cell_the_submission_has():
    from nbformat.v4 import new_notebook

    from autograder.nbgrader_cells import RestoreCells
    order = ["imports", "softmax", "show_table", "check_softmax", "causal_mask", "check_causal_mask"]
    source_nb = types.SimpleNamespace(source_cells=[_source(n) for n in order],
                                      grade_cells=[types.SimpleNamespace(name=n, max_score=4)
                                                   for n in ("check_softmax", "check_causal_mask")],
                                      solution_cells=[types.SimpleNamespace(name=n)
                                                      for n in ("softmax", "causal_mask")])
    restore = RestoreCells()
    restore.gradebook = types.SimpleNamespace(find_notebook=lambda notebook, assignment: source_nb)
    restore.notebook_id, restore.assignment_id = "attention", "attention"
    # the student deleted both check cells and the locked show_ cell before the first
    nb = new_notebook(cells=[_cell("imports"), _cell("softmax", solution=True), _cell("causal_mask", solution=True)])
    nb, _ = restore.add_missing_grade_cells(nb, {})
    assert _ids(nb) == ["imports", "softmax", "check_softmax", "causal_mask", "check_causal_mask"]
    restored = nb.cells[2]
    assert restored.metadata["nbgrader"]["points"] == 4 and restored.metadata["nbgrader"]["grade"]
    assert restored["id"] == "restored-check_softmax"


def _record(student):
    check = {"name": "t", "doc": "sums to one", "visibility": "hidden", "weight": 1, "status": "failed",
             "message": "sums to one: got 2"}
    return {"student": student, "assignment": "attention", "notebook": "attention.ipynb", "problem": None,
            "parts": [{"part": "softmax", "score": 2.5, "max_score": 4, "status": "partial",
                       "reason": "1 of 2 checks did not pass", "checks": [dict(check, status="passed"), check]}]}


def test_each_test_cell_gets_its_part_s_verdict_and_a_part_without_one_scores_zero(tmp_path):
    import nbformat
    from nbformat.v4 import new_notebook

    from autograder.nbgrader_bridge import ApplyResults
    store.write_result(str(tmp_path), Submission.from_json(_record("ann")))
    nb = new_notebook(cells=[_cell("softmax", "def softmax(z): ...", solution=True),
                             _cell("check_softmax", "check('softmax')", grade=True, points=4),
                             _cell("check_causal_mask", "check('causal_mask')", grade=True, points=4)])
    apply = ApplyResults(results_dir=str(tmp_path / "results"))
    nb, _ = apply.preprocess(nb, {"nbgrader": {"student": "ann", "assignment": "attention",
                                               "notebook": "attention"}})
    solution, graded, ungraded = nb.cells
    assert solution.get("outputs") == []
    stream, result = graded.outputs
    assert result.output_type == "execute_result" and result.data["text/plain"] == "2.5"
    assert stream.text.startswith("softmax: 2.5 / 4 (partial)")
    assert "FAIL [hidden] sums to one" in stream.text and "ok   [hidden] sums to one" in stream.text
    assert [o.output_type for o in ungraded.outputs] == ["error"]
    nbformat.validate(nb)
