"""The `course` command: release, grade, check, demo.

    course release            solutions/ -> assignments/ (nbgrader generate_assignment)
    course grade SUBMITTED    grade <student>/<assignment>/<notebook>.ipynb under SUBMITTED
    course check NOTEBOOK     a student's self-check: the public checks, in a fresh process
    course demo               release, build a demo cohort, grade it, print the table
"""

import argparse
import os
import subprocess
import sys
import time

from autograder import config


def _progress(total):
    done = [0]
    start = time.monotonic()

    def report(record):
        done[0] += 1
        score = sum(p["score"] for p in record["parts"])
        top = sum(p["max_score"] for p in record["parts"])
        elapsed = time.monotonic() - start
        print(f"[{done[0]}/{total}] {record['student']}/{record['assignment']}: {score:g}/{top:g} "
              f"({elapsed:.0f} s)", file=sys.stderr, flush=True)
    return report


def grade(course, submitted, out, jobs=None, quiet=False):
    """Grade a folder of submissions; write results, grades.csv, feedback and the gradebook."""
    from autograder import grading, nbgrader_bridge, reports
    submissions = grading.find_submissions(course, submitted)
    out = os.path.abspath(out)
    nbgrader_bridge.write_course_folder(course, out)
    records = grading.grade_all(course, submissions, out, jobs,
                                progress=None if quiet else _progress(len(submissions)))
    by_key = {(r["student"], r["assignment"]): r for r in records}
    for assignment in course.assignments:
        mine = [(s, a, p) for s, a, p in submissions if a == assignment.id]
        if not mine:
            continue
        nbgrader_bridge.register(course, assignment, out)
        for student, _, path in mine:
            unreadable = by_key[student, assignment.id].get("problem") is not None
            stub = course.release(assignment, assignment.notebook)
            nbgrader_bridge.stage(submitted, out, student, assignment.id, assignment.notebook,
                                  replacement=stub if unreadable else None)
        error = nbgrader_bridge.autograde(course, assignment, out, os.path.join(out, "results"))
        if error:
            print(f"nbgrader autograde reported a problem for {assignment.id}: {error.splitlines()[0]}",
                  file=sys.stderr)
    reports.write_grades(out, records)
    reports.write_feedback(out, records)
    nbgrader_bridge.export(course, out)
    return records


def cmd_release(course, args):
    from autograder import release
    release.release(course)
    found = release.leaks(course)
    for path, what in found:
        print(f"LEAK {path}: {what}", file=sys.stderr)
    print(f"released {', '.join(a.id for a in course.assignments)} into assignments/")
    return 1 if found else 0


def cmd_grade(course, args):
    records = grade(course, args.submitted, args.out, args.jobs)
    from autograder import reports
    print(reports.table(records))
    print(f"\ngrades:   {os.path.join(args.out, 'grades.csv')}")
    print(f"feedback: {os.path.join(args.out, 'reports')}/<student>/<assignment>.html")
    return 0


def cmd_check(course, args):
    from selfcheck.program import read_notebook, NotebookError
    notebook = os.path.abspath(args.notebook)
    name = os.path.basename(notebook)
    matches = [a for a in course.assignments if a.notebook == name]
    if not matches:
        print(f"{args.notebook}: not a notebook of this course "
              f"(expected one of {', '.join(a.notebook for a in course.assignments)})", file=sys.stderr)
        return 2
    try:
        read_notebook(notebook)
    except NotebookError as exc:
        print(f"{args.notebook}: {exc}", file=sys.stderr)
        return 2
    folder = course.release(matches[0])
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "--rootdir", folder, "--notebook", notebook, folder], cwd=folder)


def cmd_demo(course, args):
    from autograder import cohort, release, reports
    folder = os.path.abspath(args.dir)
    print("1. releasing the assignments with nbgrader ...", flush=True)
    release.release(course)
    submitted = os.path.join(folder, "submitted")
    if os.path.exists(submitted):
        import shutil
        shutil.rmtree(submitted)
    students = cohort.demo_cohort(course, submitted)
    print(f"2. demo cohort of {len(students)} students in {submitted}:")
    for name, what in students.items():
        print(f"   {name:<24} {what}")
    print("3. grading (hidden suites, each part in a process of its own) ...", flush=True)
    records = grade(course, submitted, folder, args.jobs)
    print()
    print(reports.table(records))
    print(f"\ngrades.csv:          {os.path.join(folder, 'grades.csv')}")
    print(f"feedback pages:      {os.path.join(folder, 'reports')}/<student>/<assignment>.html")
    print(f"nbgrader gradebook:  {os.path.join(folder, 'gradebook.db')} "
          f"(cd {args.dir} && nbgrader export, or formgrader for the written answers)")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=None, help="course.yaml to use (default: the course's own)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("release", help="generate assignments/ from solutions/ with nbgrader")
    g = sub.add_parser("grade", help="grade a folder of submissions")
    g.add_argument("submitted", help="folder laid out as <student>/<assignment>/<notebook>.ipynb")
    g.add_argument("--out", default=".", help="where results, grades.csv, feedback and the gradebook go")
    g.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")
    c = sub.add_parser("check", help="run the public checks on a notebook")
    c.add_argument("notebook")
    d = sub.add_parser("demo", help="release, grade a demo cohort, print the table")
    d.add_argument("--dir", default="demo", help="working folder for the demo (default: demo/)")
    d.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        course = config.load(args.config)
        return {"release": cmd_release, "grade": cmd_grade, "check": cmd_check,
                "demo": cmd_demo}[args.command](course, args)
    except config.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
