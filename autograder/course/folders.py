"""Which folders a ``course`` command works in, and how a new grading folder is made.

A *course folder* is one of two kinds:

* the course's own folder, the one holding its ``course.yaml`` (the repository);
* a *grading folder*, one ``course grade --out DIR`` (or ``course exchange --setup DIR``) made
  for this course: it holds the ``nbgrader_config.py`` that command wrote, whose first line is
  :data:`MARK` and which names this course's ``course.yaml``.

The commands that work on a course folder (:data:`WORKS_IN`) stop with one line anywhere else,
the current folder included, so a command run in a scratch folder, a home or the exchange's
parent never writes a gradebook or results there, nor changes its mode. A new grading folder is
made only where it is named (``--out DIR``): one that does not exist yet (or an empty one of
this account's) is made ``0700``; any other existing folder becomes one only when no other
account can read it already, and its mode is never changed (:func:`keeps_private` says which of the two a grading folder is).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import stat
from typing import TYPE_CHECKING

from autograder.course import private
from autograder.errors import CourseError

if TYPE_CHECKING:
    from autograder.course.config import Course

CONFIG = "nbgrader_config.py"
MARK = "# Written by `course grade`"
KEEP = "keep_private=False"          # in a grading folder's nbgrader_config.py: its mode is its owner's
# command -> the argument naming the course folder it works in (None: the current folder)
WORKS_IN = {"grade": "out", "regrade": "dir", "export": "dir", "report": "dir", "status": "dir",
            "history": "dir", "exchange": "dir"}
_NAMED = re.compile(r"course_yaml=((?:'[^'\n]*'|\"[^\"\n]*\"))")


def _config_text(folder: str) -> str:
    try:
        with open(os.path.join(folder, CONFIG)) as fh:
            return fh.read(4096)
    except (OSError, UnicodeDecodeError):
        return ""


def grading_course(folder: str) -> str | None:
    """The course.yaml a grading folder's ``nbgrader_config.py`` names; None when ``folder`` is
    not a grading folder."""
    text = _config_text(folder)
    if not text.startswith(MARK):
        return None
    found = _NAMED.search(text)
    return ast.literal_eval(found.group(1)) if found else ""


def keeps_private(folder: str) -> bool:
    """Whether the course made the grading folder ``folder`` and keeps it ``0700`` (one made in
    a folder that existed keeps the mode its owner gave it)."""
    return KEEP not in _config_text(folder)


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def is_course_folder(course: Course, folder: str) -> bool:
    """Whether ``folder`` is the course's own folder or a grading folder of this course (one of a
    course.yaml that is gone counts: the course moved, and grading there again rewrites it)."""
    if _same(folder, course.root):
        return True
    named = grading_course(folder)
    if named is None:
        return False
    if named and os.path.exists(named) and not _same(os.path.dirname(named), course.root):
        raise CourseError(f"{os.path.abspath(folder)} is a grading folder of the course at "
                          f"{os.path.dirname(named)}, not of this one ({course.root}): pass --config {named}")
    return True


def _not_one(course: Course, folder: str, command: str) -> CourseError:
    how = {"grade": "run it in one, or give --out DIR to grade into a new folder DIR",
           "exchange": "run it in one, or name one: course exchange DIR (with --setup a new DIR is made)",
           "history": "run it in one, or name one: course history STUDENT --dir DIR"}
    return CourseError(f"{folder} is not a course folder: `course {command}` works in the course's own "
                       f"folder ({course.root}, which holds course.yaml) or in a grading folder `course "
                       f"grade --out DIR` made (it holds that nbgrader_config.py); "
                       + how.get(command, f"run it in one, or name one: course {command} DIR"))


def _fresh(folder: str) -> bool:
    """Whether the course may make ``folder`` a grading folder of its own (``0700``): it does not
    exist yet, or it is an empty folder of this account's (made for the purpose) that no other
    account may write in (a shared folder, such as a mode 1777 one, keeps its mode: it is refused)."""
    if not os.path.lexists(folder):
        return True
    info = os.lstat(folder)
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & 0o022 and not os.listdir(folder))


def may_become(folder: str) -> None:
    """Stop unless ``folder`` may become a new grading folder: it does not exist yet or is empty
    and this account's (it is made ``0700``), or it is a folder no other account can read (its
    mode is left as it is)."""
    if _fresh(folder):
        return
    if not os.path.isdir(folder) or os.path.islink(folder):
        raise CourseError(f"{folder}: not a folder; give --out a folder that does not exist yet")
    if private.readable_by_others(folder) or os.stat(folder).st_mode & 0o022:
        raise CourseError(f"{folder} exists and other accounts can read or write in it (mode "
                          f"{stat.S_IMODE(os.stat(folder).st_mode):04o}), and `course` changes the mode only "
                          "of folders it makes itself: give a folder that does not exist yet (it is made "
                          f"0700, yours alone), or `chmod 700 {folder}` first")


def command_folder(course: Course, command: str, given: str | None, may_make: bool) -> tuple[str, bool]:
    """(the course folder ``command`` works in, whether it is a new grading folder), from the
    folder ``given`` (None: the current one); CourseError, one line, when it may not work there.
    ``may_make``: the folder was named where a new grading folder may be made (``--out``)."""
    folder = os.path.abspath(given if given is not None else os.getcwd())
    if is_course_folder(course, folder):
        return folder, False
    if not may_make:
        raise _not_one(course, folder, command)
    may_become(folder)
    return folder, True


def make_grading_folder(course: Course, out: str) -> bool:
    """Create ``out`` (``0700``) or take it as it is (a grading folder already, or a folder
    :func:`may_become` allows); returns whether the course keeps it ``0700``."""
    out = os.path.abspath(out)
    if grading_course(out) is not None:
        keep = keeps_private(out)
    elif _fresh(out):
        keep = True
    else:
        may_become(out)
        keep = False
    if keep:
        private.make(out)
    return keep


def new_folder_note(course: Course, out: str, submitted: str) -> str:
    """What grading into a new grading folder means for the hand grades entered elsewhere."""
    note = f"note: {out} is a new grading folder"
    if course.db_url:
        return note + " (its gradebook is course.yaml's db_url, shared with the other course folders)"
    home = os.path.dirname(os.path.abspath(submitted))
    try:
        theirs = home != out and is_course_folder(course, home)
    except CourseError:
        theirs = False
    where = f"; {submitted}'s own course folder is {home}: grade there to keep one set of totals" if theirs else ""
    return (note + ", with a gradebook of its own: hand grades entered in formgrader in another course "
            "folder are not in its totals" + where)


def after_interrupt(args: argparse.Namespace) -> str:
    """What to run after Ctrl-C stopped ``course ARGS`` (every result recorded is kept)."""
    named = getattr(args, "out", None) or getattr(args, "dir", None)
    again = {"grade": f"course grade {getattr(args, 'submitted', '')}" + (f" --out {named}" if named else ""),
             "regrade": "course regrade" + (f" {named}" if named else "")}.get(args.command)
    if again:
        return (f"every result recorded is kept; run `{again}` again: it grades only what is not recorded "
                "yet, then writes the gradebook, the exports and the feedback pages whole")
    return f"nothing recorded is lost; run `course {args.command}` again to finish"


def refuse_another_course(course: Course, folder: str) -> None:
    """Stop when ``folder`` holds a course.yaml of its own that is not ``course``'s: with a
    second clone's environment active, a command run in the first would change the second's
    course.yaml and bind this folder's nbgrader to the other course, saying nothing."""
    own = os.path.join(os.path.abspath(folder), "course.yaml")
    if os.path.isfile(own) and not os.path.samefile(own, course.path):
        raise CourseError(f"{os.path.abspath(folder)} holds its own course.yaml, but this `course` works on "
                          f"{course.path}; run {os.path.join(os.path.abspath(folder), '.venv/bin/course')} "
                          f"or pass --config {own}")
