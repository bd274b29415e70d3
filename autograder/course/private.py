"""A course folder is its instructor's alone.

Everything students must not see is in a course folder: ``solutions/`` and the hidden suites
of the repository, and what collect, grading and nbgrader write there (``submitted/``,
``autograded/``, ``feedback/``, ``results/``, ``reports/``, ``gradescope/``, the gradebook,
the exports). A clone made with the usual umask (022) leaves all of them readable by every
account on the server, and so would grading. So the folder itself is made ``0700``
(:func:`make`): nothing in it can be reached from another account, whatever its own mode and
whatever umask made it. ``course exchange --setup`` does it to the course and grading folders,
``course grade`` to the folder it grades into, and every nbgrader command in a course folder
to that folder (``nbgrader_config.py`` calls :func:`autograder.nbgrader.settings.configure`).

Grading still reaches what it binds into the sandbox (the course's environment,
``selfcheck/``, the corpus): as root, a path the sandbox's unprivileged user cannot reach is
bound in through the sandbox's own mount namespace (:func:`autograder.sandbox.as_root.stage_binds`), and
as the instructor the sandbox runs as the instructor. The exchange is reached by students, so
on a server it lives outside the course folder (``course exchange --setup --root``).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from typing import TYPE_CHECKING

from autograder.errors import CourseError

if TYPE_CHECKING:
    from autograder.course.config import Course

PRIVATE = 0o700


def make(folder: str) -> None:
    """Create ``folder`` if needed and make it ``0700``; CourseError when it is another's."""
    os.makedirs(folder, exist_ok=True)
    if stat.S_IMODE(os.stat(folder).st_mode) != PRIVATE:
        try:
            os.chmod(folder, PRIVATE)
        except PermissionError:
            raise CourseError(f"{folder}: owned by {account(os.stat(folder).st_uid)}, so it cannot be made "
                              "private (0700) from this account; grade as its owner") from None


def account(uid: int) -> str:
    """The name of the account ``uid``, for messages."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _shared_group(info):
    """Whether the group of ``info`` may hold accounts other than its owner (not the owner's
    own group, as ``useradd -U`` makes one for every account)."""
    try:
        group, owner = grp.getgrgid(info.st_gid), pwd.getpwuid(info.st_uid)
    except KeyError:
        return True
    return not (group.gr_name == owner.pw_name and set(group.gr_mem) <= {owner.pw_name})


def _open(info, bits):
    """The permission ``bits`` (of r=4, x=1) an account other than the owner may have on ``info``."""
    mode = info.st_mode & 0o007
    if _shared_group(info):
        mode |= (info.st_mode >> 3) & 0o007
    return mode & bits == bits


def readable_by_others(path: str) -> bool:
    """Whether another account (not root, not the owner, perhaps in its group) can read ``path``:
    pass through every folder above it and read it (list it, for a folder)."""
    real = os.path.realpath(path)
    above = real
    while above != os.path.dirname(above):
        above = os.path.dirname(above)
        if not _open(os.stat(above), 0o001):
            return False
    info = os.stat(real)
    return _open(info, 0o005 if stat.S_ISDIR(info.st_mode) else 0o004)


def problems(course: Course, out: str) -> list[str]:
    """Where other accounts can read the course's secrets, one line each (empty when nowhere)."""
    folders = list(dict.fromkeys(os.path.realpath(f) for f in (course.root, out)))
    lines = []
    for folder in folders:
        if os.path.isdir(folder) and readable_by_others(folder):
            lines.append(f"{folder}: mode {stat.S_IMODE(os.stat(folder).st_mode):04o} lets other accounts "
                         "read the solutions, hidden suites, hand-ins, results and gradebook in it; "
                         "`course exchange --setup` makes it 0700")
    for assignment in course.assignments:
        for part in assignment.parts:
            suite = os.path.realpath(os.path.join(course.root, part.hidden))
            if not any(suite.startswith(f + os.sep) for f in folders) and readable_by_others(suite):
                lines.append(f"{suite}: other accounts can read this hidden suite; keep it in the course "
                             "folder, or chmod go-rwx it")
    return lines
