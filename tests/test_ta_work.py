"""The TA's work over a term: hand grades entered in a real formgrader survive every regrade and
resubmission, a changed written answer is flagged with its old grade kept, and `course history`,
the feedback page and every export give the same totals.

One cohort is graded once by the real commands (`course grade`, `course export`, `course
regrade`, a resubmission collected and graded), a TA grading in formgrader through its own HTTP
API between them; formgrader's state is read from nbgrader's gradebook (its Gradebook API) and
from formgrader's API, as its pages show it.
"""

import contextlib
import csv
import datetime
import io
import json
import os
import re
import urllib.request

import pytest
import yaml

from autograder import cli
from autograder.course import config
from autograder.grade import submission_time
from autograder.mistakes import cohort
from autograder.records import store

from test_nbgrader_paths import _call, formgrader  # noqa: E402

pytestmark = pytest.mark.slow

NOW = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, second=0, microsecond=0)
DUE = NOW - datetime.timedelta(days=2)           # the first assignment's, passed
LATER = NOW + datetime.timedelta(days=30)        # the second's, still ahead
# student -> when they handed the first assignment in: on time, within the grace, two hours late
HANDED_IN = {"ann": DUE - datetime.timedelta(hours=1), "bob": DUE + datetime.timedelta(minutes=10),
             "cy": DUE + datetime.timedelta(hours=2)}
TOKEN = "ta-work-formgrader-token"
NOT_GRADED = "hand-ins with written answers not graded yet in formgrader"
TO_CONFIRM = "hand-ins with hand grades to confirm in formgrader (the answer or the grader's score changed since)"
# the TA's grades: (student, written answer) -> (score, comment)
GRADES = {("ann", "answer_selection"): (1.0, "right"), ("ann", "answer_mask_order"): (1.0, ""),
          ("bob", "answer_selection"): (1.0, "clear"), ("bob", "answer_mask_order"): (0.5, "half of it"),
          ("cy", "answer_selection"): (0.5, "half"), ("cy", "answer_mask_order"): (1.0, "")}
# the parts whose score the TA sets by hand (to what the grader gives): (student, part) -> score
OVERRIDES = {("ann", "softmax"): 4.0, ("cy", "causal_mask"): 4.0}


def _csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _put(url, body):
    request = urllib.request.Request(url, method="PUT", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def _with_answer(course, assignment, cell_id, text):
    nb = cohort.solved(course, assignment)
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == cell_id:
            cell["source"] = text
    return nb


class Term:
    """The folder, and what each command left: gradebook flags, formgrader's lists, printed text."""

    def __init__(self, root):
        self.root, self.out = root, root / "out"
        self.snap = {}

    def run(self, *args):
        """What `course ARGS` prints (it must succeed)."""
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            assert cli.main(["--config", self.course.path, *args]) == 0
        return said.getvalue()

    def flags(self):
        """(student, cell) -> (manual_score, needs_manual_grade, comment) in nbgrader's gradebook."""
        from nbgrader.api import Gradebook, MissingEntry

        from autograder.nbgrader import settings
        found = {}
        with Gradebook(settings.settings(self.course, str(self.out)).CourseDirectory.db_url,
                       self.course.course_id) as gb:
            for student, cell in GRADES:
                try:
                    grade = gb.find_grade(cell, "attention", "attention", student)
                except MissingEntry:
                    continue
                comment = gb.find_comment(cell, "attention", "attention", student)
                found[student, cell] = (grade.manual_score, grade.needs_manual_grade, comment.manual_comment)
            for student, part in OVERRIDES:
                grade = gb.find_grade(self.check_cell(part), "attention", "attention", student)
                found[student, part] = (grade.manual_score, grade.needs_manual_grade)
        return found

    def check_cell(self, part):
        return self.course.assignments[0].part(part).check_cell

    def grade_ids(self):
        from nbgrader.api import Gradebook

        from autograder.nbgrader import settings
        with Gradebook(settings.settings(self.course, str(self.out)).CourseDirectory.db_url,
                       self.course.course_id) as gb:
            ids = {key: (gb.find_grade(key[1], "attention", "attention", key[0]).id,
                         gb.find_comment(key[1], "attention", "attention", key[0]).id) for key in GRADES}
            for student, part in OVERRIDES:
                ids[student, part] = (gb.find_grade(self.check_cell(part), "attention", "attention", student).id, None)
            return ids

    def listed(self, base):
        """student -> needs_manual_grade, as formgrader lists the submissions of the first assignment."""
        return {row["student"]: row["needs_manual_grade"]
                for row in _call(f"{base}/formgrader/api/submissions/attention", TOKEN)}


@pytest.fixture(scope="module")
def term(copy_course, tmp_path_factory):
    root = tmp_path_factory.mktemp("ta-work")
    made = Term(root)
    copy_course(str(root / "course"))
    path = str(root / "course" / "course.yaml")
    with open(path) as fh:
        raw = yaml.safe_load(fh)
    first, second = list(raw["assignments"])[:2]
    raw["assignments"] = {first: dict(raw["assignments"][first], due=DUE.isoformat() + "+00:00"),
                          second: dict(raw["assignments"][second], due=LATER.isoformat() + "+00:00")}
    raw["late"] = {"grace_minutes": 15, "penalty_per_day": 0.1, "max_penalty": 0.5}
    with open(path, "w") as fh:
        yaml.safe_dump(raw, fh, sort_keys=False)
    course = made.course = config.load(path)
    attention, tiny = course.assignments
    assert attention.id == "attention" and set(attention.written) == {cell for _, cell in GRADES}
    submitted = made.out / "submitted"
    for student, when in HANDED_IN.items():
        cohort.write(cohort.solved(course, attention), str(submitted), student, attention)
        submission_time.write(str(submitted / student / attention.id), when)
    cohort.write(cohort.solved(course, tiny), str(submitted), "ann", tiny)       # bob and cy: not yet
    grade = ["grade", str(submitted), "--out", str(made.out), "--jobs", "2"]
    made.run(*grade)
    made.snap["history first graded"] = made.run("history", "cy", "--dir", str(made.out))

    with formgrader(made.out, TOKEN, root / "runtime") as base:
        made.snap["listed before"] = made.listed(base)
        ids = made.grade_ids()
        for key, (score, comment) in GRADES.items():       # the TA grades every answer in formgrader
            grade_id, comment_id = ids[key]
            _put(f"{base}/formgrader/api/grade/{grade_id}", {"manual_score": score, "extra_credit": None})
            _put(f"{base}/formgrader/api/comment/{comment_id}", {"manual_comment": comment})
        for key, score in OVERRIDES.items():
            _put(f"{base}/formgrader/api/grade/{ids[key][0]}", {"manual_score": score, "extra_credit": None})
        made.snap["flags graded"] = made.flags()
        made.snap["listed graded"] = made.listed(base)
        made.run("export", str(made.out))
        made.snap["totals exported"] = {r["student_id"]: r for r in _csv(made.out / "totals.csv")}
        made.snap["history exported"] = made.run("history", "cy", "--dir", str(made.out))

        made.run("regrade", str(made.out), "--force")
        made.snap["flags regraded"] = made.flags()
        made.snap["listed regraded"] = made.listed(base)
        made.snap["status regraded"] = made.run("status", str(made.out))

        # bob hands in again with a new first answer and the same second one; ann with other code
        # in a part and the same written answers
        part = attention.parts[0]
        mistake = next(e for e in cohort.catalogue(course, part.id)[0].values() if e.get("demo"))
        cohort.write(_with_answer(course, attention, "answer_selection", "The keys decide it, not the queries."),
                     str(submitted), "bob", attention)
        submission_time.write(str(submitted / "bob" / attention.id), DUE + datetime.timedelta(minutes=12))
        cohort.write(cohort.solved(course, attention, mistake["cells"]), str(submitted), "ann", attention)
        submission_time.write(str(submitted / "ann" / attention.id), DUE - datetime.timedelta(minutes=30))
        made.snap["graded again"] = made.run(*grade)
        made.snap["flags resubmitted"] = made.flags()
        made.snap["listed resubmitted"] = made.listed(base)
        made.snap["status resubmitted"] = made.run("status", str(made.out))
        made.snap["gradescope bob"] = json.loads(
            (made.out / "gradescope" / "bob" / "attention" / "results.json").read_text())
        made.snap["totals resubmitted"] = {r["student_id"]: r for r in _csv(made.out / "totals.csv")}

        # the TA confirms bob's old grade for his new answer, and ann's part, in formgrader
        for key, score in ((("bob", "answer_selection"), 1.0), (("ann", "softmax"), 4.0)):
            grade_id = made.grade_ids()[key][0]
            _put(f"{base}/formgrader/api/grade/{grade_id}", {"manual_score": score, "extra_credit": None})
        made.snap["status confirmed"] = made.run("status", str(made.out))
        made.snap["listed confirmed"] = made.listed(base)
    return made


def test_a_regrade_keeps_every_answer_the_ta_graded_graded_in_formgrader(term):
    assert set(term.snap["listed before"].values()) == {True}        # written answers to grade
    for key, (score, comment) in GRADES.items():
        assert term.snap["flags graded"][key] == (score, False, comment), key
    assert set(term.snap["listed graded"].values()) == {False}
    # nbgrader's autograde, which a regrade runs for every hand-in, flags every hand grade again;
    # the course's keeps each one graded whose answer is the one graded
    for key, (score, comment) in GRADES.items():
        assert term.snap["flags regraded"][key] == (score, False, comment), key
    for key, score in OVERRIDES.items():        # a part's score set by hand, the grader's unchanged
        assert term.snap["flags graded"][key] == term.snap["flags regraded"][key] == (score, False), key
    assert set(term.snap["listed regraded"].values()) == {False}
    # the second assignment's written answer (ann's) is the only one left
    assert _section(term.snap["status regraded"], NOT_GRADED) == ["ann/tiny_transformer: answer_gpt2_gap"]
    assert _section(term.snap["status regraded"], TO_CONFIRM) == []


def test_a_resubmitted_answer_that_changed_is_flagged_with_its_grade_kept_and_one_that_did_not_stays_graded(term):
    flags = term.snap["flags resubmitted"]
    assert "graded now: 2" in term.snap["graded again"]
    # bob's changed answer: flagged in formgrader, its score and comment kept for the TA
    assert flags["bob", "answer_selection"] == (1.0, True, "clear")
    assert term.snap["listed resubmitted"]["bob"] is True
    # his unchanged answer, and ann's (her code changed, not her answers), and cy's (not handed in
    # again, but graded again by nbgrader's autograde with the rest): still graded
    for key in GRADES:
        if key != ("bob", "answer_selection"):
            assert flags[key] == (GRADES[key][0], False, GRADES[key][1]), key
    # ann's part the TA had set by hand: the grader gives her new code less, so it is to confirm
    assert flags["ann", "softmax"] == (4.0, True) and flags["cy", "causal_mask"] == (4.0, False)
    assert term.snap["listed resubmitted"]["ann"] is True
    assert term.snap["listed resubmitted"]["cy"] is False
    status = term.snap["status resubmitted"]
    shown = _section(status, TO_CONFIRM)
    assert len(shown) == 2 and shown[0].startswith("ann/attention: softmax set by hand (kept: 4; the grader now gives ")
    assert shown[1] == "bob/attention: answer_selection (kept: 1 / 1)"
    assert _section(status, NOT_GRADED) == ["ann/tiny_transformer: answer_gpt2_gap"]
    # the kept score still counts, flagged, in every export (nbgrader's grades.csv keeps it too)
    test = next(t for t in term.snap["gradescope bob"]["tests"] if t["number"] == "answer_selection")
    assert test["score"] == 1.0 and "status" not in test and "earlier answer, to be confirmed" in test["output"]
    grades = {r["student_id"]: float(r["score"]) for r in _csv(term.out / "grades.csv")
              if r["assignment"] == "attention"}
    assert float(term.snap["totals resubmitted"]["bob"]["attention"]) == pytest.approx(grades["bob"])
    # and the instructor is told so whenever the exports are written, so no LMS file goes out unread
    assert "note: 2 hand grades in 2 hand-ins to confirm in formgrader" in term.snap["graded again"]
    # the TA confirms it in formgrader: nothing is left to do
    assert _section(term.snap["status confirmed"], TO_CONFIRM) == []
    assert set(term.snap["listed confirmed"].values()) == {False}


def _section(status, title):
    """The items `course status` lists under ``title``."""
    lines = status.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title + ":"))
    items = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        items.append(line.strip())
    return items


def _lines(text):
    return [line.split() for line in text.splitlines()[1:] if line.strip()]


def test_history_gives_the_exports_total_and_says_a_hand_grade_changed_it(term):
    attention = term.course.assignments[0]
    possible = sum(p.points for p in attention.parts) + sum(attention.written.values())
    auto = sum(p.points for p in attention.parts)
    first = term.snap["history first graded"].split("tiny_transformer:")[0]
    # graded once, its late penalty worked out at once: one line, not a "late policy" change
    lines = _lines(first)
    assert len(lines) == 1 and " ".join(lines[0]).endswith(f"(late: -{auto * 0.1:g}) first graded"), first
    exported = term.snap["history exported"].split("tiny_transformer:")[0]
    lines = _lines(exported)
    total = float(term.snap["totals exported"]["cy"]["attention"])
    assert total == pytest.approx(round((auto + 1.5) * 0.9, 3))      # hand points in, then 10% off
    assert [float(x) for x in (lines[-1][1], lines[-1][3])] == [pytest.approx(total), possible], exported
    assert "hand grade" in " ".join(lines[-1]) and "late policy" not in exported, exported
    assert len({line[0] for line in lines}) == len(lines), f"one time, two lines:\n{exported}"
    # the current line is what every export gives
    now = term.run("history", "cy", "--dir", str(term.out)).split("tiny_transformer:")[0]
    last = _lines(now)[-1]
    final = {r["student_id"]: r for r in _csv(term.out / "totals.csv")}["cy"]
    assert float(last[1]) == pytest.approx(float(final["attention"])) and float(last[3]) == possible
    assert len(_lines(now)) == len({tuple(line) for line in _lines(now)}), now


def test_the_feedback_page_leads_with_the_total_every_export_gives(term):
    attention = term.course.assignments[0]
    possible = sum(p.points for p in attention.parts) + sum(attention.written.values())
    totals = {r["student_id"]: r for r in _csv(term.out / "totals.csv")}
    for student in HANDED_IN:
        page = (term.out / "reports" / student / "attention.html").read_text()
        shown = re.search(r"id=total>([\d.]+) <small>/ ([\d.]+)</small>", page)
        assert shown, page[:3000]
        assert float(shown.group(1)) == pytest.approx(float(totals[student]["attention"])), student
        assert float(shown.group(2)) == possible
        assert "Autograded parts: " in page and "graded by hand: " in page
    assert "late penalty: &minus;" in (term.out / "reports" / "cy" / "attention.html").read_text()
    # bob's page, made when his changed answer was graded (the TA confirmed it since, no export yet)
    page = (term.out / "reports" / "bob" / "attention.html").read_text()
    assert "(given to your earlier answer; to be confirmed)" in page


def test_an_assignment_not_yet_due_is_empty_in_the_lms_files_and_the_grace_costs_no_gradescope_test(term):
    from autograder.export import lms
    tiny = term.course.assignments[1].id
    with open(term.out / lms.CANVAS, newline="") as fh:
        canvas = {r["SIS Login ID"]: r for r in csv.DictReader(fh)}
    with open(term.out / lms.MOODLE, newline="") as fh:
        moodle = {r["Last name"]: r for r in csv.DictReader(fh)}
    totals = {r["student_id"]: r for r in _csv(term.out / "totals.csv")}
    for student in ("bob", "cy"):       # not handed in, due in a month
        assert canvas[student][tiny] == "" and moodle[student][tiny] == "", student
        assert totals[student][tiny] == ""
    assert canvas["ann"][tiny] != ""
    # bob handed in within the grace: no late penalty test of 0 points
    assert [t for t in term.snap["gradescope bob"]["tests"] if t["number"] == "late"] == []
    cy = json.loads((term.out / "gradescope" / "cy" / "attention" / "results.json").read_text())
    late = [t for t in cy["tests"] if t["number"] == "late"]
    assert len(late) == 1 and late[0]["score"] < 0
    assert store.read_result(str(term.out), "bob", "attention").late.points == 0


def test_a_hand_in_nbgrader_fails_on_keeps_its_autograded_notebook_and_its_hand_grades(term, tmp_path, monkeypatch):
    """nbgrader's autograde --force removes a hand-in's autograded folder first and leaves none
    when it then fails; the course puts the last one back, so formgrader still shows what the TA
    graded. A run that fails after a notebook's scores were written leaves the TA's finished
    grades graded (they are kept in the commit that writes the scores), and so does the next."""
    import shutil

    from autograder.errors import NbgraderError
    from autograder.nbgrader import apps, converters
    out = tmp_path / "out"
    shutil.copytree(term.out, out, symlinks=True)
    notebook = out / "autograded" / "cy" / "attention" / "attention.ipynb"
    before = notebook.read_bytes()
    attention = term.course.assignments[0]

    def fails(self, *args):
        raise RuntimeError("nbgrader could not read it")
    with monkeypatch.context() as patched:
        patched.setattr(converters.SafeAutograde, "convert_single_notebook", fails)
        with pytest.raises(NbgraderError):
            apps.autograde(term.course, attention, str(out), student_id="cy")
    assert notebook.read_bytes() == before
    assert [p.name for p in (out / "autograded").iterdir() if p.name.startswith(".")] == []
    # a step after the scores were written fails: the run stops there, the TA's grades still graded
    from autograder.nbgrader.preprocessors import CourseLatePenalties
    with monkeypatch.context() as patched:
        patched.setattr(CourseLatePenalties, "preprocess", fails)
        with pytest.raises(NbgraderError):
            apps.autograde(term.course, attention, str(out), student_id="cy")
    assert notebook.read_bytes() == before
    # a run killed (pid 999999, gone) after setting cy's folder aside: the next run puts it back; one
    # still running (pid 1) keeps its own, and the hand-grade check reads the folder it set aside
    for pid in (999999, 1):
        aside = out / "autograded" / f".course-previous-{pid}-x" / "cy"
        aside.mkdir(parents=True)
        (out / "autograded" / "cy" / "attention").rename(aside / "attention")
        apps.autograde(term.course, attention, str(out), student_id="cy")
        assert notebook.exists() and _graded_by_hand(term, out, "cy")
        assert (aside / "attention").exists() == (pid == 1), pid
    shutil.rmtree(out / "autograded" / ".course-previous-1-x")
    assert _graded_by_hand(term, out, "cy")


def _graded_by_hand(term, out, student):
    """Whether each of ``student``'s hand grades of the first assignment is there and not flagged."""
    from nbgrader.api import Gradebook

    from autograder.nbgrader import settings
    with Gradebook(settings.settings(term.course, str(out)).CourseDirectory.db_url, term.course.course_id) as gb:
        return all((grade.manual_score, grade.needs_manual_grade) == (GRADES[student, cell][0], False)
                   for cell in ("answer_selection", "answer_mask_order")
                   for grade in [gb.find_grade(cell, "attention", "attention", student)])
