"""The student's feedback page for one submission: each part's score, and for every failed check
what was checked, what came back, the likely mistake and how to run it again.

Made from the result record alone (and the gradebook's hand-graded answers, with the student's
own written answers): no hidden test source and no hidden expected value can reach a student
through it, because neither is in a record. The markup is ``templates/feedback.html``; this module only chooses what it shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from autograder.export import made_from
from autograder.export.outputs import Export, Output
from autograder.course import late
from autograder.export.totals import scored
from autograder.records import store
from autograder.report import pages

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.records.results import Check, PartResult, Submission

def _colour(score, top):
    if top and score >= top - 1e-9:
        return "var(--ok)"
    return "var(--mid)" if score > 1e-9 else "var(--bad)"


def _failed(check: Check) -> dict:
    """A failed check as the page shows it: what came back (without the check's own name in front)
    and the likely mistake, each from its own field of the record."""
    came_back = check.message.strip()
    if came_back.startswith(check.doc + ":"):
        came_back = came_back[len(check.doc) + 1:].strip()
    return {"check": check, "came_back": came_back, "mistake": f"{check.diagnosis}." if check.diagnosis else ""}


def _part(part: PartResult, title: str, overrides: Mapping[str, float]) -> dict:
    score = scored(part, overrides)
    points = f"{score:g} / {part.max_score:g}" + (" (set by hand)" if part.part in overrides else "")
    status = part.status
    if part.part in overrides:      # the instructor's score decides its badge, not the grader's verdict
        status = "passed" if score >= part.max_score - 1e-9 else ("failed" if score <= 1e-9 else "partial")
    failing = [c for c in part.checks if c.status != "passed"]
    return {"id": part.part, "title": title, "status": status, "reason": part.reason, "points": points,
            "checks": part.checks, "failing": [_failed(c) for c in failing],
            "failing_public": [c for c in failing if c.visibility == "public"],
            "passed": [c for c in part.checks if c.status == "passed"], "test_file": f"test_{part.part}.py"}


def feedback_page(record: Submission, course: Course | None = None, written: Mapping | None = None,
                  overrides: Mapping[str, float] | None = None) -> str:
    """One self-contained HTML page (no network, no scripts, no external assets) for one submission.

    It leads with the total every export gives (autograded and hand-graded points less the late
    penalty, of the assignment's points), then says what it is made of.
    ``written`` (grade id -> {"score", "max_score", "graded", "stale", "comment"}) adds the hand-graded
    answers, each with its score (or "not graded yet", or the score given to an earlier answer,
    to be confirmed) and the TA's comment, and with ``answer`` (safe HTML:
    :mod:`autograder.nbgrader.answers`) the answer itself; the record's late penalty is said above
    the parts;
    ``overrides`` (part -> score) the parts' scores an instructor set in formgrader.
    """
    overrides = overrides or {}
    titles = {}
    if course is not None:
        titles = {p.id: p.title for p in course.assignment(record.assignment).parts}
    auto, auto_max = sum(scored(p, overrides) for p in record.parts), record.max_score
    by_hand = None
    hand_max = sum(course.assignment(record.assignment).written.values()) if course is not None else 0.0
    if written:
        hand_max = sum(w["max_score"] for w in written.values())
        done = [w for w in written.values() if w["graded"]]
        by_hand = {"score": sum(w["score"] for w in written.values()),       # as every export sums them
                   "all_graded": len(done) == len(written), "any_graded": bool(done) or any(
                       w.get("stale") for w in written.values()), "max_score": hand_max,
                   "unmarked": any(not w["graded"] and not w.get("stale") for w in written.values()),
                   "answers": [{"cell": cell, **w, "stale": w.get("stale", False), "comment": w.get("comment") or "",
                                "answer": w.get("answer") or ""}
                               for cell, w in written.items()]}
    elif hand_max:
        by_hand = {"score": 0.0, "all_graded": False, "any_graded": False, "max_score": hand_max, "answers": [],
                   "unmarked": True}
    # the total every export gives: autograded and hand-graded points, less the late penalty
    total = round(auto + (by_hand["score"] if by_hand else 0.0) - record.late_points, 3)
    possible = auto_max + hand_max
    return pages.render("feedback.html", record=record, total=total, possible=possible, auto=auto,
                        auto_max=auto_max, percent=100 * max(total, 0.0) / possible if possible else 0,
                        colour=_colour(total, possible), written=by_hand, late=late.describe(record.late),
                        parts=[_part(p, titles.get(p.part, ""), overrides) for p in record.parts])


# what draws a page, below autograder/: its code, its templates and stylesheet, the written
# answers' reading and sanitising, the record it reads and the late rule's words
_DRAWN_BY = tuple(os.path.join(*p) for p in (
    ("report", "feedback.py"), ("report", "pages.py"), ("export", "totals.py"), ("report", "templates", "*"),
    ("nbgrader", "answers.py"), ("nbgrader", "preprocessors", "sanitizemarkdown.py"), ("records", "results.py"),
    ("course", "late.py"), ("export", "made_from.py"), ("..", "selfcheck", "causes.py")))


def write_feedback(out: str, records: Iterable[Submission], course: Course | None = None,
                   gradebook: Mapping | None = None,
                   add_answers: Callable[[list[tuple[str, str]]], None] | None = None, on_disk: bool = False) -> str:
    """reports/<student>/<assignment>.html under ``out`` for each record; returns the folder.

    A page whose record, gradebook entry, autograded notebook and drawing code are what it was
    made from is left as it is (``reports/.made_from.json``): an export after one student's
    regrade draws that student's pages alone. ``add_answers(keys)`` puts the written answers of
    the pages drawn into their gradebook entries first (:func:`autograder.nbgrader.answers.add_answers`);
    ``on_disk``: each record is as its results file holds it."""
    folder = os.path.join(out, "reports")
    gradebook = gradebook or {}
    kept, todo = made_from.Kept(folder, made_from.made_by(_DRAWN_BY, course)), []
    for record in records:
        notebook = None     # the autograded notebook its written answers come from
        if course is not None:
            notebook = store.version(os.path.join(out, "autograded", record.student, record.assignment,
                                                           course.assignment(record.assignment).notebook))
        page = os.path.join(folder, record.student, f"{record.assignment}.html")
        if kept.stale(out, record, gradebook.get(record.key, {}), page, on_disk, notebook):
            todo.append(record)
    if add_answers and todo:
        add_answers([record.key for record in todo])
    for record in todo:
        nbgrader = gradebook.get(record.key, {})
        path = os.path.join(folder, record.student, f"{record.assignment}.html")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with store.replacing(path, encoding="utf-8", errors="replace") as fh:
            fh.write(feedback_page(record, course, nbgrader.get("written"), nbgrader.get("overrides")))
    kept.save()
    return folder


EXPORT = Export("feedback", (
    Output("feedback", "reports/<student>/<assignment>.html", "",
               "one self-contained page per student and assignment: scores, what each failing check tested, "
               "the likely mistake, late penalty and hand grades; never hidden test source"),
    Output("", f"reports/{made_from.NAME}", "",
               "what each feedback page was drawn from, as a hash: an export draws again only the pages whose "
               "record, hand grades or drawing code changed; safe to delete (every page is then drawn again)"),
), lambda i: write_feedback(i.out, i.records, i.course, i.gradebook, i.add_answers, on_disk=True), order=60)
