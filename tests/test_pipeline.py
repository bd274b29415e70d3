"""The whole path, for real: nbgrader releases, the hidden suites grade, nbgrader records.

The demo cohort (the reference, the untouched stubs, one student per demo
mistake) is graded once by `course grade` and every claim below is read back
from what that run wrote: grades.csv, nbgrader's gradebook and export, the
feedback pages.
"""

import csv
import os
import re
import subprocess
import sys

import pytest

from autograder import release, reports


def _grades(folder):
    with open(folder / "grades.csv") as fh:
        return list(csv.DictReader(fh))


def test_the_committed_release_is_in_sync(course):
    assert release.differences(course) == [], "run `course release` and commit assignments/"


def test_the_release_leaks_nothing(course):
    assert release.leaks(course) == []


def test_leak_detection_finds_solution_and_hidden_text(course, tmp_path):
    import shutil
    assignment = course.assignments[0]
    copy = tmp_path / "release"
    shutil.copytree(os.path.join(course.root, "assignments"), copy)
    solution = open(course.source(assignment, assignment.notebook)).read()
    line = next(l.strip() for l in release._solution_lines(course, assignment))
    with open(copy / assignment.id / "extra.py", "w") as fh:
        fh.write(line + "\n### BEGIN HIDDEN TESTS\n")
    found = release.leaks(course, str(copy))
    assert any("solution code" in what for _, what in found)
    assert any("marker" in what for _, what in found)


def test_grades_csv_has_exactly_the_columns(graded_demo):
    folder, records, _ = graded_demo
    with open(folder / "grades.csv") as fh:
        header = next(csv.reader(fh))
    assert header == list(reports.COLUMNS)
    statuses = {row["status"] for row in _grades(folder)}
    assert statuses <= {"passed", "partial", "failed", "error", "timeout", "missing"}


def test_reference_full_marks_and_stubs_zero(graded_demo):
    folder, _, _ = graded_demo
    for row in _grades(folder):
        if row["student"] == "reference":
            assert float(row["score"]) == float(row["max_score"]), row
            assert row["status"] == "passed"
        if row["student"] == "untouched-stub":
            assert float(row["score"]) == 0.0, row
            assert "not written yet" in row["reason"]


def test_each_mistake_loses_points_in_its_own_part_only(course, graded_demo):
    from autograder import cohort
    folder, _, students = graded_demo
    rows = _grades(folder)
    owners = {}
    for assignment in course.assignments:
        for part in assignment.parts:
            for name, entry in cohort.catalogue(course, part.id)[0].items():
                if entry.get("demo"):
                    owners[name] = part.id
    assert owners, "the demo cohort has no mistakes"
    for name, part in owners.items():
        mine = [r for r in rows if r["student"] == name]
        assert mine, name
        for row in mine:
            lost = float(row["score"]) < float(row["max_score"])
            assert lost == (row["part"] == part), (name, row)


def test_mistakes_are_named_in_the_reason(graded_demo):
    folder, _, _ = graded_demo
    reasons = {r["student"]: r["reason"] for r in _grades(folder) if r["part"] == "softmax"}
    assert "subtracting the maximum" in reasons["softmax-no-max-shift"]
    assert "nats" in reasons["entropy-in-nats"]
    mask_reasons = {r["student"]: r["reason"] for r in _grades(folder) if r["part"] == "causal_mask"}
    assert "softmax ran before the mask" in mask_reasons["mask-after-softmax"]
    assert "j <= i" in mask_reasons["mask-transposed"]


def test_nbgrader_export_agrees_with_grades_csv(course, graded_demo):
    folder, _, _ = graded_demo
    totals = {}
    for row in _grades(folder):
        key = (row["student"], row["assignment"])
        totals[key] = totals.get(key, 0.0) + float(row["score"])
    out = folder / "export.csv"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    subprocess.run(["nbgrader", "export", "--to", str(out)], cwd=folder, env=env, check=True,
                   capture_output=True)
    with open(out) as fh:
        exported = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(fh)}
    # nbgrader lists every student under every assignment; one not handed in scores 0
    assert totals.keys() <= exported.keys()
    for key, score in exported.items():
        assert score == pytest.approx(totals.get(key, 0.0), abs=1e-6), key


def test_autograded_notebooks_exist_for_formgrader(course, graded_demo):
    folder, records, _ = graded_demo
    for record in records:
        assignment = course.assignment(record["assignment"])
        assert (folder / "autograded" / record["student"] / assignment.id / assignment.notebook).exists()


def test_feedback_shows_no_hidden_test_source(course, graded_demo):
    folder, records, _ = graded_demo
    hidden = release._hidden_lines(course)
    pages = list((folder / "reports").rglob("*.html"))
    assert len(pages) == len(records)
    for page in pages:
        text = page.read_text()
        assert "Autograded parts" in text
        for line in hidden:
            assert line not in text, (page, line)


def test_grading_a_missing_or_empty_folder_is_a_clear_error(tmp_path, capsys):
    from autograder import cli
    assert cli.main(["grade", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert cli.main(["grade", str(tmp_path)]) == 2
    assert "no submissions" in capsys.readouterr().err


def _selfcheck(folder, *extra):
    return subprocess.run([sys.executable, "-m", "pytest", *extra], cwd=folder,
                          capture_output=True, text=True, timeout=300)


def test_selfcheck_in_a_released_folder(course, release_copy):
    from autograder import cohort
    for assignment in course.assignments:
        folder = release_copy(assignment)
        stub = _selfcheck(folder)
        assert stub.returncode != 0
        assert "not written yet" in stub.stdout
        assert re.search(r"At grading \d+ .* hidden checks also run", stub.stdout)
        cohort.write(cohort.solved(course, assignment), str(folder.parent), "s", assignment)
        solved_nb = folder.parent / "s" / assignment.id / assignment.notebook
        os.replace(solved_nb, folder / assignment.notebook)
        good = _selfcheck(folder)
        assert good.returncode == 0, good.stdout[-2000:]
        assert "only the unpredictable inputs are left" in good.stdout


def test_course_check_exit_codes(course, tmp_path):
    from autograder import cli, cohort
    assignment = course.assignments[0]
    stub = cohort.write(cohort.stub(course, assignment), str(tmp_path), "a", assignment)
    good = cohort.write(cohort.solved(course, assignment), str(tmp_path), "b", assignment)
    assert cli.main(["check", stub]) != 0
    assert cli.main(["check", good]) == 0


def test_a_missing_corpus_stops_grading_with_one_line(course, tmp_path, monkeypatch, capsys):
    from autograder import cli, cohort, corpus
    needing = [a for a in course.assignments if corpus.needs_corpus(course, a)]
    if not needing:
        pytest.skip("no assignment trains on the corpus")

    def missing(course):
        raise RuntimeError("tinyshakespeare not found: looked in data/tinyshakespeare.txt. "
                           "Fix: set TINYSHAKESPEARE=/path/to/tinyshakespeare.txt")

    monkeypatch.setattr(corpus, "find", missing)
    cohort.write(cohort.stub(course, needing[0]), str(tmp_path / "submitted"), "s", needing[0])
    assert cli.main(["grade", str(tmp_path / "submitted"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "tinyshakespeare not found" in err and len(err.strip().splitlines()) == 1
