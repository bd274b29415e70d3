"""What a grading run prints: the table of scores, the summary of a batch, the regrade's diff.

Everything the ``course`` command prints is shown as text (:func:`autograder.untrusted.guarded`);
a student's reason, one line of the summary, also shows its newlines (:func:`autograder.untrusted.shown`)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from autograder.untrusted import shown

if TYPE_CHECKING:
    from autograder.grade.grading import Batch
    from autograder.records.results import PartResult, Submission


def table(records: Sequence[Submission], order: Sequence[str] = ()) -> str:
    """Students down, parts across (in ``order``, course.yaml's, then as met): score/max and a short status."""
    parts = list(order)
    for record in records:
        for part in record.parts:
            if part.part not in parts:
                parts.append(part.part)
    cells = {}
    for record in records:
        for part in record.parts:
            mark = "" if part.status == "passed" else f" {part.status}"
            cells[record.student, part.part] = f"{part.score:g}/{part.max_score:g}{mark}"
    parts = [p for p in parts if any(key[1] == p for key in cells)]
    students = sorted({r.student for r in records})
    width = max(len("student"), *(len(s) for s in students))
    widths = [max(len(p), *(len(cells.get((s, p), "-")) for s in students)) for p in parts]
    lines = ["  ".join(["student".ljust(width)] + [p.ljust(w) for p, w in zip(parts, widths)])]
    lines.append("  ".join(["-" * width] + ["-" * w for w in widths]))
    for s in students:
        lines.append("  ".join([s.ljust(width)] + [cells.get((s, p), "-").ljust(w)
                                                   for p, w in zip(parts, widths)]))
    return "\n".join(line.rstrip() for line in lines)


# --- the end of a batch: what happened, and what a regrade changed ---------------------------

def _fraction_bucket(score, top):
    if top <= 0:
        return "full"
    if score >= top - 1e-9:
        return "full"
    if score <= 1e-9:
        return "zero"
    return "under half" if score < top / 2 else "half or more"


def summary(batch: Batch | Sequence[Submission]) -> str:
    """Graded, kept, failed to grade (with reasons), and the score distribution per part."""
    records = list(batch)
    graded, skipped = len(getattr(batch, "graded", records)), len(getattr(batch, "skipped", []))
    failed = [r for r in records if r.problem]
    ours = [r for r in failed if r.grader_error]
    lines = [f"graded now: {graded}   kept (unchanged since graded): {skipped}   "
             f"could not be graded: {len(failed)}"
             + (f" ({len(ours)} by a failure of the grader: nothing recorded for them; the next "
                "`course grade` grades them again)" if ours else "")]
    for name, why in getattr(batch, "refused", []):
        lines.append(f"  - folder {name!r} left out: {shown(why)}")
    for line in getattr(batch, "left_out", []):
        lines.append(f"  - left out of {shown(line)} (not a regular file of the release)")
    lines += [f"note: {note}" for note in getattr(batch, "notes", [])]
    if getattr(batch, "interrupted", False):
        lines.append(f"INTERRUPTED: {len(getattr(batch, 'pending', []))} submission(s) not graded yet; "
                     "run the same command with --resume to finish")
    for r in sorted(failed, key=lambda r: r.key):         # one line each: a newline in it is shown too
        lines.append(f"  - {r.student}/{r.assignment}: {shown(r.problem)}")
    odd = [(r, p) for r in records if not r.problem for p in r.parts
           if p.status in ("timeout", "error", "missing")]
    if odd:
        lines.append(f"parts that did not run normally ({len(odd)}; reasons in parts.csv):")
        for r, p in sorted(odd, key=lambda rp: (rp[0].student, rp[1].part))[:40]:
            reason = shown(p.reason)
            reason = reason if len(reason) <= 110 else reason[:107] + "..."
            lines.append(f"  - {r.student}/{p.part}: {p.status}: {reason}")
        if len(odd) > 40:
            lines.append(f"  ... and {len(odd) - 40} more")
    by_part: dict[tuple[str, str], list[PartResult]] = {}
    for r in records:
        for p in r.parts:
            by_part.setdefault((r.assignment, p.part), []).append(p)
    if by_part:
        buckets = ("zero", "under half", "half or more", "full")
        lines.append("score distribution per part:")
        head = f"  {'assignment/part':<32} {'n':>4} {'mean':>6} {'median':>6} {'max':>5}  " + \
               "  ".join(f"{b:>12}" for b in buckets)
        lines.append(head)
        for (aid, pid), parts in by_part.items():
            scores = [p.score for p in parts]
            top = max(p.max_score for p in parts)
            counts = {b: 0 for b in buckets}
            for p in parts:
                counts[_fraction_bucket(p.score, p.max_score)] += 1
            lines.append(f"  {aid + '/' + pid:<32} {len(parts):>4} {statistics.mean(scores):>6.2f} "
                         f"{statistics.median(scores):>6.2f} {top:>5g}  "
                         + "  ".join(f"{counts[b]:>12}" for b in buckets))
    return "\n".join(lines)


def changes(previous: Mapping[tuple, Submission], records: Iterable[Submission]) -> list[tuple]:
    """(student, assignment, part, old score or None, new score) for every part of ``records``."""
    rows_ = []
    for r in sorted(records, key=lambda r: r.key):
        old = previous.get(r.key)
        old_parts = {p.part: p.score for p in old.parts} if old else {}
        for p in r.parts:
            rows_.append((r.student, r.assignment, p.part, old_parts.get(p.part), p.score))
    return rows_


def diff_table(rows_: Sequence[tuple], everything: bool = False) -> str:
    """Old and new scores per student and part; only the changed ones unless ``everything``."""
    shown = [row for row in rows_ if everything or row[3] is None or abs(row[3] - row[4]) > 1e-9]
    if not shown:
        return f"no score changed ({len(rows_)} part scores compared)"
    width = max(len("student"), *(len(r[0]) for r in shown))
    lines = [f"{'student':<{width}}  {'assignment/part':<32} {'old':>7} {'new':>7}  change",
             f"{'-' * width}  {'-' * 32} {'-' * 7} {'-' * 7}  ------"]
    for student, aid, pid, old, new in shown:
        change = "new" if old is None else ("same" if abs(old - new) <= 1e-9 else f"{new - old:+g}")
        lines.append(f"{student:<{width}}  {aid + '/' + pid:<32} "
                     f"{'-' if old is None else f'{old:g}':>7} {new:>7g}  {change}")
    changed = sum(1 for r in rows_ if r[3] is not None and abs(r[3] - r[4]) > 1e-9)
    lines.append(f"{changed} of {len(rows_)} part scores changed")
    return "\n".join(lines)


def read_totals(path: str) -> dict[str, str]:
    """student -> total, from a totals.csv (empty when there is none yet)."""
    import csv
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return {row["student_id"]: row["total"] for row in csv.DictReader(fh)}
    except (OSError, KeyError):
        return {}


def totals_diff(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """The students whose total in totals.csv changed, old and new; those alone."""
    changed = sorted(s for s in set(old) | set(new) if old.get(s) != new.get(s))
    if not changed:
        return f"no total changed ({len(new)} students)"
    width = max(len("student"), *(len(s) for s in changed))
    lines = [f"{'student':<{width}}  {'old total':>9}  {'new total':>9}", f"{'-' * width}  {'-' * 9}  {'-' * 9}"]
    lines += [f"{s:<{width}}  {old.get(s, '-'):>9}  {new.get(s, '-'):>9}" for s in changed]
    lines.append(f"{len(changed)} of {len(new)} totals changed")
    return "\n".join(lines)
