"""The course grader's verdicts in the test cells, where nbgrader's autograde would run a kernel.

nbgrader scores a test cell from the outputs its kernel run left there, and a student's kernel
can patch the check cell's ``check`` to print anything. This preprocessor stands in for that run
(every course folder's autograde, :mod:`autograder.nbgrader.settings`): each part's test cell gets
the verdict the sandboxed suites gave, so nbgrader's SaveAutoGrades records the course grader's
score and nothing the notebook claimed.
"""

import os

from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Unicode

from autograder.course import config
from autograder.grade.grading import grade_one
from autograder.grade.versions import stale, staged_sha256
from autograder.records.results import Submission
from autograder.records.store import read_result


class ApplyResults(NbGraderPreprocessor):
    """Write each part's verdict into its test cell, as nbgrader scores test cells.

    The verdicts are the course grader's, from ``results/<student>/<assignment>.json``.
    With ``course_yaml`` set (every nbgrader command in a course folder: plain
    ``nbgrader autograde``, formgrader's Autograde button), a submission whose
    result is missing or stale is graded first, sandboxed and with the hidden
    suites, and its result written as ``course grade`` writes it. A part's score
    becomes the cell's ``execute_result`` (nbgrader's partial credit) after a
    plain-text summary; a part with no verdict gets an error output, so nbgrader
    scores it 0 rather than trusting an empty cell. A hand-in with no result at all (its file gone
    or unreadable) or one the grader failed on is not recorded: nbgrader's autograde fails for it,
    with the reason, and the gradebook keeps what it held.
    """

    results_dir = Unicode("", help="<course folder>/results, holding <student>/<assignment>.json").tag(config=True)
    course_yaml = Unicode("", help="the course's course.yaml; when set, a submission without a "
                                   "current result is graded before its verdicts are applied").tag(config=True)

    def _record(self, student: str, assignment_id: str, notebook: str | None) -> Submission | None:
        """The submission's result (None when none), graded now when it has none that is current."""
        out = os.path.dirname(os.path.abspath(self.results_dir))
        record = read_result(out, student, assignment_id)
        if self.course_yaml:
            course = config.load(self.course_yaml)
            coursedir = CourseDirectory(config=self.config)
            path = os.path.join(coursedir.format_path(coursedir.submitted_directory, student, assignment_id),
                                f"{notebook}.ipynb")
            why = stale(course, record, path, sha256=staged_sha256(path))   # a staged copy answers for its hand-in
            if why:
                self.log.info("Grading %s/%s with the course's suites (%s)", student, assignment_id, why)
                record = grade_one(course, student, assignment_id, path, out)
        return record

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources["nbgrader"]
        record = self._record(info["student"], info["assignment"], info.get("notebook"))
        if record is None:      # its results file gone or unreadable: the grader's problem, never a 0
            raise RuntimeError(f"{info['student']}: no result to record (results/{info['student']}/"
                               f"{info['assignment']}.json missing or unreadable); nothing recorded")
        if record.grader_error:
            raise RuntimeError(f"{info['student']}: not graded (the grader failed on it); nothing recorded")
        parts = {p.part: p for p in record.parts}
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
                    summary += f"        {check.said}\n"
            cell.outputs = [
                new_output("stream", name="stdout", text=summary),
                new_output("execute_result", data={"text/plain": repr(float(part.score))},
                           execution_count=None),
            ]
        return nb, resources
