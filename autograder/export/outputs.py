"""Every file grading writes into a grading folder, in one list: what `course grade` and `course
export` print (`cli._where`) and the documentation's table of output files are both made from it.

A new export adds its row here, and its name to `.gitignore` and `make clean` (tests/test_docs.py
holds them to this list).
"""

import os
from typing import NamedTuple


class Output(NamedTuple):
    label: str      # the word `course grade` prints before it; "" for a file it does not print
    path: str       # relative to the grading folder; <student> and <assignment> stand for each one
    note: str       # what `course grade` prints after the path
    meaning: str    # what it holds, for the documentation


OUTPUTS: tuple[Output, ...] = (
    Output("parts", "parts.csv", "one row per student and part",
           "`student,assignment,part,score,max_score,status,reason`, one row per student and part; status is "
           "`passed`, `partial`, `failed`, `error`, `timeout`, `missing` or `not attempted`"),
    Output("nbgrader", "grades.csv", "nbgrader's export, as `nbgrader export` writes it",
           "nbgrader's own export: one row per student and assignment, hand grades and "
           "`late_submission_penalty` included, `timestamp` the time collect recorded"),
    Output("totals", "totals.csv", "for the LMS; hand-graded answers included",
           "`student_id,total,max_total,<assignment>...,<assignment>_late_penalty...`, one row per student: "
           "autograded and hand-graded points less the late penalty"),
    Output("gradescope", "gradescope/<student>/<assignment>/results.json", "",
           "the Gradescope autograder format: one test per graded part and per hand-graded answer"),
    Output("LMS", "canvas_gradebook.csv", "import as they are",
           "Canvas's gradebook import: the totals of totals.csv, names and SIS ids from roster.csv"),
    Output("LMS", "moodle_grades.csv", "import as they are",
           "Moodle's CSV grade import: the totals of totals.csv, names and emails from roster.csv"),
    Output("feedback", "reports/<student>/<assignment>.html", "",
           "one self-contained page per student and assignment: scores, what each failing check tested, "
           "the likely mistake, late penalty and hand grades; never hidden test source"),
    Output("", "reports/.made_from.json", "",
           "what each feedback page was drawn from, as a hash: an export draws again only the pages whose "
           "record, hand grades or drawing code changed; safe to delete (every page is then drawn again)"),
    Output("report", "cohort_report.html", "the cohort's mistakes and similarity flags",
           "the cohort report for the instructor: score histograms, mistakes, hardest checks, not graded, "
           "time, similarity"),
    Output("", "cohort_report.csv", "",
           "every number the cohort report shows, one row each "
           "(`section,assignment,part,item,students,share,value,detail`)"),
    Output("", "results/<student>/<assignment>.json", "",
           "every check's outcome, the notebook's sha256, the grader's and each part's version, the late "
           "penalty: the one source of every autograded score"),
    Output("", "results/<student>/history/<assignment>.<notebook>.<grader>.<suites>.json", "",
           "the results each regrade replaced (`course history`)"),
    Output("", "results/.similarity/<assignment>/<hash>.json", "",
           "each hand-in's code as the similarity flags compare it, read once (named by the notebook's, the "
           "release's and the reading code's hashes); safe to delete"),
    Output("", "gradebook.db", "",
           "nbgrader's gradebook (unless course.yaml's `db_url` names another): what formgrader shows and "
           "the hand grades it takes"),
    Output("", "submitted/<student>/<assignment>/", "",
           "when the hand-ins are graded from another folder: the copy of each one nbgrader reads, rebuilt as a "
           "valid notebook, and `.course-staged.json`, the sha256 of the hand-in it stands for"),
    Output("", "autograded/<student>/<assignment>/", "",
           "nbgrader's autograded copies, which formgrader serves"),
)


def where(out: str) -> str:
    """The lines `course grade` prints: each printed output's path under ``out``, files of one
    label on one line."""
    lines: dict[str, list[Output]] = {}
    for output in OUTPUTS:
        if output.label:
            lines.setdefault(output.label, []).append(output)
    text = []
    for label, outputs in lines.items():
        first, *more = outputs
        paths = ", ".join([os.path.join(out, first.path)] + [o.path for o in more])
        note = outputs[-1].note
        text.append(f"{label + ':':<12}{paths}" + (f" ({note})" if note else ""))
    return "\n".join(text)
