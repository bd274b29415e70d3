"""The course's own errors: each carries one line saying what is wrong and what to do.

They are the instructor's to fix (a course.yaml key, a missing folder, nbgrader refusing a
step), never a student's score: the ``course`` command prints the line and exits 2. A
reason that becomes a student's status (a notebook that cannot be read) is data in the
result, not one of these.
"""


class CourseError(Exception):
    """Grading cannot go on until the instructor fixes something; the message is one line."""


class ConfigError(CourseError):
    """course.yaml is wrong; the message is one line."""


class NoSubmissions(CourseError):
    """The folder of submissions is missing or holds none."""


class CorpusMissing(CourseError):
    """An assignment trains on the corpus and it cannot be found."""


class NbgraderError(CourseError):
    """One of nbgrader's steps failed; ``log`` keeps the end of nbgrader's own log."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log
