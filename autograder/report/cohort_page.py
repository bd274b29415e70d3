"""The instructor's morning-after page, cohort_report.html: a Report (:mod:`.cohort_analysis`)
drawn, with its pictures, and the side-by-side view of hand-ins flagged as similar.

One self-contained page (no scripts, its pictures inline SVG drawn from :mod:`.histograms`; the
markup is ``templates/cohort.html``); ``cohort_report.csv`` beside it holds every number it shows.
"""

from __future__ import annotations

import datetime
import os
import statistics
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from autograder.export.outputs import Export, Output
from autograder.records import store
from autograder.report import histograms, pages, similarity
from autograder.report.cohort_analysis import (CSV, TOP_CHECKS, Report, analyse, counts, group_row, pair_row,
                                                write_rows)
from selfcheck.wire import clean_text

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.records.results import Submission

HTML = "cohort_report.html"
CONTEXT = 2             # lines shown around the matching lines of two similar hand-ins


# --- what the page shows ------------------------------------------------------------------------

def _key(row):
    """The row's name on the page (``data-row``), which its CSV row also gives."""
    return "/".join(str(row[k]) for k in ("section", "assignment", "part", "item"))


def _excerpt(doc: similarity.Document, cell: str, marked: Collection[tuple]) -> list[tuple[str, bool]]:
    """(line, marked) of a cell of ``doc`` as compared: its ``marked`` lines with CONTEXT lines
    around them, a gap shown as a line of its own."""
    near = {n + d for c, n in marked if c == cell for d in range(-CONTEXT, CONTEXT + 1)}
    body: list[tuple[str, bool]] = []
    gap = False
    for n in sorted(n for c, n in doc.lines if c == cell):
        if n not in near:
            gap = True
            continue
        if gap and body:
            body.append(("\u22ef", False))
        gap = False
        body.append((clean_text(doc.lines[cell, n], 300), (cell, n) in marked))
    if gap:
        body.append(("\u22ef", False))
    return body


def _side_by_side(pair):
    """The two hand-ins' cells that hold a shared passage, matching lines marked."""
    return [{"student": doc.key[0], "cells": [{"name": cell, "lines": _excerpt(doc, cell, marked)}
                                              for cell in sorted({cell for cell, _ in marked})]}
            for doc, marked in zip((pair.a, pair.b), pair.matching_lines())]


def _times(rows: Sequence[dict]) -> dict | None:
    if not rows:
        return None
    seconds = [r["value"] for r in rows]
    return {"median": statistics.median(seconds), "mean": statistics.mean(seconds), "slowest": max(seconds),
            "count": len(seconds), "picture": histograms.seconds(seconds),
            "rows": sorted(rows, key=lambda r: -r["value"])[:5]}


def _groups(report):
    """Every flagged group, each pair with its side-by-side view; the first pair shown open."""
    found = []
    for assignment, groups in report.groups.items():
        for group in groups:
            pairs = [{"a": pair.a.key[0], "b": pair.b.key[0], "shared": len(pair.shared),
                      "row": pair_row(assignment, pair), "columns": _side_by_side(pair), "open": False}
                     for pair in group.pairs]
            found.append({"assignment": assignment, "row": group_row(assignment, group), "pairs": pairs})
    if found:
        found[0]["pairs"][0]["open"] = True
    return found


def page(course: Course, report: Report) -> str:
    """The HTML page of a Report: self-contained, no scripts."""
    pictures = [{"assignment": assignment,
                 "histograms": [(part, histograms.scores(part, top, counts(values, top)))
                                for part, (top, values) in scores.items()],
                 "rows": [r for r in report.section("score") if r["assignment"] == assignment]}
                for assignment, scores in report.scores.items()]
    mistakes = sorted(report.section("mistake"), key=lambda r: (-r["students"], r["assignment"], r["part"], r["item"]))
    return pages.render(
        "cohort.html", course=course, report=report, csv=CSV, row_key=_key,
        total=sum(report.cohort.values()), made=f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}",
        pictures=pictures, mistakes=mistakes, checks=report.section("check"), top_checks=TOP_CHECKS,
        not_graded=report.section("not graded"), late=report.section("late"), times=_times(report.section("time")),
        unread=report.section("not compared"), groups=_groups(report),
        common_share=f"{similarity.COMMON_SHARE:.0%}", common_at_least=similarity.COMMON_AT_LEAST)


def write(course: Course, out: str, records: Collection[Submission], submitted: str | None = None,
          gradebook: Mapping | None = None) -> str:
    """Write cohort_report.html and cohort_report.csv into ``out``; returns the page's path.

    The submissions are read from ``submitted``, else from where the last batch read them;
    ``gradebook`` adds the scores set by hand in formgrader."""
    submitted = submitted or store.read_journal(out).get("submitted") or os.path.join(out, "submitted")
    report = analyse(course, records, submitted if os.path.isdir(submitted) else None, gradebook, out)
    write_rows(out, report)
    path = os.path.join(out, HTML)
    with store.replacing(path, encoding="utf-8", errors="replace") as fh:
        fh.write(page(course, report))
    return path


EXPORT = Export("report", (
    Output("report", "cohort_report.html", "the cohort's mistakes and similarity flags",
               "the cohort report for the instructor: score histograms, mistakes, hardest checks, not graded, "
               "time, similarity"),
    Output("", "cohort_report.csv", "",
               "every number the cohort report shows, one row each "
               "(`section,assignment,part,item,students,share,value,detail`)"),
    Output("", "results/.similarity/<assignment>/<hash>.json", "",
               "each hand-in's code as the similarity flags compare it, read once (named by the notebook's, the "
               "release's and the reading code's hashes), the known ways' too; beside them `.files.json`, the "
               "version of each notebook file read (not read again while unchanged), and `.compared.json`, "
               "the pairs the last comparison flagged (compared again only when a notebook changed); safe to delete"),
), lambda i: write(i.course, i.out, i.records, gradebook=i.gradebook), order=70)
