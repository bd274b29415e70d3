"""``python -m autograder.hub.code_copy DEST``: the code root's hub runs, copied where only root can
change it (``make hub`` makes it).

The course folder is the grading account's, so a hub (which runs as root) that imported
``autograder/`` or read its configuration from there would run as root whatever that account, or a
TA at formgrader's terminal, wrote into it. The copy holds ``autograder/``, ``selfcheck/`` and
``deploy/`` as the course folder has them now, root's and writable by nobody else, and the course
folder's path (``course_root``), whose ``course.yaml`` the hub still reads as data. Run it again
after the course's code changes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ("autograder", "selfcheck", "deploy")
COURSE_ROOT = "course_root"      # in the copy: the course folder it was made from


def make(dest: str, course_root: str = SOURCE) -> str:
    """Copy the hub's code to ``dest`` (replacing a copy there), every file read-only to all but
    its owner; returns ``dest``."""
    dest = os.path.abspath(dest)
    staged = dest + ".new"
    shutil.rmtree(staged, ignore_errors=True)
    os.makedirs(staged, mode=0o755)
    for tree in TREES:
        shutil.copytree(os.path.join(SOURCE, tree), os.path.join(staged, tree), symlinks=False,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with open(os.path.join(staged, COURSE_ROOT), "w", encoding="utf-8") as fh:
        fh.write(os.path.abspath(course_root) + "\n")
    for folder, dirs, files in os.walk(staged):
        for name in dirs + files:
            path = os.path.join(folder, name)
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & ~0o022)
    os.chmod(staged, 0o755)
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(staged, dest)
    return dest


def course_yaml(code: str) -> str | None:
    """The course.yaml of the course folder the copy at ``code`` was made from; None when ``code``
    is no such copy (the course folder itself: its own course.yaml is the default)."""
    try:
        with open(os.path.join(code, COURSE_ROOT), encoding="utf-8") as fh:
            return os.path.join(fh.read().strip(), "course.yaml")
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.hub.code_copy", description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", help="where the copy goes, e.g. /opt/attention-course/lib/course-hub")
    parser.add_argument("--course", default=SOURCE, help="the course folder whose course.yaml the hub reads "
                                                          "(default: the one this code is in)")
    args = parser.parse_args(argv)
    print(f"the hub's code is in {make(args.dest, args.course)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
