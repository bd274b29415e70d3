"""Gradescope's autograder ``results.json``, one per submission: a test per graded part and per
hand-graded answer."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from autograder.course import late
from autograder.export import made_from
from autograder.export.outputs import Export, Output
from autograder.export.totals import scored
from autograder.records import store

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.records.results import PartResult, Submission


def part_output(part: PartResult) -> str:
    """A part's reason, then one line per check (and its message when it failed)."""
    lines = [part.reason]
    for check in part.checks:
        mark = "ok  " if check.status == "passed" else "FAIL"
        lines.append(f"{mark} [{check.visibility}] {check.doc}")
        if check.status != "passed":
            lines.append(f"     {check.said}")
    return "\n".join(lines)


def _test(name, number, score, top, output, tags, graded=True):
    """One Gradescope test. Its ``status`` knows only passed and failed: full marks pass, a 0
    fails, and partial credit (or anything not graded yet) has no status, so Gradescope shows
    the score itself and the output says which it is."""
    test = {"name": name, "number": number, "score": score, "max_score": top, "output": output,
            "visibility": "visible", "tags": tags}
    if graded and score >= top:
        test["status"] = "passed"
    elif graded and score <= 0:
        test["status"] = "failed"
    elif graded:
        test["output"] = f"partial credit: {score:g} of {top:g}\n{output}"
    return test


def gradescope(record: Submission, course: Course | None = None, written: Mapping | None = None,
               overrides: Mapping[str, float] | None = None) -> dict:
    """A Gradescope autograder ``results.json`` for one submission.

    One test per graded part (its score, partial credit included) and one per
    hand-graded answer (from the gradebook; 0 until graded), and the late penalty's negative
    points when it took any (a hand-in within the grace only says so in ``output``); ``score``
    is their sum.
    """
    titles = {} if course is None else \
        {given.id: given.title for given in course.assignment(record.assignment).parts}
    tests = []
    for part in record.parts:
        output = part_output(part)
        if part.part in (overrides or {}):
            output = f"score set by hand in formgrader (the grader gave {part.score:g})\n{output}"
        tests.append(_test(f"{part.part}: {titles.get(part.part, part.part)}", part.part,
                           scored(part, overrides), part.max_score, output,
                           [record.assignment, part.status], graded=part.graded))
    for cell, grade in (written or {}).items():
        comment = f": {grade['comment']}" if grade.get("comment") else ""
        said = ("graded by hand in formgrader" + comment if grade["graded"] else
                "graded by hand for an earlier answer, to be confirmed" + comment if grade.get("stale")
                else "not graded yet")
        tests.append(_test(f"{cell} (graded by hand)", cell, grade["score"], grade["max_score"], said,
                           [record.assignment, "written"], graded=grade["graded"]))
    if record.late_points:      # within the grace a hand-in loses nothing: no test of 0 points
        tests.append({"name": "late penalty", "number": "late", "score": -record.late_points, "max_score": 0,
                      "output": late.describe(record.late), "visibility": "visible",
                      "tags": [record.assignment, "late"]})
    output = (f"Could not be graded: {record.problem}" if record.problem
              else f"{record.assignment}: graded by the course's hidden and public suites")
    if record.late and not record.late_points:
        output += f"\n{late.describe(record.late)}"
    return {"score": round(sum(t["score"] for t in tests), 3), "output": output,
            "visibility": "visible", "stdout_visibility": "hidden",
            "execution_time": round(record.seconds if record.seconds is not None
                                    else sum(p.seconds for p in record.parts), 2),
            "tests": tests,
            "extra_data": {"student": record.student, "assignment": record.assignment,
                           "sha256": record.sha256, "grader": record.grader,
                           "suites": record.suites}}


# what makes a results.json, below autograder/: this file, the scores it sums, the late rule's
# words, the record it reads and the words of its failed checks
_MADE_BY = ("export/gradescope.py", "export/totals.py", "course/late.py", "records/results.py", "export/made_from.py",
            "../selfcheck/causes.py")


def write_gradescope(out: str, course: Course, records: Iterable[Submission], gradebook: Mapping | None = None,
                     on_disk: bool = False) -> str:
    """gradescope/<student>/<assignment>/results.json for each record; one whose record, gradebook
    entry and making code are what it was made from is left as it is (``gradescope/.made_from.json``),
    so an export after one student's regrade writes that student's files alone. ``on_disk``: each
    record is as its results file holds it."""
    folder = os.path.join(out, "gradescope")
    kept = made_from.Kept(folder, made_from.made_by(_MADE_BY, course))
    for record in records:
        nbgrader = (gradebook or {}).get((record.student, record.assignment), {})
        path = os.path.join(folder, record.student, record.assignment, "results.json")
        if not kept.stale(out, record, nbgrader, path, on_disk):
            continue
        text = json.dumps(gradescope(record, course, nbgrader.get("written"), nbgrader.get("overrides")), indent=1)
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == text:       # unchanged: its time still says when it last changed
                    continue
        except OSError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with store.replacing(path, encoding="utf-8") as fh:
            fh.write(text)
    kept.save()
    return folder


EXPORT = Export("gradescope", (
    Output("gradescope", "gradescope/<student>/<assignment>/results.json", "",
               "the Gradescope autograder format: one test per graded part and per hand-graded answer"),
    Output("", f"gradescope/{made_from.NAME}", "",
               "what each results.json was made from, as a hash: an export writes again only those whose record, "
               "hand grades or making code changed; safe to delete (every file is then written again)"),
), lambda i: write_gradescope(i.out, i.course, i.records, i.gradebook, on_disk=True), order=30)
