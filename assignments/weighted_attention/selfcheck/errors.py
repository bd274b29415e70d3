"""Whose failure a call into a student's code was: the code's (:class:`StudentError`, with a
reason the student can act on) or the grader's (:class:`InfrastructureError`, never a student's 0)."""

from selfcheck import causes
from selfcheck.causes import said


class StudentError(Exception):
    """Student code did not give an answer: kind is error, timeout, crashed or missing. ``cause``
    (see :mod:`selfcheck.causes`) names a known cause the error showed where it was raised; its
    ``diagnosis`` and ``mistake`` follow from it, and its text ends with the diagnosis."""

    def __init__(self, kind: str, message: str, cause: str | None = None) -> None:
        self.mistake, self.diagnosis = causes.diagnosis(cause)
        super().__init__(said(message, self.diagnosis))
        self.kind = kind
        self.message = message
        self.cause = cause if self.diagnosis else None


class InfrastructureError(Exception):
    """The process running the code could not be started or read: nothing to do with the code."""
