"""The whole path, for real: nbgrader releases, the hidden suites grade, nbgrader records.

The demo cohort (the reference, the untouched stubs, one student per demo
mistake) is graded once by `course grade` and every claim below is read back
from what that run wrote: parts.csv, nbgrader's gradebook and export, the
feedback pages.
"""

import csv
import os
import re
import subprocess
import sys

import pytest

from autograder.export import parts
from autograder.release import assignments


def _grades(folder):
    with open(folder / "parts.csv") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_the_committed_release_is_in_sync(course):
    assert assignments.differences(course) == [], "run `course release` and commit assignments/"


def test_the_release_leaks_nothing(course):
    assert assignments.leaks(course) == []


def test_leak_detection_finds_solution_and_hidden_text(course, tmp_path):
    import shutil
    assignment = course.assignments[0]
    copy = tmp_path / "release"
    shutil.copytree(os.path.join(course.root, "assignments"), copy)
    line = next(l.strip() for l in assignments._solution_lines(course, assignment))
    with open(copy / assignment.id / "extra.py", "w") as fh:
        fh.write(line + "\n### BEGIN HIDDEN TESTS\n")
    found = assignments.leaks(course, str(copy))
    assert any("solution code" in what for _, what in found)
    assert any("marker" in what for _, what in found)


def _tree(folder):
    """relative path -> bytes of every file under ``folder``."""
    found = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, folder)] = fh.read()
    return found


def _keep_first(raw):
    first = next(iter(raw["assignments"]))
    raw["assignments"] = {first: raw["assignments"][first]}


@pytest.mark.slow
def test_a_refused_release_writes_nothing_and_given_lines_are_no_leak(course_copy, capsys):
    import nbformat
    from autograder import cli
    copy = course_copy(_keep_first)
    assignment = copy.assignments[0]
    part = assignment.parts[0]
    solution = copy.source(assignment, assignment.notebook)
    # a given cell shows students a line the solution also has: public, so not a leak
    nb = nbformat.read(solution, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    line = next(l for l in sorted(assignments._solution_lines(copy, assignment)) if l in code and not l.endswith(":"))
    given = next(c for c in nb.cells if c.cell_type == "code" and not c.metadata["nbgrader"].get("solution"))
    given.source += f"\n\n\ndef shown_in_class():\n    {line}\n"
    nbformat.write(nb, solution)
    # ... but a support file carrying a hidden check is, and the points change with it
    hidden = sorted(assignments._hidden_lines(copy))[0]
    with open(copy.source(assignment, "notes.py"), "w") as fh:
        fh.write(f"# {hidden}\n")
    copy = course_copy(lambda raw: raw["assignments"][assignment.id]["parts"][part.id].update(
        points=part.points + 1))
    before, source_before = _tree(os.path.join(copy.root, "assignments")), open(solution, "rb").read()
    capsys.readouterr()
    assert cli.main(["--config", copy.path, "release"]) == 1
    err = capsys.readouterr().err
    assert f"LEAK {assignment.id}/notes.py: hidden test text" in err and "nothing was written" in err
    assert "solution code" not in err
    assert _tree(os.path.join(copy.root, "assignments")) == before
    assert open(solution, "rb").read() == source_before
    assert not [n for n in os.listdir(copy.root) if n.startswith(".release-")]

    os.remove(copy.source(assignment, "notes.py"))
    assert cli.main(["--config", copy.path, "release"]) == 0
    said = capsys.readouterr()
    assert "LEAK" not in said.err
    assert f"{part.check_cell} {part.points:g} -> {part.points + 1:g}" in said.out
    synced = nbformat.read(solution, as_version=4)
    assert [c.metadata["nbgrader"]["points"] for c in synced.cells
            if c.metadata.get("nbgrader", {}).get("grade_id") == part.check_cell] == [part.points + 1]
    released = nbformat.read(copy.release(assignment, assignment.notebook), as_version=4)
    assert any(f"    {line}" in c.source for c in released.cells)


@pytest.mark.slow
def test_nbgraders_own_generate_assignment_releases_what_course_release_does(course_copy):
    import shutil
    copy = course_copy(_keep_first)
    aid = copy.assignments[0].id
    shutil.rmtree(copy.release(copy.assignments[0]))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["nbgrader", "generate_assignment", aid, "--force"], cwd=copy.root,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the copy's assignments/ still holds the other assignments' folders
    assert [d for d in assignments.differences(copy) if d.split(os.sep)[0] == aid] == []   # the kit included


@pytest.mark.slow
def test_parts_csv_has_exactly_the_columns(graded_demo):
    folder, records, _ = graded_demo
    with open(folder / "parts.csv") as fh:
        header = next(csv.reader(fh))
    assert header == list(parts.COLUMNS)
    statuses = {row["status"] for row in _grades(folder)}
    assert statuses <= {"passed", "partial", "failed", "error", "timeout", "missing", "not attempted"}
    assert {row["status"] for row in _grades(folder) if row["student"] == "untouched-stub"} == {"not attempted"}


@pytest.mark.slow
def test_reference_full_marks_and_stubs_zero(graded_demo):
    folder, _, _ = graded_demo
    for row in _grades(folder):
        if row["student"] == "reference":
            assert float(row["score"]) == float(row["max_score"]), row
            assert row["status"] == "passed"
        if row["student"] == "untouched-stub":
            assert float(row["score"]) == 0.0, row
            assert "not written yet" in row["reason"]


@pytest.mark.slow
def test_each_mistake_loses_points_in_its_own_part_only(course, graded_demo):
    from autograder.mistakes import cohort
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


@pytest.mark.slow
def test_mistakes_are_named_in_the_reason(graded_demo):
    folder, _, _ = graded_demo
    reasons = {r["student"]: r["reason"] for r in _grades(folder) if r["part"] == "softmax"}
    assert "subtracting the maximum" in reasons["softmax-no-max-shift"]
    assert "nats" in reasons["entropy-in-nats"]
    mask_reasons = {r["student"]: r["reason"] for r in _grades(folder) if r["part"] == "causal_mask"}
    assert "softmax ran before the mask" in mask_reasons["mask-after-softmax"]
    assert "j <= i" in mask_reasons["mask-transposed"]


@pytest.mark.slow
def test_nbgrader_export_agrees_with_parts_csv(course, graded_demo, tmp_path):
    folder, _, _ = graded_demo
    totals = {}
    for row in _grades(folder):
        key = (row["student"], row["assignment"])
        totals[key] = totals.get(key, 0.0) + float(row["score"])
    out = tmp_path / "export.csv"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    subprocess.run(["nbgrader", "export", "--to", str(out)], cwd=folder, env=env, check=True,
                   capture_output=True)
    with open(out) as fh:
        exported = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(fh)}
    # nbgrader lists every student under every assignment; one not handed in scores 0
    assert totals.keys() <= exported.keys()
    for key, score in exported.items():
        assert score == pytest.approx(totals.get(key, 0.0), abs=1e-6), key


@pytest.mark.slow
def test_git_ignores_everything_grading_writes_in_a_course_folder(graded_demo):
    """`git add -A` after a term must not commit students' work or grades."""
    folder, _, _ = graded_demo
    written = [os.path.relpath(os.path.join(d, f), folder) for d, _, files in os.walk(folder) for f in files]
    written = [p for p in written if p != "nbgrader_config.py"]   # the repository has its own, committed
    written += ["feedback/s/attention/attention.html", "exchange/attention-transformer/inbound/x",
                ".release-abc123/release/attention/attention.ipynb", "gradebook.db-journal"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=root, input="\n".join(written),
                          capture_output=True, text=True)
    assert sorted(set(written) - set(proc.stdout.splitlines())) == []


@pytest.mark.slow
def test_nbgrader_export_in_the_course_folder_overwrites_nothing_of_ours(graded_demo, tmp_path):
    import shutil
    folder, _, _ = graded_demo
    copy = tmp_path / "course"
    shutil.copytree(folder, copy)
    ours = {name: (copy / name).read_bytes() for name in ("parts.csv", "totals.csv")}
    with open(copy / "grades.csv") as fh:
        written = list(csv.DictReader(fh))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    subprocess.run(["nbgrader", "export"], cwd=copy, env=env, check=True, capture_output=True)
    assert {name: (copy / name).read_bytes() for name in ours} == ours
    with open(copy / "grades.csv") as fh:      # nbgrader's own file, which `course export` also writes
        assert list(csv.DictReader(fh)) == written


@pytest.mark.slow
def test_autograded_notebooks_exist_for_formgrader(course, graded_demo):
    folder, records, _ = graded_demo
    for record in records:
        assignment = course.assignment(record.assignment)
        assert (folder / "autograded" / record.student / assignment.id / assignment.notebook).exists()


@pytest.mark.slow
def test_feedback_shows_no_hidden_test_source(course, graded_demo):
    folder, records, _ = graded_demo
    hidden = assignments._hidden_lines(course)
    pages = list((folder / "reports").rglob("*.html"))
    assert len(pages) == len(records)
    for page in pages:
        text = page.read_text()
        assert "Autograded parts" in text
        for line in hidden:
            assert line not in text, (page, line)


@pytest.mark.slow      # `course grade` loads nbgrader first: seconds
def test_grading_a_missing_or_empty_folder_is_a_clear_error(tmp_path, capsys):
    from autograder import cli
    assert cli.main(["grade", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert cli.main(["grade", str(tmp_path)]) == 2
    assert "no submissions" in capsys.readouterr().err


def _selfcheck(folder, *extra):
    return subprocess.run([sys.executable, "-m", "pytest", *extra], cwd=folder,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.corpus
def test_selfcheck_in_a_released_folder(course, release_copy):
    from autograder.mistakes import cohort
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


@pytest.mark.slow
def test_course_check_exit_codes(course, tmp_path):
    from autograder import cli
    from autograder.mistakes import cohort
    assignment = course.assignments[0]
    stub = cohort.write(cohort.stub(course, assignment), str(tmp_path), "a", assignment)
    good = cohort.write(cohort.solved(course, assignment), str(tmp_path), "b", assignment)
    assert cli.main(["check", stub]) != 0
    assert cli.main(["check", good]) == 0


@pytest.mark.slow      # `course grade` loads nbgrader first: seconds
def test_a_missing_corpus_stops_grading_with_one_line(course, tmp_path, monkeypatch, capsys):
    from autograder import cli
    from autograder.course import corpus
    from autograder.mistakes import cohort
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
