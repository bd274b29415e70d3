"""Grade submissions: each part of each notebook against its suites, in parallel.

A submission is ``SUBMITTED/<student>/<assignment>/<notebook>.ipynb``, laid out
as nbgrader's ``submitted/``. Each is graded in a worker process; each part in
a fresh student process of its own, with the released notebook's locked cells
and the reference solution standing in for the other parts. Every part ends
with a score and a reason, whatever the notebook does.
"""

import concurrent.futures as cf
import glob
import hashlib
import json
import multiprocessing
import os
import shutil
import tempfile

from autograder import suites
from selfcheck.program import NotebookError, program, read_notebook, solution_ids

SELF = os.path.dirname(os.path.abspath(__file__))


def grader_version():
    """A hash of the code that turns a notebook into a verdict."""
    files = sorted(glob.glob(os.path.join(SELF, "..", "selfcheck", "**", "*.py"), recursive=True))
    files += [os.path.join(SELF, name) for name in ("grading.py", "suites.py")]
    return suites.file_hash(*files)


def _zero(part, status, reason):
    return {"part": part.id, "score": 0.0, "max_score": part.points, "status": status,
            "reason": reason, "checks": [], "suite": None, "seconds": 0.0}


def _support_files(course, assignment, workdir):
    """The released files a notebook imports (never the student's copies of them)."""
    release = course.release(assignment)
    for name in os.listdir(release):
        path = os.path.join(release, name)
        if (os.path.isfile(path) and name.endswith(".py") and not name.startswith("test_")
                and name != "conftest.py"):
            shutil.copy(path, workdir)


def which_notebook(nb, release):
    """None when ``nb`` is plausibly this assignment's notebook, else the reason it is not."""
    expected = set(solution_ids(release))
    found = {gid for gid in solution_ids(nb)} & expected
    if expected and not found:
        return "this is not this assignment's notebook (none of its solution cells are in it)"
    return None


def grade_submission(course, assignment_id, student_id, path, jail=None):
    """The result record of one submission: every part scored, with reasons."""
    assignment = course.assignment(assignment_id)
    record = {"student": student_id, "assignment": assignment_id,
              "notebook": os.path.basename(path), "grader": grader_version(), "problem": None}
    try:
        record["sha256"] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    except OSError:
        record["sha256"] = None
    try:
        nb = read_notebook(path)
        release = read_notebook(course.release(assignment, assignment.notebook))
        reference = read_notebook(course.source(assignment, assignment.notebook))
        problem = which_notebook(nb, release)
    except NotebookError as exc:
        problem = f"your notebook could not be read: {exc}"
    if problem:
        record["problem"] = problem
        record["parts"] = [_zero(p, "error", problem) for p in assignment.parts]
        return record
    parts = []
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        for part in assignment.parts:
            cells, missing = program(nb, release, reference, own=set(part.cells))
            if missing:
                parts.append(_zero(part, "missing", "the solution cell(s) "
                                   + ", ".join(f"'{m}'" for m in missing)
                                   + " are gone from your notebook, so this part could not be checked"))
                continue
            workdir = os.path.join(scratch, part.id)
            os.makedirs(workdir)
            _support_files(course, assignment, workdir)
            parts.append(suites.run_part(course, assignment, part, cells, workdir, jail=jail))
    record["parts"] = parts
    return record


def find_submissions(course, submitted):
    """(student, assignment, notebook path) for every submission under ``submitted``."""
    if not os.path.isdir(submitted):
        raise FileNotFoundError(f"{submitted}: no such folder of submissions")
    found = []
    for student in sorted(os.listdir(submitted)):
        if not os.path.isdir(os.path.join(submitted, student)) or student.startswith("."):
            continue
        for assignment in course.assignments:
            folder = os.path.join(submitted, student, assignment.id)
            if os.path.isdir(folder):
                found.append((student, assignment.id, os.path.join(folder, assignment.notebook)))
    if not found:
        raise FileNotFoundError(f"{submitted}: no submissions in it (expected "
                                "<student>/<assignment>/<notebook>.ipynb)")
    return found


def _worker(args):
    course, student, assignment, path = args
    return grade_submission(course, assignment, student, path)


def result_path(out, student, assignment):
    return os.path.join(out, "results", student, f"{assignment}.json")


def write_result(out, record):
    path = result_path(out, record["student"], record["assignment"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(record, fh, indent=1)
    os.replace(tmp, path)


def grade_all(course, submissions, out, jobs=None, progress=None):
    """Grade every submission in ``jobs`` worker processes; results are written as they finish."""
    jobs = jobs or os.cpu_count() or 1
    tasks = [(course, s, a, p) for s, a, p in submissions]
    records = []
    ctx = multiprocessing.get_context("fork")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_worker, t): t for t in tasks}
        for future in cf.as_completed(futures):
            _, student, assignment, path = futures[future]
            try:
                record = future.result()
            except Exception as exc:  # a grader bug must not stop the batch
                record = {"student": student, "assignment": assignment,
                          "notebook": os.path.basename(path), "problem": f"grader error: {exc}",
                          "parts": [_zero(p, "error", f"the grader failed on this submission ({exc})")
                                    for p in course.assignment(assignment).parts]}
            write_result(out, record)
            records.append(record)
            if progress:
                progress(record)
    return records
