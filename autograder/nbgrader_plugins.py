"""nbgrader's collect and CSV export, made safe for hand-ins written by strangers.

Both are configured for the course (``nbgrader_bridge.settings``), so plain
``nbgrader collect`` and ``nbgrader export`` in the course folder use them.

* :class:`SafeCollect` copies what students put in the exchange's inbound
  folder without ever following a symbolic link (nbgrader's copy follows
  them, so a link to the solutions would be collected as a file with their
  text), and refuses a hand-in whose folder belongs neither to the student it
  names nor to the instructor collecting (nbgrader only warns): a student who
  submits as someone else is left out, and that student's own latest hand-in
  is collected instead.
* :class:`SafeCsvExport` writes nbgrader's ``grades.csv`` columns through the
  csv module, every text field spreadsheet-safe (a student id starting with
  ``=`` cannot become a formula; a comma in a name cannot shift a column).
* :class:`SanitizeMarkdown` cleans the students' markdown before nbgrader's
  feedback page renders it: nbgrader's feedback template renders markdown
  without nbconvert's ``sanitize_html``, so a ``<script>`` in a written answer
  would run in whoever opens the page.
"""

import glob
import os
import shutil
import stat

from nbconvert.filters import clean_html
from nbgrader.api import MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.plugins import CsvExportPlugin
from nbgrader.preprocessors.base import NbGraderPreprocessor

try:
    import pwd
except ImportError:  # pragma: no cover - not on Windows
    pwd = None


def _owner(path):
    try:
        return pwd.getpwuid(os.lstat(path).st_uid).pw_name
    except KeyError:
        return f"uid {os.lstat(path).st_uid}"


class SafeCollect(ExchangeCollect):
    """nbgrader's collect, never following links and refusing hand-ins under another's name."""

    def _refusal(self, path, username):
        """Why a hand-in must not be collected, or None."""
        if os.path.islink(path):
            return "it is a symbolic link"
        if self.check_owner and pwd is not None and os.lstat(path).st_uid != os.geteuid():
            owner = _owner(path)     # files of the instructor's own are the instructor's doing
            if owner != username:
                return f"it is owned by {owner}, not by {username}"
        return None

    def init_src(self):
        super().init_src()           # nbgrader's checks, and the due date
        pattern = os.path.join(self.inbound_path, f"{self.coursedir.student_id or '*'}+"
                                                  f"{self.coursedir.assignment_id}+*")
        accepted = {}
        for path in glob.glob(pattern):
            record = self._path_to_record(path)
            why = self._refusal(path, record["username"])
            if why:
                self.log.warning("Not collecting %s: %s", path, why)
            else:
                accepted.setdefault(record["username"], []).append(record)
        self.src_records = []
        for records in accepted.values():
            records = self._sort_by_timestamp(records)
            if self.duedate is not None and self.before_duedate:
                records = [r for r in records if r["timestamp"] <= self.duedate] or records
            self.src_records.append(records[0])

    def do_copy(self, src, dest, log=None):
        """Copy a hand-in with its links left as links (the grader refuses them) and nothing
        but regular files and folders."""
        def ignore(folder, names):
            skipped = set(shutil.ignore_patterns(*self.coursedir.ignore)(folder, names))
            for name in names:
                mode = os.lstat(os.path.join(folder, name)).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                    skipped.add(name)
            return skipped
        shutil.copytree(src, dest, symlinks=True, ignore=ignore)


class SafeCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, with quoting and spreadsheet-safe text."""

    COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
               "email", "raw_score", "late_submission_penalty", "score", "max_score"]

    def export(self, gradebook):
        from autograder.reports import write_csv
        wanted_a = {str(a) for a in self.assignment}
        wanted_s = {str(s) for s in self.student}
        rows = []
        for assignment in gradebook.assignments:
            if wanted_a and assignment.name not in wanted_a:
                continue
            for student in gradebook.students:
                if wanted_s and student.id not in wanted_s:
                    continue
                row = {"assignment": assignment.name, "duedate": assignment.duedate or "",
                       "student_id": student.id, "last_name": student.last_name or "",
                       "first_name": student.first_name or "", "email": student.email or "",
                       "max_score": assignment.max_score, "timestamp": "", "raw_score": 0.0,
                       "late_submission_penalty": 0.0, "score": 0.0}
                try:
                    submission = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    pass
                else:
                    penalty = submission.late_submission_penalty or 0.0
                    row.update(timestamp=submission.timestamp or "", raw_score=submission.score,
                               late_submission_penalty=penalty,
                               score=max(0.0, submission.score - penalty))
                rows.append({k: (v if isinstance(v, (int, float)) else str(v)) for k, v in row.items()})
        write_csv(self.to or "grades.csv", self.COLUMNS, rows)


class SanitizeMarkdown(NbGraderPreprocessor):
    """Every markdown cell's HTML reduced to nbconvert's safe subset (scripts and handlers go)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = clean_html(cell.source)
        return cell, resources
