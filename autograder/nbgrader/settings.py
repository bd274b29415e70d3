"""How nbgrader is configured for this course, in every folder nbgrader runs in.

One function, :func:`settings`, says it: ``solutions/`` is nbgrader's source directory and
``assignments/`` its release directory. ``nbgrader_config.py`` at the course root and the one
written into every grading folder (:func:`write_course_folder`) both call :func:`configure`,
so the CLI, formgrader and ``course grade`` agree. In every one of them nbgrader's autograde
never runs the student's notebook in a kernel (where a student could patch the checks): its
kernel run is replaced by ApplyResults (:mod:`autograder.nbgrader.preprocessors`), which writes
the course grader's verdicts into the test cells (grading the submission first when it has no
current result), and nbgrader's SaveAutoGrades (SaveGrades: its lookups and commits made once a
notebook) puts them in the gradebook. So ``course grade``,
``nbgrader autograde`` and formgrader's Autograde button give the same scores.

The classes nbgrader is given by name are this package's: their dotted names are built from
:data:`PACKAGE`, so they follow the package wherever it is.
"""

import os
import sys

from traitlets.config import Config

from autograder import untrusted
from autograder.course import config, folders, private
from autograder.course.config import Course
from autograder.errors import CourseError

PACKAGE = __name__.rpartition(".")[0]
# nbgrader's exchange steps -> their classes, each refused while course.yaml does not load (plugins/refused.py)
REFUSED_STEPS = {"collect": "ExchangeCollect", "release_assignment": "ExchangeReleaseAssignment",
                 "release_feedback": "ExchangeReleaseFeedback", "fetch_assignment": "ExchangeFetchAssignment",
                 "fetch_feedback": "ExchangeFetchFeedback", "submit": "ExchangeSubmit", "list": "ExchangeList"}
_SAID: set[str] = set()      # the course.yaml problems said in this process
CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("not written yet")'


def _course_class(module: str, name: str) -> str:
    """The dotted name nbgrader's configuration gives a class of this package."""
    return f"{PACKAGE}.{module}.{name}"


def settings(course: Course, out: str | None = None) -> Config:
    """nbgrader's configuration for this course, with working state in ``out``."""
    out = os.path.abspath(out or course.root)
    c = Config()
    c.CourseDirectory.root = out
    c.CourseDirectory.course_id = course.course_id
    c.CourseDirectory.source_directory = os.path.join(course.root, "solutions")
    c.CourseDirectory.release_directory = os.path.join(course.root, "assignments")
    c.CourseDirectory.db_url = course.db_url or f"sqlite:///{os.path.join(out, 'gradebook.db')}?timeout=60"
    c.ClearSolutions.code_stub = {"python": CODE_STUB}
    c.OverwriteCells.add_missing_cells = True
    c.Execute.timeout = int(max(course.limits.time_per_test, 1))
    c.Exchange.root = course.exchange_root or os.path.join(out, "exchange")
    # hand-ins are strangers' files: collect never follows a link nor takes another's name,
    # the CSV export cannot hold a formula, feedback pages never carry a student's script
    c.ExchangeFactory.collect = _course_class("plugins", "SafeCollect")
    c.ExchangeFactory.release_feedback = _course_class("plugins", "SafeReleaseFeedback")
    c.ExportApp.plugin_class = _course_class("plugins", "SafeCsvExport")
    c.HTMLExporter.sanitize_html = True
    # nbconvert would pass a raw cell through as HTML, its ids and classes kept: a hand-in's raw cells
    # reach nbgrader as markdown (staging.as_released), and formgrader's and the feedback pages show
    # no raw cell at all (one of a notebook autograded before that, too)
    c.HTMLExporter.raw_mimetypes = []
    # nbconvert checks a notebook against nbformat's schema once, after the last preprocessor, not
    # after each of them (five a pass at autograde, two passes a hand-in): the same check, a fifth of its cost
    c.Exporter.optimistic_validation = True
    # nbgrader's sanitising, with deleted test cells restored (RestoreCells) and the students'
    # markdown made safe for formgrader, which renders it unsanitised
    c.Autograde.sanitize_preprocessors = [
        "nbgrader.preprocessors.ClearOutput", "nbgrader.preprocessors.DeduplicateIds",
        "nbgrader.preprocessors.OverwriteKernelspec", _course_class("preprocessors", "RestoreCells"),
        _course_class("preprocessors", "CheckCellMetadata"), _course_class("preprocessors", "SanitizeMarkdown")]
    c.RestoreCells.add_missing_cells = True
    c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades",
                                        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
                                        _course_class("preprocessors", "SanitizeMarkdown")]
    # no kernel: the course grader's verdicts, graded here when a submission has none yet
    c.Autograde.autograde_preprocessors = [
        _course_class("preprocessors", "ApplyResults"),
        _course_class("preprocessors", "SaveGrades"),
        _course_class("preprocessors", "CourseLatePenalties"),
        _course_class("preprocessors", "CheckCellMetadata"),
    ]
    c.ApplyResults.results_dir = os.path.join(out, "results")
    c.ApplyResults.course_yaml = os.path.abspath(course.path)
    c.CourseLatePenalties.course_yaml = os.path.abspath(course.path)
    return c


def left_behind(course: Course, out: str) -> str | None:
    """Why ``out``'s own SQLite gradebook would be lost (None when it would not): course.yaml's
    ``db_url`` points elsewhere, so every command would read a gradebook without its hand grades
    (``course grade``, ``export``, ``status``, ``history`` and ``report`` stop with it, and so do
    nbgrader's own commands in the folder, :func:`configure`)."""
    path = os.path.join(out, "gradebook.db")
    if not course.db_url or not os.path.exists(path) or os.path.abspath(path) in course.db_url:
        return None
    return (f"{path} holds this folder's gradebook (the hand grades too) but course.yaml's db_url points at "
            "another: copy it there first (sqlite3 gradebook.db .dump, or pgloader for PostgreSQL), then rename "
            "gradebook.db to gradebook.db.moved; or take db_url: out of course.yaml")


def configure(c: Config, out: str | None = None, course_yaml: str | None = None,
              keep_private: bool = True) -> None:
    """Called from an ``nbgrader_config.py``: apply the settings of the course in ``course_yaml``.

    nbgrader's own generate_assignment (the command, formgrader's Generate button) also adds
    the self-check kit there, so its release is the one `course release` makes. Whatever the
    command writes there (collect's ``submitted/``, autograde's ``autograded/`` and gradebook,
    generate_feedback's ``feedback/``) is the instructor's alone: the folder is made ``0700``,
    unless ``keep_private`` is False (a grading folder made in a folder that existed, whose mode
    is its owner's: :mod:`autograder.course.folders`).
    Every log record of the process shows the control characters of its text as escapes
    (:func:`autograder.untrusted.guard_logging`): collect logs the names students chose.
    """
    from autograder.nbgrader import converters, formgrader_session
    converters.install()
    formgrader_session.install()     # a running formgrader sees what `course grade` writes
    untrusted.guard_logging()       # file names, ids and messages of students, shown in every log
    try:
        course = config.load(course_yaml)
    except config.ConfigError as exc:
        _refuse(c, str(exc))
        return
    try:
        if keep_private:
            private.make(out or course.root)
    except CourseError as exc:      # another's folder: nbgrader's own permissions decide
        print(f"warning: {exc}", file=sys.stderr)
    c.merge(settings(course, out))
    c.GenerateAssignment.preprocessors = generate_preprocessors(_course_class("preprocessors", "AddSelfCheckKit"))
    c.AddSelfCheckKit.course_yaml = os.path.abspath(course.path)
    lost = left_behind(course, out or course.root)
    if lost:        # each step on the gradebook would read and write another than the hand grades'
        _refuse(c, lost, exchange=False)     # students still fetch and submit
        # what nbgrader opens before a step refuses is the folder's own gradebook, never db_url's
        c.CourseDirectory.db_url = f"sqlite:///{os.path.join(out or course.root, 'gradebook.db')}?timeout=60"


def generate_preprocessors(*more: str) -> list:
    """nbgrader's generate_assignment steps, the course's CheckCellMetadata in the place of
    nbgrader's (the same check, its schema checked once), then ``more``."""
    from nbgrader.converters import GenerateAssignment      # nbgrader loads in seconds: only where it runs
    from nbgrader.preprocessors import CheckCellMetadata
    return [_course_class("preprocessors", "CheckCellMetadata") if step is CheckCellMetadata else step
            for step in GenerateAssignment.class_traits()["preprocessors"].default()] + list(more)


def _refuse(c: Config, problem: str, exchange: bool = True) -> None:
    """A course.yaml that does not load stops every nbgrader step with its one line; a gradebook
    it leaves behind stops every step on the gradebook (``exchange`` False).

    nbgrader reports an error raised in a config file and goes on with its defaults: it
    would run students' notebooks in a kernel, unsandboxed, and score the check cells.
    Every converter's only preprocessor refuses instead, and so does the export."""
    if problem not in _SAID:         # nbgrader reads its configuration more than once
        _SAID.add(problem)
        print(f"error: {problem}", file=sys.stderr)
    for step, base in REFUSED_STEPS.items() if exchange else ():
        setattr(c.ExchangeFactory, step, _course_class("plugins", "Refused" + base))
    c.ExportApp.plugin_class = _course_class("plugins", "RefusedExport")
    refuse = [_course_class("preprocessors", "Refuse")]
    c.Autograde.sanitize_preprocessors = refuse
    c.Autograde.autograde_preprocessors = refuse
    c.GenerateAssignment.preprocessors = refuse
    c.GenerateFeedback.preprocessors = refuse
    c.Refuse.problem = problem


def write_course_folder(course: Course, out: str) -> None:
    """Make ``out`` an nbgrader course folder (formgrader, ``nbgrader export``) for this course,
    private to its instructor (:mod:`autograder.course.private`): a new folder is made ``0700``, an
    existing one only when no other account can read it, its mode unchanged (:mod:`autograder.course.folders`)."""
    if os.path.realpath(out) == os.path.realpath(course.root):
        private.make(out)
        return
    keep = folders.make_grading_folder(course, out)
    with open(os.path.join(out, folders.CONFIG), "w") as fh:
        fh.write(f"{folders.MARK}: this folder holds one batch's working state.\n"
                 "import os\n"
                 f"from {__name__} import configure\n\n"
                 "configure(get_config(), out=os.path.dirname(os.path.abspath(__file__)),  # noqa: F821\n"
                 f"          course_yaml={os.path.abspath(course.path)!r}"
                 + ("" if keep else f",\n          {folders.KEEP}") + ")\n")

