"""Whether ``pytest`` may run this notebook: the self-check runs a notebook's code outside any
sandbox, as whoever runs ``pytest``. In a student's own folder that is their own code as
themselves; in a course's grading folder, where nbgrader's collect puts the release's
``conftest.py`` beside each hand-in, it would be a student's code run as the grading account.
So a hand-in is refused, before its process starts, and ``course check`` (its public checks)
or ``course grade`` run it in the grading sandbox instead.
"""

import os
import pwd

HAND_INS = ("submitted", "autograded", "feedback")     # a course folder's folders of students' notebooks
COURSE_FOLDER = ("course.yaml", "nbgrader_config.py")  # what a course folder holds: the course's, nbgrader's


def refusal(notebook: str) -> str | None:
    """The one line saying why ``notebook`` is not run here and what to run instead, or None: it
    is the runner's own work (their file, in no course folder's hand-ins nor the exchange)."""
    path = os.path.realpath(notebook)
    why, owner = _handed_in(path), None
    if why is None:
        owner = _owner(path)
        if owner is None:
            return None
        why = f"it belongs to the account {owner}, not to you"
    return (f"{notebook}: not checked: {why}, and the self-check would run its code outside any sandbox, "
            f"as you: run `course check {notebook}` for its public checks, or `course grade`, which run it "
            "sandboxed" + (" (your own work? copy the notebook: the copy is yours)" if owner else ""))


def _handed_in(path: str) -> str | None:
    """Where ``path`` was handed in, when it lies in a course folder's submitted/, autograded/ or
    feedback/, or in the inbound/ of nbgrader's exchange (beside its outbound/)."""
    below = os.path.dirname(path)
    while (above := os.path.dirname(below)) != below:
        name = os.path.basename(below)
        if name in HAND_INS and any(os.path.isfile(os.path.join(above, f)) for f in COURSE_FOLDER):
            return f"it is a hand-in in the course folder {above} (under {name}/)"
        if name == "inbound" and os.path.isdir(os.path.join(above, "outbound")):
            return f"it is a hand-in in nbgrader's exchange ({below})"
        below = above
    return None


def _owner(path: str) -> str | None:
    """The account ``path`` belongs to, when that is not the one running ``pytest``."""
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return None         # reading it says why it cannot be read
    if uid == os.getuid():
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
