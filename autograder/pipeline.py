"""Grading a folder of submissions, stage by stage.

Read :func:`grade` as nbgrader's list of preprocessors is read: each stage takes what the
one before it left and hands on to the next.

1. find       the submissions under ``submitted/`` (and the folders that cannot be a student's)
2. grade      each one against its parts' suites, in worker processes
3. record     each result, the moment its worker returns (``results/``; an interrupted batch
              keeps them and stops here)
4. gradebook  the new results into nbgrader's gradebook, through its own autograde
5. exports    each late penalty worked out again (course.yaml as it is now) and put in the
              gradebook, roster.csv's names too; parts.csv, totals.csv, Gradescope results,
              canvas_gradebook.csv and moodle_grades.csv, nbgrader's grades.csv
6. feedback   one page per student and assignment

A batch interrupted after stage 3 (Ctrl-C in the gradebook, the exports or the feedback) keeps
every result; the next one redoes stages 4 to 6 whole (``results/.exporting`` says so).
Stages 2 and 3 are one call (:func:`grading.grade_all`) because recording as results arrive is
what makes a batch resumable. A stage that cannot run raises a :class:`CourseError` with one
line; a stage that runs but fails for some submissions (nbgrader refusing one, an export that
cannot be written) adds a line to ``batch.warnings`` and the next stage still runs.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from autograder import export as course_exports
from autograder import status
from autograder.course import config, corpus, late, roster
from autograder.errors import CorpusMissing, CourseError, NbgraderError, NoSubmissions
from autograder.export import totals
from autograder.export.outputs import OTHER, Inputs
from autograder.grade import discovery, grading, submission_time
from autograder.nbgrader import grades_csv, settings, staging
from autograder.records import store
from autograder.release import assignments
from autograder.report import cohort_page, feedback

if TYPE_CHECKING:
    from autograder.grade.cluster import ClusterPool
    from autograder.grade.progress import Progress
    from autograder.records.results import Submission

UNFINISHED = ".exporting"    # in results/: a batch graded, its gradebook and exports not all written yet
# every export, in the order they are written: each module declares its files, its writer and its turn;
# autograder/export/'s are found there, the gradebook's, the feedback pages' and the report's added
EXPORTS = tuple(sorted(course_exports.found() + (grades_csv.EXPORT, feedback.EXPORT, cohort_page.EXPORT),
                       key=lambda export: export.order))
# every file a grading folder holds: what `course grade` prints, the docs' table, .gitignore's and make clean's list
OUTPUTS = tuple(output for export in EXPORTS for output in export.outputs) + OTHER

def grade(course: config.Course, submitted: str, out: str, jobs: int | None = None, force: bool = False,
          progress: Progress | None = None, cluster: str | None = None,
          students: list[str] | None = None, timings: dict[str, float] | None = None) -> grading.Batch:
    """Grade ``submitted`` into ``out``; returns the :class:`grading.Batch`.

    Only submissions that changed (or whose grader or suites changed) are graded, unless
    ``force``; ``progress`` (:class:`autograder.grade.progress.Progress`) hears of each one; on the
    Dask scheduler at ``cluster`` when given (autograder/grade/cluster.py). ``students`` (ids) grades
    theirs alone; ``timings``, when given, gets each stage's wall seconds (bench/term.py). A
    forced batch that was interrupted is finished by the next run: what it had
    not reached is graded even when unchanged. The exports are made from every current record
    of ``out``, not only this batch's, so grading part of a class never drops the rest."""
    if cluster:                  # a plain tcp:// address stops before anything is read or written
        config.check_cluster_address("--cluster", cluster)
    assignments.require_released_points(course)
    out = os.path.abspath(out)
    refused: list[tuple[str, str]] = []
    submissions = discovery.find_submissions(course, submitted, refused)                  # 1
    if students:
        missing = sorted(set(students) - {task.student for task in submissions})
        if missing:
            raise NoSubmissions(f"{submitted}: no submissions of {', '.join(missing)}")
        submissions = [task for task in submissions if task.student in set(students)]
    journal = store.read_journal(out)
    forced_since = journal.get("forced_since") if journal and not journal.get("finished") else None
    _require_corpus(course, submissions)
    settings.write_course_folder(course, out)
    from autograder.nbgrader import gradebook     # nbgrader loads in seconds: only once there is work
    mismatch = settings.left_behind(course, out) or gradebook.release_mismatch(course, out)
    if mismatch:
        raise CourseError(mismatch)
    executor: ClusterPool | None = None
    if cluster:
        from autograder.grade import cluster as dask_cluster
        executor = dask_cluster.connect(course, cluster)
    kept: dict = {}
    with cf.ThreadPoolExecutor(1) as ahead:
        # while students' code runs, the term's records are read: after one student's regrade the
        # exports read only what the batch wrote. The thread imports nothing and leaves Python's
        # collector on, so the grading processes forked beside it inherit neither a held lock nor it off.
        ahead.submit(_read_ahead, out, kept)
        try:
            with _scratch(), timed(timings, "grading"):
                batch = grading.grade_all(course, submissions, out, jobs, progress=progress,   # 2, 3
                                          force=force, submitted=submitted, refused=refused, executor=executor,
                                          forced_since=forced_since)
        finally:
            if executor:
                executor.close()
    if batch.interrupted:
        return batch
    unfinished = os.path.exists(os.path.join(out, "results", UNFINISHED))
    with store.replacing(os.path.join(out, "results", UNFINISHED)) as fh:   # gone once stage 6 is done
        fh.write(store.now())
    record_times(out, submissions, batch.records)
    status.hashes(out, [task.path for task in submissions])     # `course status` need not read them again
    with _scratch(), timed(timings, "gradebook"):      # nbgrader's copies of the hand-ins go in the batch's folder
        batch.warnings += to_gradebook(course, submitted, out, submissions, batch, redo=unfinished, workers=jobs)  # 4
    batch.warnings += export(course, out, store.load_results(out, kept), timings, batch.notes)   # 5, 6
    os.remove(os.path.join(out, "results", UNFINISHED))
    return batch


def _read_ahead(out: str, kept: dict) -> None:
    """Fill ``kept`` with the records of ``out`` as they are now."""
    with contextlib.suppress(Exception):    # a head start only: the exports read what is missing
        store.load_results(out, kept, collector_off=False)


@contextlib.contextmanager
def timed(timings: dict[str, float] | None, stage: str) -> Iterator[None]:
    """Add the block's wall seconds to ``timings[stage]`` (nothing when ``timings`` is None)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        if timings is not None:
            timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - started


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    """One scratch folder for the batch's grading, each worker's own inside it (a forked worker
    inherits it): removed whole when grading ends, is interrupted (Ctrl-C) or a worker is killed."""
    folder = tempfile.mkdtemp(prefix="grade-batch-")
    os.chmod(folder, 0o711)      # the sandbox's account reaches each submission's folder (0755) below
    before, tempfile.tempdir = tempfile.tempdir, folder
    try:
        yield folder
    finally:
        tempfile.tempdir = before
        # a Ctrl-C in the middle of the removal would leave the rest: it waits until it is done
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def record_times(out: str, submissions: Sequence[discovery.Task], records: Sequence[Submission]) -> None:
    """Each record's hand-in time, as collect recorded it beside the notebook (a resubmission of
    the same notebook is not graded again, but its time is new)."""
    by_key = {r.key: r for r in records}
    for task in submissions:
        record = by_key.get(task.key)
        when = submission_time.read(os.path.dirname(task.path))
        stamp = when.isoformat() if when else None
        if record is not None and record.submitted_at != stamp:
            record.submitted_at = stamp
            store.write_result(out, record)


def assess_late(course: config.Course, out: str, records: Sequence[Submission], gradebook: dict) -> None:
    """Each record's late penalty by course.yaml as it is now (:mod:`autograder.course.late`), on its
    points earned (hand grades included), and the points formgrader adds to it (``by_hand``, for
    ``course history``); a record whose penalty or hand points changed is written again, stamped
    with this export's time, the one it replaces kept in its history (unless it was graded
    after the last export, which never showed it)."""
    for record in records:
        earned = totals.earned(record, gradebook.get(record.key))
        now = late.of_record(course, record, earned)
        # a submission the gradebook does not hold (a grader error, no gradebook) keeps its hand points
        hand = round(earned - record.score, 3) if record.key in gradebook else record.by_hand
        if now != record.late or hand != record.by_hand:
            unseen = record.exported_at is None     # graded since the last export: nothing showed it
            record.late, record.by_hand, record.exported_at = now, hand, store.now()
            store.write_result(out, record, keep_replaced=not unseen)


def _require_corpus(course, submissions):
    """Stop before grading when a submission trains and the corpus is missing: that is the
    grader's problem, and grading on would score every training check as the students' failure."""
    if any(corpus.needs_corpus(course, course.assignment(task.assignment)) for task in submissions):
        try:
            corpus.find(course)
        except RuntimeError as exc:      # corpus.CorpusError: where it looked, what to do
            raise CorpusMissing(str(exc)) from None


def to_gradebook(course: config.Course, submitted: str, out: str, submissions: Sequence[discovery.Task],
                 batch: grading.Batch, redo: bool = False, workers: int | None = None) -> list[str]:
    """Stage 4: nbgrader's autograde of the submissions with new results, the others left as the
    gradebook holds them (every one staged when ``redo``: the last batch stopped before its
    exports were done), in at most ``workers`` processes (default: the cores; never more than
    ``apps.WORKERS``); returns warnings.

    A submission the grader failed on is not staged at all (nothing about that student may be
    recorded, not even a 0); one that could not be read is staged as the released stub, so
    nbgrader records its verdicts without reading what was handed in. Files of a hand-in the
    release does not declare are left out, and listed in ``batch.left_out``."""
    from autograder.nbgrader import apps      # nbgrader takes seconds to load: only once grading
    fresh = {r.key for r in batch.graded}
    by_key = {r.key: r for r in batch.records}
    runs = []
    for assignment in course.assignments:
        # the gradebook already holds the results of the rest, and their autograded notebooks; a
        # hand-in the grader failed on is neither staged nor asked of nbgrader
        todo = [task for task in submissions if task.assignment == assignment.id
                and not by_key[task.key].grader_error and (
                    redo or task.key in fresh or _handed_in_again(out, task)
                    or not os.path.exists(os.path.join(out, "autograded", task.student, task.assignment,
                                                       assignment.notebook)))]
        if not todo:
            continue
        apps.register(course, assignment, out)
        for task in todo:
            left_out = staging.stage(course, submitted, out, task.student, assignment)
            if left_out:
                batch.left_out.append(f"{task.student}/{assignment.id}: {', '.join(left_out)}")
        runs.append((assignment, None if redo else {task.student for task in todo}))
    return apps.autograde_all(course, out, runs, workers=workers or os.cpu_count() or 1)


def _handed_in_again(out: str, task: discovery.Task) -> bool:
    """The same notebook handed in at another time than the copy nbgrader reads says."""
    staged = os.path.join(out, "submitted", task.student, task.assignment)
    return submission_time.read(os.path.dirname(task.path)) != submission_time.read(staged)


def export(course: config.Course, out: str, records: Sequence[Submission],
           timings: dict[str, float] | None = None, notes: list[str] | None = None) -> list[str]:
    """Stages 5 and 6: every export and the feedback pages, from ``records`` and the gradebook.

    Each stands alone: one that fails becomes a warning and the others are still written.
    Returns the warnings; raises CourseError, writing nothing, when ``out``'s own gradebook
    is not the one course.yaml's ``db_url`` names (its hand grades would be lost). ``timings``
    gets each step's wall seconds, as :func:`grade`'s does; ``notes`` what the instructor should
    know of what was exported (hand grades counted while they wait for the TA to confirm them)."""
    from autograder.nbgrader import answers, gradebook as nbgrader_gradebook, gradebook_rows
    lost = settings.left_behind(course, out)
    if lost:
        raise CourseError(lost)
    warnings = []
    try:
        with timed(timings, "reading the gradebook"):
            gradebook = gradebook_rows.scores(course, out)
    except Exception as exc:  # noqa: BLE001 - the exports from the results alone are still worth having
        warnings.append(f"nbgrader's gradebook could not be read ({exc}); exports use the results only")
        gradebook = {}

    def add_answers(keys):
        try:
            answers.add_answers(course, out, gradebook, keys)
        except Exception as exc:  # noqa: BLE001 - the feedback pages without the answers are still worth having
            warnings.append(f"the written answers could not be read ({exc}); the feedback pages leave them out")
    with timed(timings, "late penalties"):
        assess_late(course, out, records, gradebook)
        if gradebook:
            try:
                nbgrader_gradebook.write_late(course, out, records)
            except Exception as exc:  # noqa: BLE001 - the course's own exports still carry the penalty
                warnings.append(f"the late penalties could not be written into nbgrader's gradebook ({exc})")
    try:
        people = roster.load(course)
    except CourseError as exc:
        warnings.append(f"{exc}; the exports have no names")
        people = {}
    warnings += roster.strangers(course, people, {r.student for r in records})
    inputs = Inputs(course, out, records, gradebook, people, add_answers)    # assess_late wrote any page it changed
    stages: list[tuple[str, Callable[[], object]]] = [
        ("roster", lambda: nbgrader_gradebook.fill_students(course, out, people))]
    stages += [(export.name, functools.partial(export.write, inputs)) for export in EXPORTS]
    for name, write in stages:
        try:
            with timed(timings, f"{name} export"):
                write()
        except Exception as exc:  # noqa: BLE001 - one export's failure must not stop the others
            warnings.append(f"the {name} export failed: {type(exc).__name__}: {exc}")
    store.keep_summaries(out, list(records))      # what `course status` reads of them, as they are now
    held = [n for r in records if (n := len(status.to_confirm(r, gradebook.get(r.key, {}))))]
    if notes is not None and held:
        waiting, hand_ins = sum(held), len(held)
        notes.append(f"{waiting} hand grade{'s' if waiting > 1 else ''} in {hand_ins} hand-in{'s' if hand_ins > 1 else ''} "
                     "to confirm in formgrader (an answer or the grader's score changed since): every export counts "
                     "the score kept until the TA confirms or changes it; `course status` lists them")
    return warnings
