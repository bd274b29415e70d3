"""nbgrader's exchange on a server shared with the students' accounts: the owner and mode of each level.

Every account may write the exchange's root, so whoever may rename an entry in it may put a
course folder of their own in the course's place, with releases (and feedback) of their
choosing. The root is therefore ``1777``, sticky as ``/tmp`` is: only an entry's owner may
rename or remove it. Below it everything is the instructor's (the account that runs
``course exchange --setup`` and nbgrader's release and collect):

==========================  ======  ==================================================
``<root>``                  1777    root's or the instructor's
``<root>/<course>``         0755    students list it; only the instructor changes it
``<root>/<course>/outbound``  0755  the releases students fetch
``<root>/<course>/inbound``   2733  students hand in, and cannot list the hand-ins
``<root>/<course>/feedback``  0711  a student reaches only the page named for them
==========================  ======  ==================================================

and no folder above the root may be changed by another account. nbgrader 0.9.6 works with
the sticky root: its release_assignment compares only the root's ``0777`` bits with the
``0777`` it wants (and would chmod it to ``0777``, dropping the sticky bit, were they
different), and fetch, submit, collect and the feedback commands only check that they may
read or write it. Its release_assignment and release_feedback refuse a course or feedback
folder the instructor does not own; :func:`problems` says so before they do, level by level.

Every hand-in takes ``inbound/``'s group (its set-group-id bit), and the students' settings
(deploy/jupyter/course/) make a hand-in readable by that group alone, so it must hold no account
but the instructor. A hand-in's time is the latest ctime of its files
(:mod:`autograder.grade.submission_time`), so the exchange must be on a filesystem that records
every write, a write through a memory mapping included: on tmpfs a student who mapped their
notebook before the deadline could change it after and keep the time. :func:`setup` refuses
such a filesystem, :func:`problems` names it (and a shared group), and :func:`doubts` names a
filesystem the course does not know.
"""

import contextlib
import grp
import os
import pwd
import stat

from autograder.course.config import Course
from autograder.course.private import account, readable_by_others
from autograder.errors import CourseError
from autograder.grade import submission_time
from autograder.nbgrader.settings import settings

# (path below the root, mode, why that mode)
LEVELS = (
    ("", 0o1777, "every account may add its own entries, only an entry's owner may rename or remove it"),
    ("{course}", 0o755, "students may look in, only you may change what is in it"),
    ("{course}/outbound", 0o755, "students fetch the releases, only you may change them"),
    ("{course}/inbound", 0o2733, "students may hand in, and cannot list (so find and read) each other's hand-ins"),
    ("{course}/feedback", 0o711, "a student reaches only the page named for their own hand-in"),
)


def root(course: Course, out: str | None = None) -> str:
    """Where nbgrader's exchange is: course.yaml's ``exchange_root``, else ``exchange/`` in the course folder."""
    return settings(course, out).Exchange.root


def levels(course: Course, out: str | None = None) -> list[tuple[str, int, str]]:
    """(path, mode, why) of each level of the course's exchange, the root first."""
    top = root(course, out)
    return [(os.path.join(top, below.format(course=course.course_id)) if below else top, mode, why)
            for below, mode, why in LEVELS]


def _owners(path: str, top: str) -> set[int]:
    """The accounts that may own ``path``: the instructor, and root for the exchange's root."""
    return {os.geteuid(), 0} if path == top else {os.geteuid()}


def setup(course: Course, out: str | None = None) -> dict[str, int]:
    """Create the exchange's levels (where missing) and give each its mode; returns {path: mode}
    of the levels set. A level that is a link, not a folder, or owned by another account is
    left as it is (:func:`problems` names it): setting its mode would make another's folder
    look like the course's."""
    made = {}
    top = root(course, out)
    refuse_filesystem(top)
    for path, mode, _ in levels(course, out):
        try:
            os.makedirs(path)
        except FileExistsError:
            pass
        except PermissionError:
            raise CourseError(_cannot_make(path, top)) from None
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid not in _owners(path, top):
            break
        try:
            os.chmod(path, mode)
        except PermissionError:     # a root that root owns, set up by an instructor: problems() says so
            continue
        made[path] = mode
    return made


def refuse_filesystem(top: str) -> None:
    """CourseError, saying why, when students could hand in at ``top`` and it would be on a
    filesystem whose ctimes cannot time hand-ins (tmpfs)."""
    why = _for_students(top) and submission_time.ctime_problem(os.path.abspath(top))
    if why:
        raise CourseError(why)


def _for_students(path: str) -> bool:
    """Whether other accounts reach ``path`` (where it would be made, when it is not there): an
    exchange inside a folder of the instructor's alone (the course folder, on one account) has
    no students handing in, so neither its filesystem nor its group matters."""
    return readable_by_others(_existing(os.path.abspath(path)))


def _existing(path: str) -> str:
    """``path``, or the nearest folder above it that exists: where it would be made."""
    while not os.path.isdir(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path


def _cannot_make(path: str, top: str) -> str:
    """Why this account cannot create the exchange's level ``path``, and whose the root must be."""
    above = _existing(os.path.dirname(path))
    info = os.stat(above)
    me = account(os.geteuid())
    if path == top:
        return (f"{path} cannot be made: {above} is {account(info.st_uid)}'s (mode {stat.S_IMODE(info.st_mode):04o}), "
                f"not {me}'s; have root make the exchange's root: mkdir -m 1777 {path}")
    return (f"{path} cannot be made: the exchange's root {top} is {account(info.st_uid)}'s with mode "
            f"{stat.S_IMODE(info.st_mode):04o}; it must be {me}'s, or root's with mode 1777 (as root: chmod 1777 {top})")


def problems(course: Course, out: str | None = None) -> list[str]:
    """What is wrong with the exchange's owners and modes, one line each (empty when nothing is)."""
    top = root(course, out)
    lines = _above(top)
    shared = _for_students(top)
    unstamped = shared and submission_time.ctime_problem(_inbound(course, out))
    if unstamped:
        lines.append(unstamped)
    me = account(os.geteuid())
    fix = "`course exchange --setup` sets it"
    for path, mode, why in levels(course, out):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return lines + [f"{path}: missing (run `course exchange --setup`)"]
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            return lines + [f"{path}: {what}, owned by {account(info.st_uid)}: students would fetch and hand "
                            f"in wherever its owner chooses; remove it and run `course exchange --setup`"]
        if info.st_uid not in _owners(path, top):
            owners = " or ".join(sorted({account(u) for u in _owners(path, top)}))
            return lines + [f"{path}: owned by {account(info.st_uid)}, not by {owners}: that account may change "
                            f"what students fetch and hand in; remove it (it is not yours) and run "
                            f"`course exchange --setup`"]
        if stat.S_IMODE(info.st_mode) != mode:
            hint = fix if info.st_uid == os.geteuid() or os.geteuid() == 0 else \
                f"ask {account(info.st_uid)} to `chmod {mode:o} {path}` (you are {me})"
            lines.append(f"{path}: mode {stat.S_IMODE(info.st_mode):04o}, not {mode:04o}, which it needs "
                         f"because {why}; {hint}")
        if mode & stat.S_ISGID and shared:
            lines += _group_problem(path, info)
    return lines


def _group_problem(path: str, info: os.stat_result) -> list[str]:
    """``inbound/``'s group, which every hand-in takes: the students' configuration makes a hand-in
    readable by that group alone (deploy/jupyter/course/), so it must hold no account but the instructor."""
    try:
        group = grp.getgrgid(info.st_gid)
    except KeyError:
        return []
    members = set(group.gr_mem) | {user.pw_name for user in pwd.getpwall() if user.pw_gid == info.st_gid}
    others = sorted(members - {account(info.st_uid), "root"})
    if not others:
        return []
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    return [f"{path}: its group {group.gr_name} holds {', '.join(others[:3])}{more}: every hand-in takes that "
            f"group, so they could read the hand-ins the students' configuration makes private; "
            f"chgrp a group of yours alone {path}"]


def doubts(course: Course, out: str | None = None) -> list[str]:
    """What the course cannot tell about the exchange, one line each: a filesystem it does not
    know to record every write in a hand-in's time (:func:`problems` names one known not to)."""
    why = _for_students(root(course, out)) and submission_time.ctime_doubt(_inbound(course, out))
    return [why] if why else []


def _inbound(course: Course, out: str | None) -> str:
    """Where the hand-ins are: ``<root>/<course>/inbound``."""
    return os.path.join(root(course, out), course.course_id, "inbound")


def _above(top: str) -> list[str]:
    """Problems with the folders above the root: another account that may change one may replace
    the exchange below it."""
    lines = []
    path = os.path.dirname(os.path.realpath(top))
    while True:
        with contextlib.suppress(FileNotFoundError):
            info = os.stat(path)
            if info.st_uid not in (0, os.geteuid()):
                lines.append(f"{path}: owned by {account(info.st_uid)}, who may replace the exchange below it; "
                             "keep the exchange under folders only root or you own")
            elif info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
                lines.append(f"{path}: mode {stat.S_IMODE(info.st_mode):04o} lets other accounts replace the "
                             "exchange below it; keep it under folders only root or you may change")
        if path == os.path.dirname(path):
            return lines
        path = os.path.dirname(path)
