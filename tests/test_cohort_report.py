"""The cohort report (autograder/report/cohort_analysis.py and cohort_page.py): counts by the
catalogue's names, exactly the planted ones; the CSV and the page agree; a real browser renders it."""

import csv
import html
import json
import os
import re
import subprocess

import pytest

from autograder import cli, pipeline
from autograder.mistakes import cohort
from autograder.records.results import Check, PartResult
from autograder.report.cohort_analysis import CSV
from autograder.report.cohort_page import HTML
from selfcheck.program import grade_id

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTIFACTS = os.path.join(ROOT, "artifacts")


def _csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def _check(message, status="failed", name="test_x", weight=1, mistake=None, diagnosis=None):
    return Check(name, name, "hidden", weight, status, message, mistake, diagnosis)


def test_a_part_counts_for_the_mistake_its_checks_name_most_and_old_results_name_none():
    checks = [_check("a", mistake="one", diagnosis="first"), _check("b", mistake="two", weight=3, diagnosis="second"),
              _check("c", mistake="one", diagnosis="first"), _check("d", status="passed", mistake="one", diagnosis="x"),
              _check("e", mistake="three or four", weight=3, diagnosis="third; or fourth")]
    assert PartResult("p", 0, 1, "failed", "", checks).diagnosis == ("two", "second")
    old = [_check("Likely mistake: anything.")]        # a record of an earlier grader: words, no data
    assert PartResult("p", 0, 1, "failed", "", old).diagnosis == (None, None)


# --- a cohort graded for real -----------------------------------------------------------------------

PLANTED = {"causal_mask": {"mask-after-softmax": 2, "mask-transposed": 1},
           "softmax": {"entropy-in-nats": 1}}


@pytest.fixture(scope="module")
def graded_cohort(course, tmp_path_factory):
    """The attention assignment: the reference, the stub, the planted mistakes, a notebook that is
    not JSON, one with a solution cell deleted, a distinctive solution, a near-copy of it, and
    near-copies hidden where only grading looked (tests/test_similarity.py)."""
    folder = tmp_path_factory.mktemp("cohort")
    submitted = folder / "submitted"
    assignment = course.assignment("attention")
    cohort.write(cohort.solved(course, assignment), str(submitted), "reference", assignment)
    cohort.write(cohort.stub(course, assignment), str(submitted), "stub", assignment)
    for part, planted in PLANTED.items():
        mistakes, _ = cohort.catalogue(course, part)
        for name, count in planted.items():
            for i in range(count):
                cohort.write(cohort.solved(course, assignment, mistakes[name]["cells"]), str(submitted),
                             f"{name}-{i}", assignment)
    broken = cohort.write(cohort.stub(course, assignment), str(submitted), "not-json", assignment)
    with open(broken, "w") as fh:
        fh.write("{ this is not a notebook")
    gone = cohort.solved(course, assignment)
    gone["cells"] = [c for c in gone["cells"] if grade_id(c) != "causal_mask"]
    cohort.write(gone, str(submitted), "deleted-cell", assignment)
    from test_similarity import DISTINCTIVE, _near_copy, hiding_places
    cohort.write(cohort.solved(course, assignment, DISTINCTIVE), str(submitted), "original", assignment)
    cohort.write(cohort.solved(course, assignment, _near_copy(DISTINCTIVE)), str(submitted), "copier", assignment)
    for place, nb in hiding_places(course, assignment, _near_copy(DISTINCTIVE)).items():
        cohort.write(nb, str(submitted), place, assignment)
    batch = pipeline.grade(course, str(submitted), str(folder), jobs=2)
    return folder, list(batch)


COPIES = sorted(["original", "copier", "in-added-cells", "solution-flag-off", "long-leading-comment",
                 "stub-under-same-id", "in-an-exec-string", "in-base64-for-exec", "in-joined-strings-for-exec"])


@pytest.mark.slow
def test_the_report_counts_exactly_the_planted_mistakes_and_flags_only_the_copies(course, graded_cohort):
    folder, records = graded_cohort
    rows = _csv(folder / CSV)
    n = len(records)
    mistakes = {(r["part"], r["item"]): int(r["students"]) for r in rows if r["section"] == "mistake"}
    assert mistakes == {(part, name): count for part, planted in PLANTED.items() for name, count in planted.items()}
    for r in rows:
        if r["section"] == "mistake":
            assert float(r["share"]) == round(int(r["students"]) / n, 3)
    not_graded = {(r["item"], r["part"], r["value"]) for r in rows if r["section"] == "not graded"}
    assert not_graded == {("not-json", "softmax", "error"), ("not-json", "causal_mask", "error"),
                          ("deleted-cell", "causal_mask", "missing")}     # the stub's parts: not attempted
    flagged = {r["item"] for r in rows if r["section"] == "similarity"}
    assert flagged == {f"{a} & {b}" for i, a in enumerate(COPIES) for b in COPIES[i + 1:]}, flagged
    assert [r["item"] for r in rows if r["section"] == "similarity group"] == [" & ".join(COPIES)]
    full = {(r.student, p.part) for r in records for p in r.parts if p.score == p.max_score}
    assert {(s, part) for s in COPIES + ["reference"] for part in ("softmax", "causal_mask")} <= full, \
        "every copy, wherever it hides, is graded full, and so is the reference"
    scores = [r for r in rows if r["section"] == "score"]
    for part in ("softmax", "causal_mask"):
        assert sum(int(r["students"]) for r in scores if r["part"] == part) == n
    assert len([r for r in rows if r["section"] == "time"]) == n


@pytest.mark.slow
def test_the_page_agrees_with_the_csv_in_headless_chromium(course, graded_cohort, chromium, tmp_path):
    folder, _ = graded_cohort
    page = folder / HTML
    text = page.read_text()
    assert "<script" not in text and "<link" not in text and "http://" not in text and "https://" not in text
    assert "never changes a grade" in text
    browser = chromium
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    shown = {}
    for key, body in re.findall(r'<tr data-row="([^"]*)">(.*?)</tr>', dom.stdout, flags=re.S):
        shown[html.unescape(key)] = body
    for row in _csv(folder / CSV):
        key = "/".join(row[k] for k in ("section", "assignment", "part", "item"))
        if row["section"] == "similarity":
            assert re.search(rf'data-row="{re.escape(html.escape(key))}">{row["value"]}<', dom.stdout), key
            continue
        if row["section"] == "time" and key not in shown:
            continue            # the page lists the five slowest
        assert key in shown, key
        cells = re.findall(r"<td[^>]*>(.*?)</td>", shown[key], flags=re.S)
        if row["students"]:
            assert row["students"] in [re.sub("<[^>]+>", "", c) for c in cells], (key, cells)
    pictures = re.findall(r'<svg [^>]*aria-label="([^"]*)"', dom.stdout)      # inline, drawn in the page
    assert pictures == ["histogram of the scores of softmax in attention",
                        "histogram of the scores of causal_mask in attention",
                        "histogram of the seconds each submission took"], pictures

    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "cohort_report.png")
    if os.path.exists(shot):
        os.remove(shot)
    done = subprocess.run(base + ["--window-size=1100,1600", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(shot, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(shot) > 20_000


@pytest.mark.slow
def test_course_report_writes_it_again_from_the_results(course, graded_cohort, capsys):
    folder, _ = graded_cohort
    before = _csv(folder / CSV)
    os.remove(folder / HTML)
    assert cli.main(["report", str(folder)]) == 0
    assert str(folder / HTML) in capsys.readouterr().out
    assert [r for r in _csv(folder / CSV) if r["section"] != "time"] == \
        [r for r in before if r["section"] != "time"]
    with open(next((folder / "results").glob("*/attention.json"))) as fh:
        assert all("mistake" in c for p in json.load(fh)["parts"] for c in p["checks"])
