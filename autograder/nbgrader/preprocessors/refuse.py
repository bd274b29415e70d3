"""The one preprocessor of every converter while course.yaml does not load.

nbgrader reports an error raised in a config file and goes on with its defaults, which would
run students' notebooks in a kernel, unsandboxed, and score the check cells; so a broken
course.yaml configures this instead (:func:`autograder.nbgrader.settings.configure`).
"""

from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode


class Refuse(NbGraderPreprocessor):
    """Stops the converter with course.yaml's problem, before anything is read or written."""

    problem = Unicode("", help="what is wrong with course.yaml, in one line").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        raise RuntimeError(f"nothing is graded until course.yaml is fixed: {self.problem}")
