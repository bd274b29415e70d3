"""The stages after grading do work in proportion to what changed, never to the class: counted
(files read and written), not timed. bench/term.py times them at 2,000 students; a term here is a
few students whose records are made as grading writes them, without grading anyone."""

import os
import subprocess
import sys

import pytest

from autograder import status
from autograder.grade import discovery, versions
from autograder.mistakes import cohort
from autograder.nbgrader import settings
from autograder.records import store
from autograder.records.results import PartResult, Submission


def test_the_gradebook_is_read_by_nbgrader_s_own_tables_and_columns():
    """gradebook_rows reads nbgrader's tables without loading nbgrader: each table and column it
    names is nbgrader's, of nbgrader's type."""
    import nbgrader.api

    from autograder.nbgrader import gradebook_rows
    for mine in gradebook_rows.TABLES:
        theirs = nbgrader.api.Base.metadata.tables[mine.name]
        for col in mine.columns:
            assert col.name in theirs.columns, (mine.name, col.name)
            assert isinstance(theirs.columns[col.name].type, type(col.type)), (mine.name, col.name)


def test_a_notebook_s_score_is_nbgrader_s_own_read_through_the_index(tmp_path):
    """notebook_score gives nbgrader's SubmittedNotebook.score (hand scores over autograded ones,
    extra credit added) for each hand-in, asking the grade table by (cell, notebook)."""
    from nbgrader.api import Gradebook

    from autograder.nbgrader import gradebook_rows
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        gb.add_assignment("a1")
        gb.add_notebook("nb", "a1")
        for name, points in (("q1", 2.0), ("q2", 3.0)):
            gb.add_grade_cell(name, "nb", "a1", max_score=points, cell_type="code")
        for student, (auto, manual, extra) in {"ann": (2.0, None, None), "ben": (1.0, 2.5, 0.5),
                                               "cy": (None, None, None)}.items():
            gb.add_student(student)
            gb.add_submission("a1", student)
            for grade in gb.find_submission_notebook("nb", "a1", student).grades:
                grade.auto_score, grade.manual_score, grade.extra_credit = auto, manual, extra
            gb.db.commit()
        for student in ("ann", "ben", "cy"):
            notebook = gb.find_submission_notebook("nb", "a1", student)
            assert gradebook_rows.notebook_score(gb.db, notebook.id, notebook.notebook_id) == notebook.score
        assert [gb.find_submission_notebook("nb", "a1", s).score for s in ("ann", "ben", "cy")] == [4.0, 6.0, 0.0]


def hand_in(course, folder, student):
    """``student``'s solved notebook of every assignment under ``folder/submitted``, and the record
    grading would have written for it in ``folder/out``: (tasks, records)."""
    submitted, out = os.path.join(folder, "submitted"), os.path.join(folder, "out")
    for assignment in course.assignments:
        path = cohort.write(cohort.own(cohort.solved(course, assignment), student), submitted, student, assignment)
        store.write_result(out, Submission(
            student, assignment.id, assignment.notebook, sha256=versions.file_sha256(path),
            grader=versions.grader_version(), suites=versions.suite_versions(course, assignment.id),
            parts=[PartResult(p.id, p.points, p.points, "passed", "every check passed") for p in assignment.parts]))
    tasks = [t for t in discovery.find_submissions(course, submitted) if t.student == student]
    return tasks, [store.read_result(out, t.student, t.assignment) for t in tasks]


def test_course_status_loads_no_nbgrader_and_reads_only_what_changed_since(course, tmp_path, monkeypatch):
    """`course status` reads the gradebook by its tables (nbgrader's package loads its server
    extensions, over a second), each hand-in's notebook only when its file changed, and each record
    only when its results file changed."""
    settings.write_course_folder(course, str(tmp_path / "out"))
    for student in ("ann", "bob", "cy"):
        hand_in(course, str(tmp_path), student)
    argv = ["--config", course.path, "status", str(tmp_path / "out"), "--submitted", str(tmp_path / "submitted")]
    probe = ("import sys; from autograder import cli; cli.main(sys.argv[1:]); "
             "assert not [m for m in sys.modules if m.split('.')[0] == 'nbgrader'], 'nbgrader was loaded'")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hand-ins not graded yet" in done.stdout and f"{os.sep}submitted): none" in done.stdout

    read = {"notebooks": 0, "records": 0}

    def counted(what, real):
        def call(*args):
            read[what] += 1
            return real(*args)
        return call
    monkeypatch.setattr(versions, "file_sha256", counted("notebooks", versions.file_sha256))
    monkeypatch.setattr(store, "_load", counted("records", store._load))
    status.status(course, str(tmp_path / "out"), str(tmp_path / "submitted"))
    assert read == {"notebooks": 0, "records": 0}, read          # the subprocess read every one, once
    changed = tmp_path / "submitted" / "bob" / course.assignments[0].id / course.assignments[0].notebook
    changed.write_text(changed.read_text() + " ")
    said = status.status(course, str(tmp_path / "out"), str(tmp_path / "submitted"))
    assert read == {"notebooks": 1, "records": 0}, read
    assert f"bob/{course.assignments[0].id}: the notebook changed" in said


@pytest.mark.slow     # the first report reads every known way to write each assignment: seconds
def test_the_cohort_report_again_reads_and_fingerprints_only_the_notebook_that_changed(course, tmp_path, monkeypatch):
    """Every export makes the cohort report from every record; its similarity flags read each
    hand-in's notebook and the known ways to write each assignment only once, until they change."""
    from autograder.grade import handin
    from autograder.report import cohort_page, similarity
    for student in ("ann", "bob", "cy"):
        hand_in(course, str(tmp_path), student)
    out, submitted = str(tmp_path / "out"), str(tmp_path / "submitted")
    cohort_page.write(course, out, store.load_results(out), submitted)
    before = (tmp_path / "out" / "cohort_report.csv").read_bytes()
    work = {"read": 0, "fingerprinted": 0}

    def counted(what, real):
        def call(*args, **kwargs):
            work[what] += 1
            return real(*args, **kwargs)
        return call
    monkeypatch.setattr(handin, "read_submission", counted("read", handin.read_submission))
    monkeypatch.setattr(similarity, "document", counted("fingerprinted", similarity.document))
    cohort_page.write(course, out, store.load_results(out), submitted)
    assert work == {"read": 0, "fingerprinted": 0} and (tmp_path / "out" / "cohort_report.csv").read_bytes() == before
    assignment = course.assignments[0]
    changed = tmp_path / "submitted" / "bob" / assignment.id / assignment.notebook
    cohort.write(cohort.own(cohort.solved(course, assignment), "bob again"), submitted, "bob", assignment)
    cohort_page.write(course, out, store.load_results(out), submitted)
    assert work == {"read": 1, "fingerprinted": 1}, (work, changed)
