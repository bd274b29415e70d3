"""The `course` command: release, exchange, grade, regrade, export, check, demo.

    course release            solutions/ -> assignments/ (nbgrader generate_assignment)
    course exchange --setup   nbgrader's exchange, submissions not readable by other students
    course grade SUBMITTED    grade <student>/<assignment>/<notebook>.ipynb under SUBMITTED
                              (--jobs N, --resume, --force, --cluster ADDRESS, --student ID)
    course regrade [DIR]      grade again after a test fix; old and new scores per part
    course export [DIR]       exports again, with the answers graded since in formgrader
    course check NOTEBOOK     a student's self-check: the public checks, in a fresh process
    course cluster --certs DIR  the Dask cluster's CA and TLS certificates (docs/how-to/cluster.md)
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
import signal
import sys

from autograder import commands, untrusted
from autograder.course import config, folders
from autograder.errors import CourseError


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
    e = sub.add_parser("export", help="write every export and the feedback pages again (it ends listing each file)")
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
    d.add_argument("--dir", default=None, help="working folder for the demo (default: demo/ in the course folder)")
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
        return {"release": commands.cmd_release, "grade": commands.cmd_grade, "regrade": commands.cmd_regrade, "export": commands.cmd_export,
                "report": commands.cmd_report, "history": commands.cmd_history, "status": commands.cmd_status, "exchange": commands.cmd_exchange,
                "check": commands.cmd_check, "cluster": commands.cmd_cluster, "demo": commands.cmd_demo, "mistakes": commands.cmd_mistakes,
                "experiment": commands.cmd_experiment}[args.command](course, args)
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:         # Ctrl-C in any stage: one line, never a traceback
        print(f"\ninterrupted: {folders.after_interrupt(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:           # `course status | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())    # nothing more at exit either
        return 141
