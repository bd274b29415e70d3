"""nbgrader's autograde and generate_feedback, reading hand-ins only as they are staged.

Each converter reads a private copy of the hand-ins made through the reader
(:func:`autograder.nbgrader.staging.read_handin`), never their folders:

* At autograde, a notebook that is refused or that the course cannot read is staged as the
  released stub, so nbgrader records the course grader's verdicts (ApplyResults grades the real
  path, through the same reader: a score of 0 and the reason) without reading it.
* At generate_feedback, such a notebook is left out, with a warning naming it.
* At autograde, a hand grade the TA finished stays graded when its answer did not change
  (:mod:`autograder.nbgrader.handgrades`); nbgrader's own would flag every one again.
* Either way a folder that cannot be a student's (a link, an unusable name) is left out with a
  warning, and so is every other file of a hand-in.

nbgrader names its converters in its commands and in formgrader's API rather than taking them
from its configuration, so :func:`install` (run by every course folder's ``nbgrader_config.py``)
puts these in their place.
"""

import contextlib
import fnmatch
import os
import re
import shutil
import tempfile
from typing import Any

from nbgrader.converters import Autograde, BaseConverter, GenerateFeedback

from autograder.grade import handin
from autograder.nbgrader import alembic_head  # noqa: F401 - a new gradebook's schema version, read in this process
from autograder.nbgrader import handgrades, shared_engine
from autograder.nbgrader import staging
from autograder.nbgrader.handgrades import PREVIOUS
from autograder.nbgrader.staging import excluded_students


class _Staged(BaseConverter):
    """A converter that reads its input (nbgrader's hand-ins) from a copy made by :func:`staging.read_handin`."""

    _staged = None
    _stub = True

    def _input_folder(self) -> str:
        return self.coursedir.submitted_directory

    def _reading_handins(self) -> bool:
        return True

    def start(self) -> None:
        from autograder.untrusted import student_id_problem
        refused = self.config.get("Refuse", {}).get("problem", "")
        if refused:         # before nbgrader records a student, or removes an autograded folder
            raise RuntimeError(f"nothing is done here until this is fixed: {refused}")
        base = os.path.join(self.coursedir.root, self._input_folder())
        release = self.coursedir.format_path(self.coursedir.release_directory, ".", ".")
        with tempfile.TemporaryDirectory(prefix="nbgrader-handins-") as staged:
            if os.path.isdir(base):
                with handin.folder(base) as fd:
                    students = handin.entries(fd)
                excluded = excluded_students(self.coursedir)
                for student, kind in sorted(students.items()):
                    if (student.startswith(".") or kind not in ("folder", "link") or student in excluded
                            or not fnmatch.fnmatchcase(student, self.coursedir.student_id)):
                        continue
                    why = "a symbolic link" if kind == "link" else student_id_problem(student)
                    if why:
                        self.log.warning("Not reading %s/%s: %s", self._input_folder(), student, why)
                        continue
                    self._stage_student(base, student, release, staged)
            self._staged = staged
            try:
                with shared_engine.held():     # one run's Gradebooks share their connections
                    self._convert(frozenset(os.listdir(staged)))
            finally:
                self._staged = None

    def _convert(self, students: frozenset[str]) -> None:
        """nbgrader's run over the staged hand-ins, those of ``students``."""
        super().start()

    def _stage_student(self, base: str, student: str, release: str, staged: str) -> None:
        shown = f"{self._input_folder()}/{student}"
        try:
            with handin.folder(base, student) as fd:
                assignments = handin.entries(fd)
        except handin.Refused as exc:
            self.log.warning("Not reading %s: %s", shown, exc)
            return
        for assignment in sorted(assignments):
            release_dir = os.path.join(release, assignment)
            if not fnmatch.fnmatchcase(assignment, self.coursedir.assignment_id) or not os.path.isdir(release_dir):
                continue
            try:
                files, problems, left_out = staging.read_handin(base, student, assignment, release_dir, self._stub)
            except handin.Refused as exc:
                self.log.warning("Not reading %s/%s: %s", shown, assignment, exc)
                continue
            for why in problems:
                self.log.warning("%s; %s", why, "the released notebook stands in for it, with the "
                                 "course grader's verdicts" if self._stub else "left out")
            if left_out:
                self.log.warning("Left out of %s/%s (not a regular file of the release): %s", shown,
                                 assignment, ", ".join(left_out))
            if any(name.endswith(".ipynb") for name in files):
                staging.write(os.path.join(staged, student, assignment), files)

    def _format_source(self, assignment_id: str, student_id: str, escape: bool = False) -> str:
        if self._staged is None or not self._reading_handins():
            return super()._format_source(assignment_id, student_id, escape=escape)
        if escape:      # the ids may be regular expressions of nbgrader's: the folder is not
            return re.escape(self._staged + os.sep) + student_id + re.escape(os.sep) + assignment_id
        return os.path.join(self._staged, student_id, assignment_id)


class SafeAutograde(_Staged, Autograde):
    """nbgrader's autograde; its sanitising pass reads the staged hand-ins, the TA's finished
    hand grades of unchanged answers stay graded (:mod:`autograder.nbgrader.handgrades`), and a
    hand-in nbgrader fails on keeps its last autograded notebook.

    With ``--force`` nbgrader removes a hand-in's autograded folder before autograding it, and
    leaves none when that fails: formgrader then has nothing to show for the grades the gradebook
    still holds, and the next autograde could not tell which answers the TA graded. The folder is
    moved aside instead (``autograded/.course-previous-<pid>-*/<student>/<assignment>``), and put
    back when the new one was not made; a run killed before it could is put right by the next
    (:func:`put_back_left_over`), and meanwhile the hand-grade check reads the folder set aside."""

    _previous: str | None = None        # where this run keeps the autograded folders it replaces
    _kept: dict[str, str]               # autograded folder -> its previous one, set aside (in a run)

    def _reading_handins(self) -> bool:
        return self._sanitizing

    def _convert(self, students: frozenset[str]) -> None:
        root = os.path.join(self.coursedir.root, self.coursedir.autograded_directory)
        put_back_left_over(root, self.log)
        self._kept = {}
        try:        # beside the folders it keeps (a rename, never a copy); none to keep without it
            with handgrades.kept(self.coursedir, students), \
                    (tempfile.TemporaryDirectory(prefix=f"{PREVIOUS}{os.getpid()}-", dir=root) if os.path.isdir(root)
                     else contextlib.nullcontext()) as previous:
                self._previous = previous
                try:
                    super()._convert(students)
                finally:
                    self._put_back()
        finally:
            self._previous = None

    def init_destination(self, assignment_id: str, student_id: str) -> bool:
        dest = os.path.normpath(self._format_dest(assignment_id, student_id))
        excluded = student_id in excluded_students(self.coursedir)
        if (self.force and self._previous and not excluded and self.coursedir.notebook_id == "*"
                and os.path.isdir(dest) and not os.path.islink(dest)):
            aside = os.path.join(self._previous, student_id, assignment_id)
            os.makedirs(os.path.dirname(aside), exist_ok=True)
            os.replace(dest, aside)             # nbgrader would remove it: kept until its new one is made
            self._kept[dest] = aside
        return super().init_destination(assignment_id, student_id)

    def _put_back(self) -> None:
        for dest, aside in self._kept.items():
            if not os.path.exists(dest):
                self.log.warning("Autograde failed for %s: its last autograded notebook is kept", dest)
                os.replace(aside, dest)


def put_back_left_over(root: str, log: Any) -> None:
    """Each autograded folder a run that is gone (killed before it could) set aside, put back
    where no new one was made; then its folder of them removed."""
    for name in os.listdir(root) if os.path.isdir(root) else ():
        pid = name[len(PREVIOUS):].split("-", 1)[0]
        if not name.startswith(PREVIOUS) or not pid.isdigit() or _alive(int(pid)):
            continue
        left = os.path.join(root, name)
        for student in os.listdir(left):
            for assignment in os.listdir(os.path.join(left, student)):
                dest = os.path.join(root, student, assignment)
                if not os.path.lexists(dest):
                    log.warning("A stopped autograde had set %s aside: put back", dest)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    os.replace(os.path.join(left, student, assignment), dest)
        shutil.rmtree(left, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SafeFeedback(_Staged, GenerateFeedback):
    """nbgrader's generate_feedback, from the autograded notebooks as read through the reader."""

    _stub = False

    def _input_folder(self) -> str:
        return self.coursedir.autograded_directory


def install() -> None:
    """Make nbgrader's commands and formgrader's API use these converters."""
    import nbgrader.apps.api
    import nbgrader.apps.autogradeapp
    import nbgrader.apps.generatefeedbackapp
    for module in (nbgrader.apps.api, nbgrader.apps.autogradeapp):
        module.Autograde = SafeAutograde
    for module in (nbgrader.apps.api, nbgrader.apps.generatefeedbackapp):
        module.GenerateFeedback = SafeFeedback
