"""The grade files a learning management system imports as they are: Canvas's gradebook CSV and
Moodle's CSV grade import, made from totals.csv's rows (late penalties and hand grades applied).

* ``canvas_gradebook.csv``: Canvas's gradebook import (Grades > Import): ``Student,ID,SIS User
  ID,SIS Login ID,Section``, then one column per assignment, and a ``Points Possible`` row first,
  as Canvas's own export has. Canvas matches a row by SIS User ID (the roster's ``sis_id``) or SIS
  Login ID (the student id, the account name); ID, Canvas's own number, is left empty.
* ``moodle_grades.csv``: Moodle's "Import grades: CSV file": ``Email address,ID number,First
  name,Last name``, then one column per assignment; map "Email address" (or "ID number") to the
  user field of the same name, and each assignment's column to its grade item.

Scores are rounded half up to two decimals (:func:`rounded`); an assignment not handed in yet is
left empty, which both systems read as "no change".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from autograder.export.outputs import Export, Output
from autograder.export.totals import max_points, totals
from autograder.untrusted import write_csv

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.course.roster import Student

CANVAS = "canvas_gradebook.csv"
MOODLE = "moodle_grades.csv"
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Email address", "ID number", "First name", "Last name"]
OUTPUTS = (
    Output("LMS", CANVAS, "import as they are",
           "Canvas's gradebook import: the totals of totals.csv, names and SIS ids from roster.csv",
           ids=("SIS User ID", "SIS Login ID")),
    Output("LMS", MOODLE, "import as they are",
           "Moodle's CSV grade import: the totals of totals.csv, names and emails from roster.csv",
           ids=("Email address", "ID number")),
)


def rounded(value: float | str) -> str:
    """A score as both files write it: two decimals, half up (9.194 -> 9.19, 2.675 -> 2.68)."""
    if value == "":
        return ""
    return str(Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def write(out: str, course: Course, totals: Iterable[Mapping], roster: Mapping[str, Student]) -> list[str]:
    """Write both files into ``out``; returns their paths."""
    from autograder.course.roster import person
    rows = list(totals)
    names = [a.id for a in course.assignments]
    canvas = [{"Student": "    Points Possible", **{a.id: rounded(max_points(a)) for a in course.assignments}}]
    moodle = []
    for row in rows:
        who = person(dict(roster), row["student_id"])
        scores = {aid: rounded(row.get(aid, "")) for aid in names}
        canvas.append({"Student": who.sortable_name, "ID": "", "SIS User ID": who.sis_id,
                       "SIS Login ID": who.id, "Section": who.section, **scores})
        moodle.append({"Email address": who.email, "ID number": who.sis_id, "First name": who.first_name,
                       "Last name": who.last_name or who.id, **scores})
    canvas_file, moodle_file = OUTPUTS
    return [write_csv(os.path.join(out, CANVAS), CANVAS_COLUMNS + names, canvas, ids=canvas_file.ids),
            write_csv(os.path.join(out, MOODLE), MOODLE_COLUMNS + names, moodle, ids=moodle_file.ids)]


EXPORT = Export("LMS", OUTPUTS, lambda i: write(i.out, i.course, totals(i.course, i.records, i.gradebook), i.people),
                order=40)
