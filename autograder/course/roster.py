"""The class list, ``roster.csv`` beside course.yaml (optional): who each student id is.

``id,first_name,last_name,email,section,sis_id``, one row per student, ``id`` as the student's
folder in ``submitted/`` (their account name); the other columns may be empty. It fills
nbgrader's student table (formgrader shows names, not "None, None") and the LMS files
(:mod:`autograder.export.lms`), which match students by SIS id or email, written unchanged:
an id, SIS id or email a spreadsheet would run, or that looks like another id (a Cyrillic
``а`` in a Latin name), stops with one line (:func:`autograder.untrusted.id_problem`).
"""

from __future__ import annotations

import csv
import difflib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.errors import CourseError

if TYPE_CHECKING:
    from autograder.course.config import Course

NAME = "roster.csv"
COLUMNS = ("id", "first_name", "last_name", "email", "section", "sis_id")


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    section: str = ""
    sis_id: str = ""

    @property
    def sortable_name(self) -> str:
        """As Canvas shows a student: "Last, First" (the id when the roster has no name)."""
        return ", ".join(n for n in (self.last_name, self.first_name) if n) or self.id


def load(course: Course) -> dict[str, Student]:
    """id -> Student from the course's roster.csv; {} when there is none. A roster whose header
    is not COLUMNS (in any order, ``id`` required) or that names a student twice stops with one line."""
    path = os.path.join(course.root, NAME)
    try:
        fh = open(path, newline="", encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    with fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        unknown = [h for h in header if h not in COLUMNS]
        if "id" not in header or unknown:
            raise CourseError(f"{NAME}: the header must be some of {','.join(COLUMNS)} with id among them "
                              f"(found {','.join(header) or 'nothing'})")
        found: dict[str, Student] = {}
        for line, row in enumerate(reader, start=2):
            sid = (row.get("id") or "").strip()
            if not sid:
                raise CourseError(f"{NAME}, line {line}: no id")
            if sid in found:
                raise CourseError(f"{NAME}, line {line}: {sid} is listed twice")
            entry = Student(**{k: (row.get(k) or "").strip() for k in COLUMNS if k in header})
            _check_ids(entry, line)
            found[sid] = entry
    return found


def _check_ids(entry: Student, line: int) -> None:
    """Stop with one line on an id the exports must write unchanged but cannot write safely, or
    one that looks like another id (it would make a student of its own)."""
    from autograder import untrusted
    for column, value in (("id", entry.id), ("sis_id", entry.sis_id), ("email", entry.email)):
        why = untrusted.student_id_problem(value) if column == "id" else value and untrusted.id_problem(value)
        if why:
            raise CourseError(f"{NAME}, line {line}: {column} {untrusted.shown(value)!r}: {why.removeprefix('not a usable student id: ')}"
                              f"; the LMS files write ids unchanged, so correct it in {NAME}")


def person(roster: dict[str, Student], student: str) -> Student:
    """The roster's entry for ``student``, or one with the id alone."""
    return roster.get(student) or Student(student)


def _close(student: str, among: set[str]) -> str:
    match = difflib.get_close_matches(student, sorted(among), n=1)
    return f" (did you mean {match[0]}?)" if match else ""


def strangers(course: Course, roster: dict[str, Student], handed_in: set[str]) -> list[str]:
    """One line for each student id that course.yaml's extensions or the hand-ins name and the
    class does not know, naming the closest id it does know (``indann`` for ``indan``): an
    extension of no roster line nor hand-in (without a roster, only one close to a hand-in's: the
    others may not have handed in yet), a hand-in with no roster line (when there is a roster)."""
    lines = []
    known = set(roster) | handed_in
    for student in sorted(set(course.extensions) - known):
        close = _close(student, known)
        if roster or close:
            lines.append(f"course.yaml: extensions.{student}: no roster line and no hand-in has this id"
                         f"{close}; the extension applies to no one")
    if roster:
        for student in sorted(handed_in - set(roster)):
            lines.append(f"{NAME}: no line for {student}, who handed in{_close(student, set(roster) - handed_in)}; "
                         "the exports give no name, email or SIS id for them")
    return lines
