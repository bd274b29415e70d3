"""The instructor's night: incremental and resumable batches, progress, regrades with a diff,
exports that agree with nbgrader (hand grades included), feedback a browser has rendered.

Everything runs the real `course` command and real nbgrader on small cohorts.
"""

import csv
import dataclasses
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from autograder import cli, pipeline
from autograder.export import gradescope, totals
from autograder.grade import discovery, grading, reuse, versions
from autograder.grade.progress import Progress
from autograder.mistakes import cohort
from autograder.records import store
from autograder.records.results import PartResult, Submission
from autograder.release import assignments
from autograder.report import terminal

BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTIFACTS = os.path.join(ROOT, "artifacts")


def _env():
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), MPLBACKEND="Agg")


def _csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def graded_copy(graded_demo, tmp_path):
    """A private copy of the graded demo folder (its gradebook included), free to change."""
    folder, records, students = graded_demo
    dest = tmp_path / "course"
    shutil.copytree(folder, dest)
    return dest, records, students


def _small_cohort(course, folder, mistakes=1, own=None):
    """reference, untouched stub and the first ``mistakes`` mistakes of the first assignment;
    ``own``: written with a comment of that name in each solved cell, so that a long-lived grading
    process (a Dask worker) grades them afresh rather than reusing its results (grade/reuse.py)."""
    made = []
    mine = (lambda nb: cohort.own(nb, own)) if own else (lambda nb: nb)
    for assignment in course.assignments[:1]:
        cohort.write(mine(cohort.solved(course, assignment)), str(folder), "reference", assignment)
        cohort.write(cohort.stub(course, assignment), str(folder), "stub", assignment)
        made += [("reference", assignment.id), ("stub", assignment.id)]
        left = mistakes
        for part in assignment.parts:
            for name, entry in cohort.catalogue(course, part.id)[0].items():
                if left:
                    cohort.write(mine(cohort.solved(course, assignment, entry["cells"])), str(folder), name,
                                 assignment)
                    made.append((name, assignment.id))
                    left -= 1
    return made


def only_first(raw):
    """A course.yaml edit: keep the first assignment only (a release of it takes a third of the time)."""
    first = next(iter(raw["assignments"]))
    raw["assignments"] = {first: raw["assignments"][first]}


# --- 1. incremental, forced, resumed -------------------------------------------------------------

@pytest.mark.slow
def test_unchanged_submissions_are_not_graded_again_changed_and_forced_ones_are(course, graded_copy):
    folder, records, _ = graded_copy
    submitted = folder / "submitted"
    again = pipeline.grade(course, str(submitted), str(folder), jobs=2)
    assert again.graded == [] and len(again.skipped) == len(records)
    assert {r.key for r in again} == {r.key for r in records}

    # one student hands in a different notebook: only that one is graded, the old result is kept
    assignment = course.assignments[0]
    first_part = assignment.parts[0]
    mistake = next(iter(cohort.catalogue(course, first_part.id)[0].values()))
    cohort.write(cohort.solved(course, assignment, mistake["cells"]), str(submitted), "reference", assignment)
    changed = pipeline.grade(course, str(submitted), str(folder), jobs=2)
    assert [(r.student, r.assignment) for r in changed.graded] == [("reference", assignment.id)]
    old = store.history(str(folder), "reference", assignment.id)
    assert len(old) == 1 and old[0].sha256 != changed.graded[0].sha256
    assert sum(p.score for p in old[0].parts) == sum(p.points for p in assignment.parts)
    assert versions.stale(course, changed.graded[0], str(submitted / "reference" / assignment.id
                                                        / assignment.notebook)) is None

    # --force grades even an unchanged submission
    subs = [s for s in discovery.find_submissions(course, str(submitted)) if s.student == "untouched-stub"]
    forced = grading.grade_all(course, subs, str(folder), jobs=1, force=True)
    assert len(forced.graded) == len(subs) and forced.skipped == []


@pytest.mark.slow
def test_an_interrupted_batch_resumes_where_it_stopped(course, tmp_path, monkeypatch):
    monkeypatch.delenv(reuse.STORE, raising=False)       # graded, not read back: it must take long enough
    submitted = tmp_path / "submitted"
    made = _small_cohort(course, submitted, mistakes=2)
    out = tmp_path / "out"
    cmd = [os.path.join(BIN, "course"), "grade", str(submitted), "--out", str(out), "--jobs", "1"]
    # SIGINT restored in the child: under nohup or `make test &` it is ignored, and inherited
    proc = subprocess.Popen(cmd, cwd=str(tmp_path), env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600     # a loaded machine grades slowly; the loop ends at 2 results
    while time.monotonic() < deadline and len(list((out / "results").glob("*/*.json"))) < 2:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    # when each was graded (the export after the resume writes each new record once more: its
    # penalty and hand points, for `course history`)
    done_before = {p: json.loads(p.read_text())["graded_at"] for p in (out / "results").glob("*/*.json")}
    assert proc.returncode == 130, stderr[-2000:]
    assert "interrupted" in stderr and "--resume" in stderr
    assert 2 <= len(done_before) < len(made)
    assert not store.read_journal(str(out))["finished"]
    # plain lines, not a bar, when stderr is not a terminal
    assert "\r" not in stderr and f"/{len(made)}" in stderr

    err = io.StringIO()
    batch = pipeline.grade(course, str(submitted), str(out), jobs=2, progress=Progress(err))
    assert len(batch.skipped) == len(done_before)
    assert len(batch.graded) == len(made) - len(done_before)
    assert store.read_journal(str(out))["finished"]
    for path, graded_at in done_before.items():
        assert json.loads(path.read_text())["graded_at"] == graded_at, f"{path} was graded twice"
    assert "unchanged since they were graded" in err.getvalue()
    assert len(_csv(out / "parts.csv")) == sum(len(course.assignment(a).parts) for _, a in made)


# --- 2. progress and summary ------------------------------------------------------------------------

def _record(student, score, top=4, problem=None):
    return Submission(student, "attention", "attention.ipynb", problem=problem,
                      parts=[PartResult("softmax", score, top, "partial", "")])


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere():
    now = [0.0]
    tty = io.StringIO()
    bar = Progress(tty, tty=True, clock=lambda: now[0])
    bar.start(4, skipped=1)
    for i in range(2):
        now[0] += 30
        bar.update(_record(f"s{i}", 4))
    text = tty.getvalue()
    assert "\r" in text and "grading [############............]" in text
    assert "2/4" in text and "2.0/min" in text and "left 1:00" in text
    bar.finish()
    assert tty.getvalue().endswith("\n")

    plain = io.StringIO()
    lines = Progress(plain, tty=False, clock=lambda: now[0])
    lines.start(2)
    lines.update(_record("a", 1))
    assert "\r" not in plain.getvalue()
    assert plain.getvalue().splitlines()[-1].startswith("[1/2")


def test_summary_counts_failures_with_reasons_and_the_score_distribution():
    batch = grading.Batch()
    batch.records = [_record("a", 4), _record("b", 1), _record("c", 0, problem="your notebook could not be read: x")]
    batch.graded = list(batch.records)
    text = terminal.summary(batch)
    assert "graded now: 3" in text and "could not be graded: 1" in text
    assert "c/attention: your notebook could not be read: x" in text
    row = next(line for line in text.splitlines() if "attention/softmax" in line)
    assert row.split()[1:] == ["3", "1.67", "1.00", "4", "1", "1", "0", "1"]


# --- 3. regrade after a test fix ---------------------------------------------------------------------

@pytest.mark.slow
def test_regrade_prints_old_and_new_scores_and_keeps_the_old_results(course_copy, tmp_path, capsys):
    copy = course_copy()
    assignment = copy.assignments[0]
    part = assignment.parts[0]
    submitted = tmp_path / "submitted"
    cohort.write(cohort.solved(copy, assignment), str(submitted), "ann", assignment)
    out = tmp_path / "out"
    first = pipeline.grade(copy, str(submitted), str(out), jobs=1)
    assert sum(p.score for p in first.graded[0].parts) == sum(p.points for p in assignment.parts)

    # a TA "fixes" the hidden suite: a new check nobody passes
    with open(tmp_path / "course" / part.hidden, "a") as fh:
        fh.write("\n\ndef test_added_after_collection(student, reference):\n"
                 '    """a check added after collection"""\n'
                 "    assert False, 'added after collection'\n")
    config_path = str(tmp_path / "course" / "course.yaml")
    assert cli.main(["--config", config_path, "regrade", str(out)]) == 0
    text = capsys.readouterr().out
    line = next((l for l in text.splitlines() if l.startswith("ann") and f"/{part.id}" in l), None)
    assert line, text
    old, new = line.split()[2:4]
    assert float(old) == part.points and float(new) < part.points
    assert "1 of" in text and "part scores changed" in text

    history = store.history(str(out), "ann", assignment.id)
    assert len(history) == 1
    assert history[0].suites[part.id] != store.read_result(str(out), "ann", assignment.id).suites[part.id]
    assert sum(p.score for p in history[0].parts) == sum(p.points for p in assignment.parts)
    names = os.listdir(out / "results" / "ann" / "history")
    assert names == [f"{assignment.id}.{store.versions_key(history[0])}.json"]


@pytest.mark.slow
def test_a_points_change_is_released_then_regraded_everywhere(course_copy, tmp_path, capsys):
    copy = course_copy(only_first)
    assignment = copy.assignments[0]
    part = assignment.parts[0]
    submitted, out = tmp_path / "submitted", tmp_path / "out"
    cohort.write(cohort.solved(copy, assignment), str(submitted), "ann", assignment)
    pipeline.grade(copy, str(submitted), str(out), jobs=1)
    old_full = sum(p.points for p in assignment.parts)

    changed = course_copy(lambda raw: raw["assignments"][assignment.id]["parts"][part.id].update(
        points=part.points + 1))
    with pytest.raises(Exception, match="run `course release` first"):      # not released yet: loud
        pipeline.grade(changed, str(submitted), str(out), jobs=1)
    config_path = ["--config", changed.path]
    assert cli.main(config_path + ["release"]) == 0
    said = capsys.readouterr().out
    assert f"{part.check_cell} {part.points:g} -> {part.points + 1:g}" in said and assignment.notebook in said
    assert cli.main(config_path + ["regrade", str(out)]) == 0
    said = capsys.readouterr().out
    assert "graded now: 1" in said
    line = next(l for l in said.splitlines() if l.startswith("ann") and f"/{part.id}" in l)
    assert [float(x) for x in line.split()[2:4]] == [part.points, part.points + 1]

    full = old_full + 1
    rows = _csv(out / "parts.csv")
    assert sum(float(r["score"]) for r in rows) == full
    assert {r["part"]: float(r["max_score"]) for r in rows}[part.id] == part.points + 1
    nbgrader_row = next(r for r in _csv(out / "grades.csv") if r["student_id"] == "ann")
    assert float(nbgrader_row["score"]) == full
    assert float(nbgrader_row["max_score"]) == full + sum(assignment.written.values())
    record = store.read_result(str(out), "ann", assignment.id)
    path = str(submitted / "ann" / assignment.id / assignment.notebook)
    assert versions.stale(changed, record, path) is None
    # the limits decide scores too (a slow solution can pass or time out): they mark results stale
    for limit in ("time_per_test", "time_per_part", "memory_mb"):
        other = dataclasses.replace(changed, limits=dataclasses.replace(
            changed.limits, **{limit: getattr(changed.limits, limit) * 2}))
        assert versions.stale(other, record, path) is not None, limit


# --- 4. exports ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_exports_agree_with_nbgrader_export_including_a_hand_grade(course, graded_copy):
    from nbgrader.api import Gradebook

    from autograder.nbgrader import settings
    folder, records, _ = graded_copy
    assignment = next(a for a in course.assignments if a.written)
    cell, points = next(iter(assignment.written.items()))
    notebook = os.path.splitext(assignment.notebook)[0]
    # a TA grades the written answer in formgrader: formgrader sets the grade's manual_score
    db = settings.settings(course, str(folder)).CourseDirectory.db_url
    with Gradebook(db, course.course_id) as gb:
        grade = gb.find_grade(cell, notebook, assignment.id, "reference")
        assert grade.needs_manual_grade
        grade.manual_score = points
        grade.needs_manual_grade = False        # as formgrader's API does with every score it saves
        # and overrides a part the grader failed: every export must carry the instructor's score
        failed = next(r for r in _csv(folder / "parts.csv")
                      if r["assignment"] == assignment.id and float(r["score"]) < float(r["max_score"]))
        override = gb.find_grade(assignment.part(failed["part"]).check_cell, notebook, assignment.id, failed["student"])
        override.manual_score = float(failed["max_score"])
        override.needs_manual_grade = False
        gb.db.commit()
    assert cli.main(["export", str(folder)]) == 0

    exported = str(folder / "export.csv")
    subprocess.run([os.path.join(BIN, "nbgrader"), "export", "--to", exported], cwd=folder, env=_env(),
                   check=True, capture_output=True)
    nbgrader_scores = {(r["student_id"], r["assignment"]): float(r["score"]) for r in _csv(exported)}

    auto = {}
    for row in _csv(folder / "parts.csv"):
        key = (row["student"], row["assignment"])
        auto[key] = auto.get(key, 0.0) + float(row["score"])
    manual = {("reference", assignment.id): float(points)}
    raised = (failed["student"], assignment.id)
    manual[raised] = manual.get(raised, 0.0) + float(failed["max_score"]) - float(failed["score"])
    assert auto.keys() <= nbgrader_scores.keys()     # nbgrader also lists assignments not handed in, at 0
    for key, score in nbgrader_scores.items():
        assert score == pytest.approx(auto.get(key, 0.0) + manual.get(key, 0.0), abs=1e-6), key

    totals = _csv(folder / "totals.csv")
    assert list(totals[0].keys()) == (["student_id", "total", "max_total"] + [a.id for a in course.assignments]
                                      + [f"{a.id}_late_penalty" for a in course.assignments])
    for row in totals:
        per = [float(row[a.id]) for a in course.assignments]
        assert float(row["total"]) == pytest.approx(sum(per), abs=1e-6)
        for a in course.assignments:
            assert float(row[a.id]) == pytest.approx(nbgrader_scores.get((row["student_id"], a.id), 0.0),
                                                     abs=1e-3)
    ref = next(r for r in totals if r["student_id"] == "reference")
    assert float(ref[assignment.id]) == sum(p.points for p in assignment.parts) + points

    for (student, aid) in auto:
        score = nbgrader_scores[student, aid]
        with open(folder / "gradescope" / student / aid / "results.json") as fh:
            result = json.load(fh)
        assert result["score"] == pytest.approx(score, abs=1e-3)
        assert sum(t["score"] for t in result["tests"]) == pytest.approx(result["score"], abs=1e-3)
        for test in result["tests"]:
            assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
            assert test.get("status") in ("passed", "failed", None) and test["visibility"] == "visible"
    raised_page = (folder / "reports" / failed["student"] / f"{assignment.id}.html").read_text()
    assert f"{float(failed['max_score']):g} / {float(failed['max_score']):g} (set by hand)" in raised_page
    page = (folder / "reports" / "reference" / f"{assignment.id}.html").read_text()
    assert f"graded by hand: {points:g} / {sum(assignment.written.values()):g}" in page


def test_totals_count_only_assignments_handed_in_and_gradescope_keeps_partial_credit_apart(course):
    first = course.assignments[0]
    half, *rest = first.parts
    record = Submission("ann", first.id, first.notebook, parts=[
        PartResult(half.id, half.points / 2, half.points, "partial", "")] + [
        PartResult(p.id, p.points, p.points, "passed", "") for p in rest])
    row, = totals.totals(course, [record])
    assert row["max_total"] == totals.max_points(first)
    assert row["total"] == sum(p.points for p in first.parts) - half.points / 2
    assert all(row[a.id] == "" for a in course.assignments[1:])       # not handed in by anyone yet
    tests = {t["number"]: t for t in gradescope.gradescope(record, course)["tests"]}
    assert "status" not in tests[half.id] and tests[half.id]["output"].startswith("partial credit: ")
    assert all(tests[p.id]["status"] == "passed" for p in rest)


# --- 5. feedback in a real browser --------------------------------------------------------------------

@pytest.mark.slow
def test_feedback_page_renders_in_headless_chromium(course, graded_demo, chromium, tmp_path):
    folder, records, _ = graded_demo
    browser = chromium
    # a student with points in some parts and mistakes in others shows every element of the page
    record = max((r for r in records if not r.problem),
                 key=lambda r: (any(0 < p.score < p.max_score for p in r.parts),
                                sum(p.score for p in r.parts) > 0, r.student))
    page = folder / "reports" / record.student / f"{record.assignment}.html"
    text = page.read_text()
    assert "<script" not in text and "<link" not in text and "http://" not in text and "https://" not in text
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the page leads with the total every export gives (no hand grade yet: the autograded points)
    total = sum(p.score for p in record.parts) - record.late_points
    possible = sum(p.max_score for p in record.parts) + sum(course.assignment(record.assignment).written.values())
    assert f'id="total">{total:g} <small>/ {possible:g}</small>' in dom.stdout
    for part in record.parts:
        assert f"{part.score:g} / {part.max_score:g}" in dom.stdout
    assert "What came back" in dom.stdout and "Reproduce it" in dom.stdout

    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "feedback.png")
    if os.path.exists(shot):
        os.remove(shot)
    done = subprocess.run(base + ["--window-size=1000,1400", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(shot, "rb") as fh:
        head = fh.read(8)
    assert head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(shot) > 20_000


# --- 6. nbgrader's own workflow: release, fetch, submit, collect, grade, feedback ----------------------

def _nbgrader(*args, cwd, env=None):
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), *args], cwd=cwd, env=env or _env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_release_fetch_submit_collect_grade_and_feedback_through_an_exchange_of_its_own(course_copy, tmp_path,
                                                                                        capsys):
    """The term with nbgrader's exchange somewhere else than <course>/exchange, as on a shared server."""
    import stat
    from autograder.course import config
    copy = course_copy(only_first)
    home = tmp_path / "course"
    assignment = copy.assignments[0]
    root = tmp_path / "srv" / "exchange"
    with_config = ["--config", copy.path]
    assert cli.main(with_config + ["exchange", "--setup", "--root", str(root), str(home)]) == 0
    copy = config.load(copy.path)
    assert copy.exchange_root == str(root)
    inbound = os.path.join(root, copy.course_id, "inbound")
    mode = stat.S_IMODE(os.stat(inbound).st_mode)
    assert mode & 0o222 == 0o222 and mode & 0o044 == 0, oct(mode)      # students drop, nobody lists
    capsys.readouterr()
    assert cli.main(with_config + ["exchange", str(home)]) == 0        # the check finds the same one
    assert f"--Exchange.root={root}" in capsys.readouterr().out
    assert cli.main(with_config + ["exchange", "--root", str(tmp_path / "elsewhere"), str(home)]) == 2

    # nbgrader's own release_assignment, from the course's assignments/, into that exchange
    _nbgrader("release_assignment", assignment.id, cwd=home)
    assert (root / copy.course_id / "outbound" / assignment.id / assignment.notebook).exists()

    students = {"alice": cohort.solved(copy, assignment)}
    part = assignment.parts[0]
    mistake = next(e for e in cohort.catalogue(copy, part.id)[0].values() if e.get("demo"))
    students["bob"] = cohort.solved(copy, assignment, mistake["cells"])
    common = [f"--Exchange.root={root}", f"--course={copy.course_id}"]
    for student, nb in students.items():
        desk = tmp_path / student
        desk.mkdir()
        env = dict(_env(), JUPYTER_DATA_DIR=str(desk / ".data"))
        _nbgrader("fetch_assignment", assignment.id, *common, cwd=desk, env=env)
        with open(desk / assignment.id / assignment.notebook, "w") as fh:
            json.dump(nb, fh)
        _nbgrader("submit", assignment.id, *common, f"--student={student}", cwd=desk, env=env)
    _nbgrader("collect", assignment.id, cwd=home)
    for student in students:
        assert (home / "submitted" / student / assignment.id / assignment.notebook).exists()

    assert cli.main(with_config + ["grade", str(home / "submitted"), "--out", str(home)]) == 0
    rows = _csv(home / "parts.csv")
    full = sum(p.points for p in assignment.parts)
    score = {s: sum(float(r["score"]) for r in rows if r["student"] == s) for s in students}
    assert score["alice"] == full and score["bob"] < full

    _nbgrader("generate_feedback", assignment.id, "--force", cwd=home)
    page = home / "feedback" / "bob" / assignment.id / assignment.notebook.replace(".ipynb", ".html")
    text = page.read_text()
    assert f"{part.id}:" in text and "hidden" in text
    for line in assignments._hidden_lines(copy):
        assert line not in text
    _nbgrader("release_feedback", assignment.id, cwd=home)
    desk = tmp_path / "bob"
    env = dict(_env(), JUPYTER_DATA_DIR=str(desk / ".data"))
    _nbgrader("fetch_feedback", assignment.id, *common, "--student=bob", cwd=desk, env=env)
    assert list((desk / assignment.id / "feedback").rglob("*.html"))
    assert not (home / "exchange").exists()
