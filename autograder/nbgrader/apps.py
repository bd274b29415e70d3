"""nbgrader's converters and export, run from ``course`` as nbgrader's apps run them, quietly.

nbgrader logs every step; its log is kept and shown only when a step fails, and a failure is an
:class:`~autograder.errors.NbgraderError` naming the command and its first specific error.
"""

import concurrent.futures as cf
import contextlib
import io
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Collection, Iterator, Sequence

from nbgrader.api import Gradebook
from nbgrader.apps.exportapp import ExportApp  # noqa: F401 - loads the plugin machinery
from nbgrader.converters import BaseConverter, GenerateAssignment
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.course.config import Assignment, Course
from autograder.errors import NbgraderError
from autograder.grade import forked
from autograder.nbgrader import alembic_head  # noqa: F401 - a new gradebook's schema version, read in this process
from autograder.nbgrader import shared_engine  # noqa: F401 - one engine per gradebook, its compiled statements kept
from autograder.nbgrader.converters import SafeAutograde, SafeFeedback
from autograder.nbgrader.gradebook import holds_release
from autograder.nbgrader.plugins import SafeCsvExport
from autograder.nbgrader.settings import generate_preprocessors, settings

_GENERIC_ERROR = re.compile(r"There was an error processing|Please see the|Traceback")
_RAISED = re.compile(r"^[A-Za-z_.]*(Error|Exception): ")


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[io.StringIO]:
    """nbgrader logs every step; keep its log, show it only when it fails."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log = logging.getLogger(name)
    log.addHandler(handler)
    log.propagate = False
    try:
        yield stream
    finally:
        log.removeHandler(handler)


def _run(converter_cls: type[BaseConverter], cfg: Config, assignment_id: str, student_id: str = "*",
         **attrs: object) -> None:
    """Run one nbgrader converter quietly; raises NbgraderError with its first line when it fails."""
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id = assignment_id
    coursedir.student_id = student_id
    app = converter_cls(coursedir=coursedir, config=cfg)
    for key, value in attrs.items():
        setattr(app, key, value)
    with _quiet(app.log.name) as stream, warnings.catch_warnings():
        # nbgrader's autograde adds objects in an order SQLAlchemy warns about; scores are unaffected
        warnings.filterwarnings("ignore", message=".*not in session.*")
        app.log = logging.getLogger(app.log.name)
        try:
            app.start()
        except Exception as exc:  # nbgrader raises after finishing the others
            ours = next(c for c in converter_cls.__mro__ if c.__module__.startswith("nbgrader."))
            command = re.sub(r"(?<!^)(?=[A-Z])", "_", ours.__name__).lower()
            log = stream.getvalue()
            # nbgrader's exception only points at "the above traceback": its log's first specific
            # error is the cause (e.g. no cells may be added once there are submissions)
            lines = log.splitlines()
            raised = [line for line in lines if _RAISED.match(line)]     # a traceback's last line
            cause = next((line[len("ERROR "):] for line in lines
                          if line.startswith("ERROR ") and not _GENERIC_ERROR.search(line)),
                         raised[-1] if raised else (str(exc).splitlines() or [""])[0])
            raise NbgraderError(f"nbgrader {command} {assignment_id} failed: {cause}", log[-3000:]) from exc


def generate(course: Course, assignment: Assignment, release_dir: str | None = None, out: str | None = None,
             source_dir: str | None = None) -> None:
    """nbgrader generate_assignment: the release, and the assignment in the gradebook."""
    cfg = settings(course, out)
    cfg.GenerateAssignment.preprocessors = generate_preprocessors()
    if release_dir:
        cfg.CourseDirectory.release_directory = release_dir
    if source_dir:
        cfg.CourseDirectory.source_directory = source_dir
    _run(GenerateAssignment, cfg, assignment.id, force=True)


def register(course: Course, assignment: Assignment, out: str) -> None:
    """Put the assignment's notebooks and grade cells in ``out``'s gradebook, unless it holds
    this very release already (nbgrader's generate_assignment takes seconds, and would change nothing)."""
    if holds_release(course, assignment, out):
        return
    with tempfile.TemporaryDirectory() as scratch:
        generate(course, assignment, release_dir=scratch, out=out)


def autograde(course: Course, assignment: Assignment, out: str, student_id: str = "*",
              only: Collection[str] | None = None) -> None:
    """nbgrader autograde of results `course grade` has just written (none is graded again):
    of the students ``student_id`` matches, or of ``only`` these (nbgrader's ``student_id_exclude``
    names every other student staged in ``out/submitted``; a regrade of one student reads one)."""
    cfg = settings(course, out)
    cfg.ApplyResults.course_yaml = ""
    if only is not None:        # no student id holds a comma (untrusted.student_id_problem refuses it)
        staged = os.path.join(out, "submitted")
        listed = set(os.listdir(staged)) if os.path.isdir(staged) else set()
        # a folder named with one is no student's (autograde refuses it), and would split the list
        cfg.CourseDirectory.student_id_exclude = ",".join(sorted(s for s in listed - set(only) if "," not in s))
    _run(SafeAutograde, cfg, assignment.id, student_id, force=True, create_student=True)


SHARE = 4          # the fewest hand-ins an autograde is split into shares of (each run has its start)
WORKERS = 2        # the most processes autograding at once: the gradebook takes one commit at a time


def autograde_all(course: Course, out: str, runs: Sequence[tuple[Assignment, Collection[str] | None]],
                  workers: int = WORKERS) -> list[str]:
    """:func:`autograde` of each ``(assignment, only)`` of ``runs`` (``only``: students just staged),
    their students shared out among ``workers`` forked processes (at most :data:`WORKERS`) writing
    to the one gradebook (its database takes their commits in
    turn, as it takes formgrader's beside a batch; ``only`` None, every student staged, is autograded
    here, one assignment after the other); returns nbgrader's failures as warnings.

    On two cores nbgrader's autograde of each hand-in is most of what follows grading. A share that
    fails in a worker (the gradebook busy past its timeout, a worker gone) is autograded again here,
    alone, so that only a failure of nbgrader's own is a warning."""
    workers = min(workers, WORKERS)
    shares = [(assignment, share) for assignment, only in runs for share in _shares(only, workers)]
    if workers < 2 or len(shares) < 2 or any(only is None for _, only in shares):
        return [warning for assignment, only in shares if (warning := _autograde_or_why(course, assignment, out, only))]
    # a student of several assignments is in several shares at once: made here first, so that no
    # two workers make the same student (one would fail on the gradebook's unique id)
    staged = {student for _, only in shares for student in only or ()}
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        for student in sorted(staged - {student.id for student in gb.students}):
            gb.add_student(student)
    again = []
    pool = forked.pool(workers)
    try:
        futures = {pool.submit(_autograde_or_why, course, assignment, out, only): (assignment, only)
                   for assignment, only in shares}
        for future in cf.as_completed(futures):
            try:
                failed = future.result()
            except Exception:  # noqa: BLE001 - the worker itself failed: try here
                failed = "a worker failed"
            if failed:
                again.append(futures[future])
    except BaseException:       # Ctrl-C: the workers stop now, not after every share
        forked.stop(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [warning for assignment, only in again if (warning := _autograde_or_why(course, assignment, out, only))]


def _shares(only: Collection[str] | None, workers: int) -> list[Collection[str] | None]:
    """``only`` cut into at most ``workers`` shares of at least :data:`SHARE` students (None, every
    student staged, is one share)."""
    if only is None or workers < 2:
        return [only]
    students = sorted(only)
    count = max(1, min(workers, len(students) // SHARE))
    return [set(students[i::count]) for i in range(count)]


def _autograde_or_why(course: Course, assignment: Assignment, out: str, only: Collection[str] | None) -> str:
    """:func:`autograde`, and "" or nbgrader's failure."""
    try:
        autograde(course, assignment, out, only=only)
    except NbgraderError as exc:
        return str(exc)
    return ""


def generate_feedback(course: Course, assignment: Assignment, out: str, student_id: str = "*") -> None:
    """nbgrader generate_feedback: feedback/<student>/<assignment>/<notebook>.html, from the
    autograded notebooks (whose test cells hold the suites' summaries, never hidden source)."""
    _run(SafeFeedback, settings(course, out), assignment.id, student_id, force=True)


def export(course: Course, out: str) -> str:
    """nbgrader export: grades.csv, the very file ``nbgrader export`` writes in the course folder."""
    cfg = settings(course, out)
    path = os.path.join(out, "grades.csv")
    plugin = SafeCsvExport(config=cfg)
    plugin.to = path
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        plugin.export(gb)
    return path
