"""parts.csv: one row per student and part, with its score, status and reason.

Every text field is quoted and spreadsheet-safe (:func:`autograder.untrusted.cell`), and every id
is written unchanged (:func:`autograder.untrusted.id_cell`), so an LMS matches it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from autograder import untrusted

if TYPE_CHECKING:
    from autograder.records.results import Submission

from autograder.export.outputs import Export, Output

COLUMNS = ("student", "assignment", "part", "score", "max_score", "status", "reason")
PARTS = Output("parts", "parts.csv", "one row per student and part",
               "`student,assignment,part,score,max_score,status,reason`, one row per student and part; status is "
               "`passed`, `partial`, `failed`, `error`, `timeout`, `missing` or `not attempted`",
               ids=("student",))


def rows(records: Iterable[Submission]) -> Iterator[dict]:
    """parts.csv's rows: one per part of each record (COLUMNS)."""
    for record in sorted(records, key=lambda r: r.key):
        for part in record.parts:
            yield {"student": record.student, "assignment": record.assignment,
                   "part": part.part, "max_score": part.max_score, "status": part.status,
                   "score": part.score if part.graded else "",
                   "reason": part.reason}


def write_grades(out: str, records: Iterable[Submission]) -> str:
    return untrusted.write_csv(os.path.join(out, PARTS.path), COLUMNS, rows(records), ids=PARTS.ids)


EXPORT = Export("parts", (PARTS,), lambda i: write_grades(i.out, i.records), order=10)
