"""Grading a folder of submissions, stage by stage.

Read :func:`grade` as nbgrader's list of preprocessors is read: each stage takes what the
one before it left and hands on to the next.

1. find       the submissions under ``submitted/`` (and the folders that cannot be a student's)
2. grade      each one against its parts' suites, in worker processes
3. record     each result, the moment its worker returns (``results/``; an interrupted batch
              keeps them and stops here)
4. gradebook  the new results into nbgrader's gradebook, through its own autograde
5. exports    parts.csv, totals.csv, Gradescope results, nbgrader's grades.csv
6. feedback   one page per student and assignment

Stages 2 and 3 are one call (:func:`grading.grade_all`) because recording as results arrive is
what makes a batch resumable. A stage that cannot run raises a :class:`CourseError` with one
line; a stage that runs but fails for some submissions (nbgrader refusing one, an export that
cannot be written) adds a line to ``batch.warnings`` and the next stage still runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from autograder import config, corpus, grading, release
from autograder.errors import CorpusMissing, NbgraderError
from autograder.nbgrader import settings, staging
from autograder.reporting import cohort_page, exports, feedback

if TYPE_CHECKING:
    from autograder.cluster import ClusterPool
    from autograder.progress import Progress
    from autograder.results import Submission


def grade(course: config.Course, submitted: str, out: str, jobs: int | None = None, force: bool = False,
          progress: Progress | None = None, cluster: str | None = None) -> grading.Batch:
    """Grade ``submitted`` into ``out``; returns the :class:`grading.Batch`.

    Only submissions that changed (or whose grader or suites changed) are graded, unless
    ``force``; ``progress`` (:class:`autograder.progress.Progress`) hears of each one; on the
    Dask scheduler at ``cluster`` when given (autograder/cluster.py)."""
    if cluster:                  # a plain tcp:// address stops before anything is read or written
        config.check_cluster_address("--cluster", cluster)
    release.require_released_points(course)
    out = os.path.abspath(out)
    refused: list[tuple[str, str]] = []
    submissions = grading.find_submissions(course, submitted, refused)                  # 1
    _require_corpus(course, submissions)
    settings.write_course_folder(course, out)
    executor: ClusterPool | None = None
    if cluster:
        from autograder import cluster as dask_cluster
        executor = dask_cluster.connect(course, cluster)
    try:
        batch = grading.grade_all(course, submissions, out, jobs, progress=progress,   # 2, 3
                                  force=force, submitted=submitted, refused=refused, executor=executor)
    finally:
        if executor:
            executor.close()
    if batch.interrupted:
        return batch
    batch.warnings += to_gradebook(course, submitted, out, submissions, batch)          # 4
    batch.warnings += export(course, out, batch.records)                                # 5, 6
    return batch


def _require_corpus(course, submissions):
    """Stop before grading when a submission trains and the corpus is missing: that is the
    grader's problem, and grading on would score every training check as the students' failure."""
    if any(corpus.needs_corpus(course, course.assignment(task.assignment)) for task in submissions):
        try:
            corpus.find(course)
        except RuntimeError as exc:      # corpus.CorpusError: where it looked, what to do
            raise CorpusMissing(str(exc)) from None


def to_gradebook(course: config.Course, submitted: str, out: str, submissions: Sequence[grading.Task],
                 batch: grading.Batch) -> list[str]:
    """Stage 4: nbgrader's autograde of every assignment with new results; returns warnings.

    A submission the grader failed on is not staged at all (nothing about that student may be
    recorded, not even a 0); one that could not be read is staged as the released stub, so
    nbgrader records its verdicts without reading what was handed in. Files of a hand-in the
    release does not declare are left out, and listed in ``batch.left_out``."""
    from autograder.nbgrader import apps      # nbgrader takes seconds to load: only once grading
    fresh = {r.key for r in batch.graded}
    by_key = {r.key: r for r in batch.records}
    warnings = []
    for assignment in course.assignments:
        mine = [task for task in submissions if task.assignment == assignment.id]
        autograded = [os.path.join(out, "autograded", task.student, task.assignment, assignment.notebook)
                      for task in mine]
        if not mine or (not any(task.key in fresh for task in mine)
                        and all(os.path.exists(p) for p in autograded)):
            continue      # the gradebook already holds these very results
        apps.register(course, assignment, out)
        for task in mine:
            if not by_key[task.key].grader_error:
                left_out = staging.stage(course, submitted, out, task.student, assignment)
                if left_out:
                    batch.left_out.append(f"{task.student}/{assignment.id}: {', '.join(left_out)}")
        try:
            apps.autograde(course, assignment, out)
        except NbgraderError as exc:
            warnings.append(str(exc))
    return warnings


def export(course: config.Course, out: str, records: Sequence[Submission]) -> list[str]:
    """Stages 5 and 6: every export and the feedback pages, from ``records`` and the gradebook.

    Each stands alone: one that fails becomes a warning and the others are still written.
    Returns the warnings."""
    from autograder.nbgrader import apps, gradebook as nbgrader_gradebook
    warnings = []
    try:
        gradebook = nbgrader_gradebook.scores(course, out)
    except Exception as exc:  # noqa: BLE001 - the exports from the results alone are still worth having
        warnings.append(f"nbgrader's gradebook could not be read ({exc}); exports use the results only")
        gradebook = {}
    stages = (("parts", lambda: exports.write_grades(out, records)),
              ("totals", lambda: exports.write_totals(out, course, records, gradebook)),
              ("gradescope", lambda: exports.write_gradescope(out, course, records, gradebook)),
              ("nbgrader", lambda: apps.export(course, out)),
              ("feedback", lambda: feedback.write_feedback(out, records, course, gradebook)),
              ("report", lambda: cohort_page.write(course, out, records)))
    for name, write in stages:
        try:
            write()
        except Exception as exc:  # noqa: BLE001 - one export's failure must not stop the others
            warnings.append(f"the {name} export failed: {type(exc).__name__}: {exc}")
    return warnings
