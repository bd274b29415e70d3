"""What each ``course`` command does, given the arguments :mod:`autograder.cli` parsed: each
``cmd_<name>`` returns the command's exit status."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from autograder.course import config, folders
from autograder.errors import CourseError, NoSubmissions


def _grade(course, submitted, out, jobs, force=False, cluster=None, students=None):
    """The grading pipeline with a progress report on stderr; its warnings printed there too."""
    from autograder import pipeline
    from autograder.grade.progress import Progress
    batch = pipeline.grade(course, submitted, out, jobs, force=force, progress=Progress(sys.stderr),
                           cluster=cluster, students=students)
    _warn(batch.warnings)
    return batch


def _warn(lines):
    for line in lines:
        print(f"error: {line}", file=sys.stderr)


def _parts(course):
    """The parts in course.yaml's order, the columns of the table a run prints."""
    return [part.id for assignment in course.assignments for part in assignment.parts]


def _where(out):
    from autograder import pipeline
    from autograder.export import outputs
    return outputs.where(out, pipeline.OUTPUTS)


def _release(course):
    """Release, saying which solution notebooks got course.yaml's points; on a leak, print it and
    return None (nothing was written)."""
    from autograder.errors import NbgraderError
    from autograder.release import assignments
    try:
        synced = assignments.release(course)
    except NbgraderError as exc:         # its message carries nbgrader's own reason
        print(f"error: {exc}; nothing was written (assignments/ and solutions/ are as they were)",
              file=sys.stderr)
        return None
    except assignments.LeakError as exc:
        for path, what in exc.leaks:
            print(f"LEAK {path}: {what}", file=sys.stderr)
        print("error: the release would publish the text above; nothing was written "
              "(assignments/ and solutions/ are as they were)", file=sys.stderr)
        return None
    for assignment_id, changed in synced.items():
        assignment = course.assignment(assignment_id)
        print(f"{os.path.relpath(course.source(assignment, assignment.notebook))}: points from "
              f"course.yaml written into it ({', '.join(changed)}); commit it with assignments/")
    return synced


def cmd_release(course: config.Course, args: argparse.Namespace) -> int:
    if _release(course) is None:
        return 1
    print(f"released {', '.join(a.id for a in course.assignments)} into {os.path.join(course.root, 'assignments', '')}")
    return 0


def _finish(batch, out, resume_hint):
    from autograder.report import terminal
    print(terminal.summary(batch))
    if batch.interrupted:
        print(f"\ninterrupted: {len(batch.graded)} graded in this run and saved; "
              f"{len(batch.pending)} left. Continue with: {resume_hint}", file=sys.stderr)
        return 130
    return 0


def cmd_grade(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.records import store
    from autograder.report import terminal
    out = os.path.abspath(args.out)
    journal = store.read_journal(out)
    if args.resume and journal and journal.get("finished"):
        print("the last batch in this folder finished; grading what changed since", file=sys.stderr)
    elif journal and not journal.get("finished") and not args.resume:
        print("the last batch in this folder was interrupted; resuming it (its finished "
              "submissions are kept)", file=sys.stderr)
    if journal and not journal.get("finished") and journal.get("forced_since") and not args.force:
        print("it was a forced batch: every submission it had not reached is graded again",
              file=sys.stderr)
    batch = _grade(course, args.submitted, out, args.jobs, force=args.force,
                   cluster=args.cluster or course.cluster, students=args.student)
    if not batch.interrupted:
        print(terminal.table(batch.records, _parts(course)))
        print()
    if args.new:
        print(folders.new_folder_note(course, out, args.submitted), file=sys.stderr)
    only = "".join(f" --student {s}" for s in args.student or ())
    code = _finish(batch, out, f"course grade {args.submitted} --out {args.out}{only} --resume")
    if not batch.interrupted:
        print("\n" + _where(out))
    return code


def cmd_regrade(course: config.Course, args: argparse.Namespace) -> int:
    """Grade again what a changed suite or grader affects; print old and new scores."""
    from autograder.records import store
    from autograder.report import terminal
    out = os.path.abspath(args.dir)
    journal = store.read_journal(out)
    submitted = args.submitted or journal.get("submitted") or os.path.join(out, "submitted")
    if not store.load_results(out):
        print(f"error: {out} holds no results to regrade (run `course grade` first)", file=sys.stderr)
        return 2
    totals = os.path.join(out, "totals.csv")
    before = terminal.read_totals(totals)
    batch = _grade(course, submitted, out, args.jobs, force=args.force,
                   cluster=args.cluster or course.cluster)
    print(terminal.diff_table(terminal.changes(batch.previous, batch.graded), everything=args.all))
    if not batch.interrupted:
        print(terminal.totals_diff(before, terminal.read_totals(totals)))
    print(f"(earlier results are kept in {os.path.join(out, 'results')}/<student>/history/)")
    regraded = sorted({r.assignment for r in batch.graded})
    if regraded and not batch.interrupted:
        print("the exports and feedback pages are up to date; nbgrader's own feedback is not: in "
              f"{out} run " + "; ".join(f"nbgrader generate_feedback {a} --force && nbgrader release_feedback {a}"
                                        for a in regraded))
    return _finish(batch, out, f"course regrade {args.dir}")


def cmd_export(course: config.Course, args: argparse.Namespace) -> int:
    """Write every export again from the results and the gradebook (after formgrader)."""
    from autograder.records import store
    out = os.path.abspath(args.dir)
    records = store.load_results(out)
    if not records:
        print(f"error: {out} holds no results (run `course grade` first)", file=sys.stderr)
        return 2
    from autograder import pipeline
    from autograder.report import terminal
    totals = os.path.join(out, "totals.csv")
    before, notes = terminal.read_totals(totals), list[str]()
    _warn(pipeline.export(course, out, records, notes=notes))
    print("\n".join([terminal.totals_diff(before, terminal.read_totals(totals)), *(f"note: {n}" for n in notes)]))
    print(_where(out))
    return 0


def cmd_report(course: config.Course, args: argparse.Namespace) -> int:
    """The cohort report from the results in DIR (its submissions: where the last batch read them)."""
    from autograder.records import store
    from autograder.report import cohort_analysis, cohort_page
    out = os.path.abspath(args.dir)
    records = store.load_results(out)
    if not records:
        raise NoSubmissions(f"{out} holds no results (run `course grade` first)")
    from autograder.nbgrader import gradebook_rows, settings
    lost = settings.left_behind(course, out)
    if lost:
        raise CourseError(lost)
    try:
        scores = gradebook_rows.scores(course, out)
    except Exception:  # noqa: BLE001 - no gradebook yet: the grader's scores alone
        scores = {}
    path = cohort_page.write(course, out, records, args.submitted, gradebook=scores)
    print(f"report: {path}\ncsv:    {os.path.join(out, cohort_analysis.CSV)}")
    return 0


def cmd_history(course: config.Course, args: argparse.Namespace) -> int:
    """One student's results over time, per assignment, from results/<student>/history/."""
    from autograder import status
    print(status.history(course, os.path.abspath(args.dir), args.student))
    return 0


def cmd_status(course: config.Course, args: argparse.Namespace) -> int:
    """The morning's list: not graded yet, late, not hand-graded, grader errors, flags, pending totals."""
    from autograder import status
    print(status.status(course, os.path.abspath(args.dir), args.submitted))
    return 0


def cmd_exchange(course: config.Course, args: argparse.Namespace) -> int:
    """Set up (--setup) or check nbgrader's exchange, and that the course folder is the instructor's alone."""
    from autograder.course import private
    from autograder.nbgrader import exchange, settings
    out = os.path.abspath(args.dir)
    if args.setup:
        exchange.refuse_filesystem(args.root or exchange.root(course, out))
    if args.root and os.path.abspath(args.root) != exchange.root(course, out):
        if not args.setup:
            print(f"error: {os.path.abspath(args.root)} is not this course's exchange "
                  f"({exchange.root(course, out)}); `course exchange --setup --root "
                  f"{args.root}` makes it so", file=sys.stderr)
            return 2
        course = config.write_exchange_root(course, args.root)
        print(f"{os.path.relpath(course.path)}: exchange_root: {course.exchange_root} (nbgrader's "
              "release_assignment, collect and release_feedback read it from there)")
    root = exchange.root(course, out)
    if args.setup:
        settings.write_course_folder(course, out)
        private.make(course.root)
        for path in dict.fromkeys((course.root, out)):
            print(f"{os.stat(path).st_mode & 0o7777:>5o}  {path} (the course folder: yours alone)")
        for path, mode in exchange.setup(course, out).items():
            print(f"{mode:>5o}  {path}")
    problems = exchange.problems(course, out) + private.problems(course, out)
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    for line in exchange.doubts(course, out):
        print(f"warning: {line}", file=sys.stderr)
    if not problems:
        print(f"exchange ready: {root} (students: --Exchange.root={root} --course={course.course_id})")
    if any(os.path.realpath(root).startswith(os.path.realpath(f) + os.sep) for f in (course.root, out)):
        print("note: the exchange is inside the course folder, which no other account can reach: "
              "students with accounts of their own need `course exchange --setup --root DIR` outside it")
    return 1 if problems else 0


def cmd_check(course: config.Course, args: argparse.Namespace) -> int:
    """The public checks on one notebook, run in the grading sandbox (never as the instructor)."""
    from autograder.export import gradescope
    from autograder.grade import submission
    from selfcheck.program import NotebookError
    name = os.path.basename(args.notebook)
    matches = [a for a in course.assignments if a.notebook == name]
    if not matches:
        print(f"{args.notebook}: not a notebook of this course "
              f"(expected one of {', '.join(a.notebook for a in course.assignments)})", file=sys.stderr)
        return 2
    try:
        parts = submission.check_notebook(course, matches[0], os.path.abspath(args.notebook))
    except NotebookError as exc:
        print(f"{args.notebook}: {exc}", file=sys.stderr)
        return 2
    for part in parts:
        passed = sum(c.status == "passed" for c in part.checks)
        print(f"{part.part}: {passed} of {len(part.checks)} public checks pass\n"
              + gradescope.part_output(part) + "\n")
    return 0 if all(p.status == "passed" for p in parts) else 1


def cmd_cluster(course: config.Course, args: argparse.Namespace) -> int:
    """Make the cluster's CA and certificates; print where each goes and course.yaml's lines."""
    from autograder.grade import cluster_certs
    cluster_certs.command(course, args.certs)
    return 0


def cmd_demo(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.mistakes import cohort
    from autograder.report import terminal
    folder = os.path.abspath(args.dir or os.path.join(course.root, "demo"))    # never the folder you are in
    marker = os.path.join(folder, ".course-demo")
    if os.path.isdir(folder) and os.listdir(folder) and not os.path.exists(marker):
        print(f"error: {folder} exists and is not a demo folder; choose another --dir", file=sys.stderr)
        return 2
    if os.path.isdir(folder):        # start from nothing: an old gradebook would refuse new cells
        shutil.rmtree(folder)
    from autograder.nbgrader import settings
    settings.write_course_folder(course, folder)       # a folder of its own: 0700
    open(marker, "w").close()
    print("1. releasing the assignments with nbgrader ...", flush=True)
    if _release(course) is None:
        return 1
    submitted = os.path.join(folder, "submitted")
    students = cohort.demo_cohort(course, submitted)
    print(f"2. demo cohort of {len(students)} students in {submitted}:")
    width = max(map(len, students))
    for name, what in students.items():
        print(f"   {name:<{width}}  {what}")
    print("3. grading (hidden suites, each part in a process of its own) ...", flush=True)
    records = _grade(course, submitted, folder, args.jobs)
    print()
    print(terminal.table(records, _parts(course)))
    print("\n" + _where(folder))
    print(f"{'gradebook:':<12}{os.path.join(folder, 'gradebook.db')} "
          f"(cd {folder} && nbgrader export, or formgrader for the written answers)")
    return 0


def cmd_mistakes(course: config.Course, args: argparse.Namespace) -> int:
    import tempfile

    from autograder.mistakes import catalogue
    print("grading every catalogued mistake (a few minutes) ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = catalogue.summary(course, catalogue.grade(course, tmp, jobs=args.jobs))
    for path in catalogue.write(course, data):
        print(f"wrote {path}")
    return 0


def cmd_experiment(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.experiment import command
    command.main(args.args, course)
    return 0
