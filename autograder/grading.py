"""Grade submissions: each part of each notebook against its suites, in parallel.

A submission is ``SUBMITTED/<student>/<assignment>/<notebook>.ipynb``, laid out
as nbgrader's ``submitted/``. Each is graded in a worker process; each part in
a fresh student process of its own, with the released notebook's locked cells
and the reference solution standing in for the other parts. Every part ends
with a score and a reason, whatever the notebook does. What a batch finds is
kept by autograder/store.py, and autograder/versions.py says which submissions
need grading.
"""

import concurrent.futures as cf
import contextlib
import hashlib
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from autograder import handin, submission_time, suites
from autograder.config import Assignment, Course, Part
from autograder.errors import NoSubmissions
from autograder.progress import Progress
from autograder.results import GRADER_ERROR, NOT_ATTEMPTED, PartResult, Submission
from autograder.store import batch_finished, batch_started, now, read_result, write_result
from autograder.versions import file_sha256, grader_version, stale, suite_versions, support_files
from selfcheck import wire
from selfcheck.launch import Jail
from selfcheck.program import NotebookError, parse_notebook, program, read_notebook, solution_ids


@dataclass(frozen=True)
class Task:
    """One submission to grade: whose, of which assignment, and where its notebook lies."""
    student: str
    assignment: str
    path: str

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment


def _zero(part: Part, status: str, reason: str) -> PartResult:
    return PartResult(part.id, 0.0, part.points, status, reason)


def _support_files(course: Course, assignment: Assignment, workdir: str) -> None:
    """The released files a notebook imports (never the student's copies of them).

    They are public, so the folder is readable by everyone: the sandbox's
    unprivileged user binds them read-only into its scratch folder."""
    os.chmod(workdir, 0o755)
    for path in support_files(course, assignment):
        shutil.copy(path, workdir)


def which_notebook(nb: dict, release: dict) -> str | None:
    """None when ``nb`` is plausibly this assignment's notebook, else the reason it is not."""
    expected = set(solution_ids(release))
    found = set(solution_ids(nb)) & expected
    if expected and not found:
        return "this is not this assignment's notebook (none of its solution cells are in it)"
    return None


def not_attempted(nb: dict, release: dict, own: set[str], stand_ins: set[str]) -> bool:
    """True when grading a part would run exactly what the release runs: its cells as released
    and no cell of the student's own (a 0, and not a failure of the student's code)."""
    return (program(nb, release, own=own, stand_ins=stand_ins).cells
            == program(release, release, own=own, stand_ins=stand_ins).cells)


def grade_submission(course: Course, assignment_id: str, student_id: str, path: str, jail: Jail | None = None,
                     only: set[str] | None = None, passed: frozenset[str] = frozenset()) -> Submission:
    """The result record of one submission: every part scored (or the parts in ``only``), with reasons.
    ``passed``: parts left out of ``only`` that are known to earn full marks (their cells are the
    reference's), so the parts using them run the student's own code of them, as a whole grading would.

    Raises InfrastructureError when the sandbox failed (the grader's problem:
    nothing may be concluded about the student)."""
    assignment = course.assignment(assignment_id)
    record = Submission(student_id, assignment_id, os.path.basename(path), grader=grader_version())
    try:
        raw = handin.read_submission(path)
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
        full = set(passed)      # parts that earned full marks: the parts using them run the student's own
        for part in assignment.parts:
            if only is not None and part.id not in only:
                continue
            own = [used for used in part.uses if used in full]
            result = _grade_part(course, assignment, part, nb, release, own, scratch, jail)
            if own and any(check.status == "timeout" for check in result.checks):
                result = _better_with_stand_ins(result, _grade_part(course, assignment, part, nb, release, [],
                                                                    scratch, jail), own)
            parts.append(result)
            if result.status == "passed":
                full.add(part.id)
    record.parts = parts
    return record


def _grade_part(course: Course, assignment: Assignment, part: Part, nb: dict, release: dict, own: list[str],
                scratch: str, jail: Jail | None) -> PartResult:
    """One part, running the student's own code of the parts in ``own`` and the reference's of the
    other parts it uses."""
    mine = {cell for used in own for cell in assignment.part(used).cells}
    own_cells, stand_ins = set(part.cells) | mine, assignment.stand_in_cells(part) - mine
    prog = program(nb, release, own=own_cells, stand_ins=stand_ins)
    if prog.missing:
        return _zero(part, "missing", "the solution cell(s) " + ", ".join(f"'{m}'" for m in prog.missing)
                     + " are gone from your notebook, so this part could not be checked")
    if not_attempted(nb, release, own_cells, stand_ins):
        return _zero(part, NOT_ATTEMPTED, "not attempted: its cells are as released, not written yet")
    workdir = tempfile.mkdtemp(prefix=f"{part.id}-", dir=scratch)
    _support_files(course, assignment, workdir)
    return suites.run_part(course, assignment, part, prog, workdir, jail=jail)


def _better_with_stand_ins(own_result: PartResult, stand_ins: PartResult, own: list[str]) -> PartResult:
    """A part that ran on the student's own code of other parts and ran out of time, against the same
    part graded with the reference standing in for them: the better of the two, saying why.

    A slow but correct function of one part must not cost another part its points. Only a timeout
    is graded again: the parts it uses earned full marks, so with time to spare their answers are
    the reference's, and a second run (tens of thousands of calls to the stand-ins, for the scale
    experiment) would find the same mistakes."""
    if stand_ins.score <= own_result.score:
        return own_result
    parts = ", ".join(own)
    stand_ins.reason = (f"{stand_ins.reason}, graded with the reference standing in for part {parts}: "
                        f"with your own part {parts} it scored {own_result.score:g}/{own_result.max_score:g} "
                        f"({own_result.reason})")
    return stand_ins


def check_notebook(course: Course, assignment: Assignment, path: str, jail: Jail | None = None) -> list[PartResult]:
    """A student's self-check from the grader's side: the public checks only, on the notebook's
    own functions everywhere (as ``pytest`` in the student's folder), in the grading sandbox.

    The given cells are the release's, as at grading: a cell the student marks as given is the
    student's code and runs only in the sandbox, never on this side."""
    nb = parse_notebook(handin.read_submission(path))
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


def find_submissions(course: Course, submitted: str, refused: list[tuple[str, str]] | None = None) -> list[Task]:
    """Every submission under ``submitted``.

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
        why = "a symbolic link, not a folder" if kind == "link" else handin.student_id_problem(student)
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
            held = assignments.get(assignment.id)
            if held == "link":
                refused.append((f"{student}/{assignment.id}", "a symbolic link, not a folder"))
            elif held == "folder":
                found.append(Task(student, assignment.id, os.path.join(submitted, student, assignment.id,
                                                                     assignment.notebook)))
    if not found:
        raise NoSubmissions(f"{submitted}: no submissions in it (expected "
                            "<student>/<assignment>/<notebook>.ipynb)")
    return found


# --- the batch: which submissions need grading, grading them, keeping every result ---------

def grade_task(course: Course, task: Task, grader: str) -> Submission:
    """A worker's job: the record of one submission, stamped with the versions it was graded by
    (``grader``: the version its batch started with, for every record alike)."""
    started = time.monotonic()
    record = grade_submission(course, task.assignment, task.student, task.path)
    record.grader = grader
    record.suites = suite_versions(course, task.assignment)
    record.graded_at = now()
    record.seconds = round(time.monotonic() - started, 2)
    when = submission_time.read(os.path.dirname(task.path))      # collect's time, for the late penalty
    record.submitted_at = when.isoformat() if when else None
    return record


def grade_one(course: Course, student: str, assignment: str, path: str, out: str) -> Submission:
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
        record = pool.submit(grade_task, course, Task(student, assignment, path), grader_version()).result()
    write_result(out, record)
    return record


RETRIES = 2       # times a submission the grader failed on is graded again within one batch


def _failed(course, task, exc, grader):
    """The record of a submission the grader could not grade: no score is the student's."""
    reason = wire.clean_text(f"{type(exc).__name__}: {exc}", 400)
    return Submission(task.student, task.assignment, os.path.basename(task.path), grader=grader,
                      sha256=file_sha256(task.path), suites={}, graded_at=now(), problem=f"grader error: {reason}",
                      parts=[_zero(p, GRADER_ERROR, f"not graded: the grader failed on this submission "
                                                    f"({reason}); it is graded again on the next run")
                             for p in course.assignment(task.assignment).parts])


@dataclass
class Batch:
    """What one `course grade` run did: every submission's latest record, and which were
    graded now, skipped as unchanged, or left undone by an interruption."""
    records: list[Submission] = field(default_factory=list)
    graded: list[Submission] = field(default_factory=list)     # records graded in this run
    skipped: list[Submission] = field(default_factory=list)    # records still valid from an earlier run
    pending: list[Task] = field(default_factory=list)          # not reached (interrupted)
    previous: dict[tuple[str, str], Submission] = field(default_factory=dict)   # the records this run replaced
    refused: list[tuple[str, str]] = field(default_factory=list)   # (folder, reason): cannot be a student's
    left_out: list[str] = field(default_factory=list)  # "<student>/<assignment>: <files>" not in the release
    warnings: list[str] = field(default_factory=list)  # one line per later stage that failed for some
    notes: list[str] = field(default_factory=list)     # what the instructor should know of the exports
    interrupted: bool = False

    def __iter__(self):        # a Batch reads as its list of records
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


@dataclass
class Plan:
    """Which submissions a batch grades, and what it keeps."""
    todo: list[Task]                                    # to grade
    valid: list[Submission]                             # records still valid: kept
    previous: dict[tuple[str, str], Submission]         # every record a grading would replace


def plan(course: Course, submissions: Iterable[Task], out: str, force: bool = False,
         grader: str | None = None, forced_since: str | None = None) -> Plan:
    """Split submissions into those to grade and those whose records still hold (with
    ``forced_since``, only records graded since then hold: the rest of an interrupted forced batch)."""
    grader = grader or grader_version()
    found = Plan([], [], {})
    for task in submissions:
        old = read_result(out, task.student, task.assignment)
        if old is not None:
            found.previous[task.key] = old
        forced = forced_since is not None and old is not None and (old.graded_at or "") < forced_since
        if force or forced or old is None or stale(course, old, task.path, grader):
            found.todo.append(task)
        else:
            found.valid.append(old)
    return found


def longest_first(course: Course, tasks: list[Task], previous: dict[tuple[str, str], Submission]) -> list[Task]:
    """The tasks, longest expected first, so that no worker grades a long one alone at the end: an
    assignment takes its earlier records' mean seconds; before any, one that trains takes longest."""
    from autograder import corpus
    took: dict[str, list[float]] = {}
    for record in previous.values():
        if record.seconds:
            took.setdefault(record.assignment, []).append(record.seconds)
    expected = {a.id: (sum(took[a.id]) / len(took[a.id]) if a.id in took
                       else float("inf") if corpus.needs_corpus(course, a) else 0.0)
                for a in course.assignments}
    return sorted(tasks, key=lambda task: -expected.get(task.assignment, 0.0))


class Stopped(Exception):
    """What grades the batch went away (a cluster's scheduler): the batch stops, resumable."""


class Pool(Protocol):
    """What grades a batch's tasks: a local process pool, or a cluster's (autograder/cluster.py)."""

    def submit(self, fn: Callable[[Course, Task, str], Submission], /, course: Course, task: Task,
               grader: str) -> cf.Future: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...


def grade_all(course: Course, submissions: list[Task], out: str, jobs: int | None = None,
              progress: Progress | None = None, force: bool = False, submitted: str | None = None,
              refused: Iterable[tuple[str, str]] = (), executor: Pool | None = None,
              forced_since: str | None = None) -> Batch:
    """Grade the submissions that need it in ``jobs`` worker processes.

    Each result is written (results/<student>/<assignment>.json, the one it
    replaces moved to results/<student>/history/) the moment its worker
    returns, so an interrupted batch loses only the submissions in flight; a
    submission whose notebook, grader and suites are unchanged since its last
    result is skipped unless ``force``. Only this process writes files; the
    workers just grade (:func:`grade_task`): local processes, or ``executor``
    (autograder/cluster.py), which takes the same ``submit``. ``forced_since``: the start of
    an interrupted forced batch, which this one finishes (every record older is graded again).
    Returns a :class:`Batch`.
    """
    jobs = max(1, jobs or os.cpu_count() or 1)
    grader = grader_version()
    todo = plan(course, submissions, out, force, grader, forced_since)
    batch = Batch(records=list(todo.valid), skipped=list(todo.valid), previous=todo.previous,
                  refused=list(refused))
    batch_started(out, submitted, len(submissions), len(todo.todo), forced_since or (now() if force else None))
    if progress:
        progress.start(len(todo.todo), skipped=len(todo.valid))
    attempts = {task: 0 for task in todo.todo}
    queue = longest_first(course, todo.todo, todo.previous)
    while queue and not batch.interrupted:
        pool = executor or cf.ProcessPoolExecutor(max_workers=min(jobs, len(queue)),
                                                  mp_context=multiprocessing.get_context("fork"))
        futures = {pool.submit(grade_task, course, task, grader): task for task in queue}
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
                    record = _failed(course, task, exc, grader)
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
            batch.pending = [t for t in todo.todo if t.key not in done]
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
        batch_finished(out)
    return batch
