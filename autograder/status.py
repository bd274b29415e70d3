"""What an instructor reads in the morning (``course status``) and one student's term
(``course history``), made from the records, their history, the gradebook and the last export."""

from __future__ import annotations

import csv
import dataclasses
import os
from typing import TYPE_CHECKING

from autograder import untrusted
from autograder.course import late, roster
from autograder.errors import CourseError, NoSubmissions
from autograder.export import totals
from autograder.grade import discovery, versions
from autograder.records import store
from autograder.report import terminal

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.records.results import Submission


def _total(record: Submission, hand: float) -> float:
    """What every export gives it: its parts' points and those added by hand, less its late penalty."""
    return round(record.score + hand - record.late_points, 3)


def _what_changed(old: Submission | None, new: Submission) -> str:
    if old is None:
        return "first graded"
    said = []
    if old.sha256 != new.sha256:
        said.append("notebook")
    if old.grader != new.grader:
        said.append("grader")
    if old.max_score != new.max_score:
        said.append(f"points {old.max_score:g} -> {new.max_score:g}")
    elif old.suites != new.suites:
        said.append("suites")
    if old.submitted_at != new.submitted_at:
        said.append("hand-in time")
    was, now = old.late, new.late
    # the penalty is a share of the points earned: a change of its points alone is theirs
    points_alone = ((dataclasses.replace(was, points=0.0) if was else None)
                    == (dataclasses.replace(now, points=0.0) if now else None))
    if ((old.by_hand or 0.0) != (new.by_hand or 0.0) and None not in (old.by_hand, new.by_hand)
            or was != now and points_alone and not said):
        said.append("hand grade")
    if was != now and not points_alone and old.submitted_at == new.submitted_at:
        said.append("due date, extension or late rule")
    return ", ".join(said) or "nothing (graded again)"


def _gradebook_here(course: Course, out: str) -> None:
    """Stop (CourseError) where course.yaml's db_url has left this folder's gradebook behind: what
    it would report of hand grades would be another, empty gradebook's."""
    from autograder.nbgrader import settings
    lost = settings.left_behind(course, out)
    if lost:
        raise CourseError(lost)


def history(course: Course, out: str, student: str) -> str:
    """Per assignment, each result the student had, oldest first: when, the total every export
    gave it (autograded and hand-graded points less the late penalty, of the assignment's points)
    and what changed."""
    from autograder.nbgrader import gradebook_rows
    _gradebook_here(course, out)
    try:
        scores = gradebook_rows.scores(course, out, student)
    except Exception:  # noqa: BLE001 - no gradebook yet: nothing graded by hand
        scores = {}
    lines = []
    for assignment in course.assignments:
        current = store.read_result(out, student, assignment.id)
        records = store.history(out, student, assignment.id) + ([current] if current else [])
        if not records:
            continue
        lines.append(f"{assignment.id}:")
        written = sum(assignment.written.values())
        previous: Submission | None = None
        for record in records:
            hand = record.by_hand
            if hand is None:          # never exported: what the gradebook adds now
                hand = totals.earned(record, scores.get(record.key)) - record.score if record is current else 0.0
            late_note = f" (late: -{record.late_points:g})" if record.late_points else ""
            regraded = previous is None or previous.graded_at != record.graded_at
            when = (record.graded_at if regraded else record.exported_at or record.graded_at) or "?"
            line = (f"  {untrusted.shown(when):<25} {_total(record, hand):>6g} / {record.max_score + written:<4g}"
                    f"{late_note}  {_what_changed(previous, record)}")
            if not lines or line != lines[-1]:
                lines.append(line)
            previous = record
    if not lines:
        raise NoSubmissions(f"{out} holds no results of {student}")
    return "\n".join(lines)


def _similar(out: str) -> list[str]:
    try:
        with open(os.path.join(out, "cohort_report.csv"), newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh) if r["section"] == "similarity"]
    except OSError:
        return []
    return [f"  {r['assignment']}: {r['item']} ({float(r['value']):.0%} of their own code alike)" for r in rows]


def to_confirm(record: Submission, held: dict) -> list[str]:
    """The hand grades of one hand-in a TA is to confirm in formgrader (``held``: its entry of
    :func:`autograder.nbgrader.gradebook_rows.scores`): an answer changed since it was graded, or a
    part set by hand whose autograded score changed. Every export counts the kept score meanwhile."""
    written = held.get("written", {})
    stale = [f"{cell} (kept: {w['score']:g} / {w['max_score']:g})" for cell, w in written.items() if w.get("stale")]
    return stale + [f"{p.part} set by hand (kept: {held['overrides'][p.part]:g}; the grader now gives {p.score:g})"
                    for p in record.parts if p.part in held.get("overrides_to_confirm", [])]


HASHES = ".sha256.json"      # in results/: each hand-in's sha256 by the version of its file


def hashes(out: str, paths: list[str]) -> dict[str, str]:
    """The sha256 of each notebook at ``paths`` that can be read, as grading reads it; one whose
    file has the version it had last time (device, inode, size and times: :func:`store.version`)
    is not read again (``results/.sha256.json``). The others of the cache are kept."""
    before = store.kept(out, HASHES)
    now = dict(before)
    for path in paths:
        seen = store.version(path)
        entry = before.get(path)
        if entry is None or entry[0] != seen:
            sha = versions.file_sha256(path)
            if sha is None:
                now.pop(path, None)
                continue
            entry = [seen, sha]
        now[path] = entry
    if now != before:
        store.keep(out, HASHES, now)
    return {path: sha for path, (_, sha) in now.items()}


def status(course: Course, out: str, submitted: str | None = None) -> str:
    """Hand-ins not graded yet, late ones, written answers not graded, hand grades whose answer
    changed since, grader errors, similarity flags and the totals the next export would change."""
    from autograder.nbgrader import gradebook_rows
    _gradebook_here(course, out)
    submitted = submitted or store.read_journal(out).get("submitted") or os.path.join(out, "submitted")
    records = store.load_summaries(out)
    by_key = {r.key: r for r in records}
    refused: list[tuple[str, str]] = []
    try:
        tasks = discovery.find_submissions(course, submitted, refused)
    except NoSubmissions:
        tasks = []
    grader = versions.grader_version()
    known = hashes(out, [t.path for t in tasks if t.key in by_key])
    suites = {a.id: versions.suite_versions(course, a.id) for a in course.assignments}
    ungraded = [f"  {t.student}/{t.assignment}: {why}" for t in tasks
                if (why := versions.stale(course, by_key.get(t.key), t.path, grader, known.get(t.path), suites))]
    try:
        scores = gradebook_rows.scores(course, out)
    except Exception:  # noqa: BLE001 - no gradebook yet: nothing graded by hand
        scores = {}
    records = [dataclasses.replace(r, late=late.of_record(course, r, totals.earned(r, scores.get(r.key))))
               for r in records]
    lates, unmarked, changed = [], [], []
    for record in sorted(records, key=lambda r: r.key):
        if record.late:
            lates.append(f"  {record.student}/{record.assignment}: {late.describe(record.late)}")
        written = scores.get(record.key, {}).get("written", {})
        todo = [cell for cell, w in written.items() if not w["graded"] and not w.get("stale")]
        if todo:
            unmarked.append(f"  {record.student}/{record.assignment}: {', '.join(todo)}")
        stale = to_confirm(record, scores.get(record.key, {}))
        if stale:
            changed.append(f"  {record.student}/{record.assignment}: {', '.join(stale)}")
    errors = [f"  {r.student}/{r.assignment}: {untrusted.shown(r.problem)}" for r in records if r.grader_error]
    try:
        strangers = roster.strangers(course, roster.load(course), {r.student for r in records} |
                                     {t.student for t in tasks})
    except CourseError as exc:
        strangers = [str(exc)]
    before = terminal.read_totals(os.path.join(out, "totals.csv"))
    now_totals = {}
    for row in totals.totals(course, records, scores):
        now_totals[row["student_id"]] = f"{row['total']:g}"
    pending = {s: t for s, t in now_totals.items() if before.get(s) != t}
    sections = [(f"hand-ins not graded yet ({submitted})", ungraded),
                (f"folders left out of grading ({submitted})",
                 [f"  {untrusted.shown(name)}: {untrusted.shown(why)}" for name, why in refused]),
                ("late hand-ins", lates),
                ("hand-ins with written answers not graded yet in formgrader", unmarked),
                ("hand-ins with hand grades to confirm in formgrader (the answer or the grader's score changed since)",
                 changed),
                ("grader errors", errors),
                ("ids the class does not have (an extension or roster line applies to no one)",
                 [f"  {untrusted.shown(line)}" for line in strangers]),
                ("similarity flags (cohort_report.html)", _similar(out)),
                ("totals the next `course export` changes",
                 [f"  {s}: {before.get(s, '-')} -> {t}" for s, t in sorted(pending.items())])]
    return "\n".join(f"{title}: {len(items) or 'none'}" + "".join("\n" + i for i in items)
                     for title, items in sections)

