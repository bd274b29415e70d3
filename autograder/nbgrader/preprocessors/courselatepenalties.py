"""autograde: the late penalty course.yaml sets, where nbgrader's AssignLatePenalties would apply its own.

nbgrader's penalty methods are none or zero, and its due dates live in the gradebook alone; this
puts course.yaml's due date and the student's extension in the gradebook and takes the penalty
from :func:`autograder.course.late.assess` on the notebook's score and collect's time, the
verdict every export of the course applies. So plain ``nbgrader autograde`` and formgrader's Autograde button give the same
penalty as ``course grade``.
"""

import functools
import os

from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.course import config, late
from autograder.nbgrader import gradebook_rows
from autograder.nbgrader.gradebook import set_due


class CourseLatePenalties(NbGraderPreprocessor):
    """Set the notebook's late penalty by course.yaml's policy, due dates and extensions."""

    course_yaml = Unicode("", help="the course's course.yaml").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        course = _course(self.course_yaml or os.path.join(config.ROOT, "course.yaml"))
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            submission = gb.find_submission(info["assignment"], info["student"])
            set_due(course, gb.find_assignment(info["assignment"]), submission)
            gb.db.commit()
            notebook = gb.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
            when = submission.timestamp.isoformat() if submission.timestamp else None
            score = gradebook_rows.notebook_score(gb.db, notebook.id, notebook.notebook_id)
            verdict = late.assess(course, info["student"], info["assignment"], when, score)
            notebook.late_submission_penalty = (verdict.points if verdict else 0) or None
            gb.db.commit()
        return nb, resources


def _course(path: str) -> config.Course:
    """course.yaml, parsed again only when its text has changed: this runs for every notebook, and
    parsing and checking course.yaml took a tenth of autograde."""
    try:
        with open(path, "rb") as fh:
            text = fh.read()
    except OSError:
        return config.load(path)        # the error config.load gives a missing course.yaml
    return _parsed(path, text)


@functools.lru_cache(maxsize=4)
def _parsed(path: str, text: bytes) -> config.Course:
    return config.load(path)
