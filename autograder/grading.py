"""Grade submissions: each part of each notebook against its suites, in parallel.

A submission is ``SUBMITTED/<student>/<assignment>/<notebook>.ipynb``, laid out
as nbgrader's ``submitted/``. Each is graded in a worker process; each part in
a fresh student process of its own, with the released notebook's locked cells
and the reference solution standing in for the other parts. Every part ends
with a score and a reason, whatever the notebook does.
"""

import concurrent.futures as cf
import contextlib
import dataclasses
import datetime
import glob
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time

import selfcheck
from autograder import handin, suites
from autograder.errors import NoSubmissions
from autograder.results import GRADER_ERROR, PartResult, Submission
from selfcheck import wire
from selfcheck.program import (MAX_NOTEBOOK_BYTES, NotebookError, parse_notebook, program, read_notebook,
                               solution_ids)

SELF = os.path.dirname(os.path.abspath(__file__))


# selfcheck modules that never decide a verdict: the notebooks' pictures and the plugin of the
# student's own `pytest`; changing them must not mark every result stale
STUDENT_SIDE = ("plots.py", "plugin.py")


def grader_version():
    """A hash of the code that turns a notebook into a verdict."""
    kit = os.path.dirname(os.path.abspath(selfcheck.__file__))
    files = sorted(path for path in glob.glob(os.path.join(kit, "**", "*.py"), recursive=True)
                   if os.path.relpath(path, kit) not in STUDENT_SIDE)
    files += [os.path.join(SELF, name) for name in ("grading.py", "suites.py")]
    files += sorted(glob.glob(os.path.join(SELF, "sandbox", "*.py")))
    return suites.file_hash(*files)


def _zero(part, status, reason):
    return PartResult(part.id, 0.0, part.points, status, reason)


def _support_files(course, assignment, workdir):
    """The released files a notebook imports (never the student's copies of them).

    They are public, so the folder is readable by everyone: the sandbox's
    unprivileged user binds them read-only into its scratch folder."""
    os.chmod(workdir, 0o755)
    release = course.release(assignment)
    for name in os.listdir(release):
        path = os.path.join(release, name)
        if (os.path.isfile(path) and name.endswith(".py") and not name.startswith("test_")
                and name != "conftest.py"):
            shutil.copy(path, workdir)


def which_notebook(nb, release):
    """None when ``nb`` is plausibly this assignment's notebook, else the reason it is not."""
    expected = set(solution_ids(release))
    found = set(solution_ids(nb)) & expected
    if expected and not found:
        return "this is not this assignment's notebook (none of its solution cells are in it)"
    return None


def read_submission(path):
    """A submitted notebook's bytes, read through autograder/handin.py: never through a link
    anywhere below the submissions folder, never a FIFO or a device, never more than the largest
    notebook we read (NotebookError with the reason otherwise)."""
    try:
        return handin.read_path(path, MAX_NOTEBOOK_BYTES)
    except handin.Missing:
        raise NotebookError("there is no notebook in this submission") from None
    except handin.Refused as exc:
        raise NotebookError(str(exc)) from None


def grade_submission(course, assignment_id, student_id, path, jail=None, only=None):
    """The result record of one submission: every part scored (or the parts in ``only``), with reasons.

    Raises InfrastructureError when the sandbox failed (the grader's problem:
    nothing may be concluded about the student)."""
    assignment = course.assignment(assignment_id)
    record = Submission(student_id, assignment_id, os.path.basename(path), grader=grader_version())
    try:
        raw = read_submission(path)
        record.sha256 = hashlib.sha256(raw).hexdigest()
        nb = parse_notebook(raw)
        release = read_notebook(course.release(assignment, assignment.notebook))
        problem = which_notebook(nb, release)
    except NotebookError as exc:
        problem = f"your notebook could not be read: {exc}"
    if problem:
        record.problem = problem
        record.parts = [_zero(p, "error", problem) for p in assignment.parts
                        if only is None or p.id in only]
        return record
    parts = []
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        os.chmod(scratch, 0o755)
        passed = set()      # parts that earned full marks: the parts using them run the student's own
        for part in assignment.parts:
            if only is not None and part.id not in only:
                continue
            mine = {cell for used in part.uses if used in passed for cell in assignment.part(used).cells}
            prog = program(nb, release, own=set(part.cells) | mine,
                           stand_ins=assignment.stand_in_cells(part) - mine)
            if prog.missing:
                parts.append(_zero(part, "missing", "the solution cell(s) "
                                   + ", ".join(f"'{m}'" for m in prog.missing)
                                   + " are gone from your notebook, so this part could not be checked"))
                continue
            workdir = os.path.join(scratch, part.id)
            os.makedirs(workdir)
            _support_files(course, assignment, workdir)
            parts.append(suites.run_part(course, assignment, part, prog, workdir, jail=jail))
            if parts[-1].status == "passed":
                passed.add(part.id)
    record.parts = parts
    return record


_STUDENT_ID = re.compile(r"[^\s/\\:*?\"<>|]{1,100}")


def student_id_problem(name):
    """None when a folder name can be a student id in every export, else why it cannot."""
    if name.startswith(".") or not _STUDENT_ID.fullmatch(name) or wire.clean_text(name) != name:
        return "not a usable student id (control, space, path or unprintable characters, or too long)"
    return None


def check_notebook(course, assignment, path, jail=None):
    """A student's self-check from the grader's side: the public checks only, on the notebook's
    own functions everywhere (as ``pytest`` in the student's folder), in the grading sandbox.

    The given cells are the release's, as at grading: a cell the student marks as given is the
    student's code and runs only in the sandbox, never on this side."""
    nb = parse_notebook(read_submission(path))
    prog = program(nb, read_notebook(course.release(assignment, assignment.notebook)))
    parts = []
    with tempfile.TemporaryDirectory(prefix="check-") as scratch:
        os.chmod(scratch, 0o755)
        for part in assignment.parts:
            workdir = os.path.join(scratch, part.id)
            os.makedirs(workdir)
            _support_files(course, assignment, workdir)
            parts.append(suites.run_part(course, assignment, part, prog, workdir, jail=jail, public_only=True))
    return parts


def find_submissions(course, submitted, refused=None):
    """(student, assignment, notebook path) for every submission under ``submitted``.

    The folders are listed through autograder/handin.py: folders that cannot be a student's
    (symbolic links, names no export can hold) are left out and listed in ``refused`` as
    (name, reason)."""
    if not os.path.isdir(submitted):
        raise NoSubmissions(f"{submitted}: no such folder of submissions")
    refused = [] if refused is None else refused
    found = []
    with handin.folder(submitted) as top:
        students = handin.entries(top)
    for student, kind in sorted(students.items()):
        if student.startswith(".") or kind not in ("folder", "link"):
            continue
        why = "a symbolic link, not a folder" if kind == "link" else student_id_problem(student)
        if why:
            refused.append((wire.clean_text(student, 120), why))
            continue
        try:
            with handin.folder(submitted, student) as fd:
                assignments = handin.entries(fd)
        except handin.Refused as exc:       # replaced since it was listed
            refused.append((student, str(exc)))
            continue
        for assignment in course.assignments:
            kind = assignments.get(assignment.id)
            if kind == "link":
                refused.append((f"{student}/{assignment.id}", "a symbolic link, not a folder"))
            elif kind == "folder":
                found.append((student, assignment.id, os.path.join(submitted, student, assignment.id,
                                                                   assignment.notebook)))
    if not found:
        raise NoSubmissions(f"{submitted}: no submissions in it (expected "
                            "<student>/<assignment>/<notebook>.ipynb)")
    return found


# --- the batch: which submissions need grading, grading them, keeping every result ---------

def suite_versions(course, assignment_id):
    """part -> the version of everything that decides its score, as it is now.

    Its public and hidden suites, its points and cells, the versions of the parts
    it uses (whether they pass decides whose code of theirs it runs), the course's
    limits, the chapter's numbers, and the assignment's code that runs beside the
    student's: the reference solution (the stand-ins, and what hidden checks
    compare with), the released notebook's given cells and its support files. A
    change to any of them marks earlier results of the part stale; notebook prose
    does not.
    """
    assignment = course.assignment(assignment_id)
    reference = program(read_notebook(course.source(assignment, assignment.notebook))).cells
    given = program(read_notebook(course.release(assignment, assignment.notebook))).cells
    release = course.release(assignment)
    support = sorted(os.path.join(release, n) for n in os.listdir(release)
                     if n.endswith(".py") and not n.startswith("test_") and n != "conftest.py")
    shared = json.dumps({"limits": dataclasses.astuple(course.limits),
                         "reference": reference, "given": given,
                         "support": suites.file_hash(*support) if support else None,
                         "numbers": suites.file_hash(course.data("chapter_numbers.yaml"))})
    versions = {}
    for part in assignment.parts:
        own = json.dumps({"suites": suites.file_hash(os.path.join(course.root, part.public),
                                                     os.path.join(course.root, part.hidden)),
                          "points": part.points, "cells": part.cells,
                          "uses": {used: versions.get(used) for used in part.uses}})
        versions[part.id] = hashlib.sha256((shared + own).encode()).hexdigest()[:12]
    return versions


def file_sha256(path):
    try:
        return hashlib.sha256(read_submission(path)).hexdigest()
    except NotebookError:
        return None


def _versions_key(record):
    """The short name of what produced a record: notebook, grader and suites."""
    suites_now = record.suites or {p.part: p.suite for p in record.parts}
    joined = ",".join(f"{k}={v}" for k, v in sorted(suites_now.items()))
    return (f"{(record.sha256 or 'nofile')[:8]}.{record.grader or 'nograder'}."
            f"{hashlib.sha256(joined.encode()).hexdigest()[:12]}")


def stale(course, record, path, grader=None):
    """None when ``record`` is a finished grading of the notebook at ``path`` by today's
    grader, suites, points and limits; otherwise the reason it must be graded (again)."""
    if record is None:
        return "not graded yet"
    if record.grader_error:
        return "the grader failed on it last time"
    if record.sha256 != file_sha256(path):
        return "the notebook changed"
    if record.grader != (grader or grader_version()):
        return "the grader changed"
    if record.suites != suite_versions(course, record.assignment):
        points = {p.id: p.points for p in course.assignment(record.assignment).parts}
        moved = [f"{p.part} {p.max_score:g} -> {points[p.part]:g}"
                 for p in record.parts if p.part in points and p.max_score != points[p.part]]
        if moved:
            return "points changed (" + ", ".join(moved) + ")"
        return "what decides a part's score changed (its suites, the limits or the reference)"
    return None


def result_path(out, student, assignment):
    return os.path.join(out, "results", student, f"{assignment}.json")


def history_folder(out, student):
    return os.path.join(out, "results", student, "history")


def _load(path):
    """The record in a results file, or None when there is none or it cannot be read."""
    try:
        with open(path) as fh:
            return Submission.from_json(json.load(fh))
    except (OSError, ValueError):
        return None


def read_result(out, student, assignment):
    """The latest result of one submission, or None."""
    return _load(result_path(out, student, assignment))


def history(out, student, assignment):
    """Every earlier result of one submission, oldest first."""
    paths = glob.glob(os.path.join(history_folder(out, student), f"{glob.escape(assignment)}.*.json"))
    found = [r for r in map(_load, paths) if r is not None]
    return sorted(found, key=lambda r: r.graded_at or "")


def write_result(out, record):
    """Write a result; the one it replaces is kept under history/, named by its versions."""
    path = result_path(out, record.student, record.assignment)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = read_result(out, record.student, record.assignment)
    if old is not None:
        folder = history_folder(out, record.student)
        os.makedirs(folder, exist_ok=True)
        _dump(os.path.join(folder, f"{record.assignment}.{_versions_key(old)}.json"), old)
    _dump(path, record)


def _dump(path, record):
    with open(path + ".tmp", "w") as fh:
        json.dump(record.to_json(), fh, indent=1)
    os.replace(path + ".tmp", path)


def _worker(args):
    course, student, assignment, path, grader = args
    started = time.monotonic()
    record = grade_submission(course, assignment, student, path)
    record.grader = grader      # the version this batch started with, for every record alike
    record.suites = suite_versions(course, assignment)
    record.graded_at = _now()
    record.seconds = round(time.monotonic() - started, 2)
    return record


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def grade_one(course, student, assignment, path, out):
    """Grade one submission in a process of its own and keep its result, as `course grade` does.

    For nbgrader's own autograde (the command, formgrader's button), which may run
    inside a long-lived Jupyter server: the grading process is spawned, not forked
    (the server has threads), and nothing it loads outlives it. A missing corpus
    stops here with its one line, and a grader failure raises, so nbgrader records
    nothing for the submission: never a student's 0.
    """
    from autograder import corpus
    if corpus.needs_corpus(course, course.assignment(assignment)):
        corpus.find(course)
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        record = pool.submit(_worker, (course, student, assignment, path, grader_version())).result()
    write_result(out, record)
    return record


RETRIES = 2       # times a submission the grader failed on is graded again within one batch


def _failed(course, student, assignment, path, exc, grader):
    """The record of a submission the grader could not grade: no score is the student's."""
    reason = wire.clean_text(f"{type(exc).__name__}: {exc}", 400)
    return Submission(student, assignment, os.path.basename(path), grader=grader, sha256=file_sha256(path),
                      suites={}, graded_at=_now(), problem=f"grader error: {reason}",
                      parts=[_zero(p, GRADER_ERROR, f"not graded: the grader failed on this submission "
                                                    f"({reason}); it is graded again on the next run")
                             for p in course.assignment(assignment).parts])


class Batch:
    """What one `course grade` run did: every submission's latest record, and which were
    graded now, skipped as unchanged, or left undone by an interruption."""

    def __init__(self):
        self.records = []
        self.graded = []       # records graded in this run
        self.skipped = []      # records still valid from an earlier run
        self.pending = []      # (student, assignment, path) not reached (interrupted)
        self.previous = {}     # (student, assignment) -> the record this run replaced
        self.refused = []      # (folder, reason) of folders that cannot be a student's
        self.left_out = []     # "<student>/<assignment>: <files>" handed in but not in the release
        self.warnings = []     # one line per later stage that failed for some submissions
        self.interrupted = False

    def __iter__(self):        # a Batch reads as its list of records
        return iter(self.records)

    def __len__(self):
        return len(self.records)


JOURNAL = ".batch.json"     # a dot name: no student id can be it


def _journal(out, data):
    path = os.path.join(out, "results", JOURNAL)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as fh:
        json.dump(data, fh, indent=1)
    os.replace(path + ".tmp", path)


def read_journal(out):
    """The last batch's journal (where its submissions came from, whether it finished), or {}."""
    try:
        with open(os.path.join(out, "results", JOURNAL)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def plan(course, submissions, out, force=False, grader=None):
    """Split submissions into (to grade, still valid records, replaced records)."""
    grader = grader or grader_version()
    todo, valid, previous = [], [], {}
    for student, assignment, path in submissions:
        old = read_result(out, student, assignment)
        if old is not None:
            previous[student, assignment] = old
        if force or stale(course, old, path, grader):
            todo.append((student, assignment, path))
        else:
            valid.append(old)
    return todo, valid, previous


class Stopped(Exception):
    """What grades the batch went away (a cluster's scheduler): the batch stops, resumable."""


def grade_all(course, submissions, out, jobs=None, progress=None, force=False, submitted=None,
              refused=(), executor=None):
    """Grade the submissions that need it in ``jobs`` worker processes.

    Each result is written (results/<student>/<assignment>.json, the one it
    replaces moved to results/<student>/history/) the moment its worker
    returns, so an interrupted batch loses only the submissions in flight; a
    submission whose notebook, grader and suites are unchanged since its last
    result is skipped unless ``force``. Only this process writes files; the
    workers just grade: local processes, or ``executor`` (autograder/cluster.py).
    Returns a :class:`Batch`.
    """
    jobs = max(1, jobs or os.cpu_count() or 1)
    grader = grader_version()
    todo, valid, previous = plan(course, submissions, out, force, grader)
    batch = Batch()
    batch.refused = list(refused)
    batch.previous = previous
    batch.skipped = list(valid)
    batch.records = list(valid)
    _journal(out, {"submitted": os.path.abspath(submitted) if submitted else None,
                   "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "total": len(submissions), "to_grade": len(todo), "finished": False})
    if progress:
        progress.start(len(todo), skipped=len(valid))
    attempts = {task: 0 for task in todo}
    queue = list(todo)
    while queue and not batch.interrupted:
        pool = executor or cf.ProcessPoolExecutor(max_workers=min(jobs, len(queue)),
                                                  mp_context=multiprocessing.get_context("fork"))
        futures = {pool.submit(_worker, (course, *task, grader)): task for task in queue}
        queue = []
        try:
            for future in cf.as_completed(futures):
                task = futures[future]
                try:
                    record = future.result()
                except Stopped:
                    raise
                except Exception as exc:  # the grader's failure (a dead worker, a sandbox that
                    attempts[task] += 1   # did not start, a bug): try again, never the student's 0
                    if attempts[task] <= RETRIES:
                        queue.append(task)
                        continue
                    record = _failed(course, *task, exc, grader)
                write_result(out, record)
                batch.records.append(record)
                batch.graded.append(record)
                if progress:
                    progress.update(record)
        except (KeyboardInterrupt, Stopped) as exc:
            if isinstance(exc, Stopped):
                print(f"error: {exc}", file=sys.stderr)
            batch.interrupted = True
            done = {r.key for r in batch.graded}
            batch.pending = [t for t in todo if (t[0], t[1]) not in done]
            for future in futures:
                future.cancel()
            for proc in list(getattr(pool, "_processes", {}).values()):
                with contextlib.suppress(Exception):
                    proc.terminate()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if progress:
        progress.finish()
    if not batch.interrupted:
        journal = read_journal(out)
        journal["finished"] = True
        _journal(out, journal)
    return batch


def load_results(out):
    """The latest result of every submission graded into ``out``."""
    paths = sorted(glob.glob(os.path.join(out, "results", "*", "*.json")))
    return [r for r in map(_load, paths) if r is not None]
