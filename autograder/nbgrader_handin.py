"""nbgrader's autograde and generate_feedback, reading hand-ins only through autograder/handin.py.

nbgrader reads a submission by its path: it globs ``submitted/*/<assignment>/*.ipynb``, copies
every other file of the folder into ``autograded/`` (and from there into ``feedback/``, which
formgrader serves on the Jupyter origin) and opens the notebook, following links all the way
and opening FIFOs and devices. So a ``submitted/<s>/<a>`` linked to ``solutions/<a>`` was
graded as the solution and its text shown in the feedback page. These converters hand nbgrader a
private staged copy of what it reads instead, made by :func:`read_handin`: per hand-in the notebook
(with the release's nbgrader metadata, :func:`as_released`) and the timestamp, read through the
reader, and nothing else (a hand-in carries only what the release declares, and nbgrader copies
the release's support files into ``autograded/`` itself).

* At autograde, a notebook that is refused or that the course cannot read is staged as the
  released stub, so nbgrader records the course grader's verdicts (:class:`ApplyResults` grades
  the real path, through the same reader: a score of 0 and the reason) without reading it.
* At generate_feedback, such a notebook is left out, with a warning naming it.
* Either way a folder that cannot be a student's (a link, an unusable name) is left out with a
  warning, and so is every other file of a hand-in.

nbgrader names its converters in its commands and in formgrader's API rather than taking them
from its configuration, so :func:`install` (run by every course folder's ``nbgrader_config.py``)
puts these in their place.
"""

import copy
import fnmatch
import json
import os
import re
import tempfile

from nbgrader.converters import Autograde, GenerateFeedback

from autograder import handin, submission_time
from selfcheck.program import MAX_NOTEBOOK_BYTES, NotebookError, grade_id, parse_notebook, read_notebook




def as_released(raw, release):
    """The notebook ``raw`` as nbgrader may read it, and why it cannot be this release's hand-in
    (None when it can), as grading decides.

    Its cells carry the release's nbgrader metadata (grade id, flags, points), never their own:
    the first cell with a grade id of the release keeps its place and the student's source,
    and a later cell with the same id, a cell whose id the release does not have or whose type
    changed is a plain cell (grading, too, takes the first and ignores the others). So nbgrader's
    gradebook holds the release's points and the course grader's verdicts for every hand-in."""
    from autograder.grading import which_notebook
    try:
        nb = parse_notebook(raw)
    except NotebookError as exc:
        return None, str(exc)
    problem = which_notebook(nb, release)
    if problem:
        return None, problem
    released = {grade_id(c): c for c in release["cells"] if grade_id(c)}
    seen = set()
    for cell in nb["cells"]:
        gid = grade_id(cell)
        cell.get("metadata", {}).pop("nbgrader", None)
        if gid in released and gid not in seen and cell["cell_type"] == released[gid]["cell_type"]:
            cell.setdefault("metadata", {})["nbgrader"] = copy.deepcopy(released[gid]["metadata"]["nbgrader"])
            seen.add(gid)
    return json.dumps(nb, indent=1, ensure_ascii=False).encode("utf-8"), None


def read_handin(base, student, assignment, release_dir, stub=True):
    """The hand-in ``base/<student>/<assignment>`` as nbgrader may read it: the release's
    notebooks, the timestamp and the submission's secret, read through the reader, and nothing else.

    Returns ``(files, problems, left_out)``: ``{name: bytes}``, why each notebook refused or
    unreadable was not read (staged as the released one with ``stub``, else left out),
    and the paths of the hand-in's files the release does not declare (the release's own support
    files nbgrader copies from the course). Raises handin.Refused for the folder."""
    notebooks = sorted(n for n in os.listdir(release_dir) if n.endswith(".ipynb"))
    shown = f"{os.path.basename(base)}/{student}/{assignment}"
    files, problems, left_out = {}, [], []
    with handin.folder(base, student, assignment) as fd:
        found = handin.entries(fd)
        for name in notebooks:
            if name not in found:
                continue
            released = os.path.join(release_dir, name)
            try:
                data, why = as_released(handin.read_at(fd, name, MAX_NOTEBOOK_BYTES, f"{shown}/{name}"),
                                        read_notebook(released))
                why = why and f"{shown}/{name}: {why}"
            except handin.Refused as exc:
                why = str(exc)
            if why is None:
                files[name] = data
                continue
            problems.append(why)
            if stub:
                with open(released, "rb") as fh:
                    files[name] = fh.read()
        if submission_time.NAME in found:      # only a time nbgrader reads, so every export has the same one
            try:
                raw = handin.read_at(fd, submission_time.NAME, submission_time.MAX_BYTES)
                stamp = submission_time.normalised(raw)
                if stamp is None:
                    raise handin.Refused("not a time")
                files[submission_time.NAME] = stamp
            except handin.Refused as exc:
                left_out.append(f"{submission_time.NAME} ({exc})")
        if handin.SECRET in found:         # names the hand-in's feedback folder at release_feedback
            try:
                secret = handin.read_at(fd, handin.SECRET, handin.MAX_EXCHANGE_FILE)
                if len(secret) > handin.MAX_EXCHANGE_FILE:
                    raise handin.Refused("too large")
                files[handin.SECRET] = secret
            except handin.Refused as exc:
                left_out.append(f"{handin.SECRET} ({exc})")
        left_out += [p for p in handin.left_out(fd, handin.declared(release_dir)) if p not in notebooks]
    return files, problems, left_out


def write(dest, files):
    """Lay out a hand-in as :func:`read_handin` read it."""
    os.makedirs(dest)
    for name, data in files.items():
        with open(os.path.join(dest, name), "wb") as fh:
            fh.write(data)


class _Staged:
    """A converter that reads its input (nbgrader's hand-ins) from a copy made by :func:`read_handin`."""

    _staged = None
    _stub = True

    def _input_folder(self):
        return self.coursedir.submitted_directory

    def _reading_handins(self):
        return True

    def start(self):
        from autograder.grading import student_id_problem
        base = os.path.join(self.coursedir.root, self._input_folder())
        release = self.coursedir.format_path(self.coursedir.release_directory, ".", ".")
        with tempfile.TemporaryDirectory(prefix="nbgrader-handins-") as staged:
            if os.path.isdir(base):
                with handin.folder(base) as fd:
                    students = handin.entries(fd)
                for student, kind in sorted(students.items()):
                    if (student.startswith(".") or kind not in ("folder", "link")
                            or not fnmatch.fnmatchcase(student, self.coursedir.student_id)):
                        continue
                    why = "a symbolic link" if kind == "link" else student_id_problem(student)
                    if why:
                        self.log.warning("Not reading %s/%s: %s", self._input_folder(), student, why)
                        continue
                    self._stage_student(base, student, release, staged)
            self._staged = staged
            try:
                super().start()
            finally:
                self._staged = None

    def _stage_student(self, base, student, release, staged):
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
                files, problems, left_out = read_handin(base, student, assignment, release_dir, self._stub)
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
                write(os.path.join(staged, student, assignment), files)

    def _format_source(self, assignment_id, student_id, escape=False):
        if self._staged is None or not self._reading_handins():
            return super()._format_source(assignment_id, student_id, escape=escape)
        if escape:      # the ids may be regular expressions of nbgrader's: the folder is not
            return re.escape(self._staged + os.sep) + student_id + re.escape(os.sep) + assignment_id
        return os.path.join(self._staged, student_id, assignment_id)


class SafeAutograde(_Staged, Autograde):
    """nbgrader's autograde; its sanitising pass reads the staged hand-ins."""

    def _reading_handins(self):
        return self._sanitizing


class SafeFeedback(_Staged, GenerateFeedback):
    """nbgrader's generate_feedback, from the autograded notebooks as read through the reader."""

    _stub = False

    def _input_folder(self):
        return self.coursedir.autograded_directory


def install():
    """Make nbgrader's commands and formgrader's API use these converters."""
    import nbgrader.apps.api
    import nbgrader.apps.autogradeapp
    import nbgrader.apps.generatefeedbackapp
    for module in (nbgrader.apps.api, nbgrader.apps.autogradeapp):
        module.Autograde = SafeAutograde
    for module in (nbgrader.apps.api, nbgrader.apps.generatefeedbackapp):
        module.GenerateFeedback = SafeFeedback
