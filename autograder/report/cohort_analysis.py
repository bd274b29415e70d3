"""The cohort report's numbers: what the cohort got wrong, who could not be graded, what looks copied.

``course report [DIR]`` (and every ``course grade``/``course export``) writes
``cohort_report.csv``, every number of the page (:mod:`autograder.report.cohort_page`) one row
each. Everything is made from the result records: mistakes are counted by the id
the failing checks recorded with their diagnosis (``PartResult.diagnosis``), never by reading messages; similarity reads the
submitted notebooks themselves, the code of each that grading runs (autograder/report/similarity.py).
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import json
import multiprocessing
import os
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autograder.course import late
from autograder.export.totals import scored
from autograder.grade import handin, submission
from autograder.mistakes import cohort
from autograder.records.results import GRADER_ERROR
from autograder.report import similarity
from autograder.report.similarity_cache import LEFT_OUT, Cache
from autograder.untrusted import write_csv
from selfcheck.program import NotebookError, parse_notebook, read_notebook
from selfcheck.wire import clean_text

if TYPE_CHECKING:
    from autograder.course.config import Assignment, Course
    from autograder.records.results import Submission

CSV = "cohort_report.csv"
COLUMNS = ("section", "assignment", "part", "item", "students", "share", "value", "detail")
NOT_GRADED = ("error", "timeout", "missing", GRADER_ERROR)
READ_APART = 200         # notebooks to fingerprint from which each core takes a share
BINS = 8                # histogram bars per part: eighths of its points
TOP_CHECKS = 15


@dataclass
class Report:
    """Every number of the page, as the CSV's rows (dicts of COLUMNS), plus what only the page draws."""
    rows: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)        # assignment -> {part: (its points, [scores])}, drawn as histograms
    groups: dict = field(default_factory=dict)        # assignment -> [similarity.Group]
    cohort: dict = field(default_factory=dict)        # assignment -> number of submissions

    def section(self, name: str) -> list[dict]:
        return [r for r in self.rows if r["section"] == name]


def _row(section, assignment, part, item, students="", share="", value="", detail=""):
    return {"section": section, "assignment": assignment, "part": part, "item": item,
            "students": students, "share": share, "value": value, "detail": detail}


def _share(n, total):
    return round(n / total, 3) if total else 0.0


def _labels(top):
    """The histogram's bars, as score ranges; the last one holds full marks."""
    width = top / BINS if top else 1
    return [f"{i * width:g}-{(i + 1) * width:g}" for i in range(BINS)]


def counts(values: Iterable[float], top: float) -> list[int]:
    """How many of ``values`` fall in each bar."""
    found = [0] * BINS
    for v in values:
        found[min(BINS - 1, int(v / top * BINS)) if top else 0] += 1
    return found


def reader(spec: Assignment, release: dict, every: bool = False) -> Callable[[tuple, dict], similarity.Document]:
    """A function (key, notebook) -> the similarity.Document of what grading runs of that
    notebook of assignment ``spec`` (``release`` its released notebook); ``every``: with every
    k-gram, as known code is read."""
    given = similarity.given_lines(release)
    cells = [cell for part in spec.parts for cell in part.cells]
    return lambda key, nb: similarity.document(key, similarity.graded_code(nb, release, cells), given, every)


def submitted_documents(spec: Assignment, students: Iterable[str], submitted: str,
                        release: dict, cache: Cache | None = None,
                        staged: str | None = None) -> list[similarity.Document]:
    """similarity.Documents of each student's hand-in of assignment ``spec`` under ``submitted``,
    read as grading reads it; a hand-in grading could not read is left out (the not-graded table
    says why), one the comparison cannot read says so. A hand-in graded from another folder than
    ``submitted`` (a late one graded from its own) is read from ``staged``, the copy the grading
    folder keeps for nbgrader. Each notebook ``cache`` has read before is not read again."""
    found: list[similarity.Document | str | None] = []
    pending: list[tuple[int, tuple, bytes]] = []        # (index in found, key, notebook) to fingerprint
    for student in students:
        key = (student, spec.id)
        path = _path(spec, student, submitted, staged)
        doc = cache.known(path, key) if cache else None      # a notebook unchanged since: not read
        if doc is None:
            try:
                raw = cache.read(path) if cache else handin.read_submission(path)
            except (NotebookError, OSError):
                if cache:
                    cache.seen(path, None)
                continue
            if cache:
                cache.seen(path, raw)
            doc = cache.get(raw, key) if cache else None
            if doc is None:
                pending.append((len(found), key, raw))
        found.append(doc)
    for (i, _, raw), doc in zip(pending, _read(spec, release, [(key, raw) for _, key, raw in pending])):
        found[i] = doc
        if cache:
            cache.put(raw, doc)
    if cache:
        cache.save()
    return [doc for doc in found if isinstance(doc, similarity.Document)]


def _read(spec: Assignment, release: dict, notebooks: list[tuple[tuple, bytes]]) -> list[similarity.Document | str]:
    """The Document (or LEFT_OUT) of each (key, notebook) of ``notebooks``, in order; a process per
    core reads them when there are ``READ_APART`` or more (a term's are thousands, 20 ms each)."""
    jobs = min(os.cpu_count() or 1, len(notebooks) // READ_APART + 1)
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return _read_here(spec, release, notebooks)
    size = -(-len(notebooks) // (4 * jobs))     # a few parts a process: one slow part does not hold the rest
    parts = [notebooks[i:i + size] for i in range(0, len(notebooks), size)]
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        return [doc for part in pool.map(_read_here, itertools.repeat(spec), itertools.repeat(release), parts)
                for doc in part]


def _read_here(spec: Assignment, release: dict, notebooks: list[tuple[tuple, bytes]]) -> list[similarity.Document | str]:
    """:func:`_read` in this process."""
    read = reader(spec, release)
    return [_document(read, key, raw, release) for key, raw in notebooks]


def _path(spec: Assignment, student: str, submitted: str, staged: str | None) -> str:
    """Where the student's notebook of ``spec`` is read: ``submitted``, else the copy ``staged``."""
    if staged and not os.path.lexists(os.path.join(submitted, student, spec.id)):
        return os.path.join(staged, student, spec.id, spec.notebook)
    return os.path.join(submitted, student, spec.id, spec.notebook)


def _document(read: Callable, key: tuple, raw: bytes, release: dict) -> similarity.Document | str:
    try:
        nb = parse_notebook(raw)
    except NotebookError:
        return LEFT_OUT
    if submission.not_this_assignment(nb, release):
        return LEFT_OUT     # graded as not this assignment's notebook: none of it runs
    try:
        return read(key, nb)
    except Exception as exc:  # noqa: BLE001 - one hand-in the comparison cannot read never stops the report
        return similarity.Document(key, unread=f"the comparison could not read it ({type(exc).__name__})")


def known_documents(course: Course, spec: Assignment, release: dict, cache: Cache | None = None) -> list[similarity.Document]:
    """similarity.Documents of the known ways to write assignment ``spec``: the reference
    solution and every entry of the catalogue in parts/<part>/mistakes.py, correct variants and realistic
    mistakes alike (their fingerprints are common, never evidence); each kept in ``cache`` as a
    hand-in's is, by its text, and not made again while the files they are made from are unchanged."""
    made_from = [course.source(spec, spec.notebook), cohort.__file__,
                 *(os.path.join(course.root, "parts", part.id, "mistakes.py") for part in spec.parts)]
    kept = cache.known_ways(made_from, spec.id) if cache else None
    if kept is not None:
        return kept
    ways = [cohort.solved(course, spec)]
    for part in spec.parts:
        mistakes, correct = cohort.catalogue(course, part.id)
        ways += [cohort.solved(course, spec, entry["cells"]) for entry in mistakes.values()]
        ways += [cohort.solved(course, spec, variant) for variant in correct.values()]
    read, docs, raws = reader(spec, release, every=True), [], []
    for nb in ways:
        raws.append(b"known\0" + json.dumps(nb, sort_keys=True).encode())   # never a hand-in's bytes: every k-gram
        found = cache.get(raws[-1], ("known", spec.id)) if cache else None
        if not isinstance(found, similarity.Document):
            found = read(("known", spec.id), nb)
            if cache:
                cache.put(raws[-1], found)
        docs.append(found)
    if cache:
        cache.keep_ways(made_from, raws)
    return docs


def similar_groups(course: Course, spec: Assignment, students: Iterable[str], submitted: str,
                   out: str | None = None) -> tuple[list[similarity.Group], list[similarity.Document]]:
    """(groups of similar hand-ins, every Document compared or not) of assignment ``spec``; the
    Documents kept in the grading folder ``out`` (:mod:`similarity_cache`) when given."""
    release = read_notebook(course.release(spec, spec.notebook))
    cells = [cell for part in spec.parts for cell in part.cells]
    cache = Cache(out, spec.id, release, cells) if out else None
    staged = os.path.join(out, "submitted") if out else None
    known = known_documents(course, spec, release, cache)
    students = list(students)
    if cache:       # nothing compared changed since the last time: its pairs, their Documents alone read
        kept = cache.compared({s: _path(spec, s, submitted, staged) for s in students}, known,
                              course.similarity_threshold)
        if kept is not None:
            return similarity.groups(kept[0]), kept[1]
    docs = submitted_documents(spec, students, submitted, release, cache, staged)
    pairs = similarity.compare(docs, course.similarity_threshold, known)
    if cache:
        cache.keep_compared({s: _path(spec, s, submitted, staged) for s in students}, known,
                            course.similarity_threshold, pairs, docs)
    return similarity.groups(pairs), docs


def pair_row(assignment: str, pair: similarity.Pair) -> dict:
    return _row("similarity", assignment, "", f"{pair.a.key[0]} & {pair.b.key[0]}", value=pair.score,
                detail=f"{len(pair.shared)} shared fingerprints")


def group_row(assignment: str, group: similarity.Group) -> dict:
    return _row("similarity group", assignment, "", " & ".join(key[0] for key in group.members),
                len(group.members), value=group.score, detail=f"{len(group.pairs)} flagged pairs")


def analyse(course: Course, records: Collection[Submission], submitted: str | None = None,
            gradebook: Mapping | None = None, out: str | None = None) -> Report:
    """The Report of a cohort's records (of the course's assignments); ``submitted`` (their
    notebooks) adds similarity flags, ``gradebook`` (:func:`autograder.nbgrader.gradebook_rows.scores`)
    the parts' scores set by hand, which the histograms count as the exports do; ``out``, the
    grading folder, keeps each hand-in's fingerprints for the next time."""
    gradebook = gradebook or {}
    report = Report()
    for spec in course.assignments:
        assignment = spec.id
        mine = sorted((r for r in records if r.assignment == assignment), key=lambda r: r.student)
        if not mine:
            continue
        n = report.cohort[assignment] = len(mine)
        scores: dict[str, tuple[float, list[float]]] = {}
        mistakes: dict[tuple[str, str], list] = {}     # (part, mistake) -> [students, what they were told]
        failed: dict[tuple[str, str], list] = {}       # (part, check) -> [students, its doc, its visibility]
        for record in mine:
            for part in record.parts:
                pid = part.part
                if part.status in NOT_GRADED:
                    report.rows.append(_row("not graded", assignment, pid, record.student,
                                            value=part.status, detail=clean_text(part.reason, 400)))
                if part.status != GRADER_ERROR:
                    overrides = gradebook.get(record.key, {}).get("overrides")
                    scores.setdefault(pid, (part.max_score, []))[1].append(scored(part, overrides))
                checks = part.checks
                mistake, words = part.diagnosis
                if mistake:
                    entry = mistakes.setdefault((pid, mistake), [0, f"{words}."])
                    entry[0] += 1
                for check in checks:
                    if not check.passed:
                        entry = failed.setdefault((pid, check.name), [0, check.doc, check.visibility])
                        entry[0] += 1
        for pid, (top, values) in scores.items():
            for label, count in zip(_labels(top), counts(values, top)):
                report.rows.append(_row("score", assignment, pid, label, count, _share(count, len(values)),
                                        detail=f"mean {statistics.mean(values):.2f} of {top:g}"))
        if scores:
            report.scores[assignment] = {p.id: scores[p.id] for p in spec.parts if p.id in scores}
        for (pid, mistake), (count, said) in sorted(mistakes.items(), key=lambda kv: (-kv[1][0], kv[0])):
            report.rows.append(_row("mistake", assignment, pid, mistake, count, _share(count, n), detail=said))
        ranked = sorted(failed.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_CHECKS]
        for (pid, name), (count, doc, visibility) in ranked:
            report.rows.append(_row("check", assignment, pid, name, count, _share(count, n),
                                    value=visibility, detail=doc))
        for record in mine:
            if record.late:
                report.rows.append(_row("late", assignment, "", record.student, value=record.late_points,
                                        detail=late.describe(record.late)))
            if record.seconds is not None:
                report.rows.append(_row("time", assignment, "", record.student, value=record.seconds))
        if submitted:
            groups, docs = similar_groups(course, spec, [r.student for r in mine], submitted, out)
            report.groups[assignment] = groups
            for doc in docs:
                if doc.unread:
                    report.rows.append(_row("not compared", assignment, "", doc.key[0], detail=doc.unread))
            for group in groups:
                report.rows.append(group_row(assignment, group))
                report.rows += [pair_row(assignment, pair) for pair in group.pairs]
    return report


def write_rows(out: str, report: Report) -> str:
    """cohort_report.csv under ``out``: every number of the page, one row each."""
    return write_csv(os.path.join(out, CSV), COLUMNS, report.rows)
