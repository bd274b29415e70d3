"""What an export is: its name, the files it writes and its writer; and the files grading writes
that are no export's.

Every export declares itself once, as an :class:`Export` in the module that writes it; a module
of ``autograder/export/`` that does is found (:func:`autograder.export.found`), and
:data:`autograder.pipeline.EXPORTS` adds the gradebook's, the feedback pages' and the cohort
report's, in their ``order``; and
:data:`autograder.pipeline.OUTPUTS` is every file a grading folder holds: what `course grade`,
`course export` and `course demo` print (:func:`where`), the documentation's table of output
files, and the list `.gitignore` and `make clean` are held to (tests/test_docs.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.course.roster import Student
    from autograder.records.results import Submission


class Output(NamedTuple):
    label: str      # the word `course grade` prints before it; "" for a file it does not print
    path: str       # relative to the grading folder; <student> and <assignment> stand for each one
    note: str       # what `course grade` prints after the path
    meaning: str    # what it holds, for the documentation
    ids: tuple[str, ...] = ()   # a CSV's columns of ids, written unchanged (untrusted.write_csv's ids)


@dataclass(frozen=True)
class Inputs:
    """What every export is written from."""
    course: Course
    out: str                                    # the grading folder
    records: Collection[Submission]             # every current record of ``out``
    gradebook: Mapping[tuple[str, str], Any]    # (student, assignment) -> nbgrader's hand grades and overrides
    people: Mapping[str, Student]               # roster.csv's entries by id
    add_answers: Callable | None = None         # reads a page's written answers (report/feedback.py)


class Export(NamedTuple):
    name: str                        # the stage: what a failure's warning and the timings call it
    outputs: tuple[Output, ...]      # the files it writes
    write: Callable[[Inputs], object]
    order: int                       # its turn: exports are written, and their files listed, by it


# the files grading writes beside the exports: the records, nbgrader's gradebook and its copies
OTHER: tuple[Output, ...] = (
    Output("", "results/<student>/<assignment>.json", "",
               "every check's outcome, the notebook's sha256, the grader's and each part's version, the late "
               "penalty: the one source of every autograded score"),
    Output("", "results/<student>/history/<assignment>.<notebook>.<grader>.<suites>.json", "",
               "the results each regrade replaced (`course history`)"),
    Output("", "results/.summaries.json", "",
               "every result without its checks, each by the version of its file (device, inode, size and "
               "times): `course status` reads a results file again only when it changed; safe to delete"),
    Output("", "results/.sha256.json", "",
               "each hand-in's sha256 by the version of its notebook file: `course status` reads a notebook "
               "again only when its file changed; safe to delete"),
    Output("", "gradebook.db", "",
               "nbgrader's gradebook (unless course.yaml's `db_url` names another): what formgrader shows and "
               "the hand grades it takes"),
    Output("", "submitted/<student>/<assignment>/", "",
               "when the hand-ins are graded from another folder: the copy of each one nbgrader reads, rebuilt as a "
               "valid notebook, and `.course-staged.json`, the sha256 of the hand-in it stands for"),
    Output("", "autograded/<student>/<assignment>/", "",
               "nbgrader's autograded copies, which formgrader serves"),
    Output("", "autograded/.course-previous-<pid>-*/", "",
               "while an autograde runs: the autograded copies it replaces, put back if it fails; one a "
               "stopped run left is put back by the next autograde"),
)


def where(out: str, outputs: Sequence[Output]) -> str:
    """The lines `course grade` prints: each printed output's path under ``out``, files of one
    label on one line."""
    lines: dict[str, list[Output]] = {}
    for output in outputs:
        if output.label:
            lines.setdefault(output.label, []).append(output)
    text = []
    for label, outputs in lines.items():
        first, *more = outputs
        paths = ", ".join([os.path.join(out, first.path)] + [o.path for o in more])
        note = outputs[-1].note
        text.append(f"{label + ':':<12}{paths}" + (f" ({note})" if note else ""))
    return "\n".join(text)
