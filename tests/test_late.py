"""Deadlines, extensions and late penalties: the rule itself, then a cohort graded once with
on-time, late, within-grace, extended and very late hand-ins, its exports, nbgrader's own
autograde, and a deadline moved and an extension granted mid-term, then regraded."""

import ast
import csv
import dataclasses
import datetime
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from traitlets.config import Config

from autograder import cli
from autograder.course import config, late
from autograder.course.late_rules import Grace, LatePolicy, PerStartedDay, ZeroAfter
from autograder.grade import submission_time
from autograder.mistakes import cohort
from autograder.nbgrader import settings
from autograder.records import store
from test_types import unannotated

BIN = os.path.dirname(sys.executable)
POLICY = LatePolicy((PerStartedDay(penalty_per_day=0.1, max_penalty=0.5), ZeroAfter(zero_after_days=7),
                     Grace(grace_minutes=15)))
DUE = datetime.datetime(2026, 12, 8, 23, 59)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)
# student -> (submitted at, the share of its points it loses under POLICY with alice's extension)
COHORT = {"ontime": (DUE - HOUR, 0.0), "grace": (DUE + datetime.timedelta(minutes=10), 0.0),
          "late": (DUE + 2 * HOUR, 0.1), "three_days": (DUE + 2 * DAY + HOUR, 0.3),
          "alice": (DUE + DAY, 0.0), "very_late": (DUE + 9 * DAY, 1.0)}


@pytest.mark.parametrize("seconds, share", [
    (0, 0.0), (15 * 60, 0.0), (15 * 60 + 1, 0.1), (86400, 0.1), (86401, 0.2), (4.5 * 86400, 0.5),
    (7 * 86400, 0.5), (7 * 86400 + 1, 1.0)])
def test_the_penalty_is_a_share_per_started_day_with_grace_cap_and_cut_off(seconds, share):
    assert late.fraction(POLICY, seconds) == pytest.approx(share)
    assert late.points_taken(POLICY, seconds, 7.0) == round(7.0 * share, 3)


def test_the_policy_says_its_rules_in_one_line_and_a_grace_alone_takes_nothing():
    assert POLICY.words() == "10% per started day late, at most 50%; 0 after 7 days; 15 minutes' grace"
    assert LatePolicy((Grace(grace_minutes=15),)).words() == "no late penalty"
    assert LatePolicy((ZeroAfter(zero_after_days=2),)).fraction(2 * 86400 + 1) == 1.0


def _example_rule():
    """docs/how-to/deadlines.md's rule of one's own, pasted into late_rules.py as the page says:
    its FirstHour class and its RULES, read from the page so that they cannot drift apart."""
    from autograder.course import late_rules
    with open(os.path.join(config.ROOT, "docs", "how-to", "deadlines.md")) as fh:
        page = fh.read()
    example = re.search(r"^## A late rule of your own$.*?^```python\n(.*?)^```$", page, re.M | re.S)[1]
    assert not unannotated(ast.parse(example)), "the page's example lacks type hints"
    module = {**vars(late_rules), "__annotations__": {}}
    exec(compile(example, "docs/how-to/deadlines.md", "exec"), module)
    return module["FirstHour"], module["RULES"]


def test_a_new_late_rule_is_one_class(course_copy, monkeypatch):
    """Added to RULES, a class is a key of course.yaml, applies in its place, is said in every
    export's words and has its row in the reference page; nothing else changes."""
    from autograder.course import late_rules
    first_hour, rules = _example_rule()
    assert rules == (PerStartedDay, first_hour, ZeroAfter, Grace)
    monkeypatch.setattr(late_rules, "RULES", rules)

    def change(raw):
        raw["assignments"]["attention"]["due"] = DUE.isoformat() + "+00:00"
        raw["late"] = {"penalty_per_day": 0.1, "first_hour_penalty": 0.05, "grace_minutes": 15}
    other = course_copy(change)
    found = late.assess(other, "bob", "attention", (DUE + datetime.timedelta(minutes=30)).isoformat(), 8.0)
    assert found.fraction == 0.05 and found.points == 0.4
    assert found.rule == "10% per started day late, at most 100%; 5% in the first hour; 15 minutes' grace"
    assert late.assess(other, "bob", "attention", (DUE + 2 * HOUR).isoformat(), 8.0).fraction == 0.1
    assert late.assess(other, "bob", "attention", (DUE + datetime.timedelta(minutes=10)).isoformat(), 8.0).points == 0
    sys.path.insert(0, os.path.join(config.ROOT, "docs", "_ext"))
    try:
        import course_reference
    finally:
        sys.path.pop(0)
    doc = dataclasses.fields(first_hour)[0].metadata["doc"]
    assert f"| `late.first_hour_penalty` | number | `0.0` | {doc} |" in course_reference.course_yaml_md()
    with pytest.raises(config.ConfigError, match=r"late.first_hour_penalty: a fraction of the points earned"):
        course_copy(lambda raw: raw["late"].update(first_hour_penalty=2))
    with pytest.raises(config.ConfigError, match=r"late.weekend_penalty: unknown key \(allowed: penalty_per_day, "
                                                 r"max_penalty, first_hour_penalty, zero_after_days, grace_minutes\)"):
        course_copy(lambda raw: raw["late"].update(weekend_penalty=1))


def test_no_policy_no_due_date_or_no_time_is_never_a_penalty(course):
    assert late.fraction(None, 10 * 86400) == 0.0
    assert late.assess(course, "x", course.assignments[0].id, "2030-01-01T00:00:00", 8.0) is None


def test_an_extension_is_the_students_own_due_date(course):
    import dataclasses
    first = dataclasses.replace(course.assignments[0], due=DUE)
    other = dataclasses.replace(course, assignments=[first, *course.assignments[1:]], late=POLICY,
                                extensions={"alice": {first.id: DUE + 2 * DAY}})
    assert late.assess(other, "alice", first.id, (DUE + DAY).isoformat(), 8.0) is None
    found = late.assess(other, "bob", first.id, (DUE + DAY).isoformat(), 8.0)
    assert found.due_from == "due" and found.points == 0.8 and found.minutes_late == 1440.0
    found = late.assess(other, "alice", first.id, (DUE + 3 * DAY).isoformat(), 8.0)
    assert found.due_from == "extension" and found.points == 0.8
    assert "extended due date" in late.describe(found) and "10% per started day" in late.describe(found)


# --- a cohort graded once -------------------------------------------------------------------------

def _csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def _edit(path, change):
    with open(path) as fh:
        raw = yaml.safe_load(fh)
    change(raw)
    with open(path, "w") as fh:
        yaml.safe_dump(raw, fh)


def _term(raw):
    first = next(iter(raw["assignments"]))
    raw["assignments"] = {first: dict(raw["assignments"][first], due=DUE.isoformat() + "+00:00")}
    raw["late"] = {"grace_minutes": 15, "penalty_per_day": 0.1, "max_penalty": 0.5, "zero_after_days": 7}
    raw["extensions"] = {"alice": {first: (DUE + 2 * DAY).isoformat() + "+00:00"}}


@pytest.fixture(scope="module")
def term(copy_course, tmp_path_factory):
    """(course, grading folder, full points) after `course grade` of COHORT, every hand-in the
    reference with the time collect recorded for it."""
    root = tmp_path_factory.mktemp("term")
    copy_course(str(root / "course"))
    path = str(root / "course" / "course.yaml")
    _edit(path, _term)
    with open(root / "course" / "roster.csv", "w") as fh:
        fh.write("id,first_name,last_name,email,section,sis_id\n"
                 + "".join(f"{s},{s.title()},Student-{i},{s}@uni.example,L0{i % 2},SIS{i:03}\n"
                           for i, s in enumerate(COHORT)))
    course = config.load(path)
    assignment = course.assignments[0]
    out = root / "out"
    submitted = out / "submitted"          # where collect puts them
    for student, (when, _) in COHORT.items():
        cohort.write(cohort.solved(course, assignment), str(submitted), student, assignment)
        submission_time.write(str(submitted / student / assignment.id), when)
    assert cli.main(["--config", path, "grade", str(submitted), "--out", str(out), "--jobs", "2"]) == 0
    return course, out, sum(p.points for p in assignment.parts)


@pytest.mark.slow
def test_every_export_takes_the_same_late_penalty(term):
    course, out, full = term
    assignment = course.assignments[0]
    totals = {r["student_id"]: r for r in _csv(out / "totals.csv")}
    grades = {r["student_id"]: r for r in _csv(out / "grades.csv")}
    report = [r for r in _csv(out / "cohort_report.csv") if r["section"] == "late"]
    for student, (when, share) in COHORT.items():
        taken = round(full * share, 3)
        assert float(totals[student][assignment.id]) == pytest.approx(full - taken), student
        assert (float(totals[student][f"{assignment.id}_late_penalty"] or 0)) == pytest.approx(taken), student
        assert float(grades[student]["late_submission_penalty"]) == pytest.approx(taken), student
        assert float(grades[student]["score"]) == pytest.approx(full - taken), student
        with open(out / "gradescope" / student / assignment.id / "results.json") as fh:
            assert json.load(fh)["score"] == pytest.approx(full - taken), student
        record = store.read_result(str(out), student, assignment.id)
        assert record.submitted_at == when.isoformat()
        page = (out / "reports" / student / f"{assignment.id}.html").read_text()
        if when <= DUE or student == "alice":
            assert record.late is None and 'id=late' not in page, student
            assert student not in {r["item"] for r in report}
        else:
            assert record.late.points == taken and record.late.due == DUE.isoformat() + "+00:00"
            assert "id=late" in page and "per started day late" in page, student
            assert float(next(r for r in report if r["item"] == student)["value"]) == pytest.approx(taken)
    assert "within the grace" in (out / "reports" / "grace" / f"{assignment.id}.html").read_text()


@pytest.mark.slow
def test_lms_files_have_the_documented_headers_rounding_penalties_and_roster(term):
    course, out, full = term
    aid = course.assignments[0].id
    with open(out / "canvas_gradebook.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", aid]
    assert rows[1][0].strip() == "Points Possible" and rows[1][5] == f"{full + sum(course.assignments[0].written.values()):.2f}"
    canvas = {r[3]: r for r in rows[2:]}
    with open(out / "moodle_grades.csv", newline="") as fh:
        moodle = list(csv.reader(fh))
    assert moodle[0] == ["Email address", "ID number", "First name", "Last name", aid]
    by_email = {r[0]: r for r in moodle[1:]}
    for i, (student, (_, share)) in enumerate(COHORT.items()):
        score = f"{full - round(full * share, 3):.2f}"
        assert canvas[student] == [f"Student-{i}, {student.title()}", "", f"SIS{i:03}", student, f"L0{i % 2}", score]
        assert by_email[f"{student}@uni.example"] == [f"{student}@uni.example", f"SIS{i:03}", student.title(),
                                                      f"Student-{i}", score]
    grades = {r["student_id"]: r for r in _csv(out / "grades.csv")}      # nbgrader's student table
    assert (grades["alice"]["first_name"], grades["alice"]["email"]) == ("Alice", "alice@uni.example")


def test_scores_are_rounded_half_up_to_two_decimals():
    from autograder.export import lms
    assert [lms.rounded(x) for x in (9.193999999999999, 2.675, 7.2, 0, "")] == ["9.19", "2.68", "7.20", "0.00", ""]


@pytest.mark.slow
def test_nbgraders_own_autograde_gives_the_same_penalty(term):
    from nbgrader.api import Gradebook

    from autograder.nbgrader import settings
    course, out, full = term
    assignment = course.assignments[0]
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), "autograde", assignment.id, "--force"], cwd=out,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with Gradebook(settings.settings(course, str(out)).CourseDirectory.db_url, course.course_id) as gb:
        for student, (_, share) in COHORT.items():
            sub = gb.find_submission(assignment.id, student)
            assert sub.late_submission_penalty == pytest.approx(round(full * share, 3)), student
            assert (sub.extension is not None) == (student == "alice")


@pytest.mark.slow
def test_a_moved_deadline_and_a_new_extension_change_exactly_those_totals_at_regrade(term, capsys):
    course, out, full = term
    assignment = course.assignments[0]
    # the deadline moves a day later for everyone, and three_days gets an extension past its hand-in
    _edit(course.path, lambda raw: (
        raw["assignments"][assignment.id].update(due=(DUE + DAY).isoformat() + "+00:00"),
        raw["extensions"].update(three_days={assignment.id: (DUE + 4 * DAY).isoformat() + "+00:00"})))
    capsys.readouterr()
    assert cli.main(["--config", course.path, "regrade", str(out)]) == 0
    said = capsys.readouterr().out
    assert "graded now: 0" in said                     # no suite ran again
    lines = said.split("old total")[1].splitlines()
    changed = {line.split()[0]: (float(line.split()[1]), float(line.split()[2]))
               for line in lines if line.split() and line.split()[0] in COHORT}
    # late (2 hours after the old deadline) is now on time; three_days is within its extension
    assert changed == {"late": (full * 0.9, full), "three_days": (full * 0.7, full)}
    assert "2 of 6 totals changed" in said
    totals = {r["student_id"]: float(r[assignment.id]) for r in _csv(out / "totals.csv")}
    assert totals == {"ontime": full, "grace": full, "late": full, "three_days": full, "alice": full,
                      "very_late": 0.0}
    grades = {r["student_id"]: float(r["score"]) for r in _csv(out / "grades.csv")}
    assert grades == totals
    history = store.history(str(out), "late", assignment.id)
    assert history and history[-1].late.points == pytest.approx(full * 0.1)
    assert cli.main(["--config", course.path, "history", "late", "--dir", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"{full * 0.9:g}" in said and "due date, extension or late rule" in said.splitlines()[-1]
    assert cli.main(["--config", course.path, "status", str(out)]) == 0
    said = capsys.readouterr().out
    assert "hand-ins not graded yet" in said and "totals the next `course export` changes: none" in said
    late_lines = said.split("late hand-ins:")[1].split("written answers")[0]
    assert "very_late/attention" in late_lines and "late/attention" not in late_lines.replace("very_late", "")
    assert "hand-ins with written answers not graded yet in formgrader: 6" in said


@pytest.mark.slow
def test_one_students_regrade_grades_them_alone_and_every_export_keeps_the_class(term, capsys):
    course, out, _ = term
    assignment = course.assignments[0]
    autograded = {s: out / "autograded" / s / assignment.id / assignment.notebook for s in COHORT}
    before = {s: path.stat().st_mtime_ns for s, path in autograded.items() if path.exists()}
    capsys.readouterr()
    args = ["--config", course.path, "grade", str(out / "submitted"), "--out", str(out), "--force"]
    assert cli.main(args + ["--student", "late", "--student", "grace"]) == 0
    said = capsys.readouterr().out
    assert "graded now: 2" in said
    # nbgrader autograded their notebooks alone: a regrade of one costs the same in any class
    changed = {s for s, path in autograded.items() if path.stat().st_mtime_ns != before.get(s)}
    assert changed == {"late", "grace"}, changed
    assert {r["student_id"] for r in _csv(out / "totals.csv")} == set(COHORT)
    assert {r["student"] for r in _csv(out / "parts.csv")} == set(COHORT)
    assert {r["student_id"] for r in _csv(out / "grades.csv")} >= set(COHORT)
    assert cli.main(args + ["--student", "nobody"]) == 2
    assert "no submissions of nobody" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_after_an_interrupted_forced_batch_finishes_it(term, capsys):
    course, out, _ = term
    assignment = course.assignments[0]
    # a forced batch stopped after grading every hand-in but very_late's
    started = store.now()
    store.batch_started(str(out), str(out / "submitted"), len(COHORT), len(COHORT), forced_since=started)
    for student in COHORT:
        if student != "very_late":
            path = store.result_path(str(out), student, assignment.id)
            with open(path) as fh:
                data = json.load(fh)
            with open(path, "w") as fh:
                json.dump(dict(data, graded_at=started), fh)
    capsys.readouterr()
    assert cli.main(["--config", course.path, "grade", str(out / "submitted"), "--out", str(out),
                     "--resume"]) == 0
    said = capsys.readouterr()
    assert "graded now: 1" in said.out and "forced batch" in said.err
    assert store.read_result(str(out), "very_late", assignment.id).graded_at >= started
    assert store.read_journal(str(out))["finished"]


def test_an_untouched_stubs_parts_are_not_attempted_and_scored_zero(course, tmp_path):
    """Not an error: nothing of the student's ran, so it stays out of "parts not graded normally"."""
    from autograder.grade import submission
    from autograder.records.results import NOT_ATTEMPTED
    assignment = course.assignments[0]
    path = cohort.write(cohort.stub(course, assignment), str(tmp_path), "s", assignment)
    record = submission.grade_submission(course, assignment.id, "s", path)
    assert [(p.status, p.score) for p in record.parts] == [(NOT_ATTEMPTED, 0.0)] * len(assignment.parts)


@pytest.mark.slow
def test_a_db_url_set_mid_term_stops_the_export_rather_than_lose_hand_grades(term, capsys):
    course, out, _ = term
    with open(course.path) as fh:
        raw = yaml.safe_load(fh)
    moved = os.path.join(course.root, "moved.yaml")        # beside course.yaml: the same course
    with open(moved, "w") as fh:
        yaml.safe_dump(dict(raw, db_url=f"sqlite:///{out}/elsewhere.db"), fh)
    before = (out / "totals.csv").read_bytes()
    capsys.readouterr()
    assert cli.main(["--config", moved, "export", str(out)]) == 2
    said = capsys.readouterr().err.strip()
    assert "\n" not in said and "gradebook.db holds this folder's gradebook" in said and "db_url" in said
    assert (out / "totals.csv").read_bytes() == before and not (out / "elsewhere.db").exists()
    for command in (["status", str(out)], ["history", "alice", "--dir", str(out)], ["report", str(out)]):
        assert cli.main(["--config", moved, *command]) == 2, command     # an empty gradebook's state, never
        assert "gradebook.db holds this folder's gradebook" in capsys.readouterr().err, command
    cfg = Config()                  # nbgrader's own commands in the folder: every step on the gradebook
    settings.configure(cfg, out=str(out), course_yaml=moved)
    assert "gradebook.db holds this folder's gradebook" in capsys.readouterr().err
    refused = ["autograder.nbgrader.preprocessors.Refuse"]
    assert cfg.Autograde.autograde_preprocessors == cfg.Autograde.sanitize_preprocessors == refused
    assert cfg.GenerateFeedback.preprocessors == refused
    assert cfg.ExportApp.plugin_class == "autograder.nbgrader.plugins.RefusedExport"
    assert "Refused" not in str(cfg.ExchangeFactory.submit), "students could no longer hand in"
    assert cfg.CourseDirectory.db_url.startswith(f"sqlite:///{out}/gradebook.db")     # nothing made at db_url
    from autograder.nbgrader.converters import SafeAutograde
    with pytest.raises(RuntimeError, match="gradebook.db holds this folder's gradebook"):
        SafeAutograde(coursedir=None, config=cfg).start()      # before any student is recorded
    assert not (out / "elsewhere.db").exists()


def test_a_stub_with_the_students_code_in_a_cell_of_their_own_is_attempted(course):
    from autograder.grade import submission
    assignment = course.assignments[0]
    part = assignment.parts[0]
    stub = cohort.stub(course, assignment)
    release = cohort.stub(course, assignment)
    assert submission.not_attempted(stub, release, set(part.cells), set())
    added = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": "def softmax(x):\n    return x"}
    stub["cells"].insert(1 + next(i for i, c in enumerate(stub["cells"])
                                  if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == part.cells[0]), added)
    assert not submission.not_attempted(stub, release, set(part.cells), set())


@pytest.mark.slow
def test_an_id_the_class_does_not_have_is_named_with_its_close_match(term, capsys):
    """An extension for ``alicee`` (alice's, mistyped), and a roster line for ``ontimee`` where
    ``ontime`` handed in: `course export` says each in one line, naming the id it is close to."""
    course, out, _ = term
    with open(course.path) as fh:
        raw = yaml.safe_load(fh)
    first = course.assignments[0].id
    raw["extensions"]["alicee"] = {first: (DUE + DAY).isoformat() + "+00:00"}
    typo = os.path.join(course.root, "typo.yaml")        # beside course.yaml: the same course
    with open(typo, "w") as fh:
        yaml.safe_dump(raw, fh)
    capsys.readouterr()
    assert cli.main(["--config", typo, "export", str(out)]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "alicee" in line]
    assert len(said) == 1 and "extensions.alicee: no roster line and no hand-in has this id (did you mean alice?)" \
        in said[0], said
    assert cli.main(["--config", typo, "status", str(out)]) == 0      # and the morning's status lists it
    listed = capsys.readouterr().out
    assert "ids the class does not have" in listed and "extensions.alicee" in listed, listed
    roster = os.path.join(course.root, "roster.csv")
    with open(roster) as fh:
        kept = fh.read()
    try:
        with open(roster, "w") as fh:
            fh.write(kept.replace("\nontime,", "\nontimee,"))
        assert cli.main(["--config", course.path, "export", str(out)]) == 0
        said = [line for line in capsys.readouterr().err.splitlines() if "ontime" in line]
        assert len(said) == 1 and "roster.csv: no line for ontime, who handed in (did you mean ontimee?)" in said[0]
    finally:
        with open(roster, "w") as fh:
            fh.write(kept)
        os.remove(typo)
    assert cli.main(["--config", course.path, "export", str(out)]) == 0
    assert "did you mean" not in capsys.readouterr().err
