"""nbgrader does the releasing, the gradebook and formgrader; this module sets it up.

One function, :func:`settings`, says how nbgrader is configured for this
course: ``solutions/`` is its source directory and ``assignments/`` its
release directory. ``nbgrader_config.py`` at the course root and the one
written into every grading folder both call it, so the CLI, formgrader and
``course grade`` agree. Grading writes scores with nbgrader's own autograde
converter, in which the kernel run is replaced by :class:`ApplyResults`: the
test cells receive the verdicts of the hidden suites as their outputs, and
nbgrader's SaveAutoGrades puts them in the gradebook.
"""

import contextlib
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings

from traitlets import Unicode
from traitlets.config import Config

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
    c.CourseDirectory.db_url = f"sqlite:///{os.path.join(out, 'gradebook.db')}?timeout=60"
    c.ClearSolutions.code_stub = {"python": CODE_STUB}
    c.OverwriteCells.add_missing_cells = True
    c.Execute.timeout = int(max(course.time_per_test, 1))
    c.Exchange.root = os.path.join(out, "exchange")
    return c


def configure(c, out=None):
    """Called from an ``nbgrader_config.py``: apply this course's settings."""
    from autograder import config
    c.merge(settings(config.load(), out))


def write_course_folder(course, out):
    """Make ``out`` an nbgrader course folder (formgrader, ``nbgrader export``) for this course."""
    os.makedirs(out, exist_ok=True)
    if os.path.abspath(out) == os.path.abspath(course.root):
        return
    with open(os.path.join(out, "nbgrader_config.py"), "w") as fh:
        fh.write("# Written by `course grade`: this folder holds one batch's working state.\n"
                 "import os\n"
                 "from autograder.nbgrader_bridge import configure\n\n"
                 "configure(get_config(), out=os.path.dirname(os.path.abspath(__file__)))  # noqa: F821\n")


@contextlib.contextmanager
def _quiet(name):
    """nbgrader logs every step; keep its log, show it only when it fails."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger(name)
    log.addHandler(handler)
    log.propagate = False
    try:
        yield stream
    finally:
        log.removeHandler(handler)


def _run(converter_cls, cfg, assignment_id, student_id="*", **attrs):
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
            return f"{type(exc).__name__}: {exc}\n{stream.getvalue()[-3000:]}"
    return None


def generate(course, assignment, release_dir=None, out=None):
    """nbgrader generate_assignment: the release, and the assignment in the gradebook."""
    from nbgrader.converters import GenerateAssignment
    cfg = settings(course, out)
    if release_dir:
        cfg.CourseDirectory.release_directory = release_dir
    error = _run(GenerateAssignment, cfg, assignment.id, force=True)
    if error:
        raise RuntimeError(f"nbgrader generate_assignment {assignment.id} failed: {error}")


def register(course, assignment, out):
    """Put the assignment's notebooks and grade cells in ``out``'s gradebook."""
    with tempfile.TemporaryDirectory() as scratch:
        generate(course, assignment, release_dir=scratch, out=out)


def autograde(course, assignment, out, results_dir, student_id="*"):
    """nbgrader autograde with the hidden suites' verdicts in place of a kernel run."""
    from nbgrader.converters import Autograde
    cfg = settings(course, out)
    cfg.Autograde.autograde_preprocessors = [
        "autograder.nbgrader_bridge.ApplyResults",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    cfg.ApplyResults.results_dir = os.path.abspath(results_dir)
    return _run(Autograde, cfg, assignment.id, student_id, force=True, create_student=True)


def export(course, out):
    """nbgrader export: grades.csv as nbgrader computes it from its gradebook."""
    from nbgrader.apps.exportapp import ExportApp  # noqa: F401 - loads the plugin machinery
    from nbgrader.plugins import CsvExportPlugin
    from nbgrader.api import Gradebook
    cfg = settings(course, out)
    path = os.path.join(out, "nbgrader-grades.csv")
    plugin = CsvExportPlugin(config=cfg)
    plugin.to = path
    with Gradebook(cfg.CourseDirectory.db_url, course.course_id) as gb:
        plugin.export(gb)
    return path


def _result_path(results_dir, student, assignment):
    return os.path.join(results_dir, student, f"{assignment}.json")


try:
    from nbgrader.preprocessors.base import NbGraderPreprocessor
except ImportError:  # pragma: no cover - nbgrader is a dependency
    NbGraderPreprocessor = object


class ApplyResults(NbGraderPreprocessor):
    """Write each part's verdict into its test cell, as nbgrader scores test cells.

    A part's score becomes the cell's ``execute_result`` (nbgrader's partial
    credit) after a plain-text summary; a part with no verdict gets an error
    output, so nbgrader scores it 0 rather than trusting an empty cell.
    """

    results_dir = Unicode("", help="folder of results/<student>/<assignment>.json").tag(config=True)

    def preprocess(self, nb, resources):
        from nbgrader.utils import is_grade, is_solution
        from nbformat.v4 import new_output
        info = resources["nbgrader"]
        try:
            with open(_result_path(self.results_dir, info["student"], info["assignment"])) as fh:
                parts = {p["part"]: p for p in json.load(fh)["parts"]}
        except (OSError, ValueError, KeyError):
            parts = {}
        for cell in nb.cells:
            if cell.cell_type != "code" or not is_grade(cell) or is_solution(cell):
                continue
            part = parts.get(cell.metadata.nbgrader["grade_id"].removeprefix("check_"))
            if part is None:
                cell.outputs = [new_output("error", ename="NotGraded", evalue="no verdict for this part",
                                           traceback=["No verdict was recorded for this part."])]
                continue
            summary = f"{part['part']}: {part['score']:g} / {part['max_score']:g} ({part['status']})\n{part['reason']}\n"
            for check in part["checks"]:
                mark = "ok  " if check["status"] == "passed" else "FAIL"
                summary += f"  {mark} [{check['visibility']}] {check['doc']}\n"
                if check["status"] != "passed":
                    summary += f"        {check['message']}\n"
            cell.outputs = [
                new_output("stream", name="stdout", text=summary),
                new_output("execute_result", data={"text/plain": repr(float(part["score"]))},
                           execution_count=None),
            ]
        return nb, resources


def stage(submitted, out, student, assignment, notebook, replacement=None):
    """Copy one submission into ``out/submitted`` (nbgrader reads from there)."""
    src = os.path.join(submitted, student, assignment)
    dest = os.path.join(out, "submitted", student, assignment)
    if os.path.abspath(src) == os.path.abspath(dest):
        return
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    stamp = os.path.join(src, "timestamp.txt")
    if os.path.exists(stamp):
        shutil.copy(stamp, dest)
    if replacement is not None:
        shutil.copy(replacement, os.path.join(dest, notebook))
    else:
        shutil.copy(os.path.join(src, notebook), os.path.join(dest, notebook))
