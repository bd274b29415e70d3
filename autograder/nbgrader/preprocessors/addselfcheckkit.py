"""The self-check kit in nbgrader's own generate_assignment (the command, formgrader's Generate
button), so its release is the one ``course release`` makes (:mod:`autograder.nbgrader.selfcheck_kit`)."""

from nbformat import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.course import config
from autograder.nbgrader import selfcheck_kit


class AddSelfCheckKit(NbGraderPreprocessor):
    """Put the self-check kit beside the notebook nbgrader's own generate_assignment releases."""

    course_yaml = Unicode("", help="the course's course.yaml").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        course = config.load(self.course_yaml)
        assignment = course.assignment(resources["nbgrader"]["assignment"])
        coursedir = CourseDirectory(config=self.config)
        selfcheck_kit.vendor(course, assignment,
                             coursedir.format_path(coursedir.release_directory, ".", assignment.id))
        return nb, resources
