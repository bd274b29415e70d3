""":class:`SafeReleaseFeedback` releases each student's feedback on its own: a
hand-in whose secret (which alone names the released page) is missing, not the
token nbgrader's submit writes, or also another student's is skipped with a
warning naming the student, never stopping the class's release (nbgrader's raises
on the first bad one, on every later run) nor landing on a classmate's page.
"""

import glob
import os
import re
import shutil

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.utils import notebook_hash

from autograder.grade import handin
from autograder.nbgrader.staging import excluded_students


class SafeReleaseFeedback(ExchangeReleaseFeedback):
    """nbgrader's release_feedback (0.9.6), one student at a time. The released page is named
    by the hand-in's secret alone, so a secret that cannot be used (missing, not the token
    nbgrader's submit writes) is that student's problem, and a secret two students' hand-ins
    hold (a copied one) is neither's page: each is skipped with a warning naming the student.
    Its time, which nbgrader's only logs, is not read."""

    def _secret(self, folder: str) -> tuple[bytes | None, str | None]:
        """(the secret of the feedback folder ``folder``, why it cannot be used)."""
        try:
            secret = handin.read(folder, [handin.SECRET], handin.MAX_EXCHANGE_FILE)
        except handin.Refused as exc:
            return None, str(exc)
        why = handin.secret_problem(secret)
        return (None, f"{handin.SECRET} {why}") if why else (secret, None)

    def copy_files(self) -> None:
        excluded = excluded_students(self.coursedir)
        pattern = re.escape(os.path.sep).join([
            self.coursedir.format_path(self.coursedir.feedback_directory, "(?P<student_id>.*)",
                                       self.coursedir.assignment_id, escape=True),
            "(?P<notebook_id>.*).html"])
        holders: dict[bytes, set[str]] = {}       # every student's, whichever are released now
        for folder in glob.glob(self.coursedir.format_path(self.coursedir.feedback_directory, "*",
                                                           self.coursedir.assignment_id)):
            secret, _ = self._secret(folder)
            if secret is not None:
                holders.setdefault(secret, set()).add(os.path.basename(os.path.dirname(folder)))
        for page in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            found = re.match(pattern, page)
            if found is None:
                self.log.error("Could not match '%s' with regexp '%s'", page, pattern)
                continue
            student, notebook = found.group("student_id"), found.group("notebook_id")
            if student in excluded:
                continue
            secret, why = self._secret(os.path.dirname(page))
            others = sorted(holders.get(secret, set()) - {student}) if secret is not None else []
            if others:
                why = f"its {handin.SECRET} is also the one of {', '.join(map(repr, others))}"
            if why:
                self.log.warning("Not releasing the feedback of %r on %s: %s", student,
                                 self.coursedir.assignment_id, why)
                continue
            assert secret is not None                 # a hand-in without one was left out above
            checksum = notebook_hash(secret=secret.decode("ascii"), notebook_id=notebook)
            self.log.info("Releasing feedback for student '%s' on assignment '%s/%s/%s'", student,
                          self.coursedir.course_id, self.coursedir.assignment_id, notebook)
            staged = os.path.join(self.dest_path, f"{checksum}-tmp.html")
            shutil.copy(page, staged)
            shutil.move(staged, os.path.join(self.dest_path, f"{checksum}.html"))
