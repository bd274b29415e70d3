"""The result record: one typed shape, written and read back unchanged, and results written by
the previous grader (no version, no ``mistake``) still load, as course folders hold them."""

import json

import pytest

from autograder.records import store
from autograder.records.results import VERSION, Check, PartResult, Submission

# a results/<student>/<assignment>.json as the grader before typed records wrote it
VERSION_1 = {
    "student": "ann", "assignment": "attention", "notebook": "attention.ipynb", "grader": "0123abcd",
    "problem": None, "sha256": "f" * 64,
    "parts": [{"part": "softmax", "score": 2.0, "max_score": 4, "status": "partial",
               "reason": "1 of 2 checks did not pass; first: x", "suite": "abc", "seconds": 1.5,
               "checks": [{"name": "test_a", "doc": "a", "visibility": "public", "weight": 1,
                           "status": "passed", "message": ""},
                          {"name": "test_b", "doc": "b", "visibility": "hidden", "weight": 1,
                           "status": "failed", "message": "b: got 3"}]}],
    "suites": {"softmax": "v1"}, "graded_at": "2026-11-30T10:00:00+00:00", "seconds": 2.0}


def test_a_record_of_the_previous_format_loads():
    record = Submission.from_json(VERSION_1)
    assert record.key == ("ann", "attention") and record.score == 2.0 and record.max_score == 4
    part, = record.parts
    assert [c.status for c in part.checks] == ["passed", "failed"]
    assert all(c.mistake is None for c in part.checks)


def test_a_record_round_trips_through_json_with_its_version():
    record = Submission("bo", "attention", "attention.ipynb", parts=[
        PartResult("softmax", 4.0, 4, "failed", "r", [Check("t", "d", "public", 2, "failed", "m", "no-max-shift")])])
    data = json.loads(json.dumps(record.to_json()))
    assert data["version"] == VERSION
    assert Submission.from_json(data) == record


def test_results_files_of_both_formats_are_read_and_anything_else_is_skipped(tmp_path):
    (tmp_path / "results" / "ann").mkdir(parents=True)
    (tmp_path / "results" / "ann" / "attention.json").write_text(json.dumps(VERSION_1))
    (tmp_path / "results" / "ann" / "other.json").write_text('{"not": "a record"}')
    store.write_result(str(tmp_path), Submission("bo", "attention", "attention.ipynb"))
    assert [r.student for r in store.load_results(str(tmp_path))] == ["ann", "bo"]


@pytest.mark.parametrize("data", [[], {"student": "x"}, {"student": "x", "assignment": "a", "notebook": "n",
                                                         "parts": [{"part": "p"}]}])
def test_what_is_not_a_record_is_a_value_error(data):
    with pytest.raises(ValueError, match="not a result record"):
        Submission.from_json(data)


def test_a_record_of_an_earlier_version_was_exported_when_graded():
    """Up to version 3 a record had no export time: every batch exported as it ended."""
    record = Submission.from_json({**VERSION_1, "version": 3})
    assert record.exported_at == VERSION_1["graded_at"] and record.by_hand is None
    fresh = Submission("bo", "attention", "attention.ipynb", graded_at="2026-12-01T00:00:00+00:00")
    assert Submission.from_json(fresh.to_json()).exported_at is None
