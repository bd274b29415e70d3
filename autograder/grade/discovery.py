"""Which submissions a folder holds: ``SUBMITTED/<student>/<assignment>/<notebook>.ipynb``, laid
out as nbgrader's ``submitted/``, listed through :mod:`autograder.grade.handin` (never through a link).
"""

import os
from dataclasses import dataclass

from autograder import untrusted
from autograder.course.config import Course
from autograder.errors import NoSubmissions
from autograder.grade import handin
from selfcheck import wire


@dataclass(frozen=True)
class Task:
    """One submission to grade: whose, of which assignment, and where its notebook lies."""
    student: str
    assignment: str
    path: str

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment


def find_submissions(course: Course, submitted: str, refused: list[tuple[str, str]] | None = None) -> list[Task]:
    """Every submission under ``submitted``.

    The folders are listed through autograder/grade/handin.py: folders that cannot be a student's
    (symbolic links, names no export can hold), and a student's folder named after no assignment
    of the course, are left out and listed in ``refused`` as (name, reason)."""
    if not os.path.isdir(submitted):
        raise NoSubmissions(f"{submitted}: no such folder of submissions")
    refused = [] if refused is None else refused
    found = []
    with handin.folder(submitted) as top:
        students = handin.entries(top)
    for student, kind in sorted(students.items()):
        if student.startswith(".") or kind not in ("folder", "link"):
            continue
        why = "a symbolic link, not a folder" if kind == "link" else untrusted.student_id_problem(student)
        if why:
            refused.append((wire.clean_text(student, 120), why))
            continue
        try:
            with handin.folder(submitted, student) as fd:
                assignments = handin.entries(fd)
        except handin.Refused as exc:       # replaced since it was listed
            refused.append((student, str(exc)))
            continue
        for assignment in course.assignments:
            held = assignments.get(assignment.id)
            if held == "link":
                refused.append((f"{student}/{assignment.id}", "a symbolic link, not a folder"))
            elif held == "folder":
                found.append(Task(student, assignment.id, os.path.join(submitted, student, assignment.id,
                                                                     assignment.notebook)))
        ids = {assignment.id for assignment in course.assignments}
        for name, kind in sorted(assignments.items()):      # a hand-in no assignment reads says so
            if kind in ("folder", "link") and name not in ids and not name.startswith("."):
                refused.append((f"{student}/{wire.clean_text(name, 120)}",
                                f"not an assignment of this course ({', '.join(sorted(ids))})"))
    if not found:
        raise NoSubmissions(f"{submitted}: no submissions in it (expected "
                            "<student>/<assignment>/<notebook>.ipynb)")
    return found
