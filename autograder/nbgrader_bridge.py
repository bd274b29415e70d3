"""nbgrader does the releasing, the gradebook and formgrader; this module sets it up.

One function, :func:`settings`, says how nbgrader is configured for this
course: ``solutions/`` is its source directory and ``assignments/`` its
release directory. ``nbgrader_config.py`` at the course root and the one
written into every grading folder both call it, so the CLI, formgrader and
``course grade`` agree. In every one of them nbgrader's autograde never runs
the student's notebook in a kernel (where a student could patch the checks):
its kernel run is replaced by :class:`ApplyResults`, which writes the course
grader's verdicts into the test cells (grading the submission first when it
has no current result), and nbgrader's SaveAutoGrades puts them in the
gradebook. So ``course grade``, ``nbgrader autograde`` and formgrader's
Autograde button give the same scores.
"""

import contextlib
import io
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings

from traitlets import Unicode
from traitlets.config import Config

from autograder.errors import CourseError, NbgraderError

# nbgrader runs `alembic` from PATH to open a gradebook: make it this interpreter's.
_BIN = os.path.dirname(sys.executable)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")

CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("not written yet")'


def settings(course, out=None):
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
    c.ExchangeFactory.collect = "autograder.nbgrader_plugins.SafeCollect"
    c.ExportApp.plugin_class = "autograder.nbgrader_plugins.SafeCsvExport"
    c.HTMLExporter.sanitize_html = True
    # nbgrader's sanitising, with deleted test cells restored (autograder/nbgrader_cells.py) and
    # the students' markdown made safe for formgrader, which renders it unsanitised
    c.Autograde.sanitize_preprocessors = [
        "nbgrader.preprocessors.ClearOutput", "nbgrader.preprocessors.DeduplicateIds",
        "nbgrader.preprocessors.OverwriteKernelspec", "autograder.nbgrader_cells.RestoreCells",
        "nbgrader.preprocessors.CheckCellMetadata", "autograder.nbgrader_plugins.SanitizeMarkdown"]
    c.RestoreCells.add_missing_cells = True
    c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades",
                                        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
                                        "autograder.nbgrader_plugins.SanitizeMarkdown"]
    # no kernel: the course grader's verdicts, graded here when a submission has none yet
    c.Autograde.autograde_preprocessors = [
        "autograder.nbgrader_bridge.ApplyResults",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    c.ApplyResults.results_dir = os.path.join(out, "results")
    c.ApplyResults.course_yaml = os.path.abspath(course.path)
    return c


def configure(c, out=None, course_yaml=None):
    """Called from an ``nbgrader_config.py``: apply the settings of the course in ``course_yaml``.

    nbgrader's own generate_assignment (the command, formgrader's Generate button) also adds
    the self-check kit there, so its release is the one `course release` makes. Whatever the
    command writes there (collect's ``submitted/``, autograde's ``autograded/`` and gradebook,
    generate_feedback's ``feedback/``) is the instructor's alone: the folder is made ``0700``.
    """
    from nbgrader.converters import GenerateAssignment
    from autograder import config, nbgrader_handin, private
    nbgrader_handin.install()
    try:
        course = config.load(course_yaml)
    except config.ConfigError as exc:
        _refuse(c, str(exc))
        return
    try:
        private.make(out or course.root)
    except CourseError as exc:      # another's folder: nbgrader's own permissions decide
        print(f"warning: {exc}", file=sys.stderr)
    c.merge(settings(course, out))
    c.GenerateAssignment.preprocessors = (list(GenerateAssignment.class_traits()["preprocessors"].default())
                                          + ["autograder.nbgrader_bridge.AddSelfCheckKit"])
    c.AddSelfCheckKit.course_yaml = os.path.abspath(course.path)


def _refuse(c, problem):
    """A course.yaml that does not load stops every nbgrader step with its one line.

    nbgrader reports an error raised in a config file and goes on with its defaults: it
    would run students' notebooks in a kernel, unsandboxed, and score the check cells.
    Every converter's only preprocessor refuses instead."""
    print(f"error: {problem}", file=sys.stderr)
    refuse = ["autograder.nbgrader_bridge.Refuse"]
    c.Autograde.sanitize_preprocessors = refuse
    c.Autograde.autograde_preprocessors = refuse
    c.GenerateAssignment.preprocessors = refuse
    c.GenerateFeedback.preprocessors = refuse
    c.Refuse.problem = problem


def write_course_folder(course, out):
    """Make ``out`` an nbgrader course folder (formgrader, ``nbgrader export``) for this course,
    private to its instructor (:mod:`autograder.private`)."""
    from autograder import private
    private.make(out)
    if os.path.abspath(out) == os.path.abspath(course.root):
        return
    with open(os.path.join(out, "nbgrader_config.py"), "w") as fh:
        fh.write("# Written by `course grade`: this folder holds one batch's working state.\n"
                 "import os\n"
                 "from autograder.nbgrader_bridge import configure\n\n"
                 "configure(get_config(), out=os.path.dirname(os.path.abspath(__file__)),  # noqa: F821\n"
                 f"          course_yaml={os.path.abspath(course.path)!r})\n")


@contextlib.contextmanager
def _quiet(name):
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


_GENERIC_ERROR = re.compile(r"There was an error processing|Please see the|Traceback")


def _run(converter_cls, cfg, assignment_id, student_id="*", **attrs):
    """Run one nbgrader converter quietly; raises NbgraderError with its first line when it fails."""
    from nbgrader.coursedir import CourseDirectory
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
            cause = next((line[len("ERROR "):] for line in log.splitlines()
                          if line.startswith("ERROR ") and not _GENERIC_ERROR.search(line)),
                         (str(exc).splitlines() or [""])[0])
            raise NbgraderError(f"nbgrader {command} {assignment_id} failed: {cause}", log[-3000:]) from exc


def generate(course, assignment, release_dir=None, out=None, source_dir=None):
    """nbgrader generate_assignment: the release, and the assignment in the gradebook."""
    from nbgrader.converters import GenerateAssignment
    cfg = settings(course, out)
    if release_dir:
        cfg.CourseDirectory.release_directory = release_dir
    if source_dir:
        cfg.CourseDirectory.source_directory = source_dir
    _run(GenerateAssignment, cfg, assignment.id, force=True)


def register(course, assignment, out):
    """Put the assignment's notebooks and grade cells in ``out``'s gradebook."""
    with tempfile.TemporaryDirectory() as scratch:
        generate(course, assignment, release_dir=scratch, out=out)


def autograde(course, assignment, out, student_id="*"):
    """nbgrader autograde of results `course grade` has just written (none is graded again)."""
    from autograder.nbgrader_handin import SafeAutograde
    cfg = settings(course, out)
    cfg.ApplyResults.course_yaml = ""
    _run(SafeAutograde, cfg, assignment.id, student_id, force=True, create_student=True)


def export(course, out):
    """nbgrader export: grades.csv, the very file ``nbgrader export`` writes in the course folder."""
    from nbgrader.apps.exportapp import ExportApp  # noqa: F401 - loads the plugin machinery
    from nbgrader.api import Gradebook
    from autograder.nbgrader_plugins import SafeCsvExport
    cfg = settings(course, out)
    path = os.path.join(out, "grades.csv")
    plugin = SafeCsvExport(config=cfg)
    plugin.to = path
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        plugin.export(gb)
    return path


try:
    from nbgrader.preprocessors.base import NbGraderPreprocessor
except ImportError:  # pragma: no cover - nbgrader is a dependency
    NbGraderPreprocessor = object


class Refuse(NbGraderPreprocessor):
    """Stands in for every preprocessor while course.yaml does not load (see :func:`_refuse`)."""

    problem = Unicode("", help="what is wrong with course.yaml, in one line").tag(config=True)

    def preprocess(self, nb, resources):
        raise RuntimeError(f"nothing is graded until course.yaml is fixed: {self.problem}")


class ApplyResults(NbGraderPreprocessor):
    """Write each part's verdict into its test cell, as nbgrader scores test cells.

    The verdicts are the course grader's, from ``results/<student>/<assignment>.json``.
    With ``course_yaml`` set (every nbgrader command in a course folder: plain
    ``nbgrader autograde``, formgrader's Autograde button), a submission whose
    result is missing or stale is graded first, sandboxed and with the hidden
    suites, and its result written as ``course grade`` writes it. A part's score
    becomes the cell's ``execute_result`` (nbgrader's partial credit) after a
    plain-text summary; a part with no verdict gets an error output, so nbgrader
    scores it 0 rather than trusting an empty cell.
    """

    results_dir = Unicode("", help="<course folder>/results, holding <student>/<assignment>.json").tag(config=True)
    course_yaml = Unicode("", help="the course's course.yaml; when set, a submission without a "
                                   "current result is graded before its verdicts are applied").tag(config=True)

    def _record(self, student, assignment_id, notebook):
        """The submission's result (None when none), graded now when it has none that is current."""
        from autograder import grading
        out = os.path.dirname(os.path.abspath(self.results_dir))
        record = grading.read_result(out, student, assignment_id)
        if self.course_yaml:
            from nbgrader.coursedir import CourseDirectory
            from autograder import config
            course = config.load(self.course_yaml)
            coursedir = CourseDirectory(config=self.config)
            path = os.path.join(coursedir.format_path(coursedir.submitted_directory, student, assignment_id),
                                f"{notebook}.ipynb")
            why = grading.stale(course, record, path)
            if why:
                self.log.info("Grading %s/%s with the course's suites (%s)", student, assignment_id, why)
                record = grading.grade_one(course, student, assignment_id, path, out)
        return record

    def preprocess(self, nb, resources):
        from nbgrader.utils import is_grade, is_solution
        from nbformat.v4 import new_output
        info = resources["nbgrader"]
        record = self._record(info["student"], info["assignment"], info.get("notebook"))
        if record is not None and record.grader_error:
            raise RuntimeError(f"{info['student']}: not graded (the grader failed on it); nothing recorded")
        parts = {p.part: p for p in record.parts} if record is not None else {}
        for cell in nb.cells:
            if cell.cell_type != "code" or not is_grade(cell) or is_solution(cell):
                continue
            part = parts.get(cell.metadata.nbgrader["grade_id"].removeprefix("check_"))
            if part is None:
                cell.outputs = [new_output("error", ename="NotGraded", evalue="no verdict for this part",
                                           traceback=["No verdict was recorded for this part."])]
                continue
            summary = f"{part.part}: {part.score:g} / {part.max_score:g} ({part.status})\n{part.reason}\n"
            for check in part.checks:
                mark = "ok  " if check.status == "passed" else "FAIL"
                summary += f"  {mark} [{check.visibility}] {check.doc}\n"
                if check.status != "passed":
                    summary += f"        {check.message}\n"
            cell.outputs = [
                new_output("stream", name="stdout", text=summary),
                new_output("execute_result", data={"text/plain": repr(float(part.score))},
                           execution_count=None),
            ]
        return nb, resources


class AddSelfCheckKit(NbGraderPreprocessor):
    """Put the self-check kit beside the notebook nbgrader's own generate_assignment releases."""

    course_yaml = Unicode("", help="the course's course.yaml").tag(config=True)

    def preprocess(self, nb, resources):
        from nbgrader.coursedir import CourseDirectory
        from autograder import config, release
        course = config.load(self.course_yaml)
        assignment = course.assignment(resources["nbgrader"]["assignment"])
        coursedir = CourseDirectory(config=self.config)
        release.vendor(course, assignment, coursedir.format_path(coursedir.release_directory, ".", assignment.id))
        return nb, resources


def stage(course, submitted, out, student, assignment):
    """Put one submission where nbgrader reads it (``out/submitted``), as read through the reader
    (autograder/nbgrader_handin.py): its notebook, or the released one when it cannot be read (its
    verdicts say why), and its timestamp. In place (``submitted`` is ``out/submitted``) nbgrader's
    autograde reads it so itself. Returns the names of the files left out."""
    from autograder import handin, nbgrader_handin
    src = os.path.join(submitted, student, assignment.id)
    dest = os.path.join(out, "submitted", student, assignment.id)
    try:
        files, _, left_out = nbgrader_handin.read_handin(os.path.abspath(submitted), student, assignment.id,
                                                         course.release(assignment))
    except handin.Refused:
        files, left_out = {}, []
    if os.path.abspath(src) != os.path.abspath(dest):
        if os.path.exists(dest):
            shutil.rmtree(dest)
        if assignment.notebook not in files:
            with open(course.release(assignment, assignment.notebook), "rb") as fh:
                files[assignment.notebook] = fh.read()
        nbgrader_handin.write(dest, files)
    return left_out


# --- reading the gradebook back: the totals include the answers graded in formgrader ---------

def gradebook_scores(course, out):
    """Everything nbgrader's gradebook holds for each submission, hand-graded answers included.

    Returns ``{(student, assignment): {"score", "max_score", "penalty", "needs_manual_grade",
    "written": {grade id: {"score", "max_score", "graded", "comment"}}, "overrides": {part: score}}}``;
    ``overrides`` are parts whose autograded score was changed in formgrader; ``score`` is what
    ``nbgrader export`` reports (autograded plus hand-graded, minus any late penalty).
    """
    from nbgrader.api import Gradebook, MissingEntry
    cfg = settings(course, out)
    found = {}
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        for assignment in course.assignments:
            try:
                gb.find_assignment(assignment.id)
            except MissingEntry:
                continue
            notebook = os.path.splitext(assignment.notebook)[0]
            for sub in gb.assignment_submissions(assignment.id):
                written = {}
                for cell, points in assignment.written.items():
                    try:
                        grade = gb.find_grade(cell, notebook, assignment.id, sub.student_id)
                    except MissingEntry:
                        written[cell] = {"score": 0.0, "max_score": float(points), "graded": False}
                        continue
                    graded = grade.manual_score is not None or not grade.needs_manual_grade
                    try:        # the TA's comment in formgrader, which the student should get with the score
                        comment = gb.find_comment(cell, notebook, assignment.id, sub.student_id).manual_comment
                    except MissingEntry:
                        comment = None
                    written[cell] = {"score": float(grade.score or 0.0), "max_score": float(grade.max_score),
                                     "graded": bool(graded), "comment": comment or ""}
                overrides = {}      # a part's score an instructor set by hand in formgrader
                for part in assignment.parts:
                    try:
                        grade = gb.find_grade(part.check_cell, notebook, assignment.id, sub.student_id)
                    except MissingEntry:
                        continue
                    if grade.manual_score is not None:
                        overrides[part.id] = float(grade.manual_score)
                found[sub.student_id, assignment.id] = {
                    "score": float(sub.score or 0.0), "max_score": float(sub.max_score or 0.0),
                    "penalty": float(sub.late_submission_penalty or 0.0),
                    "needs_manual_grade": bool(sub.needs_manual_grade), "written": written,
                    "overrides": overrides}
    return found


def set_manual_grade(course, out, student, assignment_id, cell, score, comment=None):
    """Enter a hand grade as formgrader does (its API sets ``manual_score`` on the grade)."""
    from nbgrader.api import Gradebook
    assignment = course.assignment(assignment_id)
    notebook = os.path.splitext(assignment.notebook)[0]
    with Gradebook(settings(course, out).CourseDirectory.db_url, course.course_id) as gb:
        grade = gb.find_grade(cell, notebook, assignment_id, student)
        grade.manual_score = float(score)
        if comment is not None:
            gb.find_comment(cell, notebook, assignment_id, student).manual_comment = comment
        gb.db.commit()


# --- the exchange: release, fetch, submit, collect, release_feedback ---------------------------

def exchange_root(course, out=None):
    """Where nbgrader's exchange is (:mod:`autograder.exchange` sets it up and checks it)."""
    return settings(course, out).Exchange.root


def generate_feedback(course, assignment, out, student_id="*"):
    """nbgrader generate_feedback: feedback/<student>/<assignment>/<notebook>.html, from the
    autograded notebooks (whose test cells hold the suites' summaries, never hidden source)."""
    from autograder.nbgrader_handin import SafeFeedback
    _run(SafeFeedback, settings(course, out), assignment.id, student_id, force=True)
