"""The `course` command: release, exchange, grade, regrade, export, check, demo.

    course release            solutions/ -> assignments/ (nbgrader generate_assignment)
    course exchange --setup   nbgrader's exchange, submissions not readable by other students
    course grade SUBMITTED    grade <student>/<assignment>/<notebook>.ipynb under SUBMITTED
                              (--jobs N, --resume, --force, --cluster ADDRESS, --student ID)
    course regrade [DIR]      grade again after a test fix; old and new scores per part
    course export [DIR]       exports again, with the answers graded since in formgrader
    course check NOTEBOOK     a student's self-check: the public checks, in a fresh process
    course cluster --certs DIR  the Dask cluster's CA and TLS certificates (README, "Bigger courses")
    course demo               release, build a demo cohort, grade it, print the table
    course history STUDENT    one student's results over time (--dir DIR)
    course status [DIR]       not graded yet, late, written answers to grade, errors, what changed
    course report [DIR]       the cohort report: mistakes, hardest checks, not graded, similarity
    course mistakes           what a student sees for each catalogued mistake: docs/mistakes.json and .md
    course experiment         the projection-removal experiment (autograder/experiment/; --help)
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys

from autograder import config, folders, untrusted
from autograder.errors import CourseError, NoSubmissions


def _grade(course, submitted, out, jobs, force=False, cluster=None, students=None):
    """The grading pipeline with a progress report on stderr; its warnings printed there too."""
    from autograder import pipeline
    from autograder.progress import Progress
    batch = pipeline.grade(course, submitted, out, jobs, force=force, progress=Progress(sys.stderr),
                           cluster=cluster, students=students)
    _warn(batch.warnings)
    return batch


def _warn(lines):
    for line in lines:
        print(f"error: {line}", file=sys.stderr)


def _where(out):
    from autograder.reporting import outputs
    return outputs.where(out)


def _release(course):
    """Release, saying which solution notebooks got course.yaml's points; on a leak, print it and
    return None (nothing was written)."""
    from autograder import release
    from autograder.errors import NbgraderError
    try:
        synced = release.release(course)
    except NbgraderError as exc:         # its message carries nbgrader's own reason
        print(f"error: {exc}; nothing was written (assignments/ and solutions/ are as they were)",
              file=sys.stderr)
        return None
    except release.LeakError as exc:
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
    from autograder.reporting import terminal
    print(terminal.summary(batch))
    if batch.interrupted:
        print(f"\ninterrupted: {len(batch.graded)} graded in this run and saved; "
              f"{len(batch.pending)} left. Continue with: {resume_hint}", file=sys.stderr)
        return 130
    return 0


def cmd_grade(course: config.Course, args: argparse.Namespace) -> int:
    from autograder import store
    from autograder.reporting import terminal
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
        print(terminal.table(batch.records))
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
    from autograder import store
    from autograder.reporting import terminal
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
    from autograder import store
    out = os.path.abspath(args.dir)
    records = store.load_results(out)
    if not records:
        print(f"error: {out} holds no results (run `course grade` first)", file=sys.stderr)
        return 2
    from autograder import pipeline
    from autograder.reporting import terminal
    totals = os.path.join(out, "totals.csv")
    before, notes = terminal.read_totals(totals), list[str]()
    _warn(pipeline.export(course, out, records, notes=notes))
    print("\n".join([terminal.totals_diff(before, terminal.read_totals(totals)), *(f"note: {n}" for n in notes)]))
    print(_where(out))
    return 0


def cmd_report(course: config.Course, args: argparse.Namespace) -> int:
    """The cohort report from the results in DIR (its submissions: where the last batch read them)."""
    from autograder import store
    from autograder.reporting import cohort_analysis, cohort_page
    out = os.path.abspath(args.dir)
    records = store.load_results(out)
    if not records:
        raise NoSubmissions(f"{out} holds no results (run `course grade` first)")
    from autograder.nbgrader import gradebook
    try:
        scores = gradebook.scores(course, out)
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
    from autograder import private
    from autograder.nbgrader import exchange, settings
    out = os.path.abspath(args.dir)
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
    if not problems:
        print(f"exchange ready: {root} (students: --Exchange.root={root} --course={course.course_id})")
    if any(os.path.realpath(root).startswith(os.path.realpath(f) + os.sep) for f in (course.root, out)):
        print("note: the exchange is inside the course folder, which no other account can reach: "
              "students with accounts of their own need `course exchange --setup --root DIR` outside it")
    return 1 if problems else 0


def cmd_check(course: config.Course, args: argparse.Namespace) -> int:
    """The public checks on one notebook, run in the grading sandbox (never as the instructor)."""
    from autograder import grading
    from autograder.reporting import exports
    from selfcheck.program import NotebookError
    name = os.path.basename(args.notebook)
    matches = [a for a in course.assignments if a.notebook == name]
    if not matches:
        print(f"{args.notebook}: not a notebook of this course "
              f"(expected one of {', '.join(a.notebook for a in course.assignments)})", file=sys.stderr)
        return 2
    try:
        parts = grading.check_notebook(course, matches[0], os.path.abspath(args.notebook))
    except NotebookError as exc:
        print(f"{args.notebook}: {exc}", file=sys.stderr)
        return 2
    for part in parts:
        passed = sum(c.status == "passed" for c in part.checks)
        print(f"{part.part}: {passed} of {len(part.checks)} public checks pass\n"
              + exports.part_output(part) + "\n")
    return 0 if all(p.status == "passed" for p in parts) else 1


def cmd_cluster(course: config.Course, args: argparse.Namespace) -> int:
    """Make the cluster's CA and certificates; print where each goes and course.yaml's lines."""
    from autograder import cluster_certs
    cluster_certs.command(course, args.certs)
    return 0


def cmd_demo(course: config.Course, args: argparse.Namespace) -> int:
    from autograder import cohort
    from autograder.reporting import terminal
    folder = os.path.abspath(args.dir)
    marker = os.path.join(folder, ".course-demo")
    if os.path.isdir(folder) and os.listdir(folder) and not os.path.exists(marker):
        print(f"error: {args.dir} exists and is not a demo folder; choose another --dir", file=sys.stderr)
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
    for name, what in students.items():
        print(f"   {name:<24} {what}")
    print("3. grading (hidden suites, each part in a process of its own) ...", flush=True)
    records = _grade(course, submitted, folder, args.jobs)
    print()
    print(terminal.table(records))
    print(f"\nparts.csv:           {os.path.join(folder, 'parts.csv')}")
    print(f"feedback pages:      {os.path.join(folder, 'reports')}/<student>/<assignment>.html")
    print(f"nbgrader gradebook:  {os.path.join(folder, 'gradebook.db')} "
          f"(cd {args.dir} && nbgrader export, or formgrader for the written answers)")
    print(f"cohort report:       {os.path.join(folder, 'cohort_report.html')} (and cohort_report.csv beside it)")
    return 0


def cmd_mistakes(course: config.Course, args: argparse.Namespace) -> int:
    import tempfile

    from autograder import mistakes
    print("grading every catalogued mistake (a few minutes) ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = mistakes.catalogue(course, mistakes.grade_catalogue(course, tmp, jobs=args.jobs))
    for path in mistakes.write(course, data):
        print(f"wrote {path}")
    return 0


def cmd_experiment(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.experiment import command
    command.main(args.args, course)
    return 0


@untrusted.guarded
def _interrupt_again(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in a finalizer (a database connection closing) is swallowed there and
    printed as a traceback; deliver it again, quietly, where it can stop the command."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    else:
        sys.__unraisablehook__(unraisable)


def main(argv: list[str] | None = None) -> int:
    sys.unraisablehook = _interrupt_again
    getattr(sys.stdout, "reconfigure", lambda **_: None)(line_buffering=True)   # its lines in order with stderr's
    parser = argparse.ArgumentParser(prog="course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=None, help="course.yaml to use (default: the course's own)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("release", help="generate assignments/ from solutions/ with nbgrader")
    g = sub.add_parser("grade", help="grade a folder of submissions")
    g.add_argument("submitted", help="folder laid out as <student>/<assignment>/<notebook>.ipynb")
    g.add_argument("--out", default=None, help="the course folder results, exports and the gradebook go in "
                   "(default: this one); a new folder is made a grading folder")
    g.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted batch: keep every result that is still valid")
    g.add_argument("--force", action="store_true",
                   help="grade every submission again, even unchanged ones")
    g.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="grade on this Dask scheduler (default: course.yaml's cluster, else locally)")
    g.add_argument("--student", action="append", default=None, metavar="ID",
                   help="grade this student's submissions only (repeatable); the exports keep everyone")
    r = sub.add_parser("regrade", help="grade again after a suite or grader change; print old and new scores")
    r.add_argument("dir", nargs="?", default=None, help="the folder `course grade --out` wrote (default: .)")
    r.add_argument("--submitted", default=None, help="the submissions (default: where the last batch read them)")
    r.add_argument("--jobs", type=int, default=None)
    r.add_argument("--force", action="store_true", help="grade every submission again")
    r.add_argument("--cluster", default=None, metavar="ADDRESS", help="grade on this Dask scheduler")
    r.add_argument("--all", action="store_true", help="print unchanged scores too")
    e = sub.add_parser("export", help="write parts.csv, totals.csv, grades.csv, Gradescope results and feedback again")
    e.add_argument("dir", nargs="?", default=None)
    rp = sub.add_parser("report", help="the cohort report: cohort_report.html and cohort_report.csv")
    rp.add_argument("dir", nargs="?", default=None, help="the folder `course grade --out` wrote (default: .)")
    rp.add_argument("--submitted", default=None, help="the submissions (default: where the last batch read them)")
    h = sub.add_parser("history", help="one student's results over time: score, when, what changed")
    h.add_argument("student")
    h.add_argument("--dir", default=None, help="the grading folder (default: .)")
    st = sub.add_parser("status", help="not graded yet, late, written answers to grade, errors, flags")
    st.add_argument("dir", nargs="?", default=None, help="the grading folder (default: .)")
    st.add_argument("--submitted", default=None, help="the submissions (default: where the last batch read them)")
    x = sub.add_parser("exchange", help="set up or check nbgrader's exchange (release, submit, collect)")
    x.add_argument("dir", nargs="?", default=None, help="the course folder (default: .)")
    x.add_argument("--setup", action="store_true", help="create it with the right permissions")
    x.add_argument("--root", default=None,
                   help="where (default: <dir>/exchange); with --setup it is kept in course.yaml's exchange_root")
    c = sub.add_parser("check", help="run the public checks on a notebook")
    c.add_argument("notebook")
    k = sub.add_parser("cluster", help="the Dask cluster's TLS certificates: its own CA, one per role")
    k.add_argument("--certs", required=True, metavar="DIR", help="a new folder to write them into")
    d = sub.add_parser("demo", help="release, grade a demo cohort, print the table")
    d.add_argument("--dir", default="demo", help="working folder for the demo (default: demo/)")
    d.add_argument("--jobs", type=int, default=None)
    m = sub.add_parser("mistakes", help="grade the catalogue of mistakes; write docs/mistakes.json and docs/mistakes.md")
    m.add_argument("--jobs", type=int, default=2)
    xp = sub.add_parser("experiment", add_help=False,
                       help="the chapter's projection-removal experiment: results and plots in data/")
    xp.add_argument("args", nargs=argparse.REMAINDER, help="passed on (course experiment --help)")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "experiment":
        parser.error("unrecognized arguments: " + " ".join(extra))
    if args.command == "experiment":
        args.args = extra + args.args
    try:
        course = config.load(args.config)
        if args.config is None:                     # the course was not named: it must be the folder's
            for folder in {os.getcwd(), getattr(args, "dir", None), getattr(args, "out", None)}:
                if isinstance(folder, str):
                    folders.refuse_another_course(course, folder)
        if args.command in folders.WORKS_IN:        # never a scratch folder, a home, the exchange's parent
            given = getattr(args, name := folders.WORKS_IN[args.command])
            folder, args.new = folders.command_folder(course, args.command, given, given is not None and
                                                      (args.command == "grade" or getattr(args, "setup", False)))
            setattr(args, name, folder)
        return {"release": cmd_release, "grade": cmd_grade, "regrade": cmd_regrade, "export": cmd_export,
                "report": cmd_report, "history": cmd_history, "status": cmd_status, "exchange": cmd_exchange,
                "check": cmd_check, "cluster": cmd_cluster, "demo": cmd_demo, "mistakes": cmd_mistakes,
                "experiment": cmd_experiment}[args.command](course, args)
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:         # Ctrl-C in any stage: one line, never a traceback
        print(f"\ninterrupted: {folders.after_interrupt(args)}", file=sys.stderr)
        return 130
