"""A batch of submissions graded in parallel, each in a worker process.

Which submissions need grading is :func:`plan`'s (from autograder/grade/versions.py); a failure of
the grader is graded again, and never a student's 0. What a batch finds is kept by
autograder/records/store.py.
"""

import concurrent.futures as cf
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from autograder.course.config import Course
from autograder.grade import cores, forked, submission_time
from autograder.grade.progress import Progress
from autograder.grade.versions import file_sha256, grader_version, stale, suite_versions
from autograder.records.results import GRADER_ERROR, Submission
from autograder.records.store import batch_finished, batch_started, now, read_result, write_result
from selfcheck import wire
from autograder.grade.discovery import Task
from autograder.grade.submission import grade_submission, zero


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
    from autograder.course import corpus
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
                      parts=[zero(p, GRADER_ERROR, f"not graded: the grader failed on this submission "
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
    from autograder.course import corpus
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
    """What grades a batch's tasks: a local process pool, or a cluster's (autograder/grade/cluster.py)."""

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
    (autograder/grade/cluster.py), which takes the same ``submit``. ``forced_since``: the start of
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
        pool = executor or cores.pool(min(jobs, len(queue)))
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
            forked.stop(pool)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if progress:
        progress.finish()
    if not batch.interrupted:
        batch_finished(out)
    return batch
